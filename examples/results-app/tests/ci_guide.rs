//! The README's CI guide, tried: each publishing step it shows (GitHub Actions, a fork's pull
//! request, GitLab CI, a shell script) runs as written, with bash, against a `file://` bucket,
//! with the CI's variables set and its `${{ }}` expressions filled in; the run it leaves and the
//! summary it writes are checked.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// The fenced block that follows `<!-- ci-guide: NAME -->` in the app's README.
fn block(name: &str) -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let marker = format!("<!-- ci-guide: {name} -->");
    let after = &readme[readme.find(&marker).unwrap_or_else(|| panic!("the README has no {marker}"))..];
    let body = &after[after.find("```").unwrap()..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].to_string()
}

/// The script of a GitHub Actions step named `step`: its `run: |` lines, dedented.
fn github_step(yaml: &str, step: &str) -> String {
    let lines: Vec<&str> = yaml.lines().collect();
    let named = lines.iter().position(|l| l.trim() == format!("- name: {step}")).expect("the step");
    let run = named + lines[named..].iter().position(|l| l.trim() == "run: |").expect("its run: |");
    let indent = |l: &str| l.len() - l.trim_start().len();
    let inner = indent(lines[run]);
    let script: Vec<&str> =
        lines[run + 1..].iter().take_while(|l| l.trim().is_empty() || indent(l) > inner).copied().collect();
    let margin = script.iter().filter(|l| !l.trim().is_empty()).map(|l| indent(l)).min().unwrap_or(0);
    script.iter().map(|l| l.get(margin..).unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The commands of a GitLab job's `after_script:` list.
fn gitlab_after_script(yaml: &str) -> String {
    let lines: Vec<&str> = yaml.lines().collect();
    let start = lines.iter().position(|l| l.trim() == "after_script:").expect("an after_script");
    lines[start + 1..].iter().map_while(|l| l.trim().strip_prefix("- ")).collect::<Vec<_>>().join("\n")
}

/// `${{ expression }}` replaced by its value in `values`.
fn fill(script: &str, values: &HashMap<&str, &str>) -> String {
    let mut out = String::new();
    let mut rest = script;
    while let Some(start) = rest.find("${{") {
        let end = rest[start..].find("}}").unwrap() + start;
        let expression = rest[start + 3..end].trim();
        out.push_str(&rest[..start]);
        out.push_str(values.get(expression).unwrap_or_else(|| panic!("no value for ${{{{ {expression} }}}}")));
        rest = &rest[end + 2..];
    }
    out + rest
}

/// Runs `script` with bash in a folder holding two reports, the app on `PATH` and `env` set
/// (no other CI's variables); the bucket's folder, the script's output and its step summary.
fn run(script: &str, env: &[(&str, &str)]) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (from, to) in [("pytest-9.xml", "pytest.xml"), ("pytest-xdist.xml", "pytest-shard-2.xml")] {
        std::fs::copy(fixtures.join(from), reports.join(to)).unwrap();
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_objstore-results")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let summary = dir.path().join("step-summary.md");
    let mut command = Command::new("bash");
    command.args(["-euo", "pipefail", "-c", script]).current_dir(dir.path());
    for marker in support::CI_MARKERS.iter().chain(&["OBJSTORE_RESULTS_PREFIX", "OBJSTORE_RESULTS_BUCKET"]) {
        command.env_remove(marker);
    }
    command
        .env("PATH", path)
        .env("OBJSTORE_RESULTS", format!("file://{}", dir.path().join("bucket").display()))
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env("GITHUB_STEP_SUMMARY", &summary)
        .envs(env.iter().copied());
    let out = command.output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the script failed:\n{script}\n{said}");
    let summary = std::fs::read_to_string(&summary).unwrap_or_default();
    (dir, String::from_utf8_lossy(&out.stdout).to_string(), summary)
}

/// The run segments of the runs in the bucket, and how many files each holds.
fn runs(dir: &Path) -> HashMap<String, usize> {
    let mut runs = HashMap::new();
    for key in support::stored(&dir.join("bucket")).keys() {
        *runs.entry(key.split('/').nth(2).unwrap().to_string()).or_default() += 1;
    }
    runs
}

const GITHUB: [(&str, &str); 6] = [
    ("GITHUB_ACTIONS", "true"),
    ("GITHUB_RUN_ID", "4242"),
    ("GITHUB_RUN_ATTEMPT", "1"),
    ("GITHUB_SHA", "0123456789abcdef0123456789abcdef01234567"),
    ("GITHUB_SERVER_URL", "https://github.com"),
    ("GITHUB_REPOSITORY", "team/db"),
];

#[test]
fn github_actions_publishes_one_run_and_writes_the_job_summary() {
    let values = HashMap::from([("vars.RESULTS_PAGE", "https://results.example/")]);
    let script = fill(&github_step(&block("github"), "Publish the results"), &values);
    let (dir, _, summary) = run(&script, &GITHUB);
    let runs = runs(dir.path());
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs.keys().all(|r| r.ends_with("-github-4242-1")), "{runs:?}");
    assert_eq!(runs.values().sum::<usize>(), 2);
    assert!(summary.starts_with("### Test results of GitHub run 4242\n"), "{summary}");
    assert!(summary.contains("](https://results.example/?view=run&key="), "{summary}");
    assert!(summary.contains("**Failures**") && summary.contains("bucket request"), "{summary}");
}

#[test]
fn a_forks_reports_are_posted_by_the_trusted_workflow_as_its_run() {
    let values = HashMap::from([
        ("github.event.workflow_run.id", "777"),
        ("github.event.workflow_run.run_attempt", "2"),
        ("github.event.workflow_run.head_sha", "fedcba9876543210fedcba9876543210fedcba98"),
    ]);
    let script = fill(&github_step(&block("github-fork"), "Publish the results"), &values);
    // The trusted workflow is a run of its own: its own id must not name the files.
    let (dir, _, summary) = run(&script, &GITHUB);
    let runs = runs(dir.path());
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs.keys().all(|r| r.ends_with("-github-777-2")), "{runs:?}");
    let stored = support::stored(&dir.path().join("bucket"));
    assert!(stored.values().all(|r| r["ci"]["commit"] == "fedcba9876543210fedcba9876543210fedcba98"));
    assert!(summary.starts_with("### Test results of GitHub run 777, attempt 2\n"), "{summary}");
}

#[test]
fn gitlab_ci_publishes_the_pipelines_run() {
    let script = gitlab_after_script(&block("gitlab"));
    let env = [("GITLAB_CI", "true"), ("CI_PIPELINE_ID", "91"), ("CI_COMMIT_SHA", "abcdef0123456789")];
    let (dir, out, _) = run(&script, &env);
    let runs = runs(dir.path());
    assert!(runs.len() == 1 && runs.keys().all(|r| r.ends_with("-gitlab-91")), "{runs:?}");
    assert!(out.contains("Test results of GitLab pipeline 91\n"), "{out}");
}

#[test]
fn a_shell_script_names_its_run_itself() {
    let (dir, out, _) = run(&block("shell"), &[]);
    let runs = runs(dir.path());
    assert!(runs.len() == 1 && runs.keys().all(|r| r.contains("-nightly-")), "{runs:?}");
    assert!(out.contains("Test results of run nightly-") && out.contains("c-gcc-13"), "{out}");
}

/// The collector-only job: the script reaches no bucket (its variables are unset), the runs land
/// in the collector's, and the summary is read back through it.
#[test]
fn a_job_with_only_a_collector_publishes_and_summarizes_through_it() {
    let served = tempfile::tempdir().unwrap();
    let token = "github-collector-token-01";
    let mut serve = support::app(served.path(), &["serve", "--listen", "127.0.0.1:0", "--token", token]);
    let mut child = serve.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().trim_end_matches("/results").to_string();
    let values = HashMap::from([("vars.RESULTS_COLLECTOR", url.as_str()), ("secrets.RESULTS_TOKEN", token)]);
    let script = fill(&github_step(&block("github-collector"), "Publish the results"), &values);
    // The step's env: block, as GitHub sets it (the harness runs only its run: lines).
    let script = format!("unset OBJSTORE_RESULTS\n{script}");
    let env: Vec<(&str, &str)> = GITHUB
        .iter()
        .copied()
        .chain([("OBJSTORE_COLLECTOR", url.as_str()), ("OBJSTORE_COLLECTOR_TOKEN", token)])
        .collect();
    let (dir, _, summary) = run(&script, &env);
    let _ = child.kill();
    let _ = child.wait();
    let made: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(!dir.path().join("bucket").exists() && !dir.path().join("results").exists(), "no bucket reached: {made:?}");
    let runs = runs(served.path());
    assert!(runs.len() == 1 && runs.keys().all(|r| r.ends_with("-github-4242-1")), "{runs:?}");
    assert!(summary.starts_with("### Test results of GitHub run 4242\n"), "{summary}");
}
