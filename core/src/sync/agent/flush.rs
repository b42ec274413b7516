//! The outbox flush: writes in order, in waves (each object's first write, then its second…),
//! with their change-log markers; refused writes are recorded (with their local data kept),
//! unreachable buckets leave the writes waiting.

use super::*;

/// How often a writer prunes a directory bucket's change log.
const LOG_PRUNE_EVERY: Duration = Duration::from_secs(60);

impl Agent {
    /// Sends the outbox in order until it is empty. A bucket that cannot be reached, or that
    /// refuses every request, is left for this flush: its writes wait, other buckets' go on.
    /// Each batch of writes is acknowledged in one transaction.
    pub fn flush(&self, port: &mut impl Port, token: &Token) -> Result<FlushReport> {
        let _one_at_a_time = self.flushing.lock().unwrap_or_else(|p| p.into_inner());
        let mut report = FlushReport::default();
        // Objects whose write was refused in this flush: later writes to them were made on
        // top of a version the bucket does not hold, so they are refused too.
        let mut refused_objects: HashSet<(String, String)> = HashSet::new();
        // Versions this flush wrote: a later write to the same object in the same batch is
        // conditional on them, not on what the batch read before.
        let mut written: HashMap<(String, String), Option<String>> = HashMap::new();
        // Objects whose write the server failed on in this flush: their later writes wait too.
        let mut held: HashSet<(String, String)> = HashSet::new();
        // Buckets whose last write in this flush was held: a second server error stops them.
        let mut held_last: HashSet<String> = HashSet::new();
        // Buckets this flush stopped sending to.
        let mut stopped: HashSet<String> = HashSet::new();
        // The outbox is read in pages after the last write met, so that writes left waiting
        // at its head (held, or for a stopped bucket) never hide the ones behind them.
        let mut after = 0;
        loop {
            let batch = port.exec(move |db| db.outbox_batch(after, FLUSH_BATCH))?;
            if batch.is_empty() {
                break;
            }
            // The first write of every object goes out together, then every second one, and
            // so on: an object's writes stay in order, different objects' go side by side.
            for wave in waves(batch) {
                let skipped = Skipped { held: &held, refused: &refused_objects, stopped: &stopped };
                let mut present = self.send_ahead(port, &wave, &written, &skipped, token);
                let mut changes = Vec::new();
                for mut item in wave {
                    after = after.max(item.sequence);
                    if let Err(e) = token.check("the flush") {
                        self.apply_wave(port, changes)?;
                        return Err(e);
                    }
                    let object = (item.entry.store.clone(), item.entry.id.clone());
                    let bucket = self.stores.get(&item.entry.store).map(|s| s.address.clone());
                    // An answer sent ahead is taken whatever stopped since: its request was
                    // made, and a write that landed but stayed queued would be sent twice, or
                    // withdrawn though the bucket holds it.
                    let answered = present.remove(&item.sequence);
                    let waits = held.contains(&object) || bucket.as_ref().is_some_and(|b| stopped.contains(b));
                    if waits && !matches!(answered, Some(Ok(_))) {
                        continue;
                    }
                    if let Some(etag) = written.get(&object) {
                        item.known_etag = etag.clone();
                    }
                    let last_held = bucket.as_ref().is_some_and(|b| held_last.contains(b));
                    let mut one_write_failed = false;
                    let outcome = if item.stacked || refused_objects.contains(&object) {
                        Err(Error::Conflict {
                            store: item.entry.store.clone(),
                            key: item.entry.id.clone(),
                            detail: "an earlier write to this object was refused, and this one was made on top of it"
                                .into(),
                        })
                    } else {
                        let sent = match answered {
                            Some(sent) => sent,
                            None => self
                                .may_send(&item)
                                .and_then(|()| self.learn_conditions(port, &item, token))
                                .and_then(|()| self.send(&item, token)),
                        };
                        // A server error on one write, right after a write that went well, may
                        // be about that write alone: it is held aside rather than taken for a
                        // failing server. Two in a row stop the bucket.
                        one_write_failed = !last_held && matches!(&sent, Err(Error::Remote { status: 500 | 501, .. }));
                        // An answer taken after its bucket stopped leaves the breaker as the stop set it.
                        if let (false, false, Ok(s)) = (one_write_failed, waits, self.store(&item.entry.store)) {
                            self.note(s, &sent);
                        }
                        sent
                    };
                    if let Some(bucket) = &bucket {
                        match one_write_failed {
                            true => held_last.insert(bucket.clone()),
                            false => held_last.remove(bucket),
                        };
                    }
                    match outcome {
                        Err(e) if one_write_failed => {
                            held.insert(object);
                            let (store, message) = (item.entry.store.clone(), e.to_string());
                            port.exec(move |db| {
                                db.emit_sync_event(EventKind::Error, &store, message);
                                Ok(())
                            })?;
                            report.held.push((item.sequence, e));
                        }
                        Ok(etag) => {
                            written.insert(object, etag.clone());
                            changes.push(Change::Sent {
                                sequence: item.sequence,
                                store: item.entry.store.clone(),
                                id: item.entry.id.clone(),
                                etag: etag.clone(),
                            });
                            changes.extend(self.sent_meta(&item, etag));
                            report.sent += 1;
                        }
                        Err(e) if e.is_offline() => {
                            self.report_offline(port, &item.entry.store, &e);
                            stopped.extend(bucket);
                            report.offline.get_or_insert(e);
                        }
                        Err(e)
                            if e.refuses_the_write()
                                || matches!(e, Error::Conflict { .. } | Error::InvalidArgument(_)) =>
                        {
                            refused_objects.insert(object);
                            let error = as_conflict(&item, e);
                            let conflict = matches!(error, Error::Conflict { .. });
                            changes.push(Change::Refused {
                                sequence: item.sequence,
                                store: item.entry.store.clone(),
                                id: item.entry.id.clone(),
                                code: format!("{:?}", error.code()),
                                message: error.to_string(),
                                conflict,
                            });
                            report.rejected.push((item.sequence, error));
                        }
                        Err(e) => {
                            let (store, message) = (item.entry.store.clone(), e.to_string());
                            port.exec(move |db| {
                                db.emit_sync_event(EventKind::Error, &store, message);
                                Ok(())
                            })?;
                            stopped.extend(bucket);
                            report.blocked.get_or_insert(e);
                        }
                    }
                }
                self.apply_wave(port, changes)?;
            }
        }
        self.report_marker_failures(port)?;
        report.pending = port.exec(|db| db.outbox_len())?;
        report.refused = port.exec(|db| db.refused_len())?;
        Ok(report)
    }

    /// Applies a wave's acknowledgements, with what it learnt of bodies that landed without
    /// their markers.
    pub(super) fn apply_wave(&self, port: &mut impl Port, mut changes: Vec<Change>) -> Result<()> {
        changes.append(&mut self.landed.lock().unwrap_or_else(|p| p.into_inner()));
        self.apply(port, changes)
    }

    /// Fails at once when `item`'s bucket may not be contacted now (a store that no longer
    /// syncs fails when it is sent, with the reason).
    pub(super) fn may_send(&self, item: &OutboxItem) -> Result<()> {
        match self.store(&item.entry.store) {
            Ok(s) => self.may_contact(s, "the outbox"),
            Err(_) => Ok(()),
        }
    }

    /// Sends the first write of each object in `batch` at once, several at a time, so that one
    /// slow PUT (an fsync, a round trip) does not wait for another; answers by sequence number,
    /// for the in-order pass to acknowledge. Writes to one object stay in order (only the first
    /// goes ahead, on the version this flush wrote before), and a write whose object was
    /// refused or held waits for that pass, which takes every answer given here, whatever
    /// stopped in between.
    pub(super) fn send_ahead(
        &self,
        port: &mut impl Port,
        batch: &[OutboxItem],
        written: &HashMap<(String, String), Option<String>>,
        skipped: &Skipped<'_>,
        token: &Token,
    ) -> HashMap<u64, Result<Option<String>>> {
        let mut seen = HashSet::new();
        let ahead: Vec<OutboxItem> = batch
            .iter()
            .filter(|item| {
                let object = (item.entry.store.clone(), item.entry.id.clone());
                let first = seen.insert(object.clone());
                first && !item.stacked && !skipped.object(&object) && !self.is_stopped(item, skipped.stopped)
            })
            .map(|item| {
                // Made on the version this flush wrote before, if it did.
                let mut item = item.clone();
                if let Some(etag) = written.get(&(item.entry.store.clone(), item.entry.id.clone())) {
                    item.known_etag = etag.clone();
                }
                item
            })
            .collect();
        let Some(first) = ahead.first() else { return HashMap::new() };
        let concurrency = self.stores.get(&first.entry.store).map_or(1, |s| s.config.connection.concurrency);
        if ahead.len() < 2 || ahead.iter().any(|item| self.may_send(item).is_err()) {
            return HashMap::new();
        }
        // A bucket's conditional writes are learnt before its writes go out together.
        for item in &ahead {
            if self.learn_conditions(port, item, token).is_err() {
                return HashMap::new();
            }
        }
        // The bodies go out together, then their markers: one wave marker per store for all
        // that landed.
        let absent = self.absent_by_listing(&ahead, token);
        let bodies = parallel(&ahead, concurrency, |item| self.send_body(item, absent.contains(&item.sequence), token));
        let mut answers: HashMap<u64, Result<Option<String>>> = HashMap::new();
        let mut landed = Vec::new();
        for (item, body) in ahead.iter().zip(bodies) {
            match body {
                Ok(etag) => landed.push((item, etag)),
                Err(e) => drop(answers.insert(item.sequence, Err(e))),
            }
        }
        let sequences: Vec<u64> = landed.iter().map(|(item, _)| item.sequence).collect();
        answers.extend(sequences.into_iter().zip(self.mark(landed, token)));
        answers
    }

    /// Whether `item`'s bucket is one the flush stopped sending to.
    pub(super) fn is_stopped(&self, item: &OutboxItem, stopped: &HashSet<String>) -> bool {
        self.stores.get(&item.entry.store).is_some_and(|s| stopped.contains(&s.address))
    }

    /// Sends one write and, for a store that keeps a change log, its marker after it.
    pub(super) fn send(&self, item: &OutboxItem, token: &Token) -> Result<Option<String>> {
        let etag = self.send_body(item, false, token)?;
        self.mark(vec![(item, etag)], token).pop().expect("an answer per write")
    }

    /// Sends a write's body, unless it is in place from an earlier send (only its marker was
    /// owed); answers the version the bucket holds. `known_absent`: a listing just showed its
    /// object absent (`absent_by_listing`).
    pub(super) fn send_body(&self, item: &OutboxItem, known_absent: bool, token: &Token) -> Result<Option<String>> {
        match &item.entry.landed {
            Some(etag) => Ok(Some(etag.clone()).filter(|e| !e.is_empty())),
            None => self.send_object(item, known_absent, token),
        }
    }

    /// Follows writes whose bodies reached the bucket (`sent`, with their versions) with their
    /// change-log markers, for the stores that keep a log: a marker per write, or one wave
    /// marker for several writes to one store. Answers each write in order. A marker that
    /// cannot be written now fails its writes, which are sent again later (their bodies in place
    /// then count as sent, and the marker follows); one refused for good leaves them standing,
    /// and an error event says so.
    pub(super) fn mark(&self, sent: Vec<(&OutboxItem, Option<String>)>, token: &Token) -> Vec<Result<Option<String>>> {
        let mut answers: Vec<Option<Result<Option<String>>>> = Vec::with_capacity(sent.len());
        let mut by_store: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, (item, etag)) in sent.iter().enumerate() {
            let logged = self.stores.get(&item.entry.store).is_some_and(|s| s.config.policy.change_log.is_some());
            answers.push((!logged).then(|| Ok(etag.clone())));
            if logged {
                by_store.entry(item.entry.store.as_str()).or_default().push(i);
            }
        }
        for (store, writes) in by_store {
            let (s, log) = (&self.stores[store], self.stores[store].config.policy.change_log.as_ref().expect("logged"));
            let ops: Vec<changelog::Op> = writes.iter().map(|&i| marker_op(sent[i].0, &sent[i].1)).collect();
            let now = self.bucket_now_ms(s);
            let (name, body) = match writes.as_slice() {
                [one] => (changelog::marker_name(&log.prefix, now, &sent[*one].0.entry.id, &ops[0]), Vec::new()),
                _ => {
                    let listed = writes.iter().zip(&ops).map(|(&i, op)| {
                        let metadata = sent[i].0.entry.value.as_ref().map(|v| s.config.policy.metadata_of(v.as_str()));
                        changelog::WaveWrite::new(&sent[i].0.entry.id, op, metadata)
                    });
                    changelog::wave(&log.prefix, now, listed.collect())
                }
            };
            let outcome = s.bucket.put(&name, &body, &PutOptions::default(), token);
            for &i in &writes {
                let (item, etag) = &sent[i];
                answers[i] = Some(self.marked(item, etag.clone(), &outcome));
            }
            match &outcome {
                Ok(_) => self.prune_log(store, s, log),
                Err(e) if !marker_waits(e) => {
                    // Refused for good: the writes stand, and readers learn of them at their
                    // next full listing. An error event says so.
                    let ids: Vec<&str> = writes.iter().map(|&i| sent[i].0.entry.id.as_str()).collect();
                    let message = format!(
                        "the write of {} reached the bucket but its change-log marker was refused ({e}): readers see it at their next full listing",
                        named(&ids)
                    );
                    self.lock_marker_failures().push((store.to_string(), message));
                }
                Err(_) => {}
            }
        }
        answers.into_iter().map(|a| a.expect("every write answered")).collect()
    }

    /// A write's answer once its marker was sent (`outcome`): a marker that could not be sent
    /// now (the bucket away, or the flush cancelled) keeps the write waiting for it alone.
    fn marked(
        &self,
        item: &OutboxItem,
        etag: Option<String>,
        outcome: &Result<Option<String>>,
    ) -> Result<Option<String>> {
        match outcome {
            Err(e) if marker_waits(e) => {
                if item.entry.landed.is_none() {
                    let landed = Change::Landed {
                        sequence: item.sequence,
                        store: item.entry.store.clone(),
                        id: item.entry.id.clone(),
                        etag,
                    };
                    self.landed.lock().unwrap_or_else(|p| p.into_inner()).push(landed);
                }
                Err(again(e, ""))
            }
            Ok(_) | Err(_) => Ok(etag),
        }
    }

    /// Removes the markers no reader reads any more, at most once a minute per store, where
    /// the bucket has nothing of its own to expire them. A failure only means a larger log.
    pub(super) fn prune_log(&self, store: &str, s: &SyncedStore, log: &ChangeLogConfig) {
        let mut pruned = self.log_pruned.lock().unwrap_or_else(|p| p.into_inner());
        if pruned.get(store).is_some_and(|at| at.elapsed() < LOG_PRUNE_EVERY) {
            return;
        }
        pruned.insert(store.to_string(), Instant::now());
        drop(pruned);
        let window = log.window.as_millis() as u64;
        let expiry = changelog::expiry_ms(self.bucket_now_ms(s), log.relist_every.as_millis() as u64, window);
        let _ = s.bucket.expire_before(&log.prefix, &format!("{expiry:013}"));
    }

    pub(super) fn lock_marker_failures(&self) -> std::sync::MutexGuard<'_, Vec<(String, String)>> {
        self.marker_failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Says what markers were refused, as error events.
    pub(super) fn report_marker_failures(&self, port: &mut impl Port) -> Result<()> {
        let failures = std::mem::take(&mut *self.lock_marker_failures());
        if failures.is_empty() {
            return Ok(());
        }
        port.exec(move |db| {
            for (store, message) in failures {
                db.emit_sync_event(EventKind::Error, &store, message);
            }
            Ok(())
        })
    }

    pub(super) fn send_object(&self, item: &OutboxItem, known_absent: bool, token: &Token) -> Result<Option<String>> {
        let entry = &item.entry;
        let s = self.store(&entry.store).map_err(|_| {
            Error::InvalidArgument(format!(
                "store {:?} no longer syncs: its write of {:?} cannot be sent",
                entry.store, entry.id
            ))
        })?;
        let name = s.object_key(&entry.id);
        let Some(value) = entry.value.as_ref().filter(|_| entry.op != WriteOp::Delete) else {
            if entry.op == WriteOp::Delete && !delete_is_safe(s, &name, item, token)? {
                return Ok(None); // gone already
            }
            return s.bucket.delete(&name, token).map(|()| None);
        };
        // The record's stored text is the body: no copy of a large record is made to send it.
        let body = value.as_str().as_bytes();
        // Only an overwrite the application chose replaces what the bucket holds unseen: a put
        // of an object this client never read must find no object there.
        let mut mode = match (entry.op, &item.known_etag) {
            (WriteOp::Overwrite, _) => PutMode::Overwrite,
            (WriteOp::Put, Some(etag)) => PutMode::Update(etag.clone()),
            _ => PutMode::Create,
        };
        if mode != PutMode::Overwrite && self.accounting.conditional_writes(&s.address) == Some(false) {
            let own = match known_absent && mode == PutMode::Create {
                true => None, // a listing just showed no object there
                false => check_by_reading(s, &name, item.known_etag.as_deref(), &mode, body, token)?,
            };
            if let Some(own) = own {
                return Ok(Some(own));
            }
            // Checked: a header the server ignores (or refuses outright) adds nothing.
            mode = PutMode::Overwrite;
        }
        let options = PutOptions {
            mode,
            metadata: s.config.policy.metadata_of(value.as_str()),
            new_record: entry.op == WriteOp::Create,
        };
        match s.bucket.put(&name, body, &options, token) {
            // A write sent before a crash, whose success was never recorded, meets its own copy.
            Err(Error::Remote { status: 412, .. }) if holds_body(s, &name, body, token) => Ok(Some(etag_of(body))),
            other => other,
        }
    }

    /// The meta siblings' view of a write that reached the bucket.
    pub(super) fn sent_meta(&self, item: &OutboxItem, etag: Option<String>) -> Vec<Change> {
        let Some(s) = self.stores.get(&item.entry.store) else {
            return Vec::new();
        };
        let id = &item.entry.id;
        s.meta_siblings
            .iter()
            .map(|meta| match &item.entry.value {
                Some(value) if item.entry.op != WriteOp::Delete => Change::Describe {
                    store: meta.clone(),
                    id: id.clone(),
                    etag: etag.clone().unwrap_or_default(),
                    updated: time::iso(SystemTime::now()),
                    size: value.as_str().len() as u64,
                    fields: self.describe_fields(meta, id, &s.config.policy.metadata_of(value.as_str())),
                },
                _ => Change::Drop { store: meta.clone(), id: id.clone() },
            })
            .collect()
    }
}

/// Whether a marker that failed so is sent again later (the bucket away, or the flush
/// cancelled), rather than refused for good.
fn marker_waits(e: &Error) -> bool {
    e.is_offline() || matches!(e, Error::Cancelled(_) | Error::Remote { status: 408 | 429 | 500.., .. })
}

/// `"a"`, `"a" and "b"`, or `"a", "b" and 3 more`: the writes an error event names.
fn named(ids: &[&str]) -> String {
    match ids {
        [one] => format!("{one:?}"),
        [a, b] => format!("{a:?} and {b:?}"),
        [a, b, rest @ ..] => format!("{a:?}, {b:?} and {} more", rest.len()),
        [] => String::new(),
    }
}

/// What the change log says of `item`, sent at version `etag`.
fn marker_op(item: &OutboxItem, etag: &Option<String>) -> changelog::Op {
    match (&item.entry.value, item.entry.op) {
        (Some(value), op) if op != WriteOp::Delete => {
            let size = value.as_str().len() as u64;
            changelog::Op::Put { size, etag: etag.clone() }
        }
        _ => changelog::Op::Remove,
    }
}

/// Outbox writes read and acknowledged per transaction.
pub(super) const FLUSH_BATCH: usize = 100;

/// What a flush leaves out of the writes it sends ahead: objects held or refused in this
/// flush, and buckets it stopped sending to.
pub(super) struct Skipped<'a> {
    held: &'a HashSet<(String, String)>,
    refused: &'a HashSet<(String, String)>,
    stopped: &'a HashSet<String>,
}

impl Skipped<'_> {
    fn object(&self, object: &(String, String)) -> bool {
        self.held.contains(object) || self.refused.contains(object)
    }
}

/// A 412 is a conflict naming the object.
pub(super) fn as_conflict(item: &OutboxItem, error: Error) -> Error {
    match error {
        Error::Remote { status: 412, what, detail } => Error::Conflict {
            store: item.entry.store.clone(),
            key: item.entry.id.clone(),
            detail: match detail.as_str() {
                "" => format!("the bucket holds another version ({what} answered 412 Precondition Failed)"),
                detail => format!("{detail} ({what} answered 412 Precondition Failed)"),
            },
        },
        other => other,
    }
}

/// A batch of outbox writes as waves: the first write of each object, then each one's second,
/// and so on, each wave in outbox order.
pub(super) fn waves(batch: Vec<OutboxItem>) -> Vec<Vec<OutboxItem>> {
    let mut count: HashMap<(String, String), usize> = HashMap::new();
    let mut waves: Vec<Vec<OutboxItem>> = Vec::new();
    for item in batch {
        let n = count.entry((item.entry.store.clone(), item.entry.id.clone())).or_default();
        if waves.len() <= *n {
            waves.push(Vec::new());
        }
        waves[*n].push(item);
        *n += 1;
    }
    waves
}
