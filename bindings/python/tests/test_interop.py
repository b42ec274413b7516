"""The library and boto3 on the same bucket, on moto and Garage: objects one writes the other
reads; a write over an object the library never read is a conflict, not an overwrite; an
object it cannot use is left out with an error; non-ASCII metadata travels as RFC 2047 words."""

from __future__ import annotations

import asyncio
import email.header
import json
import pathlib
import warnings
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest

import objstore_db

from test_sync import SERVERS, options


def s3(opts: dict[str, Any]) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=opts["endpoint"],
        region_name=opts["region"],
        aws_access_key_id=opts["accessKeyId"],
        aws_secret_access_key=opts["secretAccessKey"],
    )


def put_json(client: Any, opts: dict[str, Any], key: str, value: Any) -> None:
    client.put_object(Bucket=opts["bucket"], Key=opts["prefix"] + key, Body=json.dumps(value).encode())


SCHEMA = {"stores": [{"name": "docs"}]}


async def settle() -> None:
    """Lets the background flush after a write run."""
    for _ in range(100):
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("name,bucket", SERVERS)
async def test_objects_written_by_either_side_are_read_by_the_other(name: str, bucket: str, tmp_path: pathlib.Path) -> None:
    opts: dict[str, Any] = {**options(name, bucket, "interop-rw"), "metadata": ["city"]}
    client = s3(opts)
    put_json(client, opts, "from-boto3", {"by": "boto3", "text": "ünïcode"})
    sync = {"docs": {"format": "objstore", "Options": opts}}
    async with objstore_db.open(str(tmp_path / "a.sqlite3"), SCHEMA, sync=sync) as db:
        assert await db.get("docs", "from-boto3") == {"by": "boto3", "text": "ünïcode"}
        await db.put("docs", {"by": "library", "city": "Zürich 東京"}, "from-library")
        report = await db.flush()
        assert report["pending"] == 0, report
    got = client.get_object(Bucket=opts["bucket"], Key=opts["prefix"] + "from-library")
    assert json.loads(got["Body"].read()) == {"by": "library", "city": "Zürich 東京"}
    raw = got["Metadata"]["city"]
    assert raw.isascii() and raw.startswith("=?UTF-8?B?"), f"an RFC 2047 word, not raw UTF-8: {raw!r}"
    decoded = "".join(
        part.decode(charset or "ascii") if isinstance(part, bytes) else part
        for part, charset in email.header.decode_header(raw)
    )
    assert decoded == "Zürich 東京"


@pytest.mark.parametrize("name,bucket", SERVERS)
async def test_a_write_over_an_object_never_read_is_a_conflict_not_an_overwrite(
    name: str, bucket: str, tmp_path: pathlib.Path
) -> None:
    opts = options(name, bucket, "interop-conflict")
    client = s3(opts)
    put_json(client, opts, "theirs", {"by": "boto3"})
    sync = {"docs": {"format": "objstore", "Options": opts}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with objstore_db.open(str(tmp_path / "a.sqlite3"), SCHEMA, sync=sync) as db:
            await db.put("docs", {"by": "library"}, "theirs")
            report = await db.flush()
            # Whether this flush or the background sender met the refusal, the report counts it.
            assert (report["pending"], report["refused"]) == (0, 1), report
            refused = await db.refused_writes()
            assert [r["code"] for r in refused] == ["Conflict"], refused
            assert await db.get("docs", "theirs") == {"by": "library"}, "the local data is kept"
            assert await db.sync_status("docs", "theirs") == "refused"
            # An object the library read and boto3 then replaced is not removed blind either.
            put_json(client, opts, "read-then-changed", {"v": 1})
            assert await db.get("docs", "read-then-changed") == {"v": 1}
            put_json(client, opts, "read-then-changed", {"v": 2, "by": "boto3"})
            await db.remove("docs", "read-then-changed")
            assert (await db.flush())["refused"] == 2
            assert len(await db.refused_writes()) == 2
            stats = db.sync_stats()
    honours = name == "moto"
    assert list(stats["conditionalWrites"].values()) == [honours], stats
    for key, want in [("theirs", {"by": "boto3"}), ("read-then-changed", {"v": 2, "by": "boto3"})]:
        body = client.get_object(Bucket=opts["bucket"], Key=opts["prefix"] + key)["Body"].read()
        assert json.loads(body) == want, f"boto3's {key} stands"
    assert not [w for w in caught if issubclass(w.category, objstore_db.SyncWarning)], "nothing known at the first open"
    # Reopened, a database that found a server ignoring conditional writes warns at once.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with objstore_db.open(str(tmp_path / "a.sqlite3"), SCHEMA, sync=sync):
            pass
    said = [str(w.message) for w in caught if issubclass(w.category, objstore_db.SyncWarning)]
    if honours:
        assert said == []
    else:
        assert len(said) == 1 and "ignores conditional writes" in said[0], said


@pytest.mark.parametrize("name,bucket", SERVERS)
async def test_objects_the_library_cannot_use_are_left_out_with_an_error(name: str, bucket: str, tmp_path: pathlib.Path) -> None:
    opts: dict[str, Any] = {**options(name, bucket, "interop-unusable"), "maxObjectBytes": 1000}
    client = s3(opts)
    put_json(client, opts, "good", {"ok": True})
    put_json(client, opts, "big", {"text": "x" * 5000})
    client.put_object(Bucket=opts["bucket"], Key=opts["prefix"] + "html", Body=b"<html>gateway</html>")
    sync = {"docs": {"format": "objstore", "prefetch": "full", "prefetchRefractoryPeriod": 0, "Options": opts}}
    async with objstore_db.open(str(tmp_path / "a.sqlite3"), SCHEMA, sync=sync) as db:
        errors: list[str] = []
        await db.on("error", lambda e: errors.append(e.message or ""))
        assert await db.values("docs") == [{"ok": True}]
        await asyncio.sleep(0.1)
        assert sorted(m.split('"')[1].rsplit("/", 1)[1] for m in errors) == ["big", "html"], errors
        assert await db.sync_status("docs", "big") == "unusable"
        with pytest.raises(objstore_db.RemoteDataError, match="1000-byte limit"):
            await db.get("docs", "big", fresh=True)
        db.sync_stats(reset=True)
        assert await db.count("docs") == 1
        assert db.sync_stats()["requests"].get("GET") is None, "not downloaded again"


@pytest.mark.parametrize("name,bucket", SERVERS)
async def test_a_key_the_listing_would_read_as_a_folder_is_refused_on_write(name: str, bucket: str, tmp_path: pathlib.Path) -> None:
    opts = options(name, bucket, "interop-folder")
    sync = {"docs": {"format": "objstore", "prefetch": "full", "Options": opts}}
    client = s3(opts)
    # What other tools make: a console's folder marker, and a name with an empty segment (which
    # S3 takes, and so does the library on an S3 bucket).
    for key in ["folder/", "x//y", "ok"]:
        client.put_object(Bucket=opts["bucket"], Key=opts["prefix"] + key, Body=b"{}")
    async with objstore_db.open(str(tmp_path / "a.sqlite3"), SCHEMA, sync=sync) as db:
        with pytest.raises(objstore_db.InvalidKeyError, match="folder"):
            await db.put("docs", {"v": 1}, "folder/")
        for key in ["a/./b", "../up"]:
            with pytest.raises(objstore_db.InvalidKeyError, match="segment"):
                await db.put("docs", {"v": 1}, key)
        await db.put("docs", {"v": 1}, "a//b")
        assert await db.keys("docs") == ["a//b", "ok", "x//y"], "the folder marker is no record"
