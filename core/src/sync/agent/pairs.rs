//! First per pair: a cold view of the newest run per pair of the key layout's first two fields
//! lists only the first name of each pair, not the whole store.

use super::*;

impl Agent {
    /// Whether `scan` of `store` reads only the first name of each pair of the key layout's
    /// first two fields (the newest run per platform/runtime pair, in the results layout): a
    /// unique, forward scan of an index over those fields, with no range.
    pub fn reads_first_per_pair(&self, store: &str, scan: &crate::ScanOptions) -> bool {
        self.stores.get(store).is_some_and(|s| {
            scan.unique
                && !scan.reverse
                && scan.range.is_none()
                && scan.index.as_ref().is_some_and(|index| s.pair_indexes.contains(index))
        })
    }

    /// The first name of each pair of the key layout's first two fields, whichever way costs
    /// fewer requests: the first field's values (a delimiter listing), then each value's first
    /// page side by side. A value whose first page ends inside its first pair has pairs of more
    /// than a page: its later pairs are listed (a delimiter listing from the page's last name)
    /// and each one's first name read (a one-key page), a request per pair. Any other value's
    /// pairs are smaller than a page, so its listing goes on page by page (fewer requests than
    /// one per pair), and the store is then listed in full. Pages go to `listed` as they arrive.
    pub(super) fn list_first_per_pair(
        &self,
        store: &str,
        local: &StoreState,
        started_ms: u64,
        token: &Token,
        listed: &mut dyn FnMut(&[ObjectInfo]) -> Result<()>,
    ) -> Result<Learnt> {
        let s = &self.stores[store];
        let prefix = &s.config.connection.location.prefix;
        let base =
            ListRequest { prefix: prefix.clone(), version: s.config.connection.list_version, ..Default::default() };
        if let Some(objects) = self.one_page_if_small(s, true, &base, token)? {
            return Ok(learnt_in_full(s, store, local, objects, started_ms, true));
        }
        let (mut objects, folders) = self.first_field_values(s, &base, token)?;
        let folders: Vec<&String> = folders.iter().collect();
        let mut longer: Vec<(String, String)> = Vec::new();
        let mut going_on: Vec<(String, String)> = Vec::new();
        let mut failed = Ok(());
        let first_page = |folder: &&String| {
            self.recorded(s, s.bucket.list_page(&ListRequest { prefix: folder.to_string(), ..base.clone() }, token))
        };
        parallel_each(&folders, s.config.connection.concurrency, first_page, |i, page| {
            if failed.is_err() {
                return;
            }
            let page = match page {
                Ok(page) => page,
                Err(e) => {
                    failed = Err(e);
                    return;
                }
            };
            let folder = folders[i];
            if let Some(next) = &page.next {
                let pair_of = |o: &ObjectInfo| pair_prefix(folder, &o.key);
                match (page.objects.first(), page.objects.last()) {
                    (Some(first), Some(last)) if pair_of(first).is_some() && pair_of(first) == pair_of(last) => {
                        longer.push((folder.to_string(), last.key.clone()))
                    }
                    _ => going_on.push((folder.to_string(), next.clone())),
                }
            }
            failed = listed(&page.objects);
            objects.extend(page.objects);
        });
        failed?;
        // In folder order, whichever page arrived first.
        longer.sort();
        going_on.sort();
        let mut failed = Ok(());
        let rest = |(folder, next): &(String, String)| {
            let request = ListRequest { prefix: folder.clone(), continuation: Some(next.clone()), ..base.clone() };
            self.recorded(s, list_all(&*s.bucket, &request, token))
        };
        parallel_each(&going_on, s.config.connection.concurrency, rest, |_, listing| {
            if failed.is_ok() {
                failed = listing.and_then(|l| listed(&l.objects).map(|()| objects.extend(l.objects)));
            }
        });
        failed?;
        let later = parallel(&longer, s.config.connection.concurrency, |(folder, last)| {
            let request = ListRequest {
                prefix: folder.clone(),
                delimiter: Some("/".into()),
                start_after: Some(last.clone()),
                ..base.clone()
            };
            self.recorded(s, list_all(&*s.bucket, &request, token))
        });
        let mut pairs = Vec::new();
        for ((_, last), listing) in longer.iter().zip(later) {
            let listing = listing?;
            // The pair the first page ended in has its first name on that page.
            pairs.extend(listing.common_prefixes.into_iter().filter(|pair| !last.starts_with(pair.as_str())));
            objects.extend(listing.objects);
        }
        let firsts = parallel(&pairs, s.config.connection.concurrency, |pair| self.first_of_pair(store, pair, token));
        for first in firsts {
            objects.extend(first?);
        }
        let described = records(s, store, objects);
        let complete = longer.is_empty();
        let vanished = match complete {
            true => vanished(local, &described),
            false => {
                let enumerated: HashSet<&str> = longer.iter().map(|(folder, _)| folder.as_str()).collect();
                vanished_in_part(prefix, local, &described, &folders, &enumerated)
            }
        };
        let learnt = Learnt {
            vanished,
            described,
            complete,
            changes_since_ms: s.config.policy.change_log.as_ref().map(|_| started_ms),
            first_per_pair: true,
            complete_before: false,
            listed_at_ms: None,
            checkpoint: None,
            named_by_log: Vec::new(),
        };
        Ok(learnt)
    }

    /// A store that fits one listing page costs that page alone: before fanning out (`fans_out`)
    /// by the key layout's first field, the first plain page is read, and when it is the last
    /// one, it is the whole listing. `None` when more pages follow (the fan-out goes on).
    pub(super) fn one_page_if_small(
        &self,
        s: &SyncedStore,
        fans_out: bool,
        request: &ListRequest,
        token: &Token,
    ) -> Result<Option<Vec<ObjectInfo>>> {
        if !fans_out {
            return Ok(None);
        }
        let page = self.recorded(s, s.bucket.list_page(request, token))?;
        Ok(page.next.is_none().then_some(page.objects))
    }

    /// The names directly under the store's prefix and the first field's values (folders, the
    /// change log's left out): one delimiter listing.
    pub(super) fn first_field_values(
        &self,
        s: &SyncedStore,
        request: &ListRequest,
        token: &Token,
    ) -> Result<(Vec<ObjectInfo>, Vec<String>)> {
        let top = ListRequest { delimiter: Some("/".into()), ..request.clone() };
        let top = self.recorded(s, list_all(&*s.bucket, &top, token))?;
        // The change log's and the checkpoints' folders are the library's own.
        let reserved = format!("{}{}", s.config.connection.location.prefix, checkpoint::RESERVED);
        Ok((top.objects, top.common_prefixes.into_iter().filter(|p| !p.starts_with(&reserved)).collect()))
    }

    /// For a store held first per pair: the new first name of each pair whose first name the
    /// change log removed.
    pub(super) fn refill_pairs(&self, store: &str, mut learnt: Learnt, token: &Token) -> Result<Learnt> {
        let s = &self.stores[store];
        let prefix = &s.config.connection.location.prefix;
        let mut pairs: Vec<String> = learnt
            .vanished
            .iter()
            .filter_map(|id| {
                let (folder, _) = id.split_once('/')?;
                pair_prefix(&format!("{prefix}{folder}/"), &format!("{prefix}{id}"))
            })
            .collect();
        pairs.sort();
        pairs.dedup();
        for first in parallel(&pairs, s.config.connection.concurrency, |pair| self.first_of_pair(store, pair, token)) {
            for (id, object) in records(s, store, first?) {
                if !learnt.described.iter().any(|(known, _)| *known == id) {
                    learnt.described.push((id, object));
                }
            }
        }
        Ok(learnt)
    }

    /// The first record of a pair (`{prefix}{a}/{b}/`): a one-key page, and the next ones
    /// while what they hold is not a record (a console's folder marker).
    pub(super) fn first_of_pair(&self, store: &str, pair: &str, token: &Token) -> Result<Vec<ObjectInfo>> {
        let s = &self.stores[store];
        let mut request = ListRequest {
            prefix: pair.to_string(),
            max_keys: Some(1),
            version: s.config.connection.list_version,
            ..Default::default()
        };
        loop {
            let page = self.recorded(s, s.bucket.list_page(&request, token))?;
            let found = !records(s, store, page.objects.clone()).is_empty();
            match page.next {
                Some(next) if !found && request.continuation.as_ref() != Some(&next) => {
                    request.continuation = Some(next)
                }
                _ => return Ok(page.objects),
            }
        }
    }
}

/// The pair a key belongs to under `folder` (`{prefix}{a}/`): `{prefix}{a}/{b}/`, when the key
/// has a name below it.
pub(super) fn pair_prefix(folder: &str, key: &str) -> Option<String> {
    let (pair, rest) = key.strip_prefix(folder)?.split_once('/')?;
    (!rest.is_empty()).then(|| format!("{folder}{pair}/"))
}

/// What a first-per-pair listing says is gone of what is held: objects of a first field's
/// value no longer listed; in values listed in full, objects not listed; in values enumerated
/// by pair, objects of pairs no longer listed and objects before their pair's first name.
pub(super) fn vanished_in_part(
    prefix: &str,
    local: &StoreState,
    listed: &[(String, ObjectInfo)],
    folders: &[&String],
    enumerated: &HashSet<&str>,
) -> Vec<String> {
    let listed_ids: HashSet<&str> = listed.iter().map(|(id, _)| id.as_str()).collect();
    let mut firsts: HashMap<String, &str> = HashMap::new();
    for (_, object) in listed {
        let folder = folders.iter().find(|f| enumerated.contains(f.as_str()) && object.key.starts_with(f.as_str()));
        if let Some(pair) = folder.and_then(|f| pair_prefix(f, &object.key)) {
            let first = firsts.entry(pair).or_insert(object.key.as_str());
            *first = (*first).min(object.key.as_str());
        }
    }
    local
        .known
        .keys()
        .filter(|id| {
            if listed_ids.contains(id.as_str()) {
                return false;
            }
            let key = format!("{prefix}{id}");
            let Some(folder) = folders.iter().find(|f| key.starts_with(f.as_str())) else {
                return true; // a root name (listed in full) or a first field's value gone
            };
            if !enumerated.contains(folder.as_str()) {
                return true; // listed in full
            }
            match pair_prefix(folder, &key).and_then(|pair| firsts.get(&pair).copied()) {
                Some(first) => key.as_str() < first,
                None => true,
            }
        })
        .cloned()
        .collect()
}
