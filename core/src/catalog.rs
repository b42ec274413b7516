//! The catalog: the stored schema plus which table holds each store and index. It lives as
//! JSON in the meta table and changes only inside a write transaction.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::keypath::KeyPath;
use crate::mechanism::{Mechanism, TableId, META_TABLE};
use crate::schema::{Schema, StoreSchema};

const CATALOG_KEY: &[u8] = b"catalog";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Catalog {
    pub schema: Schema,
    pub tables: BTreeMap<String, StoreTables>,
    pub next_table: TableId,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StoreTables {
    pub data: TableId,
    pub indexes: BTreeMap<String, TableId>,
}

/// A store as the operations need it: its definition and its tables.
#[derive(Debug)]
pub(crate) struct StoreInfo {
    pub schema: StoreSchema,
    pub data: TableId,
    pub indexes: Vec<IndexInfo>,
}

#[derive(Debug)]
pub(crate) struct IndexInfo {
    pub name: String,
    pub key_path: KeyPath,
    pub unique: bool,
    pub multi_entry: bool,
    pub table: TableId,
}

impl StoreInfo {
    pub fn index(&self, name: &str) -> Result<&IndexInfo> {
        self.indexes.iter().find(|i| i.name == name).ok_or_else(|| Error::UnknownIndex {
            store: self.schema.name.clone(),
            index: name.to_string(),
            known: self.indexes.iter().map(|i| i.name.clone()).collect(),
        })
    }
}

impl Catalog {
    pub fn empty() -> Catalog {
        Catalog {
            schema: Schema { version: 1, stores: Vec::new() },
            tables: BTreeMap::new(),
            next_table: META_TABLE + 1,
        }
    }

    pub fn load(mech: &mut dyn Mechanism) -> Result<Option<Catalog>> {
        match mech.get(META_TABLE, CATALOG_KEY)? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| Error::Internal(format!("stored catalog is unreadable: {e}"))),
        }
    }

    pub fn save(&self, mech: &mut dyn Mechanism) -> Result<()> {
        mech.put(META_TABLE, CATALOG_KEY, &serde_json::to_vec(self).expect("catalog serialises"))
    }

    fn allocate(&mut self) -> TableId {
        let t = self.next_table;
        self.next_table += 1;
        t
    }

    /// Adds a store and its (empty) tables.
    pub fn create_store(&mut self, mech: &mut dyn Mechanism, store: &StoreSchema) -> Result<()> {
        let data = self.allocate();
        mech.create_data_table(data)?;
        self.tables.insert(store.name.clone(), StoreTables { data, indexes: BTreeMap::new() });
        for index in &store.indexes {
            self.create_index_table(mech, &store.name, index.name.as_deref().unwrap_or_default())?;
        }
        self.schema.stores.retain(|s| s.name != store.name);
        self.schema.stores.push(store.clone());
        Ok(())
    }

    pub fn create_index_table(&mut self, mech: &mut dyn Mechanism, store: &str, index: &str) -> Result<TableId> {
        let t = self.allocate();
        mech.create_index_table(t)?;
        self.tables.get_mut(store).expect("store exists").indexes.insert(index.to_string(), t);
        Ok(t)
    }

    pub fn drop_store(&mut self, mech: &mut dyn Mechanism, store: &str) -> Result<()> {
        if let Some(tables) = self.tables.remove(store) {
            mech.drop_table(tables.data)?;
            mech.delete(META_TABLE, &key_generator_slot(tables.data))?;
            for t in tables.indexes.values() {
                mech.drop_table(*t)?;
            }
        }
        self.schema.stores.retain(|s| s.name != store);
        Ok(())
    }

    pub fn drop_index(&mut self, mech: &mut dyn Mechanism, store: &str, index: &str) -> Result<()> {
        if let Some(t) = self.tables.get_mut(store).and_then(|s| s.indexes.remove(index)) {
            mech.drop_table(t)?;
        }
        Ok(())
    }

    /// The runtime view of every store, by name.
    pub fn store_infos(&self) -> HashMap<String, Arc<StoreInfo>> {
        self.schema
            .stores
            .iter()
            .map(|store| {
                let tables = &self.tables[&store.name];
                let indexes = store
                    .indexes
                    .iter()
                    .map(|i| {
                        let name = i.name.clone().unwrap_or_default();
                        IndexInfo {
                            table: tables.indexes[&name],
                            name,
                            key_path: i.key_path.clone(),
                            unique: i.unique,
                            multi_entry: i.multi_entry,
                        }
                    })
                    .collect();
                (store.name.clone(), Arc::new(StoreInfo { schema: store.clone(), data: tables.data, indexes }))
            })
            .collect()
    }
}

/// Where a store's key generator (the next autoIncrement key) is kept in the meta table.
pub(crate) fn key_generator_slot(data_table: TableId) -> Vec<u8> {
    format!("keygen/{data_table}").into_bytes()
}
