"""The pytest plugin: a run's results land in the bucket in the results app's layout, written
through objstore-db, and read back through it."""

from __future__ import annotations

import pathlib
import re

import pytest

import objstore_db
from objstore_db.pytest_plugin import platform_name, runtime_name


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


async def test_a_run_is_published_as_one_object_with_a_ctrf_body(pytester: pytest.Pytester, tmp_path: pathlib.Path) -> None:
    bucket_dir = tmp_path / "bucket"
    pytester.makepyfile(test_crud=SAMPLE)
    result = pytester.runpytest_subprocess(f"--objstore-results=file://{bucket_dir}", "--objstore-bucket=results")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    published = [line for line in result.outlines if "results published" in line]
    assert published, result.outlines
    key = published[0].rsplit(" as ", 1)[1]
    assert re.fullmatch(rf"{re.escape(platform_name())}/{re.escape(runtime_name())}/\d{{13}}-[0-9a-f]{{8}}", key), key

    options = {"bucket": "results", "endpoint": f"file://{bucket_dir}"}
    meta_options = {**options, "keyLayout": "{platform}/{browser}/{run}"}
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
