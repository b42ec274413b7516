"""The Python quickstart: test results in a local database, read back the way the results app
reads them (newest run per platform/runtime pair), a streaming cursor and a transaction.

    pip install ./bindings/python
    python examples/python/quickstart.py [path/to/file.sqlite3]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

import objstore_db

SCHEMA = {
    "stores": [
        {
            "name": "results",
            "keyPath": "id",
            "indexes": [{"keyPath": "platform"}, {"keyPath": ["platform", "browser"]}],
        }
    ]
}


async def main(path: str) -> None:
    async with objstore_db.open(path, SCHEMA) as db:
        await db.put_many(
            "results",
            [
                {"id": f"{platform}/{browser}/{9999 - run}", "platform": platform, "browser": browser, "crud": "fail" if run == 1 else "pass"}
                for platform, browser in [("linux-x86_64", "python"), ("linux-x86_64", "c"), ("macos-arm64", "python")]
                for run in range(3)
            ],
        )
        # One key per platform/runtime pair: the newest run (reverse timestamps sort first).
        newest = await db.keys("results", index="platform, browser", unique=True)
        print("newest run per pair:", newest)
        print(await db.values("results", newest))

        linux = db.query("results").where("platform", "==", "linux-x86_64").order("id")
        print("first linux page:", [r["id"] for r in await linux.list(2)])
        print("next linux page:", [r["id"] for r in await linux.list(2)])

        async for item in db.query("results").where("crud", "==", "fail"):
            await item.delete()  # a failed run goes; the cursor's other requests run meanwhile

        async with db.transaction("results", "readwrite") as tx:
            await tx.put("results", {"id": "linux-x86_64/python/0000", "platform": "linux-x86_64", "browser": "python", "crud": "pass"})
        print(await db.sql("SELECT COUNT(*) AS runs FROM results WHERE browser = ?", ["python"]))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as scratch:
            asyncio.run(main(f"{scratch}/quickstart.sqlite3"))
