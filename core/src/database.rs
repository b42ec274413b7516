//! The synchronous database: opening (and migrating), transactions and event delivery. The
//! operations themselves live in `ops.rs`, on [`Tx`] and (one operation in a transaction of its
//! own) on [`Database`]: this file never calls them.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;

use crate::catalog::{Catalog, StoreInfo};
use crate::error::{Error, Result};
use crate::events::{Event, EventFilter, EventKind, Listener, Listeners, SubscriptionId};
use crate::hook::{Mirroring, Write, WriteHook};
use crate::mechanism::Durability;
use crate::mechanism::{Mechanism, MemoryMechanism, SqliteMechanism, TableId};
use crate::records;
use crate::schema::{Schema, Secrets, StoreSchema};

pub type TxId = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadOnly,
    ReadWrite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MechanismKind {
    /// A durable SQLite file at the database's name (a path). The default.
    #[default]
    Sqlite,
    /// Ordered maps in memory, gone when the database closes.
    Memory,
}

impl MechanismKind {
    pub fn from_name(name: &str) -> Result<MechanismKind> {
        match name {
            "sqlite" => Ok(MechanismKind::Sqlite),
            "memory" => Ok(MechanismKind::Memory),
            other => Err(Error::InvalidArgument(format!("unknown mechanism {other:?} (known: sqlite, memory)"))),
        }
    }
}

/// How to open a database. The default (made in `crate::sync`) mirrors the writes of stores
/// with a `Sync` block into their outbox, for the sync agent to send.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    pub mechanism: MechanismKind,
    pub durability: Durability,
    /// What mirrors the writes elsewhere: its hook is made from the schema at open.
    pub mirroring: Arc<dyn Mirroring>,
}

struct ActiveTx {
    id: TxId,
    scope: Vec<String>,
    mode: Mode,
    /// Whether the mechanism was asked to begin. A lone read runs without, in SQLite's
    /// autocommit mode, which is atomic for one statement and saves two round trips.
    storage: bool,
    events: Vec<Event>,
    /// The catalog before this transaction created a store, to restore on abort.
    catalog_before: Option<Catalog>,
    /// The transaction applies data from the bucket (the sync agent's): its writes are not
    /// queued for the bucket.
    from_bucket: bool,
}

/// How many finished transactions are remembered, to say why an old id is inactive.
const FINISHED_MEMORY: usize = 256;

pub struct Database {
    name: String,
    pub(crate) mech: Box<dyn Mechanism>,
    catalog: Catalog,
    stores: HashMap<String, Arc<StoreInfo>>,
    /// Opened without a schema: a first write to an unknown store creates it.
    schemaless: bool,
    listeners: Listeners,
    active: Option<ActiveTx>,
    next_tx: TxId,
    finished: VecDeque<(TxId, String)>,
    /// Cached next autoIncrement key per data table; dropped on rollback.
    pub(crate) key_generators: HashMap<TableId, f64>,
    /// Whatever mirrors this database's writes (the replica): called inside each write.
    hook: Box<dyn WriteHook>,
    /// What the schema's blocks gave at this open and the stored schema does not keep
    /// (credentials).
    secrets: Secrets,
    /// The schema version the file had before this open (`None`: the database is new).
    previous_version: Option<u64>,
}

impl Database {
    /// Opens (creating if needed) a database. With a schema, a stored schema that differs is
    /// migrated when the version is higher, and is an error otherwise. Without one, the stored
    /// schema is used and stores are created on first write.
    pub fn open(name: &str, schema: Option<Schema>, options: &OpenOptions) -> Result<Database> {
        if name.is_empty() {
            return Err(Error::InvalidArgument("database name is empty".into()));
        }
        let mut schema = schema.map(Schema::normalized).transpose()?;
        let mut secrets = schema.as_mut().map(Schema::take_secrets).unwrap_or_default();
        let mech: Box<dyn Mechanism> = match options.mechanism {
            MechanismKind::Sqlite => Box::new(SqliteMechanism::open(Path::new(name), options.durability)?),
            MechanismKind::Memory => Box::new(MemoryMechanism::new()),
        };
        let mut db = Database::over(name, mech, Catalog::empty(), schema.is_none());
        db.mech.begin(true)?;
        // The hook is made (and a bad Sync block refused) inside the open transaction, so that
        // a bad block can be mended at the same version.
        let loaded = db.load_or_migrate(schema, &mut secrets, &*options.mirroring).and_then(|()| {
            let hook = options.mirroring.hook(&db.catalog.schema, &secrets)?;
            hook.opened(&mut *db.mech)?;
            Ok(hook)
        });
        match loaded {
            Ok(hook) => {
                db.mech.commit()?;
                db.hook = hook;
                db.secrets = secrets;
            }
            Err(e) => {
                let _ = db.mech.rollback();
                return Err(e);
            }
        }
        db.stores = db.catalog.store_infos();
        Ok(db)
    }

    /// A read-only database over `mech`, a reader of this one's storage (see
    /// [`crate::mechanism::OpenReader`]), with the catalog as stored now. It never writes and
    /// has no listeners: a read that fails on it reports its error through the worker's
    /// database (`report_error`).
    pub(crate) fn reader(name: &str, mut mech: Box<dyn Mechanism>) -> Result<Database> {
        mech.hold_view()?;
        let loaded = Catalog::load(&mut *mech);
        mech.release_view();
        Ok(Database::over(name, mech, loaded?.unwrap_or_else(Catalog::empty), false))
    }

    /// A database over `mech` with `catalog`: no transaction, listener, mirroring or secret yet.
    fn over(name: &str, mech: Box<dyn Mechanism>, catalog: Catalog, schemaless: bool) -> Database {
        Database {
            name: name.to_string(),
            mech,
            stores: catalog.store_infos(),
            catalog,
            schemaless,
            listeners: Listeners::default(),
            active: None,
            next_tx: 1,
            finished: VecDeque::new(),
            key_generators: HashMap::new(),
            hook: Box::new(crate::hook::NoMirroring),
            secrets: Secrets::new(),
            previous_version: None,
        }
    }

    /// What opens readers of this database's storage.
    pub(crate) fn reader_opener(&self) -> crate::mechanism::OpenReader {
        self.mech.reader_opener()
    }

    /// The error event a failed read would have sent (for a read that ran on a reader).
    pub(crate) fn report_error(&mut self, store: Option<String>, message: String) {
        self.emit(Event { kind: EventKind::Error, store, key: None, value: None, message: Some(message) });
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema as stored, with default index names filled in.
    pub fn schema(&self) -> &Schema {
        &self.catalog.schema
    }

    /// The schema version before this open: `None` for a new database, else the version it
    /// had (lower than [`Schema::version`] when the open migrated it).
    pub fn previous_version(&self) -> Option<u64> {
        self.previous_version
    }

    /// Loads the stored schema, then stores `given` (new, or migrated to). Secrets an older
    /// version stored in the file are taken out of it and used where none were given.
    fn load_or_migrate(
        &mut self,
        given: Option<Schema>,
        secrets: &mut Secrets,
        mirroring: &dyn Mirroring,
    ) -> Result<()> {
        let mech = &mut *self.mech;
        let mut stored = Catalog::load(mech)?;
        if let Some(catalog) = stored.as_mut() {
            let found = catalog.schema.take_secrets();
            if !found.is_empty() {
                catalog.save(mech)?;
                for (store, found) in found {
                    secrets.entry(store).or_insert(found);
                }
            }
        }
        match (stored, given) {
            (None, given) => {
                self.catalog = Catalog::empty();
                if let Some(schema) = given {
                    self.catalog.schema.version = schema.version.max(1);
                    for store in &schema.stores {
                        self.catalog.create_store(mech, store)?;
                    }
                }
                self.catalog.save(mech)
            }
            (Some(stored), None) => {
                self.previous_version = Some(stored.schema.version);
                self.catalog = stored;
                Ok(())
            }
            (Some(stored), Some(mut schema)) => {
                self.previous_version = Some(stored.schema.version);
                self.catalog = stored;
                let stored_version = self.catalog.schema.version;
                if schema.version == 0 {
                    // No version given: a changed schema is the next version (YDN-DB's rule).
                    let changed = self.catalog.schema.difference(&schema).is_some();
                    schema.version = if changed { stored_version + 1 } else { stored_version };
                }
                let given_version = schema.version;
                if given_version < stored_version {
                    return Err(Error::VersionTooLow {
                        database: self.name.clone(),
                        stored: stored_version,
                        given: given_version,
                    });
                }
                match self.catalog.schema.difference(&schema) {
                    Some(change) if given_version == stored_version => Err(Error::SchemaChanged {
                        database: self.name.clone(),
                        stored: stored_version,
                        given: given_version,
                        change,
                    }),
                    None if given_version == stored_version => Ok(()),
                    _ => self.migrate(schema, mirroring),
                }
            }
        }
    }

    /// Brings the stored schema to `new` inside the open transaction: drops what went, creates
    /// what came, rebuilds changed indexes from the records.
    fn migrate(&mut self, new: Schema, mirroring: &dyn Mirroring) -> Result<()> {
        let old = self.catalog.schema.clone();
        let no_secrets = Secrets::new(); // where a store's writes go does not depend on them
        let (before, after) = (mirroring.hook(&old, &no_secrets)?, mirroring.hook(&new, &no_secrets)?);
        let mech = &mut *self.mech;
        before.migrating(mech, &*after)?;
        for store in &old.stores {
            if new.store(&store.name).is_none() {
                self.catalog.drop_store(mech, &store.name)?;
            }
        }
        let mut rebuild = Vec::new();
        for store in &new.stores {
            let Some(prev) = old.store(&store.name) else {
                self.catalog.create_store(mech, store)?;
                continue;
            };
            if prev.key_path != store.key_path || prev.auto_increment != store.auto_increment {
                return Err(Error::InvalidSchema(format!(
                    "store {:?}: keyPath and autoIncrement cannot change in place; remove the store in one version and add it back in the next",
                    store.name
                )));
            }
            for index in &prev.indexes {
                let name = index.name.as_deref().unwrap_or_default();
                if store.index(name) != Some(index) {
                    self.catalog.drop_index(mech, &store.name, name)?;
                }
            }
            for index in &store.indexes {
                let name = index.name.as_deref().unwrap_or_default();
                if prev.index(name) != Some(index) {
                    self.catalog.create_index_table(mech, &store.name, name)?;
                    rebuild.push((store.name.clone(), name.to_string()));
                }
            }
        }
        self.catalog.schema = Schema { version: new.version, stores: new.stores.clone() };
        self.catalog.save(mech)?;
        self.stores = self.catalog.store_infos();
        for (store, index) in rebuild {
            let info = self.stores[&store].clone();
            records::rebuild_index(&mut *self.mech, &info, info.index(&index)?)?;
        }
        Ok(())
    }

    // ----- transactions -------------------------------------------------------------------

    /// Runs `work` in a transaction over `stores`: committed when it returns Ok, rolled back
    /// (with nothing written and no change events) when it returns an error.
    pub fn run<T>(&mut self, stores: &[&str], mode: Mode, work: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.run_with(stores, mode, true, false, work)
    }

    /// Runs work that reads with a single storage statement, without a storage transaction:
    /// SQLite's autocommit makes one statement atomic, and skipping BEGIN/COMMIT saves two
    /// round trips on the hottest reads.
    pub(crate) fn run_single_read<T>(&mut self, store: &str, work: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.run_with(&[store], Mode::ReadOnly, false, false, work)
    }

    /// `run`, marking the transaction as applying bucket data (see `replica`).
    pub(crate) fn run_marked<T>(
        &mut self,
        stores: &[&str],
        mode: Mode,
        from_bucket: bool,
        work: impl FnOnce(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        self.run_with(stores, mode, true, from_bucket, work)
    }

    fn run_with<T>(
        &mut self,
        stores: &[&str],
        mode: Mode,
        storage: bool,
        from_bucket: bool,
        work: impl FnOnce(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        let outcome = self.begin_with(stores, mode, storage, from_bucket).and_then(|id| {
            let outcome = work(&mut Tx { db: self, id }).and_then(|value| self.commit(id).map(|()| value));
            if outcome.is_err() && self.active_transaction() == Some(id) {
                self.finish_aborted(id, "its work failed");
            }
            outcome
        });
        if let Err(error) = &outcome {
            let store = stores.first().map(|s| s.to_string());
            self.emit(Event {
                kind: EventKind::Error,
                store,
                key: None,
                value: None,
                message: Some(error.to_string()),
            });
        }
        outcome
    }

    /// Starts an explicit transaction; operations go through [`Database::transaction`] until
    /// [`Database::commit`] or [`Database::abort`]. Only one is active at a time.
    pub fn begin(&mut self, stores: &[&str], mode: Mode) -> Result<TxId> {
        self.begin_with(stores, mode, true, false)
    }

    fn begin_with(&mut self, stores: &[&str], mode: Mode, storage: bool, from_bucket: bool) -> Result<TxId> {
        if let Some(active) = &self.active {
            return Err(Error::InvalidArgument(format!(
                "transaction {} is still active; commit or abort it before starting another",
                active.id
            )));
        }
        if stores.is_empty() {
            return Err(Error::InvalidArgument("a transaction needs at least one store".into()));
        }
        for store in stores {
            let creatable = self.schemaless && mode == Mode::ReadWrite;
            if !creatable && !self.stores.contains_key(*store) {
                return Err(self.unknown_store(store));
            }
        }
        if storage {
            self.mech.begin(mode == Mode::ReadWrite)?;
        }
        let id = self.next_tx;
        self.next_tx += 1;
        self.active = Some(ActiveTx {
            id,
            scope: stores.iter().map(|s| s.to_string()).collect(),
            mode,
            storage,
            events: Vec::new(),
            catalog_before: None,
            from_bucket,
        });
        Ok(id)
    }

    /// The operations of the active explicit transaction `id`.
    pub fn transaction(&mut self, id: TxId) -> Result<Tx<'_>> {
        self.check_active(id)?;
        Ok(Tx { db: self, id })
    }

    pub fn active_transaction(&self) -> Option<TxId> {
        self.active.as_ref().map(|a| a.id)
    }

    /// Commits, then delivers the transaction's change events. On a storage failure the
    /// transaction is rolled back and the error returned. The result is the local outcome
    /// only: writes to synced stores wait in the outbox for the sync agent.
    pub fn commit(&mut self, id: TxId) -> Result<()> {
        self.check_active(id)?;
        let storage = self.active.as_ref().is_some_and(|a| a.storage);
        if storage {
            if let Err(e) = self.mech.commit() {
                self.finish_aborted(id, "its commit failed");
                return Err(e);
            }
        }
        let active = self.active.take().expect("checked above");
        self.remember(id, "committed");
        for event in &active.events {
            self.listeners.dispatch(event);
        }
        Ok(())
    }

    /// Rolls back everything the transaction did.
    pub fn abort(&mut self, id: TxId) -> Result<()> {
        self.check_active(id)?;
        self.finish_aborted(id, "aborted");
        Ok(())
    }

    /// Aborts the active transaction, if any, saying why (an idle timeout, a panic).
    pub fn abort_active(&mut self, reason: &str) {
        if let Some(id) = self.active_transaction() {
            self.finish_aborted(id, reason);
        }
    }

    fn finish_aborted(&mut self, id: TxId, reason: &str) {
        let Some(active) = self.active.take() else {
            return;
        };
        if active.storage {
            let _ = self.mech.rollback();
        }
        if let Some(catalog) = active.catalog_before {
            self.catalog = catalog;
            self.stores = self.catalog.store_infos();
        }
        self.key_generators.clear();
        self.remember(id, reason);
    }

    fn remember(&mut self, id: TxId, how: &str) {
        if self.finished.len() == FINISHED_MEMORY {
            self.finished.pop_front();
        }
        self.finished.push_back((id, how.to_string()));
    }

    fn check_active(&self, id: TxId) -> Result<()> {
        if self.active.as_ref().is_some_and(|a| a.id == id) {
            return Ok(());
        }
        let reason = match self.finished.iter().find(|(f, _)| *f == id) {
            Some((_, how)) => format!("it was {how}"),
            None if id >= self.next_tx => "no such transaction was started".into(),
            None => "it finished long ago".into(),
        };
        Err(Error::TransactionInactive { id, reason })
    }

    // ----- events -------------------------------------------------------------------------

    /// Adds a listener. It runs on the thread that runs the database (the worker thread under
    /// the executor) after each commit. Subscribing to `ready` on an open database fires it at
    /// once, so that a listener never misses it.
    pub fn subscribe(&mut self, filter: EventFilter, listener: Listener) -> SubscriptionId {
        let wants_ready = filter.wants(EventKind::Ready, None);
        let id = self.listeners.add(filter, listener);
        if wants_ready {
            let versions = serde_json::json!({"version": self.catalog.schema.version,
                "previousVersion": self.previous_version});
            let mut ready = Event::lifecycle(EventKind::Ready, None);
            ready.value = Some(versions);
            self.listeners.dispatch_to(id, &ready);
        }
        id
    }

    pub fn unsubscribe(&mut self, id: SubscriptionId) -> bool {
        self.listeners.remove(id)
    }

    /// Sends an event now (outside a transaction) or queues it until commit (inside one).
    pub(crate) fn emit(&mut self, event: Event) {
        if !self.listeners.wants(event.kind, event.store.as_deref()) {
            return;
        }
        match &mut self.active {
            Some(active) if event.kind != EventKind::Error => active.events.push(event),
            _ => self.listeners.dispatch(&event),
        }
    }

    pub(crate) fn wants_event(&self, kind: EventKind, store: &StoreInfo) -> bool {
        store.schema.dispatches_events() && self.listeners.wants(kind, Some(&store.schema.name))
    }

    // ----- store lookup (for ops) ---------------------------------------------------------

    /// The store, checked against the active transaction's scope and mode. A write to an
    /// unknown store of a schemaless database creates it.
    pub(crate) fn store_for(&mut self, store: &str, write: bool) -> Result<Arc<StoreInfo>> {
        let active = self.active.as_ref().expect("ops run inside a transaction");
        if !active.scope.iter().any(|s| s == store) {
            return Err(Error::NotInScope { store: store.to_string(), scope: active.scope.clone() });
        }
        if write && active.mode == Mode::ReadOnly {
            return Err(Error::ReadOnly { store: store.to_string() });
        }
        if let Some(info) = self.stores.get(store) {
            return Ok(info.clone());
        }
        if !(write && self.schemaless) {
            return Err(self.unknown_store(store));
        }
        let before = self.catalog.clone();
        self.catalog.create_store(&mut *self.mech, &StoreSchema::implicit(store))?;
        self.catalog.save(&mut *self.mech)?;
        let active = self.active.as_mut().expect("checked above");
        active.catalog_before.get_or_insert(before);
        self.stores = self.catalog.store_infos();
        Ok(self.stores[store].clone())
    }

    pub(crate) fn unknown_store(&self, store: &str) -> Error {
        let mut known: Vec<String> = self.stores.keys().cloned().collect();
        known.sort();
        Error::UnknownStore { store: store.to_string(), known }
    }

    // ----- for the replica and the sync agent ---------------------------------------------

    /// Whatever mirrors this database's writes.
    pub(crate) fn hook(&self) -> &dyn WriteHook {
        &*self.hook
    }

    /// What the schema's blocks gave at this open and the stored schema does not keep.
    pub(crate) fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Hands a write to the hook, inside its transaction; bucket data the agent applies is
    /// not mirrored back.
    pub(crate) fn mirror(&mut self, write: &Write<'_>) -> Result<()> {
        if self.applying_bucket_data() {
            return Ok(());
        }
        self.hook.wrote(&mut *self.mech, write)
    }

    /// Whether a `clear` of `store` must remove record by record, each removal mirrored.
    pub(crate) fn mirrors(&self, store: &str) -> bool {
        self.hook.mirrors(store) && !self.applying_bucket_data()
    }

    pub(crate) fn has_store(&self, store: &str) -> bool {
        self.stores.contains_key(store)
    }

    pub(crate) fn store_has_key_path(&self, store: &str) -> Result<bool> {
        match self.stores.get(store) {
            Some(info) => Ok(info.schema.key_path.is_some()),
            None => Err(self.unknown_store(store)),
        }
    }

    pub(crate) fn mech_mut(&mut self) -> &mut dyn Mechanism {
        &mut *self.mech
    }

    /// Whether the active transaction applies bucket data.
    pub(crate) fn applying_bucket_data(&self) -> bool {
        self.active.as_ref().is_some_and(|a| a.from_bucket)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.abort_active("the database closed");
    }
}

/// The operations of one transaction; see `ops.rs`.
pub struct Tx<'db> {
    pub(crate) db: &'db mut Database,
    pub(crate) id: TxId,
}

impl Tx<'_> {
    pub fn id(&self) -> TxId {
        self.id
    }
}
