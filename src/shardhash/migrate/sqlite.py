"""The SQLite backend: one database file per shard, WAL mode.

Every shard holds, beside the application's tables, a few ``_shardhash_*``
tables:

``_shardhash_units``
    the shard's own ownership record of every unit it gives or receives:
    ``(mig, idx, role, state, version, unit)``; role ``source`` with state
    ``copying`` / ``frozen`` / ``moved``, role ``destination`` with state
    ``importing`` / ``owned``.  The client reads it in the same local
    transaction as each write (see :mod:`shardhash.migrate.cluster`).
``_shardhash_routers``
    the old and new router documents of each migration named in the units.
``_shardhash_epoch``
    one counter, bumped whenever the units change (clients cache the parsed
    units per epoch).
``_shardhash_captures`` / ``_shardhash_changes``
    change capture: triggers on the application's tables append the primary
    key of every inserted, updated or deleted row to ``_shardhash_changes``,
    once per active capture of the table's group (none: nothing is logged).
    ``state`` 0 = pending, 1 = applied since the last full verify.
``_shardhash_skip``
    empty but inside a client's write transaction whose key is in no moving
    unit: the triggers log nothing for it (writes to keys that do not move
    cost no change row).  Writers that bypass the client are always logged.
``_shardhash_fence``
    the deadline of the freeze of each migration's source units here
    ``(mig, attempt, deadline)``: a writer that finds a frozen unit past its
    deadline asks the metadata store whether the cutover committed (see
    :meth:`shardhash.migrate.Cluster.transaction` and docs/migrate.md).
``_shardhash_guard``
    empty but inside a client's write transaction: its marker row holds the
    transaction's group and key, and guard triggers on every group table
    record each row written whose shard key is another (or whose table is of
    another group); the client reads and removes them before its COMMIT and
    rolls back when there is any (:class:`shardhash.migrate.ShardKeyError`).

SQLite serialises writers (``BEGIN IMMEDIATE`` takes the write lock), so
change ids are assigned in commit order; catch-up nevertheless consumes the
queue by row, not by position, so the same code is safe where that is false.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from .systables import SystemTables, decode_pk, qi, ql

__all__ = ["SQLiteShard", "check_identifier", "decode_pk", "qi", "ql"]

SYSTEM_DDL = """
CREATE TABLE IF NOT EXISTS _shardhash_units(
    grp TEXT NOT NULL, mig TEXT NOT NULL, idx INTEGER NOT NULL, role TEXT NOT NULL,
    state TEXT NOT NULL, version INTEGER NOT NULL, unit TEXT NOT NULL,
    PRIMARY KEY (mig, idx, role));
CREATE TABLE IF NOT EXISTS _shardhash_routers(
    mig TEXT PRIMARY KEY, old TEXT NOT NULL, new TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS _shardhash_epoch(id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL);
INSERT OR IGNORE INTO _shardhash_epoch VALUES (0, 0);
CREATE TABLE IF NOT EXISTS _shardhash_captures(
    id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, grp TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS _shardhash_changes(
    id INTEGER PRIMARY KEY AUTOINCREMENT, capture INTEGER NOT NULL, tbl TEXT NOT NULL,
    pk TEXT NOT NULL, state INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS _shardhash_changes_q ON _shardhash_changes(capture, state, id);
CREATE TABLE IF NOT EXISTS _shardhash_skip(grp TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS _shardhash_guard(id INTEGER PRIMARY KEY, grp TEXT NOT NULL, tbl TEXT, k);
CREATE TABLE IF NOT EXISTS _shardhash_fence(mig TEXT PRIMARY KEY, attempt INTEGER NOT NULL, deadline REAL NOT NULL);
"""


#: Rows per multi-row INSERT statement of the snapshot copy (fewer when the
#: table is wide: SQLite bounds the number of parameters of a statement).
MULTI_ROWS = 200


#: The names a cluster file may give a table group, a table or a shard-key
#: column: ASCII letters, digits and ``_``, not starting with a digit, at
#: most 48 characters (the longest name the package derives from one, e.g. a
#: trigger's, stays within PostgreSQL's 63 bytes), and not starting with
#: ``_shardhash`` (the package's own tables).
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")
#: Shard ids: ASCII letters, digits and ``_ . : -``, at most 128 characters.
SHARD_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}")
#: SQLite's ``PRAGMA synchronous`` levels (the ``synchronous`` option).
SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def check_identifier(name: Any, what: str) -> str:
    """``name`` when it is a valid table, column or group name (see
    :data:`IDENTIFIER`); else TypeError/ValueError naming ``what``.

    >>> check_identifier("users", "table")
    'users'
    >>> check_identifier('t"; DROP TABLE x; --', "table")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: table: 't"; DROP TABLE x; --' is not a valid name (ASCII letters, digits and _, ...)
    """
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a string, not {type(name).__name__}")
    if IDENTIFIER.fullmatch(name) is None:
        raise ValueError(f"{what}: {name!r} is not a valid name (ASCII letters, digits and _, "
                         "not starting with a digit, 1-48 characters)")
    if name.lower().startswith("_shardhash"):
        raise ValueError(f"{what}: {name!r} starts with _shardhash, which is reserved for shardhash's own tables")
    return name


class SQLiteShard(SystemTables):
    """One shard (or the metadata store) in one SQLite file.

    ``conn()`` gives this thread's connection (autocommit mode: every
    transaction is an explicit ``BEGIN``)."""

    kind = "sqlite"
    placeholder = "?"
    #: Whether the snapshot copy reads the next chunk on a thread of its own
    #: while the current one is routed and written.  Not on SQLite: the
    #: sqlite3 module releases the GIL around every row it steps through, so
    #: a reader thread waits for the GIL once per row while the others run
    #: (a 1M-row unit, load 7-10: 62k rows/s with the thread, its reads 15.6 s
    #: of 16.1; 86k rows/s without it, reads 8.6 s of 11.6).
    prefetch = False

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL") -> None:
        if not isinstance(synchronous, str) or synchronous.upper() not in SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, not {synchronous!r}")
        self.path = str(path)
        self.synchronous = synchronous.upper()
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"SQLiteShard({self.path!r})"

    def connect(self) -> sqlite3.Connection:
        """A new connection (the caller closes it)."""
        parent = Path(self.path).parent
        if not parent.is_dir():
            raise ConnectionError(f"cannot open {self.path}: folder {parent} does not exist")
        try:
            c = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
            c.execute("PRAGMA journal_mode=WAL")
            c.execute(f"PRAGMA synchronous={self.synchronous}")
            c.execute("PRAGMA busy_timeout=60000")
        except sqlite3.Error as e:
            raise ConnectionError(f"cannot open {self.path}: {e}") from e
        return c

    def conn(self) -> sqlite3.Connection:
        c = getattr(self._local, "c", None)
        if c is None:
            c = self.connect()
            self._local.c = c
        return c

    def close(self) -> None:
        c = getattr(self._local, "c", None)
        if c is not None:
            c.close()
            self._local.c = None

    def execute(self, c: Any, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement (``?`` placeholders: sqlite3's own style)."""
        return c.execute(sql, () if params is None else params)

    def executemany(self, c: Any, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        c.executemany(sql, rows)

    # -------------------------------------------------------- transactions

    @staticmethod
    def begin_write(c: sqlite3.Connection) -> None:
        c.execute("BEGIN IMMEDIATE")

    def begin_client_write(self, c: sqlite3.Connection, guard: tuple[str, Any] | None = None) -> None:
        """A client's write transaction: it must exclude the fence's update
        of the ownership records until it ends (SQLite: the write lock).
        ``guard``: (group, key) of the transaction, for :meth:`begin_guard`."""
        c.execute("BEGIN IMMEDIATE")
        if guard is not None:
            self.begin_guard(c, guard[0], guard[1])

    @staticmethod
    def begin_read(c: sqlite3.Connection) -> None:
        c.execute("BEGIN")

    # ------------------------------------------------------------ schema

    def lock_schema(self, c: Any) -> None:
        """Inside a write transaction: exclude other schema changes on this
        shard until it ends (SQLite: the write lock already does)."""

    def ensure_schema(self, c: Any) -> None:
        """A file is its own schema: nothing to create."""

    def ensure_system(self, c: sqlite3.Connection) -> None:
        # (statement by statement: executescript would commit the caller's transaction)
        for stmt in SYSTEM_DDL.split(";"):
            if stmt.strip():
                c.execute(stmt)

    def table_info(self, c: sqlite3.Connection, table: str) -> tuple[list[str], list[str]]:
        """(columns, primary-key columns in key order); ValueError when the
        table is missing or has no primary key."""
        rows = c.execute(f"PRAGMA table_info({qi(table)})").fetchall()
        if not rows:
            raise ValueError(f"table {table!r} does not exist on {self.path}")
        cols = [r[1] for r in rows]
        pk = [r[1] for r in sorted((r for r in rows if r[5] > 0), key=lambda r: r[5])]
        if not pk:
            raise ValueError(f"table {table!r} on {self.path} has no primary key: "
                             "a migrated table needs one (rows are copied and caught up by primary key)")
        return cols, pk

    def table_ddl(self, c: sqlite3.Connection, table: str) -> list[str]:
        rows = c.execute("SELECT type, sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL "
                         "AND name NOT LIKE '_shardhash%' ORDER BY type = 'table' DESC", (table,)).fetchall()
        return [r[1] for r in rows if r[0] in ("table", "index")]

    def has_table(self, c: sqlite3.Connection, table: str) -> bool:
        return c.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone() is not None

    def create_from(self, c: sqlite3.Connection, ddl: Sequence[str]) -> None:
        for stmt in ddl:
            s = stmt.strip()
            for head in ("CREATE TABLE ", "CREATE UNIQUE INDEX ", "CREATE INDEX "):
                if s.upper().startswith(head):
                    s = s[: len(head)] + "IF NOT EXISTS " + s[len(head):]
                    break
            c.execute(s)

    def install_triggers(self, c: sqlite3.Connection, group: str, table: str, pk: Sequence[str],
                         key: str | None = None) -> None:
        """Row triggers that log the primary key of every inserted, updated or
        deleted row once per active capture of ``group`` -- unless the writing
        transaction said its key is in no moving unit (:meth:`skip_capture`).
        An update logs the old key too only when the primary key changed.

        With ``key`` (the table's shard-key column), also the guard triggers
        of client transactions (:meth:`begin_client_write`).

        Every name is quoted once, by :func:`qi` / :func:`ql`, into text that
        is never formatted again."""
        t, lt, lg = qi(table), ql(table), ql(group)

        def log(ref: str, extra: str = "") -> str:
            arr = "json_array(" + ", ".join(ref + "." + qi(k) for k in pk) + ")"
            return ("INSERT INTO _shardhash_changes(capture, tbl, pk) SELECT id, " + lt + ", " + arr
                    + " FROM _shardhash_captures WHERE grp = " + lg
                    + " AND NOT EXISTS (SELECT 1 FROM _shardhash_skip WHERE grp = " + lg + ")" + extra + ";")

        moved = " AND (" + " OR ".join("OLD." + qi(k) + " IS NOT NEW." + qi(k) for k in pk) + ")"
        stmts = {
            "i": "AFTER INSERT ON " + t + " BEGIN " + log("NEW") + " END",
            "d": "AFTER DELETE ON " + t + " BEGIN " + log("OLD") + " END",
            "u": "AFTER UPDATE ON " + t + " BEGIN " + log("NEW") + " " + log("OLD", moved) + " END",
        }
        for k, body in stmts.items():
            # (version 2 of the triggers: an older cluster's are replaced)
            c.execute("DROP TRIGGER IF EXISTS " + qi("_shardhash_" + k + "_" + table))
            c.execute("CREATE TRIGGER IF NOT EXISTS " + qi("_shardhash_" + k + "2_" + table) + " " + body)
        if key is not None:
            self._install_guard(c, group, table, key)

    def _install_guard(self, c: sqlite3.Connection, group: str, table: str, key: str) -> None:
        # Inside a client transaction (its marker row, id 0, holds the
        # transaction's group and key) every row written whose key differs,
        # or that belongs to another group's table, is recorded; other writers
        # (the executor, applications that bypass the client) find no marker.
        t, lt, lg, kc = qi(table), ql(table), ql(group), qi(key)

        def rec(ref: str) -> str:
            return ("INSERT INTO _shardhash_guard(grp, tbl, k) SELECT " + lg + ", " + lt + ", " + ref + "." + kc
                    + " WHERE (SELECT grp = " + lg + " AND k IS " + ref + "." + kc
                    + " FROM _shardhash_guard WHERE id = 0) = 0;")

        when = " WHEN EXISTS (SELECT 1 FROM _shardhash_guard WHERE id = 0) BEGIN "
        stmts = {
            "i": "AFTER INSERT ON " + t + when + rec("NEW") + " END",
            "u": "AFTER UPDATE ON " + t + when + rec("NEW") + " " + rec("OLD") + " END",
            "d": "AFTER DELETE ON " + t + when + rec("OLD") + " END",
        }
        for k, body in stmts.items():
            c.execute("CREATE TRIGGER IF NOT EXISTS " + qi("_shardhash_g" + k + "1_" + table) + " " + body)

    def begin_guard(self, c: Any, group: str, key: Any) -> None:
        """Inside a client's write transaction (after :meth:`begin_client_write`):
        record every row of a group table written by it whose shard key is
        not ``key`` or whose table is not of ``group`` (:meth:`end_guard`
        reads them)."""
        try:
            c.execute("INSERT INTO _shardhash_guard(id, grp, k) VALUES (0, ?, ?)", (group, key))
        except sqlite3.OperationalError as e:
            if "_shardhash_guard" not in str(e):
                raise
            # a shard set up by an older version (no guard table, no guard
            # triggers): writes go on unguarded until init runs again
            if not getattr(self, "_warned_guard", False):
                self._warned_guard = True
                logging.getLogger("shardhash.migrate").warning(
                    "shard %s has no shard-key guard (set up by an older version): run init", self.path)

    def end_guard(self, c: Any) -> list[tuple[str, str, Any]]:
        """(group, table, shard key) of every row the guard recorded since
        :meth:`begin_guard`; the guard is off again (before the commit)."""
        try:
            rows = c.execute("DELETE FROM _shardhash_guard RETURNING id, grp, tbl, k").fetchall()
        except sqlite3.OperationalError as e:
            if "_shardhash_guard" not in str(e):
                raise
            return []  # (no guard table: see begin_guard)
        return [(str(r[1]), str(r[2]), r[3]) for r in rows if r[0] != 0]

    def guard_violation(self, exc: BaseException) -> tuple[str, str, Any] | None:
        """(group, table, shard key) when ``exc`` is the guard's refusal of a
        statement (PostgreSQL refuses at the statement; SQLite records, see
        :meth:`end_guard`), else None."""
        return None

    def skip_capture(self, c: Any, group: str) -> None:
        """In a client's write transaction whose key is in no moving unit of
        any capture of ``group`` on this shard: its writes are not logged.
        (SQLite serialises writers: a marker row, removed by :meth:`end_skip`
        before the commit, is seen by this transaction's triggers only.)"""
        c.execute("INSERT INTO _shardhash_skip VALUES (?) ON CONFLICT DO NOTHING", (group,))

    def end_skip(self, c: Any, group: str) -> None:
        c.execute("DELETE FROM _shardhash_skip WHERE grp = ?", (group,))

    def active_capture_groups(self, c: Any) -> set[str]:
        try:
            return {str(r[0]) for r in c.execute("SELECT DISTINCT grp FROM _shardhash_captures").fetchall()}
        except Exception as e:  # noqa: BLE001 - a shard not set up yet: no capture
            if "_shardhash_captures" in str(e):
                return set()
            raise

    # ------------------------------------------------------------- units

    def unit_rows(self, c: Any, group: str | None = None) -> list[tuple[Any, ...]]:
        try:
            return super().unit_rows(c, group)
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return []
            raise

    # --------------------------------------------------------- row access

    def upsert(self, c: sqlite3.Connection, table: str, cols: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        q = f"INSERT OR REPLACE INTO {qi(table)} ({', '.join(qi(x) for x in cols)}) " \
            f"VALUES ({', '.join('?' for _ in cols)})"
        c.executemany(q, rows)

    def insert_new(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """Insert rows whose primary key is absent; returns how many were inserted.

        Multi-row ``INSERT … VALUES (…), (…), …`` statements of a fixed
        number of rows (one cached statement, within SQLite's limit on bound
        parameters): about twice as fast as ``executemany`` of one row."""
        if not rows:
            return 0
        head = f"INSERT INTO {qi(table)} ({', '.join(qi(x) for x in cols)}) VALUES "
        one = "(" + ", ".join("?" for _ in cols) + ")"
        # (Connection.getlimit: Python 3.11+; 999 is SQLite's smallest default)
        which = getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", None)
        limit = int(c.getlimit(which)) if which is not None and hasattr(c, "getlimit") else 999
        per = max(1, min(MULTI_ROWS, limit // max(1, len(cols))))
        full = len(rows) - len(rows) % per
        n = 0
        if full:
            q = head + ", ".join(one for _ in range(per)) + " ON CONFLICT DO NOTHING"
            for i in range(0, full, per):
                n += c.execute(q, list(chain.from_iterable(rows[i:i + per]))).rowcount
        if full < len(rows):
            rest = rows[full:]
            q = head + ", ".join(one for _ in rest) + " ON CONFLICT DO NOTHING"
            n += c.execute(q, list(chain.from_iterable(rest))).rowcount
        return int(n)

    def copy_new(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> bool:
        """The snapshot copy's fast path: insert every row, atomically, when
        none of their primary keys is there yet (True, committed); else change
        nothing and return False (the caller takes the checked upsert path)."""
        self.begin_write(c)
        try:
            if self.insert_new(c, table, cols, rows) < len(rows):
                self.rollback(c)
                return False
            self.commit(c)
        except BaseException:
            self.rollback(c)
            raise
        return True
