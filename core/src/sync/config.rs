//! A store's `Sync` block: the seed's fields as-is (`format`, `immutable`, `prefetch`,
//! `prefetchRefractoryPeriod`, `Options.bucket`, `Options.prefix`) and our extensions inside
//! `Options`. Unknown fields are errors, so a misspelt option fails at open.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::bucket::connection::{Addressing, Connection, Credentials, Location};
use crate::bucket::profile::Profile;
use crate::bucket::ListVersion;
use crate::database::{MechanismKind, OpenOptions};
use crate::error::{Error, Result};
use crate::hook::{Mirroring, WriteHook};
use crate::keypath::KeyPath;
use crate::mechanism::Durability;
use crate::replica::hook::Replica;
use crate::replica::policy::{parse_layout, ChangeLogConfig, CheckpointConfig, Format, Prefetch, StorePolicy};
use crate::schema::{Schema, Secrets};
use crate::sync::checkpoint;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SyncBlock {
    format: Format,
    #[serde(default)]
    immutable: bool,
    #[serde(default)]
    prefetch: Option<Prefetch>,
    #[serde(default, rename = "prefetchRefractoryPeriod")]
    prefetch_refractory_period: Option<u64>,
    #[serde(default, rename = "Options")]
    options: OptionsBlock,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct OptionsBlock {
    bucket: Option<String>,
    #[serde(default)]
    prefix: String,
    endpoint: Option<String>,
    addressing: Option<Addressing>,
    region: Option<String>,
    metadata_prefix: Option<String>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    session_token: Option<String>,
    #[serde(default)]
    anonymous: bool,
    timeout_ms: Option<u64>,
    retries: Option<u32>,
    retry_base_ms: Option<u64>,
    concurrency: Option<usize>,
    list_version: Option<u8>,
    #[serde(default)]
    list_metadata: bool,
    conditional_writes: Option<bool>,
    key_layout: Option<String>,
    #[serde(default)]
    metadata: Vec<String>,
    max_object_bytes: Option<u64>,
    #[serde(default)]
    insecure_tls: bool,
    ca_file: Option<String>,
    #[serde(default)]
    change_log: bool,
    relist_every_ms: Option<u64>,
    change_log_window_ms: Option<u64>,
    #[serde(default)]
    checkpoints: bool,
    checkpoint_heads: Option<usize>,
    checkpoint_range_objects: Option<usize>,
}

/// A store's sync settings, checked and with defaults filled in: what the store keeps, and
/// where its bucket is.
#[derive(Debug, Clone)]
pub struct SyncConfig {
    pub policy: StorePolicy,
    pub connection: Connection,
}

const DEFAULT_REFRACTORY_MS: u64 = 5000;
const DEFAULT_MAX_OBJECT_BYTES: u64 = 16 * 1024 * 1024;
const DEFAULT_RELIST_EVERY_MS: u64 = 60 * 60 * 1000;
const DEFAULT_CHANGE_LOG_WINDOW_MS: u64 = 60 * 1000;

impl SyncConfig {
    /// Reads a store's `Sync` block; `env` looks up environment variables (the standard `AWS_*`
    /// ones) so that tests can pass their own.
    pub fn from_json(store: &str, block: &Value, env: &dyn Fn(&str) -> Option<String>) -> Result<SyncConfig> {
        let bad = |why: String| Error::InvalidSchema(format!("store {store:?}, Sync: {why}"));
        let block: SyncBlock =
            serde_json::from_value(block.clone()).map_err(|e| bad(crate::error::in_schema_words(&e)))?;
        let o = block.options;
        // The shared AWS files are read only when the block and the variables leave something open.
        let profile = OnceCell::new();
        let from_profile = |key: &str| -> Result<Option<String>> {
            if profile.get().is_none() {
                let _ = profile.set(Profile::from_env(env).map_err(bad)?);
            }
            Ok(profile.get().and_then(|p: &Profile| p.get(key)))
        };
        let endpoint = o.endpoint.clone().or_else(|| env("AWS_ENDPOINT_URL_S3")).or_else(|| env("AWS_ENDPOINT_URL"));
        let endpoint = match endpoint.map_or_else(|| from_profile("endpoint_url"), |e| Ok(Some(e)))? {
            Some(e) => e.trim_end_matches('/').to_string(),
            None => format!("https://s3.{}.amazonaws.com", region_from(&o.region, env, &from_profile)?),
        };
        let local = endpoint.starts_with("file://");
        if !["http://", "https://", "file://"].iter().any(|s| endpoint.starts_with(s)) {
            return Err(bad(format!("endpoint {endpoint:?} must start with http://, https:// or file://")));
        }
        if block.format != Format::Rest && o.bucket.as_deref().is_none_or(str::is_empty) {
            return Err(bad("Options.bucket is required for the objstore formats".into()));
        }
        if block.format == Format::Rest && block.prefetch.is_some() {
            return Err(bad("the rest format has no listing, so prefetch cannot be used with it".into()));
        }
        if block.format == Format::ObjstoreMeta && !o.metadata.is_empty() {
            return Err(bad(
                "Options.metadata names fields to send on writes; objstore-meta stores are read-only".into()
            ));
        }
        let list_version = match o.list_version {
            None | Some(2) => ListVersion::V2,
            Some(1) => ListVersion::V1,
            Some(other) => return Err(bad(format!("Options.listVersion is {other}; use 1 or 2"))),
        };
        let credentials = if o.anonymous {
            None
        } else {
            match (o.access_key_id, o.secret_access_key) {
                (Some(id), Some(secret)) => {
                    Some(Credentials { access_key_id: id, secret_access_key: secret, session_token: o.session_token })
                }
                (Some(_), None) | (None, Some(_)) => {
                    return Err(bad("give both Options.accessKeyId and Options.secretAccessKey, or neither".into()))
                }
                (None, None) if local => None,
                (None, None) => match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
                    (Some(id), Some(secret)) => Some(Credentials {
                        access_key_id: id,
                        secret_access_key: secret,
                        session_token: env("AWS_SESSION_TOKEN"),
                    }),
                    _ => match (from_profile("aws_access_key_id")?, from_profile("aws_secret_access_key")?) {
                        (Some(id), Some(secret)) => Some(Credentials {
                            access_key_id: id,
                            secret_access_key: secret,
                            session_token: from_profile("aws_session_token")?,
                        }),
                        _ => None,
                    },
                },
            }
        };
        // A directory has no region, and needs no profile.
        let region = if local { String::new() } else { region_from(&o.region, env, &from_profile)? };
        let concurrency = o.concurrency.unwrap_or(8);
        if concurrency == 0 || concurrency > 256 {
            return Err(bad(format!("Options.concurrency is {concurrency}; use 1 to 256")));
        }
        let key_layout = o.key_layout.as_deref().map(parse_layout).transpose().map_err(bad)?;
        let custom_endpoint = !endpoint.ends_with(".amazonaws.com");
        if (o.relist_every_ms.is_some() || o.change_log_window_ms.is_some()) && !o.change_log {
            return Err(bad(
                "Options.relistEveryMs and Options.changeLogWindowMs apply only with Options.changeLog: true".into(),
            ));
        }
        let tuned = o.checkpoint_heads.is_some() || o.checkpoint_range_objects.is_some();
        if (o.checkpoints || tuned) && !o.change_log {
            return Err(bad(
                "Options.checkpoints, checkpointHeads and checkpointRangeObjects apply only with Options.changeLog: \
                 true (a reader goes on from a checkpoint through the change log)"
                    .into(),
            ));
        }
        if tuned && !o.checkpoints {
            return Err(bad(
                "Options.checkpointHeads and checkpointRangeObjects apply only with checkpoints: true".into()
            ));
        }
        let heads_per_pair = o.checkpoint_heads.unwrap_or(checkpoint::DEFAULT_HEADS_PER_PAIR);
        if !(1..=10_000).contains(&heads_per_pair) {
            return Err(bad(format!("Options.checkpointHeads is {heads_per_pair}; use 1 to 10000")));
        }
        let range_objects = o.checkpoint_range_objects.unwrap_or(checkpoint::DEFAULT_RANGE_OBJECTS);
        if !(1..=100_000).contains(&range_objects) {
            return Err(bad(format!("Options.checkpointRangeObjects is {range_objects}; use 1 to 100000")));
        }
        if o.change_log && block.format == Format::Rest {
            return Err(bad("the rest format has no listing, so it cannot keep a change log".into()));
        }
        let change_log = o.change_log.then(|| ChangeLogConfig {
            prefix: format!("{}{}", o.prefix, crate::sync::changelog::DIR),
            relist_every: Duration::from_millis(o.relist_every_ms.unwrap_or(DEFAULT_RELIST_EVERY_MS)),
            window: Duration::from_millis(o.change_log_window_ms.unwrap_or(DEFAULT_CHANGE_LOG_WINDOW_MS)),
            checkpoints: o.checkpoints.then(|| CheckpointConfig {
                prefix: format!("{}{}", o.prefix, checkpoint::DIR),
                heads_per_pair,
                range_objects,
            }),
        });
        let objects_at = format!("{:?} {endpoint} {:?} {}", block.format, o.bucket, o.prefix);
        let policy = StorePolicy {
            in_directory: local,
            objects_at,
            format: block.format,
            immutable: block.immutable,
            prefetch: block.prefetch,
            refractory: Duration::from_millis(block.prefetch_refractory_period.unwrap_or(DEFAULT_REFRACTORY_MS)),
            key_layout,
            metadata_fields: o.metadata,
            change_log,
        };
        let connection = Connection {
            location: Location { endpoint, bucket: o.bucket, prefix: o.prefix },
            rest: block.format == Format::Rest,
            addressing: o.addressing.unwrap_or(if custom_endpoint { Addressing::Path } else { Addressing::Virtual }),
            region,
            metadata_prefix: o.metadata_prefix.unwrap_or_else(|| "x-amz-meta-".into()).to_ascii_lowercase(),
            credentials_not_found: credentials.is_none() && !o.anonymous && !local && block.format != Format::Rest,
            credentials,
            timeout: Duration::from_millis(o.timeout_ms.unwrap_or(10_000)),
            retries: o.retries.unwrap_or(3),
            retry_base: Duration::from_millis(o.retry_base_ms.unwrap_or(100)),
            concurrency,
            list_version,
            list_metadata: o.list_metadata,
            conditional_writes: o.conditional_writes,
            max_object_bytes: o.max_object_bytes.unwrap_or(DEFAULT_MAX_OBJECT_BYTES),
            insecure_tls: o.insecure_tls,
            ca_file: o.ca_file,
        };
        Ok(SyncConfig { policy, connection })
    }
}

/// Every synced store's settings, read from its `Sync` block with the `secrets` given at open put
/// back (the error names the store and the field). Credentials missing there are found the way
/// the AWS tools find them.
pub fn configs(schema: &Schema, secrets: &Secrets) -> Result<HashMap<String, SyncConfig>> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut configs = HashMap::new();
    for store in &schema.stores {
        let Some(block) = &store.sync else { continue };
        let mut block = block.clone();
        if let (Some(given), Some(Value::Object(options))) = (secrets.get(&store.name), block.get_mut("Options")) {
            options.extend(given.clone());
        }
        let config = SyncConfig::from_json(&store.name, &block, &env)?;
        if config.policy.format == Format::ObjstoreMeta
            && store.key_path.as_ref().is_some_and(|p| *p != KeyPath::Single("name".into()))
        {
            return Err(Error::InvalidSchema(format!(
                "store {:?}: an objstore-meta store is keyed by object name: give it keyPath \"name\" or none",
                store.name
            )));
        }
        configs.insert(store.name.clone(), config);
    }
    Ok(configs)
}

/// Stores with a `Sync` block mirror their writes through the replica into their outbox.
#[derive(Debug, Default)]
pub struct Buckets;

impl Mirroring for Buckets {
    fn hook(&self, schema: &Schema, secrets: &Secrets) -> Result<Box<dyn WriteHook>> {
        let policies = configs(schema, secrets)?.into_iter().map(|(store, config)| (store, config.policy)).collect();
        Ok(Box::new(Replica::new(policies)))
    }
}

/// Opened with the default options, a database mirrors its synced stores' writes into their
/// outbox (see [`Buckets`]).
impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions {
            mechanism: MechanismKind::default(),
            durability: Durability::default(),
            mirroring: Arc::new(Buckets),
        }
    }
}

fn region_from(
    given: &Option<String>,
    env: &dyn Fn(&str) -> Option<String>,
    from_profile: &dyn Fn(&str) -> Result<Option<String>>,
) -> Result<String> {
    match given.clone().or_else(|| env("AWS_REGION")).or_else(|| env("AWS_DEFAULT_REGION")) {
        Some(region) => Ok(region),
        None => Ok(from_profile("region")?.unwrap_or_else(|| "us-east-1".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn accepts_the_seed_block_and_fills_defaults() {
        let block = json!({"format": "objstore", "immutable": true, "prefetch": "meta",
            "prefetchRefractoryPeriod": 250, "Options": {"bucket": "results", "prefix": "runs/"}});
        let c = SyncConfig::from_json("results", &block, &no_env).unwrap();
        assert_eq!(c.policy.format, Format::Objstore);
        assert!(c.policy.immutable);
        assert_eq!(c.policy.refractory, Duration::from_millis(250));
        assert_eq!(c.connection.location.endpoint, "https://s3.us-east-1.amazonaws.com");
        assert_eq!(c.connection.addressing, Addressing::Virtual);
        assert_eq!(c.connection.metadata_prefix, "x-amz-meta-");
        assert!(c.connection.credentials.is_none());
        assert!(c.connection.credentials_not_found, "a refusal will say none were found");
    }

    #[test]
    fn takes_credentials_and_endpoint_from_the_environment() {
        let env = |name: &str| match name {
            "AWS_ACCESS_KEY_ID" => Some("id".to_string()),
            "AWS_SECRET_ACCESS_KEY" => Some("secret".to_string()),
            "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:9000/".to_string()),
            "AWS_REGION" => Some("garage".to_string()),
            _ => None,
        };
        let c = SyncConfig::from_json("s", &json!({"format": "objstore", "Options": {"bucket": "b"}}), &env).unwrap();
        assert_eq!(c.connection.credentials.as_ref().unwrap().access_key_id, "id");
        assert_eq!(c.connection.location.endpoint, "http://127.0.0.1:9000");
        assert_eq!(c.connection.addressing, Addressing::Path);
        assert_eq!(c.connection.region, "garage");
        assert!(!c.connection.credentials_not_found);
        let anonymous = json!({"format": "objstore", "Options": {"bucket": "b", "anonymous": true}});
        let anonymous = SyncConfig::from_json("s", &anonymous, &env).unwrap().connection;
        assert!(anonymous.credentials.is_none() && !anonymous.credentials_not_found, "unsigned, as asked");
    }

    #[test]
    fn finds_endpoint_region_and_credentials_the_way_the_aws_tools_do() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::create_dir(dir.path().join(".aws")).unwrap();
        std::fs::write(
            dir.path().join(".aws/credentials"),
            "[ci]\naws_access_key_id = PROFILEID\naws_secret_access_key = p\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(".aws/config"),
            "[profile ci]\nregion = garage\nendpoint_url = http://127.0.0.1:3900\n",
        )
        .unwrap();
        let home = dir.path().display().to_string();
        let with = move |extra: &'static [(&'static str, &'static str)]| {
            let home = home.clone();
            move |name: &str| match name {
                "HOME" => Some(home.clone()),
                "AWS_PROFILE" => Some("ci".to_string()),
                _ => extra.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()),
            }
        };
        let block = json!({"format": "objstore", "Options": {"bucket": "b"}});
        let c = SyncConfig::from_json("s", &block, &with(&[])).unwrap();
        assert_eq!(c.connection.credentials.as_ref().unwrap().access_key_id, "PROFILEID");
        assert_eq!(
            (c.connection.location.endpoint.as_str(), c.connection.region.as_str()),
            ("http://127.0.0.1:3900", "garage")
        );
        let vars = with(&[
            ("AWS_ENDPOINT_URL", "http://generic:1"),
            ("AWS_ENDPOINT_URL_S3", "http://s3-only:2"),
            ("AWS_ACCESS_KEY_ID", "ENVID"),
            ("AWS_SECRET_ACCESS_KEY", "e"),
        ]);
        let c = SyncConfig::from_json("s", &block, &vars).unwrap();
        assert_eq!(c.connection.location.endpoint, "http://s3-only:2", "the S3-specific variable wins");
        assert_eq!(c.connection.credentials.as_ref().unwrap().access_key_id, "ENVID", "variables win over the files");
        let given =
            json!({"format": "objstore", "Options": {"bucket": "b", "accessKeyId": "GIVEN", "secretAccessKey": "g"}});
        assert_eq!(
            SyncConfig::from_json("s", &given, &vars).unwrap().connection.credentials.unwrap().access_key_id,
            "GIVEN"
        );
        let missing = |name: &str| (name == "AWS_PROFILE").then(|| "nowhere".to_string());
        let err = SyncConfig::from_json("s", &block, &missing).unwrap_err().to_string();
        assert!(err.contains("\"nowhere\""), "{err}");
        let local = json!({"format": "objstore", "Options": {"bucket": "b", "endpoint": "file:///tmp/x"}});
        assert!(SyncConfig::from_json("s", &local, &missing).is_ok(), "a directory needs no profile");
    }

    #[test]
    fn rejects_bad_blocks_naming_the_store_and_field() {
        for (block, expect) in [
            (json!({"format": "objstore", "Options": {"bucket": "b", "bukket": 1}}), "bukket"),
            (json!({"format": "s3", "Options": {"bucket": "b"}}), "s3"),
            (json!({"format": "objstore"}), "bucket"),
            (json!({"format": "rest", "prefetch": "meta"}), "no listing"),
            (json!({"format": "objstore", "Options": {"bucket": "b", "endpoint": "ftp://x"}}), "ftp"),
            (json!({"format": "objstore", "Options": {"bucket": "b", "listVersion": 3}}), "listVersion"),
            (json!({"format": "objstore", "Options": {"bucket": "b", "accessKeyId": "x"}}), "both"),
            (json!({"format": "objstore", "Options": {"bucket": "b", "keyLayout": "{a}x/{b}"}}), "whole segment"),
            (json!({"format": "objstore", "prefetch": "some", "Options": {"bucket": "b"}}), "some"),
            (json!({"format": "objstore", "Options": {"bucket": "b", "relistEveryMs": 5}}), "changeLog"),
            (json!({"format": "rest", "Options": {"changeLog": true}}), "change log"),
        ] {
            let err = SyncConfig::from_json("s", &block, &no_env).unwrap_err().to_string();
            assert!(err.contains("store \"s\"") && err.contains(expect), "{block}: {err}");
        }
    }

    #[test]
    fn reads_fields_from_names_by_the_key_layout() {
        let block = json!({"format": "objstore-meta",
            "Options": {"bucket": "b", "keyLayout": "{platform}/{browser}/runs/{ts}"}});
        let c = SyncConfig::from_json("m", &block, &no_env).unwrap();
        let fields = c.policy.layout_fields("linux-x64/node-20/runs/0042");
        assert_eq!(fields[0], ("platform".to_string(), "linux-x64".to_string()));
        assert_eq!(fields[2], ("ts".to_string(), "0042".to_string()));
        assert!(c.policy.layout_fields("linux-x64/node-20/other/0042").is_empty());
        assert!(c.policy.layout_fields("too/short").is_empty());
    }
}
