//! Reads: the objects a read needs, by conditional GET (misses, or everything not known to be
//! current when a fresh read is asked for), and what each answer changes in the local copy. A
//! cached copy of an immutable store, or one whose etag a listing within the refractory period
//! confirmed, costs no request.

use super::*;

impl Agent {
    /// Before a read of `keys`: fetches what the read needs. `Cached` fetches only objects not
    /// held locally; `Fresh` also validates held copies not known to be current (a 304 costs no
    /// body). Nothing is applied when any request fails.
    pub fn fetch(
        &self,
        port: &mut impl Port,
        store: &str,
        keys: &[Key],
        freshness: Freshness,
        token: &Token,
    ) -> Result<()> {
        let s = self.store(store)?;
        if s.config.policy.format == Format::ObjstoreMeta {
            // Descriptions come from listings, never from GETs of the objects.
            return Ok(());
        }
        keys.iter().try_for_each(|k| object_id(&s.config.policy, store, k).map(drop))?;
        let (name, wanted) = (store.to_string(), keys.to_vec());
        let locals = port.exec(move |db| db.local_copies(&name, &wanted))?;
        let asks = self.asks(store, &locals, freshness);
        // An immutable store's object that could not be used stays so: its name is never reused.
        let mut unusable: Vec<String> = match s.config.policy.immutable {
            true => locals.iter().filter(|l| !l.present).filter_map(|l| l.state.as_ref()?.unusable.clone()).collect(),
            false => Vec::new(),
        };
        if asks.is_empty() {
            return Self::unusable_error(store, keys, unusable);
        }
        let what = format!("reading store {store:?}");
        self.may_contact(s, &what)?;
        token.check(&what)?;
        let names: Vec<(String, Validators)> = asks.iter().map(|(id, v, _)| (s.object_key(id), v.clone())).collect();
        let answers = parallel(&names, s.config.connection.concurrency, |(name, validators)| {
            token.check(&what)?;
            s.bucket.get(name, validators, token)
        });
        let mut changes = Vec::new();
        for ((id, _, never_synced), answer) in asks.into_iter().zip(answers) {
            self.note(s, &answer);
            match answer {
                // A record written before the store was synced is not the bucket's to remove.
                Ok(Fetched::Missing) if never_synced => {}
                // Still the version that could not be used.
                Ok(Fetched::NotModified) => unusable.extend(marked_unusable(&locals, &id)),
                Ok(answer) => changes.extend(self.changes_for(store, &id, answer)?),
                Err(e) => {
                    self.report_offline(port, store, &e);
                    return Err(e);
                }
            }
        }
        token.check(&what)?;
        unusable.extend(changes.iter().filter_map(|c| match c {
            Change::Unusable { reason, .. } => Some(reason.clone()),
            _ => None,
        }));
        self.apply(port, changes)?;
        Self::unusable_error(store, keys, unusable)
    }

    /// The others are served; a read of one key that cannot be used is that key's error.
    pub(super) fn unusable_error(store: &str, keys: &[Key], mut unusable: Vec<String>) -> Result<()> {
        match unusable.pop() {
            Some(reason) if keys.len() == 1 => {
                Err(Error::RemoteData { what: format!("reading store {store:?}"), reason })
            }
            _ => Ok(()),
        }
    }

    /// The objects to ask the bucket about, with the validators to send and whether the local
    /// copy was never synced.
    pub(super) fn asks(
        &self,
        store: &str,
        locals: &[LocalCopy],
        freshness: Freshness,
    ) -> Vec<(String, Validators, bool)> {
        let s = &self.stores[store];
        let listed_fresh = self.refractory_fresh(store);
        let seen = self.seen();
        let listed = seen.get(store).map(|s| &s.listed);
        let mut asked = HashSet::new();
        let mut asks = Vec::new();
        for local in locals {
            if local.held || !asked.insert(local.id.clone()) {
                continue;
            }
            let etag = local.state.as_ref().and_then(|st| st.etag.as_ref());
            let current = local.present
                && (s.config.policy.immutable
                    || freshness == Freshness::Cached
                    || (listed_fresh && etag.is_some() && listed.and_then(|l| l.get(&local.id)) == etag));
            let kept_unusable = !local.present
                && s.config.policy.immutable
                && local.state.as_ref().is_some_and(|st| st.unusable.is_some());
            if current || kept_unusable {
                continue;
            }
            let validators = match (&local.state, local.present) {
                (Some(st), true) => Validators { etag: st.etag.clone(), last_modified: st.modified.clone() },
                (Some(st), false) if st.unusable.is_some() => Validators { etag: st.etag.clone(), last_modified: None },
                _ => Validators::default(),
            };
            asks.push((local.id.clone(), validators, local.present && local.state.is_none()));
        }
        asks
    }

    /// What an answer for object `id` changes, in the store and its meta siblings.
    pub(super) fn changes_for(&self, store: &str, id: &str, answer: Fetched) -> Result<Vec<Change>> {
        let s = &self.stores[store];
        let mut changes = Vec::new();
        match answer {
            Fetched::NotModified => {}
            Fetched::Missing => {
                changes.push(Change::Drop { store: store.to_string(), id: id.to_string() });
                for meta in &s.meta_siblings {
                    changes.push(Change::Drop { store: meta.clone(), id: id.to_string() });
                }
            }
            Fetched::TooLarge { etag, limit } => {
                let reason = format!("the body is larger than the {limit}-byte limit (Options.maxObjectBytes)");
                changes.push(self.unusable(store, id, etag, reason));
            }
            Fetched::Found(object) => {
                let value = match self.decode(store, id, &object) {
                    Ok(value) => value,
                    Err(Error::RemoteData { reason, .. }) => {
                        changes.push(self.unusable(store, id, object.etag, reason));
                        return Ok(changes);
                    }
                    Err(other) => return Err(other),
                };
                let updated = object.last_modified.as_deref().map(time::http_date_to_iso).unwrap_or_default();
                let etag = object.etag.clone().unwrap_or_default();
                for meta in &s.meta_siblings {
                    let fields = self.describe_fields(meta, id, &object.metadata);
                    let size = object.body.len() as u64;
                    changes.push(Change::Describe {
                        store: meta.clone(),
                        id: id.to_string(),
                        etag: etag.clone(),
                        updated: updated.clone(),
                        size,
                        fields,
                    });
                }
                let state = ObjectState { etag: object.etag, modified: object.last_modified, unusable: None };
                changes.insert(0, Change::Store { store: store.to_string(), id: id.to_string(), value, state });
            }
        }
        Ok(changes)
    }

    /// An object that cannot be used at version `etag`: its description for the error event, the
    /// per-key error and the marker that keeps it from being fetched again until it changes.
    pub(super) fn unusable(&self, store: &str, id: &str, etag: Option<String>, reason: String) -> Change {
        let version = etag.as_deref().map(|e| format!(" at version {e}")).unwrap_or_default();
        let reason = format!(
            "object {:?} of store {store:?}{version} cannot be used: {reason}; it is left out until it changes",
            self.stores[store].object_key(id)
        );
        Change::Unusable { store: store.to_string(), id: id.to_string(), etag, reason }
    }

    /// The metadata fields of a description: the key layout's, then the object's own.
    pub(super) fn describe_fields(&self, meta: &str, id: &str, metadata: &Metadata) -> Map<String, Value> {
        let mut fields = Map::new();
        if let Some(m) = self.stores.get(meta) {
            for (name, value) in m.config.policy.layout_fields(id) {
                fields.insert(name, Value::String(value));
            }
        }
        for (name, value) in metadata {
            fields.insert(name.clone(), Value::String(value.clone()));
        }
        fields
    }

    /// A fetched body as a record, checked: JSON, and carrying its own name at the key path.
    pub(super) fn decode(&self, store: &str, id: &str, object: &Object) -> Result<Value> {
        let s = &self.stores[store];
        let what = || format!("object {:?} of store {store:?}", s.object_key(id));
        let value: Value = serde_json::from_slice(&object.body)
            .map_err(|e| Error::RemoteData { what: what(), reason: format!("the body is not JSON ({e})") })?;
        if let Some(path) = &s.key_path {
            match path.extract(&value) {
                Ok(Some(Key::String(k))) if k == id => {}
                _ => {
                    return Err(Error::RemoteData {
                        what: what(),
                        reason: format!("the record's {path} field should be {id:?}, the object's name"),
                    })
                }
            }
        }
        Ok(value)
    }

    /// Fetches and applies one chunk of a full prefetch. One unusable object must not keep
    /// every read of the store failing: it is left out and reported.
    pub(super) fn fetch_chunk(
        &self,
        port: &mut impl Port,
        store: &str,
        chunk: &[&(String, ObjectInfo)],
        token: &Token,
    ) -> Result<()> {
        let s = &self.stores[store];
        let names: Vec<String> = chunk.iter().map(|(id, _)| s.object_key(id)).collect();
        let answers = parallel(&names, s.config.connection.concurrency, |name| {
            token.check("a prefetch")?;
            s.bucket.get(name, &Validators::default(), token)
        });
        let mut changes = Vec::new();
        for ((id, _), answer) in chunk.iter().zip(answers) {
            self.note(s, &answer);
            let answer = answer.inspect_err(|e| self.report_offline(port, store, e))?;
            changes.extend(self.changes_for(store, id, answer)?);
        }
        self.apply(port, changes)
    }
}

/// Why the local copy of `id` says the bucket's version cannot be used, if it does.
pub(super) fn marked_unusable(locals: &[LocalCopy], id: &str) -> Option<String> {
    locals.iter().find(|l| l.id == id).and_then(|l| l.state.as_ref()).and_then(|s| s.unusable.clone())
}
