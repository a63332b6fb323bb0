"""The metadata store: topology versions, the shard map and migration records.

SQLite (one file, WAL, ``synchronous=FULL``; the default), PostgreSQL (a
database or a schema of one: ``postgresql:CONNINFO`` / ``postgresql://URI``
as the cluster file's ``metadata`` URL) or MariaDB / MySQL (a database:
``mysql://…`` / ``mariadb://…``; the same lock row, InnoDB's ``SELECT … FOR
UPDATE``; its tables are :data:`shardhash.migrate.mysql.META_DDL`).  Its commit of a migration's
cutover (one :meth:`Metadata.tx`, see the executor) is the single decision point of a
migration: before it the source owns the moving keys, after it the
destination does, whatever the shards' own records say at that moment.

Every write transaction (:meth:`Metadata.tx`) excludes every other one until
it ends: SQLite takes the database's write lock (``BEGIN IMMEDIATE``);
PostgreSQL takes the row lock of the one-row table ``meta_lock``
(``SELECT … FOR UPDATE``) as its first statement, so two executors that
read-check-write (the concurrent-migration check, the version check of a
cutover) are serialised exactly as on SQLite.  Reads outside a transaction
see the last committed state (autocommit).

Tables:

``topology(grp, version, router)``
    the current router document of each table group.
``shard_map(shard, url, replicas)``
    logical shard id -> connection URL of its primary and its replicas.  Kept
    apart from the topology: a failover rewrites this row only.
``migrations(id, grp, state, ...)``
    one row per migration, with its routers, units and state.
``progress(mig, key, value)``
    resumable progress (copy cursors, verified units, timings).
``events(id, ts, mig, msg)``
    the log lines of every migration.
``meta_lock(id)`` (PostgreSQL only)
    the row every write transaction locks first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .sqlite import SQLiteShard


def _tables(real: str, serial: str) -> str:
    # (the two backends' column types, composed once into constant DDL)
    return f"""
CREATE TABLE IF NOT EXISTS topology(grp TEXT PRIMARY KEY, version BIGINT NOT NULL, router TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS shard_map(shard TEXT PRIMARY KEY, url TEXT NOT NULL, replicas TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS migrations(
    id TEXT PRIMARY KEY, grp TEXT NOT NULL, state TEXT NOT NULL, kind TEXT NOT NULL,
    from_version BIGINT NOT NULL, to_version BIGINT NOT NULL,
    old_router TEXT NOT NULL, new_router TEXT NOT NULL, units TEXT NOT NULL,
    info TEXT NOT NULL, error TEXT, created {real} NOT NULL, updated {real} NOT NULL);
CREATE TABLE IF NOT EXISTS progress(mig TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (mig, key));
CREATE TABLE IF NOT EXISTS events(id {serial}, ts {real} NOT NULL, mig TEXT,
    msg TEXT NOT NULL)
"""


#: The SQLite schema (BIGINT is an INTEGER there: same affinity).
DDL = _tables("REAL", "INTEGER PRIMARY KEY AUTOINCREMENT") + ";"
#: The PostgreSQL schema: 8-byte floats for the timestamps, a sequence for the
#: event ids, and the lock row.
PG_DDL = [s for s in _tables("DOUBLE PRECISION", "BIGSERIAL PRIMARY KEY").split(";") if s.strip()] + [
    "CREATE TABLE IF NOT EXISTS meta_lock(id INTEGER PRIMARY KEY CHECK (id = 0))",
    "INSERT INTO meta_lock VALUES (0) ON CONFLICT DO NOTHING",
]

#: Migration states in which a migration holds its table group.
ACTIVE = ("preparing", "copying", "catching-up", "freezing", "cutover", "failed", "verify-failed",
          "rolling-back")
#: States after the metadata commit (the destination owns the units).
COMMITTED = ("cutover", "retained", "cleaning", "cleaned")


class Metadata:
    """The metadata store (SQLite or PostgreSQL).

    ``store`` is a path (an SQLite file) or a shard backend of either kind
    (:func:`shardhash.migrate.cluster.open_backend`)."""

    def __init__(self, store: Any) -> None:
        if isinstance(store, SQLiteShard) and store.kind in ("postgresql", "mysql"):
            self.db: SQLiteShard = store
        else:
            path = store.path if isinstance(store, SQLiteShard) else str(store)
            self.db = SQLiteShard(path, synchronous="FULL")  # always FULL, whatever the shards use
        self.kind = self.db.kind
        self._ready = False

    def __repr__(self) -> str:
        return f"Metadata({self.db!r})"

    def setup(self) -> None:
        if self._ready:
            return
        c = self.db.conn()
        if self.kind == "postgresql":
            # (concurrent CREATE TABLE IF NOT EXISTS can collide on PostgreSQL:
            # one creator at a time, under a transaction-scoped advisory lock)
            c.execute("BEGIN")
            try:
                c.execute("SELECT pg_advisory_xact_lock(hashtext('shardhash.migrate.metadata'))")
                from .postgres import PostgresShard

                assert isinstance(self.db, PostgresShard)
                self.db.ensure_schema(c)  # (the schema the URL names: created when missing)
                for stmt in PG_DDL:
                    c.execute(stmt)
                c.execute("COMMIT")
            except BaseException:
                self.db.rollback(c)
                raise
        elif self.kind == "mysql":  # (MariaDB / MySQL: see shardhash.migrate.mysql)
            from .mysql import META_DDL

            self.db.lock_schema(c)
            try:
                for stmt in META_DDL:
                    c.execute(stmt)
            finally:
                self.db._release_schema(c)  # type: ignore[attr-defined]
        else:
            c.executescript(DDL)
        self._ready = True

    @contextmanager
    def tx(self, c: Any = None) -> Iterator[Any]:
        """A write transaction that excludes every other one (see the module
        docstring); committed when the block ends, rolled back when it raises.
        ``c``: a connection of this store (default: this thread's)."""
        c = self.db.conn() if c is None else c
        if self.kind in ("postgresql", "mysql"):
            c.execute("START TRANSACTION" if self.kind == "mysql" else "BEGIN")
            try:
                c.execute("SELECT id FROM meta_lock WHERE id = 0 FOR UPDATE")
            except BaseException:
                self.db.rollback(c)
                raise
        else:
            c.execute("BEGIN IMMEDIATE")
        try:
            yield c
        except BaseException:
            self.db.rollback(c)
            raise
        try:
            c.execute("COMMIT")
        except BaseException:
            self.db.rollback(c)
            raise

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------ topology

    def topology(self, group: str) -> tuple[int, str] | None:
        r = self.db.conn().execute("SELECT version, router FROM topology WHERE grp = ?", (group,)).fetchone()
        return None if r is None else (int(r[0]), r[1])

    def set_topology(self, c: Any, group: str, version: int, router_json: str) -> None:
        if self.kind == "mysql":
            return self._upsert_mysql(c, "topology", ("grp", "version", "router"), (group, version, router_json))
        c.execute("INSERT INTO topology VALUES (?, ?, ?) ON CONFLICT (grp) DO UPDATE SET version = excluded.version, "
                  "router = excluded.router", (group, version, router_json))

    def shard_map(self) -> dict[str, tuple[str, list[str]]]:
        rows = self.db.conn().execute("SELECT shard, url, replicas FROM shard_map").fetchall()
        return {r[0]: (r[1], json.loads(r[2])) for r in rows}

    def shard_map_or_none(self) -> dict[str, tuple[str, list[str]]] | None:
        """:meth:`shard_map`, or None when the store is not initialised (no
        ``shard_map`` table yet); any other error propagates."""
        c = self.db.conn()
        if self.kind == "postgresql":
            exists = c.execute("SELECT to_regclass('shard_map')").fetchone()[0] is not None
        elif self.kind == "mysql":
            exists = self.db.has_table(c, "shard_map")
        else:
            exists = c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'shard_map'"
                               ).fetchone() is not None
        return self.shard_map() if exists else None

    def set_shard(self, c: Any, shard: str, url: str, replicas: list[str]) -> None:
        if self.kind == "mysql":
            return self._upsert_mysql(c, "shard_map", ("shard", "url", "replicas"), (shard, url, json.dumps(replicas)))
        c.execute("INSERT INTO shard_map VALUES (?, ?, ?) ON CONFLICT (shard) DO UPDATE SET url = excluded.url, "
                  "replicas = excluded.replicas", (shard, url, json.dumps(replicas)))

    def add_shard(self, c: Any, shard: str, url: str, replicas: list[str]) -> bool:
        """Register a new shard in transaction ``c``; True when it was added.
        The same shard id with the same primary is a no-op (a retried start);
        with another primary it is refused (ValueError): use a failover to
        move a shard."""
        r = c.execute("SELECT url FROM shard_map WHERE shard = ?", (shard,)).fetchone()
        if r is not None:
            if r[0] != url:
                raise ValueError(f"shard {shard!r} is already in the shard map with primary {r[0]!r}, not "
                                 f"{url!r}: pick another shard id, or move the shard with Cluster.failover")
            return False
        c.execute("INSERT INTO shard_map VALUES (?, ?, ?)", (shard, url, json.dumps(replicas)))
        return True

    # ---------------------------------------------------------- migrations

    def migration(self, mig: str) -> dict[str, Any] | None:
        c = self.db.conn()
        r = c.execute("SELECT id, grp, state, kind, from_version, to_version, old_router, new_router, units, "
                      "info, error, created, updated FROM migrations WHERE id = ?", (mig,)).fetchone()
        if r is None:
            return None
        keys = ("id", "group", "state", "kind", "from_version", "to_version", "old_router", "new_router",
                "units", "info", "error", "created", "updated")
        d = dict(zip(keys, r))
        d["units"] = json.loads(d["units"])
        d["info"] = json.loads(d["info"])
        return d

    def migrations(self, group: str | None = None) -> list[dict[str, Any]]:
        c = self.db.conn()
        if group is None:
            ids = [r[0] for r in c.execute("SELECT id FROM migrations ORDER BY created").fetchall()]
        else:
            ids = [r[0] for r in c.execute("SELECT id FROM migrations WHERE grp = ? ORDER BY created",
                                           (group,)).fetchall()]
        return [m for m in (self.migration(i) for i in ids) if m is not None]

    def set_state(self, mig: str, state: str, *, error: str | None = None, c: Any = None) -> None:
        if c is None:
            with self.tx() as c2:
                self.set_state(mig, state, error=error, c=c2)
            return
        c.execute("UPDATE migrations SET state = ?, error = ?, updated = ? WHERE id = ?",
                  (state, error, time.time(), mig))

    def set_info(self, mig: str, **kw: Any) -> None:
        with self.tx() as c:
            r = c.execute("SELECT info FROM migrations WHERE id = ?", (mig,)).fetchone()
            info = json.loads(r[0])
            info.update(kw)
            c.execute("UPDATE migrations SET info = ?, updated = ? WHERE id = ?", (json.dumps(info), time.time(), mig))

    def get(self, mig: str, key: str, default: Any = None) -> Any:
        r = self.db.conn().execute('SELECT value FROM progress WHERE mig = ? AND "key" = ?', (mig, key)).fetchone()
        return default if r is None else json.loads(r[0])

    def put(self, mig: str, key: str, value: Any, c: Any = None) -> None:
        conn = c if c is not None else self.db.conn()
        if self.kind == "mysql":
            return self._upsert_mysql(conn, "progress", ("mig", "key", "value"), (mig, key, json.dumps(value)))
        conn.execute("INSERT INTO progress VALUES (?, ?, ?) ON CONFLICT (mig, key) DO UPDATE SET "
                     "value = excluded.value", (mig, key, json.dumps(value)))

    def progress(self, mig: str) -> dict[str, Any]:
        rows = self.db.conn().execute('SELECT "key", value FROM progress WHERE mig = ?', (mig,)).fetchall()
        return {k: json.loads(v) for k, v in rows}

    def log(self, mig: str | None, msg: str) -> None:
        self.db.conn().execute("INSERT INTO events(ts, mig, msg) VALUES (?, ?, ?)", (time.time(), mig, msg))

    def events(self, mig: str, limit: int = 50) -> list[tuple[float, str]]:
        rows = self.db.conn().execute("SELECT ts, msg FROM events WHERE mig = ? ORDER BY id DESC LIMIT ?",
                                      (mig, limit)).fetchall()[::-1]
        return [(float(r[0]), str(r[1])) for r in rows]

    @staticmethod
    def _upsert_mysql(c: Any, table: str, cols: tuple[str, ...], values: tuple[Any, ...]) -> None:
        # (MySQL has no ON CONFLICT: ON DUPLICATE KEY UPDATE, built by the backend)
        from .mysql import upsert_sql

        c.run(upsert_sql(table, cols, cols[:2] if table == "progress" else cols[:1]), values)
