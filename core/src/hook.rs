//! The engine's one door to whatever mirrors its writes elsewhere (the replica, for stores kept
//! in a bucket). The engine knows nothing of buckets: at open it asks the [`Mirroring`] it was
//! given for a [`WriteHook`] for the schema, and calls that hook inside each writing
//! transaction. A hook's error fails the write, so it leaves nothing behind.

use std::any::Any;
use std::fmt::Debug;

use serde_json::value::RawValue;

use crate::error::Result;
use crate::key::Key;
use crate::mechanism::Mechanism;
use crate::schema::{Schema, Secrets};

/// What a write did to a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Created or replaced (`put`).
    Put,
    /// Created; the key was free (`add`).
    Add,
    Delete,
}

/// One write of a transaction, as the engine hands it to its hook: after every check of the
/// engine's own, before the record and its indexes change.
#[derive(Debug)]
pub struct Write<'a> {
    pub store: &'a str,
    pub key: &'a Key,
    pub kind: WriteKind,
    /// The new record as it is stored (`None` for a delete).
    pub value: Option<&'a RawValue>,
    /// Whether a record was there before.
    pub replaced: bool,
}

/// Makes the hook for a database's schema, at open.
pub trait Mirroring: Send + Sync + Debug {
    /// The hook for `schema`'s stores; `secrets` are what the schema's blocks gave at this open
    /// and the stored schema does not keep. An error (a bad block) fails the open.
    fn hook(&self, schema: &Schema, secrets: &Secrets) -> Result<Box<dyn WriteHook>>;
}

/// Called by the engine inside its transactions. It may read and write the mechanism (its own
/// tables), in the engine's transaction.
pub trait WriteHook: Send + Any {
    /// Whether writes to `store` are mirrored: a `clear` of it then removes record by record,
    /// each removal handed to [`WriteHook::wrote`].
    fn mirrors(&self, store: &str) -> bool;

    /// A write, inside its transaction: an error refuses it.
    fn wrote(&self, mech: &mut dyn Mechanism, write: &Write<'_>) -> Result<()>;

    /// At open, once the schema is stored, in the opening transaction.
    fn opened(&self, mech: &mut dyn Mechanism) -> Result<()>;

    /// Before a migration stores a new schema whose hook is `next`, in its transaction: refuses
    /// one that would strand what this hook holds for a store.
    fn migrating(&self, mech: &mut dyn Mechanism, next: &dyn WriteHook) -> Result<()>;
}

/// Mirrors nothing: a database whose writes stay local.
#[derive(Debug, Default)]
pub struct NoMirroring;

impl Mirroring for NoMirroring {
    fn hook(&self, _: &Schema, _: &Secrets) -> Result<Box<dyn WriteHook>> {
        Ok(Box::new(NoMirroring))
    }
}

impl WriteHook for NoMirroring {
    fn mirrors(&self, _: &str) -> bool {
        false
    }

    fn wrote(&self, _: &mut dyn Mechanism, _: &Write<'_>) -> Result<()> {
        Ok(())
    }

    fn opened(&self, _: &mut dyn Mechanism) -> Result<()> {
        Ok(())
    }

    fn migrating(&self, _: &mut dyn Mechanism, _: &dyn WriteHook) -> Result<()> {
        Ok(())
    }
}
