"""cursor: streaming cursors whose body awaits other requests, that update and delete, refuse
writes when read-only, and keep memory flat on a large store."""

from __future__ import annotations

import gc
import os
import pathlib

import objstore_db


async def test_async_for_streams_updates_and_deletes_while_awaiting_other_requests(
    people: objstore_db.Database,
) -> None:
    seen = []
    async for item in people.query("people"):
        seen.append(item.primary_key)
        # Another request awaited inside the body: it never waits for the cursor.
        assert (await people.get("people", item.primary_key))["id"] == item.primary_key
        if item.value["age"] > 30:
            await item.update({**item.value, "senior": True})
        else:
            await item.delete()
    assert seen == [1, 2, 3, 4]
    assert [p["name"] for p in await people.values("people")] == ["ada", "dee"]
    assert all(p["senior"] for p in await people.values("people"))


async def test_a_readonly_cursor_refuses_writes(people: objstore_db.Database) -> None:
    async for item in people.query("people").cursor("readonly"):
        try:
            await item.delete()
        except objstore_db.ReadOnlyError:
            break
        raise AssertionError("a read-only cursor deleted a record")
    assert await people.count("people") == 4


async def test_a_large_store_streams_in_batches(db: objstore_db.Database) -> None:
    await db.put_many("notes", [{"n": i} for i in range(5000)])
    total = 0
    async for item in db.query("notes").cursor(batch=500):
        total += item.value["n"]
    assert total == sum(range(5000))


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def test_streaming_a_store_larger_than_memory_growth_stays_flat(tmp_path: pathlib.Path) -> None:
    # 60,000 records of 1 KiB: ~60 MiB of values, streamed by a cursor that holds one batch.
    schema = {"stores": [{"name": "blobs", "keyPath": "id"}]}
    async with objstore_db.open(str(tmp_path / "big.sqlite3"), schema) as db:
        filler = "x" * 1024
        for start in range(0, 60_000, 5_000):
            await db.put_many("blobs", [{"id": i, "body": filler} for i in range(start, start + 5_000)])
        gc.collect()
        before = resident_bytes()
        peak, seen = before, 0
        async for item in db.query("blobs").cursor(batch=200):
            seen += len(item.value["body"])
            if item.key % 2_000 == 0:
                peak = max(peak, resident_bytes())
        assert seen == 60_000 * 1024
        # A cursor that kept what it returned would grow by the store's size (~60 MiB).
        assert peak - before < 16 * 1024 * 1024, f"resident memory grew by {(peak - before) >> 20} MiB"
