//! The shared AWS files, read the way the AWS tools read them: the profile `AWS_PROFILE` (or
//! `AWS_DEFAULT_PROFILE`) names, `default` otherwise; its section of the credentials file
//! (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`), then of the config file
//! (`AWS_CONFIG_FILE`, else `~/.aws/config`, where sections are `[profile name]` but for
//! `[default]`). Settings nested under a service (`s3 =` with indented lines) are skipped.

use std::collections::HashMap;

/// The settings of one profile, credentials file first.
#[derive(Debug, Default)]
pub struct Profile {
    settings: HashMap<String, String>,
}

impl Profile {
    /// The profile the environment names. A profile named explicitly that neither file holds is
    /// an error; the `default` profile may be absent (then it is empty).
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Profile, String> {
        let named = env("AWS_PROFILE").or_else(|| env("AWS_DEFAULT_PROFILE"));
        let name = named.clone().unwrap_or_else(|| "default".into());
        let home = env("HOME").unwrap_or_default();
        let file = |var: &str, default: &str| env(var).unwrap_or_else(|| format!("{home}/.aws/{default}"));
        let credentials = file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
        let config = file("AWS_CONFIG_FILE", "config");
        let mut settings = HashMap::new();
        let mut found = false;
        for (path, section) in [(&credentials, name.clone()), (&config, config_section(&name))] {
            let text = match std::fs::read_to_string(path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(format!("reading the AWS file {path}: {e}")),
            };
            if let Some(values) = section_of(&text, &section) {
                found = true;
                for (k, v) in values {
                    settings.entry(k).or_insert(v);
                }
            }
        }
        match named {
            Some(name) if !found => {
                Err(format!("AWS_PROFILE names the profile {name:?}, which neither {credentials} nor {config} holds"))
            }
            _ => Ok(Profile { settings }),
        }
    }

    pub fn get(&self, key: &str) -> Option<String> {
        self.settings.get(key).filter(|v| !v.is_empty()).cloned()
    }
}

fn config_section(profile: &str) -> String {
    if profile == "default" {
        "default".into()
    } else {
        format!("profile {profile}")
    }
}

/// The `key = value` lines of `[section]`, or `None` when the text has no such section.
fn section_of(text: &str, section: &str) -> Option<Vec<(String, String)>> {
    let mut values = None;
    for line in text.lines() {
        let nested = line.starts_with([' ', '\t']);
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            if values.is_some() {
                break;
            }
            if name == section || (section == "default" && name == "profile default") {
                values = Some(Vec::new());
            }
            continue;
        }
        if let (Some(values), false, Some((k, v))) = (values.as_mut(), nested, line.split_once('=')) {
            values.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREDENTIALS: &str = "[default]\naws_access_key_id = DEFAULTID\naws_secret_access_key = dsecret\n\n\
        # a comment\n[work]\naws_access_key_id=WORKID\naws_secret_access_key = wsecret\naws_session_token = wtoken\n";
    const CONFIG: &str =
        "[default]\nregion = eu-west-1\n[profile work]\nregion = garage\nendpoint_url = http://127.0.0.1:3900\n\
        s3 =\n  addressing_style = path\n  endpoint_url = http://nested\n[profile other]\nregion = x\n";

    fn files() -> (tempfile::TempDir, String, String) {
        let dir = tempfile::TempDir::new().unwrap();
        let (c, f) = (dir.path().join("credentials"), dir.path().join("config"));
        std::fs::write(&c, CREDENTIALS).unwrap();
        std::fs::write(&f, CONFIG).unwrap();
        (dir, c.display().to_string(), f.display().to_string())
    }

    fn env_with(vars: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn reads_the_named_profile_from_both_files() {
        let (_dir, credentials, config) = files();
        let env = env_with(vec![
            ("AWS_PROFILE", "work".into()),
            ("AWS_SHARED_CREDENTIALS_FILE", credentials),
            ("AWS_CONFIG_FILE", config),
        ]);
        let p = Profile::from_env(&env).unwrap();
        assert_eq!(p.get("aws_access_key_id").as_deref(), Some("WORKID"));
        assert_eq!(p.get("aws_session_token").as_deref(), Some("wtoken"));
        assert_eq!(p.get("region").as_deref(), Some("garage"));
        assert_eq!(p.get("endpoint_url").as_deref(), Some("http://127.0.0.1:3900"), "not the nested s3 one");
        assert_eq!(p.get("addressing_style"), None);
    }

    #[test]
    fn the_default_profile_lives_in_home_and_may_be_absent() {
        let dir = tempfile::TempDir::new().unwrap();
        let env = env_with(vec![("HOME", dir.path().display().to_string())]);
        assert_eq!(Profile::from_env(&env).unwrap().get("region"), None);
        std::fs::create_dir(dir.path().join(".aws")).unwrap();
        std::fs::write(dir.path().join(".aws/credentials"), CREDENTIALS).unwrap();
        std::fs::write(dir.path().join(".aws/config"), CONFIG).unwrap();
        let p = Profile::from_env(&env).unwrap();
        assert_eq!(p.get("aws_access_key_id").as_deref(), Some("DEFAULTID"));
        assert_eq!(p.get("region").as_deref(), Some("eu-west-1"));
    }

    #[test]
    fn a_named_profile_that_is_nowhere_is_an_error() {
        let (_dir, credentials, config) = files();
        let env = env_with(vec![
            ("AWS_PROFILE", "nope".into()),
            ("AWS_SHARED_CREDENTIALS_FILE", credentials),
            ("AWS_CONFIG_FILE", config),
        ]);
        let err = Profile::from_env(&env).unwrap_err();
        assert!(err.contains("\"nope\"") && err.contains("credentials"), "{err}");
    }
}
