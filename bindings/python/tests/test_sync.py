"""sync against the S3 servers tests/run-all starts (moto and Garage on 127.0.0.1)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import time

import pytest

import objstore_db

ROOT = pathlib.Path(__file__).resolve().parents[3]


def server(name: str) -> dict[str, str]:
    """Starts (or reuses) the server with the project's own script and reads its settings."""
    subprocess.run([str(ROOT / "tests/servers" / name)], check=True, stdout=subprocess.DEVNULL)
    env: dict[str, str] = {}
    for line in (ROOT / f"target/servers/{name}.env").read_text().splitlines():
        line = line.strip().removeprefix("export ")
        if "=" in line:
            k, v = line.split("=", 1)
            env[k] = v.strip("'\"")
    return env


def options(name: str, bucket_var: str, test: str) -> dict[str, str]:
    env, up = server(name), name.upper()
    return {
        "bucket": env[bucket_var],
        "prefix": f"py-{test}-{os.getpid()}-{time.time_ns()}/",
        "endpoint": env[f"{up}_ENDPOINT"],
        "region": env[f"{up}_REGION"],
        "accessKeyId": env[f"{up}_ACCESS_KEY_ID"],
        "secretAccessKey": env[f"{up}_SECRET_ACCESS_KEY"],
    }


SERVERS = [("moto", "MOTO_SIGNED_BUCKET"), ("garage", "GARAGE_BUCKET")]


@pytest.mark.parametrize("name,bucket", SERVERS)
async def test_a_write_reaches_another_client_through_the_bucket(name: str, bucket: str, tmp_path: pathlib.Path) -> None:
    sync = {"results": {"format": "objstore", "Options": options(name, bucket, "rt")}}
    schema = {"stores": [{"name": "results"}]}
    async with objstore_db.open(str(tmp_path / "w.sqlite3"), schema, sync=sync) as writer:
        async with objstore_db.open(str(tmp_path / "r.sqlite3"), schema, sync=sync) as reader:
            await writer.put("results", {"ok": True, "text": "ünïcode"}, "linux/python/1")
            report = await writer.flush()
            assert report["pending"] == 0, report
            assert await reader.get("results", "linux/python/1") == {"ok": True, "text": "ünïcode"}
            assert await reader.get("results", "linux/python/none") is None
            stats = reader.sync_stats(reset=True)
            assert stats["requests"]["GET"] == {"200": 1, "404": 1}, stats
            # The time waited on the bucket is counted beside the requests.
            assert isinstance(stats["busyMs"], int) and stats["busyMs"] >= 0, stats
            await reader.prefetch("results")
            assert await reader.count("results") == 1
            assert await reader.sync_status("results", "linux/python/1") == "synced"


async def test_an_unreachable_bucket_keeps_writes_and_serves_the_cache(tmp_path: pathlib.Path) -> None:
    sync = {"docs": {"format": "objstore", "Options": {"bucket": "b", "endpoint": "http://127.0.0.1:1", "retries": 0}}}
    async with objstore_db.open(str(tmp_path / "o.sqlite3"), {"stores": [{"name": "docs"}]}, sync=sync) as db:
        with pytest.raises(objstore_db.NetworkError, match="cannot reach the bucket"):
            await db.get("docs", "never-cached")
        await db.put("docs", {"n": 1}, "x")
        report = await db.flush()
        assert report["pending"] == 1
        assert await db.get("docs", "x") == {"n": 1}, "a pending write is read locally"


async def test_a_withdrawn_write_leaves_the_outbox(tmp_path: pathlib.Path) -> None:
    sync = {"docs": {"format": "objstore", "Options": {"bucket": "b", "endpoint": "http://127.0.0.1:1", "retries": 0}}}
    async with objstore_db.open(str(tmp_path / "w.sqlite3"), {"stores": [{"name": "docs"}]}, sync=sync) as db:
        await db.put("docs", {"n": 1}, "x")
        await db.put("docs", {"n": 1}, "y")
        assert await db.withdraw_pending("docs", "x") == 1
        assert await db.get("docs", "y") == {"n": 1}
        with pytest.raises(objstore_db.NetworkError):
            await db.get("docs", "x")  # not held any more: the bucket would be asked
        assert (await db.flush())["pending"] == 1
        with pytest.raises(objstore_db.InvalidArgumentError, match="not synced|no Sync"):
            await db.withdraw_pending("nope", "x")


@pytest.mark.parametrize("name,bucket", SERVERS)
async def test_a_cold_reader_starts_from_a_checkpoint(name: str, bucket: str, tmp_path: pathlib.Path) -> None:
    """checkpoint() writes the store's names; a cold reader takes them (and the change log
    after them) in a handful of requests instead of listing every name."""
    plain = options(name, bucket, "cp")
    o: dict[str, object] = {**plain, "changeLog": True, "checkpoints": True}
    sync = {"results": {"format": "objstore", "prefetch": "full", "Options": o}}
    schema = {"stores": [{"name": "results"}]}
    async with objstore_db.open(str(tmp_path / "w.sqlite3"), schema, sync=sync) as writer:
        for i in range(5):
            await writer.put("results", {"i": i}, f"linux/python/{i}")
        assert (await writer.flush())["pending"] == 0
        report = await writer.checkpoint("results")
        # The heads and the range shard, and the change log's waves (the background sender
        # may have sent the writes one by one, leaving none).
        assert report["objects"] == 5 and report["shards"] in (2, 3), report
        assert report["manifest"].startswith(plain["prefix"] + ".objstore-checkpoints/"), report
        await writer.put("results", {"i": "late"}, "linux/python/late")
        assert (await writer.flush())["pending"] == 0
    async with objstore_db.open(str(tmp_path / "r.sqlite3"), schema, sync=sync) as reader:
        assert await reader.count("results") == 6
        stats = reader.sync_stats()
        # The checkpoints' newest key and the change log after it; the manifest, the range
        # shard and the six bodies.
        assert stats["requests"]["LIST"] == {"200": 2}, stats
    with pytest.raises(objstore_db.InvalidArgumentError, match="keeps no checkpoints"):
        without = {"results": {"format": "objstore", "Options": plain}}
        async with objstore_db.open(str(tmp_path / "p.sqlite3"), schema, sync=without) as db:
            await db.checkpoint("results")
