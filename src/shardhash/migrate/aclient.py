"""The cluster client for asyncio: ``async with cluster.atransaction(key)``
and ``async with cluster.aread(key)``.

Same semantics as :meth:`Cluster.transaction` / :meth:`Cluster.read`: the
transaction opens on the shard the group's router names, takes the lock a
cutover waits for (SQLite ``BEGIN IMMEDIATE``, PostgreSQL ``FOR SHARE`` on
the shard's epoch row), checks the shard's ownership records *in that
transaction*, retries a stale route after refreshing the router (at most
``cluster.retries`` times, then :class:`StaleRouteError`), and, when the
key's unit is frozen for a cutover, rolls back and waits for it with
``asyncio.sleep`` (the event loop keeps running; at most
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

The ownership records are cached per shard by epoch, as the sync client
does: the transaction reads the shard's epoch (one statement); only when it
changed are the records read again, by the sync backend on a worker thread
(``asyncio.to_thread``), while this transaction holds the lock that keeps
the epoch from changing.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from .. import _events, _fence

__all__ = ["AsyncClient", "AsyncShardTransaction", "client_of", "DEFAULT_POOL_SIZE"]

DEFAULT_POOL_SIZE = 8
_EPOCH = "SELECT n FROM _shardhash_epoch WHERE id = 0"


class AsyncShardTransaction:
    """A transaction on the shard that owns a key (from ``cluster.atransaction``
    / ``cluster.aread``): ``shard``, ``version`` (the router's), ``key``;
    ``await tx.execute(sql, params)`` takes ``?`` placeholders on every
    backend and returns the driver's cursor (``await cur.fetchone()``...)."""

    def __init__(self, conn: Any, kind: str, shard: str, version: int, key: Any) -> None:
        self.conn, self.kind, self.shard, self.version, self.key = conn, kind, shard, version, key

    async def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        return await _execute(self.kind, self.conn, sql, params)

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        cur = await self.execute(sql, params)
        return await cur.fetchone()

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
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
    return await conn._execute(fn, conn._conn)


async def _one(kind: str, conn: Any, sql: str, params: Any = ()) -> Any:
    cur = await _execute(kind, conn, sql, params)
    return await cur.fetchone()


class _SQLitePool:
    def __init__(self, path: str, synchronous: str, size: int) -> None:
        self.path, self.synchronous, self.size = path, synchronous, size
        self.idle: list[Any] = []
        self.made = 0
        self.freed = asyncio.Condition()

    async def _connect(self) -> Any:
        import aiosqlite

        c = await aiosqlite.connect(self.path, timeout=60.0, isolation_level=None)
        await c.execute("PRAGMA journal_mode=WAL")
        await c.execute(f"PRAGMA synchronous={self.synchronous}")
        await c.execute("PRAGMA busy_timeout=60000")
        return c

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        async with self.freed:
            while not self.idle and self.made >= self.size:
                await self.freed.wait()
            c = self.idle.pop() if self.idle else None
            if c is None:
                self.made += 1
        if c is None:
            try:
                c = await self._connect()
            except BaseException:
                async with self.freed:
                    self.made -= 1
                    self.freed.notify()
                raise
        try:
            yield c
        finally:
            if c.in_transaction:  # (a cancelled transaction: never hand out an open one)
                try:
                    await c.execute("ROLLBACK")
                except Exception:  # noqa: BLE001 - the connection is dropped below
                    await c.close()
                    c = None
            async with self.freed:
                if c is not None:
                    self.idle.append(c)
                else:
                    self.made -= 1
                self.freed.notify()

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

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        if not self.opened:
            self.opened = True
            await self.pool.open()
        async with self.pool.connection() as c:
            yield c

    async def close(self) -> None:
        if self.opened:
            await self.pool.close()


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

    def _pool(self, shard: str) -> tuple[str, Any]:
        b = self.cluster.backend(shard)
        url = b.path if b.kind == "sqlite" else getattr(b, "dsn", b.path)
        p = self._pools.get(url)
        if p is None:
            p = _SQLitePool(b.path, b.synchronous, self.pool_size) if b.kind == "sqlite" \
                else _PGPool(url, self.pool_size)
            self._pools[url] = p
        return b.kind, p

    async def close(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for p in pools:
            await p.close()

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

    @asynccontextmanager
    async def open(self, key: Any, group: str | None, write: bool) -> AsyncIterator[AsyncShardTransaction]:
        from .cluster import FenceTimeout, ShardKeyError

        cl = self.cluster
        g = cl.group(group)
        attempt = 0
        t_wait: float | None = None
        while True:
            router = cl.router(g.name)
            shard = router.route(key)
            kind, pool = self._pool(shard)
            async with pool.connection() as conn:
                ep0 = await self._begin(kind, conn, g.name, key, write)
                try:
                    su = await self._units(shard, kind, conn, ep0)
                    v = cl._verdict_of(su, shard, g.name, key, router.version, write)
                    if v is None:
                        verdict, cur, owner = "ok", router.version, shard
                        if write and g.name in su.captures:
                            await self._skip(kind, conn, g.name)
                    else:
                        verdict, cur, owner = v
                except BaseException:
                    await self._rollback(kind, conn)
                    raise
                if verdict == "ok":
                    if t_wait is not None:
                        cl.metrics.add_pause(time.perf_counter() - t_wait)
                    tx = AsyncShardTransaction(conn, kind, shard, router.version, key)
                    _events.emit("route", shard=shard, keys=1, group=g.name, shard_key=key,
                                 topology_version=router.version)
                    t0 = time.perf_counter()
                    try:
                        yield tx
                        committed = await self._end(kind, conn, g.name, key, write)
                    except BaseException as e:
                        await self._rollback(kind, conn)
                        _events.emit("shard_op", shard=shard, op="write" if write else "read",
                                     seconds=time.perf_counter() - t0, ok=False)
                        if write and not isinstance(e, ShardKeyError):
                            viol = cl.backend(shard).guard_violation(e)
                            if viol is not None:
                                raise ShardKeyError(viol[1], viol[2], key, g.name, viol[0]) from e
                        raise
                    if not committed:
                        await _execute(kind, conn, "COMMIT")
                    _events.emit("shard_op", shard=shard, op="write" if write else "read",
                                 seconds=time.perf_counter() - t0, ok=True)
                    return
                ep = int((await _one(kind, conn, _EPOCH))[0])
                await self._rollback(kind, conn)
                if verdict == "wait":
                    if t_wait is None:
                        t_wait = time.perf_counter()
                    while True:  # wait for the records to change, holding no lock
                        now = int((await _one(kind, conn, _EPOCH))[0])
                        if now != ep:
                            break
                        waited = time.perf_counter() - t_wait
                        if waited > cl.wait_timeout:
                            raise FenceTimeout(f"key {key!r} waited {waited:.1f} s for a cutover on shard {shard!r}")
                        await asyncio.sleep(0.001)
                    continue
            _fence.stale_route(cl, g.name, key, shard, router.version, cur, owner, attempt < cl.retries)
            attempt += 1
            await asyncio.to_thread(cl.refresh, g.name)

    @staticmethod
    async def _begin(kind: str, conn: Any, group: str, key: Any, write: bool) -> int | None:
        """Begin the transaction (the statements of SQLiteShard / PostgresShard.begin_client_write,
        begin_guard, begin_read); on SQLite, in one call on the connection's thread, which also
        reads and returns the shard's epoch (-1: no ownership records), else None."""
        if kind == "sqlite":
            def begin(c: Any) -> int:
                c.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                if write:
                    try:
                        c.execute("INSERT INTO _shardhash_guard(id, grp, k) VALUES (0, ?, ?)", (group, key))
                    except sqlite3.OperationalError as e:
                        if "_shardhash_guard" not in str(e):
                            raise  # (a shard set up by an older version has no guard table: unguarded)
                try:
                    row = c.execute(_EPOCH).fetchone()
                except sqlite3.OperationalError as e:
                    if "_shardhash_epoch" not in str(e):
                        raise
                    row = None
                return int(row[0]) if row else -1

            return int(await _on_thread(conn, begin))
        from .postgres import _guard_key

        if write:
            await _execute(kind, conn, "BEGIN")
            await _execute(kind, conn, "SELECT n, set_config('shardhash.guard_grp', ?, true), "
                           "set_config('shardhash.guard_key', ?, true) FROM _shardhash_epoch WHERE id = 0 FOR SHARE",
                           (group, _guard_key(key)))
        else:
            await _execute(kind, conn, "BEGIN ISOLATION LEVEL REPEATABLE READ")
        return None

    @staticmethod
    async def _skip(kind: str, conn: Any, group: str) -> None:
        if kind == "sqlite":
            await conn.execute("INSERT INTO _shardhash_skip VALUES (?) ON CONFLICT DO NOTHING", (group,))
        else:
            await _execute(kind, conn, "SELECT set_config('shardhash.skip', ?, true)", (group,))

    async def _end(self, kind: str, conn: Any, group: str, key: Any, write: bool) -> bool:
        """The end of a transaction whose block succeeded.  SQLite, in one call
        on the connection's thread: a write's skip marker off and the guard's
        records read (the statements of SQLiteShard.end_skip / end_guard),
        then the commit when the guard recorded no row of another key (else
        ShardKeyError; the caller rolls back).  True when it committed.
        (PostgreSQL: the settings are transaction-local and the guard refused
        at the statement; the caller commits.)"""
        if kind != "sqlite":
            return False

        def end(c: Any) -> list[tuple[str, str, Any]]:
            bad: list[tuple[str, str, Any]] = []
            if write:
                c.execute("DELETE FROM _shardhash_skip WHERE grp = ?", (group,))
                try:
                    rows = c.execute("DELETE FROM _shardhash_guard RETURNING id, grp, tbl, k").fetchall()
                except sqlite3.OperationalError as e:
                    if "_shardhash_guard" not in str(e):
                        raise
                    rows = []
                touched = [(str(r[1]), str(r[2]), r[3]) for r in rows if r[0] != 0]
                bad = [t for t in touched if t[0] != group or type(t[2]) is not type(key) or t[2] != key]
            if not bad:
                c.execute("COMMIT")
            return bad

        bad = await _on_thread(conn, end)
        self.cluster._check_guard(bad, group, key)  # (raises ShardKeyError for the first)
        return True

    @staticmethod
    async def _rollback(kind: str, conn: Any) -> None:
        if kind == "sqlite":
            if conn.in_transaction:
                await conn.execute("ROLLBACK")
        else:
            await conn.execute("ROLLBACK")  # (the connection is in autocommit mode: BEGIN was explicit)


_clients: weakref.WeakKeyDictionary[Any, dict[Any, AsyncClient]] = weakref.WeakKeyDictionary()


def client_of(cluster: Any, pool_size: int | None = None) -> AsyncClient:
    """The cluster's client on the running event loop (made at the first call;
    ``pool_size`` applies then)."""
    loop = asyncio.get_running_loop()
    per = _clients.setdefault(cluster, {})
    c = per.get(loop)
    if c is None:
        for old in [lp for lp in per if lp.is_closed()]:
            del per[old]
        c = per[loop] = AsyncClient(cluster, pool_size=DEFAULT_POOL_SIZE if pool_size is None else pool_size)
    return c
