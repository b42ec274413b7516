"""Shared fixtures: a database on each mechanism, with the people/notes schema of the C suites."""

from __future__ import annotations

import pathlib
from typing import AsyncIterator

import pytest

import objstore_db

SCHEMA = {
    "stores": [
        {
            "name": "people",
            "keyPath": "id",
            "indexes": [
                {"keyPath": "city"},
                {"keyPath": "email", "unique": True},
                {"keyPath": ["city", "age"]},
            ],
        },
        {"name": "notes", "autoIncrement": True},
    ]
}

PEOPLE = [
    {"id": 1, "name": "ada", "city": "paris", "age": 36, "email": "ada@x"},
    {"id": 2, "name": "bob", "city": "oslo", "age": 25, "email": "bob@x"},
    {"id": 3, "name": "cy", "city": "paris", "age": 25, "email": "cy@x"},
    {"id": 4, "name": "dee", "city": "oslo", "age": 41, "email": "dee@x"},
]


@pytest.fixture(params=["sqlite", "memory"])
async def db(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[objstore_db.Database]:
    database = await objstore_db.open(str(tmp_path / "t.sqlite3"), SCHEMA, mechanism=request.param)
    yield database
    if not database.closed:
        await database.close()


@pytest.fixture
async def people(db: objstore_db.Database) -> objstore_db.Database:
    await db.put_many("people", PEOPLE)
    return db
