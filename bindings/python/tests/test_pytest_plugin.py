"""The pytest plugin: a run's results land in the bucket in the results app's layout, written
through objstore-db, and read back through it."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest

import objstore_db
from objstore_db.pytest_plugin import TEXT_CAP, cap_text, platform_name, runtime_name


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
    assert re.fullmatch(rf"{re.escape(platform_name())}/{re.escape(runtime_name())}/\d{{13}}-[0-9a-f]{{16}}/[0-9a-f]{{16}}", key), key

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
        # The listing describes it with its metadata, as the results app reads it.
        described = await viewer.get("results-meta", key)
        assert described["metadata"]["platform"] == platform_name()
        assert described["metadata"]["browser"] == runtime_name()
        assert described["metadata"]["version"] == objstore_db.__version__


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


def test_a_tests_text_is_capped_as_the_app_caps_it() -> None:
    test: dict[str, Any] = {"message": "short", "trace": "é" * 6000, "stdout": ["x" * 9000], "retryAttempts": [{"message": "y" * 500}]}
    cap_text(test)
    kept = len(test["message"].encode()) + len(test["trace"].encode()) + len(test["stdout"][0].encode())
    assert kept + len(test["retryAttempts"][0]["message"]) <= TEXT_CAP
    assert test["message"] == "short" and test["retryAttempts"][0]["message"] == "y" * 500
    assert test["trace"].startswith("é") and test["trace"].endswith("more bytes]")
    again = {**test, "stdout": list(test["stdout"])}
    assert cap_text(again) == test, "capping twice changes nothing"


def test_it_is_off_unless_configured(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sample=SAMPLE)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert not any(line.startswith("objstore-db:") for line in result.outlines)


def test_an_unreachable_bucket_is_reported_and_the_run_keeps_its_outcome(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sample=SAMPLE)
    result = pytester.runpytest_subprocess("--objstore-results=http://127.0.0.1:9", "--objstore-bucket=results")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    not_published = [line for line in result.outlines if line.startswith("objstore-db: the results were not published")]
    assert not_published, result.outlines
