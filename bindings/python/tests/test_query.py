"""query: the builder, pages that continue, explain, patch and delete."""

from __future__ import annotations

import objstore_db


async def test_pages_continue_from_call_to_call(people: objstore_db.Database) -> None:
    q = people.query("people").where("city", "==", "paris").order("age")
    assert [p["name"] for p in await q.list(1)] == ["cy"]
    assert [p["name"] for p in await q.list(1)] == ["ada"]
    assert await q.list(1) == []
    assert await people.query("people").where("age", ">", 30).count() == 2


async def test_select_unique_reverse_and_explain(people: objstore_db.Database) -> None:
    q = people.query("people").where("city", "==", "oslo").order("age").reverse().select("name")
    assert await q.list(10) == [{"name": "dee"}, {"name": "bob"}]
    plan = await people.query("people").where("city", "==", "oslo").and_("age", ">=", 30).explain()
    assert "city" in str(plan)


async def test_patch_and_delete_every_match(people: objstore_db.Database) -> None:
    assert await people.query("people").where("city", "==", "oslo").patch({"city": "bergen"}) == 2
    assert await people.count("people", index="city", range="bergen") == 2
    assert await people.query("people").where("age", "<", 30).delete() == 2
    assert await people.keys("people") == [1, 4]


async def test_a_bad_condition_names_what_is_wrong(people: objstore_db.Database) -> None:
    try:
        await people.query("people").where("age", "!=", 3).list(5)
    except objstore_db.InvalidArgumentError as e:
        assert "!=" in str(e)
    else:
        raise AssertionError("an unknown operator was accepted")


async def test_booleans_and_none_filter_with_equals_as_in_node_and_c(db: objstore_db.Database) -> None:
    await db.put_many("notes", [{"done": True}, {"done": False}, {"done": None}, {"done": True}, {}])
    assert await db.query("notes").where("done", "=", True).count() == 2
    assert await db.query("notes").where("done", "=", False).count() == 1
    assert await db.query("notes").where("done", "=", None).count() == 1
    try:
        await db.query("notes").where("done", ">", True).count()
    except objstore_db.InvalidArgumentError as e:
        assert ">" in str(e) and "done" in str(e)
    else:
        raise AssertionError("a boolean compared with > was accepted")
