//! The page's edits of the team's failure rules (`POST /api/rules`, the same edits as
//! `objstore-results rules`) and its confirmations of the lifecycle's proposals
//! (`POST /api/proposals`), written with `If-Match`, by a holder of a token of every pair.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::tokens::{editor, Token};
use crate::clock::now_ms;
use crate::error::{AppError, AppResult};
use crate::model::codeowners::{CodeOwners, Stored};
use crate::model::failure_rules::RuleFields;
use crate::store::documents;
use crate::views::Viewer;

/// The collector's tokens, and its editor tokens.
pub type Tokens = (Arc<[Token]>, Arc<[Token]>);

/// The largest edit taken (a rule's fields are a few KB at most).
pub const MAX_EDIT: usize = 16 * 1024;

/// One edit: `add` (a title, an issue and a pattern), `edit`, `remove`, `close` or `reopen`
/// (of rule `id`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Edit {
    action: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    issue: Option<String>,
    #[serde(default)]
    test: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// `POST /api/rules`: answers the rule's id, or why the edit was refused.
pub async fn edit_rules(viewer: Arc<Viewer>, tokens: Tokens, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(refused) = editor(&tokens.0, &tokens.1, &headers, false) {
        return *refused;
    }
    let edit = match parse(&body) {
        Ok(edit) => edit,
        Err(e) => return e.into_response(),
    };
    off_thread("the edit", move || apply(&viewer, edit).map(|id| json!({ "id": id }))).await
}

/// `POST /api/proposals` (`{"confirm": "<proposal id>"}`): applies an active proposal of the
/// lifecycle, as a person confirming it; answers the event, sent to the webhook too.
pub async fn confirm_proposal(
    viewer: Arc<Viewer>,
    tokens: Tokens,
    webhook: Option<Arc<str>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(refused) = editor(&tokens.0, &tokens.1, &headers, false) {
        return *refused;
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Confirm {
        confirm: String,
    }
    let asked: Confirm = match serde_json::from_slice(&body[..body.len().min(MAX_EDIT)]) {
        Ok(asked) if body.len() <= MAX_EDIT => asked,
        _ => return AppError::bad("confirm a proposal with {\"confirm\": \"<its id>\"}").into_response(),
    };
    off_thread("the confirmation", move || {
        let event = viewer.confirm_proposal(&asked.confirm, "the page")?;
        if let Some(url) = webhook {
            // Sent beside the answer: a receiver that is down must not hold up the person.
            let sent = event.clone();
            std::thread::spawn(move || {
                for (id, why) in super::webhook::deliver(&url, &[sent]) {
                    eprintln!("objstore-results: the webhook did not take {id}: {why}");
                }
            });
        }
        Ok(json!({ "applied": event }))
    })
    .await
}

/// The largest CODEOWNERS a job sends through the collector (a view's body limit is 2 MB).
const MAX_CODEOWNERS: usize = 1024 * 1024;

/// `POST /api/codeowners` (`{"text": "...", "source": ".github/CODEOWNERS"}`): keeps a job's
/// CODEOWNERS in the bucket (the pytest plugin and the node reporter send their repository's),
/// written only when it changed; answers whether it was.
pub async fn keep_codeowners(viewer: Arc<Viewer>, tokens: Tokens, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(refused) = editor(&tokens.0, &tokens.1, &headers, true) {
        return *refused;
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Sent {
        text: String,
        source: String,
    }
    if body.len() > MAX_CODEOWNERS {
        return AppError::bad(format!("a CODEOWNERS sent here is at most {MAX_CODEOWNERS} bytes")).into_response();
    }
    let sent: Sent = match serde_json::from_slice(&body) {
        Ok(sent) => sent,
        Err(e) => return AppError::bad(format!("send {{\"text\": ..., \"source\": ...}}: {e}")).into_response(),
    };
    if let Err(e) = CodeOwners::parse(&sent.text) {
        return e.context(&sent.source).into_response();
    }
    let kept = Stored { text: sent.text, source: sent.source.chars().take(300).collect(), at: now_ms() };
    let keep =
        move || documents::keep(viewer.target(), kept, Stored::same_file).map(|changed| json!({ "changed": changed }));
    off_thread("keeping the CODEOWNERS", keep).await
}

/// Does `work` off the async threads (the library's calls wait for their answers): its answer
/// as JSON, else its error.
async fn off_thread(what: &str, work: impl FnOnce() -> AppResult<serde_json::Value> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(answer)) => (StatusCode::OK, Json(answer)).into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(e) => AppError::internal(format!("{what} failed: {e}")).into_response(),
    }
}

fn parse(body: &[u8]) -> AppResult<Edit> {
    if body.len() > MAX_EDIT {
        return Err(AppError::bad(format!("an edit of the rules is at most {MAX_EDIT} bytes")));
    }
    serde_json::from_slice(body).map_err(|e| AppError::bad(format!("an edit of the rules is JSON: {e}")))
}

fn apply(viewer: &Viewer, edit: Edit) -> AppResult<String> {
    let fields = RuleFields {
        title: edit.title.clone(),
        issue: edit.issue.clone(),
        test: edit.test.clone(),
        text: edit.text.clone(),
        by: Some("the page".into()),
    };
    let id = || edit.id.clone().ok_or_else(|| AppError::bad(format!("{} needs a rule's id", edit.action)));
    viewer.edit_rules(|rules| match edit.action.as_str() {
        "add" => rules.add(fields.clone()),
        "edit" => rules.edit(&id()?, fields.clone()).and_then(|()| id()),
        "remove" => rules.remove(&id()?).and_then(|()| id()),
        "close" => rules.set_closed(&id()?, Some(now_ms())).and_then(|()| id()),
        "reopen" => rules.set_closed(&id()?, None).and_then(|()| id()),
        other => Err(AppError::bad(format!("unknown action {other:?} (add, edit, remove, close or reopen)"))),
    })
}
