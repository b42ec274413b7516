//! The replica as the engine's write hook: each write to a synced store queues an outbox entry
//! in the writing transaction, and a migration that would strand waiting writes is refused.

use std::any::Any;
use std::collections::HashMap;

use super::policy::{Format, StorePolicy};
use super::{object_id, state, WriteOp};
use crate::database::Database;
use crate::error::{Error, Result};
use crate::hook::{Write, WriteHook, WriteKind};
use crate::mechanism::Mechanism;

/// The synced stores of a database, by name, with their policies.
#[derive(Debug, Default)]
pub struct Replica {
    policies: HashMap<String, StorePolicy>,
}

impl Replica {
    pub fn new(policies: HashMap<String, StorePolicy>) -> Replica {
        Replica { policies }
    }

    pub fn policy(&self, store: &str) -> Option<&StorePolicy> {
        self.policies.get(store)
    }

    /// The synced stores' names, sorted.
    pub fn stores(&self) -> Vec<String> {
        let mut names: Vec<String> = self.policies.keys().cloned().collect();
        names.sort();
        names
    }
}

impl WriteHook for Replica {
    fn mirrors(&self, store: &str) -> bool {
        self.policies.contains_key(store)
    }

    /// Checks that the store takes the write and queues it for the bucket.
    fn wrote(&self, mech: &mut dyn Mechanism, write: &Write<'_>) -> Result<()> {
        let store = write.store;
        let Some(policy) = self.policies.get(store) else {
            return Ok(());
        };
        if policy.format == Format::ObjstoreMeta {
            return Err(Error::InvalidArgument(format!(
                "store {store:?} mirrors object metadata (objstore-meta) and is read-only; write to the store that holds the objects"
            )));
        }
        let id = object_id(policy, store, write.key)?;
        if policy.immutable && write.replaced && write.kind != WriteKind::Delete {
            return Err(Error::Constraint {
                store: store.to_string(),
                detail: format!("the store is immutable: object {id:?} exists and cannot be replaced"),
            });
        }
        if let Some(value) = write.value {
            check_metadata(policy, store, &id, value.get())?;
        }
        let op = match write.kind {
            WriteKind::Put => WriteOp::Put,
            WriteKind::Add => WriteOp::Create,
            WriteKind::Delete => WriteOp::Delete,
        };
        // Read in the writing transaction, so that the number is the next one on this file.
        let sequence = state::next_sequence(mech)?;
        let entry = state::NewEntry { store, id: &id, op, value: write.value.map(|v| v.get()), landed: None };
        state::push_new(mech, sequence, &entry)
    }

    fn opened(&self, mech: &mut dyn Mechanism) -> Result<()> {
        state::index_refused(mech)
    }

    /// A store that stops syncing, or whose objects move (format, endpoint, bucket or prefix),
    /// forgets its sync state, unless writes still wait for where it synced before: those are
    /// never dropped silently.
    fn migrating(&self, mech: &mut dyn Mechanism, next: &dyn WriteHook) -> Result<()> {
        let next = (next as &dyn Any).downcast_ref::<Replica>();
        // In name order, so that a refusal names the same store every time.
        for store in self.stores() {
            let before = &self.policies[&store];
            let after = next.and_then(|n| n.policy(&store));
            if after.is_some_and(|after| after.objects_at == before.objects_at) {
                continue;
            }
            let waiting = state::pending_count(mech, &store)?;
            if waiting > 0 {
                return Err(Error::InvalidSchema(format!(
                    "store {store:?} has {waiting} write(s) waiting for its bucket; flush them before the migration changes where (or whether) it syncs"
                )));
            }
            state::forget_store(mech, &store)?;
        }
        Ok(())
    }
}

/// Metadata values go out as header values: control characters would break the request.
fn check_metadata(policy: &StorePolicy, store: &str, id: &str, value: &str) -> Result<()> {
    match policy.metadata_of(value).into_iter().find(|(_, v)| v.chars().any(char::is_control)) {
        Some((name, v)) => Err(Error::InvalidArgument(format!(
            "record {id:?} of store {store:?}: metadata field {name:?} = {v:?} has control characters and cannot be sent as a header"
        ))),
        None => Ok(()),
    }
}

impl Database {
    /// The replica this database's writes go through, when it was opened with one.
    fn replica(&self) -> Option<&Replica> {
        (self.hook() as &dyn Any).downcast_ref::<Replica>()
    }

    /// The store's sync policy, when it is synced.
    pub fn sync_policy(&self, store: &str) -> Option<&StorePolicy> {
        self.replica()?.policy(store)
    }

    /// The synced stores' names, sorted.
    pub fn synced_stores(&self) -> Vec<String> {
        self.replica().map(Replica::stores).unwrap_or_default()
    }
}
