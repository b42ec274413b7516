"""sql: the subset with bound parameters."""

from __future__ import annotations

import pytest

import objstore_db


async def test_select_update_with_bound_parameters(people: objstore_db.Database) -> None:
    rows = await people.sql("SELECT name, age FROM people WHERE city = ? ORDER BY age DESC", ["oslo"])
    assert rows == {"rows": [{"name": "dee", "age": 41}, {"name": "bob", "age": 25}], "columns": ["name", "age"], "aggregate": False}
    assert await people.sql("UPDATE people SET city = ? WHERE age < 30", ["x' OR '1'='1"]) == {"changed": 2}
    assert await people.sql("SELECT COUNT(*) AS n FROM people WHERE city = ?", ["x' OR '1'='1"]) == {"rows": [{"n": 2}], "columns": ["n"], "aggregate": True}
    # SELECT * names no columns: the rows are the records.
    everyone = await people.sql("SELECT * FROM people WHERE id = ?", [1])
    assert list(everyone) == ["rows"] and everyone["rows"][0]["id"] == 1


async def test_a_statement_outside_the_subset_is_refused_at_once(people: objstore_db.Database) -> None:
    with pytest.raises(objstore_db.InvalidArgumentError, match="the operator OR"):
        await people.sql("SELECT * FROM people WHERE id = 1 OR id = 2")
