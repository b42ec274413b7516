//! The read policy of a synced store, in one place: what the agent must do before a read can
//! answer, and what it revalidates after a read served the cache.
//!
//! A read serves the local copy. A record not held at all is fetched first; a store that
//! prefetches and was never listed in this process is listed first (only the first name of
//! each pair, when that is all the read takes); anything else is revalidated in the background
//! (stale-while-revalidate). A fresh read asks the bucket before answering. With a cached copy,
//! a bucket that is down never fails a plain read. A keyed read of an objstore-meta store
//! answers from what is held, once the checkpoint's tail over its names is read (see
//! `Agent::learn_from_held`).

use std::time::Instant;

use super::agent::{Agent, Freshness, Port};
use crate::database::Database;
use crate::error::Result;
use crate::key::Key;
use crate::replica::policy::Format;
use crate::scan::ScanOptions;
use crate::token::Token;

/// What a read reads, as far as the read policy is concerned.
#[derive(Debug, Clone, Default)]
pub struct ReadScope {
    /// The stores the read runs over (the first synced one decides).
    pub stores: Vec<String>,
    /// The records a keyed read wants (`get`, `values_of`).
    pub keys: Option<Vec<Key>>,
    /// The scan a scanning read makes, whose shape may spare a full listing.
    pub scan: Option<ScanOptions>,
    pub freshness: Freshness,
}

impl ReadScope {
    /// Any other read of `store` (a query, a cursor, SQL): whatever it reads, the store is
    /// listed before it when it prefetches.
    pub fn store(store: &str, freshness: Freshness) -> ReadScope {
        ReadScope { stores: vec![store.to_string()], keys: None, scan: None, freshness }
    }

    /// A read of `keys` of `store`.
    pub fn keys(store: &str, keys: Vec<Key>, freshness: Freshness) -> ReadScope {
        ReadScope { stores: vec![store.to_string()], keys: Some(keys), scan: None, freshness }
    }

    /// A scan of `store`.
    pub fn scan(store: &str, scan: ScanOptions, freshness: Freshness) -> ReadScope {
        ReadScope { stores: vec![store.to_string()], keys: None, scan: Some(scan), freshness }
    }

    fn synced_store<'a>(&'a self, agent: &Agent) -> Option<&'a String> {
        self.stores.iter().find(|s| agent.is_synced(s))
    }
}

/// What the agent must do before a read of a synced store can answer.
#[derive(Debug)]
pub enum Need {
    Fetch {
        store: String,
        keys: Vec<Key>,
        freshness: Freshness,
    },
    /// `extent`: what of the store the read needs the local copy to hold.
    /// `asked`: when the read found it needed a listing (one that completes after that serves
    /// it too).
    Prefetch {
        store: String,
        cached: bool,
        extent: Extent,
        asked: Instant,
    },
}

/// What of a store a read needs the local copy to hold before it answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Extent {
    /// Every object.
    Everything,
    /// The first name of each pair (see `Agent::reads_first_per_pair`): a cold store lists only
    /// those, or takes a checkpoint's heads.
    FirstPerPair,
    /// What it holds already, brought up to date (a fresh read the local copy covers).
    AsHeld,
    /// The names a scan inside one pair reads, which the checkpoint taken has in its range
    /// shards (see `Agent::checkpoint_covers`).
    InPair(ScanOptions),
    /// The tails of these pairs, which the checkpoint taken has in tail shards not read yet
    /// (keyed reads of an objstore-meta store, which are answered from what is held).
    HeldPairs(Vec<String>),
}

impl Need {
    /// The store the agent acts on.
    pub fn store(&self) -> &str {
        match self {
            Need::Fetch { store, .. } | Need::Prefetch { store, .. } => store,
        }
    }

    /// The agent's step, on a thread that may wait for a bucket.
    pub fn run(&self, agent: &Agent, port: &mut impl Port, token: &Token) -> Result<()> {
        match self {
            Need::Fetch { store, keys, freshness } => agent.fetch(port, store, keys, *freshness, token),
            Need::Prefetch { store, cached, extent, asked } => {
                match agent.prefetch_for_read(port, store, extent, *asked, token) {
                    // A store read before keeps serving its copy while the bucket is away.
                    Err(e) if *cached && e.is_offline() => Ok(()),
                    other => other,
                }
            }
        }
    }
}

/// On the database's worker, before a read: what the agent must do first, if anything.
pub fn need(agent: &Agent, db: &mut Database, read: &ReadScope) -> Result<Option<Need>> {
    let fresh_read = read.freshness == Freshness::Fresh;
    let Some(store) = read.synced_store(agent) else {
        return Ok(None);
    };
    if agent.is_offline() {
        return Ok(None);
    }
    if let Some(keys) = &read.keys {
        // A keyed read of descriptions has the tails over its names read first (a scan inside
        // one pair: with its range).
        if db.sync_policy(store).is_some_and(|policy| policy.format == Format::ObjstoreMeta) {
            let ids = keys.iter().filter_map(|key| match key {
                Key::String(id) => Some(id.as_str()),
                _ => None,
            });
            let pairs = agent.held_pairs(store, ids);
            return Ok((!pairs.is_empty()).then(|| Need::Prefetch {
                store: store.clone(),
                cached: true,
                extent: Extent::HeldPairs(pairs),
                asked: Instant::now(),
            }));
        }
        let missing = db.local_copies(store, keys)?.iter().any(|c| !c.present && !c.held);
        return Ok((fresh_read || missing).then(|| Need::Fetch {
            store: store.clone(),
            keys: keys.clone(),
            freshness: read.freshness,
        }));
    }
    // A fresh read lists, unless a listing within the refractory period (the least interval
    // between two, the seed's `prefetchRefractoryPeriod`) already answered for the bucket.
    // A read of the first name of each pair is served by a store listed only that far; any
    // other read wants it listed in full.
    let fresh = fresh_read && !agent.refractory_fresh(store);
    let first_per_pair = read.scan.as_ref().is_some_and(|scan| agent.reads_first_per_pair(store, scan));
    let in_pair = read.scan.as_ref().filter(|scan| agent.pair_range(store, scan).is_some());
    if !agent.prefetches(store) {
        return Ok(None);
    }
    let count = |range| db.count(store, &ScanOptions::new().range(range)).unwrap_or(0);
    let covered = agent.listed_for(store, first_per_pair)
        || in_pair.is_some_and(|scan| agent.checkpoint_covers(store, scan, count));
    let extent = match (covered, in_pair) {
        (true, _) if !fresh => return Ok(None),
        (true, _) if first_per_pair => Extent::FirstPerPair,
        (true, Some(_)) => Extent::AsHeld,
        (false, Some(scan)) => Extent::InPair(scan.clone()),
        (_, None) if first_per_pair => Extent::FirstPerPair,
        _ => Extent::Everything,
    };
    let cached = !fresh && db.was_prefetched(store)?;
    Ok(Some(Need::Prefetch { store: store.clone(), cached, extent, asked: Instant::now() }))
}

/// After a read served the cache: what to revalidate in the background, if anything.
#[derive(Debug)]
pub struct Revalidation {
    store: String,
    keys: Option<Vec<Key>>,
}

impl Revalidation {
    /// The revalidation `read` calls for, if its store wants one.
    pub fn after(agent: &Agent, read: &ReadScope) -> Option<Revalidation> {
        let store = read.synced_store(agent)?.clone();
        if agent.is_offline() {
            return None;
        }
        let wants = match &read.keys {
            Some(_) => agent.revalidates(&store),
            None => agent.prefetches(&store),
        };
        wants.then(|| Revalidation { store, keys: read.keys.clone() })
    }

    /// What it revalidates: reads of the same keys share one revalidation.
    pub fn what(&self) -> String {
        match &self.keys {
            Some(keys) => format!(
                "{}\u{0}{}",
                self.store,
                serde_json::to_string(&keys.iter().map(Key::to_string).collect::<Vec<_>>()).unwrap_or_default()
            ),
            None => self.store.clone(),
        }
    }

    /// Revalidates, on a thread that may wait for a bucket: the keys read are asked for again
    /// (conditional GETs), a scanned store is refreshed within its refractory period.
    pub fn run(&self, agent: &Agent, port: &mut impl Port, token: &Token) -> Result<()> {
        match &self.keys {
            Some(keys) => agent.fetch(port, &self.store, keys, Freshness::Fresh, token),
            None => agent.refresh(port, &self.store, token),
        }
    }
}

/// A read on the caller's thread, the agent's work done there too: the policy's step first,
/// else the revalidation it would queue, done now. For callers that count the requests each
/// read costs (tests, tools).
pub fn prepare_read_here(agent: &Agent, db: &mut Database, read: &ReadScope, token: &Token) -> Result<()> {
    match need(agent, db, read)? {
        Some(need) => need.run(agent, db, token),
        None => match Revalidation::after(agent, read) {
            Some(revalidation) => revalidation.run(agent, db, token),
            None => Ok(()),
        },
    }
}
