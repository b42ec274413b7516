//! Checkpoints (see `sync::checkpoint`): a writer writes one from a full listing; a cold
//! reader starts from the newest one instead of listing every name (its heads, for a view of
//! every pair's newest names; every range, for the whole store), and a view of one pair then
//! reads the range shards over it. Whatever a reader takes of a checkpoint, the change log
//! since its position is read right after, and its word wins.

use std::collections::BTreeMap;

use super::*;
use crate::range::KeyRange;
use crate::replica::policy::CheckpointConfig;
use crate::scan::ScanOptions;
use crate::sync::checkpoint::{self, Manifest, Shard, ShardRef};

/// Checkpoints a reader tries, newest first, before it lists instead (and names under the
/// checkpoints' folder it steps over looking for each manifest).
const TRIED: usize = 3;

/// The checkpoint a reader took: its manifest, and what of it the local copy holds.
pub(crate) struct Taken {
    stamp: String,
    manifest: Arc<Manifest>,
    /// The range shards applied.
    ranges: Vec<bool>,
    /// Each pair's last head, when the heads were taken: from the pair's first name to it,
    /// every name is held (to the pair's end, for a pair of fewer names than the heads hold:
    /// `None`), once the pair's tail is read.
    heads: Option<BTreeMap<String, Option<String>>>,
    /// The tail shard over each pair whose names past its heads are not read yet (`heads`
    /// says where the pair is held to meanwhile).
    held: BTreeMap<String, usize>,
    /// The objects the change log named since the checkpoint's position: the local copy holds
    /// its word on them, which a range shard read later must not undo. `None` past
    /// [`TOUCHED_HELD`] of them (range shards are then not read: a listing is).
    touched: Option<HashSet<String>>,
}

/// The most objects named by the change log a taken checkpoint keeps track of.
const TOUCHED_HELD: usize = 200_000;

/// What a prefetch took of a checkpoint, for the local copy's record once it is applied.
pub(super) enum Step {
    /// Its heads or every range, from the newest checkpoint.
    Took(Taken),
    /// These range shards of the checkpoint taken.
    Ranges(Vec<usize>),
    /// The tail shard of these pairs, and where each is held to now (`None`: whole).
    Held(Vec<(String, Option<String>)>),
}

impl Seen {
    /// Notes what a prefetch applied: a checkpoint's part, or a listing (after which what was
    /// taken of a checkpoint says nothing any more), and the objects the change log named.
    pub(super) fn note_checkpoint(&mut self, step: Option<Step>, listed: bool, named_by_log: &[String]) {
        match (step, &mut self.checkpoint) {
            (Some(Step::Took(taken)), _) => self.checkpoint = Some(taken),
            (Some(Step::Ranges(over)), Some(taken)) => over.into_iter().for_each(|i| taken.ranges[i] = true),
            (Some(Step::Held(pairs)), Some(taken)) => {
                for (pair, last) in pairs {
                    taken.held.remove(&pair);
                    taken.heads.get_or_insert_with(BTreeMap::new).insert(pair, last);
                }
            }
            (None, _) if listed => self.checkpoint = None,
            _ => {}
        }
        if let Some(taken) = &mut self.checkpoint {
            taken.note_named(named_by_log.iter().cloned());
        }
    }
}

impl Taken {
    /// Notes objects the change log (or this process's own writes) named since the position.
    fn note_named(&mut self, ids: impl Iterator<Item = String>) {
        if let Some(touched) = &mut self.touched {
            touched.extend(ids);
            if touched.len() > TOUCHED_HELD {
                self.touched = None;
            }
        }
    }
}

/// What [`Agent::checkpoint`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointReport {
    /// The manifest's name in the bucket.
    pub manifest: String,
    /// The bucket's clock when the listing began: readers read the change log from there.
    pub position_ms: u64,
    pub objects: u64,
    /// Shards written (heads, tails, ranges and waves), and their bytes with the manifest's.
    pub shards: usize,
    pub bytes: u64,
}

impl Agent {
    /// Writes a checkpoint of `store`: lists it in full, then puts its shards and, last, its
    /// manifest, each create-only. A writer that fails part-way leaves no manifest, so readers
    /// never see a checkpoint half written.
    pub fn checkpoint(&self, port: &mut impl Port, store: &str, token: &Token) -> Result<CheckpointReport> {
        let s = self.store(store)?;
        let config = checkpoints_of(s).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "store {store:?} keeps no checkpoints: set Options.checkpoints: true (with Options.changeLog: true)"
            ))
        })?;
        let what = format!("writing a checkpoint of store {store:?}");
        self.may_contact(s, &what)?;
        let (clock_known, began) = (s.bucket.clock_offset_ms().is_some(), Instant::now());
        let mut position_ms = self.bucket_now_ms(s);
        let listed = self.list_every_object(s, token, &mut |_| Ok(()));
        let listed = listed.inspect_err(|e| self.report_offline(port, store, e))?;
        if !clock_known {
            position_ms = self.bucket_now_ms(s).saturating_sub(began.elapsed().as_millis() as u64);
        }
        let prefix = &s.config.connection.location.prefix;
        let mut objects: Vec<(String, ObjectInfo)> = listed
            .into_iter()
            .filter_map(|o| Some((o.key.strip_prefix(prefix.as_str())?.to_string(), o)))
            .filter(|(id, _)| !id.is_empty() && !id.ends_with('/') && !id.starts_with(checkpoint::RESERVED))
            .collect();
        objects.sort_by(|a, b| a.0.cmp(&b.0));
        let waves = self.waves_in_window(s, position_ms, token)?;
        let (writer, n) = changelog::writer_and_count();
        let stamp = checkpoint::stamp(position_ms, writer, n);
        // A reader of the same settings can read every shard.
        let shard_bytes = checkpoint::SHARD_BYTES.min(s.config.connection.max_object_bytes as usize / 2);
        let (heads, ranges) = (config.heads_per_pair, config.range_objects);
        let built = checkpoint::build(stamp, position_ms, &objects, &waves, heads, ranges, shard_bytes);
        let create = PutOptions { mode: PutMode::Create, ..Default::default() };
        let puts = parallel(&built.shards, s.config.connection.concurrency, |(shard, body)| {
            token.check(&what)?;
            s.bucket.put(&checkpoint::shard_name(&config.prefix, &built.stamp, *shard), body, &create, token)
        });
        for put in puts {
            self.recorded(s, put)?;
        }
        let manifest_body = serde_json::to_vec(&built.manifest).expect("a manifest serialises");
        let manifest = checkpoint::manifest_name(&config.prefix, &built.stamp);
        token.check(&what)?;
        self.recorded(s, s.bucket.put(&manifest, &manifest_body, &create, token))?;
        let bytes = built.shards.iter().map(|(_, body)| body.len() as u64).sum::<u64>() + manifest_body.len() as u64;
        if s.config.policy.in_directory {
            // A failure only leaves more behind, for the next checkpoint to remove.
            let _ = self.prune_checkpoints(s, config, token);
        }
        Ok(CheckpointReport { manifest, position_ms, objects: objects.len() as u64, shards: built.shards.len(), bytes })
    }

    /// Notes the writes among `changes` that reached the bucket as the change log's word on
    /// their objects: a range shard read after must not undo this process's own writes (their
    /// markers are read only at the next refresh).
    pub(super) fn note_written(&self, changes: &[Change]) {
        let written: Vec<(&str, &str)> = changes
            .iter()
            .filter_map(|change| match change {
                Change::Sent { store, id, .. } | Change::Landed { store, id, .. } => {
                    Some((store.as_str(), id.as_str()))
                }
                _ => None,
            })
            .collect();
        if written.is_empty() {
            return;
        }
        let mut seen = self.seen();
        for (store, id) in written {
            let siblings = self.stores.get(store).map_or(&[][..], |s| &s.meta_siblings[..]);
            for name in std::iter::once(store).chain(siblings.iter().map(String::as_str)) {
                if let Some(taken) = seen.get_mut(name).and_then(|s| s.checkpoint.as_mut()) {
                    taken.note_named(std::iter::once(id.to_string()));
                }
            }
        }
    }

    /// The wave markers a reader of the change log from `position_ms` reads (its window before
    /// that), with their writes: those that cannot be read are left to the reader.
    fn waves_in_window(&self, s: &SyncedStore, position_ms: u64, token: &Token) -> Result<Vec<checkpoint::LoggedWave>> {
        let Some(log) = &s.config.policy.change_log else { return Ok(Vec::new()) };
        let request = ListRequest {
            prefix: log.prefix.clone(),
            start_after: Some(changelog::start_after(&log.prefix, position_ms, log.window.as_millis() as u64)),
            version: s.config.connection.list_version,
            ..Default::default()
        };
        let listed = self.recorded(s, list_all(&*s.bucket, &request, token))?.objects;
        let waves: Vec<&ObjectInfo> =
            listed.iter().filter(|o| changelog::parse_wave(&log.prefix, o).is_some()).collect();
        let bodies = parallel(&waves, s.config.connection.concurrency, |wave| {
            s.bucket.get(&wave.key, &Validators::default(), token)
        });
        let mut logged = Vec::new();
        for (wave, body) in waves.into_iter().zip(bodies) {
            if let Fetched::Found(object) = self.recorded(s, body)? {
                if let Some(writes) = changelog::wave_writes(&object.body) {
                    logged.push(checkpoint::LoggedWave {
                        name: wave.key.clone(),
                        modified: wave.last_modified.clone(),
                        writes,
                    });
                }
            }
        }
        Ok(logged)
    }

    /// The store's names as the newest usable checkpoint has them: its heads (`heads`; with
    /// its tails, for a store of bodies), else every range. `None` when the store keeps none,
    /// none is recent enough to go on from through the change log (`relistEveryMs`), or the
    /// newest ones cannot be read.
    pub(super) fn learn_from_checkpoint(
        &self,
        port: &mut impl Port,
        store: &str,
        heads: bool,
        now_ms: u64,
        token: &Token,
    ) -> Result<Option<(Learnt, StoreState, HashSet<String>)>> {
        let s = &self.stores[store];
        let (Some(config), Some(log)) = (checkpoints_of(s), &s.config.policy.change_log) else { return Ok(None) };
        // Older ones would have the change log read from where it may be pruned; one later than
        // the clocks' skew allows would have it read from the future.
        let oldest_ms = now_ms.saturating_sub(log.relist_every.as_millis() as u64);
        let latest_ms = now_ms + log.window.as_millis() as u64;
        let mut after = None;
        for _ in 0..TRIED {
            // A checkpoint that cannot be read is stepped over; a bucket out of reach is the
            // read's error, as for a listing.
            let found = match self.next_manifest(s, config, after.as_deref(), (oldest_ms, latest_ms), token) {
                Err(e) if e.is_offline() => return Err(e),
                found => found.unwrap_or(None),
            };
            let Some((stamp, manifest)) = found else {
                return Ok(None);
            };
            // A store of bodies reads the tails with the heads: it must learn at once which of
            // its cached copies changed. One of descriptions reads a pair's tail when a read
            // goes past its heads.
            let tails_now = heads && s.config.policy.format != Format::ObjstoreMeta;
            let mut wanted: Vec<(Shard, &ShardRef)> = match heads {
                true => manifest.heads.iter().enumerate().map(|(i, r)| (Shard::Heads(i), r)).collect(),
                false => manifest.ranges.iter().enumerate().map(|(i, r)| (Shard::Range(i), r)).collect(),
            };
            if tails_now {
                wanted.extend(manifest.tails.iter().enumerate().map(|(i, r)| (Shard::Tail(i), r)));
            }
            wanted.extend(manifest.waves.iter().enumerate().map(|(i, r)| (Shard::Waves(i), r)));
            let (objects, waves) = match self.read_shards(s, config, &stamp, &wanted, token) {
                Err(e) if e.is_offline() => return Err(e),
                Ok(Some(read)) => read,
                _ => {
                    after = Some(checkpoint::after_stamp(&config.prefix, &stamp));
                    continue;
                }
            };
            self.take_waves(s, &log.prefix, waves);
            let name = store.to_string();
            let local = port.exec(move |db| db.store_state(&name))?;
            // Each pair's heads as written, before names this store cannot hold are left out: a
            // pair is held whole only when the writer had fewer names for it.
            let per_pair = match tails_now {
                true => manifest.tails_per_pair.max(manifest.heads_per_pair),
                false => manifest.heads_per_pair,
            };
            let mut last_heads =
                heads.then(|| last_of_each_pair(&objects, &s.config.connection.location.prefix, per_pair));
            // A pair whose heads are full has more names in the tail shard over it, if any.
            let mut held = BTreeMap::new();
            if !tails_now {
                for (pair, last) in last_heads.iter_mut().flatten().filter(|(_, last)| last.is_some()) {
                    match checkpoint::tail_over(&manifest, pair) {
                        Some(tail) => drop(held.insert(pair.clone(), tail)),
                        None if manifest.tails_per_pair > 0 => *last = None,
                        None => {}
                    }
                }
            }
            // Whatever the local copy held is replaced by the checkpoint's word, then the log's
            // from its position (what this process read of the log before may not reach it).
            let described = records(s, store, objects);
            let vanished = match &last_heads {
                Some(last_heads) => vanished_beside_heads(&local, &described, last_heads),
                None => vanished(&local, &described),
            };
            let learnt = Learnt {
                vanished,
                described,
                complete: !heads,
                changes_since_ms: Some(manifest.position_ms),
                first_per_pair: heads,
                complete_before: false,
                listed_at_ms: Some(manifest.position_ms),
                checkpoint: None,
                named_by_log: Vec::new(),
            };
            let ranges = vec![!heads; manifest.ranges.len()];
            let touched = Some(HashSet::new());
            let taken = Taken { stamp, manifest: Arc::new(manifest), ranges, heads: last_heads, held, touched };
            let learnt = Learnt { checkpoint: Some(Step::Took(taken)), ..learnt };
            return Ok(Some((learnt, local, HashSet::new())));
        }
        Ok(None)
    }

    /// The names from `lower` to `upper` as the range shards of the checkpoint taken have them
    /// (those not applied yet). `None` when none was taken, it is too old now, or a shard cannot
    /// be read: the caller lists instead.
    pub(super) fn learn_from_ranges(
        &self,
        port: &mut impl Port,
        store: &str,
        lower: &str,
        upper: &str,
        token: &Token,
    ) -> Result<Option<(Learnt, StoreState, HashSet<String>)>> {
        let s = &self.stores[store];
        let (Some(config), Some(log)) = (checkpoints_of(s), &s.config.policy.change_log) else { return Ok(None) };
        let taken = self.seen().get(store).and_then(|seen| seen.checkpoint.as_ref()).and_then(|taken| {
            taken.touched.is_some().then(|| (taken.stamp.clone(), taken.manifest.clone(), taken.ranges.clone()))
        });
        let Some((stamp, manifest, loaded)) = taken else { return Ok(None) };
        if self.too_old(s, log, &manifest) {
            return Ok(None);
        }
        let over: Vec<usize> =
            checkpoint::ranges_over(&manifest, lower, Some(upper)).into_iter().filter(|&i| !loaded[i]).collect();
        let wanted: Vec<(Shard, &ShardRef)> = over.iter().map(|&i| (Shard::Range(i), &manifest.ranges[i])).collect();
        let objects = match self.read_shards(s, config, &stamp, &wanted, token) {
            Err(e) if e.is_offline() => return Err(e),
            Ok(Some((objects, _))) => objects,
            _ => return Ok(None),
        };
        let name = store.to_string();
        let local = port.exec(move |db| db.store_state(&name))?;
        let read = records(s, store, objects);
        // What the change log named since the checkpoint, the local copy holds as the log said
        // (looked up where it is kept: it may hold 200,000 names).
        let seen = self.seen();
        let touched = seen.get(store).and_then(|seen| seen.checkpoint.as_ref()?.touched.as_ref());
        let Some(touched) = touched else { return Ok(None) };
        let described: Vec<(String, ObjectInfo)> = read.into_iter().filter(|(id, _)| !touched.contains(id)).collect();
        let listed: HashSet<&str> = described.iter().map(|(id, _)| id.as_str()).collect();
        let vanished = local
            .known
            .keys()
            .filter(|id| !listed.contains(id.as_str()) && !touched.contains(*id))
            .filter(|id| over.iter().any(|&i| in_range_shard(&manifest, i, id)))
            .cloned()
            .collect();
        drop(listed);
        drop(seen);
        let learnt = Learnt { vanished, described, checkpoint: Some(Step::Ranges(over)), ..Learnt::default() };
        Ok(Some((learnt, local, HashSet::new())))
    }

    /// The names of `pair`'s tail shard (the pairs beside it too: one GET for a page of pairs),
    /// but for those the change log named since (its word is applied already), and what the
    /// local copy holds of those pairs past their heads that the tails do not name. `None` when
    /// no tail is left to read of `pair`, the checkpoint is older than `relistEveryMs` now, the
    /// log named too many objects to tell, or the shard cannot be read: the caller lists.
    pub(super) fn learn_from_held(
        &self,
        port: &mut impl Port,
        store: &str,
        pair: &str,
        token: &Token,
    ) -> Result<Option<(Learnt, StoreState, HashSet<String>)>> {
        let s = &self.stores[store];
        let (Some(config), Some(log)) = (checkpoints_of(s), &s.config.policy.change_log) else { return Ok(None) };
        let (stamp, manifest, tail, pairs) = {
            let seen = self.seen();
            let Some(taken) = seen.get(store).and_then(|seen| seen.checkpoint.as_ref()) else { return Ok(None) };
            if self.too_old(s, log, &taken.manifest) || taken.touched.is_none() {
                return Ok(None);
            }
            let (Some(&tail), Some(heads)) = (taken.held.get(pair), &taken.heads) else { return Ok(None) };
            // Each pair of the shard, with its last head: the local copy holds it up to there.
            let pairs: Vec<(String, String)> = taken
                .held
                .iter()
                .filter(|(_, &over)| over == tail)
                .filter_map(|(pair, _)| Some((pair.clone(), heads.get(pair)?.clone()?)))
                .collect();
            (taken.stamp.clone(), taken.manifest.clone(), tail, pairs)
        };
        let wanted = [(Shard::Tail(tail), &manifest.tails[tail])];
        let objects = match self.read_shards(s, config, &stamp, &wanted, token) {
            Err(e) if e.is_offline() => return Err(e),
            Ok(Some((objects, _))) => objects,
            _ => return Ok(None),
        };
        // Each pair is held to its last tail now, or whole when the writer had fewer names:
        // counted as written, before names this store cannot hold are left out (as the heads).
        let reach = manifest.tails_per_pair.saturating_sub(manifest.heads_per_pair);
        let prefix = &s.config.connection.location.prefix;
        let mut tails_of: HashMap<&str, (u64, &str)> = HashMap::new();
        for id in objects.iter().filter_map(|o| o.key.strip_prefix(prefix.as_str())) {
            if let Some(pair) = checkpoint::pair_of(id) {
                let (count, _) = tails_of.get(pair).copied().unwrap_or((0, id));
                tails_of.insert(pair, (count + 1, id));
            }
        }
        let held_to: Vec<(String, Option<String>)> = pairs
            .iter()
            .map(|(pair, _)| {
                let last = tails_of.get(pair.as_str()).filter(|(count, _)| *count >= reach);
                (pair.clone(), last.map(|(_, id)| id.to_string()))
            })
            .collect();
        drop(tails_of);
        let read = records(s, store, objects);
        // Past each pair's heads, up to where it is held now: what the local copy holds there.
        let spans: Vec<KeyRange> = pairs
            .iter()
            .zip(&held_to)
            .map(|((pair, last_head), (_, to))| match to {
                Some(to) => KeyRange::bound(last_head.clone(), to.clone(), true, false),
                None => KeyRange::bound(last_head.clone(), format!("{}0", &pair[..pair.len() - 1]), true, true),
            })
            .collect();
        let (name, tails): (String, Vec<String>) = (store.to_string(), read.iter().map(|(id, _)| id.clone()).collect());
        let local = port.exec(move |db| {
            let mut ids = tails;
            for span in spans {
                let keys = db.keys(&name, &ScanOptions::new().range(span))?;
                ids.extend(keys.into_iter().filter_map(|key| match key {
                    Key::String(id) => Some(id),
                    _ => None,
                }));
            }
            db.store_state_of(&name, Some(&ids))
        })?;
        let seen = self.seen();
        let touched = seen.get(store).and_then(|seen| seen.checkpoint.as_ref()?.touched.as_ref());
        let Some(touched) = touched else { return Ok(None) };
        let named: HashSet<&str> = read.iter().map(|(id, _)| id.as_str()).collect();
        let last_heads: HashMap<&str, &str> = pairs.iter().map(|(pair, last)| (pair.as_str(), last.as_str())).collect();
        let past_heads =
            |id: &str| checkpoint::pair_of(id).and_then(|pair| last_heads.get(pair)).is_some_and(|last| id > *last);
        let vanished = local
            .known
            .keys()
            .filter(|id| !named.contains(id.as_str()) && !touched.contains(*id) && past_heads(id))
            .cloned()
            .collect();
        drop(named);
        let described = read.into_iter().filter(|(id, _)| !touched.contains(id)).collect();
        drop(seen);
        let learnt = Learnt { described, vanished, checkpoint: Some(Step::Held(held_to)), ..Learnt::default() };
        Ok(Some((learnt, local, HashSet::new())))
    }

    /// Whether the checkpoint of `manifest` is older than `relistEveryMs` now: the change log
    /// may be pruned past it, so what is left of it is not taken.
    fn too_old(&self, s: &SyncedStore, log: &ChangeLogConfig, manifest: &Manifest) -> bool {
        u128::from(self.bucket_now_ms(s).saturating_sub(manifest.position_ms)) >= log.relist_every.as_millis()
    }

    /// The pairs of `ids` whose heads the checkpoint taken of `store` holds back.
    pub fn held_pairs<'i>(&self, store: &str, ids: impl Iterator<Item = &'i str>) -> Vec<String> {
        let seen = self.seen();
        let Some(taken) = seen.get(store).and_then(|seen| seen.checkpoint.as_ref()) else { return Vec::new() };
        let mut pairs: Vec<String> = ids
            .filter_map(checkpoint::pair_of)
            .filter(|pair| taken.held.contains_key(*pair))
            .map(str::to_string)
            .collect();
        pairs.sort();
        pairs.dedup();
        pairs
    }

    /// Whether the local copy, as taken from a checkpoint, holds every name `scan` can find:
    /// a forward scan of names inside one pair (the results layout's `{platform}/{browser}/`)
    /// whose range shards were applied, that ends within the pair's heads applied, or that
    /// finds its `limit` names before they end (`count` counts the names held in a range).
    pub fn checkpoint_covers(&self, store: &str, scan: &ScanOptions, count: impl FnOnce(KeyRange) -> u64) -> bool {
        let Some((lower, lower_open, upper)) = in_one_pair(scan) else { return false };
        let last_head = {
            let seen = self.seen();
            let Some(taken) = seen.get(store).and_then(|s| s.checkpoint.as_ref()) else { return false };
            if checkpoint::ranges_over(&taken.manifest, lower, Some(upper)).iter().all(|&i| taken.ranges[i]) {
                return true;
            }
            let Some(heads) = &taken.heads else { return false };
            let pair = checkpoint::pair_of(lower);
            match pair.and_then(|pair| heads.get(pair)) {
                Some(Some(last)) => last.clone(),
                // A pair the heads hold whole, or one the checkpoint did not have: the
                // change log named each of its names since.
                Some(None) | None => return true,
            }
        };
        if upper <= last_head.as_str() {
            return true;
        }
        let wanted = scan.limit.map(|limit| limit + scan.offset);
        let range = || KeyRange::bound(lower.to_string(), last_head.clone(), lower_open, false);
        !scan.reverse && lower <= last_head.as_str() && wanted.is_some_and(|n| count(range()) >= n as u64)
    }

    /// The range a scan inside one pair (see [`Agent::checkpoint_covers`]) reads, when `store`
    /// keeps checkpoints: what a prefetch reads of their range shards.
    pub fn pair_range<'s>(&self, store: &str, scan: &'s ScanOptions) -> Option<(&'s str, &'s str)> {
        self.stores.get(store).and_then(checkpoints_of)?;
        in_one_pair(scan).map(|(lower, _, upper)| (lower, upper))
    }

    /// Whether a checkpoint of `store` was taken.
    pub(super) fn took_checkpoint(&self, store: &str) -> bool {
        self.seen().get(store).is_some_and(|s| s.checkpoint.is_some())
    }

    /// Removes the checkpoints older than the one before the newest, and what writers that died
    /// part-way left as old: where nothing else expires them (a directory; on S3, a lifecycle
    /// rule does). Checkpoints newer than those kept (another writer's, being written) stay.
    fn prune_checkpoints(&self, s: &SyncedStore, config: &CheckpointConfig, token: &Token) -> Result<()> {
        let version = s.config.connection.list_version;
        let request = ListRequest { prefix: config.prefix.clone(), version, ..Default::default() };
        let listed = list_all(&*s.bucket, &request, token)?.objects;
        // Names sort newest first: the second manifest met is the last kept.
        let second = listed
            .iter()
            .filter_map(|o| checkpoint::stamp_of(&config.prefix, &o.key).filter(|(_, manifest)| *manifest))
            .nth(1);
        let Some((kept, _)) = second else { return Ok(()) };
        for object in &listed {
            if checkpoint::stamp_of(&config.prefix, &object.key).is_some_and(|(stamp, _)| stamp > kept) {
                s.bucket.delete(&object.key, token)?;
            }
        }
        Ok(())
    }

    /// The next manifest after `after` (from the newest), read and checked, unless its name says
    /// it is older than `within.0` (then so are the rest): one that is not a manifest, cannot be
    /// read, or is later than `within.1` is stepped over.
    fn next_manifest(
        &self,
        s: &SyncedStore,
        config: &CheckpointConfig,
        after: Option<&str>,
        (oldest_ms, latest_ms): (u64, u64),
        token: &Token,
    ) -> Result<Option<(String, Manifest)>> {
        let mut after = after.map(str::to_string);
        for _ in 0..TRIED {
            let request = ListRequest {
                prefix: config.prefix.clone(),
                max_keys: Some(1),
                start_after: after.clone(),
                version: s.config.connection.list_version,
                ..Default::default()
            };
            let page = self.recorded(s, s.bucket.list_page(&request, token))?;
            let Some(first) = page.objects.into_iter().next() else { return Ok(None) };
            let Some((stamp, is_manifest)) = checkpoint::stamp_of(&config.prefix, &first.key) else {
                after = Some(first.key);
                continue;
            };
            let position_ms = checkpoint::position_of(stamp).unwrap_or(0);
            if position_ms < oldest_ms {
                return Ok(None);
            }
            let stamp = stamp.to_string();
            if is_manifest && position_ms <= latest_ms {
                let body = self.recorded(s, s.bucket.get(&first.key, &Validators::default(), token))?;
                if let Fetched::Found(object) = body {
                    if let Ok(manifest) = checkpoint::parse_manifest(&object.body, &stamp) {
                        return Ok(Some((stamp, manifest)));
                    }
                }
            }
            after = Some(checkpoint::after_stamp(&config.prefix, &stamp));
        }
        Ok(None)
    }

    /// The names and wave markers in shards `wanted` of checkpoint `stamp`, read side by side;
    /// `None` when one is missing, too large or not a shard.
    fn read_shards(
        &self,
        s: &SyncedStore,
        config: &CheckpointConfig,
        stamp: &str,
        wanted: &[(Shard, &ShardRef)],
        token: &Token,
    ) -> Result<Option<(Vec<ObjectInfo>, Vec<checkpoint::LoggedWave>)>> {
        let prefix = &s.config.connection.location.prefix;
        let log = s.config.policy.change_log.as_ref().map_or("", |log| log.prefix.as_str());
        let bodies = parallel(wanted, s.config.connection.concurrency, |(shard, _)| {
            s.bucket.get(&checkpoint::shard_name(&config.prefix, stamp, *shard), &Validators::default(), token)
        });
        let (mut objects, mut waves) = (Vec::new(), Vec::new());
        for ((kind, shard), body) in wanted.iter().zip(bodies) {
            let Fetched::Found(body) = self.recorded(s, body)? else { return Ok(None) };
            let read = match kind {
                Shard::Waves(_) => checkpoint::parse_waves(&body.body, shard, log).map(|w| waves.extend(w)),
                _ => checkpoint::parse_shard(&body.body, shard, prefix).map(|names| objects.extend(names)),
            };
            if read.is_err() {
                return Ok(None);
            }
        }
        Ok(Some((objects, waves)))
    }

    /// Keeps the wave markers a checkpoint's writer read as if this reader had read them: the
    /// change log's read after the checkpoint then costs no GET for them.
    fn take_waves(&self, s: &SyncedStore, log: &str, waves: Vec<checkpoint::LoggedWave>) {
        let mut read = self.waves_read.lock().unwrap_or_else(|p| p.into_inner());
        for wave in waves {
            let listed = ObjectInfo { key: wave.name, last_modified: wave.modified, ..ObjectInfo::default() };
            let Some(parsed) = changelog::parse_wave(log, &listed) else { continue };
            if let Some(markers) = changelog::markers_of_wave(&parsed, wave.writes) {
                read.insert(format!("{}\n{}", s.address, listed.key), markers);
            }
        }
    }
}

fn checkpoints_of(s: &SyncedStore) -> Option<&CheckpointConfig> {
    s.config.policy.change_log.as_ref()?.checkpoints.as_ref()
}

/// A forward or backward scan of the primary key over names inside one pair: its lower bound,
/// whether that is open, and its upper bound.
fn in_one_pair(scan: &ScanOptions) -> Option<(&str, bool, &str)> {
    let Some(KeyRange::Bound { lower: Key::String(lower), upper: Key::String(upper), lower_open, .. }) = &scan.range
    else {
        return None;
    };
    let pair = checkpoint::pair_of(lower)?;
    // Names of the pair sort before its prefix with the last `/` made a `0`.
    let end = format!("{}0", &pair[..pair.len() - 1]);
    (scan.index.is_none() && upper.as_str() <= end.as_str()).then_some((lower.as_str(), *lower_open, upper.as_str()))
}

/// Each pair's last name among heads (in key order, full keys under `prefix`), or `None` for a
/// pair of fewer names than `per_pair`: the heads hold all of it.
fn last_of_each_pair(heads: &[ObjectInfo], prefix: &str, per_pair: u64) -> BTreeMap<String, Option<String>> {
    let mut last: BTreeMap<String, (String, u64)> = BTreeMap::new();
    for id in heads.iter().filter_map(|o| o.key.strip_prefix(prefix)) {
        if let Some(pair) = checkpoint::pair_of(id) {
            let entry = last.entry(pair.to_string()).or_insert_with(|| (id.to_string(), 0));
            *entry = (id.to_string(), entry.1 + 1);
        }
    }
    last.into_iter().map(|(pair, (id, held))| (pair, (held >= per_pair).then_some(id))).collect()
}

/// What the local copy holds that a checkpoint's heads say is gone: names in no pair, or in a
/// pair it does not have, or before the pair's last head, that the heads do not name.
fn vanished_beside_heads(
    local: &StoreState,
    heads: &[(String, ObjectInfo)],
    last_heads: &BTreeMap<String, Option<String>>,
) -> Vec<String> {
    let named: HashSet<&str> = heads.iter().map(|(id, _)| id.as_str()).collect();
    let known_gone = |id: &str| match checkpoint::pair_of(id).map(|pair| last_heads.get(pair)) {
        None | Some(None) | Some(Some(None)) => true,
        Some(Some(Some(last))) => id <= last.as_str(),
    };
    local.known.keys().filter(|id| !named.contains(id.as_str()) && known_gone(id)).cloned().collect()
}

/// Whether name `id` is in range shard `i`'s part of the key space: after the shard before it,
/// up to its own last name (the last shard: to the end).
fn in_range_shard(manifest: &Manifest, i: usize, id: &str) -> bool {
    let after_previous = i == 0 || id > manifest.ranges[i - 1].last.as_str();
    let up_to_last = i + 1 == manifest.ranges.len() || id <= manifest.ranges[i].last.as_str();
    after_previous && up_to_last
}
