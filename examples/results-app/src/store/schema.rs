//! The stores the app opens on a target: the writer's `results` (immutable, create-only, with a
//! change log), the viewer's `results-meta` from the listing with the indexes the views need,
//! and the quarantine's one mutable object.

use serde_json::{json, Value};

use super::Target;

/// The team's documents' store: one object each, `.quarantine` and `.codeowners` (named for the
/// first of them).
pub const DOCUMENTS_STORE: &str = "quarantine";

impl Target {
    /// The `results` store (the app README's "The result format"), immutable and create-only, syncing to this target;
    /// each run stored leaves a change-log marker, so a viewer's warm refresh is one LIST, and
    /// a cold one starts from the newest checkpoint (see `Cache::checkpoint`).
    pub fn schema(&self) -> Value {
        let mut options = self.options();
        options["metadata"] = json!(["platform", "browser", "version"]);
        options["changeLog"] = json!(true);
        options["checkpoints"] = json!(true);
        json!({"stores": [{"name": "results", "Sync": {"format": "objstore", "immutable": true, "Options": options}}]})
    }

    /// The sync options every store of this target starts from: where, and how long a request
    /// may take.
    pub fn options(&self) -> Value {
        let mut options = json!({"bucket": self.bucket, "prefix": self.prefix, "endpoint": self.endpoint});
        if let Some(ms) = self.timeout_ms {
            options["timeoutMs"] = json!(ms);
        }
        options
    }
}

/// The viewer's stores: `results` as the writers have it, and `results-meta`, one record per
/// object from the listing, its labels from the key layout, with the indexes the views need:
/// every pair (its first name) and every run across pairs, newest first; a pair's runs are a
/// range of names.
pub fn viewer_schema(target: &Target) -> Value {
    let mut schema = target.schema();
    let mut options = schema["stores"][0]["Sync"]["Options"].clone();
    options.as_object_mut().expect("the options are an object").remove("metadata");
    options["keyLayout"] = json!("{platform}/{browser}/{run}/{file}");
    schema["stores"].as_array_mut().expect("a list of stores").push(json!({
        "name": "results-meta", "keyPath": "name",
        "indexes": [
            {"name": "platform, browser", "keyPath": ["metadata.platform", "metadata.browser"]},
            {"name": "run", "keyPath": ["metadata.run", "metadata.platform", "metadata.browser"]}],
        "Sync": {"format": "objstore-meta", "prefetch": "meta", "Options": options}}));
    schema
}

/// The documents' store in `target`'s bucket: mutable objects, written conditionally.
pub fn documents_schema(target: &Target) -> Value {
    json!({"stores": [{"name": DOCUMENTS_STORE, "Sync": {"format": "objstore", "Options": target.options()}}]})
}
