"""Keys and values as the native module takes them: JSON text, keys in the library's JSON form
(`{"$date": ms}`, `{"$binary": hex}`, lists for tuples), and key ranges and scans."""

from __future__ import annotations

import datetime
import json
from typing import Any, Callable, Optional, Union

from ._native import InvalidArgumentError, InvalidKeyError

Key = Union[int, float, str, bytes, datetime.datetime, "tuple[Any, ...]"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _key_json(key: Any) -> Any:
    """A Python key as the library's JSON form of it."""
    if isinstance(key, (int, float, str)) and not isinstance(key, bool):  # a bool falls to the error below
        return key
    if isinstance(key, (bytes, bytearray, memoryview)):
        return {"$binary": bytes(key).hex()}
    if isinstance(key, datetime.datetime):
        moment = key if key.tzinfo is not None else key.replace(tzinfo=datetime.timezone.utc)
        return {"$date": (moment - _EPOCH) / datetime.timedelta(milliseconds=1)}
    if isinstance(key, (tuple, list)):
        return [_key_json(k) for k in key]
    raise InvalidKeyError(
        f"a {type(key).__name__} is not a valid key ({key!r}); keys are int, float, str, bytes, "
        "datetime or tuples of them"
    )


def _key_py(value: Any) -> Any:
    """The library's JSON form of a key as the Python key."""
    if isinstance(value, list):
        return tuple(_key_py(v) for v in value)
    if isinstance(value, dict):
        if "$date" in value:
            return _EPOCH + datetime.timedelta(milliseconds=value["$date"])
        if "$binary" in value:
            return bytes.fromhex(value["$binary"])
    return value


def _filter_json(value: Any) -> Any:
    """A condition's value: a key, or True, False or None (no keys: the engine compares them with `=`)."""
    return value if value is None or isinstance(value, bool) else _key_json(value)


def _dumps(what: str, value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{what} cannot be stored as JSON: {e}") from None


# What json.dumps does with a str (in C), without its dispatch: a str key is the common case.
_quoted: Callable[[str], str] = json.encoder.encode_basestring_ascii


def _key_text(key: Any) -> str:
    if type(key) is str:
        return _quoted(key)
    return json.dumps(_key_json(key))


class KeyRange:
    """A range of keys, for `remove`, `count`, `keys` and `values`."""

    __slots__ = ("_json",)

    def __init__(self, spec: dict[str, Any]) -> None:
        self._json = spec

    @staticmethod
    def only(key: Key) -> "KeyRange":
        """Exactly `key`."""
        return KeyRange({"only": _key_json(key)})

    @staticmethod
    def lower(key: Key, open: bool = False) -> "KeyRange":
        """Every key from `key` on (after it when `open`)."""
        return KeyRange({"lower": _key_json(key), "lowerOpen": open})

    @staticmethod
    def upper(key: Key, open: bool = False) -> "KeyRange":
        """Every key up to `key` (before it when `open`)."""
        return KeyRange({"upper": _key_json(key), "upperOpen": open})

    @staticmethod
    def bound(lower: Key, upper: Key, lower_open: bool = False, upper_open: bool = False) -> "KeyRange":
        """Every key from `lower` to `upper`; an open end leaves its bound out."""
        return KeyRange(
            {"lower": _key_json(lower), "upper": _key_json(upper), "lowerOpen": lower_open, "upperOpen": upper_open}
        )

    @staticmethod
    def starts(prefix: str) -> "KeyRange":
        """Every string key beginning with `prefix`."""
        return KeyRange({"starts": prefix})

    def __repr__(self) -> str:
        return f"KeyRange({self._json!r})"


def _target(key_or_range: Any) -> str:
    if isinstance(key_or_range, KeyRange):
        return json.dumps(key_or_range._json)
    return json.dumps({"only": _key_json(key_or_range)})


def _scan(
    index: Optional[str],
    range: "Optional[Union[Key, KeyRange]]",
    limit: Optional[int],
    offset: int,
    reverse: bool,
    unique: bool,
) -> str:
    scan: dict[str, Any] = {"offset": offset, "reverse": reverse, "unique": unique}
    if index is not None:
        scan["index"] = index
    if range is not None:
        scan["range"] = range._json if isinstance(range, KeyRange) else {"only": _key_json(range)}
    if limit is not None:
        scan["limit"] = limit
    return json.dumps(scan)
