"""pytest's side of the fixtures: a class, a failure with its line, a skip, a test that passes
on its second attempt (pytest-rerunfailures), and a teardown error after a failure."""
import os
import pathlib

import pytest


def attempt(name: str) -> int:
    """How many times this test has started, counted in PRODUCERS_STATE."""
    counter = pathlib.Path(os.environ["PRODUCERS_STATE"]) / name
    count = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(count))
    return count


class TestUser:
    def test_create(self):
        assert 1 + 1 == 2

    def test_rename(self):
        assert "old".upper() == "NEW", "the name did not change"


def test_skipped():
    pytest.skip("no network here")


def test_flaky():
    assert attempt("pytest-flaky") > 1, "first attempt fails"


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown failed")


def test_fails_then_teardown_fails(broken_teardown):
    assert [1, 2] == [1, 3]
