//! A store's change log: what makes a warm refresh with nothing new one request, whatever the
//! number of objects.
//!
//! A writer whose store has `Options.changeLog: true` follows each write that reached the
//! bucket with an empty marker object named
//!
//! ```text
//! {prefix}.objstore-changes/{ms:013}-{writer:016x}-{n:08x}/{op}/{id}
//! ```
//!
//! where `ms` is the bucket's clock as the writer reads it (its own, corrected by the `Date` of
//! the bucket's answers), `writer` a random number per process, `n` a counter, `op`
//! `p{size}.{etag}` for a put (the etag without quotes) or `d` for a remove, and `id` the
//! object's name under the prefix. Names sort by time, and carry everything a listing says of
//! the object but its metadata headers, so a reader lists the log after the last time it read
//! (one LIST, empty when nothing is new) and asks the bucket only about objects whose version
//! it does not hold.
//!
//! Several writes sent together by one flush (to one store) share one marker instead, a wave
//! marker `{prefix}.objstore-changes/{ms:013}-{writer:016x}-{n:08x}/w{count}`, whose body names
//! them: `{"writes": [{"id", "size", "etag", "metadata"} | {"id", "removed": true}]}`. It costs
//! the writer one request for the whole wave, and a reader one GET (then kept: a marker never
//! changes) instead of a HEAD per object for the metadata a name cannot carry.
//!
//! Clocks differ and a marker can land after a later one: readers and writers both go by the
//! bucket's clock, and a reader lists from a window (`Options.changeLogWindowMs`, a minute
//! unless set) before the time of its last read, which covers what is left of the skew (a
//! `Date` has whole seconds; a writer that never heard from the bucket uses its own clock) and
//! the time a write takes to land.
//! One writer's markers are taken in the order of their counter, not of their names: its
//! reading of the bucket's clock can step back by up to a second between answers.
//! Markers it already acted on cost nothing (their version is the one it holds); a refresh
//! with no write in the window before it lists nothing. Writers without the log are caught by
//! a full listing every `Options.relistEveryMs` (an hour unless set) and by an explicit
//! prefetch. On S3 the library never prunes the log: a lifecycle rule expiring
//! `{prefix}.objstore-changes/` after a day keeps it small, as long as readers list in full at
//! least that often. A directory (`file://`) has no such rule: there a writer removes, at most
//! once a minute, the markers older than twice `relistEveryMs` and the window (no reader that
//! lists in full that often still reads them).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::bucket::{Metadata, ObjectInfo};

/// The log's folder under a store's prefix. Listings of the store leave it out.
pub const DIR: &str = ".objstore-changes/";

/// What a marker says happened to an object.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A put of `size` bytes at version `etag` (quoted, as S3 gives it), when the writer knew it.
    Put {
        size: u64,
        etag: Option<String>,
    },
    Remove,
}

/// A marker read from a listing of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// The writer's clock when it wrote the marker, in ms since the epoch.
    pub at_ms: u64,
    /// The writer's random number (one per process).
    pub writer: String,
    /// The writer's counter: its markers in the order it wrote them, whatever their times say
    /// (its reading of the bucket's clock can step back by up to a second between answers, as
    /// a `Date` has whole seconds).
    pub n: u32,
    pub id: String,
    pub op: Op,
    /// When the bucket took the marker (ISO 8601, from the listing).
    pub last_modified: String,
    /// The object's metadata headers, when a wave marker carried them.
    pub metadata: Option<Metadata>,
}

/// A wave marker read from a listing: its writes are in its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Wave {
    /// The marker's full name, for the GET of its body.
    pub key: String,
    pub at_ms: u64,
    pub writer: String,
    pub n: u32,
    pub last_modified: String,
}

/// A write a wave marker names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaveWrite {
    pub id: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Quoted, as S3 gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl WaveWrite {
    /// The entry for `op` on object `id`, with its metadata headers.
    pub fn new(id: &str, op: &Op, metadata: Option<Metadata>) -> WaveWrite {
        match op {
            Op::Put { size, etag } => {
                WaveWrite { id: id.to_string(), removed: false, size: Some(*size), etag: etag.clone(), metadata }
            }
            Op::Remove => WaveWrite { id: id.to_string(), removed: true, size: None, etag: None, metadata: None },
        }
    }
}

#[derive(Serialize, Deserialize)]
struct WaveBody {
    writes: Vec<WaveWrite>,
}

/// `{ms:013}-{writer:016x}-{n:08x}`: the writer's clock, its number, its counter.
fn stamp(now_ms: u64) -> String {
    let (writer, n) = writer_and_count();
    format!("{now_ms:013}-{writer:016x}-{n:08x}")
}

/// This process's writer number and its next count: what tells a writer's markers (and
/// checkpoints) apart, in the order it wrote them.
pub fn writer_and_count() -> (u64, u32) {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    (writer_of(std::process::id()), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// The writer number of process `pid`: random, so that two writers in one millisecond never
/// share a name, and new in a forked child, which would otherwise stamp markers as its parent
/// with a counter that clashes with the parent's.
fn writer_of(pid: u32) -> u64 {
    static WRITER: Mutex<Option<(u32, u64)>> = Mutex::new(None);
    number_for(&mut WRITER.lock().unwrap_or_else(|p| p.into_inner()), pid)
}

/// The number `held` gives `pid`, made anew when `held` is another process's.
fn number_for(held: &mut Option<(u32, u64)>, pid: u32) -> u64 {
    match *held {
        Some((of, number)) if of == pid => number,
        _ => {
            let number = crate::random::number();
            *held = Some((pid, number));
            number
        }
    }
}

/// A stamp's time, writer and counter.
fn parse_stamp(stamp: &str) -> Option<(u64, String, u32)> {
    let at_ms = stamp.get(..13).filter(|d| d.bytes().all(|b| b.is_ascii_digit()))?.parse().ok()?;
    let (writer, n) = stamp.get(14..)?.split_once('-')?;
    Some((at_ms, writer.to_string(), u32::from_str_radix(n, 16).ok()?))
}

/// The name and body of a wave marker for `writes`, under the log at `log`.
pub fn wave(log: &str, now_ms: u64, writes: Vec<WaveWrite>) -> (String, Vec<u8>) {
    let name = format!("{log}{}/w{}", stamp(now_ms), writes.len());
    (name, serde_json::to_vec(&WaveBody { writes }).expect("a wave marker serialises"))
}

/// Reads a listed wave marker; `None` for anything else.
pub fn parse_wave(log: &str, info: &ObjectInfo) -> Option<Wave> {
    let (stamp, count) = info.key.strip_prefix(log)?.split_once('/')?;
    count.strip_prefix('w')?.parse::<u32>().ok()?;
    let (at_ms, writer, n) = parse_stamp(stamp)?;
    Some(Wave { key: info.key.clone(), at_ms, writer, n, last_modified: info.last_modified.clone() })
}

/// The markers a wave marker's body stands for; `None` for a body that is not one.
pub fn wave_markers(wave: &Wave, body: &[u8]) -> Option<Vec<Marker>> {
    let body: WaveBody = serde_json::from_slice(body).ok()?;
    markers_of_wave(wave, body.writes)
}

/// The writes of a wave marker's body as markers; `None` when one is not a write.
pub fn markers_of_wave(wave: &Wave, writes: Vec<WaveWrite>) -> Option<Vec<Marker>> {
    let marker = |w: WaveWrite| {
        let op = match (w.removed, w.size) {
            (true, _) => Op::Remove,
            (false, size) => Op::Put { size: size?, etag: w.etag.filter(|e| e.len() > 2) },
        };
        (!w.id.is_empty()).then_some(Marker {
            at_ms: wave.at_ms,
            writer: wave.writer.clone(),
            n: wave.n,
            id: w.id,
            op,
            last_modified: wave.last_modified.clone(),
            metadata: w.metadata,
        })
    };
    writes.into_iter().map(marker).collect()
}

/// A wave marker's writes, read from its body; `None` for a body that is not one.
pub fn wave_writes(body: &[u8]) -> Option<Vec<WaveWrite>> {
    serde_json::from_slice::<WaveBody>(body).ok().map(|b| b.writes)
}

/// The name of a new marker for `op` on object `id`, under the log at `log`.
pub fn marker_name(log: &str, now_ms: u64, id: &str, op: &Op) -> String {
    let op = match op {
        Op::Put { size, etag } => {
            let etag = etag.as_deref().map(|e| e.trim_matches('"')).filter(|e| is_name_safe(e)).unwrap_or("");
            format!("p{size}.{etag}")
        }
        Op::Remove => "d".to_string(),
    };
    format!("{log}{}/{op}/{id}", stamp(now_ms))
}

/// The oldest marker time a reader of the log still reads: older ones may be removed.
pub fn expiry_ms(now_ms: u64, relist_every_ms: u64, window_ms: u64) -> u64 {
    now_ms.saturating_sub(2 * (relist_every_ms + window_ms))
}

/// Where a listing of the log starts to find every marker written after `since_ms`, on a
/// writer's clock that may be `window_ms` behind (or a marker that took that long to land).
pub fn start_after(log: &str, since_ms: u64, window_ms: u64) -> String {
    format!("{log}{:013}", since_ms.saturating_sub(window_ms))
}

/// Reads a listed marker; `None` for anything in the log that is not one.
pub fn parse(log: &str, info: &ObjectInfo) -> Option<Marker> {
    let rest = info.key.strip_prefix(log)?;
    let (stamp, rest) = rest.split_once('/')?;
    let (op, id) = rest.split_once('/')?;
    let (at_ms, writer, n) = parse_stamp(stamp)?;
    let op = match op {
        "d" => Op::Remove,
        _ => {
            let (size, etag) = op.strip_prefix('p')?.split_once('.')?;
            Op::Put {
                size: size.parse().ok()?,
                etag: (!etag.is_empty() && is_name_safe(etag)).then(|| format!("\"{etag}\"")),
            }
        }
    };
    if id.is_empty() {
        return None;
    }
    let last_modified = info.last_modified.clone();
    Some(Marker { at_ms, writer, n, id: id.to_string(), op, last_modified, metadata: None })
}

/// Each object's last marker among `markers` (listed in name order), and whether other writers
/// left markers for it too (their clocks may order them wrongly: the reader asks the bucket).
/// One writer's last marker is its latest by counter, not by name: its clock reading can step
/// back, and a name-order reader would take an object's older marker for the last one and miss
/// the newer version.
pub fn latest_per_object<'m>(markers: impl IntoIterator<Item = &'m Marker>) -> HashMap<&'m str, (&'m Marker, bool)> {
    let mut latest: HashMap<&str, (&Marker, bool)> = HashMap::new();
    for marker in markers {
        let entry = latest.entry(marker.id.as_str()).or_insert((marker, false));
        let another_writer = entry.0.writer != marker.writer;
        if another_writer || marker.n >= entry.0.n {
            entry.0 = marker;
        }
        entry.1 |= another_writer;
    }
    latest
}

/// Etags go into names as they are only when made of letters, digits and dashes (MD5s and
/// multipart etags are).
fn is_name_safe(etag: &str) -> bool {
    !etag.is_empty() && etag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process keeps its writer number; another process (a forked child) gets its own.
    #[test]
    fn a_forked_child_stamps_as_a_writer_of_its_own() {
        let mut held = None;
        let parent = number_for(&mut held, 1);
        assert_eq!(number_for(&mut held, 1), parent);
        let child = number_for(&mut held, 2);
        assert_ne!(child, parent);
        assert_eq!(number_for(&mut held, 2), child);
    }

    fn listed(key: String) -> ObjectInfo {
        ObjectInfo {
            key,
            etag: "\"x\"".into(),
            last_modified: "2026-11-25T10:00:00.000Z".into(),
            size: 0,
            metadata: None,
        }
    }

    #[test]
    fn a_marker_names_the_object_and_its_version_and_reads_back() {
        let log = "runs/.objstore-changes/";
        let put = Op::Put { size: 42, etag: Some("\"0123abcd-2\"".into()) };
        let name = marker_name(log, 1_764_000_000_000, "linux/node-20/0001", &put);
        let marker = parse(log, &listed(name.clone())).unwrap();
        assert_eq!((marker.at_ms, marker.id.as_str(), &marker.op), (1_764_000_000_000, "linux/node-20/0001", &put));
        let removed = parse(log, &listed(marker_name(log, 5, "a", &Op::Remove))).unwrap();
        assert_eq!((removed.at_ms, removed.op), (5, Op::Remove));
        assert_ne!(marker_name(log, 5, "a", &Op::Remove), marker_name(log, 5, "a", &Op::Remove), "names never repeat");
    }

    #[test]
    fn names_sort_by_time_and_listings_start_a_window_back() {
        let log = "p/.objstore-changes/";
        let early = marker_name(log, 999, "b", &Op::Remove);
        let late = marker_name(log, 1_000, "a", &Op::Remove);
        assert!(early < late);
        assert!(start_after(log, 60_999, 60_000) < early && early.as_str() > start_after(log, 0, 0).as_str());
        assert!(start_after(log, 61_000, 60_000) > early);
    }

    #[test]
    fn an_objects_last_marker_is_its_writers_latest_by_counter_when_its_clock_reading_stepped_back() {
        let log = "p/.objstore-changes/";
        let first = Op::Put { size: 1, etag: Some("\"e1\"".into()) };
        let second = Op::Put { size: 1, etag: Some("\"e2\"".into()) };
        // The second write's reading of the bucket's clock was 0.9 s behind the first's.
        let names = [marker_name(log, 10_500, "d", &first), marker_name(log, 9_600, "d", &second)];
        let mut markers: Vec<Marker> = names.iter().map(|n| parse(log, &listed(n.clone())).unwrap()).collect();
        markers.sort_by_key(|m| (m.at_ms, m.n)); // name order: the second first
        assert_eq!(markers[0].op, second);
        let latest = latest_per_object(&markers);
        assert_eq!((&latest["d"].0.op, latest["d"].1), (&second, false), "the second write, one writer");
        let mut other = markers[0].clone();
        other.writer = "another".into();
        let latest = latest_per_object([&markers[1], &other]);
        assert!(latest["d"].1, "two writers: the reader asks the bucket");
    }

    #[test]
    fn a_wave_marker_names_its_writes_in_its_body_and_reads_back() {
        let log = "p/.objstore-changes/";
        let put = Op::Put { size: 7, etag: Some("\"e1\"".into()) };
        let meta: Metadata = [("platform".to_string(), "linux".to_string())].into();
        let writes = vec![WaveWrite::new("a/1", &put, Some(meta.clone())), WaveWrite::new("b", &Op::Remove, None)];
        let (name, body) = wave(log, 1_764_000_000_000, writes);
        assert!(name.ends_with("/w2"), "{name}");
        assert_eq!(parse(log, &listed(name.clone())), None, "not a marker of one write");
        let found = parse_wave(log, &listed(name)).unwrap();
        let markers = wave_markers(&found, &body).unwrap();
        assert_eq!(markers.len(), 2);
        assert_eq!((markers[0].id.as_str(), &markers[0].op, &markers[0].metadata), ("a/1", &put, &Some(meta)));
        assert_eq!((markers[1].id.as_str(), &markers[1].op, markers[1].at_ms), ("b", &Op::Remove, 1_764_000_000_000));
        assert_eq!(markers[0].n, markers[1].n, "one write each, one counter");
        assert_eq!(wave_markers(&found, b"{\"writes\": [{\"id\": \"x\"}]}"), None, "a put without its size");
        assert_eq!(wave_markers(&found, b"not json"), None);
    }

    #[test]
    fn an_odd_etag_is_left_out_and_other_objects_in_the_log_are_not_markers() {
        let log = "p/.objstore-changes/";
        let odd = marker_name(log, 7, "a", &Op::Put { size: 1, etag: Some("\"a/b\"".into()) });
        assert_eq!(parse(log, &listed(odd)).unwrap().op, Op::Put { size: 1, etag: None });
        for key in
            ["p/.objstore-changes/x", "p/.objstore-changes/12/p1.e/", "p/.objstore-changes/abcdefghijklm/d/a", "p/a"]
        {
            assert_eq!(parse(log, &listed(key.to_string())), None, "{key}");
        }
    }
}
