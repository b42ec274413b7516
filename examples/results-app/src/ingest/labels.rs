//! What a run is labelled with beside its report: the command line's labels, the CI's own
//! environment where the command line says nothing, and this machine's platform where neither
//! does.

use crate::error::{AppError, AppResult};
use crate::model::{check_label, check_text, Ci};

use super::{ci, naming};

/// Labels given on the command line; each wins over what the report says.
#[derive(Debug, Default, Clone)]
pub struct Labels {
    pub platform: Option<String>,
    pub runtime: Option<String>,
    pub version: Option<String>,
    /// The suite of every test (`--suite`), whatever the report says.
    pub suite: Option<String>,
    /// The suite of a test whose report names none: the file's name, for `post`.
    pub default_suite: Option<String>,
    /// The CI run, commit, branch, page and job (`--run`, ..., else the CI's environment); the
    /// report's own (CTRF's `environment.commit`, `branchName`, `buildUrl`) fill what is missing.
    pub ci: Ci,
    /// Build-variant labels (`--label key=value`), added to the report's environment.
    pub extra: Vec<(String, String)>,
}

impl Labels {
    /// These labels for the report file `file`: its name is the suite of tests that name none
    /// (`crud.test.mjs` → `crud`).
    pub fn for_file(&self, file: &str) -> Labels {
        let name = std::path::Path::new(file).file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        // Up to its first dot: `crud.test.mjs`, `crud.xml` and `crud.junit.xml` are `crud`.
        let stem = name.split('.').next().unwrap_or_default().to_string();
        // A name that tells nothing (`tests.xml`) is still the file's.
        let suite = Some(naming::suite_name(Some(&stem), "")).filter(|s| !s.is_empty()).unwrap_or(stem.to_lowercase());
        let ci = Ci { file: Some(name).filter(|n| !n.is_empty()), ..self.ci.clone() };
        Labels { default_suite: Some(suite).filter(|s| !s.is_empty()), ci, ..self.clone() }
    }
}

/// A `--label key=value`: the key a label, the value a line of text.
pub fn parse_label(given: &str) -> AppResult<(String, String)> {
    let (key, value) =
        given.split_once('=').ok_or_else(|| AppError::bad(format!("--label {given:?} is not key=value")))?;
    check_label("--label key", key)?;
    check_text("--label value", value, 256)?;
    Ok((key.to_string(), value.to_string()))
}

/// The version of a run whose labels and report name none: the project's version is unknown
/// (objstore-results's own would be wrong on every view).
pub const UNVERSIONED: &str = "unversioned";

/// This machine as a platform label: `linux-x86_64`.
pub fn this_platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

impl Labels {
    /// The labels a job sets once for every publisher (`post`, `gate`, the pytest plugin, the
    /// node reporter): `OBJSTORE_RESULTS_PLATFORM`, `_RUNTIME` and `_VERSION`; options win.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Labels {
        let get = |name: &str| env(name).filter(|v| !v.is_empty());
        Labels {
            platform: get("OBJSTORE_RESULTS_PLATFORM"),
            runtime: get("OBJSTORE_RESULTS_RUNTIME"),
            version: get("OBJSTORE_RESULTS_VERSION"),
            ci: Ci { rerun: get("OBJSTORE_RESULTS_RERUN").is_some_and(|v| v != "0"), ..Ci::default() },
            ..Labels::default()
        }
    }

    /// Refuses a given platform, runtime or version the stored format cannot hold, naming the
    /// option (`--runtime "python 3.11" holds ' '`), before any report is read.
    pub fn check(&self) -> AppResult<()> {
        for (option, given) in
            [("--platform", &self.platform), ("--runtime", &self.runtime), ("--version", &self.version)]
        {
            if let Some(value) = given {
                check_label(option, value)?;
            }
        }
        Ok(())
    }

    /// Fills what the command line did not say of the run from `env` (the process's
    /// environment): `OBJSTORE_RESULTS_RUN`, else the CI's own run, commit, branch, page and job.
    /// Answers an error naming the option when a value is not one.
    pub fn fill_ci(&mut self, env: &dyn Fn(&str) -> Option<String>) -> AppResult<()> {
        let detected = ci::detect(env);
        let given = std::mem::take(&mut self.ci);
        let from_env = env("OBJSTORE_RESULTS_RUN").filter(|r| !r.is_empty());
        self.ci = Ci {
            run: given.run.or(from_env).or(detected.run),
            commit: given.commit.or(detected.commit),
            branch: given.branch.or(detected.branch),
            url: given.url.or(detected.url),
            job: given.job.or(detected.job),
            file: None,
            rerun: given.rerun,
        };
        self.ci.check().map_err(|mut e| {
            e.message = e.message.replace("ci.", "--");
            e
        })
    }
}
