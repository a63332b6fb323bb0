"""The saga's tables: the saga log in the metadata store, and the
idempotency records, outbox and semantic locks on the shards (tables of the
application's table group, keyed by the step's shard key, so that a
migration moves them with the data).

Every SQL statement is composed here once, from names checked by
:func:`shardhash.migrate.sqlite.check_identifier` and quoted by the
backends' one quoting helper (:func:`shardhash.migrate.sqlite.qi`); values
are always bound parameters.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..migrate.metadata import Metadata
from ..migrate.sqlite import check_identifier, qi

#: The shard-key column of every saga table on the shards.
KEY_COLUMN = "shard_key"

_LOG_TABLES = """
CREATE TABLE IF NOT EXISTS sagas(
    id TEXT PRIMARY KEY, name TEXT NOT NULL, idem_key TEXT, state TEXT NOT NULL,
    step BIGINT NOT NULL, nsteps BIGINT NOT NULL, args TEXT NOT NULL, results TEXT NOT NULL,
    attempts BIGINT NOT NULL, error TEXT, owner TEXT, lease_until {real} NOT NULL,
    fence BIGINT NOT NULL, created {real} NOT NULL, updated {real} NOT NULL,
    UNIQUE (name, idem_key));
CREATE INDEX IF NOT EXISTS sagas_state ON sagas(state, lease_until)
"""

#: The saga log's columns, in the order :data:`LOG_SELECT` reads them.
LOG_COLUMNS = ("id", "name", "idem_key", "state", "step", "nsteps", "args", "results", "attempts", "error",
               "owner", "lease_until", "fence", "created", "updated")
LOG_SELECT = "SELECT " + ", ".join(LOG_COLUMNS) + " FROM sagas"

_ready: weakref.WeakSet[Metadata] = weakref.WeakSet()
_ready_lock = threading.Lock()


def ensure_log(meta: Metadata) -> None:
    """Create the saga log's table in the metadata store (idempotent)."""
    with _ready_lock:
        if meta in _ready:
            return
    meta.setup()
    c = meta.db.conn()
    if meta.kind == "postgresql":
        c.execute("BEGIN")
        try:
            c.execute("SELECT pg_advisory_xact_lock(hashtext('shardhash.saga.log'))")
            for stmt in _LOG_TABLES.format(real="DOUBLE PRECISION").split(";"):
                if stmt.strip():
                    c.execute(stmt)
            c.execute("COMMIT")
        except BaseException:
            meta.db.rollback(c)
            raise
    else:
        c.executescript(_LOG_TABLES.format(real="REAL") + ";")
    with _ready_lock:
        _ready.add(meta)


@contextmanager
def meta_tx(meta: Metadata) -> Iterator[Any]:
    """A write transaction on the metadata store's connection of this thread
    (SQLite: the write lock; PostgreSQL: row locks taken by the statements)."""
    c = meta.db.conn()
    c.execute("BEGIN IMMEDIATE" if meta.kind == "sqlite" else "BEGIN")
    try:
        yield c
    except BaseException:
        meta.db.rollback(c)
        raise
    try:
        c.execute("COMMIT")
    except BaseException:
        meta.db.rollback(c)
        raise


@dataclass(frozen=True)
class Tables:
    """The names of the saga's tables on the shards (each one a table of the
    application's group, with shard-key column ``shard_key``).

    ``steps``: the idempotency records; ``outbox``: the events; ``locks``:
    the semantic locks.  Names follow the cluster file's rules."""

    steps: str = "saga_steps"
    outbox: str = "saga_outbox"
    locks: str = "saga_locks"
    sql: dict[str, str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        for what in ("steps", "outbox", "locks"):
            check_identifier(getattr(self, what), f"Tables.{what}")
        s, o, lk = qi(self.steps), qi(self.outbox), qi(self.locks)
        k = qi(KEY_COLUMN)
        sql = {
            "record": f"SELECT status, result FROM {s} WHERE saga_id = ? AND step = ? AND direction = ?",
            "put_record": f"INSERT INTO {s} (saga_id, step, direction, {k}, status, result, at) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?)",
            "records_of": f"SELECT saga_id, step, direction, {k}, status, result, at FROM {s} WHERE saga_id = ?",
            "emit": f"INSERT INTO {o} (event_id, {k}, seq, topic, payload, saga_id, created) VALUES "
                    f"(?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM {o} WHERE {k} = ?), ?, ?, ?, ?)",
            "pending_keys": f"SELECT DISTINCT {k} FROM {o} WHERE delivered IS NULL",
            "events_of": f"SELECT event_id, {k}, seq, topic, payload, saga_id, created FROM {o} "
                         f"WHERE {k} = ? AND delivered IS NULL ORDER BY seq LIMIT ?",
            "mark": f"UPDATE {o} SET delivered = ? WHERE event_id = ? AND {k} = ? AND delivered IS NULL",
            "purge": f"DELETE FROM {o} WHERE {k} = ? AND delivered IS NOT NULL AND delivered < ?",
            "delivered_keys": f"SELECT DISTINCT {k} FROM {o} WHERE delivered IS NOT NULL AND delivered < ?",
            "lock": f"INSERT INTO {lk} (saga_id, {k}, step, note, since) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
            "unlock": f"DELETE FROM {lk} WHERE saga_id = ? AND {k} = ?",
            "locks_of": f"SELECT saga_id, step, note, since FROM {lk} WHERE {k} = ? ORDER BY since, saga_id",
        }
        object.__setattr__(self, "sql", sql)

    def entries(self) -> list[dict[str, str]]:
        """The three table entries to add to the group's ``tables`` in the cluster file."""
        return [{"name": n, "key": KEY_COLUMN} for n in (self.steps, self.outbox, self.locks)]

    def ddl(self, kind: str, key_type: str) -> list[str]:
        """CREATE statements of the three tables (and their indexes) for a
        backend ``kind`` (sqlite / postgresql) and key type (int / str)."""
        if key_type not in ("int", "str"):
            raise ValueError(f"key_type must be 'int' or 'str', not {key_type!r}")
        kt = "BIGINT" if key_type == "int" else "TEXT"
        real = "DOUBLE PRECISION" if kind == "postgresql" else "REAL"
        s, o, lk, k = qi(self.steps), qi(self.outbox), qi(self.locks), qi(KEY_COLUMN)
        ix_key, ix_seq = (qi(f"{self.outbox}_{x}") for x in ("key_seq", "delivered"))
        return [
            f"CREATE TABLE IF NOT EXISTS {s} (saga_id TEXT NOT NULL, step BIGINT NOT NULL, direction TEXT NOT NULL, "
            f"{k} {kt} NOT NULL, status TEXT NOT NULL, result TEXT NOT NULL, at {real} NOT NULL, "
            "PRIMARY KEY (saga_id, step, direction))",
            f"CREATE TABLE IF NOT EXISTS {o} (event_id TEXT PRIMARY KEY, {k} {kt} NOT NULL, seq BIGINT NOT NULL, "
            f"topic TEXT NOT NULL, payload TEXT NOT NULL, saga_id TEXT, created {real} NOT NULL, "
            f"delivered {real})",
            f"CREATE UNIQUE INDEX IF NOT EXISTS {ix_key} ON {o} ({k}, seq)",
            f"CREATE INDEX IF NOT EXISTS {ix_seq} ON {o} (delivered)",
            f"CREATE TABLE IF NOT EXISTS {lk} (saga_id TEXT NOT NULL, {k} {kt} NOT NULL, step BIGINT NOT NULL, "
            f"note TEXT NOT NULL, since {real} NOT NULL, PRIMARY KEY (saga_id, {k}))",
        ]


DEFAULT_TABLES = Tables()
