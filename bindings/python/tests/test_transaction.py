"""transaction: async with commits or aborts whole; run(); overlapping transactions wait their turn."""

from __future__ import annotations

import asyncio

import pytest

import objstore_db


async def test_async_with_commits_on_exit(db: objstore_db.Database) -> None:
    async with db.transaction(["people", "notes"], "readwrite") as tx:
        await tx.put("people", {"id": 1, "name": "ada", "email": "a@x"})
        await tx.put("notes", "hello")
        assert await tx.get("people", 1) == {"id": 1, "name": "ada", "email": "a@x"}
    assert await db.count("notes") == 1


async def test_an_exception_aborts_everything(db: objstore_db.Database) -> None:
    with pytest.raises(RuntimeError):
        async with db.transaction("people", "readwrite") as tx:
            await tx.put("people", {"id": 1, "name": "ada", "email": "a@x"})
            raise RuntimeError("changed my mind")
    assert await db.count("people") == 0


async def test_a_failed_write_inside_leaves_nothing(people: objstore_db.Database) -> None:
    with pytest.raises(objstore_db.ConstraintError):
        async with people.transaction("people", "readwrite") as tx:
            await tx.put("people", {"id": 9, "name": "new", "email": "new@x"})
            await tx.add("people", {"id": 1, "name": "dup", "email": "dup@x"})
    assert await people.get("people", 9) is None


async def test_run_commits_what_the_body_returns(db: objstore_db.Database) -> None:
    async def body(tx: objstore_db.Transaction) -> int:
        await tx.put("people", {"id": 1, "name": "ada", "email": "a@x"})
        return await tx.count("people")

    assert await db.run(body, "people", "readwrite") == 1


async def test_a_request_outside_an_open_transaction_waits_for_it(db: objstore_db.Database) -> None:
    async with db.transaction("people", "readwrite") as tx:
        await tx.put("people", {"id": 1, "name": "ada", "email": "a@x"})
        outside = asyncio.ensure_future(db.get("people", 1))
        await asyncio.sleep(0.2)
        assert not outside.done(), "it waits while the transaction is open"
        await tx.put("people", {"id": 2, "name": "bob", "email": "b@x"})
    assert await outside == {"id": 1, "name": "ada", "email": "a@x"}
    assert await db.count("people") == 2


async def test_two_tasks_each_in_a_transaction_both_complete(db: objstore_db.Database) -> None:
    order: list[str] = []

    async def writer(name: str, ids: range) -> None:
        async with db.transaction(["people", "notes"], "readwrite") as tx:
            order.append(f"{name} begun")
            for i in ids:
                await tx.put("people", {"id": i, "name": name, "email": f"{i}@x"})
                await asyncio.sleep(0)
            await tx.put("notes", f"{name} saw {await tx.count('people')}")
            order.append(f"{name} done")

    await asyncio.gather(writer("first", range(0, 50)), writer("second", range(50, 100)))
    # One after the other, whole: the second saw all of the first's records.
    assert order == ["first begun", "first done", "second begun", "second done"]
    assert sorted(await db.values("notes")) == ["first saw 50", "second saw 100"]


async def test_a_cancelled_task_never_leaves_its_transaction_open(db: objstore_db.Database) -> None:
    started = asyncio.Event()

    async def holds_a_transaction() -> None:
        async with db.transaction("people", "readwrite") as tx:
            await tx.put("people", {"id": 1, "name": "ada", "email": "a@x"})
            started.set()
            await asyncio.sleep(60)

    task = asyncio.create_task(holds_a_transaction())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Aborted: the database serves other requests again, and the write is gone.
    assert await db.count("people") == 0


async def test_a_task_cancelled_while_its_transaction_begins_leaves_none_open(db: objstore_db.Database) -> None:
    # Requests queued ahead keep begin() in flight when the task is cancelled (tasks made
    # first: each submits its put before the transaction's task asks to begin).
    ahead = [asyncio.ensure_future(db.put("notes", f"n{i}")) for i in range(2000)]

    async def opens_a_transaction() -> None:
        async with db.transaction("people", "readwrite") as tx:
            await tx.put("people", {"id": 1, "name": "ada", "email": "a@x"})

    task = asyncio.create_task(opens_a_transaction())
    await asyncio.sleep(0)  # the task starts and asks for its transaction
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.gather(*ahead)
    # The transaction that opened for nobody is aborted as it opens: requests waiting behind
    # it run at once, not after the 30 s idle timeout (20 s is a hang, not a speed, check).
    assert await asyncio.wait_for(db.count("people"), timeout=20) == 0
