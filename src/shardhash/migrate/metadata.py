"""The metadata store: topology versions, the shard map and migration records.

SQLite (one file, WAL, ``synchronous=FULL``; the default), PostgreSQL (a
database or a schema of one: ``postgresql:CONNINFO`` / ``postgresql://URI``
as the cluster file's ``metadata`` URL) or MariaDB / MySQL (a database:
``mysql://…`` / ``mariadb://…``; the same lock row, InnoDB's ``SELECT …
FOR UPDATE``).  Its commit of a migration's
cutover (one :meth:`Metadata.tx`, see the executor) is the single decision point of a
migration: before it the source owns the moving keys, after it the
destination does, whatever the shards' own records say at that moment.

Every write transaction (:meth:`Metadata.tx`) excludes every other one until
it ends: SQLite takes the database's write lock (``BEGIN IMMEDIATE``);
PostgreSQL and MySQL take the row lock of the one-row table ``meta_lock``
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
``meta_lock(id)`` (PostgreSQL and MySQL)
    the row every write transaction locks first.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .sqlite import SQLiteShard

if TYPE_CHECKING:
    from .backend import ShardBackend


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

#: The MariaDB / MySQL schema: InnoDB tables, key columns of bounded length
#: (a TEXT column cannot be a key there), the lock row.
MYSQL_DDL = [
    "CREATE TABLE IF NOT EXISTS topology(grp VARCHAR(64) PRIMARY KEY, version BIGINT NOT NULL, "
    "router LONGTEXT NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS shard_map(shard VARCHAR(128) PRIMARY KEY, url TEXT NOT NULL, "
    "replicas TEXT NOT NULL) ENGINE=InnoDB",
    """CREATE TABLE IF NOT EXISTS migrations(
        id VARCHAR(255) PRIMARY KEY, grp VARCHAR(64) NOT NULL, state VARCHAR(32) NOT NULL, kind VARCHAR(32) NOT NULL,
        from_version BIGINT NOT NULL, to_version BIGINT NOT NULL,
        old_router LONGTEXT NOT NULL, new_router LONGTEXT NOT NULL, units LONGTEXT NOT NULL,
        info LONGTEXT NOT NULL, error LONGTEXT, created DOUBLE NOT NULL, updated DOUBLE NOT NULL) ENGINE=InnoDB""",
    "CREATE TABLE IF NOT EXISTS progress(mig VARCHAR(255) NOT NULL, `key` VARCHAR(255) NOT NULL, "
    "value LONGTEXT NOT NULL, PRIMARY KEY (mig, `key`)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS events(id BIGINT AUTO_INCREMENT PRIMARY KEY, ts DOUBLE NOT NULL, "
    "mig VARCHAR(255), msg LONGTEXT NOT NULL, KEY events_mig (mig, id)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS meta_lock(id INTEGER PRIMARY KEY CHECK (id = 0)) ENGINE=InnoDB",
    "INSERT INTO meta_lock VALUES (0) ON DUPLICATE KEY UPDATE id = id",
]

#: Migration states in which a migration holds its table group.
ACTIVE = ("preparing", "copying", "catching-up", "freezing", "cutover", "failed", "verify-failed",
          "rolling-back")
#: States after the metadata commit (the destination owns the units).
COMMITTED = ("cutover", "retained", "cleaning", "cleaned")
#: Terminal or holding states: a group with a migration in any other state is busy.
DONE = ("cleaned", "rolled-back")


class _Dialect:
    """What differs between the store's databases: the schema, how a write
    transaction excludes every other one, and the lock one creator of the
    schema holds.  Chosen by the backend's :attr:`~ShardBackend.kind`; a new
    backend adds its entry to :data:`DIALECTS`."""

    def __init__(self, ddl: list[str], lock: str | None, setup_lock: str | None, *,
                 setup_unlock: str | None = None, on_duplicate_key: bool = False) -> None:
        self.ddl, self.lock, self.setup_lock = ddl, lock, setup_lock
        #: run after the schema's creation (a session-scoped setup lock)
        self.setup_unlock = setup_unlock
        #: upserts are ``ON DUPLICATE KEY UPDATE`` (MySQL), else ``ON CONFLICT``
        self.on_duplicate_key = on_duplicate_key

    def upsert(self, table: str, cols: Sequence[str], keys: Sequence[str], ph: str,
               quote: Callable[[str], str]) -> str:
        """Insert a row of ``cols`` into ``table``, replacing the other
        columns of the row with the same ``keys`` (names quoted by ``quote``,
        the backend's helper; ``ph``: its placeholder)."""
        head = ("INSERT INTO " + quote(table) + " (" + ", ".join(quote(x) for x in cols) + ") VALUES ("
                + ", ".join([ph] * len(cols)) + ")")
        others = [x for x in cols if x not in keys]
        if self.on_duplicate_key:
            return head + " ON DUPLICATE KEY UPDATE " + ", ".join(quote(x) + " = VALUES(" + quote(x) + ")"
                                                                  for x in others)
        return (head + " ON CONFLICT (" + ", ".join(quote(k) for k in keys) + ") DO UPDATE SET "
                + ", ".join(quote(x) + " = excluded." + quote(x) for x in others))


#: The store's dialects by backend kind.  SQLite: ``BEGIN IMMEDIATE`` takes
#: the database's write lock (the backend's :meth:`begin_write`), no more
#: needed; PostgreSQL: the row lock of ``meta_lock``, taken first, and an
#: advisory lock around the schema's creation (concurrent ``CREATE TABLE IF
#: NOT EXISTS`` can collide there); MySQL: the same lock row, and a named
#: lock (``GET_LOCK``, held by the session: released after the schema's
#: creation, whose DDL commits implicitly) around the schema's creation.
DIALECTS = {
    "sqlite": _Dialect([s for s in DDL.split(";") if s.strip()], None, None),
    "postgresql": _Dialect(PG_DDL, "SELECT id FROM meta_lock WHERE id = 0 FOR UPDATE",
                           "SELECT pg_advisory_xact_lock(hashtext('shardhash.migrate.metadata'))"),
    "mysql": _Dialect(MYSQL_DDL, "SELECT id FROM meta_lock WHERE id = 0 FOR UPDATE",
                      "SELECT GET_LOCK('shardhash.migrate.metadata', 600)",
                      setup_unlock="SELECT RELEASE_LOCK('shardhash.migrate.metadata')", on_duplicate_key=True),
}

#: The columns of a migration record, in the table's order.
_MIG_COLS = ("id", "grp", "state", "kind", "from_version", "to_version", "old_router", "new_router", "units",
             "info", "error", "created", "updated")


class Metadata:
    """The metadata store (SQLite, PostgreSQL or MySQL): every statement on it is here.

    ``store`` is a path (an SQLite file) or a shard backend
    (:func:`shardhash.migrate.cluster.open_backend`): an SQLite backend's
    file is opened again with ``synchronous=FULL`` (whatever the shards
    use); a server backend is used as it is.  Statements are written with
    the backend's own placeholder (:attr:`ShardBackend.placeholder`) and run
    through its :meth:`ShardBackend.execute`."""

    def __init__(self, store: Any) -> None:
        if isinstance(store, (str, os.PathLike)):
            self.db: ShardBackend = SQLiteShard(store, synchronous="FULL")
        elif store.kind == "sqlite":
            self.db = SQLiteShard(store.path, synchronous="FULL")  # always FULL, whatever the shards use
        else:
            self.db = store
        self.kind = self.db.kind
        if self.kind not in DIALECTS:
            raise ValueError(f"a {self.kind} database cannot hold the metadata store (it can: "
                             f"{', '.join(sorted(DIALECTS))})")
        self._dialect = DIALECTS[self.kind]
        self._p = self.db.placeholder
        self._key = self.db.quote_ident("key")  # (a reserved word in MySQL)
        self._ready = False

    def __repr__(self) -> str:
        return f"Metadata({self.db!r})"

    def _x(self, c: Any, sql: str, params: Sequence[Any] | None = None) -> Any:
        return self.db.execute(c, sql, params)

    def _ph(self, n: int) -> str:
        return ", ".join([self._p] * n)

    def _upsert(self, c: Any, table: str, cols: Sequence[str], keys: Sequence[str], values: Sequence[Any]) -> None:
        self._x(c, self._dialect.upsert(table, cols, keys, self._p, self.db.quote_ident), values)

    def setup(self) -> None:
        if self._ready:
            return
        c = self.db.conn()
        d = self._dialect
        self.db.begin_write(c)
        locked = False
        try:
            if d.setup_lock is not None:
                r = self._x(c, d.setup_lock).fetchone()
                if r is not None and r[0] == 0:  # (GET_LOCK's timeout)
                    raise TimeoutError(f"{self.db.path}: another process has been creating the metadata store's "
                                       "tables for more than 600 s")
                locked = True
            self.db.ensure_schema(c)  # (the schema the URL names: created when missing)
            for stmt in d.ddl:
                self._x(c, stmt)
            self.db.commit(c)
        except BaseException:
            self.db.rollback(c)
            raise
        finally:
            if locked and d.setup_unlock is not None:
                self._x(c, d.setup_unlock)
        self._ready = True

    @contextmanager
    def tx(self, c: Any = None) -> Iterator[Any]:
        """A write transaction that excludes every other one (see the module
        docstring); committed when the block ends, rolled back when it raises.
        ``c``: a connection of this store (default: this thread's)."""
        c = self.db.conn() if c is None else c
        self.db.begin_write(c)
        if self._dialect.lock is not None:
            try:
                self._x(c, self._dialect.lock)
            except BaseException:
                self.db.rollback(c)
                raise
        try:
            yield c
        except BaseException:
            self.db.rollback(c)
            raise
        try:
            self.db.commit(c)
        except BaseException:
            self.db.rollback(c)
            raise

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------ topology

    def topology(self, group: str, c: Any = None) -> tuple[int, str] | None:
        """(version, router document) of ``group``, or None (``c``: in that
        transaction, e.g. the cutover's version check)."""
        r = self._x(self.db.conn() if c is None else c,
                    "SELECT version, router FROM topology WHERE grp = " + self._p, (group,)).fetchone()
        return None if r is None else (int(r[0]), r[1])

    def set_topology(self, c: Any, group: str, version: int, router_json: str) -> None:
        self._upsert(c, "topology", ("grp", "version", "router"), ("grp",), (group, version, router_json))

    def seed(self, c: Any, shards: Mapping[str, tuple[str, list[str]]], routers: Mapping[str, Any]) -> None:
        """In transaction ``c``: record the shards of ``shards`` (id ->
        (primary, replicas)) and the routers of ``routers`` (group ->
        Router) that the store does not have yet (``init``)."""
        have = {r[0] for r in self._x(c, "SELECT shard FROM shard_map").fetchall()}
        for sid, (url, reps) in shards.items():
            if sid not in have:
                self.set_shard(c, sid, url, reps)
        for grp, router in routers.items():
            if self._x(c, "SELECT 1 FROM topology WHERE grp = " + self._p, (grp,)).fetchone() is None:
                self.set_topology(c, grp, router.version, router.to_json())

    def shard_map(self) -> dict[str, tuple[str, list[str]]]:
        rows = self._x(self.db.conn(), "SELECT shard, url, replicas FROM shard_map").fetchall()
        return {r[0]: (r[1], json.loads(r[2])) for r in rows}

    def shard_map_or_none(self) -> dict[str, tuple[str, list[str]]] | None:
        """:meth:`shard_map`, or None when the store is not initialised (no
        ``shard_map`` table yet); any other error propagates."""
        return self.shard_map() if self.db.has_table(self.db.conn(), "shard_map") else None

    def set_shard(self, c: Any, shard: str, url: str, replicas: list[str]) -> None:
        self._upsert(c, "shard_map", ("shard", "url", "replicas"), ("shard",), (shard, url, json.dumps(replicas)))

    def add_shard(self, c: Any, shard: str, url: str, replicas: list[str]) -> bool:
        """Register a new shard in transaction ``c``; True when it was added.
        The same shard id with the same primary is a no-op (a retried start);
        with another primary it is refused (ValueError): use a failover to
        move a shard."""
        r = self._x(c, "SELECT url FROM shard_map WHERE shard = " + self._p, (shard,)).fetchone()
        if r is not None:
            if r[0] != url:
                raise ValueError(f"shard {shard!r} is already in the shard map with primary {r[0]!r}, not "
                                 f"{url!r}: pick another shard id, or move the shard with Cluster.failover")
            return False
        self._x(c, "INSERT INTO shard_map VALUES (" + self._ph(3) + ")", (shard, url, json.dumps(replicas)))
        return True

    # ---------------------------------------------------------- migrations

    def create_migration(self, c: Any, mig: str, group: str, kind: str, old: Any, new: Any, units: list[Any],
                         info: dict[str, Any], msg: str | None = None) -> None:
        """In transaction ``c``: record migration ``mig`` of ``group`` from
        router ``old`` to ``new`` (state ``preparing``), and ``msg`` as its
        first event."""
        now = time.time()
        self._x(c, "INSERT INTO migrations VALUES (" + self._ph(2) + ", 'preparing', " + self._ph(7) + ", NULL, "
                + self._ph(2) + ")",
                (mig, group, kind, old.version, new.version, old.to_json(), new.to_json(),
                 json.dumps([u.to_dict() for u in units]), json.dumps(info), now, now))
        if msg is not None:
            self.log(mig, msg, c, ts=now)

    def migration(self, mig: str, c: Any = None) -> dict[str, Any] | None:
        r = self._x(self.db.conn() if c is None else c,
                    "SELECT " + ", ".join(_MIG_COLS) + " FROM migrations WHERE id = " + self._p, (mig,)).fetchone()
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
            ids = [r[0] for r in self._x(c, "SELECT id FROM migrations ORDER BY created").fetchall()]
        else:
            ids = [r[0] for r in self._x(c, "SELECT id FROM migrations WHERE grp = " + self._p + " ORDER BY created",
                                         (group,)).fetchall()]
        return [m for m in (self.migration(i) for i in ids) if m is not None]

    def active_migration(self, group: str, c: Any = None) -> tuple[str, str] | None:
        """(id, state) of a migration of ``group`` in an active state
        (:data:`ACTIVE`), or None."""
        r = self._x(self.db.conn() if c is None else c,
                    "SELECT id, state FROM migrations WHERE grp = " + self._p + " AND state IN ("
                    + self._ph(len(ACTIVE)) + ") ORDER BY created LIMIT 1", (group, *ACTIVE)).fetchone()
        return None if r is None else (str(r[0]), str(r[1]))

    def set_state(self, mig: str, state: str, *, error: str | None = None, c: Any = None) -> None:
        if c is None:
            with self.tx() as c2:
                self.set_state(mig, state, error=error, c=c2)
            return
        self._x(c, "UPDATE migrations SET state = " + self._p + ", error = " + self._p + ", updated = " + self._p
                + " WHERE id = " + self._p, (state, error, time.time(), mig))

    def set_info(self, mig: str, *, c: Any = None, touch: bool = True, **kw: Any) -> dict[str, Any]:
        """Merge ``kw`` into the migration's ``info`` (in transaction ``c``,
        else in one of its own); ``touch``: set ``updated`` too.  Returns the
        new ``info``."""
        if c is None:
            with self.tx() as c2:
                return self.set_info(mig, c=c2, touch=touch, **kw)
        r = self._x(c, "SELECT info FROM migrations WHERE id = " + self._p, (mig,)).fetchone()
        info = dict(json.loads(r[0]))
        info.update(kw)
        if touch:
            self._x(c, "UPDATE migrations SET info = " + self._p + ", updated = " + self._p + " WHERE id = "
                    + self._p, (json.dumps(info), time.time(), mig))
        else:
            self._x(c, "UPDATE migrations SET info = " + self._p + " WHERE id = " + self._p, (json.dumps(info), mig))
        return info

    # -------------------------------------------------------------- fences

    def break_fence(self, mig: str, attempt: int) -> str:
        """A writer found ``mig``'s units frozen past the deadline of fence
        attempt ``attempt``: ``"committed"`` when the cutover committed (the
        destination owns the units), else the abort of that attempt is
        recorded and ``"aborted"`` is returned.  One write transaction, which
        excludes the cutover's (see :meth:`fence_aborted`): exactly one of
        the two can happen."""
        with self.tx() as c:
            rec = self.migration(mig, c)
            if self.get(mig, "committed_at", c=c) is not None or (rec is not None and rec["state"] in COMMITTED):
                return "committed"
            key = "fence_aborted:" + str(int(attempt))
            if self.get(mig, key, c=c) is None:
                self.put(mig, key, time.time(), c)
                self.log(mig, f"fence attempt {attempt} aborted by a writer that waited past its deadline", c)
            return "aborted"

    def fence_aborted(self, c: Any, mig: str, attempt: int) -> bool:
        """In the cutover's transaction ``c`` (or outside one): whether a
        writer aborted fence attempt ``attempt`` (:meth:`break_fence`)."""
        return self.get(mig, "fence_aborted:" + str(int(attempt)), c=c) is not None

    def get(self, mig: str, key: str, default: Any = None, c: Any = None) -> Any:
        r = self._x(self.db.conn() if c is None else c,
                    "SELECT value FROM progress WHERE mig = " + self._p + " AND " + self._key + " = " + self._p,
                    (mig, key)).fetchone()
        return default if r is None else json.loads(r[0])

    def put(self, mig: str, key: str, value: Any, c: Any = None) -> None:
        self._upsert(c if c is not None else self.db.conn(), "progress", ("mig", "key", "value"), ("mig", "key"),
                     (mig, key, json.dumps(value)))

    def progress(self, mig: str) -> dict[str, Any]:
        rows = self._x(self.db.conn(), "SELECT " + self._key + ", value FROM progress WHERE mig = " + self._p,
                       (mig,)).fetchall()
        return {k: json.loads(v) for k, v in rows}

    def log(self, mig: str | None, msg: str, c: Any = None, *, ts: float | None = None) -> None:
        self._x(self.db.conn() if c is None else c, "INSERT INTO events(ts, mig, msg) VALUES (" + self._ph(3) + ")",
                (time.time() if ts is None else ts, mig, msg))

    def events(self, mig: str, limit: int = 50) -> list[tuple[float, str]]:
        rows = self._x(self.db.conn(), "SELECT ts, msg FROM events WHERE mig = " + self._p + " ORDER BY id DESC LIMIT "
                       + self._p, (mig, limit)).fetchall()[::-1]
        return [(float(r[0]), str(r[1])) for r in rows]

    # ------------------------------------------------- operator controls
    # (pause / resume and the copy's rate limit: progress rows under the
    # keys below, so that another process changes what a running executor
    # does; see shardhash.migrate.control)

    def pause(self, mig: str, pausable: Sequence[str]) -> str:
        """Record a pause of ``mig`` if its state is one of ``pausable``, in
        one transaction with the state read (so a pause and the executor's
        step into the fence, :meth:`set_state_unless_paused`, exclude each
        other); returns the state read."""
        with self.tx() as c:
            rec = self.migration(mig, c)
            if rec is None:
                raise KeyError(f"no migration {mig!r}")
            st = str(rec["state"])
            if st in pausable:
                self.put(mig, "control:paused", True, c)
            return st

    def set_paused(self, mig: str, paused: bool) -> bool:
        """Set (or lift) the pause flag; returns whether it was set before."""
        with self.tx() as c:
            was = bool(self.get(mig, "control:paused", False, c))
            self.put(mig, "control:paused", bool(paused), c)
            return was

    def set_rate_limit(self, mig: str, rows_per_s: float | None) -> None:
        with self.tx() as c:
            self.put(mig, "control:max_rows_per_s", rows_per_s, c)

    def controls(self, mig: str, c: Any = None) -> tuple[bool, float | None]:
        """(paused, max rows per second or None), in one read."""
        rows = self._x(self.db.conn() if c is None else c,
                       "SELECT " + self._key + ", value FROM progress WHERE mig = " + self._p
                       + " AND " + self._key + " IN (" + self._ph(2) + ")",
                       (mig, "control:paused", "control:max_rows_per_s")).fetchall()
        d = {str(k): json.loads(v) for k, v in rows}
        rate = d.get("control:max_rows_per_s")
        return bool(d.get("control:paused", False)), (float(rate) if rate else None)

    def set_state_unless_paused(self, mig: str, state: str) -> bool:
        """Set the state unless a pause is recorded (one transaction); returns
        whether the state was set."""
        with self.tx() as c:
            if self.get(mig, "control:paused", False, c):
                return False
            self.set_state(mig, state, c=c)
            return True
