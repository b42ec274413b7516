//! Conditional writes: whether a bucket honours `If-None-Match` and `If-Match` (a probe), and
//! for one that does not, the same conditions checked by reading first. Also the version check
//! a remove makes (S3 servers honour no conditional DELETE).

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{Agent, Port, SyncedStore};
use crate::bucket::{etag_of, Fetched, ListRequest, PutMode, PutOptions, Validators};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::replica::policy::Format;
use crate::replica::{Change, OutboxItem, WriteOp};
use crate::token::Token;

/// What a bucket that ignores conditional writes means for them: said at open and when found.
pub(super) fn ignores_conditions(bucket: &str) -> String {
    format!(
        "the bucket {bucket} ignores conditional writes (If-Match, If-None-Match): each write is checked by reading first (a GET, or one listing for creates sent together), so a write another client makes between that check and the PUT can still be overwritten"
    )
}

/// The same failure again, with `note` added to what it says (the kind, and so how a flush
/// treats it, stays).
pub(super) fn again(error: &Error, note: &str) -> Error {
    let noted = |text: &str| match (text.is_empty(), note.is_empty()) {
        (_, true) => text.to_string(),
        (true, false) => note.to_string(),
        (false, false) => format!("{text}; {note}"),
    };
    match error {
        Error::Remote { what, status, detail } => {
            Error::Remote { what: what.clone(), status: *status, detail: noted(detail) }
        }
        Error::RemoteData { what, reason } => Error::RemoteData { what: what.clone(), reason: noted(reason) },
        Error::Unreachable { what, reason } => Error::Unreachable { what: what.clone(), reason: noted(reason) },
        Error::Cancelled(why) => Error::Cancelled(noted(why)),
        other => Error::Unreachable { what: "the conditional-write probe".into(), reason: noted(&other.to_string()) },
    }
}

/// The probe's object: a folder marker (a name ending in `/`), which listings leave out.
fn probe_name(prefix: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{prefix}.objstore-probe-{}-{nanos}/", std::process::id())
}

/// Whether the bucket honours both conditions a write may carry: a probe object is written,
/// written again with `If-None-Match: *` and then with an `If-Match` naming a version it never
/// had (each a 412 if honoured), and removed. A server that refuses a conditional header
/// outright (501 Not Implemented, 400) does not honour it either: writes to it are checked by
/// reading. Any other failure is the probe's error, asked again later.
pub(super) fn probe_conditional_writes(s: &SyncedStore, token: &Token) -> Result<bool> {
    let name = probe_name(&s.config.connection.location.prefix);
    s.bucket.put(&name, b"", &PutOptions::default(), token)?;
    let never_held = PutMode::Update("\"objstore-probe-never-this-version\"".into());
    let mut honoured = Ok(true);
    for mode in [PutMode::Create, never_held] {
        match s.bucket.put(&name, b"", &PutOptions { mode, ..PutOptions::default() }, token) {
            Err(Error::Remote { status: 412, .. }) => continue,
            // A 400 about every request (the region, the signature, an expired token) says
            // nothing of the header.
            Err(e @ Error::Remote { status: 400, .. }) if !e.refuses_the_write() => honoured = Err(e),
            Ok(_) | Err(Error::Remote { status: 400 | 501, .. }) => honoured = Ok(false),
            Err(e) => honoured = Err(e),
        }
        break;
    }
    let _ = s.bucket.delete(&name, token);
    honoured
}

impl Agent {
    /// Of `items` sent together, the creates (writes of objects this client never read) to a
    /// bucket that ignores conditional writes whose object one listing shows absent: one
    /// listing page over the range their names span, instead of a GET each before its PUT.
    /// Names listed (another client's, or this write's own body from before a crash), names
    /// beyond a truncated page, and everything when the listing fails, are checked by reading
    /// as usual.
    pub(super) fn absent_by_listing(&self, items: &[OutboxItem], token: &Token) -> HashSet<u64> {
        let mut absent = HashSet::new();
        let creates = items.iter().filter(|item| {
            let entry = &item.entry;
            entry.landed.is_none()
                && entry.value.is_some()
                && matches!(entry.op, WriteOp::Create | WriteOp::Put)
                && item.known_etag.is_none()
                && self.stores.get(&entry.store).is_some_and(|s| {
                    s.config.policy.format == Format::Objstore
                        && self.accounting.conditional_writes(&s.address) == Some(false)
                })
        });
        let mut by_store: std::collections::HashMap<&str, Vec<(String, u64)>> = Default::default();
        for item in creates {
            let s = &self.stores[&item.entry.store];
            by_store.entry(&item.entry.store).or_default().push((s.object_key(&item.entry.id), item.sequence));
        }
        for (store, mut names) in by_store.into_iter().filter(|(_, names)| names.len() > 1) {
            let s = &self.stores[store];
            names.sort();
            let (first, last) = (&names[0].0, &names[names.len() - 1].0);
            if first.is_empty() {
                continue;
            }
            let common = first.bytes().zip(last.bytes()).take_while(|(a, b)| a == b).count();
            let prefix = first[..first.floor_char_boundary(common)].to_string();
            // Listed from just before the first name: the name less its last character.
            let before = first[..first.floor_char_boundary(first.len() - 1)].to_string();
            // A page about the size of the range (a server may read as many entries as a page
            // may hold: Garage answers a page of 1,000 in twice the time of one of 60).
            let request = ListRequest {
                prefix,
                start_after: Some(before).filter(|b| !b.is_empty()),
                max_keys: Some((names.len() * 2 + 10).min(1000) as u32),
                version: s.config.connection.list_version,
                ..Default::default()
            };
            let page = s.bucket.list_page(&request, token);
            self.note(s, &page);
            let Ok(page) = page else { continue };
            let listed: HashSet<&str> = page.objects.iter().map(|o| o.key.as_str()).collect();
            // A truncated page covers the names up to its last one.
            let covered =
                |name: &str| page.next.is_none() || page.objects.last().is_some_and(|o| name <= o.key.as_str());
            absent.extend(
                names.iter().filter(|(name, _)| covered(name) && !listed.contains(name.as_str())).map(|(_, seq)| *seq),
            );
        }
        absent
    }
}

/// A conditional write to a bucket that ignores conditions: the condition is checked with a
/// (conditional) GET first, and a failed one is the 412 the server would have given. A bucket
/// already holding exactly `body` took this write before (its answer was lost): that version's
/// etag is returned, and nothing needs sending.
pub(super) fn check_by_reading(
    s: &SyncedStore,
    name: &str,
    known: Option<&str>,
    mode: &PutMode,
    body: &[u8],
    token: &Token,
) -> Result<Option<String>> {
    let held = held_version(s, name, known, token)?;
    let holds = match (&held, mode) {
        (Held::Nothing, PutMode::Create) | (Held::TheKnownVersion, PutMode::Update(_)) => return Ok(None),
        (Held::Another(etag), _) if *etag == etag_of(body) => return Ok(Some(etag.clone())),
        (Held::Another(etag), _) => format!("version {etag}"),
        (Held::TheKnownVersion, _) => "a version".to_string(),
        (Held::Nothing, _) => "no object".to_string(),
    };
    Err(Error::Remote {
        what: format!("PUT {name}"),
        status: 412,
        detail: format!("the bucket holds {holds} (checked with a GET: this server ignores conditional writes)"),
    })
}

/// What the bucket holds of an object, against the version a client knows.
enum Held {
    Nothing,
    TheKnownVersion,
    Another(String),
}

/// Asks the bucket which version of `name` it holds, as a GET conditional on `known` so a body
/// crosses the wire only when it is another version. (A GET, not a HEAD: anonymous bucket
/// policies grant `s3:GetObject`, and moto answers an anonymous HEAD 403 all the same.)
fn held_version(s: &SyncedStore, name: &str, known: Option<&str>, token: &Token) -> Result<Held> {
    let validators = Validators { etag: known.map(str::to_string), last_modified: None };
    Ok(match s.bucket.get(name, &validators, token)? {
        Fetched::Missing => Held::Nothing,
        Fetched::NotModified => Held::TheKnownVersion,
        Fetched::TooLarge { etag: Some(etag), .. } if Some(etag.as_str()) == known => Held::TheKnownVersion,
        Fetched::TooLarge { etag, .. } => Held::Another(etag.unwrap_or_else(|| "(no etag)".into())),
        Fetched::Found(object) => match object.etag {
            Some(etag) if Some(etag.as_str()) == known => Held::TheKnownVersion,
            Some(etag) => Held::Another(etag),
            None => Held::Another("(no etag)".into()),
        },
    })
}

/// Whether a delete may go ahead: the bucket holds the version this client last saw. Another
/// version is a 412 (a conflict); nothing there is `false` (nothing to delete). S3 has no
/// conditional DELETE that moto and Garage honour, so the version is asked first: a write
/// landing between that question and the DELETE is the one race left.
pub(super) fn delete_is_safe(s: &SyncedStore, name: &str, item: &OutboxItem, token: &Token) -> Result<bool> {
    let known = item.known_etag.as_deref();
    let held = match held_version(s, name, known, token)? {
        Held::Nothing => return Ok(false),
        Held::TheKnownVersion if known.is_some() => return Ok(true),
        Held::TheKnownVersion => "an unknown version".to_string(),
        Held::Another(etag) => format!("version {etag}"),
    };
    Err(Error::Remote {
        what: format!("DELETE {name}"),
        status: 412,
        detail: match known {
            Some(etag) => format!("the bucket holds {held} where this client last saw {etag}"),
            None => format!("the bucket holds {held}, which this client never read"),
        },
    })
}

/// Whether the bucket's object is exactly `body` (S3 etags of single-part uploads are MD5s).
pub(super) fn holds_body(s: &SyncedStore, name: &str, body: &[u8], token: &Token) -> bool {
    matches!(held_version(s, name, Some(&etag_of(body)), token), Ok(Held::TheKnownVersion))
}

/// How long a bucket whose conditional-write probe failed is left before it is probed again.
const PROBE_RETRY: Duration = Duration::from_secs(30);

impl Agent {
    /// Before the first conditional write to an S3 bucket, probes whether it honours the
    /// condition; what it learns is kept in the database (so later opens warn at once) and said
    /// in an error event.
    pub(super) fn learn_conditions(&self, port: &mut impl Port, item: &OutboxItem, token: &Token) -> Result<()> {
        let Ok(s) = self.store(&item.entry.store) else { return Ok(()) };
        let bucket = s.address.clone();
        let probed =
            s.config.policy.format == Format::Objstore && !s.config.connection.location.endpoint.starts_with("file://");
        if item.entry.op == WriteOp::Overwrite || !probed || self.accounting.conditional_writes(&bucket).is_some() {
            return Ok(());
        }
        if let Some(declared) = s.config.connection.conditional_writes {
            self.accounting.note_conditional_writes(&bucket, declared);
            return Ok(());
        }
        let mut failed = self.probe_failed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, why)) = failed.get(&bucket).filter(|(at, _)| at.elapsed() < PROBE_RETRY) {
            let left = PROBE_RETRY.saturating_sub(at.elapsed()).as_secs().max(1);
            return Err(again(why, &format!("the bucket is probed again in {left} s")));
        }
        let honoured = probe_conditional_writes(s, token).inspect_err(|e| {
            // A cancelled flush says nothing of the bucket, and neither does a bucket that could
            // not be reached (the breaker paces the next try): a node restarted a second later
            // is probed then, not 30 s later with every write waiting.
            if !matches!(e, Error::Cancelled(_) | Error::Unreachable { .. }) {
                failed.insert(bucket.clone(), (Instant::now(), again(e, "")));
            }
        })?;
        failed.remove(&bucket);
        drop(failed);
        self.accounting.note_conditional_writes(&bucket, honoured);
        let store = item.entry.store.clone();
        port.exec(move |db| {
            if !honoured {
                db.emit_sync_event(EventKind::Error, &store, ignores_conditions(&bucket));
            }
            db.apply_sync(vec![Change::ConditionalWrites { store, bucket, honoured }])
        })
    }
}
