"""pytest's plugins' side of the fixtures: subtests (two pass, one fails: pytest writes the
test once, with two <failure>s, and counts its subtests in tests=), a hypothesis property that
holds and one that fails with its falsifying example, and two tests pytest-retry reruns: flaky
passes on its second attempt, always fails all three (its JUnit says nothing of the retries:
flaky is a pass, always one failure)."""
import os
import pathlib

import pytest
from hypothesis import given, settings, strategies as st


def attempt(name: str) -> int:
    counter = pathlib.Path(os.environ["PRODUCERS_STATE"]) / name
    count = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(count))
    return count


def test_balances(subtests):
    for amount in (1, 2, 3):
        with subtests.test(msg="amount", amount=amount):
            assert amount != 2, "two does not balance"


@settings(database=None, derandomize=True)
@given(st.integers(min_value=0, max_value=1000))
def test_rounding_holds(n):
    assert round(n) == n


@settings(database=None, derandomize=True)
@given(st.integers(min_value=0, max_value=1000))
def test_halving_is_exact(n):
    assert (n // 2) * 2 == n, "odd amounts do not halve"


@pytest.mark.flaky(retries=2)
def test_flaky():
    assert attempt("retry-flaky") > 1, "first attempt fails"


@pytest.mark.flaky(retries=2)
def test_always():
    assert False, "never passes"
