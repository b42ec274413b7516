//! Who may post: tokens asked of every poster, tokens scoped to pairs, pages let in without one,
//! and a scoped token's CI runs kept its own.

use super::*;

#[test]
fn tokens_are_asked_of_every_poster_whatever_origin_it_claims() {
    let c = Collector::start(&["--origin", PAGE], &[("OBJSTORE_COLLECTOR_TOKENS", "ci-secret-1, ci-secret-2".into())]);
    let body = run("linux-x86_64", "rust-1.95");
    assert_eq!(post_json(&c.url, &[("authorization", "bearer ci-secret-1")], &body).status, 201, "the scheme's case");
    let none = post_json(&c.url, &[], &body);
    assert_eq!((none.status, none.headers.get("www-authenticate").map(String::as_str)), (401, Some("Bearer")));
    assert_eq!(post_json(&c.url, &[("authorization", "Bearer wrong")], &body).status, 401);
    assert_eq!(post_json(&c.url, &[("authorization", "Bearer ci-secret-2")], &body).status, 201);
    // A script can claim an allowed origin: it proves nothing, so the token is still asked for.
    let claimed = post_json(&c.url, &[("origin", PAGE)], &body);
    assert_eq!(claimed.status, 401, "an allowed Origin does not stand in for a token");
    assert!(claimed.body["error"].as_str().unwrap().contains("bearer token is required"), "{:?}", claimed.body);
    assert_eq!(post_json(&c.url, &[("origin", PAGE), ("authorization", "Bearer wrong")], &body).status, 401);
    assert_eq!(post_json(&c.url, &[("origin", PAGE), ("authorization", "Bearer ci-secret-1")], &body).status, 201);
    assert_eq!(c.stored().len(), 3);
}

/// A token scoped to its pairs writes nothing outside them: a token leaked from one pipeline
/// cannot write another's results. A tokens file that names no pair, or a short token, is
/// refused at start, naming the line.
#[test]
fn tokens_scoped_to_pairs_write_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        "# token                 pairs it may write\n\
         linux-pipeline-secret-1  linux-*/python-*  linux-x86_64/node-20\n\
         windows-pipeline-secret  windows-*/c-msvc-*   # the MSVC builds\n",
    )
    .unwrap();
    let c = Collector::start(
        &["--tokens", &file.display().to_string()],
        &[("OBJSTORE_COLLECTOR_TOKENS", "admin-secret".into())],
    );
    let bearer = |t: &str| format!("Bearer {t}");
    for (token, platform, browser, status) in [
        ("linux-pipeline-secret-1", "linux-x86_64", "python-3.11", 201),
        ("linux-pipeline-secret-1", "linux-aarch64", "python-3.12", 201),
        ("linux-pipeline-secret-1", "linux-x86_64", "node-20", 201),
        ("linux-pipeline-secret-1", "linux-x86_64", "node-22", 403),
        ("linux-pipeline-secret-1", "windows-x86_64", "python-3.11", 403),
        ("windows-pipeline-secret", "windows-x86_64", "c-msvc-19", 201),
        ("windows-pipeline-secret", "linux-x86_64", "python-3.11", 403),
        ("admin-secret", "macos-arm64", "node-20", 201),
        ("unknown-secret-000000", "linux-x86_64", "python-3.11", 401),
    ] {
        let answer = post_json(&c.url, &[("authorization", &bearer(token))], &run(platform, browser));
        assert_eq!(answer.status, status, "{token} {platform}/{browser}: {}", answer.body);
        if status == 403 {
            let said = answer.body["error"].as_str().unwrap();
            assert!(said.contains(&format!("not {platform}/{browser}")) && said.contains("may write"), "{said}");
            assert_eq!(answer.body["field"], "platform");
        }
    }
    let stored: Vec<String> = c.stored().keys().map(|k| k.split('/').take(2).collect::<Vec<_>>().join("/")).collect();
    assert_eq!(stored.len(), 5, "{stored:?}");
    assert!(!stored.iter().any(|p| p == "windows-x86_64/python-3.11" || p == "linux-x86_64/node-22"), "{stored:?}");

    for (content, said) in [
        ("short 1 linux-*/python-*\n", "line 1: a token is 16 or more printable characters"),
        ("\n# only a comment\nlong-enough-secret-1\n", "line 3: name the pairs"),
        ("long-enough-secret-1 linux-x86_64\n", "\"linux-x86_64\" is not a platform/runtime pattern"),
        ("# nothing\n", "names no token"),
    ] {
        std::fs::write(&file, content).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_objstore-results"))
            .args(["serve", "--listen", "127.0.0.1:0", "--tokens", &file.display().to_string()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(said), "{content:?}: {stderr}");
    }
    // One secret both any-pair and scoped: refused at start, whichever would have won.
    std::fs::write(&file, "linux-pipeline-secret-1 linux-*/*\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_objstore-results"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--token",
            "linux-pipeline-secret-1",
            "--tokens",
            &file.display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("given twice"), "{out:?}");
}

#[test]
fn pages_post_without_a_token_only_when_explicitly_allowed() {
    let tokens = [("OBJSTORE_COLLECTOR_TOKENS", "ci-secret".to_string())];
    let c = Collector::start(&["--origin", PAGE, "--allow-anonymous-origins"], &tokens);
    let body = run("linux-x86_64", "rust-1.95");
    assert_eq!(post_json(&c.url, &[("origin", PAGE)], &body).status, 201, "an allowed page, let in without a token");
    assert_eq!(post_json(&c.url, &[], &body).status, 401, "a poster without an origin still needs one");
    assert_eq!(post_json(&c.url, &[("origin", "https://evil.example")], &body).status, 403);
    assert_eq!(c.stored().len(), 1);
    let alone = Command::new(env!("CARGO_BIN_EXE_objstore-results"))
        .args(["serve", "--allow-anonymous-origins"])
        .output()
        .unwrap();
    assert!(!alone.status.success());
    assert!(String::from_utf8_lossy(&alone.stderr).contains("give an --origin"), "{alone:?}");
}

/// A token scoped to some pairs joins only its own CI runs: another team's token posting the
/// same CI run id (ids are public and sequential) makes a run of its own, anchored at its own
/// first file, so that it neither adds files to the first team's run (its summary, its PR
/// comment) nor anchors the id ahead of it. Tokens naming the same pairs (a secret and its
/// replacement) share their runs; a token of every pair keeps the plain id. A summary read
/// through the collector with a token is of that token's run; read from the bucket, an id two
/// scopes posted is refused, naming each run, and an id one scope posted is that run.
#[test]
fn a_scoped_token_joins_only_its_own_ci_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        "python-team-secret-01 linux-*/python-*\n\
         python-team-secret-02 linux-*/python-*   # its replacement\n\
         node-team-secret-0001 macos-*/node-*\n",
    )
    .unwrap();
    let c = Collector::start(
        &["--tokens", &file.display().to_string()],
        &[("OBJSTORE_COLLECTOR_TOKENS", "admin-secret-00000001".into())],
    );
    let post = |token: &str, platform: &str, browser: &str, run_id: &str, failing: &str| -> String {
        let mut body = run(platform, browser);
        body["ci"] = json!({"run": run_id});
        body["results"]["tests"][1]["name"] = json!(failing);
        let answer = post_json(&c.url, &[("authorization", &format!("Bearer {token}"))], &body);
        assert_eq!(answer.status, 201, "{}", answer.body);
        answer.body["key"].as_str().unwrap().to_string()
    };
    let segment = |key: &str| key.split('/').nth(2).unwrap().to_string();
    // The python team's token posts first, into the id the node team's CI is about to use.
    let planted = post("python-team-secret-01", "linux-x86_64", "python-3.12", "github-777-1", "planted");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let real = post("node-team-secret-0001", "macos-arm64", "node-20", "github-777-1", "real_failure");
    let rotated = post("python-team-secret-02", "linux-aarch64", "python-3.12", "github-777-1", "rotated");
    let admin = post("admin-secret-00000001", "macos-arm64", "node-22", "github-777-1", "admin");
    assert_ne!(segment(&planted), segment(&real), "{planted} {real}");
    assert!(segment(&real) < segment(&planted), "the node run is anchored at its own first file, newer");
    assert_eq!(segment(&planted), segment(&rotated), "tokens naming the same pairs share a run");
    assert!(segment(&real).contains("-github-777-1@") && segment(&admin).ends_with("-github-777-1"), "{real} {admin}");
    let anchors: Vec<Value> = std::fs::read_dir(c.bucket.join("results/.runs"))
        .unwrap()
        .flatten()
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
        .collect();
    assert_eq!(anchors.len(), 3, "one per scope, and the plain id's: {anchors:?}");
    assert!(anchors.iter().any(|a| a["scope"] == json!(["macos-*/node-*"])), "{anchors:?}");

    let root = c.url.trim_end_matches("/results").to_string();
    let summary = |token: Option<&str>, run: &str| -> Answer {
        let mut request = agent().get(format!("{root}/api/summary?run={run}"));
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        answer(request.call().unwrap())
    };
    let text = |a: &Answer| a.body["text"].as_str().unwrap_or_default().to_string();
    let node = summary(Some("node-team-secret-0001"), "github-777-1");
    assert_eq!(node.status, 200, "{}", node.body);
    assert!(text(&node).contains("real_failure") && text(&node).contains("macos-arm64"), "{}", text(&node));
    for other in ["planted", "rotated", "admin", "linux-"] {
        assert!(!text(&node).contains(other), "{other} is not the node team's: {}", text(&node));
    }
    let python = text(&summary(Some("python-team-secret-02"), "github-777-1"));
    assert!(python.contains("planted") && python.contains("rotated") && !python.contains("real_failure"), "{python}");
    let plain = text(&summary(None, "github-777-1"));
    assert!(plain.contains("admin") && !plain.contains("real_failure") && !plain.contains("planted"), "{plain}");
    assert_eq!(summary(Some("not-a-token-of-this-collector"), "github-777-1").status, 401);

    // Read from the bucket, with no token: one scope's id is its run; two scopes' is refused.
    post("node-team-secret-0001", "macos-arm64", "node-20", "github-778-1", "only_node");
    post("node-team-secret-0001", "macos-arm64", "node-20", "github-779-1", "node_779");
    post("python-team-secret-01", "linux-x86_64", "python-3.12", "github-779-1", "python_779");
    let from_bucket = |run: &str| {
        Command::new(env!("CARGO_BIN_EXE_objstore-results"))
            .args(["summary", "--run", run])
            .env("OBJSTORE_RESULTS", format!("file://{}", c.bucket.display()))
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env_remove("OBJSTORE_COLLECTOR")
            .output()
            .unwrap()
    };
    let said = |out: &std::process::Output| {
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let one = from_bucket("github-778-1");
    assert!(one.status.success() && said(&one).contains("only_node"), "{}", said(&one));
    let two = from_bucket("github-779-1");
    let refusal = said(&two);
    assert!(!two.status.success() && refusal.contains("tokens of 2 scopes"), "{refusal}");
    assert!(refusal.contains("(linux-*/python-*)") && refusal.contains("(macos-*/node-*)"), "{refusal}");
    let named = refusal.split_whitespace().find(|w| w.starts_with("github-779-1@")).unwrap();
    let chosen = from_bucket(named);
    assert!(chosen.status.success(), "{}", said(&chosen));
    let chosen = said(&chosen);
    assert!(chosen.contains("python_779") != chosen.contains("node_779"), "one scope's run: {chosen}");
}
