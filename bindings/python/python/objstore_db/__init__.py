"""objstore-db for asyncio: a client-side database with object-storage sync.

Every operation is an awaitable; records are plain dicts and lists; keys are int, float, str,
bytes, datetime and tuples of them, in IndexedDB order. The work runs on the library's threads:
completions come back to the event loop that awaits them, many at a time per wake-up.

    async with objstore_db.open("results.sqlite3", schema) as db:
        await db.put("results", {"id": "a", "platform": "linux"})
        rows = await db.query("results").where("platform", "==", "linux").list(20)
"""

from __future__ import annotations

import asyncio
import atexit
import builtins
import collections.abc
import datetime
import json
import warnings
import weakref
from typing import Any, AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterable, Optional, Sequence, Union

from . import _native
from ._keys import Key, KeyRange, _dumps, _filter_json, _key_json, _key_py, _key_text, _scan, _target
from ._native import (
    ClosedError, ConflictError, ConstraintError, InternalError, InvalidArgumentError, InvalidKeyError, NetworkError,
    NotFoundError, ObjstoreError, ReadOnlyError, RemoteDataError, RemoteError, RequestCancelledError, SchemaError,
    StorageError, TransactionInactiveError,
)

__version__: str = _native.__version__

__all__ = [
    "open",
    "Database",
    "Transaction",
    "Query",
    "CursorItem",
    "Event",
    "Subscription",
    "Key",
    "KeyRange",
    "ObjstoreError",
    "NotFoundError",
    "InvalidKeyError",
    "InvalidArgumentError",
    "ConstraintError",
    "ReadOnlyError",
    "TransactionInactiveError",
    "SchemaError",
    "ClosedError",
    "RequestCancelledError",
    "StorageError",
    "ConflictError",
    "NetworkError",
    "RemoteError",
    "RemoteDataError",
    "InternalError",
    "SyncWarning",
]


class SyncWarning(UserWarning):
    """Raised at open (with `warnings.warn`) when a bucket is known to ignore conditional
    writes: writes to it are checked by reading first, so one race remains."""


# ----- the bridge to the event loop -----------------------------------------------------------


class _Bridge:
    """Per event loop: the native waker its completions queue in, and the drain the loop runs
    when the waker's pipe (watched with `add_reader`) says some have arrived. Results are
    decoded here, once, on the loop's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.waker = _native.Waker()
        # The loop holds the drain (and so the bridge), never the other way round: the bridge,
        # its pipe and any completions still queued go when the loop goes.
        loop.add_reader(self.waker.fileno(), self._drain)

    def _drain(self) -> None:
        loads = json.loads
        for target, kind, payload in self.waker.take():
            if kind == 2:
                try:
                    target(loads(payload))
                except Exception as e:  # a listener's failure is the listener's, not ours
                    asyncio.get_running_loop().call_exception_handler(
                        {"message": "objstore_db event listener failed", "exception": e}
                    )
            elif target.done():
                pass  # its awaiting task was cancelled
            elif kind == 0:
                target.set_result(loads(payload))
            else:
                target.set_exception(payload)


_bridges: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Bridge]" = weakref.WeakKeyDictionary()


def _waker(loop: asyncio.AbstractEventLoop) -> Any:
    bridge = _bridges.get(loop)
    if bridge is None:
        bridge = _bridges[loop] = _Bridge(loop)
    return bridge.waker


def _request(method: Callable[..., int], *args: Any, cancel: Optional[Callable[[int], bool]] = None, now: Optional[Callable[..., Any]] = None, **kw: Any) -> "asyncio.Future[Any]":
    """Makes a native request at once; the future resolves with its decoded JSON result.
    Cancelling the future (or the task awaiting it) cancels the request too: a queued one
    then never runs. A future, not a coroutine: `gather` of many needs no task per request.
    A read outside a transaction first tries `now`, which answers on this thread when the
    database is idle: the future is then resolved already, and awaiting it does not wait."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            f"objstore_db: {method.__name__}() makes its request at once and returns a future of the "
            "running event loop; call it inside a coroutine (asyncio.run(main()), not asyncio.run(db.get(...)))"
        ) from None
    if now is not None and kw.get("tx") is None:
        answer = now(*args, fresh=kw.get("fresh", False))
        if answer is not None:
            return _settled(loop, answer)
    future = loop.create_future()
    request = method(_waker(loop), future, *args, **kw)
    if cancel is not None:
        future.add_done_callback(lambda f: f.cancelled() and cancel(request))
    return future


def _settled(loop: asyncio.AbstractEventLoop, answer: tuple[int, Any]) -> "asyncio.Future[Any]":
    """A future of `loop` settled with a read's answer given inside the call: `(0, JSON text)`
    or `(1, exception)`."""
    future = loop.create_future()
    kind, payload = answer
    if kind == 0:
        future.set_result(json.loads(payload))
    else:
        future.set_exception(payload)
    return future


async def _call(method: Callable[..., int], *args: Any, cancel: Optional[Callable[[int], bool]] = None, **kw: Any) -> Any:
    return await _request(method, *args, cancel=cancel, **kw)


# ----- events ---------------------------------------------------------------------------------


class Event:
    """A change: kind ("created", "updated", "deleted", or a sync event), store, key,
    value and message where they apply."""

    __slots__ = ("kind", "store", "key", "value", "message")

    def __init__(self, data: dict[str, Any]) -> None:
        self.kind: str = data.get("kind", "")
        self.store: Optional[str] = data.get("store")
        self.key: Any = _key_py(data["key"]) if data.get("key") is not None else None
        self.value: Any = data.get("value")
        self.message: Optional[str] = data.get("message")

    def __repr__(self) -> str:
        return f"Event({self.kind!r}, store={self.store!r}, key={self.key!r})"


class Subscription:
    """A listener's registration; `await sub.off()` ends it."""

    def __init__(self, db: "Database", registered: "asyncio.Future[Any]") -> None:
        self._db = db
        self._registered = registered

    def __await__(self) -> Generator[Any, None, "Subscription"]:
        yield from self._registered.__await__()
        return self

    async def off(self) -> bool:
        """Ends the registration; False when it had ended already."""
        id = await self._registered
        return bool(await _call(self._db._native.unsubscribe, id))


# ----- queries and cursors --------------------------------------------------------------------


class CursorItem:
    """One record met by a cursor; `update` and `delete` change it in place."""

    __slots__ = ("key", "primary_key", "value", "_cursor", "_db")

    def __init__(self, data: dict[str, Any], cursor: Any, db: "Database") -> None:
        self.key: Any = _key_py(data["key"])
        self.primary_key: Any = _key_py(data["primaryKey"])
        self.value: Any = data["value"]
        self._cursor = cursor
        self._db = db

    async def update(self, value: Any) -> None:
        """Replaces the record (its key must stay the same)."""
        await _call(self._cursor.update, _key_text(self.primary_key), _dumps("value", value))
        self.value = value

    async def delete(self) -> None:
        """Removes the record."""
        await _call(self._cursor.delete, _key_text(self.primary_key))


class Query:
    """A query over one store, built step by step: `where(field, op, value)`, `and_(...)`,
    `order(field)`, `reverse()`, `unique()`, `select(*fields)`. `await q.list(n)` gives the
    next page at each call; `async for item in q` streams every match with flat memory."""

    def __init__(self, db: "Database", store: str, tx: Optional[int] = None) -> None:
        self._db = db
        self._tx = tx
        self._spec: dict[str, Any] = {"from": store}
        self._native: Any = None

    def _built(self) -> Any:
        if self._native is None:
            self._native = self._db._native.query(_dumps("query", self._spec))
        return self._native

    def _with(self, field: str, value: Any) -> "Query":
        if self._native is not None:
            raise InvalidArgumentError("a query cannot change after it has been run; build a new one")
        self._spec[field] = value
        return self

    def where(self, field: str, op: str, value: Any) -> "Query":
        """A condition: `op` is `=`, `>`, `>=`, `<`, `<=` or `starts` (True, False, None: `=` only)."""
        return self._with("where", self._spec.get("where", []) + [[field, op, _filter_json(value)]])

    and_ = where

    def order(self, *fields: str) -> "Query":
        """Orders by these fields, then by primary key."""
        return self._with("order", list(fields))

    def reverse(self) -> "Query":
        """Reverses the order."""
        return self._with("reverse", True)

    def unique(self) -> "Query":
        """One record per order key."""
        return self._with("unique", True)

    def select(self, *fields: str) -> "Query":
        """Gives these fields of each match (one field: its values) instead of records."""
        return self._with("select", list(fields))

    def list(self, n: int, *, fresh: bool = False) -> "asyncio.Future[builtins.list[Any]]":
        """The next `n` matches; each call continues where the last ended. `fresh`: a synced store asks
        its bucket first."""
        native = self._built()
        return _request(native.list, n, fresh=fresh, tx=self._tx, cancel=self._db._cancel, now=native.list_now)

    def count(self, *, fresh: bool = False) -> "asyncio.Future[int]":
        """How many records match."""
        native = self._built()
        return _request(native.count, fresh=fresh, tx=self._tx, cancel=self._db._cancel, now=native.count_now)

    async def explain(self) -> Any:
        """How the query would run: the index it reads and the conditions it checks."""
        return await _call(self._built().explain, tx=self._tx)

    async def patch(self, patch: dict[str, Any]) -> int:
        """Merges `patch` (a JSON merge patch) into every match; returns how many changed."""
        result: int = await _call(self._built().patch, _dumps("patch", patch), tx=self._tx)
        return result

    async def delete(self) -> int:
        """Removes every match; returns how many went."""
        result: int = await _call(self._built().delete, tx=self._tx)
        return result

    def cursor(self, mode: str = "readwrite", batch: int = 100) -> AsyncIterator[CursorItem]:
        """Every match from the start, `batch` records per request."""
        return self._stream(mode, batch)

    def __aiter__(self) -> AsyncIterator[CursorItem]:
        return self._stream("readwrite", 100)

    async def _stream(self, mode: str, batch: int) -> AsyncIterator[CursorItem]:
        cursor = self._built().cursor(mode, tx=self._tx)
        while True:
            items = await _call(cursor.next, batch, cancel=self._db._cancel)
            if not items:
                return
            for item in items:
                yield CursorItem(item, cursor, self._db)


# ----- the database ---------------------------------------------------------------------------


class _Store:
    """The record operations, outside a transaction (`tx` None) or inside one."""

    _native: Any
    _tx: Optional[int]

    def _cancel(self, request: int) -> bool:
        raise NotImplementedError

    async def put(self, store: str, value: Any, key: Optional[Key] = None) -> Any:
        """Writes a record (replacing one under the same key); returns its key."""
        key_text = None if key is None else _key_text(key)
        return _key_py(await _call(self._native.put, store, _dumps("value", value), key_text, tx=self._tx))

    async def add(self, store: str, value: Any, key: Optional[Key] = None) -> Any:
        """Writes a new record; an existing key is a ConstraintError."""
        key_text = None if key is None else _key_text(key)
        return _key_py(await _call(self._native.add, store, _dumps("value", value), key_text, tx=self._tx))

    async def put_many(self, store: str, values: Iterable[Any]) -> list[Any]:
        """Writes many records in one transaction; returns their keys."""
        keys = await _call(self._native.put_many, store, _dumps("values", list(values)), tx=self._tx)
        return [_key_py(k) for k in keys]

    def get(self, store: str, key: Key, *, fresh: bool = False) -> "asyncio.Future[Any]":
        """The record under `key`, or None."""
        key_text = _key_text(key)
        if self._tx is None:
            # `_request`'s first step, without its generic arguments: the common case.
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                pass  # `_request` says what is wrong
            else:
                answer = self._native.get_now(store, key_text, fresh)
                if answer is not None:
                    return _settled(loop, answer)
        return _request(self._native.get, store, key_text, fresh=fresh, tx=self._tx, cancel=self._cancel)

    async def remove(self, store: str, key_or_range: Union[Key, KeyRange]) -> int:
        """Removes the record under a key or the records in a range; returns how many."""
        result: int = await _call(self._native.remove, store, _target(key_or_range), tx=self._tx)
        return result

    async def clear(self, store: str) -> None:
        await _call(self._native.clear, store, tx=self._tx)

    def count(
        self,
        store: str,
        index: Optional[str] = None,
        range: Optional[Union[Key, KeyRange]] = None,
        *,
        fresh: bool = False,
    ) -> "asyncio.Future[int]":
        scan = _scan(index, range, None, 0, False, False)
        return _request(
            self._native.scan, store, "count", scan, fresh=fresh, tx=self._tx, cancel=self._cancel, now=self._native.scan_now
        )

    async def keys(
        self,
        store: str,
        index: Optional[str] = None,
        range: Optional[Union[Key, KeyRange]] = None,
        limit: Optional[int] = None,
        offset: int = 0,
        reverse: bool = False,
        unique: bool = False,
        *,
        fresh: bool = False,
    ) -> list[Any]:
        scan = _scan(index, range, limit, offset, reverse, unique)
        keys = await _request(
            self._native.scan, store, "keys", scan, fresh=fresh, tx=self._tx, cancel=self._cancel, now=self._native.scan_now
        )
        return [_key_py(k) for k in keys]

    def values(
        self,
        store: str,
        keys: Optional[Sequence[Key]] = None,
        *,
        index: Optional[str] = None,
        range: Optional[Union[Key, KeyRange]] = None,
        limit: Optional[int] = None,
        offset: int = 0,
        reverse: bool = False,
        unique: bool = False,
        fresh: bool = False,
    ) -> "asyncio.Future[builtins.list[Any]]":
        """The records under a list of keys (None where there is none), or in a range."""
        if keys is not None:
            wanted = json.dumps([_key_json(k) for k in keys])
            return _request(
                self._native.values_of, store, wanted, fresh=fresh, tx=self._tx, cancel=self._cancel,
                now=self._native.values_of_now,
            )
        scan = _scan(index, range, limit, offset, reverse, unique)
        return _request(
            self._native.scan, store, "values", scan, fresh=fresh, tx=self._tx, cancel=self._cancel, now=self._native.scan_now
        )

    def sql(self, text: str, params: Optional[Sequence[Any]] = None) -> "asyncio.Future[Any]":
        """Runs one statement of the SQL subset with `?` parameters bound. A SELECT answers
        `{"rows": [...]}`, with `"columns"` (the names it selects, in order) and `"aggregate"`
        (True for COUNT/MIN/MAX/SUM/AVG: one row) unless it is `SELECT *`; INSERT, UPDATE and
        DELETE answer `{"changed": n}`, how many records they wrote."""
        params_text = None if params is None else _dumps("SQL parameters", [_key_json(p) if isinstance(p, (bytes, datetime.datetime, tuple)) else p for p in params])
        return _request(self._native.sql, text, params_text, tx=self._tx)


class Transaction(_Store):
    """An explicit transaction: requests made through it run in it. Ends with `commit()` or
    `abort()`; as `async with db.transaction(...)`, commits on exit and aborts on an exception
    (cancellation included)."""

    def __init__(self, db: "Database", stores: Sequence[str], mode: str) -> None:
        self._db = db
        self._native = db._native
        self._stores = list(stores)
        self._mode = mode
        self._tx: Optional[int] = None
        self._ended = False

    def _cancel(self, request: int) -> bool:
        return self._db._cancel(request)

    def query(self, store: str) -> Query:
        """A query over `store`, run in this transaction."""
        return Query(self._db, store, self._tx)

    async def begin(self) -> "Transaction":
        """Opens the transaction (after the one open now, if any); `async with` does it."""
        begun = _request(self._native.begin, _dumps("stores", self._stores), self._mode)
        try:
            self._tx = await asyncio.shield(begun)
        except asyncio.CancelledError:
            # The transaction opens all the same: it is aborted as soon as it does, never left
            # open with nobody to end it.
            begun.add_done_callback(self._abort_unowned)
            raise
        return self

    def _abort_unowned(self, begun: "asyncio.Future[Any]") -> None:
        if begun.cancelled() or begun.exception() is not None:
            return
        aborted = _request(self._native.abort, begun.result())
        aborted.add_done_callback(lambda f: f.cancelled() or f.exception())

    async def commit(self) -> None:
        """Commits what was done in it."""
        self._ended = True
        await _call(self._native.commit, self._tx)

    async def abort(self) -> None:
        """Rolls back what was done in it."""
        self._ended = True
        await _call(self._native.abort, self._tx)

    async def __aenter__(self) -> "Transaction":
        return await self.begin()

    async def __aexit__(self, kind: Any, error: Any, trace: Any) -> None:
        if self._ended or self._tx is None:
            return
        if kind is None:
            await self.commit()
        else:
            # Shielded: a cancelled task still ends its transaction, never leaving it open.
            await asyncio.shield(self.abort())


class Database(_Store):
    """An open database. Close it with `await db.close()` or `async with`."""

    def __init__(self, native: Any, name: str, version: int = 1, previous_version: Optional[int] = None) -> None:
        self._native = native
        self._tx = None
        self.name = name
        #: The schema version now, and before this open (None: the database is new).
        self.version = version
        self.previous_version = previous_version
        _open_databases.add(self)

    def _cancel(self, request: int) -> bool:
        return bool(self._native.cancel(request))

    def query(self, store: str) -> Query:
        """A query over `store`."""
        return Query(self, store)

    def transaction(self, stores: Union[str, Sequence[str]], mode: str = "readonly") -> Transaction:
        """A transaction over `stores`, "readonly" or "readwrite": `async with db.transaction(...) as tx`."""
        return Transaction(self, [stores] if isinstance(stores, str) else stores, mode)

    async def run(self, body: Callable[[Transaction], Awaitable[Any]], stores: Union[str, Sequence[str]], mode: str = "readonly") -> Any:
        """Runs `body(tx)` in a transaction: committed when it returns, aborted when it raises."""
        async with self.transaction(stores, mode) as tx:
            return await body(tx)

    async def schema(self) -> dict[str, Any]:
        """The schema as stored."""
        result: dict[str, Any] = await _call(self._native.schema)
        return result

    # ----- events ---------------------------------------------------------------------------

    def on(self, kinds: Union[str, Sequence[str]], listener: Callable[[Event], Any], store: Optional[str] = None) -> Subscription:
        """Calls `listener(event)` on this event loop for each event of these kinds. It is
        registered before any request made after this call; await the result to be sure."""
        filter: dict[str, Any] = {"kinds": [kinds] if isinstance(kinds, str) else list(kinds)}
        if store is not None:
            filter["store"] = store
        def deliver(data: dict[str, Any]) -> None:
            listener(Event(data))

        registered = _request(self._native.subscribe, deliver, json.dumps(filter))
        return Subscription(self, registered)

    async def events(self, *kinds: str, store: Optional[str] = None) -> AsyncGenerator[Event, None]:
        """The events of these kinds as an async iterator (all kinds when none are named)."""
        queue: "asyncio.Queue[Event]" = asyncio.Queue()
        names = list(kinds) or ["created", "updated", "deleted"]
        subscription = self.on(names, queue.put_nowait, store)
        await subscription
        try:
            while True:
                yield await queue.get()
        finally:
            if not self._native.is_closed():
                await subscription.off()

    # ----- sync -----------------------------------------------------------------------------

    async def flush(self) -> dict[str, Any]:
        """Sends waiting writes now: `{"sent", "pending", "refused", "rejected": [{"sequence",
        "code", "message"}], "held": [...], "offline"?, "blocked"?}`. The background sender
        sends writes too: `sent`, `rejected` and `held` are what this call did; `pending`
        (writes still waiting) and `refused` (refused writes awaiting resolve_refused(),
        whoever met the refusal) count every write. Rejected writes are kept in
        refused_writes(), held ones (a 5xx from the server) stay queued."""
        result: dict[str, Any] = await _call(self._native.flush, cancel=self._cancel)
        return result

    async def prefetch(self, store: str) -> None:
        """Lists a synced store and brings its local copy in line."""
        await _call(self._native.prefetch, store, cancel=self._cancel)

    async def checkpoint(self, store: str) -> dict[str, Any]:
        """Writes a checkpoint of a synced store that keeps them (`Options.checkpoints`): its
        every name as of now, so that a cold reader starts there instead of listing them all.
        Returns `{"manifest", "positionMs", "objects", "shards", "bytes"}`."""
        result: dict[str, Any] = await _call(self._native.checkpoint, store, cancel=self._cancel)
        return result

    def set_offline(self, offline: bool = True) -> None:
        """Offline: no request reaches a bucket; writes wait, reads answer from the cache."""
        self._native.set_offline(offline)

    def sync_stats(self, reset: bool = False) -> dict[str, Any]:
        """The requests made to buckets since the last reset (`reset`: start counting again):
        `{"requests": {kind: {status: n}}, "total", "bytesSent", "bytesReceived", "busyMs"
        (milliseconds with a request in flight), "costUsd", "costsUsd", "conditionalWrites"}`."""
        stats: dict[str, Any] = json.loads(self._native.sync_stats(reset))
        return stats

    async def refused_writes(self) -> list[Any]:
        """Writes the bucket refused (it holds another version), oldest first, until resolved:
        `[{"sequence", "store", "key", "op", "value", "code", "message"}]`."""
        result: list[Any] = await _call(self._native.refused_writes)
        return result

    async def resolve(self, sequence: int, resolution: str) -> None:
        """Resolves a refused write and every other refused write of its object: "discard" (the
        bucket's version wins) or "overwrite" (the local copy is sent over the bucket's)."""
        await _call(self._native.resolve, sequence, resolution)

    async def sync_status(self, store: str, key: Key) -> str:
        """Where the record under `key` stands with its bucket: "synced", "pending", "refused",
        "unusable", "unknown" or "local"."""
        result: str = await _call(self._native.sync_status, store, _key_text(key))
        return result

    async def withdraw_pending(self, store: str, key: Key) -> int:
        """Takes back the writes to `key` still waiting for the bucket, and the local record
        with them (no delete is queued): for a caller that told its own client the write
        failed, so that it does not land later. Returns how many were taken back."""
        result: int = await _call(self._native.withdraw_pending, store, _key_text(key))
        return result

    # ----- lifetime -------------------------------------------------------------------------

    async def close(self) -> None:
        """Closes; requests still queued fail with RequestCancelledError first."""
        await _call(self._native.close)

    @property
    def closed(self) -> bool:
        """Whether the database is closed."""
        return bool(self._native.is_closed())

    async def __aenter__(self) -> "Database":
        return self

    async def __aexit__(self, kind: Any, error: Any, trace: Any) -> None:
        if not self.closed:
            await self.close()


_open_databases: "weakref.WeakSet[Database]" = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    # Committed data is on disk already; this only lets the workers end on their own, and
    # stops completions from reaching an interpreter that is going away.
    _native.leaving()
    for db in list(_open_databases):
        db._native.close_quietly()


class _Opening(collections.abc.Coroutine[Any, Any, "Database"]):
    """`await open(...)` (or `asyncio.run(open(...))`) gives the database; `async with
    open(...) as db` also closes it."""

    def __init__(self, name: str, schema: Any, options: dict[str, Any]) -> None:
        self._coro = self._open(name, schema, options)
        self._db: Optional[Database] = None

    async def _open(self, name: str, schema: Any, options: dict[str, Any]) -> Database:
        schema_text = None if schema is None else (schema if isinstance(schema, str) else _dumps("schema", schema))
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        native = _native.open(_waker(loop), future, name, schema_text, json.dumps(options))
        opened = await future
        for text in opened.get("warnings", []) if isinstance(opened, dict) else []:
            warnings.warn(text, SyncWarning, stacklevel=3)
        opened = opened if isinstance(opened, dict) else {}
        self._db = Database(native, name, int(opened.get("version", 1)), opened.get("previousVersion"))
        return self._db

    def __await__(self) -> Generator[Any, None, Database]:
        return self._coro.__await__()

    def send(self, value: Any) -> Any:
        return self._coro.send(value)

    def throw(self, *args: Any) -> Any:
        return self._coro.throw(*args)

    def close(self) -> None:
        self._coro.close()

    async def __aenter__(self) -> Database:
        return await self._coro

    async def __aexit__(self, kind: Any, error: Any, trace: Any) -> None:
        if self._db is not None and not self._db.closed:
            await self._db.close()


def open(
    name: str,
    schema: Any = None,
    *,
    mechanism: str = "sqlite",
    sync: Optional[dict[str, Any]] = None,
    durability: Optional[str] = None,
    idle_transaction_timeout_ms: Optional[int] = None,
    queue_capacity: Optional[int] = None,
    sync_threads: Optional[int] = None,
) -> _Opening:
    """Opens (creating or migrating) the database `name`: a SQLite file path, or any name with
    mechanism="memory". `schema`: a dict or JSON text, `{"version", "stores": [...]}`. `sync`:
    `{store: Sync block}`, merged into the schema's stores. `durability`: "normal" (the default:
    a commit survives the process crashing) or "full" (an fsync per commit: it survives a machine
    crash too)."""
    if sync:
        if schema is None or isinstance(schema, str):
            schema = json.loads(schema) if isinstance(schema, str) else {"stores": []}
        for store in schema.get("stores", []):
            if store.get("name") in sync:
                store["Sync"] = sync[store["name"]]
    options: dict[str, Any] = {"mechanism": mechanism}
    for field, value in (
        ("durability", durability),
        ("idleTransactionTimeoutMs", idle_transaction_timeout_ms),
        ("queueCapacity", queue_capacity),
        ("syncThreads", sync_threads),
    ):
        if value is not None:
            options[field] = value
    return _Opening(name, schema, options)
