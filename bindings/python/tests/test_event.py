"""event: callbacks and the async iterator."""

from __future__ import annotations

import asyncio

import objstore_db


async def test_callbacks_arrive_after_commit_and_stop_after_off(db: objstore_db.Database) -> None:
    seen: list[objstore_db.Event] = []
    sub = db.on(["created", "deleted"], seen.append, store="people")
    await db.put("people", {"id": 1, "name": "ada", "email": "a@x"})
    await db.remove("people", 1)
    await db.put("notes", "not this store")
    assert [(e.kind, e.key) for e in seen] == [("created", 1), ("deleted", 1)]
    assert seen[0].value == {"id": 1, "name": "ada", "email": "a@x"}
    assert await sub.off()
    await db.put("people", {"id": 2, "name": "bob", "email": "b@x"})
    assert len(seen) == 2


async def test_events_as_an_async_iterator(db: objstore_db.Database) -> None:
    events = db.events("created", "updated")
    first = asyncio.ensure_future(events.__anext__())
    await asyncio.sleep(0.05)
    await db.put("people", {"id": 1, "name": "ada", "email": "a@x"})
    await db.put("people", {"id": 1, "name": "ada", "email": "new@x"})
    assert (await first).kind == "created"
    assert (await events.__anext__()).kind == "updated"
    await events.aclose()
