//! Checkpoints of a store's index: what makes a cold read cost a handful of requests, whatever
//! the store's history.
//!
//! A checkpoint is the store's listing as of one change-log position, written create-only as
//! immutable objects under the store's prefix:
//!
//! ```text
//! {prefix}.objstore-checkpoints/{stamp}.json         the manifest, written last
//! {prefix}.objstore-checkpoints/{stamp}/h{i:05}.json  heads: each pair's first names
//! {prefix}.objstore-checkpoints/{stamp}/t{i:05}.json  tails: each pair's next names
//! {prefix}.objstore-checkpoints/{stamp}/r{i:05}.json  ranges: every name, in key order
//! {prefix}.objstore-checkpoints/{stamp}/w{i:05}.json  the change log's wave markers before it
//! ```
//!
//! where `stamp` is `{9999999999999 - position_ms:013}-{writer:016x}-{n:08x}`: names sort
//! newest first, so one LIST with `max-keys=1` finds the newest manifest. A manifest is written
//! only once every shard it names is in the bucket, so a writer that dies part-way leaves
//! shards without a manifest, which readers step over (and writers prune).
//!
//! The position is the bucket's clock when the writer began listing. A reader takes the
//! checkpoint for a listing made then and reads the change log from there (a window before it,
//! as after any listing): a write or remove that raced the listing is in the log, and the log's
//! word wins over the checkpoint's for every object it names. A checkpoint older than
//! `relistEveryMs` is not used (the log may be pruned past it, and writers without the log are
//! caught only by listings).
//!
//! A manifest (JSON):
//!
//! ```text
//! {"format": "objstore-checkpoint", "version": 1, "positionMs": P, "objects": N,
//!  "headsPerPair": H, "heads": [SHARD...], "tailsPerPair": T, "tails": [SHARD...],
//!  "ranges": [SHARD...], "waves": [SHARD...]}
//! SHARD: {"first": id, "last": id, "objects": n}
//! ```
//!
//! A reader reads the change log from a window before the position, and a wave marker there
//! costs it a GET: the writer, which read them after its listing, keeps their bodies in wave
//! shards, `{"waves": [{"name", "modified", "writes": [...]}]}` (a marker's full name, when the
//! bucket took it, and its body's writes), so that a cold reader reads them in one GET or a
//! few (a marker that landed after the writer read the log is read as ever).
//!
//! Range shards tile the names in key order, about `checkpointRangeObjects` (1,000) each, cut
//! where a pair (the names' first two segments, the key layout's first two fields) ends, so
//! that a view of one pair reads its shard. Of each pair's first `checkpointHeads` (32) names
//! (the newest runs, in the results layout), a quarter, at most [`IN_HEADS`] (`H`, 8), are in
//! heads shards and the rest, to the `T`th, in tail shards of at most [`TAIL_PAIRS`] whole
//! pairs, each shard at most about [`SHARD_BYTES`]: a cold view of every pair's newest runs
//! reads the heads alone (1 MB at 500 pairs, where all 64 were 10 MB), and a view that goes
//! further in a pair reads that pair's tail shard (a page of 25 runs before the newest, the
//! matrix's, is within 32); past the tails, the range shard over the pair. A pair with no
//! tail shard over it has no more names than its heads. A manifest without tails
//! (`tailsPerPair` 0) has every head in its heads shards. A shard's
//! body is `{"objects": [[shared, suffix, size, etag, modified, metadata], ...]}`, each name
//! written as the length of the prefix it shares with the name before it and the rest (names
//! in a shard share most of their prefix), the etag without its quotes, the metadata an object
//! or `null`.
//!
//! A checkpoint is read as untrusted input, like a listing: sizes are capped (the store's
//! `maxObjectBytes`), names must be in order inside their shard's bounds and outside the
//! library's folders, counts must agree, and anything else makes the checkpoint unreadable: the
//! reader steps to the one before it, and lists in full when none is left. A name a record
//! cannot be written back under is left out, as from a listing; one the bucket no longer holds
//! is a miss when its body is read, never an error.

use serde::{Deserialize, Serialize};

use crate::bucket::{Metadata, ObjectInfo};
use crate::sync::changelog::WaveWrite;

/// The checkpoints' folder under a store's prefix.
pub const DIR: &str = ".objstore-checkpoints/";

/// Names under a store's prefix starting with this are the library's own (the change log,
/// the checkpoints): listings of the store leave them out.
pub const RESERVED: &str = ".objstore-";

/// Names a range shard holds, about, unless the store says otherwise: cut at the first pair's
/// end past it, and inside a pair at four times as many.
pub const DEFAULT_RANGE_OBJECTS: usize = 1_000;
/// The largest shard, in bytes (about, by what its names carry), unless the store's
/// `maxObjectBytes` is less than twice it.
pub const SHARD_BYTES: usize = 4 << 20;
/// Each pair's first names a checkpoint's heads and tails hold, unless the store says otherwise:
/// the newest run and a page of 25 before it, what the results matrix reads of a pair it shows.
/// A read further back takes the range shard over the pair, which holds only it and its
/// neighbours; deeper tails would be applied for every pair of a tail shard, needed or not.
pub const DEFAULT_HEADS_PER_PAIR: usize = 32;
/// The most of those in the heads shards (a quarter of them, at least one): a view of every
/// pair's newest runs reads these (the matrix reads 2 to 8 a pair); the rest are in tail shards.
pub const IN_HEADS: usize = 8;
/// The most pairs a tail shard holds: a view of a page of pairs (50) reads one or two.
pub const TAIL_PAIRS: usize = 64;

const FORMAT: &str = "objstore-checkpoint";
const LATEST_MS: u64 = 9_999_999_999_999;

/// What a manifest says of one shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRef {
    pub first: String,
    pub last: String,
    pub objects: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub position_ms: u64,
    pub objects: u64,
    pub heads_per_pair: u64,
    pub heads: Vec<ShardRef>,
    /// How far each pair's heads and tails reach together (0: the heads hold every one).
    #[serde(default)]
    pub tails_per_pair: u64,
    /// Each pair's names past its heads, to the `tails_per_pair`th.
    #[serde(default)]
    pub tails: Vec<ShardRef>,
    pub ranges: Vec<ShardRef>,
    /// The wave markers' shards, by marker name.
    #[serde(default)]
    pub waves: Vec<ShardRef>,
}

/// A wave marker of the change log's window, as the checkpoint's writer read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedWave {
    /// The marker's full name.
    pub name: String,
    /// When the bucket took it.
    pub modified: String,
    pub writes: Vec<WaveWrite>,
}

#[derive(Serialize, Deserialize)]
struct WavesBody {
    waves: Vec<LoggedWave>,
}

/// Which shard of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shard {
    Heads(usize),
    Tail(usize),
    Range(usize),
    Waves(usize),
}

/// A checkpoint as a writer builds it: its manifest and each shard's body.
pub struct Built {
    pub stamp: String,
    pub manifest: Manifest,
    pub shards: Vec<(Shard, Vec<u8>)>,
}

/// The stamp of a checkpoint at `position_ms` by writer `writer`, its `n`th.
pub fn stamp(position_ms: u64, writer: u64, n: u32) -> String {
    format!("{:013}-{writer:016x}-{n:08x}", LATEST_MS.saturating_sub(position_ms))
}

/// The manifest's name, under the checkpoints' folder `dir`.
pub fn manifest_name(dir: &str, stamp: &str) -> String {
    format!("{dir}{stamp}.json")
}

/// A shard's name, under the checkpoints' folder `dir`.
pub fn shard_name(dir: &str, stamp: &str, shard: Shard) -> String {
    match shard {
        Shard::Heads(i) => format!("{dir}{stamp}/h{i:05}.json"),
        Shard::Tail(i) => format!("{dir}{stamp}/t{i:05}.json"),
        Shard::Range(i) => format!("{dir}{stamp}/r{i:05}.json"),
        Shard::Waves(i) => format!("{dir}{stamp}/w{i:05}.json"),
    }
}

/// The stamp a listed name under `dir` belongs to, and whether it is the manifest.
pub fn stamp_of<'k>(dir: &str, key: &'k str) -> Option<(&'k str, bool)> {
    let rest = key.strip_prefix(dir)?;
    let stamp = rest.get(..39).filter(|s| is_stamp(s))?;
    match &rest[39..] {
        ".json" => Some((stamp, true)),
        tail if tail.starts_with('/') => Some((stamp, false)),
        _ => None,
    }
}

/// Where a listing of `dir` goes on to find the checkpoint written before `stamp`'s: after its
/// manifest and shards (`.` and `/` sort before `0`).
pub fn after_stamp(dir: &str, stamp: &str) -> String {
    format!("{dir}{stamp}0")
}

/// The position a stamp says (what its checkpoint's name sorts by).
pub fn position_of(stamp: &str) -> Option<u64> {
    Some(LATEST_MS - stamp.get(..13)?.parse::<u64>().ok()?)
}

fn is_stamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 39
        && b[13] == b'-'
        && b[30] == b'-'
        && b[..13].iter().all(u8::is_ascii_digit)
        && b[14..30].iter().chain(&b[31..]).all(u8::is_ascii_hexdigit)
}

/// The pair a name is in: its first two segments and the `/` after them (`None` for a name of
/// fewer segments, which is in no pair).
pub fn pair_of(id: &str) -> Option<&str> {
    let first = id.find('/')?;
    let second = first + 1 + id[first + 1..].find('/')?;
    Some(&id[..=second])
}

/// The checkpoint of `objects` (a store's every record, by id, in key order) at `position_ms`,
/// with the change log's wave markers read after listing them (`waves`, in name order).
pub fn build(
    stamp: String,
    position_ms: u64,
    objects: &[(String, ObjectInfo)],
    waves: &[LoggedWave],
    heads_per_pair: usize,
    range_objects: usize,
    shard_bytes: usize,
) -> Built {
    let mut shards = Vec::new();
    let mut refs = |kind: fn(usize) -> Shard, groups: Vec<&[(String, ObjectInfo)]>| -> Vec<ShardRef> {
        groups
            .into_iter()
            .filter(|g| !g.is_empty())
            .enumerate()
            .map(|(i, group)| {
                shards.push((kind(i), encode(group)));
                ShardRef {
                    first: group[0].0.clone(),
                    last: group[group.len() - 1].0.clone(),
                    objects: group.len() as u64,
                }
            })
            .collect()
    };
    let ranges = refs(Shard::Range, range_groups(objects, range_objects, shard_bytes));
    let in_heads = heads_per_pair.div_ceil(4).min(IN_HEADS);
    let heads = refs(Shard::Heads, heads_groups(&nth_of_each_pair(objects, 0, in_heads), shard_bytes));
    let tails = refs(Shard::Tail, tail_groups(&nth_of_each_pair(objects, in_heads, heads_per_pair), shard_bytes));
    let mut wave_refs = Vec::new();
    for (i, group) in waves_groups(waves, shard_bytes).into_iter().enumerate() {
        let body = serde_json::to_vec(&WavesBody { waves: group.to_vec() }).expect("a wave shard serialises");
        shards.push((Shard::Waves(i), body));
        let (first, last) = (group[0].name.clone(), group[group.len() - 1].name.clone());
        wave_refs.push(ShardRef { first, last, objects: group.len() as u64 });
    }
    let manifest = Manifest {
        format: FORMAT.into(),
        version: 1,
        position_ms,
        objects: objects.len() as u64,
        heads_per_pair: in_heads as u64,
        heads,
        tails_per_pair: if tails.is_empty() { 0 } else { heads_per_pair as u64 },
        tails,
        ranges,
        waves: wave_refs,
    };
    Built { stamp, manifest, shards }
}

/// Range shards: runs of about `per_shard` names, ending where a pair ends (and within one
/// at four times as many, or at `max_bytes`).
fn range_groups(objects: &[(String, ObjectInfo)], per_shard: usize, max_bytes: usize) -> Vec<&[(String, ObjectInfo)]> {
    let mut groups = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for i in 1..=objects.len() {
        let held = i - start;
        bytes += entry_bytes(&objects[i - 1]);
        let ends = i == objects.len()
            || held >= 4 * per_shard
            || bytes + entry_bytes(&objects[i]) > max_bytes
            || (held >= per_shard && pair_of(&objects[i].0) != pair_of(&objects[i - 1].0));
        if ends {
            groups.push(&objects[start..i]);
            (start, bytes) = (i, 0);
        }
    }
    groups
}

/// About what a name takes in a shard's body.
fn entry_bytes((id, o): &(String, ObjectInfo)) -> usize {
    let metadata = o.metadata.iter().flatten().map(|(k, v)| k.len() + v.len() + 8).sum::<usize>();
    id.len() + o.etag.len() + o.last_modified.len() + metadata + 32
}

/// Each pair's names after its `skip`th up to its `until`th (and, from the first, every name
/// in no pair), in key order.
fn nth_of_each_pair(objects: &[(String, ObjectInfo)], skip: usize, until: usize) -> Vec<(String, ObjectInfo)> {
    let mut picked = Vec::new();
    let mut in_pair = 0;
    for (i, (id, o)) in objects.iter().enumerate() {
        let pair = pair_of(id);
        in_pair = match i > 0 && pair.is_some() && pair == pair_of(&objects[i - 1].0) {
            true => in_pair + 1,
            false => 1,
        };
        let wanted = match pair {
            None => skip == 0,
            Some(_) => in_pair > skip && in_pair <= until,
        };
        if wanted {
            picked.push((id.clone(), o.clone()));
        }
    }
    picked
}

/// Tail shards: whole pairs, at most [`TAIL_PAIRS`] of them and about `max_bytes` (past it by
/// at most one pair's tail: a pair is never split, so a reader finds each pair's in one shard).
fn tail_groups(tails: &[(String, ObjectInfo)], max_bytes: usize) -> Vec<&[(String, ObjectInfo)]> {
    let mut groups = Vec::new();
    let (mut start, mut bytes, mut pairs) = (0, 0, 0);
    for (i, entry) in tails.iter().enumerate() {
        let new_pair = i == 0 || pair_of(&entry.0) != pair_of(&tails[i - 1].0);
        if new_pair && i > start && (pairs == TAIL_PAIRS || bytes + entry_bytes(entry) > max_bytes) {
            groups.push(&tails[start..i]);
            (start, bytes, pairs) = (i, 0, 0);
        }
        pairs += usize::from(new_pair);
        bytes += entry_bytes(entry);
    }
    if start < tails.len() {
        groups.push(&tails[start..]);
    }
    groups
}

/// The tail shard over `pair`: the one whose first and last names' pairs enclose it.
pub fn tail_over(manifest: &Manifest, pair: &str) -> Option<usize> {
    let tails = &manifest.tails;
    let i = tails.partition_point(|t| pair_of(&t.last).is_some_and(|last| last < pair));
    (i < tails.len() && pair_of(&tails[i].first).is_some_and(|first| first <= pair)).then_some(i)
}

/// Heads shards of at most about `max_bytes`.
fn heads_groups(heads: &[(String, ObjectInfo)], max_bytes: usize) -> Vec<&[(String, ObjectInfo)]> {
    let mut groups = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, entry) in heads.iter().enumerate() {
        let size = entry_bytes(entry);
        if bytes + size > max_bytes && i > start {
            groups.push(&heads[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    groups.push(&heads[start..]);
    groups
}

/// Wave shards of at most about `max_bytes` of writes.
fn waves_groups(waves: &[LoggedWave], max_bytes: usize) -> Vec<&[LoggedWave]> {
    let mut groups = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, wave) in waves.iter().enumerate() {
        let size = wave.name.len() + wave.writes.iter().map(|w| w.id.len() + 96).sum::<usize>();
        if bytes + size > max_bytes && i > start {
            groups.push(&waves[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < waves.len() {
        groups.push(&waves[start..]);
    }
    groups
}

type Row = (usize, String, u64, String, String, Option<Metadata>);

#[derive(Serialize, Deserialize)]
struct Body {
    objects: Vec<Row>,
}

/// A shard's body: each name front-coded against the one before it.
fn encode(objects: &[(String, ObjectInfo)]) -> Vec<u8> {
    let mut previous = "";
    let rows = objects
        .iter()
        .map(|(id, o)| {
            let shared = shared_prefix(previous, id);
            previous = id;
            let etag = o.etag.trim_matches('"').to_string();
            (shared, id[shared..].to_string(), o.size, etag, o.last_modified.clone(), o.metadata.clone())
        })
        .collect();
    serde_json::to_vec(&Body { objects: rows }).expect("a checkpoint's shard serialises")
}

/// The length of the longest common prefix of `a` and `b` that ends on a character boundary.
fn shared_prefix(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !b.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// Reads a manifest; why not, when it is not a usable one.
pub fn parse_manifest(body: &[u8], stamp: &str) -> Result<Manifest, String> {
    let manifest: Manifest = serde_json::from_slice(body).map_err(|e| format!("not a manifest: {e}"))?;
    if manifest.format != FORMAT || manifest.version != 1 {
        return Err(format!("format {:?} version {}, not {FORMAT} 1", manifest.format, manifest.version));
    }
    if position_of(stamp) != Some(manifest.position_ms) {
        return Err(format!("its position {} is not its name's", manifest.position_ms));
    }
    let all = [
        ("heads", &manifest.heads),
        ("tails", &manifest.tails),
        ("ranges", &manifest.ranges),
        ("waves", &manifest.waves),
    ];
    for (what, shards) in all {
        let ordered = shards.windows(2).all(|w| w[0].last < w[1].first);
        if !ordered || shards.iter().any(|s| s.first > s.last || s.objects == 0) {
            return Err(format!("its {what} shards are not in key order"));
        }
    }
    if !manifest.tails.is_empty() && manifest.tails_per_pair <= manifest.heads_per_pair {
        return Err(format!(
            "its tails reach {} names a pair, its heads {}",
            manifest.tails_per_pair, manifest.heads_per_pair
        ));
    }
    // A pair's tail is in one shard: a reader takes a shard's pairs as whole past their heads.
    let in_pairs = manifest.tails.iter().all(|t| pair_of(&t.first).is_some() && pair_of(&t.last).is_some());
    if !in_pairs || manifest.tails.windows(2).any(|w| pair_of(&w[0].last) == pair_of(&w[1].first)) {
        return Err("its tails split a pair or hold names in no pair".into());
    }
    let counted = manifest.ranges.iter().try_fold(0u64, |sum, s| sum.checked_add(s.objects));
    if counted != Some(manifest.objects) {
        return Err(format!("its ranges do not hold {} names", manifest.objects));
    }
    Ok(manifest)
}

/// Reads a shard described by `shard`; each name comes back as a listing would give it, its full
/// key `prefix` + name (the reader keeps those that are its store's records, as of a listing).
pub fn parse_shard(body: &[u8], shard: &ShardRef, prefix: &str) -> Result<Vec<ObjectInfo>, String> {
    let body: Body = serde_json::from_slice(body).map_err(|e| format!("not a shard: {e}"))?;
    if body.objects.len() as u64 != shard.objects {
        return Err(format!("it holds {} names, not {}", body.objects.len(), shard.objects));
    }
    let mut objects: Vec<ObjectInfo> = Vec::with_capacity(body.objects.len());
    for (shared, suffix, size, etag, last_modified, metadata) in body.objects {
        let previous = objects.last().map_or("", |o| &o.key[prefix.len()..]);
        let Some(head) = previous.get(..shared) else {
            return Err(format!("a name shares {shared} bytes with the one before it, which has fewer"));
        };
        let id = format!("{head}{suffix}");
        if id.as_str() <= previous || id < shard.first || id > shard.last {
            return Err(format!("{:?} is out of order or outside the shard", crate::error::clip(&id)));
        }
        if id.starts_with(RESERVED) {
            return Err(format!("{:?} is in the library's own folders", crate::error::clip(&id)));
        }
        if etag.is_empty() || etag.contains('"') {
            return Err(format!("{:?} has no etag", crate::error::clip(&id)));
        }
        objects.push(ObjectInfo {
            key: format!("{prefix}{id}"),
            etag: format!("\"{etag}\""),
            last_modified,
            size,
            metadata,
        });
    }
    Ok(objects)
}

/// Reads a wave shard described by `shard`: its markers must be in the change log at `log`, in
/// order inside the shard's bounds, and as many as it says.
pub fn parse_waves(body: &[u8], shard: &ShardRef, log: &str) -> Result<Vec<LoggedWave>, String> {
    let body: WavesBody = serde_json::from_slice(body).map_err(|e| format!("not a wave shard: {e}"))?;
    if body.waves.len() as u64 != shard.objects {
        return Err(format!("it holds {} waves, not {}", body.waves.len(), shard.objects));
    }
    let ordered = body.waves.windows(2).all(|w| w[0].name < w[1].name);
    let inside = body.waves.iter().all(|w| w.name.starts_with(log) && w.name >= shard.first && w.name <= shard.last);
    match ordered && inside {
        true => Ok(body.waves),
        false => Err("its markers are out of order or outside the change log".into()),
    }
}

/// The range shards holding names from `lower` to `upper` (inclusive; `None`: no end): shards
/// tile the key space, each from just after the one before it to its last name.
pub fn ranges_over(manifest: &Manifest, lower: &str, upper: Option<&str>) -> Vec<usize> {
    let shards = &manifest.ranges;
    (0..shards.len())
        .filter(|&i| {
            let starts_before_upper = i == 0 || upper.is_none_or(|u| shards[i - 1].last.as_str() < u);
            let ends_after_lower = i + 1 == shards.len() || shards[i].last.as_str() >= lower;
            starts_before_upper && ends_after_lower
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str) -> ObjectInfo {
        ObjectInfo {
            key: format!("p/{id}"),
            etag: format!("\"e-{}\"", id.len()),
            last_modified: "2026-12-05T10:00:00.000Z".into(),
            size: id.len() as u64,
            metadata: None,
        }
    }

    fn objects(pairs: usize, per_pair: usize) -> Vec<(String, ObjectInfo)> {
        let mut all: Vec<(String, ObjectInfo)> = (0..pairs)
            .flat_map(|p| (0..per_pair).map(move |r| format!("plat-{}/rt-{p}/{r:06}/f", p % 3)))
            .map(|id| (id.clone(), info(&id)))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    fn read(built: &Built, shard: Shard, refs: &[ShardRef], i: usize) -> Vec<(String, ObjectInfo)> {
        let body = &built.shards.iter().find(|(s, _)| *s == shard).unwrap().1;
        parse_shard(body, &refs[i], "p/").unwrap().into_iter().map(|o| (o.key[2..].to_string(), o)).collect()
    }

    #[test]
    fn every_name_comes_back_from_its_range_shard_and_shards_end_where_pairs_end() {
        let all = objects(7, 400);
        let built = build(stamp(1_000, 1, 0), 1_000, &all, &[], 5, DEFAULT_RANGE_OBJECTS, SHARD_BYTES);
        let m = parse_manifest(&serde_json::to_vec(&built.manifest).unwrap(), &built.stamp).unwrap();
        assert_eq!(m.objects, 2_800);
        let mut back = Vec::new();
        for i in 0..m.ranges.len() {
            let shard = read(&built, Shard::Range(i), &m.ranges, i);
            if i + 1 < m.ranges.len() {
                assert_ne!(pair_of(&m.ranges[i].last), pair_of(&m.ranges[i + 1].first), "cut at a pair's end");
            }
            back.extend(shard);
        }
        assert_eq!(back, all);
        // One pair's names are in the shard(s) over its range.
        let pair = "plat-1/rt-4/";
        let over = ranges_over(&m, pair, Some("plat-1/rt-40"));
        let found: usize = over.iter().map(|&i| read(&built, Shard::Range(i), &m.ranges, i).len()).sum();
        assert!(over.len() == 1 && found >= 400, "{over:?}");
    }

    #[test]
    fn heads_hold_each_pairs_first_names_and_tails_the_next_ones_by_whole_pairs() {
        let all = objects(150, 20);
        let built = build(stamp(5, 9, 1), 5, &all, &[], 16, 10, SHARD_BYTES);
        let m = parse_manifest(&serde_json::to_vec(&built.manifest).unwrap(), &built.stamp).unwrap();
        assert_eq!((m.heads_per_pair, m.tails_per_pair), (4, 16));
        let heads = read(&built, Shard::Heads(0), &m.heads, 0);
        assert_eq!(heads.len(), 600);
        assert_eq!(heads[0], all[0]);
        let pair = "plat-1/rt-1/";
        let of_pair: Vec<&(String, ObjectInfo)> = all.iter().filter(|(id, _)| id.starts_with(pair)).collect();
        assert_eq!(heads.iter().filter(|(id, _)| id.starts_with(pair)).count(), 4);
        // 150 pairs: three tail shards of at most 64 whole pairs.
        assert_eq!(m.tails.len(), 3);
        let i = tail_over(&m, pair).unwrap();
        let tail: Vec<_> =
            read(&built, Shard::Tail(i), &m.tails, i).into_iter().filter(|(id, _)| id.starts_with(pair)).collect();
        assert_eq!(tail.iter().collect::<Vec<_>>(), of_pair[4..16].to_vec());
        for w in m.tails.windows(2) {
            assert_ne!(pair_of(&w[0].last), pair_of(&w[1].first), "cut where a pair ends");
        }
        assert_eq!(tail_over(&m, "plat-9/rt-0/"), None, "a pair the checkpoint does not have");
        let mut split = m.clone();
        split.tails[1].first = format!("{}zz", pair_of(&split.tails[0].last).unwrap());
        let refused = parse_manifest(&serde_json::to_vec(&split).unwrap(), &built.stamp).unwrap_err();
        assert!(refused.contains("split a pair"), "{refused}");
        // Fewer names than the heads hold: no tails.
        let few = build(stamp(5, 9, 1), 5, &objects(3, 2), &[], 16, 10, SHARD_BYTES);
        assert_eq!((few.manifest.tails_per_pair, few.manifest.tails.len()), (0, 0));
    }

    #[test]
    fn names_sort_newest_first_and_read_back() {
        let (old, new) = (stamp(1_000, 1, 0), stamp(2_000, 1, 1));
        assert!(manifest_name("d/", &new) < manifest_name("d/", &old));
        assert!(shard_name("d/", &new, Shard::Range(9)) < manifest_name("d/", &old));
        assert_eq!(stamp_of("d/", &manifest_name("d/", &new)), Some((new.as_str(), true)));
        assert_eq!(stamp_of("d/", &shard_name("d/", &new, Shard::Heads(0))), Some((new.as_str(), false)));
        assert!(after_stamp("d/", &new) > shard_name("d/", &new, Shard::Range(99_999)));
        assert!(after_stamp("d/", &new) < manifest_name("d/", &old));
        assert_eq!(position_of(&new), Some(2_000));
        assert_eq!(stamp_of("d/", "d/junk.json"), None);
    }

    #[test]
    fn a_shard_that_lies_is_refused() {
        let all = objects(1, 3);
        let built = build(stamp(1, 1, 1), 1, &all, &[], 2, 10, SHARD_BYTES);
        let r = ShardRef { first: ".objstore-a".into(), last: "a/b/9".into(), objects: 2 };
        let check = |rows: &str| {
            let body = format!("{{\"objects\": [{rows}]}}");
            parse_shard(body.as_bytes(), &r, "p/").unwrap_err()
        };
        let row = |shared: usize, suffix: &str| format!("[{shared}, \"{suffix}\", 1, \"e\", \"t\", null]");
        assert!(check(&format!("{}, {}", row(0, "a/b/1"), row(9, "2"))).contains("shares"));
        assert!(check(&format!("{}, {}", row(0, "a/b/2"), row(4, "1"))).contains("order"));
        assert!(check(&format!("{}, {}", row(0, "a/b/1"), row(0, "z/b/1"))).contains("outside"));
        assert!(check(&format!("{}, {}", row(0, ".objstore-b"), row(0, "a/b/1"))).contains("own folders"));
        assert!(check(&row(0, "a/b/1")).contains("holds 1"));
        let fine = format!("{{\"objects\": [{}, {}]}}", row(0, "a/b/1"), row(4, "2"));
        let read = parse_shard(fine.as_bytes(), &r, "p/").unwrap();
        assert_eq!((read[1].key.as_str(), read[1].etag.as_str()), ("p/a/b/2", "\"e\""));
        let manifest = |m: &Manifest| parse_manifest(&serde_json::to_vec(m).unwrap(), &built.stamp);
        assert!(manifest(&built.manifest).is_ok());
        let mut wrong = built.manifest.clone();
        wrong.objects += 1;
        assert!(manifest(&wrong).unwrap_err().contains("hold"));
        wrong.ranges[0].objects = u64::MAX;
        assert!(manifest(&wrong).unwrap_err().contains("hold"), "a sum that overflows");
        let mut moved = built.manifest.clone();
        moved.position_ms += 1;
        assert!(manifest(&moved).unwrap_err().contains("position"));
    }

    #[test]
    fn the_logs_waves_come_back_from_their_shard_and_a_stray_one_is_refused() {
        let wave = |name: &str| LoggedWave { name: name.into(), modified: "t".into(), writes: Vec::new() };
        let waves = [wave("p/.objstore-changes/1-a-0/w0"), wave("p/.objstore-changes/2-a-1/w0")];
        let built = build(stamp(1, 1, 1), 1, &objects(1, 1), &waves, 2, 10, SHARD_BYTES);
        let r = &built.manifest.waves[0];
        let body = &built.shards.iter().find(|(s, _)| *s == Shard::Waves(0)).unwrap().1;
        assert_eq!(parse_waves(body, r, "p/.objstore-changes/").unwrap(), waves);
        assert!(parse_waves(body, r, "q/.objstore-changes/").unwrap_err().contains("outside"));
        let none = build(stamp(1, 1, 1), 1, &objects(1, 1), &[], 2, 10, SHARD_BYTES);
        assert!(none.manifest.waves.is_empty() && none.shards.len() == 2);
    }
}
