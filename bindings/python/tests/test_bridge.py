"""The async bridge: many completions at once, cancellation, closed loops, several loops and
threads on one database, and interpreter exit with work in flight."""

from __future__ import annotations

import asyncio
import gc
import os
import pathlib
import subprocess
import sys
import threading
import textwrap

import pytest

import objstore_db


async def test_thousands_of_concurrent_requests_all_complete(db: objstore_db.Database) -> None:
    await db.put_many("notes", [{"n": i} for i in range(2000)])
    values = await asyncio.gather(*(db.get("notes", i + 1) for i in range(2000)))
    assert [v["n"] for v in values] == list(range(2000))


async def test_a_cancelled_await_cancels_its_queued_request(db: objstore_db.Database) -> None:
    # Many puts queue up behind each other; the last is cancelled before the worker reaches it.
    puts = [asyncio.ensure_future(db.put("notes", {"n": i})) for i in range(500)]
    await asyncio.sleep(0)
    puts[-1].cancel()
    done = await asyncio.gather(*puts, return_exceptions=True)
    assert isinstance(done[-1], asyncio.CancelledError)
    # Exactly the requests that completed wrote; the library is still in order.
    written = await db.count("notes")
    assert written in (499, 500)
    assert await db.put("notes", "after") is not None


async def test_close_completes_queued_requests_first(db: objstore_db.Database) -> None:
    gets = [asyncio.ensure_future(db.get("people", 1)) for _ in range(200)]
    await asyncio.sleep(0)
    await db.close()
    outcomes = await asyncio.gather(*gets, return_exceptions=True)
    assert all(o is None or isinstance(o, objstore_db.RequestCancelledError) for o in outcomes), outcomes
    with pytest.raises(objstore_db.ClosedError, match="closed"):
        await db.get("people", 1)


async def count(db: objstore_db.Database) -> int:
    return await db.count("n")


def test_a_read_outside_a_running_loop_says_how_to_call_it(tmp_path: pathlib.Path) -> None:
    db = asyncio.run(objstore_db.open(str(tmp_path / "r.sqlite3"), {"stores": [{"name": "n"}]}))
    with pytest.raises(RuntimeError, match="call it inside a coroutine"):
        db.get("n", 1)
    asyncio.run(db.close())


def test_several_loops_in_several_threads_share_one_database(tmp_path: pathlib.Path) -> None:
    db = asyncio.run(objstore_db.open(str(tmp_path / "shared.sqlite3"), {"stores": [{"name": "n"}]}))
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        async def body() -> None:
            for i in range(200):
                await db.put("n", {"t": t, "i": i}, f"{t}-{i:03}")
            assert len(await db.keys("n", range=objstore_db.KeyRange.starts(f"{t}-"))) == 200

        try:
            asyncio.run(body())
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert asyncio.run(count(db)) == 800
    asyncio.run(db.close())


def test_a_completion_for_a_closed_loop_is_dropped_quietly(tmp_path: pathlib.Path) -> None:
    loop = asyncio.new_event_loop()
    db = loop.run_until_complete(objstore_db.open(str(tmp_path / "c.sqlite3"), {"stores": [{"name": "n"}]}))
    pending = loop.create_task(db.put_many("n", [{"i": i} for i in range(20000)]))
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()  # with the put still running: its completion has no loop to go to
    del pending
    assert asyncio.run(count(db)) in (0, 20000)
    asyncio.run(db.close())


def test_exit_with_an_open_database_and_work_in_flight_neither_hangs_nor_loses_commits(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "exit.sqlite3"
    script = textwrap.dedent(
        f"""
        import asyncio, objstore_db
        async def main():
            db = await objstore_db.open({str(path)!r}, {{"stores": [{{"name": "n"}}]}})
            await db.put("n", {{"committed": True}}, "k")
            for i in range(1000):
                asyncio.ensure_future(db.put("n", {{"i": i}}))
        asyncio.run(main())
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)

    async def check() -> None:
        async with objstore_db.open(str(path)) as db:
            assert await db.get("n", "k") == {"committed": True}

    asyncio.run(check())


def test_loops_that_come_and_go_leave_no_descriptors_behind(tmp_path: pathlib.Path) -> None:
    db = asyncio.run(objstore_db.open(str(tmp_path / "fd.sqlite3"), {"stores": [{"name": "n"}]}))

    async def one_get() -> None:
        assert await db.get("n", 1) is None

    asyncio.run(one_get())
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(200):
        asyncio.run(one_get())  # each run a new loop, with a wake-up pipe of its own
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == before
    asyncio.run(db.close())


def test_a_file_open_in_another_process_is_refused_naming_it(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "held.sqlite3"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import asyncio, sys, objstore_db
                async def main():
                    async with objstore_db.open({str(path)!r}, {{"stores": [{{"name": "n"}}]}}):
                        print("open", flush=True)
                        sys.stdin.readline()
                asyncio.run(main())
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"

        async def second_open() -> None:
            with pytest.raises(objstore_db.StorageError, match="held.sqlite3.*open in another process"):
                await objstore_db.open(str(path), durability="full")

        asyncio.run(second_open())
    finally:
        holder.communicate("\n", timeout=30)
    assert holder.returncode == 0

    async def once_released() -> None:
        async with objstore_db.open(str(path), durability="full") as db:
            assert await db.count("n") == 0

    asyncio.run(once_released())


def test_an_unknown_durability_is_refused_naming_the_choices(tmp_path: pathlib.Path) -> None:
    async def attempt() -> None:
        with pytest.raises(objstore_db.InvalidArgumentError, match='unknown durability "eventual" \\(known: normal, full\\)'):
            await objstore_db.open(str(tmp_path / "d.sqlite3"), durability="eventual")

    asyncio.run(attempt())


def test_each_error_code_of_the_library_is_an_exported_exception_class() -> None:
    from objstore_db import _native

    # The classes come from the library's one table of error codes (core/src/error.rs).
    assert len(_native.ERROR_CLASSES) == 15
    assert "NotFoundError" in _native.ERROR_CLASSES and "RemoteDataError" in _native.ERROR_CLASSES
    for name in _native.ERROR_CLASSES:
        cls = getattr(objstore_db, name)
        assert issubclass(cls, objstore_db.ObjstoreError), name
        assert name in objstore_db.__all__, name
        assert cls.__doc__, f"{name} carries the table's meaning"


async def test_a_library_error_raises_its_codes_class(db: objstore_db.Database) -> None:
    key = await db.add("notes", {"n": 1})
    with pytest.raises(objstore_db.ConstraintError) as raised:
        await db.add("notes", {"n": 2}, key)
    assert type(raised.value).__name__ == "ConstraintError"
    assert isinstance(raised.value, objstore_db.ObjstoreError)
