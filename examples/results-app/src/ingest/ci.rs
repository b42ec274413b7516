//! Which CI run a report belongs to, read from the CI's own environment (GitHub Actions, GitLab
//! CI, Buildkite, CircleCI, Jenkins, Azure Pipelines): its run id and attempt, commit, branch,
//! job and page. Every file posted from one run and attempt names the same run, whichever job
//! posts it, and the views show them as one run.

use crate::model::{short_hash, Ci, MAX_LABEL};

/// The CI run this process is part of, read through `var`; empty outside a CI this knows.
pub fn detect(var: &dyn Fn(&str) -> Option<String>) -> Ci {
    // Trimmed, as the pytest plugin and the node reporter read them: the same run id everywhere.
    let v = |name: &str| var(name).map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let all = |names: &[&str]| names.iter().map(|n| v(n)).collect::<Option<Vec<String>>>();
    if v("GITHUB_ACTIONS").is_some() {
        let attempt = v("GITHUB_RUN_ATTEMPT").unwrap_or_else(|| "1".into());
        let page = all(&["GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"])
            .map(|p| format!("{}/{}/actions/runs/{}/attempts/{attempt}", p[0], p[1], p[2]));
        return Ci {
            run: v("GITHUB_RUN_ID").map(|id| run_id("github", &[&id, &attempt])),
            commit: v("GITHUB_SHA"),
            // A pull request's branch is its head; GITHUB_REF_NAME is then "123/merge".
            branch: v("GITHUB_HEAD_REF").or_else(|| v("GITHUB_REF_NAME")),
            url: page,
            job: v("GITHUB_JOB"),
            file: None,
            rerun: false,
        };
    }
    if v("GITLAB_CI").is_some() {
        // GitLab names no attempt: a retried job's files join its pipeline's run.
        return Ci {
            run: v("CI_PIPELINE_ID").map(|id| run_id("gitlab", &[&id])),
            commit: v("CI_COMMIT_SHA"),
            branch: v("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME").or_else(|| v("CI_COMMIT_REF_NAME")),
            url: v("CI_JOB_URL").or_else(|| v("CI_PIPELINE_URL")),
            job: v("CI_JOB_NAME"),
            file: None,
            rerun: false,
        };
    }
    if v("BUILDKITE").is_some() {
        let attempt = v("BUILDKITE_RETRY_COUNT").unwrap_or_else(|| "0".into());
        return Ci {
            run: v("BUILDKITE_BUILD_ID").map(|id| run_id("buildkite", &[&id, &attempt])),
            commit: v("BUILDKITE_COMMIT"),
            branch: v("BUILDKITE_BRANCH"),
            url: v("BUILDKITE_BUILD_URL"),
            job: v("BUILDKITE_LABEL"),
            file: None,
            rerun: false,
        };
    }
    if v("CIRCLECI").is_some() {
        // A rerun workflow has a workflow id of its own.
        return Ci {
            run: v("CIRCLE_WORKFLOW_ID").map(|id| run_id("circleci", &[&id])),
            commit: v("CIRCLE_SHA1"),
            branch: v("CIRCLE_BRANCH"),
            url: v("CIRCLE_BUILD_URL"),
            job: v("CIRCLE_JOB"),
            file: None,
            rerun: false,
        };
    }
    if v("JENKINS_URL").is_some() {
        // BUILD_TAG is `jenkins-<job>-<build number>`: a rebuild is a new number.
        return Ci {
            run: v("BUILD_TAG").map(|tag| run_id("jenkins", &[&tag])),
            commit: v("GIT_COMMIT"),
            branch: v("BRANCH_NAME").or_else(|| v("GIT_BRANCH")),
            url: v("BUILD_URL"),
            job: v("JOB_NAME"),
            file: None,
            rerun: false,
        };
    }
    if v("TF_BUILD").is_some() {
        let attempt = v("SYSTEM_JOBATTEMPT").unwrap_or_else(|| "1".into());
        let page = all(&["SYSTEM_COLLECTIONURI", "SYSTEM_TEAMPROJECT", "BUILD_BUILDID"])
            .map(|p| format!("{}/{}/_build/results?buildId={}", p[0].trim_end_matches('/'), p[1], p[2]));
        return Ci {
            run: v("BUILD_BUILDID").map(|id| run_id("azure", &[&id, &attempt])),
            commit: v("BUILD_SOURCEVERSION"),
            branch: v("SYSTEM_PULLREQUEST_SOURCEBRANCH")
                .or_else(|| v("BUILD_SOURCEBRANCH"))
                .map(|b| b.trim_start_matches("refs/heads/").to_string()),
            url: page,
            job: v("SYSTEM_JOBDISPLAYNAME"),
            file: None,
            rerun: false,
        };
    }
    Ci::default()
}

/// A run id from a CI's own: `github-9876543210-1`. One that is not a label as it stands (too
/// long, or holding `/` or spaces, as a Jenkins job name may) keeps a readable start and a hash
/// of the whole, so that two ids never meet.
fn run_id(provider: &str, parts: &[&str]) -> String {
    let raw = format!("{provider}-{}", parts.join("-"));
    let clean: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' }).collect();
    if clean == raw && raw.len() <= MAX_LABEL {
        return raw;
    }
    format!("{}-{:016x}", &clean[..clean.len().min(MAX_LABEL - 17)], short_hash(raw.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::check_label;
    use std::collections::HashMap;

    fn ci_of(vars: &[(&str, &str)]) -> Ci {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        detect(&|name| vars.get(name).cloned())
    }

    /// Each CI's run, attempt, commit, branch, job and page, as its documentation names them.
    #[test]
    fn every_ci_names_its_run() {
        let github = ci_of(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_RUN_ID", "9876543210"),
            ("GITHUB_RUN_ATTEMPT", "2"),
            ("GITHUB_SHA", "0123abcd"),
            ("GITHUB_REF_NAME", "42/merge"),
            ("GITHUB_HEAD_REF", "fix-cursor"),
            ("GITHUB_SERVER_URL", "https://github.com"),
            ("GITHUB_REPOSITORY", "team/db"),
            ("GITHUB_JOB", "test"),
        ]);
        assert_eq!(github.run.as_deref(), Some("github-9876543210-2"));
        assert_eq!(github.branch.as_deref(), Some("fix-cursor"));
        assert_eq!(github.url.as_deref(), Some("https://github.com/team/db/actions/runs/9876543210/attempts/2"));
        github.check().unwrap();
        let gitlab = ci_of(&[
            ("GITLAB_CI", "true"),
            ("CI_PIPELINE_ID", "77"),
            ("CI_COMMIT_REF_NAME", "main"),
            ("CI_JOB_URL", "https://gitlab.example/p/-/jobs/5"),
        ]);
        assert_eq!((gitlab.run.as_deref(), gitlab.branch.as_deref()), (Some("gitlab-77"), Some("main")));
        let azure = ci_of(&[
            ("TF_BUILD", "True"),
            ("BUILD_BUILDID", "300"),
            ("BUILD_SOURCEBRANCH", "refs/heads/release/2"),
            ("SYSTEM_COLLECTIONURI", "https://dev.azure.com/org/"),
            ("SYSTEM_TEAMPROJECT", "db"),
        ]);
        assert_eq!(azure.run.as_deref(), Some("azure-300-1"));
        assert_eq!(azure.branch.as_deref(), Some("release/2"));
        assert_eq!(azure.url.as_deref(), Some("https://dev.azure.com/org/db/_build/results?buildId=300"));
        assert_eq!(
            ci_of(&[("BUILDKITE", "true"), ("BUILDKITE_BUILD_ID", "u-1")]).run.as_deref(),
            Some("buildkite-u-1-0")
        );
        assert_eq!(ci_of(&[("CIRCLECI", "true"), ("CIRCLE_WORKFLOW_ID", "w")]).run.as_deref(), Some("circleci-w"));
        assert!(ci_of(&[("PATH", "/bin")]).is_empty(), "outside CI: nothing");
    }

    /// A Jenkins tag with a folder and spaces, or an overlong id, is still a label, and two
    /// that clean to the same text stay apart.
    #[test]
    fn run_ids_are_labels_and_stay_apart() {
        let a = ci_of(&[("JENKINS_URL", "http://j/"), ("BUILD_TAG", "jenkins-team/db main-12")]).run.unwrap();
        let b = ci_of(&[("JENKINS_URL", "http://j/"), ("BUILD_TAG", "jenkins-team-db-main-12")]).run.unwrap();
        check_label("run", &a).unwrap();
        // The pytest plugin and the node reporter make the same (their tests pin this value).
        assert_eq!(a, "jenkins-jenkins-team-db-main-12-f4dba2926d3b141c");
        assert_ne!(a, b);
        assert!(a.starts_with("jenkins-jenkins-team-db-main-12-"), "{a}");
        let long = run_id("github", &[&"9".repeat(80)]);
        assert!(long.len() <= MAX_LABEL, "{long}");
        check_label("run", &long).unwrap();
    }
}
