"""The ownership check of ``Cluster.transaction``, for transactions that an
ORM opens itself (shardhash.sqlalchemy, shardhash.django).

``Cluster.transaction(key)`` opens the shard's transaction, takes the lock
that excludes a cutover (SQLite: the write lock, ``BEGIN IMMEDIATE``;
PostgreSQL: ``FOR SHARE`` on the shard's epoch row) and reads the shard's
ownership records in that same transaction.  An ORM opens its transactions
itself, so these helpers do the same steps on the ORM's own connection:
:func:`lock` (once per transaction and shard), then :func:`refusals` for the
keys it is about to write, and, when a key's unit is frozen for a cutover,
:func:`wait_unfrozen` after the caller rolled its transaction back.

The caller's connection ``c`` takes ``?`` placeholders (a ``sqlite3``
connection, or :func:`adapt` of a psycopg one).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

__all__ = ["adapt", "lock", "refusals", "wait_unfrozen", "stale_route", "LOCK_SQL"]

#: PostgreSQL: the statement a client write transaction starts with (the
#: fence's update of the ownership records waits for every holder).
LOCK_SQL = "SELECT n FROM _shardhash_epoch WHERE id = 0 FOR SHARE"


def adapt(kind: str, dbapi_conn: Any) -> Any:
    """A connection taking ``?`` placeholders over an ORM's DB-API connection."""
    if kind == "sqlite":
        return dbapi_conn
    from .migrate.postgres import PGConnection

    return PGConnection(dbapi_conn)


def lock(kind: str, c: Any) -> None:
    """Inside an open transaction: exclude a cutover of this shard until it
    ends.  (SQLite: the caller's transaction began with ``BEGIN IMMEDIATE``,
    which already holds the write lock.)"""
    if kind != "sqlite":
        c.execute(LOCK_SQL)


def refusals(cluster: Any, group: str, shard: str, c: Any, keys: Iterable[Any],
             version: int) -> list[tuple[Any, str, int, str]]:
    """(key, 'stale' | 'wait', current version, owner) of every key that
    ``shard`` does not accept a write of now, read in the caller's
    transaction on ``c`` (after :func:`lock`); empty when it accepts all."""
    b = cluster.backend(shard)
    su = cluster._shard_units(shard, b, c)
    if not su.migs:
        return []
    out = []
    for k in keys:
        v = cluster._verdict_of(su, shard, group, k, version, True)
        if v is not None and v[0] != "ok":
            out.append((k, v[0], v[1], v[2]))
    return out


def epoch(cluster: Any, shard: str, c: Any) -> int:
    """The shard's ownership-record epoch (bumped by every change of them)."""
    return int(cluster.backend(shard).epoch(c))


def wait_unfrozen(cluster: Any, shard: str, c: Any, seen: int, t0: float, key: Any,
                  end: Any = None) -> None:
    """Outside any transaction on ``c``: wait until the shard's ownership
    records change from epoch ``seen`` (a cutover ended), polling every
    millisecond; :class:`~shardhash.migrate.FenceTimeout` once
    ``cluster.wait_timeout`` seconds have passed since ``t0``.  ``end``:
    called after each poll (PostgreSQL: to end the read's transaction)."""
    from .migrate.cluster import FenceTimeout

    while True:
        now = epoch(cluster, shard, c)
        if end is not None:
            end()
        if now != seen:
            return
        waited = time.perf_counter() - t0
        if waited > cluster.wait_timeout:
            raise FenceTimeout(f"key {key!r} waited {waited:.1f} s for a cutover on shard {shard!r}")
        time.sleep(0.001)


def stale_route(cluster: Any, group: str, key: Any, shard: str, version: int, current: int, owner: str,
                retry: bool) -> None:
    """A stale route of ``key`` to ``shard`` (router ``version``; the shard's
    records are at ``current`` and name ``owner``): the ``stale_route_retry``
    event and the stale-route metric; raises
    :class:`~shardhash.migrate.StaleRouteError` unless ``retry`` (then the
    caller refreshes the group's router and tries again)."""
    from . import _events
    from .migrate.cluster import StaleRouteError

    err = StaleRouteError(key, shard, version, current, owner)
    _events.emit("stale_route_retry", shard=shard, group=group, shard_key=key, topology_version=version,
                 current_version=current, retry_reason=str(err), retried=retry, migration_id=None)
    cluster.metrics.stale(retry)
    if not retry:
        raise err
