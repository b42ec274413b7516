"""crud: put, add, get, remove, clear, count, keys, values, on both mechanisms."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

import objstore_db
from objstore_db import KeyRange


async def test_put_then_get_returns_the_record(db: objstore_db.Database) -> None:
    key = await db.put("people", {"id": 7, "name": "eve", "city": "rome", "age": 30, "email": "eve@x"})
    assert key == 7
    assert await db.get("people", 7) == {"id": 7, "name": "eve", "city": "rome", "age": 30, "email": "eve@x"}
    assert await db.get("people", 8) is None


async def test_add_of_an_existing_key_is_a_constraint_error_and_changes_nothing(people: objstore_db.Database) -> None:
    with pytest.raises(objstore_db.ConstraintError, match="people"):
        await people.add("people", {"id": 1, "name": "other", "email": "other@x"})
    assert (await people.get("people", 1))["name"] == "ada"


async def test_counts_keys_and_values_by_index_and_range(people: objstore_db.Database) -> None:
    assert await people.count("people") == 4
    assert await people.count("people", index="city", range=KeyRange.only("paris")) == 2
    # Through an index, keys are the records' primary keys in index order (as in IndexedDB).
    assert await people.keys("people", index="city", unique=True) == [2, 1]
    assert await people.keys("people", range=KeyRange.bound(2, 4, upper_open=True)) == [2, 3]
    assert await people.keys("people", reverse=True, limit=2) == [4, 3]
    assert await people.keys("people", index="city, age") == [2, 4, 3, 1]
    assert [p["name"] for p in await people.values("people", index="city", range="oslo")] == ["bob", "dee"]
    assert await people.values("people", [4, 9, 1]) == [
        {"id": 4, "name": "dee", "city": "oslo", "age": 41, "email": "dee@x"},
        None,
        {"id": 1, "name": "ada", "city": "paris", "age": 36, "email": "ada@x"},
    ]


async def test_remove_by_key_and_by_range_then_clear(people: objstore_db.Database) -> None:
    assert await people.remove("people", 1) == 1
    assert await people.remove("people", KeyRange.lower(3)) == 2
    assert await people.keys("people") == [2]
    await people.clear("people")
    assert await people.count("people") == 0


async def test_keys_of_every_kind_in_indexeddb_order(db: objstore_db.Database) -> None:
    moment = datetime.datetime(2026, 11, 24, 12, 0, tzinfo=datetime.timezone.utc)
    keys: list[objstore_db.Key] = [b"\x00\xff", "b", moment, 2.5, -1, ("a", 1)]
    for k in keys:
        await db.put("notes", {"k": repr(k)}, k)
    # Numbers < dates < strings < binary < arrays.
    assert await db.keys("notes") == [-1, 2.5, moment, "b", b"\x00\xff", ("a", 1)]
    assert await db.get("notes", moment) == {"k": repr(moment)}


async def test_auto_increment_keys(db: objstore_db.Database) -> None:
    assert await db.put("notes", "first") == 1
    assert await db.put_many("notes", ["second", "third"]) == [2, 3]


async def test_bad_input_is_a_clear_exception_and_changes_nothing(db: objstore_db.Database) -> None:
    with pytest.raises(objstore_db.InvalidArgumentError, match="cannot be stored as JSON"):
        await db.put("people", {"id": 1, "when": object()})
    with pytest.raises(objstore_db.InvalidKeyError, match="a bool is not a valid key"):
        await db.get("people", True)
    with pytest.raises(objstore_db.InvalidKeyError, match="a set is not a valid key"):
        await db.get("people", {1})  # type: ignore[arg-type]
    with pytest.raises(objstore_db.NotFoundError, match="nowhere"):
        await db.put("nowhere", {"id": 1})
    with pytest.raises(objstore_db.InvalidKeyError):
        await db.put("people", {"id": None, "name": "no key"})
    assert await db.count("people") == 0


async def test_a_schema_that_is_not_valid_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(objstore_db.ObjstoreError, match="schema"):
        await objstore_db.open(str(tmp_path / "bad.sqlite3"), {"stores": 5})
    with pytest.raises(objstore_db.InvalidArgumentError, match="tape"):
        await objstore_db.open(str(tmp_path / "bad.sqlite3"), None, mechanism="tape")


async def test_an_int_key_a_double_cannot_hold_is_refused_suggesting_a_string(db: objstore_db.Database) -> None:
    snowflake = 1_234_567_890_123_456_789
    with pytest.raises(objstore_db.InvalidKeyError, match="string key"):
        await db.put("people", {"id": snowflake, "email": "s@x"})
    with pytest.raises(objstore_db.InvalidKeyError, match="string key"):
        await db.get("people", snowflake)
    assert await db.put("people", {"id": str(snowflake), "email": "s@x"}) == str(snowflake)
    assert await db.count("people") == 1


async def test_schema_versions_as_ydn_db_has_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "versions.sqlite3")
    schema: dict[str, Any] = {"stores": [{"name": "people", "keyPath": "id"}]}
    async with objstore_db.open(path, schema) as db:
        assert (db.version, db.previous_version) == (1, None)
    async with objstore_db.open(path, schema) as db:
        assert (db.version, db.previous_version) == (1, 1)
    schema["stores"][0]["indexes"] = [{"keyPath": "city"}]
    async with objstore_db.open(path, schema) as db:
        assert (db.version, db.previous_version) == (2, 1)
        assert (await db.schema())["version"] == 2
    with pytest.raises(objstore_db.ObjstoreError, match="at version 2, newer than the schema's version 1"):
        await objstore_db.open(path, {**schema, "version": 1})


async def test_a_read_of_an_idle_database_is_answered_on_the_spot_and_sees_writes_made_before_it(
    people: objstore_db.Database,
) -> None:
    # Idle (every write awaited): the read runs in the call, and its future is resolved already.
    got = people.get("people", 2)
    assert got.done() and got.result()["name"] == "bob"
    counted = people.count("people")
    assert counted.done() and counted.result() == 4
    page = people.query("people").order("age")
    first = page.list(2)
    assert first.done() and [p["name"] for p in first.result()] == ["bob", "cy"]
    assert [p["name"] for p in await page.list(2)] == ["ada", "dee"]
    # A put made (its task started) but not awaited: the read queues behind it on the worker,
    # or, if the put has finished already, runs here; it sees it either way.
    put = asyncio.ensure_future(people.put("people", {"id": 9, "name": "ivy", "email": "ivy@x"}))
    await asyncio.sleep(0)
    after = people.get("people", 9)
    assert (await after)["name"] == "ivy"
    assert await put == 9
    # Inside a transaction reads are part of it, never answered beside it.
    async with people.transaction(["people"], "readwrite") as tx:
        await tx.put("people", {"id": 10, "name": "jo", "email": "jo@x"})
        inside = tx.get("people", 10)
        assert not inside.done()
        assert (await inside)["name"] == "jo"
    # A read's error is the future's, as for any request.
    with pytest.raises(objstore_db.ObjstoreError, match="nowhere"):
        await people.get("nowhere", 1)


async def test_an_int_key_comes_back_an_int_past_two_to_the_53(db: objstore_db.Database) -> None:
    for key in (2**53, -(2**53), 2**60, 3):
        assert await db.put("people", {"id": key, "email": f"{key}@x"}) == key
        stored = await db.keys("people", range=key)
        assert stored == [key] and isinstance(stored[0], int)
