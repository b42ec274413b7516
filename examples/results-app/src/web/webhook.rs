//! The lifecycle's webhooks (`serve --webhook URL`): each event (a proposal activated,
//! deactivated or applied) is sent as one JSON POST, retried with a growing pause when the
//! receiver fails or cannot be reached, and given up after [`ATTEMPTS`] (said on stderr; the
//! event stays in the bucket's `.lifecycle` history either way).

use std::time::Duration;

use crate::model::lifecycle::Event;

/// Tries per event.
pub const ATTEMPTS: u32 = 4;
/// The pause before the second try; doubled before each one after.
const FIRST_PAUSE: Duration = Duration::from_millis(500);
/// The longest one try may take.
const TRY_FOR: Duration = Duration::from_secs(5);

/// Sends each of `events` to `url`, in order; answers the events given up on, with why.
pub fn deliver(url: &str, events: &[Event]) -> Vec<(String, String)> {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(TRY_FOR)).build().into();
    let mut given_up = Vec::new();
    for event in events {
        let body = serde_json::json!({ "source": "objstore-results", "event": event.event, "at": event.at,
            "proposal": event.proposal })
        .to_string();
        let mut pause = FIRST_PAUSE;
        let mut why = String::new();
        for attempt in 1..=ATTEMPTS {
            let sent = agent.post(url).header("content-type", "application/json").send(body.as_str());
            match sent {
                Ok(answer) if answer.status().is_success() => {
                    why.clear();
                    break;
                }
                Ok(answer) => why = format!("the receiver answered {}", answer.status()),
                Err(e) => why = e.to_string(),
            }
            if attempt < ATTEMPTS {
                std::thread::sleep(pause);
                pause *= 2;
            }
        }
        if !why.is_empty() {
            given_up.push((event.proposal.id.clone(), why));
        }
    }
    given_up
}
