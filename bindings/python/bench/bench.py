"""Python benchmark: objstore_db against the stdlib's sqlite3 + json (the limit for a Python
caller) and aiosqlite (what asyncio users pick), each doing the same work, measured in the same
run so that the ratios hold on a noisy machine.

    bindings/python/bench/run            # writes target/bench/python.json
    bindings/python/bench/run --smoke    # small sizes; checks all sides return the same data

Every side keeps the same records in a file in WAL mode with synchronous=NORMAL: a data table
keyed by id holding the JSON text, and one table per index (city, age, [city, age]) holding
(index key, id) — what the library's SQLite mechanism writes. A bulk put is one transaction that
reads each old record and rewrites its index entries, as an upsert must.

Figures are named `<workload>_vs_<baseline>`; ratio = our ops/s over theirs (higher is better),
each side's figure the median of its rounds, the rounds of the sides interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import sqlite3
import statistics
import tempfile
import time
from typing import Any, Awaitable, Callable

import aiosqlite

import objstore_db
from objstore_db import KeyRange

CITIES = 50
AGES = 100
SCHEMA = {
    "stores": [
        {
            "name": "bench",
            "keyPath": "id",
            "indexes": [{"keyPath": "city"}, {"keyPath": "age"}, {"name": "city, age", "keyPath": ["city", "age"]}],
        }
    ]
}
TABLES = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS data (k TEXT NOT NULL PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS idx_city (ik TEXT NOT NULL, pk TEXT NOT NULL, PRIMARY KEY (ik, pk)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS idx_age (ik INTEGER NOT NULL, pk TEXT NOT NULL, PRIMARY KEY (ik, pk)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS idx_city_age (c TEXT NOT NULL, a INTEGER NOT NULL, pk TEXT NOT NULL,
  PRIMARY KEY (c, a, pk)) WITHOUT ROWID;
"""
GET = "SELECT v FROM data WHERE k = ?"
BY_AGE = "SELECT d.v FROM idx_age AS i JOIN data AS d ON d.k = i.pk WHERE i.ik = ? ORDER BY i.pk"
PAGE = "SELECT d.v FROM idx_city_age AS i JOIN data AS d ON d.k = i.pk WHERE i.c = ? ORDER BY i.a, i.pk LIMIT 20"


def record(i: int) -> dict[str, Any]:
    return {
        "id": f"r{i:08}",
        "city": f"city-{i % CITIES:02}",
        "age": (i * 7919) % AGES,
        "name": f"person number {i}",
        "payload": "x" * 64,
    }


def walk(count: int, records: int) -> list[str]:
    """A fixed pseudo-random walk over the ids, the same for every side."""
    x, out = 0x9E3779B97F4A7C15, []
    for _ in range(count):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        out.append(f"r{x % records:08}")
    return out


# ----- the baselines: what a careful hand-written program does ---------------------------------


def upsert_all(execute: Callable[..., Any], fetch_old: Callable[[str], Any], records: list[dict[str, Any]]) -> None:
    """One upsert per record keeping the indexes right, through the given statement runners."""
    for rec in records:
        pk = rec["id"]
        old = fetch_old(pk)
        if old is not None:
            prev = json.loads(old)
            execute("DELETE FROM idx_city WHERE ik = ? AND pk = ?", (prev["city"], pk))
            execute("DELETE FROM idx_age WHERE ik = ? AND pk = ?", (prev["age"], pk))
            execute("DELETE FROM idx_city_age WHERE c = ? AND a = ? AND pk = ?", (prev["city"], prev["age"], pk))
        execute("INSERT OR REPLACE INTO data (k, v) VALUES (?, ?)", (pk, json.dumps(rec)))
        execute("INSERT OR IGNORE INTO idx_city (ik, pk) VALUES (?, ?)", (rec["city"], pk))
        execute("INSERT OR IGNORE INTO idx_age (ik, pk) VALUES (?, ?)", (rec["age"], pk))
        execute("INSERT OR IGNORE INTO idx_city_age (c, a, pk) VALUES (?, ?, ?)", (rec["city"], rec["age"], pk))


class Stdlib:
    """sqlite3 + json, synchronous: the physical limit for a Python caller."""

    def __init__(self, path: pathlib.Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.executescript(TABLES)

    def bulk_put(self, records: list[dict[str, Any]]) -> None:
        cur = self.conn.cursor()

        def fetch_old(pk: str) -> Any:
            row = cur.execute(GET, (pk,)).fetchone()
            return None if row is None else row[0]

        cur.execute("BEGIN")
        upsert_all(cur.execute, fetch_old, records)
        cur.execute("COMMIT")

    def get(self, pk: str) -> Any:
        row = self.conn.execute(GET, (pk,)).fetchone()
        return None if row is None else json.loads(row[0])

    def by_age(self, age: int) -> list[Any]:
        return [json.loads(v) for (v,) in self.conn.execute(BY_AGE, (age,))]

    def page(self, city: str) -> list[Any]:
        return [json.loads(v) for (v,) in self.conn.execute(PAGE, (city,))]


class Aio:
    """aiosqlite: one connection, its statements run on its own thread."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    @classmethod
    async def open(cls, path: pathlib.Path) -> "Aio":
        conn = await aiosqlite.connect(path, isolation_level=None)
        await conn.executescript(TABLES)
        return cls(conn)

    async def bulk_put(self, records: list[dict[str, Any]]) -> None:
        # aiosqlite's bulk path: executemany per table in one transaction. It skips the reads of
        # old records, which a fresh file does not need: a head start for the baseline.
        rows = [(r["id"], json.dumps(r), r["city"], r["age"]) for r in records]
        await self.conn.execute("BEGIN")
        await self.conn.executemany("INSERT OR REPLACE INTO data (k, v) VALUES (?, ?)", [(k, v) for k, v, _, _ in rows])
        await self.conn.executemany("INSERT OR IGNORE INTO idx_city (ik, pk) VALUES (?, ?)", [(c, k) for k, _, c, _ in rows])
        await self.conn.executemany("INSERT OR IGNORE INTO idx_age (ik, pk) VALUES (?, ?)", [(a, k) for k, _, _, a in rows])
        await self.conn.executemany(
            "INSERT OR IGNORE INTO idx_city_age (c, a, pk) VALUES (?, ?, ?)", [(c, a, k) for k, _, c, a in rows]
        )
        await self.conn.execute("COMMIT")

    async def get(self, pk: str) -> Any:
        async with self.conn.execute(GET, (pk,)) as cur:
            row = await cur.fetchone()
        return None if row is None else json.loads(row[0])

    async def by_age(self, age: int) -> list[Any]:
        async with self.conn.execute(BY_AGE, (age,)) as cur:
            return [json.loads(v) for (v,) in await cur.fetchall()]

    async def page(self, city: str) -> list[Any]:
        async with self.conn.execute(PAGE, (city,)) as cur:
            return [json.loads(v) for (v,) in await cur.fetchall()]


# ----- measuring --------------------------------------------------------------------------------


async def timed(ops: int, work: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await work()
    return ops / (time.perf_counter() - start)


async def paired(rounds: int, sides: dict[str, Callable[[], Awaitable[float]]]) -> dict[str, float]:
    """Each side's median ops/s, the sides' rounds interleaved so that drift hits all alike."""
    seen: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, side in sides.items():
            seen[name].append(await side())
    return {name: statistics.median(values) for name, values in seen.items()}


def sync(fn: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        return fn()

    return run


async def main(smoke: bool, out: pathlib.Path) -> None:
    records = 2_000 if smoke else 100_000
    rounds = 1 if smoke else 5
    put_rounds = 1 if smoke else 3
    awaited = 200 if smoke else 3_000
    gathered = 1_000
    ranges = 3 if smoke else 20
    pages = 20 if smoke else 500
    data = [record(i) for i in range(records)]
    ids = walk(max(awaited, gathered), records)

    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        figures: dict[str, dict[str, Any]] = {}

        def figure(workload: str, ours: float, baseline: str, theirs: float, against: str) -> None:
            figures[f"{workload}_vs_{baseline}"] = {
                "ops_per_s": round(ours),
                "baseline_ops_per_s": round(theirs),
                "ratio": round(ours / theirs, 3),
                "against": against,
            }

        # Bulk put: each round into fresh files, so every side inserts rather than replaces.
        generation = iter(range(1_000_000))

        async def put_ours() -> float:
            async with objstore_db.open(str(work / f"ours-{next(generation)}.sqlite3"), SCHEMA) as db:
                return await timed(records, lambda: db.put_many("bench", data))

        async def put_stdlib() -> float:
            side = Stdlib(work / f"stdlib-{next(generation)}.sqlite3")
            try:
                return await timed(records, sync(lambda: side.bulk_put(data)))
            finally:
                side.conn.close()

        async def put_aio() -> float:
            side = await Aio.open(work / f"aio-{next(generation)}.sqlite3")
            try:
                return await timed(records, lambda: side.bulk_put(data))
            finally:
                await side.conn.close()

        put = await paired(put_rounds, {"ours": put_ours, "stdlib": put_stdlib, "aio": put_aio})
        figure("bulk_put", put["ours"], "sqlite3", put["stdlib"], f"sqlite3 + json, {records} records in one transaction")
        figure("bulk_put", put["ours"], "aiosqlite", put["aio"], "aiosqlite, executemany per table in one transaction")

        # The read workloads share one loaded file per side.
        db = await objstore_db.open(str(work / "ours.sqlite3"), SCHEMA)
        await db.put_many("bench", data)
        std = Stdlib(work / "stdlib.sqlite3")
        std.bulk_put(data)
        aio = await Aio.open(work / "aio.sqlite3")
        await aio.bulk_put(data)

        # Every side answers alike before any is timed.
        for pk in ids[:50]:
            assert await db.get("bench", pk) == std.get(pk) == await aio.get(pk), pk
        assert await db.values("bench", index="age", range=KeyRange.only(7)) == std.by_age(7) == await aio.by_age(7)
        ours_page = await db.query("bench").where("city", "==", "city-03").order("age").list(20)
        assert [r["id"] for r in ours_page] == [r["id"] for r in std.page("city-03")] == [r["id"] for r in await aio.page("city-03")]
        plan = json.dumps(await db.query("bench").where("city", "==", "city-03").order("age").explain())
        assert "city, age" in plan, f"the page does not use the compound index: {plan}"

        async def one_at_a_time(get: Callable[[str], Awaitable[Any]]) -> None:
            for pk in ids[:awaited]:
                await get(pk)

        def get_ours(pk: str) -> "asyncio.Future[Any]":
            # The future itself, awaited as a caller awaits `db.get(...)`: no coroutine around it.
            return db.get("bench", pk)

        got = await paired(
            rounds,
            {
                "ours": lambda: timed(awaited, lambda: one_at_a_time(get_ours)),
                "stdlib": lambda: timed(awaited, sync(lambda: [std.get(pk) for pk in ids[:awaited]])),
                "aio": lambda: timed(awaited, lambda: one_at_a_time(aio.get)),
            },
        )
        figure("get_awaited", got["ours"], "sqlite3", got["stdlib"], "sqlite3 + json, one get after another")
        figure("get_awaited", got["ours"], "aiosqlite", got["aio"], "aiosqlite, each get awaited before the next")

        batch = ids[:gathered]
        loop = asyncio.get_running_loop()

        def settled(value: Any) -> "asyncio.Future[Any]":
            future = loop.create_future()
            future.set_result(value)
            return future

        gat = await paired(
            rounds,
            {
                "ours": lambda: timed(gathered, lambda: asyncio.gather(*(db.get("bench", pk) for pk in batch))),
                "stdlib": lambda: timed(gathered, sync(lambda: [std.get(pk) for pk in batch])),
                # The limit for any asyncio API: sqlite3's gets, each as a settled future, gathered
                # (gather schedules a callback per future, about 1.2 us here, which a loop of
                # synchronous calls does not pay).
                "stdlib_gathered": lambda: timed(
                    gathered, lambda: asyncio.gather(*(settled(std.get(pk)) for pk in batch))
                ),
                "aio": lambda: timed(gathered, lambda: asyncio.gather(*(aio.get(pk) for pk in batch))),
            },
        )
        figure("get_gathered", gat["ours"], "sqlite3", gat["stdlib"], f"sqlite3 + json, {gathered} gets in a loop")
        figure(
            "get_gathered",
            gat["ours"],
            "sqlite3_gathered",
            gat["stdlib_gathered"],
            f"sqlite3 + json, {gathered} gets each a settled future, gathered at once",
        )
        figure("get_gathered", gat["ours"], "aiosqlite", gat["aio"], f"aiosqlite, {gathered} gets gathered at once")

        async def ranges_ours() -> None:
            for age in range(ranges):
                await db.values("bench", index="age", range=KeyRange.only(age))

        async def ranges_aio() -> None:
            for age in range(ranges):
                await aio.by_age(age)

        per_age = records // AGES
        rng = await paired(
            rounds,
            {
                "ours": lambda: timed(ranges * per_age, ranges_ours),
                "stdlib": lambda: timed(ranges * per_age, sync(lambda: [std.by_age(a) for a in range(ranges)])),
                "aio": lambda: timed(ranges * per_age, ranges_aio),
            },
        )
        figure("index_range", rng["ours"], "sqlite3", rng["stdlib"], f"sqlite3 + json, records/s over ranges of {per_age}")
        figure("index_range", rng["ours"], "aiosqlite", rng["aio"], f"aiosqlite, records/s over ranges of {per_age}")

        cities = [f"city-{i % CITIES:02}" for i in range(pages)]

        async def pages_ours() -> None:
            for city in cities:
                await db.query("bench").where("city", "==", city).order("age").list(20)

        async def pages_aio() -> None:
            for city in cities:
                await aio.page(city)

        pg = await paired(
            rounds,
            {
                "ours": lambda: timed(pages, pages_ours),
                "stdlib": lambda: timed(pages, sync(lambda: [std.page(c) for c in cities])),
                "aio": lambda: timed(pages, pages_aio),
            },
        )
        figure("page", pg["ours"], "sqlite3", pg["stdlib"], "sqlite3 + json, 20-row pages by the (city, age) index")
        figure("page", pg["ours"], "aiosqlite", pg["aio"], "aiosqlite, 20-row pages by the (city, age) index")

        await db.close()
        std.conn.close()
        await aio.conn.close()

    print(f"python bench ({records} records; ratio = objstore_db ops/s over the baseline's)")
    for name, f in figures.items():
        print(f"  {name:<28} {f['ops_per_s']:>10} ops/s   ratio {f['ratio']:>6.2f}   ({f['against']})")
    if smoke:
        print("python bench: smoke run, all sides agree; nothing written")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="small sizes, check only, write nothing")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("target/bench/python.json"))
    args = parser.parse_args()
    asyncio.run(main(args.smoke, args.out))
