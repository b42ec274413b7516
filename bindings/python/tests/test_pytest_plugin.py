"""The pytest plugin: a run's results land in the bucket in the results app's layout, written
through objstore-db, and read back through it."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
from typing import Any

import pytest

import objstore_db
from objstore_db.ci import detect, run_id
from objstore_db.digest import digest
from objstore_db.pytest_plugin import TEXT_CAP, cap_text, platform_name, runtime_name, suite_of

async def test_a_rerun_is_published_as_later_attempts_of_its_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    """A rerun's tests are later attempts of its run's (the app counts each test once): its body
    says so, its name carries no digest, and with no run to rerun it is a usage error."""
    bucket_dir = tmp_path / "bucket"
    pytester.makepyfile(test_crud=SAMPLE)
    result = pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}", "--objstore-rerun")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--objstore-rerun publishes later attempts" in "\n".join(result.errlines), result.errlines
    monkeypatch.setenv("OBJSTORE_RESULTS_RUN", "ci-7")
    monkeypatch.setenv("OBJSTORE_RESULTS_RERUN", "1")
    key = published_key(pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}"))
    assert re.fullmatch(r".*/\d{13}-ci-7/[0-9a-f]{16}", key), key
    async with objstore_db.open(str(tmp_path / "viewer.sqlite3"), viewer_schema(bucket_dir)) as viewer:
        report = await viewer.get("results", key)
    assert report["ci"] == {"run": "ci-7", "rerun": True}


# The run id of a Jenkins tag with a folder and spaces, as examples/results-app/src/ci.rs makes it.
JENKINS_ID = "jenkins-jenkins-team-db-main-12-f4dba2926d3b141c"
CI_MARKERS = ["GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "CIRCLECI", "JENKINS_URL", "TF_BUILD", "OBJSTORE_RESULTS_RUN"]


@pytest.fixture(autouse=True)
def outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests run as outside CI, whatever CI runs them: each says which CI it plays."""
    for name in CI_MARKERS:
        monkeypatch.delenv(name, raising=False)


SAMPLE = """
import pytest

def test_passes():
    assert 1 + 1 == 2

def test_fails():
    assert 1 + 1 == 3, "arithmetic"

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass
"""


def viewer_schema(bucket_dir: pathlib.Path) -> dict[str, Any]:
    """The results app's two stores over the plugin's bucket."""
    options = {"bucket": "results", "endpoint": f"file://{bucket_dir}"}
    meta_options = {**options, "keyLayout": "{platform}/{browser}/{run}/{file}"}
    schema = {
        "stores": [
            {"name": "results", "Sync": {"format": "objstore", "immutable": True, "Options": options}},
            {
                "name": "results-meta",
                "keyPath": "name",
                "indexes": [{"name": "platform, browser", "keyPath": ["metadata.platform", "metadata.browser"]}],
                "Sync": {"format": "objstore-meta", "prefetch": "meta", "Options": meta_options},
            },
        ]
    }
    return schema


async def test_a_run_is_published_as_one_object_with_a_ctrf_body(pytester: pytest.Pytester, tmp_path: pathlib.Path) -> None:
    bucket_dir = tmp_path / "bucket"
    pytester.makepyfile(test_crud=SAMPLE)
    result = pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}", "--objstore-bucket=results")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    published = [line for line in result.outlines if "results published" in line]
    assert published, result.outlines
    key = published[0].rsplit(" as ", 1)[1]
    assert re.fullmatch(rf"{re.escape(platform_name())}/{re.escape(runtime_name())}/\d{{13}}-[0-9a-f]{{16}}/[0-9a-f]{{16}}\.2\.[A-Za-z0-9._-]+", key), key

    schema = viewer_schema(bucket_dir)
    async with objstore_db.open(str(tmp_path / "viewer.sqlite3"), schema) as viewer:
        report = await viewer.get("results", key)
        assert report["platform"] == platform_name()
        tests = {t["name"].rsplit("::", 1)[1]: t for t in report["results"]["tests"]}
        assert {n: t["status"] for n, t in tests.items()} == {
            "test_passes": "passed",
            "test_fails": "failed",
            "test_skipped": "skipped",
        }
        assert all(t["suite"] == "crud" for t in tests.values())
        assert "arithmetic" in tests["test_fails"]["message"]
        assert report["results"]["summary"]["tests"] == 3
        # The name carries the body's digest: the app's matrix reads it from a listing.
        assert key.split("/")[3].split(".", 1)[1] == digest(report)
        # The listing describes it with its metadata, as the results app reads it.
        described = await viewer.get("results-meta", key)
        assert described["metadata"]["platform"] == platform_name()
        assert described["metadata"]["browser"] == runtime_name()
        # No version given and no pyproject.toml: the project's version is unknown, and never
        # objstore-db's own.
        assert described["metadata"]["version"] == "unversioned"


def test_the_digest_is_the_one_the_app_pins() -> None:
    """The results app, the node reporter and this plugin make one digest of one report."""
    fixture = json.loads((pathlib.Path(__file__).resolve().parents[3] / "examples/results-app/tests/fixtures/digest.json").read_text())
    assert digest(fixture["report"]) == fixture["digest"]


RETRIES = """
import pathlib

import pytest

@pytest.fixture
def breaks_on_teardown():
    yield
    raise RuntimeError("teardown broke")

def test_fails_then_teardown_fails(breaks_on_teardown):
    print("said something")
    assert False, "call failed"

COUNT = pathlib.Path(__file__).with_suffix(".count")

@pytest.mark.flaky(reruns=2)
def test_passes_on_retry():
    n = int(COUNT.read_text()) if COUNT.exists() else 0
    COUNT.write_text(str(n + 1))
    assert n >= 1, "the first attempt fails"
"""


async def test_failure_text_output_and_reruns_are_kept(pytester: pytest.Pytester, tmp_path: pathlib.Path) -> None:
    """A failure's trace and output are published; a teardown error joins its test; a test that
    pytest-rerunfailures ran again and that then passed is flaky, with its earlier attempt."""
    bucket_dir = tmp_path / "bucket"
    pytester.makepyfile(test_retry=RETRIES)
    result = pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}", "--objstore-bucket=results")
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "errors": 1, "rerun": 1}, result.outlines
    key = [line for line in result.outlines if "results published" in line][0].rsplit(" as ", 1)[1]
    async with objstore_db.open(str(tmp_path / "viewer.sqlite3"), viewer_schema(bucket_dir)) as viewer:
        report = await viewer.get("results", key)
    tests = {t["name"].rsplit("::", 1)[1]: t for t in report["results"]["tests"]}
    assert len(tests) == 2 and report["results"]["summary"]["tests"] == 2, tests
    broken = tests["test_fails_then_teardown_fails"]
    assert broken["status"] == "failed"
    assert "call failed" in broken["message"] and "error on teardown: RuntimeError: teardown broke" in broken["message"]
    assert "assert False" in broken["trace"]
    assert broken["stdout"] == ["said something\n"]
    retried = tests["test_passes_on_retry"]
    assert (retried["status"], retried["flaky"], retried["retries"]) == ("passed", True, 1)
    assert "the first attempt fails" in retried["retryAttempts"][0]["message"]


async def test_under_xdist_the_controller_publishes_one_run_with_every_workers_tests(
    pytester: pytest.Pytester, tmp_path: pathlib.Path
) -> None:
    """With pytest-xdist, the workers publish nothing; the controller publishes one run holding
    the tests every worker ran."""
    bucket_dir = tmp_path / "bucket"
    pytester.makepyfile(test_crud=SAMPLE, test_sql="def test_select():\n    pass\n\ndef test_insert():\n    pass\n")
    result = pytester.runpytest_subprocess("-n", "2", f"--objstore-results=file://{bucket_dir}", "--objstore-bucket=results")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    published = [line for line in result.outlines if "results published" in line]
    assert len(published) == 1, result.outlines
    objects = [p for p in (bucket_dir / "results").rglob("*") if p.is_file() and not any(x.startswith(".objstore") for x in p.parts)]
    assert len(objects) == 1, objects
    key = published[0].rsplit(" as ", 1)[1]
    async with objstore_db.open(str(tmp_path / "viewer.sqlite3"), viewer_schema(bucket_dir)) as viewer:
        report = await viewer.get("results", key)
    assert sorted(t["name"].rsplit("::", 1)[1] for t in report["results"]["tests"]) == [
        "test_fails", "test_insert", "test_passes", "test_select", "test_skipped"]
    assert {t["suite"] for t in report["results"]["tests"]} == {"crud", "sql"}


async def test_runs_of_one_ci_run_are_one_run(
    pytester: pytest.Pytester, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two jobs of one GitHub Actions run publish under one run segment, anchored once, with
    the run's commit, branch and page."""
    bucket_dir = tmp_path / "bucket"
    github = {"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "777", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_SHA": "abc123",
              "GITHUB_REF_NAME": "main", "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "team/db"}
    for name, value in github.items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(test_crud=SAMPLE)
    keys = []
    for _ in range(2):
        result = pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}", "--objstore-bucket=results")
        keys.append([line for line in result.outlines if "results published" in line][0].rsplit(" as ", 1)[1])
    runs = {key.rsplit("/", 1)[0] for key in keys}
    assert len(runs) == 1 and len(set(keys)) == 2, keys
    assert runs.pop().endswith("-github-777-1")
    assert (bucket_dir / "results/.runs/github-777-1").is_file()
    async with objstore_db.open(str(tmp_path / "viewer.sqlite3"), viewer_schema(bucket_dir)) as viewer:
        report = await viewer.get("results", keys[0])
    assert report["ci"] == {"run": "github-777-1", "commit": "abc123", "branch": "main",
                            "url": "https://github.com/team/db/actions/runs/777/attempts/1"}


def test_run_ids_are_made_as_the_app_makes_them() -> None:
    """The same ids as `objstore-results post` (its ci.rs pins the same values)."""
    assert run_id("github", "9876543210", "2") == "github-9876543210-2"
    assert run_id("jenkins", "jenkins-team/db main-12") == JENKINS_ID
    assert len(run_id("github", "9" * 80)) <= 64
    assert detect({"GITLAB_CI": "true", "CI_PIPELINE_ID": "77"}) == {"run": "gitlab-77"}
    assert detect({"OBJSTORE_RESULTS_RUN": "nightly-7"}) == {"run": "nightly-7"}


@pytest.mark.parametrize(
    ("path", "suite"),
    [
        ("tests/unit/test_crud.py", "unit/crud"),
        ("tests/test_api.py", "api"),
        ("test_api.py", "api"),
        ("src/pkg/tests/test_x.py", "x"),
        ("pkg/crud_test.py", "pkg/crud"),
        ("a/b.v2/test_d.py", "a/b/v2/d"),
    ],
)
def test_a_suite_is_named_as_the_app_names_its_file(path: str, suite: str) -> None:
    """The paths of examples/results-app's naming test: both sides must agree, or the plugin's
    tests and post of pytest's JUnit would be two histories."""
    assert suite_of(f"{path}::TestX::test_y[1]") == suite


def test_a_tests_text_is_capped_as_the_app_caps_it() -> None:
    test: dict[str, Any] = {"message": "short", "trace": "é" * 6000, "stdout": ["x" * 9000], "retryAttempts": [{"message": "y" * 500}]}
    cap_text(test)
    kept = len(test["message"].encode()) + len(test["trace"].encode()) + len(test["stdout"][0].encode())
    assert kept + len(test["retryAttempts"][0]["message"]) <= TEXT_CAP
    assert test["message"] == "short" and test["retryAttempts"][0]["message"] == "y" * 500
    assert test["trace"].startswith("é") and test["trace"].endswith("more bytes]")
    again = {**test, "stdout": list(test["stdout"])}
    assert cap_text(again) == test, "capping twice changes nothing"


def test_it_is_off_unless_configured(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    pytester.makepyfile(test_sample=SAMPLE)
    # A job-level OBJSTORE_RESULTS (which `post` reads) does not turn the plugin on.
    monkeypatch.setenv("OBJSTORE_RESULTS", f"file://{tmp_path / 'bucket'}")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert not any(line.startswith("objstore-db:") for line in result.outlines)
    assert not (tmp_path / "bucket").exists()


def published_key(result: pytest.RunResult) -> str:
    published = [line for line in result.outlines if "results published" in line]
    assert published, result.outlines
    return published[0].rsplit(" as ", 1)[1]


async def test_asked_for_bare_or_in_the_ini_with_labels_and_the_projects_version(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    bucket_dir = tmp_path / "bucket"
    pytester.makepyfile(test_sample=SAMPLE)
    pytester.makefile(".toml", pyproject='[project]\nname = "ledger"\nversion = "2.4.1"\n\n[tool.other]\nversion = "9"\n')
    monkeypatch.setenv("OBJSTORE_RESULTS", f"file://{bucket_dir}")
    # Bare: the endpoint from the environment; labels given as post takes them.
    bare = pytester.runpytest_subprocess("--objstore-results", "--objstore-platform=macos-aarch64", "--objstore-runtime=python-3.12")
    key = published_key(bare)
    assert key.startswith("macos-aarch64/python-3.12/"), key
    async with objstore_db.open(str(tmp_path / "viewer.sqlite3"), viewer_schema(bucket_dir)) as viewer:
        report = await viewer.get("results", key)
    assert (report["platform"], report["browser"], report["version"]) == ("macos-aarch64", "python-3.12", "2.4.1")
    # The ini setting turns it on too, and OBJSTORE_RESULTS_VERSION labels the version.
    pytester.makeini(f"[pytest]\nobjstore_results = file://{bucket_dir}\n")
    monkeypatch.delenv("OBJSTORE_RESULTS")
    monkeypatch.setenv("OBJSTORE_RESULTS_VERSION", "2.5.0-rc1")
    key = published_key(pytester.runpytest_subprocess())
    assert key.startswith(f"{platform_name()}/{runtime_name()}/"), key
    async with objstore_db.open(str(tmp_path / "viewer2.sqlite3"), viewer_schema(bucket_dir)) as viewer:
        assert (await viewer.get("results", key))["version"] == "2.5.0-rc1"


def test_asked_for_with_no_endpoint_or_a_bad_label_is_a_usage_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_sample=SAMPLE)
    monkeypatch.delenv("OBJSTORE_RESULTS", raising=False)
    result = pytester.runpytest_subprocess("--objstore-results")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "OBJSTORE_RESULTS" in "\n".join(result.errlines), result.errlines
    result = pytester.runpytest_subprocess("--objstore-results=file:///tmp/x", "--objstore-runtime=python 3.11")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--objstore-runtime 'python 3.11'" in "\n".join(result.errlines), result.errlines


def test_an_unreachable_bucket_is_reported_and_the_run_keeps_its_outcome(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sample=SAMPLE)
    result = pytester.runpytest_subprocess("--objstore-results=http://127.0.0.1:9", "--objstore-bucket=results")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    not_published = [line for line in result.outlines if line.startswith("objstore-db: the results were not published")]
    assert not_published, result.outlines


QUARANTINED = """
def test_known_bad():
    assert 1 + 1 == 3, "arithmetic"

def test_fine():
    assert True
"""


async def test_a_quarantined_failure_is_published_marked_and_does_not_fail_the_session(
    pytester: pytest.Pytester, tmp_path: pathlib.Path
) -> None:
    bucket_dir = tmp_path / "bucket"
    options = {"bucket": "results", "endpoint": f"file://{bucket_dir}"}
    schema = {"stores": [{"name": "quarantine", "Sync": {"format": "objstore", "Options": options}}]}
    entry = {"suite": "crud", "name": "test_crud.py::test_known_bad", "pairs": f"{platform_name()}/*", "reason": "known", "added": 0}
    async with objstore_db.open(str(tmp_path / "editor.sqlite3"), schema) as editor:
        await editor.put("quarantine", {"entries": [entry], "history": []}, ".quarantine")
        assert (await editor.flush())["pending"] == 0
    pytester.makepyfile(test_crud=QUARANTINED)
    result = pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}", "--objstore-bucket=results")
    result.assert_outcomes(passed=1, xfailed=1)
    assert result.ret == 0, result.outlines
    key = [line for line in result.outlines if "results published" in line][0].rsplit(" as ", 1)[1]
    async with objstore_db.open(str(tmp_path / "viewer.sqlite3"), viewer_schema(bucket_dir)) as viewer:
        report = await viewer.get("results", key)
    bad = [t for t in report["results"]["tests"] if t["name"].endswith("test_known_bad")][0]
    assert (bad["status"], bad.get("quarantined")) == ("failed", True)
    assert "arithmetic" in bad["message"]
    # Elsewhere (another pair) or once expired, it fails the session again.
    entry["pairs"] = "nowhere/*"
    async with objstore_db.open(str(tmp_path / "editor.sqlite3"), schema) as editor:
        await editor.put("quarantine", {"entries": [entry], "history": []}, ".quarantine")
        assert (await editor.flush())["pending"] == 0
    result = pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}", "--objstore-bucket=results")
    result.assert_outcomes(passed=1, failed=1)


async def test_the_repositorys_codeowners_is_kept_in_the_bucket_when_it_changed(
    pytester: pytest.Pytester, tmp_path: pathlib.Path
) -> None:
    bucket_dir = tmp_path / "bucket"
    (pytester.path / ".git").mkdir()
    (pytester.path / ".github").mkdir()
    (pytester.path / ".github" / "CODEOWNERS").write_text("* @team/db\ntests/ @team/qa\n")
    pytester.makepyfile(test_crud=SAMPLE)
    options = {"bucket": "results", "endpoint": f"file://{bucket_dir}"}
    schema = {"stores": [{"name": "quarantine", "Sync": {"format": "objstore", "Options": options}}]}

    async def kept() -> Any:
        async with objstore_db.open(str(tmp_path / "reader.sqlite3"), schema, mechanism="memory") as reader:
            return await reader.get("quarantine", ".codeowners", fresh=True)

    first = pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}")
    assert "objstore-db: CODEOWNERS kept from .github/CODEOWNERS" in first.outlines, first.outlines
    stored = await kept()
    assert (stored["text"], stored["source"]) == ("* @team/db\ntests/ @team/qa\n", ".github/CODEOWNERS")
    # Unchanged, it is not written again; changed, it is.
    again = pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}")
    assert not [line for line in again.outlines if "CODEOWNERS" in line], again.outlines
    assert (await kept())["at"] == stored["at"]
    (pytester.path / ".github" / "CODEOWNERS").write_text("* @team/storage\n")
    pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}")
    assert (await kept())["text"] == "* @team/storage\n"


# The results app that cargo test built (bindings/python/run builds it when it is missing).
RESULTS_APP = pathlib.Path(__file__).resolve().parents[3] / "target" / "debug" / "objstore-results"


@pytest.fixture
def collector(tmp_path: pathlib.Path) -> Any:
    """`objstore-results serve` on a free port over a file:// bucket, taking posts with one token:
    (its URL, the bucket's directory), stopped after the test."""
    assert RESULTS_APP.exists(), f"{RESULTS_APP} is missing: cargo build -p objstore-results"
    bucket_dir = tmp_path / "collector-bucket"
    env = {**os.environ, "OBJSTORE_RESULTS": f"file://{bucket_dir}", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for name in CI_MARKERS + ["OBJSTORE_RESULTS_BUCKET", "OBJSTORE_RESULTS_PREFIX"]:
        env.pop(name, None)
    args = [str(RESULTS_APP), "serve", "--listen", "127.0.0.1:0", "--token", COLLECTOR_TOKEN]
    server = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        url = line.strip().rsplit(" ", 1)[-1].removesuffix("/results")
        assert url.startswith("http://127.0.0.1:"), line
        yield url, bucket_dir
    finally:
        server.kill()
        server.wait()


COLLECTOR_TOKEN = "python-collector-token-0001"


async def test_through_a_collector_a_job_needs_no_bucket_credentials(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, collector: Any
) -> None:
    """--objstore-collector posts the run to a collector with its token (the job has no bucket
    settings at all) and reads the quarantine through it; without the token it is refused, saying
    which token is sent."""
    url, bucket_dir = collector
    monkeypatch.delenv("OBJSTORE_RESULTS", raising=False)
    # The quarantine, as `objstore-results quarantine add` writes it into the collector's bucket.
    quarantine = [str(RESULTS_APP), "quarantine", "add", "--suite", "crud", "--name", "test_crud.py::test_known_bad", "--reason", "known"]
    added = subprocess.run(quarantine, env={**os.environ, "OBJSTORE_RESULTS": f"file://{bucket_dir}", "XDG_CACHE_HOME": str(tmp_path)}, capture_output=True, text=True)
    assert added.returncode == 0, added.stderr
    pytester.makepyfile(test_crud=QUARANTINED)
    (pytester.path / ".git").mkdir()
    (pytester.path / "CODEOWNERS").write_text("test_crud.py @team/crud\n")
    monkeypatch.setenv("OBJSTORE_COLLECTOR", url)
    monkeypatch.setenv("OBJSTORE_COLLECTOR_TOKEN", COLLECTOR_TOKEN)
    result = pytester.runpytest_subprocess("--objstore-collector")
    result.assert_outcomes(passed=1, xfailed=1)
    published = [line for line in result.outlines if line.startswith(f"objstore-db: results published to {url} as ")]
    assert published, result.outlines
    key = published[0].rsplit(" as ", 1)[1]
    async with objstore_db.open(str(tmp_path / "viewer.sqlite3"), viewer_schema(bucket_dir)) as viewer:
        report = await viewer.get("results", key)
    bad = [t for t in report["results"]["tests"] if t["name"] == "test_crud.py::test_known_bad"][0]
    assert (bad["status"], bad.get("quarantined")) == ("failed", True)
    # The repository's CODEOWNERS went through the collector into its bucket.
    assert "objstore-db: CODEOWNERS kept from CODEOWNERS" in result.outlines, result.outlines
    owners = [str(RESULTS_APP), "codeowners", "owners", "test_crud.py"]
    shown = subprocess.run(owners, env={**os.environ, "OBJSTORE_RESULTS": f"file://{bucket_dir}", "XDG_CACHE_HOME": str(tmp_path)}, capture_output=True, text=True)
    assert shown.stdout == "test_crud.py: @team/crud\n", (shown.stdout, shown.stderr)

    monkeypatch.setenv("OBJSTORE_COLLECTOR_TOKEN", "not-the-token-at-all")
    refused = pytester.runpytest_subprocess(f"--objstore-collector={url}")
    said = [line for line in refused.outlines if line.startswith("objstore-db: the results were not published")]
    assert said and "401" in said[0] and "OBJSTORE_COLLECTOR_TOKEN" in said[0], refused.outlines
    both = pytester.runpytest_subprocess(f"--objstore-collector={url}", f"--objstore-results=file://{bucket_dir}")
    assert "not both" in "\n".join(both.errlines), both.errlines
