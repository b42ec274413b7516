//! The schema in the seed's JSON shape:
//! `{version?, stores: [{name, keyPath?, autoIncrement?, indexes: [{name?, keyPath, unique?,
//! multiEntry?}], dispatchEvents?, Sync?}]}`. Unknown fields are rejected so that a misspelt
//! option fails loudly instead of being ignored.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::keypath::KeyPath;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// As YDN-DB has it: 0 (not given) means "whatever the stored one is", moved up by one when
    /// the schema changed; a given version must be at least the stored one.
    #[serde(default)]
    pub version: u64,
    #[serde(default)]
    pub stores: Vec<StoreSchema>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StoreSchema {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_path: Option<KeyPath>,
    #[serde(default)]
    pub auto_increment: bool,
    #[serde(default)]
    pub indexes: Vec<IndexSchema>,
    /// `false` silences created/updated/deleted events for this store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_events: Option<bool>,
    /// The sync block, kept as given; the sync layer reads it.
    #[serde(default, rename = "Sync", skip_serializing_if = "Option::is_none")]
    pub sync: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IndexSchema {
    /// Defaults to the key path (`"a"`, or `"a, b"` for a compound one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub key_path: KeyPath,
    #[serde(default)]
    pub unique: bool,
    #[serde(default)]
    pub multi_entry: bool,
}

/// The options of a Sync block that are secrets: they reach the sync layer but are never stored
/// in the database file, and changing them changes no schema (review #15).
pub const SECRET_OPTIONS: [&str; 3] = ["accessKeyId", "secretAccessKey", "sessionToken"];

/// The secret options given in each store's Sync block, by store.
pub type Secrets = HashMap<String, Map<String, Value>>;

impl Schema {
    /// Takes the secret options out of every Sync block's `Options`.
    pub fn take_secrets(&mut self) -> Secrets {
        let mut secrets = Secrets::new();
        for store in &mut self.stores {
            let Some(Value::Object(options)) = store.sync.as_mut().and_then(|b| b.get_mut("Options")) else {
                continue;
            };
            let taken: Map<String, Value> =
                SECRET_OPTIONS.iter().filter_map(|k| options.remove(*k).map(|v| (k.to_string(), v))).collect();
            if !taken.is_empty() {
                secrets.insert(store.name.clone(), taken);
            }
        }
        secrets
    }

    pub fn from_json(text: &str) -> Result<Schema> {
        let schema: Schema = serde_json::from_str(text)
            .map_err(|e| Error::BadJson { what: "schema".into(), reason: crate::error::in_schema_words(&e) })?;
        schema.normalized()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a schema always serialises")
    }

    pub fn store(&self, name: &str) -> Option<&StoreSchema> {
        self.stores.iter().find(|s| s.name == name)
    }

    /// Checks the rules IndexedDB enforces and fills in default index names.
    pub fn normalized(mut self) -> Result<Schema> {
        let mut seen = std::collections::HashSet::new();
        for store in &mut self.stores {
            if store.name.is_empty() {
                return Err(Error::InvalidSchema("a store has an empty name".into()));
            }
            if !seen.insert(store.name.clone()) {
                return Err(Error::InvalidSchema(format!("store {:?} is defined twice", store.name)));
            }
            store.normalize()?;
        }
        Ok(self)
    }

    /// The first difference between two normalized schemas, in words; `None` when equal.
    pub fn difference(&self, newer: &Schema) -> Option<String> {
        for old in &self.stores {
            let Some(new) = newer.store(&old.name) else {
                return Some(format!("store {:?} removed", old.name));
            };
            if let Some(change) = old.difference(new) {
                return Some(change);
            }
        }
        newer.stores.iter().find(|s| self.store(&s.name).is_none()).map(|s| format!("store {:?} added", s.name))
    }
}

impl StoreSchema {
    /// A store made by a first write to a database opened without a schema: out-of-line keys,
    /// generated when the caller gives none.
    pub fn implicit(name: &str) -> StoreSchema {
        StoreSchema {
            name: name.to_string(),
            key_path: None,
            auto_increment: true,
            indexes: Vec::new(),
            dispatch_events: None,
            sync: None,
        }
    }

    pub fn index(&self, name: &str) -> Option<&IndexSchema> {
        self.indexes.iter().find(|i| i.name.as_deref() == Some(name))
    }

    pub fn dispatches_events(&self) -> bool {
        self.dispatch_events != Some(false)
    }

    fn normalize(&mut self) -> Result<()> {
        let owner = format!("store {:?}", self.name);
        if let Some(path) = &self.key_path {
            path.validate(&owner)?;
            if self.auto_increment && (path.is_compound() || *path == KeyPath::Single(String::new())) {
                return Err(Error::InvalidSchema(format!(
                    "{owner}: autoIncrement needs a single non-empty key path, not {path}"
                )));
            }
        }
        let mut names = std::collections::HashSet::new();
        for index in &mut self.indexes {
            let name = index.name.get_or_insert_with(|| index.key_path.display_name()).clone();
            let index_owner = format!("{owner}, index {name:?}");
            if name.is_empty() {
                return Err(Error::InvalidSchema(format!("{index_owner}: empty name")));
            }
            if !names.insert(name.clone()) {
                return Err(Error::InvalidSchema(format!("{index_owner}: defined twice")));
            }
            index.key_path.validate(&index_owner)?;
            if index.multi_entry && index.key_path.is_compound() {
                return Err(Error::InvalidSchema(format!(
                    "{index_owner}: multiEntry cannot be used with a compound key path"
                )));
            }
        }
        Ok(())
    }

    fn difference(&self, new: &StoreSchema) -> Option<String> {
        let name = &self.name;
        if self.key_path != new.key_path {
            return Some(format!("store {name:?} key path changed"));
        }
        if self.auto_increment != new.auto_increment {
            return Some(format!("store {name:?} autoIncrement changed"));
        }
        for old in &self.indexes {
            let index = old.name.as_deref().unwrap_or_default();
            match new.index(index) {
                None => return Some(format!("index {index:?} removed from store {name:?}")),
                Some(changed) if changed != old => return Some(format!("index {index:?} of store {name:?} changed")),
                Some(_) => {}
            }
        }
        if let Some(added) = new.indexes.iter().find(|i| self.index(i.name.as_deref().unwrap_or_default()).is_none()) {
            return Some(format!("index {:?} added to store {name:?}", added.name.as_deref().unwrap_or_default()));
        }
        if self.dispatch_events != new.dispatch_events || self.sync != new.sync {
            return Some(format!("options of store {name:?} changed"));
        }
        None
    }
}
