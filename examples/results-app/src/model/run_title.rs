//! A CI run's name for people: `github-9876543210-1` is "GitHub run 9876543210, attempt 1".
//! The ids are the ones `post` makes from a CI's variables (`ingest/ci.rs`); any other id (one
//! given with `--run`) is "run <id>".

/// Each CI's prefix, its name, what it calls a run, and whether its id ends in an attempt.
const CIS: [(&str, &str, &str, bool); 6] = [
    ("github", "GitHub", "run", true),
    ("gitlab", "GitLab", "pipeline", false),
    ("buildkite", "Buildkite", "build", true),
    ("circleci", "CircleCI", "workflow", false),
    ("jenkins", "Jenkins", "build", false),
    ("azure", "Azure Pipelines", "run", true),
];

/// `name` (a CI run's id, `<id>@<scope>` for a scoped token's) as a title.
pub fn run_title(name: &str) -> String {
    let (id, scope) = match name.split_once('@') {
        Some((id, scope)) => (id, Some(scope)),
        None => (name, None),
    };
    let title = CIS
        .iter()
        .find_map(|(prefix, ci, run, attempts)| {
            let rest = id.strip_prefix(prefix)?.strip_prefix('-').filter(|rest| !rest.is_empty())?;
            Some(match rest.rsplit_once('-').filter(|(_, attempt)| *attempts && is_number(attempt)) {
                Some((number, attempt)) if attempt != "1" => format!("{ci} {run} {number}, attempt {attempt}"),
                Some((number, _)) => format!("{ci} {run} {number}"),
                None => format!("{ci} {run} {rest}"),
            })
        })
        .unwrap_or_else(|| format!("run {id}"));
    match scope {
        Some(scope) => format!("{title} (scope {scope})"),
        None => title,
    }
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::run_title;

    #[test]
    fn ci_runs_have_their_ci_words() {
        for (id, title) in [
            ("github-9876543210-1", "GitHub run 9876543210"),
            ("github-9876543210-2", "GitHub run 9876543210, attempt 2"),
            ("gitlab-77", "GitLab pipeline 77"),
            ("azure-300-1@0123456789ab", "Azure Pipelines run 300 (scope 0123456789ab)"),
            ("jenkins-db-main-12", "Jenkins build db-main-12"),
            ("nightly-2", "run nightly-2"),
            ("github-", "run github-"),
        ] {
            assert_eq!(run_title(id), title, "{id}");
        }
    }
}
