//! Prefetch: one listing (or the change log), then only what is new or changed is fetched (or
//! described: an objstore-meta store's records are written while the listing's later pages
//! arrive), and what vanished goes, in batches of at most [`MAX_BATCH`] changes.

use super::*;
use crate::sync::reads::Extent;

impl Agent {
    /// Prefetches `store` as its setting says, unless within the refractory period.
    pub fn refresh(&self, port: &mut impl Port, store: &str, token: &Token) -> Result<()> {
        match self.stores.get(store).and_then(|s| s.config.policy.prefetch) {
            Some(mode) if !self.refractory_fresh(store) => {
                self.prefetch_as(port, store, mode, Listing::AsHeld, Instant::now(), token)
            }
            _ => Ok(()),
        }
    }

    /// Prefetches `store` as its setting says, now (a read found it cold, or asked for fresh),
    /// as far as `extent` needs: a read of the first name of each pair (see
    /// [`Agent::reads_first_per_pair`]) of a store not listed yet lists only those (or takes a
    /// checkpoint's heads); a read inside one pair reads the range shards over it.
    /// `asked`: when the read found it needed the listing; one that completed since serves it
    /// (reads that find a store cold together share one listing).
    pub fn prefetch_for_read(
        &self,
        port: &mut impl Port,
        store: &str,
        extent: &Extent,
        asked: Instant,
        token: &Token,
    ) -> Result<()> {
        let mode = self.stores.get(store).and_then(|s| s.config.policy.prefetch).unwrap_or(Prefetch::Meta);
        let listing = match extent {
            Extent::FirstPerPair => Listing::FirstPerPair,
            Extent::Everything => Listing::Everything,
            Extent::AsHeld => Listing::AsHeld,
            Extent::InPair(scan) => return self.prefetch_pair_range(port, store, mode, scan, asked, token),
            Extent::HeldPairs(pairs) => return self.apply_held(port, store, mode, pairs, token),
        };
        if self.listed_after(store, asked, listing == Listing::Everything) {
            return Ok(());
        }
        self.prefetch_as(port, store, mode, listing, asked, token)
    }

    /// Reads the tail shards of the checkpoint taken over `pairs` (each the tails of a page of
    /// pairs: one GET). Tails it can no longer apply (the checkpoint is older than
    /// `relistEveryMs` now, the log named too many objects to tell what it changed, or a shard
    /// cannot be read) give way to a listing.
    fn apply_held(
        &self,
        port: &mut impl Port,
        store: &str,
        mode: Prefetch,
        pairs: &[String],
        token: &Token,
    ) -> Result<()> {
        self.may_contact(self.store(store)?, &format!("prefetching store {store:?}"))?;
        {
            // Under the listing's lock, as every step that applies what the bucket holds: a log
            // read in between must not see its word undone.
            let _one_listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
            for pair in pairs {
                let source = Source::Held { pair: pair.clone() };
                self.prefetch_once(port, store, mode, Listing::AsHeld, source, None, token)?;
            }
            if self.held_pairs(store, pairs.iter().map(String::as_str)).is_empty() {
                return Ok(());
            }
        }
        self.prefetch_as(port, store, mode, Listing::Everything, Instant::now(), token)
    }

    /// Brings in the checkpoint's range shards over `scan` (inside one pair), unless a read
    /// that went before did, and reads the change log when not read within the refractory
    /// period. The pair's tail comes first, which may be all the read needs.
    fn prefetch_pair_range(
        &self,
        port: &mut impl Port,
        store: &str,
        mode: Prefetch,
        scan: &crate::ScanOptions,
        asked: Instant,
        token: &Token,
    ) -> Result<()> {
        let s = self.store(store)?;
        let covered = |agent: &Agent, port: &mut _| {
            agent.checkpoint_covers(store, scan, |range| {
                let (name, scan) = (store.to_string(), crate::ScanOptions::new().range(range));
                Port::exec(port, move |db: &mut crate::database::Database| db.count(&name, &scan)).unwrap_or(0)
            })
        };
        let held = self.pair_range(store, scan).map(|(lower, _)| self.held_pairs(store, std::iter::once(lower)));
        if let Some(held) = held.filter(|held| !held.is_empty() && !covered(self, port)) {
            self.apply_held(port, store, mode, &held, token)?;
        }
        self.may_contact(s, &format!("prefetching store {store:?}"))?;
        let _one_listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        if !self.took_checkpoint(store) {
            // Cold: every pair's heads first, which may be all the read needs.
            self.bring_up_to_date(port, store, mode, Listing::FirstPerPair, Source::Bucket, token)?;
            if !self.took_checkpoint(store) {
                return match self.listed_for(store, false) {
                    true => Ok(()),
                    false => self.bring_up_to_date(port, store, mode, Listing::Everything, Source::Bucket, token),
                };
            }
            if covered(self, port) {
                return Ok(());
            }
        } else if covered(self, port) {
            // Covered since the read asked (a read before it applied what it needs): refreshed
            // as a read the local copy covered then would be, after the refractory period.
            return match self.listed_after(store, asked, false) || self.refractory_fresh(store) {
                true => Ok(()),
                false => self.bring_up_to_date(port, store, mode, Listing::AsHeld, Source::Bucket, token),
            };
        }
        let Some((lower, upper)) = self.pair_range(store, scan) else {
            return self.bring_up_to_date(port, store, mode, Listing::Everything, Source::Bucket, token);
        };
        let (lower, upper) = (lower.to_string(), upper.to_string());
        self.bring_up_to_date(port, store, mode, Listing::AsHeld, Source::Ranges { lower, upper }, token)?;
        match self.refractory_fresh(store) {
            true => Ok(()),
            false => self.bring_up_to_date(port, store, mode, Listing::AsHeld, Source::Bucket, token),
        }
    }

    /// Whether a listing of `store` (of every object, when `complete`) completed after `asked`.
    pub(super) fn listed_after(&self, store: &str, asked: Instant, complete: bool) -> bool {
        self.seen().get(store).is_some_and(|s| s.at.is_some_and(|at| at >= asked) && (s.complete || !complete))
    }

    /// Whether this process listed `store` far enough for a read: in full, or first per pair
    /// for a read of only that.
    pub fn listed_for(&self, store: &str, first_per_pair: bool) -> bool {
        self.seen().get(store).is_some_and(|s| s.at.is_some() && (first_per_pair || s.complete))
    }

    /// Lists the store's objects now and brings the local copy in line, whatever the
    /// refractory period and the change log: new and changed objects are fetched (or, for an
    /// objstore-meta store, described) and vanished ones removed. Explicit prefetches always
    /// fetch bodies; a store's `prefetch: meta` setting only governs the automatic ones.
    pub fn prefetch(&self, port: &mut impl Port, store: &str, token: &Token) -> Result<()> {
        self.prefetch_as(port, store, Prefetch::Full, Listing::Full, Instant::now(), token)
    }

    pub(super) fn prefetch_as(
        &self,
        port: &mut impl Port,
        store: &str,
        mode: Prefetch,
        listing: Listing,
        asked: Instant,
        token: &Token,
    ) -> Result<()> {
        let s = self.store(store)?;
        if s.config.policy.format == Format::Rest {
            return Err(Error::InvalidArgument(format!("store {store:?} uses the rest format, which has no listing")));
        }
        let what = format!("prefetching store {store:?}");
        self.may_contact(s, &what)?;
        let _one_listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        // Single flight: a read that waited here while another listing ran takes that one's
        // answer when it completed after the read asked, and went as far as the read needs (an
        // explicit prefetch always lists anew).
        if listing != Listing::Full && self.listed_after(store, asked, listing == Listing::Everything) {
            return Ok(());
        }
        self.bring_up_to_date(port, store, mode, listing, Source::Bucket, token)
    }

    /// One prefetch from `source`, and when it took a checkpoint, the change log since the
    /// checkpoint's position after it: readers learn of the checkpoint taken only with the log's
    /// word (a read in between would be answered by the checkpoint alone, up to an hour old).
    pub(super) fn bring_up_to_date(
        &self,
        port: &mut impl Port,
        store: &str,
        mode: Prefetch,
        listing: Listing,
        source: Source,
        token: &Token,
    ) -> Result<()> {
        if let Some(taken) = self.prefetch_once(port, store, mode, listing, source, None, token)? {
            self.prefetch_once(port, store, mode, Listing::AsHeld, Source::LogOrListing, Some(taken), token)?;
        }
        Ok(())
    }

    /// Brings the local copy in line with what `source` says; the checkpoint it took, if it
    /// did, for the next step to make known (`took`: the one the step before took).
    #[allow(clippy::too_many_arguments)]
    fn prefetch_once(
        &self,
        port: &mut impl Port,
        store: &str,
        mode: Prefetch,
        listing: Listing,
        source: Source,
        took: Option<checkpoints::Taken>,
        token: &Token,
    ) -> Result<Option<checkpoints::Taken>> {
        let s = &self.stores[store];
        let what = format!("prefetching store {store:?}");
        let name = store.to_string();
        let summary = port.exec(move |db| db.store_state_of(&name, Some(&[])))?;
        let began = Instant::now();
        let clock_known = s.bucket.clock_offset_ms().is_some();
        let started_ms = self.bucket_now_ms(s);
        // Whether the last listing was a full one, and when the log can go on from.
        let (full_at, pairs_at) = (summary.listed_at_ms, summary.pairs_listed_at_ms);
        let last_was_full = full_at.is_some() && full_at >= pairs_at;
        let log_from = match listing {
            Listing::Full => None,
            // A first-per-pair listing since the full one missed the other objects' changes.
            Listing::Everything => full_at.filter(|_| last_was_full),
            Listing::AsHeld | Listing::FirstPerPair => full_at.max(pairs_at),
        };
        let pairs_only =
            listing == Listing::FirstPerPair || (listing == Listing::AsHeld && pairs_at.is_some() && !last_was_full);
        // Part of a checkpoint taken already: no log is read, and nothing is learnt of the rest.
        let ranges = matches!(source, Source::Ranges { .. } | Source::Held { .. });
        let from_log = match (&s.config.policy.change_log, summary.changes_since_ms, log_from) {
            (Some(log), Some(since), Some(listed_at))
                if !ranges && u128::from(started_ms.saturating_sub(listed_at)) < log.relist_every.as_millis() =>
            {
                self.read_change_log(port, store, log, since, started_ms, summary, token).and_then(|read| {
                    let Some((learnt, local)) = read else { return Ok(None) };
                    let learnt = Learnt { complete_before: last_was_full, ..learnt };
                    // Held only first per pair: a pair whose first name went has a new one.
                    match last_was_full || s.pair_indexes.is_empty() {
                        true => Ok(Some((learnt, local, HashSet::new()))),
                        false => {
                            self.refill_pairs(store, learnt, token).map(|learnt| Some((learnt, local, HashSet::new())))
                        }
                    }
                })
            }
            _ => Ok(None),
        };
        // No log to read, or one that cannot say (a wave marker over the store's size cap): a
        // checkpoint, where the store keeps them and the read allows, else a listing.
        let mut listed = false;
        let learnt = match (from_log, &source) {
            (_, Source::Held { pair }) => match self.learn_from_held(port, store, pair, token) {
                Ok(Some(taken)) => Ok(taken),
                Ok(None) => return Ok(None),
                Err(e) => Err(e),
            },
            (_, Source::Ranges { lower, upper }) => {
                match self.learn_from_ranges(port, store, lower, upper, token) {
                    Ok(Some(taken)) => Ok(taken),
                    // The checkpoint taken is too old now, or one of its shards unreadable.
                    Ok(None) => {
                        return self.prefetch_once(port, store, mode, Listing::Everything, Source::Bucket, None, token)
                    }
                    Err(e) => Err(e),
                }
            }
            (Ok(None), Source::Bucket) if listing != Listing::Full => {
                match self.learn_from_checkpoint(port, store, pairs_only, started_ms, token) {
                    Ok(Some(taken)) => Ok(taken),
                    Ok(None) => {
                        listed = true;
                        self.list_from_bucket(port, store, pairs_only, started_ms, token)
                    }
                    Err(e) => Err(e),
                }
            }
            (Ok(None), _) => {
                listed = true;
                self.list_from_bucket(port, store, pairs_only, started_ms, token)
            }
            (Ok(Some(learnt)), _) => Ok(learnt),
            (Err(e), _) => Err(e),
        };
        let (mut learnt, local, written) = learnt.inspect_err(|e| self.report_offline(port, store, e))?;
        // Begun before the bucket had told its clock: when that was on the bucket's clock.
        let started_ms = match clock_known {
            true => started_ms,
            false => self.bucket_now_ms(s).saturating_sub(began.elapsed().as_millis() as u64),
        };
        learnt.changes_since_ms = learnt.changes_since_ms.map(|since| since.min(started_ms));
        let immutable = s.config.policy.immutable;
        let vanished: Vec<&String> =
            learnt.vanished.iter().filter(|id| !immutable && !local.held.contains(*id)).collect();
        let changed: Vec<&(String, ObjectInfo)> = learnt
            .described
            .iter()
            .filter(|(id, o)| is_new_or_changed(&local, immutable, id, &o.etag) && !written.contains(id))
            .collect();

        let mut changes: Vec<Change> = Vec::new();
        for id in vanished {
            changes.extend(self.changes_for(store, id, Fetched::Missing)?);
        }
        match (s.config.policy.format, mode) {
            (Format::ObjstoreMeta, _) => changes.extend(changed.iter().map(|(id, o)| self.describe(store, id, o))),
            (_, Prefetch::Meta) => {
                // Changed objects lose their cached copy; the next read fetches them.
                for (id, _) in changed.iter().filter(|(id, _)| local.known.contains_key(id)) {
                    changes.extend(self.changes_for(store, id, Fetched::Missing)?);
                }
            }
            (_, Prefetch::Full) => {
                // Fetched and applied a batch at a time: a cold 100k-object store never holds
                // every body at once.
                self.apply(port, std::mem::take(&mut changes))?;
                for chunk in changed.chunks(FETCH_CHUNK) {
                    token.check(&what)?;
                    self.fetch_chunk(port, store, chunk, token)?;
                }
            }
        }
        token.check(&what)?;
        // A checkpoint's names were listed at its position.
        if learnt.complete {
            let at_ms = learnt.listed_at_ms.unwrap_or_else(|| self.bucket_now_ms(s));
            changes.push(Change::Prefetched { store: store.to_string(), at_ms });
        }
        if let Some(since_ms) = learnt.changes_since_ms {
            changes.push(Change::ChangesRead { store: store.to_string(), since_ms });
        }
        if learnt.first_per_pair && !learnt.complete {
            let at_ms = learnt.listed_at_ms.unwrap_or(started_ms);
            changes.push(Change::PairsListed { store: store.to_string(), at_ms });
        }
        // A checkpoint taken whole is as recent as its heads, whatever first-per-pair listing
        // came before it (else the log after it would take the store for one held per pair).
        if let (true, Some(at_ms)) = (learnt.complete, learnt.listed_at_ms) {
            changes.push(Change::PairsListed { store: store.to_string(), at_ms });
        }
        self.apply(port, changes)?;
        let step = match learnt.checkpoint.take() {
            Some(checkpoints::Step::Took(taken)) => return Ok(Some(taken)),
            step => step,
        };
        let mut seen = self.seen();
        let entry = seen.entry(store.to_string()).or_default();
        // Range shards say nothing of what changed since the last listing or log read.
        if !ranges {
            entry.at = Some(Instant::now());
            entry.complete = learnt.complete || learnt.complete_before;
        }
        if let Some(taken) = took {
            entry.checkpoint = Some(taken);
        }
        entry.note_checkpoint(step, listed, &learnt.named_by_log);
        if learnt.complete {
            entry.listed.clear();
        }
        for id in &learnt.vanished {
            entry.listed.remove(id);
        }
        entry.listed.extend(learnt.described.into_iter().map(|(id, o)| (id, o.etag)));
        Ok(None)
    }

    /// Lists `store` as [`Agent::list_describing`] does, against its whole local state.
    fn list_from_bucket(
        &self,
        port: &mut impl Port,
        store: &str,
        pairs_only: bool,
        started_ms: u64,
        token: &Token,
    ) -> Result<(Learnt, StoreState, HashSet<String>)> {
        let name = store.to_string();
        let local = port.exec(move |db| db.store_state(&name))?;
        self.list_describing(port, store, local, pairs_only, started_ms, token)
    }

    /// Lists `store` (only the first name of each pair when `pairs_only`). For an objstore-meta
    /// store, whose records come from the listing alone, what the listing describes is written
    /// into the cache as its pages arrive, [`MAX_BATCH`] at a time, so that the listing's later
    /// pages and the cache's writes overlap (a cold listing of 100,000 names from Garage 20 ms
    /// away: 5.0 s to a drawn matrix before, 4.2 s now; and 220 MB at most, not 350 MB). Returns
    /// what the listing learnt, the local state it was compared with, and the objects written
    /// already. A listing that fails part-way keeps what it wrote (objects the bucket holds) and
    /// writes no marker: the next one lists again.
    pub(super) fn list_describing(
        &self,
        port: &mut impl Port,
        store: &str,
        local: StoreState,
        pairs_only: bool,
        started_ms: u64,
        token: &Token,
    ) -> Result<(Learnt, StoreState, HashSet<String>)> {
        let s = &self.stores[store];
        let early = s.config.policy.format == Format::ObjstoreMeta;
        let mut written = HashSet::new();
        let mut pending: Vec<Change> = Vec::new();
        let mut listed = |objects: &[ObjectInfo]| -> Result<()> {
            if !early {
                return Ok(());
            }
            for (id, o) in records(s, store, objects.to_vec()) {
                if is_new_or_changed(&local, s.config.policy.immutable, &id, &o.etag) && written.insert(id.clone()) {
                    pending.push(self.describe(store, &id, &o));
                }
            }
            match pending.len() >= MAX_BATCH {
                true => self.apply(port, std::mem::take(&mut pending)),
                false => Ok(()),
            }
        };
        let learnt = match pairs_only {
            true => self.list_first_per_pair(store, &local, started_ms, token, &mut listed)?,
            false => self.list_everything(store, &local, started_ms, token, &mut listed)?,
        };
        // A prefetch cancelled while it listed writes no more than it had.
        token.check("a prefetch")?;
        self.apply(port, pending)?;
        Ok((learnt, local, written))
    }

    /// The change that describes object `id` of an objstore-meta store as a listing has it.
    pub(super) fn describe(&self, store: &str, id: &str, o: &ObjectInfo) -> Change {
        Change::Describe {
            store: store.to_string(),
            id: id.to_string(),
            etag: o.etag.clone(),
            updated: o.last_modified.clone(),
            size: o.size,
            fields: self.describe_fields(store, id, &o.metadata.clone().unwrap_or_default()),
        }
    }

    /// Every object under the store's prefix, in one listing or, where the key layout starts
    /// with a field, one per name of that field, side by side (bounded by `concurrency`): the
    /// wall time of a cold listing follows the largest of them, not the bucket. Each value's
    /// objects go to `listed` as they arrive.
    pub(super) fn list_everything(
        &self,
        store: &str,
        local: &StoreState,
        started_ms: u64,
        token: &Token,
        listed: &mut dyn FnMut(&[ObjectInfo]) -> Result<()>,
    ) -> Result<Learnt> {
        let s = &self.stores[store];
        let objects = self.list_every_object(s, token, listed)?;
        Ok(learnt_in_full(s, store, local, objects, started_ms, false))
    }

    /// Every object under `s`'s prefix but the library's own, as [`Agent::list_everything`]
    /// lists them.
    pub(super) fn list_every_object(
        &self,
        s: &SyncedStore,
        token: &Token,
        listed: &mut dyn FnMut(&[ObjectInfo]) -> Result<()>,
    ) -> Result<Vec<ObjectInfo>> {
        let prefix = &s.config.connection.location.prefix;
        let request =
            ListRequest { prefix: prefix.clone(), version: s.config.connection.list_version, ..Default::default() };
        let fans_out = s
            .config
            .policy
            .key_layout
            .as_ref()
            .is_some_and(|layout| layout.len() > 1 && matches!(layout.first(), Some(LayoutSegment::Field(_))));
        let objects = if let Some(objects) = self.one_page_if_small(s, fans_out, &request, token)? {
            objects
        } else if fans_out {
            let (mut objects, folders) = self.first_field_values(s, &request, token)?;
            let mut failed = Ok(());
            let list = |folder: &String| {
                let request = ListRequest { prefix: folder.to_string(), ..request.clone() };
                self.recorded(s, list_all(&*s.bucket, &request, token))
            };
            parallel_each(&folders, s.config.connection.concurrency, list, |_, listing| {
                if failed.is_ok() {
                    failed = listing.and_then(|l| listed(&l.objects).map(|()| objects.extend(l.objects)));
                }
            });
            failed?;
            objects
        } else {
            self.recorded(s, self.list_around_reserved(s, &request, token))?
        };
        Ok(objects)
    }

    /// Every object of a listing but the library's own folders (the change log's markers, the
    /// checkpoints), which would otherwise fill a page per thousand writes: names sorting
    /// before them (a character below `.` first, so rarely any) are read until they begin, the
    /// rest from just after them.
    pub(super) fn list_around_reserved(
        &self,
        s: &SyncedStore,
        request: &ListRequest,
        token: &Token,
    ) -> Result<Vec<ObjectInfo>> {
        if s.config.policy.change_log.is_none() {
            return Ok(list_all(&*s.bucket, request, token)?.objects);
        }
        let reserved = format!("{}{}", s.config.connection.location.prefix, checkpoint::RESERVED);
        let mut objects = Vec::new();
        let mut before = ListRequest { max_keys: Some(1), ..request.clone() };
        loop {
            let page = s.bucket.list_page(&before, token)?;
            let reached_them = page.objects.iter().any(|o| o.key >= reserved);
            objects.extend(page.objects.into_iter().take_while(|o| o.key < reserved));
            match page.next {
                Some(next) if !reached_them && before.continuation.as_ref() != Some(&next) => {
                    before = ListRequest { max_keys: None, continuation: Some(next), ..before };
                }
                _ => break,
            }
        }
        // The library's folders are named in letters and dashes: `~` sorts after every one of
        // them, and before any name outside them that sorts after them.
        let after_them = format!("{reserved}~");
        let after = ListRequest { start_after: Some(after_them), ..request.clone() };
        objects.extend(list_all(&*s.bucket, &after, token)?.objects);
        Ok(objects)
    }

    /// What the change log says happened since the read at `since_ms` (and the window before
    /// it): one listing, usually one page; `None` when a wave marker was too large to read (then
    /// the log cannot say what that wave wrote).
    /// An object with markers from several writers, or a put marker without its version, is
    /// asked about (a HEAD): writers' clocks may order their markers wrongly.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_change_log(
        &self,
        port: &mut impl Port,
        store: &str,
        log: &ChangeLogConfig,
        since_ms: u64,
        started_ms: u64,
        summary: StoreState,
        token: &Token,
    ) -> Result<Option<(Learnt, StoreState)>> {
        let s = &self.stores[store];
        let window = log.window.as_millis() as u64;
        let log = log.prefix.as_str();
        let request = ListRequest {
            prefix: log.to_string(),
            start_after: Some(changelog::start_after(log, since_ms, window)),
            version: s.config.connection.list_version,
            ..Default::default()
        };
        let listing = list_all(&*s.bucket, &request, token);
        self.note(s, &listing);
        let listed = listing?.objects;
        let mut markers: Vec<changelog::Marker> = listed.iter().filter_map(|o| changelog::parse(log, o)).collect();
        let waves = listed.iter().filter_map(|o| changelog::parse_wave(log, o)).collect();
        let Some(waved) = self.read_waves(s, log, request.start_after.as_deref().unwrap_or(log), waves, token)? else {
            return Ok(None);
        };
        markers.extend(waved);
        // The validators of the objects the markers name, not of the whole store.
        let mut ids: Vec<String> = markers.iter().map(|m| m.id.clone()).collect();
        ids.sort();
        ids.dedup();
        let name = store.to_string();
        let known = port.exec(move |db| db.store_state_of(&name, Some(&ids)))?.known;
        let local = StoreState { known, ..summary };
        // The last marker of each object, and whether other writers left markers for it too.
        let named = markers.iter().filter(|m| object_id(&s.config.policy, store, &Key::String(m.id.clone())).is_ok());
        let latest = changelog::latest_per_object(named);
        let mut unsure = Vec::new();
        // The next read starts a window before this one: markers land within it.
        let named_by_log = latest.keys().map(|id| id.to_string()).collect();
        let mut learnt = Learnt { changes_since_ms: Some(started_ms), named_by_log, ..Learnt::default() };
        for (id, (marker, several_writers)) in latest {
            let held = local.known.get(id).and_then(|k| k.etag.as_ref());
            match &marker.op {
                // Markers carry no metadata headers: a store that keeps them from listings asks.
                _ if several_writers || (s.config.connection.list_metadata && marker.metadata.is_none()) => {
                    unsure.push(id.to_string())
                }
                // Markers already acted on name the version held: they cost nothing.
                changelog::Op::Put { etag: Some(etag), .. } if held == Some(etag) => {}
                changelog::Op::Put { size, etag: Some(etag) } => learnt.described.push((
                    id.to_string(),
                    ObjectInfo {
                        key: s.object_key(id),
                        etag: etag.clone(),
                        last_modified: marker.last_modified.clone(),
                        size: *size,
                        metadata: marker.metadata.clone(),
                    },
                )),
                changelog::Op::Put { etag: None, .. } => unsure.push(id.to_string()),
                changelog::Op::Remove if local.known.contains_key(id) => learnt.vanished.push(id.to_string()),
                changelog::Op::Remove => {}
            }
        }
        let answers = parallel(&unsure, s.config.connection.concurrency, |id| s.bucket.head(&s.object_key(id), token));
        for (id, answer) in unsure.into_iter().zip(answers) {
            self.note(s, &answer);
            match answer? {
                Some((info, metadata)) => learnt.described.push((id, ObjectInfo { metadata: Some(metadata), ..info })),
                None if local.known.contains_key(&id) => learnt.vanished.push(id),
                None => {}
            }
        }
        Ok(Some((learnt, local)))
    }

    /// The writes named by the wave markers `waves` (listed in the log at `log` after `after`):
    /// each marker's body is read once, then kept while the window still lists it. A marker
    /// gone since the listing (pruned) names nothing; one whose body this version cannot read
    /// names nothing now and is read again next time; one over the store's size cap is not
    /// read (`None`): what its wave wrote is left to a listing, never taken as nothing.
    fn read_waves(
        &self,
        s: &SyncedStore,
        log: &str,
        after: &str,
        waves: Vec<changelog::Wave>,
        token: &Token,
    ) -> Result<Option<Vec<changelog::Marker>>> {
        // Kept by bucket and name: two stores may share a log's name in different buckets.
        let kept = |name: &str| format!("{}\n{name}", s.address);
        let (log, after) = (kept(log), kept(after));
        let mut read = self.waves_read.lock().unwrap_or_else(|p| p.into_inner());
        read.retain(|name, _| !name.starts_with(&log) || *name > after);
        let unread: Vec<&changelog::Wave> = waves.iter().filter(|w| !read.contains_key(&kept(&w.key))).collect();
        drop(read);
        let bodies = parallel(&unread, s.config.connection.concurrency, |wave| {
            s.bucket.get(&wave.key, &Default::default(), token)
        });
        let mut read = self.waves_read.lock().unwrap_or_else(|p| p.into_inner());
        let mut too_large = false;
        for (wave, body) in unread.into_iter().zip(bodies) {
            self.note(s, &body);
            let writes = match body? {
                Fetched::Found(object) => match changelog::wave_markers(wave, &object.body) {
                    Some(writes) => writes,
                    None => continue,
                },
                Fetched::TooLarge { .. } => {
                    too_large = true;
                    continue;
                }
                _ => Vec::new(),
            };
            read.insert(kept(&wave.key), writes);
        }
        if too_large {
            return Ok(None);
        }
        Ok(Some(waves.iter().flat_map(|w| read.get(&kept(&w.key)).cloned().unwrap_or_default()).collect()))
    }
}
