"""The cluster client for asyncio: ``async with cluster.atransaction(key)``
and ``async with cluster.aread(key)``.

Same semantics as :meth:`Cluster.transaction` / :meth:`Cluster.read`: the
transaction opens on the shard the group's router names, takes the lock a
cutover waits for (SQLite ``BEGIN IMMEDIATE``, PostgreSQL ``FOR SHARE`` on
the shard's epoch row), checks the shard's ownership records *in that
transaction*, retries a stale route after refreshing the router (at most
``cluster.retries`` times, then :class:`StaleRouteError`), and, when the
key's unit is frozen for a cutover, rolls back and waits for it with
``asyncio.sleep`` (the event loop keeps running; past the freeze's
deadline the metadata store decides, on a worker thread, whether the
cutover committed or the fence attempt is aborted, as for the sync client,
so a dead executor holds the writer for about its fence timeout; at most
``cluster.wait_timeout`` seconds, then :class:`FenceTimeout`).  A write
transaction guards its key: a row of another key is a
:class:`ShardKeyError` and the transaction is rolled back.

Connections: SQLite shards through ``aiosqlite`` (a pool of at most
``pool_size`` connections per shard, each with its own thread), PostgreSQL
shards through ``psycopg``'s async connections in a
``psycopg_pool.AsyncConnectionPool`` of ``min_size=1, max_size=pool_size``
per shard.  ``pool_size`` (default 8) bounds the transactions open at once
per shard; a further one waits for a connection.  One client per event
loop (pools belong to the loop that made them); ``await cluster.aclose()``
closes the current loop's.

The transaction begins with its first statement, which goes to the shard
with the lock and the ownership check: on SQLite, the begin, the epoch
read (which turns the guard on), the check against the cached records and
the statement are one job on the connection's thread, and the end (the
guard's records read, in Python, and the commit) another, so a point
write waits for two hops
between the event loop and that thread (the bare driver's
``BEGIN IMMEDIATE``/statement/``COMMIT`` for three) and a point read for
one (a read's commit is queued on the thread without a future: the event
loop is not woken for it, and the connection's next job runs after it,
rolling back one that failed); on PostgreSQL, the
begin, the lock-and-epoch read and, when the cached records let the key
through, the first statement are one round trip (a pipeline; when the
epoch read differs from the cached records', the statement is rolled back
and runs again after the check).  When
the check refuses, the statement's effects are rolled back and it runs
again on the owner (a stale route: ``tx.shard`` names the new one) or after
the wait (a frozen key), before the block sees its result.

The ownership records are cached per shard by epoch, as the sync client
does: only when the shard's epoch changed are the records read again, by
the sync backend on a worker thread (``asyncio.to_thread``), while this
transaction holds the lock that keeps the epoch from changing.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import sqlite3
import time
import weakref
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from .. import _events, _fence
from .sqlite import guard_off

__all__ = ["AsyncClient", "AsyncShardTransaction", "client_of", "DEFAULT_POOL_SIZE"]

DEFAULT_POOL_SIZE = 8
_EPOCH = "SELECT n FROM _shardhash_epoch WHERE id = 0"


class AsyncShardTransaction:
    """A transaction on the shard that owns a key (from ``cluster.atransaction``
    / ``cluster.aread``): ``shard``, ``version`` (the router's), ``key``;
    ``await tx.execute(sql, params)`` takes ``?`` placeholders on every
    backend and returns the driver's cursor (``await cur.fetchone()``...).

    The transaction begins with its first statement: the lock, the ownership
    check and that statement go to the shard together (on SQLite in one call
    on the connection's thread).  When the check finds the route stale, the
    statement's effects are rolled back and it runs again on the key's new
    owner (``shard`` and ``version`` then name that one); when the key is
    frozen for a cutover, it waits first.  Nothing before the first statement
    touches the shard, so a block without statements opens no transaction."""

    def __init__(self, client: AsyncClient, key: Any, group: str, write: bool) -> None:
        self.client, self.key, self.group, self.write = client, key, group, write
        self.conn: Any = None
        self.kind = ""
        self.shard = ""
        self.version = 0
        self.begun = False
        self._skip = False  # (SQLite: this transaction set the capture's skip marker)
        self._pool: Any = None
        self._t0 = 0.0

    async def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        if not self.begun:
            return (await self.client._first(self, sql, params, 0))[0]
        return await _execute(self.kind, self.conn, sql, params)

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if not self.begun:
            return (await self.client._first(self, sql, params, 1))[1]
        if self.kind == "sqlite":
            return await _on_thread(self.conn, lambda c: c.execute(sql, params).fetchone())
        cur = await self.execute(sql, params)
        return await cur.fetchone()

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        if not self.begun:
            return list((await self.client._first(self, sql, params, 2))[1])
        if self.kind == "sqlite":
            return list(await _on_thread(self.conn, lambda c: c.execute(sql, params).fetchall()))
        cur = await self.execute(sql, params)
        return list(await cur.fetchall())


async def _execute(kind: str, conn: Any, sql: str, params: Any = ()) -> Any:
    if kind == "sqlite":
        return await conn.execute(sql, params)
    from .postgres import PGConnection

    if not params and "?" not in sql:
        return await conn.execute(sql)
    return await conn.execute(PGConnection._sql(sql), params)


async def _on_thread(conn: Any, fn: Any) -> Any:
    """``fn(sqlite3 connection)`` on an aiosqlite connection's own thread, in
    one call (several statements for one hop between threads)."""
    return await _submit(conn, partial(fn, conn._conn))


def _submit(conn: Any, job: Any) -> Any:
    """An awaitable of ``job()`` run on an aiosqlite connection's thread:
    straight onto its queue (the work of ``Connection._execute`` without its
    coroutine and ``partial``), or through ``_execute`` when this aiosqlite
    keeps no such queue."""
    q = getattr(conn, "_tx", None)
    if q is None or not getattr(conn, "_running", False) or not hasattr(q, "put_nowait"):
        return conn._execute(job)  # (raises for a closed connection)
    fut = asyncio.get_running_loop().create_future()
    q.put_nowait((fut, job))
    return fut


async def _one(kind: str, conn: Any, sql: str, params: Any = ()) -> Any:
    cur = await _execute(kind, conn, sql, params)
    return await cur.fetchone()


def _sqlite_rollback(c: Any) -> None:
    guard_off(c)
    if c.in_transaction:
        c.execute("ROLLBACK")


def _sqlite_commit(c: Any) -> None:
    if c.in_transaction:
        c.execute("COMMIT")


def _post(conn: Any, fn: Any) -> bool:
    """Queue ``fn(sqlite3 connection)`` on an aiosqlite connection's thread
    without waiting for it (what is queued after it runs after it; its
    result, or its error, goes nowhere: no wake-up of the event loop); False
    when this aiosqlite has no such queue (the caller awaits instead)."""
    q = getattr(conn, "_tx", None)
    if q is None or not getattr(conn, "_running", False) or not hasattr(q, "put_nowait"):
        return False
    q.put_nowait((None, partial(fn, conn._conn)))
    return True


class _SQLitePool:
    """At most ``size`` aiosqlite connections to one file; a released
    connection goes straight to the longest waiter."""

    def __init__(self, path: str, synchronous: str, size: int) -> None:
        self.path, self.synchronous, self.size = path, synchronous, size
        self.idle: list[Any] = []
        self.made = 0
        self.waiters: collections.deque[asyncio.Future[Any]] = collections.deque()

    async def _connect(self) -> Any:
        import aiosqlite

        c = await aiosqlite.connect(self.path, timeout=60.0, isolation_level=None)

        def setup(raw: Any) -> None:
            raw.execute("PRAGMA journal_mode=WAL")
            raw.execute(f"PRAGMA synchronous={self.synchronous}")
            raw.execute("PRAGMA busy_timeout=60000")

        await _on_thread(c, setup)
        return c

    async def acquire(self) -> Any:
        if self.idle:
            return self.idle.pop()
        c = None
        if self.made >= self.size:
            fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self.waiters.append(fut)
            try:
                c = await fut  # (a connection, or None: a place to make one)
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._hand(fut.result())
                raise
            if c is not None:
                return c
        else:
            self.made += 1
        try:
            return await self._connect()
        except BaseException:
            self._hand(None)
            raise

    def _hand(self, c: Any) -> None:
        """``c`` (None: a connection was dropped) to the first waiter, else idle."""
        while self.waiters:
            w = self.waiters.popleft()
            if not w.done():
                w.set_result(c)
                return
        if c is not None:
            self.idle.append(c)
        else:
            self.made -= 1

    async def release(self, c: Any, dirty: bool) -> None:
        if dirty:  # (a failed or cancelled transaction: never hand out an open one)
            try:
                await _on_thread(c, _sqlite_rollback)
            except Exception:  # noqa: BLE001 - the connection is dropped
                try:
                    await c.close()
                finally:
                    self._hand(None)
                return
        self._hand(c)

    async def close(self) -> None:
        for c in self.idle:
            await c.close()
        self.idle.clear()


class _PGPool:
    def __init__(self, dsn: str, size: int) -> None:
        from psycopg_pool import AsyncConnectionPool

        self.pool = AsyncConnectionPool(dsn, min_size=1, max_size=size, open=False,
                                        kwargs={"autocommit": True})
        self.opened = False

    async def acquire(self) -> Any:
        if not self.opened:
            self.opened = True
            await self.pool.open()
        return await self.pool.getconn()

    async def release(self, c: Any, dirty: bool) -> None:
        if dirty:
            try:
                await c.execute("ROLLBACK")  # (autocommit mode: BEGIN was explicit)
            except Exception:  # noqa: BLE001 - the pool checks and replaces a broken connection
                pass
        await self.pool.putconn(c)

    async def close(self) -> None:
        if self.opened:
            await self.pool.close()


class _Open:
    """The context manager of ``cluster.atransaction`` / ``cluster.aread``."""

    __slots__ = ("client", "tx")

    def __init__(self, client: AsyncClient, key: Any, group: str | None, write: bool) -> None:
        self.client = client
        self.tx = AsyncShardTransaction(client, key, client.cluster.group(group).name, write)

    async def __aenter__(self) -> AsyncShardTransaction:
        tx = self.tx
        if not self.client._route_idle(tx):
            await self.client._route(tx)
        return tx

    async def __aexit__(self, et: Any, e: Any, tb: Any) -> bool:
        await self.client._close_tx(self.tx, e)
        return False


class AsyncClient:
    """The asyncio client of one cluster on one event loop (see the module
    docstring); ``cluster.atransaction`` / ``cluster.aread`` use
    :func:`client_of`."""

    def __init__(self, cluster: Any, *, pool_size: int = DEFAULT_POOL_SIZE) -> None:
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or not 1 <= pool_size <= 1000:
            raise ValueError(f"pool_size must be an int in 1..1000, not {pool_size!r}")
        self.cluster = cluster
        self.pool_size = pool_size
        self._pools: dict[str, Any] = {}
        self._by_shard: dict[str, tuple[Any, str, Any]] = {}  # shard -> (backend, kind, pool)
        self._map: Any = None  # (the cluster's shard map _by_shard was checked under)

    def _pool(self, shard: str) -> tuple[str, Any]:
        """(kind, pool) of a shard's current primary.  Cached under the
        cluster's shard map of the moment (its identity: a failover or a
        refresh replaces it, and then every entry is checked again)."""
        cl = self.cluster
        m = cl._shard_map
        if m is None or m is not self._map:
            self._by_shard.clear()
            self._map = None
        else:
            hit = self._by_shard.get(shard)
            if hit is not None:
                return hit[1], hit[2]
        b = cl.backend(shard)
        url = b.path if b.kind == "sqlite" else getattr(b, "dsn", b.path)
        p = self._pools.get(url)
        if p is None:
            p = _SQLitePool(b.path, b.synchronous, self.pool_size) if b.kind == "sqlite" \
                else _PGPool(url, self.pool_size)
            self._pools[url] = p
        if m is not None and cl._shard_map is m:  # (b is of map m: no replacement in between)
            self._by_shard[shard] = (b, b.kind, p)
            self._map = m
        return b.kind, p

    async def close(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        self._by_shard.clear()
        self._map = None
        for p in pools:
            await p.close()

    def open(self, key: Any, group: str | None, write: bool) -> _Open:
        return _Open(self, key, group, write)

    async def _units(self, shard: str, kind: str, conn: Any, ep: int | None) -> Any:
        """The shard's ownership records (the cluster's cache, by epoch ``ep``,
        read here when None), read in the caller's locked transaction (the
        epoch cannot change)."""
        cl = self.cluster
        if ep is None:
            row = await _one(kind, conn, _EPOCH)
            ep = int(row[0]) if row else -1
        cached = cl._units.get(shard)
        if cached is not None and cached.epoch == ep and ep >= 0:
            return cached

        def load() -> Any:
            b = cl.backend(shard)
            c = b.connect()
            try:
                b.begin_read(c)
                try:
                    return cl._shard_units(shard, b, c)
                finally:
                    b.rollback(c)
            finally:
                c.close()

        su = await asyncio.to_thread(load)
        if su.epoch != ep:  # (never while the lock is held; a shard without the records: -1)
            raise RuntimeError(f"shard {shard!r}: ownership records changed under a locked transaction "
                               f"(epoch {ep} -> {su.epoch})")
        return su

    def _route_idle(self, tx: AsyncShardTransaction) -> bool:
        """:meth:`_route` without awaiting when the owner's SQLite pool has an
        idle connection (a new transaction's usual case); False: await
        :meth:`_route`."""
        cl = self.cluster
        router = cl._routers.get(tx.group) or cl.router(tx.group)
        shard = router.route(tx.key)
        kind, pool = self._pool(shard)
        if tx.conn is not None or kind != "sqlite" or not pool.idle:
            return False
        tx.version = router.version
        tx.conn = pool.idle.pop()
        tx.kind, tx.shard, tx._pool = kind, shard, pool
        return True

    async def _route(self, tx: AsyncShardTransaction) -> None:
        """Point ``tx`` at its key's owner by the cluster's router, with a
        connection of that shard's pool (released first: another shard's)."""
        router = self.cluster.router(tx.group)
        shard = router.route(tx.key)
        tx.version = router.version
        if tx.conn is not None and shard == tx.shard:
            return
        kind, pool = self._pool(shard)
        if tx.conn is not None:
            old, tx.conn = tx.conn, None
            await tx._pool.release(old, False)
        tx.conn = await pool.acquire()
        tx.kind, tx.shard, tx._pool = kind, shard, pool

    async def _first(self, tx: AsyncShardTransaction, sql: str, params: Any, fetch: int) -> tuple[Any, Any]:
        """Begin ``tx`` with its first statement (see AsyncShardTransaction):
        returns (cursor, fetched rows: ``fetch`` 1 one, 2 all, 0 none; the
        cursor is None when rows were fetched)."""
        pre = None
        if tx.kind == "sqlite":  # (the usual case first: one job on the connection's thread, checked there)
            conn = tx.conn
            tx.begun = True
            pre = await _submit(conn, partial(_sqlite_first, self.cluster, tx.shard, tx.group, tx.key, tx.version,
                                              tx.write, sql, params, fetch, conn._conn))
            if pre[0] == "ok":
                cur, rows, tx._skip = pre[2]
                if _events._listeners or _events.log.isEnabledFor(logging.DEBUG):
                    _events.emit("route", shard=tx.shard, keys=1, group=tx.group, shard_key=tx.key,
                                 topology_version=tx.version)
                tx._t0 = time.perf_counter()
                return (None, rows) if fetch else (_cursor(conn, cur), None)
        return await self._first_slow(tx, sql, params, fetch, pre)

    async def _first_slow(self, tx: AsyncShardTransaction, sql: str, params: Any, fetch: int,
                          pre: tuple[str, int, Any] | None) -> tuple[Any, Any]:
        """:meth:`_first` after a first SQLite attempt ``pre`` that did not
        run the statement (or none yet): the records read, a verdict obeyed
        (a wait, a refresh and a retry on the new owner), and PostgreSQL."""
        from .cluster import _FenceWait

        cl = self.cluster
        g, key, write = tx.group, tx.key, tx.write
        attempt = 0
        t_wait: float | None = None
        while True:
            shard, kind, conn, version = tx.shard, tx.kind, tx.conn, tx.version
            tx.begun = True
            if kind == "sqlite":
                if pre is None:
                    pre = await _submit(conn, partial(_sqlite_first, cl, shard, g, key, version, write,
                                                      sql, params, fetch, conn._conn))
                state, ep, out = pre
                pre = None
                if state == "units":  # (the records changed since cached: read them, then go on)
                    su = await self._units(shard, kind, conn, ep)
                    v = cl._verdict_of(su, shard, g, key, version, write)
                    if v is None or v[0] == "ok":
                        skip = v is None and write and g in su.captures
                        out = await _submit(conn, partial(_sqlite_run, g, skip, sql, params, fetch, conn._conn))
                        state = "ok"
                    else:
                        state, out = "verdict", v
                if state == "ok":
                    cur, rows, tx._skip = out
                    out = (None, rows) if fetch else (_cursor(conn, cur), None)
            else:
                fast = await self._pg_first(conn, shard, g, key, version, write, sql, params, fetch)
                if fast is not None:
                    state, out = "ok", fast
                    ep = cl._units[shard].epoch
                else:
                    state = ""
            if state == "":
                ep = await self._pg_begin(conn, g, key, write)
                su = await self._units(shard, kind, conn, ep)
                v = cl._verdict_of(su, shard, g, key, version, write)
                if v is None or v[0] == "ok":
                    if v is None and write and g in su.captures:
                        await _execute(kind, conn, "SELECT set_config('shardhash.skip', ?, true)", (g,))
                    cur = await _execute(kind, conn, sql, params)
                    rows = None if fetch == 0 else await cur.fetchone() if fetch == 1 else await cur.fetchall()
                    state, out = "ok", (cur, rows)
                else:
                    state, out = "verdict", v
            if state == "ok":
                if t_wait is not None:
                    cl.metrics.add_pause(time.perf_counter() - t_wait)
                _events.emit("route", shard=shard, keys=1, group=g, shard_key=key, topology_version=version)
                tx._t0 = time.perf_counter()
                return out[0], out[1]
            verdict, cur_v, owner = out
            await self._rollback(kind, conn)
            tx.begun = False
            if verdict == "wait":
                if t_wait is None:
                    t_wait = time.perf_counter()
                # (a frozen source unit: the freeze's deadline, read once per epoch; past it the
                # executor may be gone and the metadata store decides, as for the sync client)
                fw = _FenceWait(await asyncio.to_thread(cl._fence_for_wait, shard, g, key, owner))
                while True:  # wait for the records to change, holding no lock
                    now = int((await _one(kind, conn, _EPOCH))[0])
                    if now != ep:
                        break
                    waited = time.perf_counter() - t_wait
                    if fw.due() and fw.fence is not None:
                        try:
                            await asyncio.to_thread(cl._break_fence_off_loop, g, shard, fw.fence[0],
                                                    fw.fence[1][0])
                            break
                        except Exception as e:
                            fw.failed(e)
                    if waited > cl.wait_timeout:
                        raise fw.timeout(key, shard, waited)
                    await asyncio.sleep(0.001)
            else:
                _fence.stale_route(cl, g, key, shard, version, cur_v, owner, attempt < cl.retries)
                attempt += 1
                await asyncio.to_thread(cl.refresh, g)
            await self._route(tx)

    async def _pg_first(self, conn: Any, shard: str, group: str, key: Any, version: int, write: bool,
                        sql: str, params: Any, fetch: int) -> tuple[Any, Any] | None:
        """PostgreSQL, when the cached ownership records let the key through:
        the begin, the lock-and-epoch read, the capture's skip marker and the
        statement in one pipeline (one round trip).  (cursor, rows) when the
        epoch read is the cached records' (the check held); else, or when a
        statement failed, None after rolling back (the caller then checks
        before it runs the statement)."""
        import psycopg

        su = self.cluster._units.get(shard)
        if su is None or su.epoch < 0:
            return None
        v = self.cluster._verdict_of(su, shard, group, key, version, write)
        if v is not None and v[0] != "ok":
            return None
        try:
            async with conn.pipeline():
                ecur = await self._pg_queue_begin(conn, group, key, write)
                if write and v is None and group in su.captures:
                    await _execute("postgres", conn, "SELECT set_config('shardhash.skip', ?, true)", (group,))
                cur = await _execute("postgres", conn, sql, params)
            row = await ecur.fetchone()
        except psycopg.Error:
            await conn.execute("ROLLBACK")
            return None
        if row is None or int(row[0]) != su.epoch:
            await conn.execute("ROLLBACK")
            return None
        rows = None if fetch == 0 else await cur.fetchone() if fetch == 1 else await cur.fetchall()
        return cur, rows

    @staticmethod
    async def _pg_queue_begin(conn: Any, group: str, key: Any, write: bool) -> Any:
        """In the caller's pipeline: the begin, a write's lock on the epoch row
        with its guard, and the epoch read; the cursor of that read."""
        from .postgres import PGConnection, _guard_key

        if write:
            await conn.execute("BEGIN")
            return await conn.execute(PGConnection._sql(
                "SELECT n, set_config('shardhash.guard_grp', ?, true), "
                "set_config('shardhash.guard_key', ?, true) FROM _shardhash_epoch WHERE id = 0 FOR SHARE"),
                (group, _guard_key(key)))
        await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        return await conn.execute(_EPOCH)

    @classmethod
    async def _pg_begin(cls, conn: Any, group: str, key: Any, write: bool) -> int:
        """Begin, take the lock (a write) and read the shard's epoch, in one
        round trip (a pipeline); -1: no ownership records."""
        async with conn.pipeline():
            cur = await cls._pg_queue_begin(conn, group, key, write)
        row = await cur.fetchone()
        return int(row[0]) if row else -1

    async def _close_tx(self, tx: AsyncShardTransaction, e: BaseException | None) -> None:
        """End ``tx``: commit when its block succeeded (``e`` None; after the
        guard's check), else roll back; its connection goes back to the pool.
        Raises what ending it raised, or ShardKeyError for a statement the
        guard refused."""
        conn = tx.conn
        if conn is None:
            return
        if e is None and tx.begun and tx.kind == "sqlite":  # (the usual case: no await when a read ends)
            try:
                if tx.write:
                    bad = await _submit(conn, partial(_sqlite_end, tx.group, tx.key, tx._skip, conn._conn))
                    self.cluster._check_guard(bad, tx.group, tx.key)  # (raises ShardKeyError for the first)
                elif not _post(conn, _sqlite_commit):  # (a read's commit: queued on the thread, not waited for)
                    await _on_thread(conn, _sqlite_commit)
            except BaseException:
                tx.conn = None
                tx.begun = False
                await tx._pool.release(conn, True)
                raise
            tx.conn = None
            tx.begun = False
            tx._pool._hand(conn)
            if _events._listeners or _events.log.isEnabledFor(logging.DEBUG):
                _events.emit("shard_op", shard=tx.shard, op="write" if tx.write else "read",
                             seconds=time.perf_counter() - tx._t0, ok=True)
            return
        await self._close_slow(tx, e)

    async def _close_slow(self, tx: AsyncShardTransaction, e: BaseException | None) -> None:
        from .cluster import ShardKeyError

        conn = tx.conn
        shard, g, key = tx.shard, tx.group, tx.key
        op = "write" if tx.write else "read"
        dirty = tx.begun
        try:
            if not tx.begun:
                return
            if e is None:
                await conn.execute("COMMIT")  # (PostgreSQL: SQLite ends in _close_tx)
                dirty = False
                _events.emit("shard_op", shard=shard, op=op, seconds=time.perf_counter() - tx._t0, ok=True)
                return
            _events.emit("shard_op", shard=shard, op=op, seconds=time.perf_counter() - tx._t0, ok=False)
            if tx.write and isinstance(e, Exception) and not isinstance(e, ShardKeyError):
                viol = self.cluster.backend(shard).guard_violation(e)
                if viol is not None:
                    raise ShardKeyError(viol[1], viol[2], key, g, viol[0]) from e
        finally:
            tx.conn = None
            tx.begun = False
            await tx._pool.release(conn, dirty)

    @staticmethod
    async def _rollback(kind: str, conn: Any) -> None:
        if kind == "sqlite":
            await _on_thread(conn, _sqlite_rollback)
        else:
            await conn.execute("ROLLBACK")  # (the connection is in autocommit mode: BEGIN was explicit)


_Cursor: Any = None


def _cursor(conn: Any, cur: Any) -> Any:
    """aiosqlite's cursor over a sqlite3 cursor of ``conn``'s thread."""
    global _Cursor
    if _Cursor is None:
        import aiosqlite

        _Cursor = aiosqlite.Cursor
    return _Cursor(conn, cur)


def _sqlite_first(cl: Any, shard: str, group: str, key: Any, version: int, write: bool, sql: str,
                  params: Any, fetch: int, c: Any) -> tuple[str, int, Any]:
    """On the connection's thread: begin (the statements of SQLiteShard's
    begin_client_write, begin_guard, begin_read), read the shard's epoch
    (-1: no ownership records) and, when the cached records of that epoch
    let the key through, run the statement.  ('ok', epoch, (cursor, rows,
    skip)), ('verdict', epoch, (verdict, version, owner)) or ('units', epoch,
    None): the records must be read first."""
    if c.in_transaction:  # (a read whose queued commit failed)
        c.execute("ROLLBACK")
    n: Any = None
    c.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        if write:  # (the guard on and the epoch read: one statement)
            n = cl.backend(shard).guard_epoch(c, group, key)
        else:
            row = c.execute(_EPOCH).fetchone()
            n = None if row is None else row[0]
    except sqlite3.OperationalError as e:
        if "_shardhash_epoch" not in str(e):
            raise
    ep = -1 if n is None else int(n)
    su = cl._units.get(shard)
    if su is None or su.epoch != ep or ep < 0:
        return "units", ep, None
    if su.migs:
        v = cl._verdict_of(su, shard, group, key, version, write)
        if v is not None and v[0] != "ok":
            return "verdict", ep, v
    else:
        v = None
    return "ok", ep, _sqlite_run(group, v is None and write and group in su.captures, sql, params, fetch, c)


def _sqlite_run(group: str, skip: bool, sql: str, params: Any, fetch: int, c: Any) -> tuple[Any, Any, bool]:
    if skip:
        c.execute("INSERT INTO _shardhash_skip VALUES (?) ON CONFLICT DO NOTHING", (group,))
    cur = c.execute(sql, params)
    return cur, None if fetch == 0 else cur.fetchone() if fetch == 1 else cur.fetchall(), skip


def _sqlite_end(group: str, key: Any, skip: bool, c: Any) -> list[tuple[str, str, Any]]:
    """On the connection's thread, the end of a write transaction whose
    block succeeded: the skip marker off and the guard off (SQLiteShard's
    end_skip / end_guard), then the commit when the guard recorded no row of
    another key; returns those rows (the caller raises ShardKeyError and
    rolls back)."""
    if skip:  # (only this transaction's own marker: none when it set none)
        c.execute("DELETE FROM _shardhash_skip WHERE grp = ?", (group,))
    bad = [t for t in guard_off(c) if t[0] != group or type(t[2]) is not type(key) or t[2] != key]
    if not bad:
        c.execute("COMMIT")
    return bad

_clients: weakref.WeakKeyDictionary[Any, dict[Any, AsyncClient]] = weakref.WeakKeyDictionary()


def client_of(cluster: Any, pool_size: int | None = None) -> AsyncClient:
    """The cluster's client on the running event loop (made at the first call;
    ``pool_size`` applies then)."""
    loop = asyncio.get_running_loop()
    per = _clients.get(cluster)
    if per is None:
        per = _clients.setdefault(cluster, {})
    c = per.get(loop)
    if c is None:
        for old in [lp for lp in per if lp.is_closed()]:
            del per[old]
        c = per[loop] = AsyncClient(cluster, pool_size=DEFAULT_POOL_SIZE if pool_size is None else pool_size)
    return c
