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
``_shardhash_guarded``
    the group tables and their shard-key columns (written by ``init``): the
    tables the shard-key guard of client transactions watches.  The guard
    itself lives on the client's connection, not in the file: TEMP triggers
    on those tables (and on those of the cluster file, see
    :attr:`SQLiteShard.guard_tables`) call a function of the connection that
    records each row written, inside a client write transaction, whose shard
    key is another or whose table is of another group; the client reads the
    records before its COMMIT and rolls back when there is any
    (:class:`shardhash.migrate.ShardKeyError`).  Other connections (the
    executor's, applications that bypass the client) run no guard at all.
    (``_shardhash_guard``, the marker table of versions before this one, is
    kept, empty: their persistent guard triggers, which ``init`` drops, read
    it.)

SQLite serialises writers (``BEGIN IMMEDIATE`` takes the write lock), so
change ids are assigned in commit order; catch-up nevertheless consumes the
queue by row, not by position, so the same code is safe where that is false.
"""

from __future__ import annotations

import itertools
import os
import re
import sqlite3
import threading
import weakref
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
CREATE TABLE IF NOT EXISTS _shardhash_guarded(tbl TEXT PRIMARY KEY, grp TEXT NOT NULL, col TEXT NOT NULL);
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


# ------------------------------------------------------- shard-key guard
#
# The guard of a client write transaction runs on the client's connection:
# TEMP triggers on the group tables (created on the connection the first
# time it is guarded, and again after the file's schema changed or a
# rollback took them away) call ``_shardhash_guard_row``, a function of the
# connection, for every row written; inside a guarded transaction it records
# each row whose shard key is not the transaction's (compared as SQLite's
# ``IS`` compares: 5 and 5.0 are one key, 5 and '5' two) or whose table is
# of another group.  Turning the guard on is a function call inside the
# statement that also reads the shard's epoch; turning it off and reading
# the records is Python: no statement, no row and no page written.


def _same(a: Any, b: Any) -> bool:
    """Whether SQLite's ``a IS b`` holds for two values as sqlite3 gives
    them to a function (int, float, str, bytes or None)."""
    if type(a) is type(b):
        return bool(a == b)
    return type(a) in _NUMBERS and type(b) in _NUMBERS and bool(a == b)


_NUMBERS = (int, float)
#: Rows of another key recorded per transaction (the first one is reported).
_GUARD_RECORDS = 16


class _Guard:
    """The guard of one connection (held by the connection's functions)."""

    __slots__ = ("on", "group", "key", "records", "installed", "verified", "__weakref__")

    def __init__(self) -> None:
        self.on = False
        self.group: Any = None
        self.key: Any = None
        self.records: list[tuple[str, str, Any]] = []
        #: (schema version, generation) when the triggers were made
        self.installed: tuple[int, int] | None = None
        #: whether a transaction begun after they were made found them all:
        #: then they were committed, and only a change of the file's schema
        #: (a guarded table dropped, renamed or made) can take them away
        self.verified = False

    def begin(self, group: Any, key: Any, schema: int, gen: Any) -> int:
        """SQL ``_shardhash_guard(group, key, schema_version, generation)``
        (the generation of the connection's triggers, from its TEMP table;
        -1: not read, the triggers being verified): the guard on for this
        transaction; this guard's token, negative when its triggers must be
        made (again)."""
        self.on, self.group, self.key = True, group, key
        if self.records:
            self.records = []
        inst = self.installed
        if gen == -1:
            ok = self.verified and inst is not None and inst[0] == schema
        else:
            ok = inst == (schema, gen)
        return id(self) if ok else -id(self)

    def row(self, group: Any, table: Any, *keys: Any) -> int:
        """SQL ``_shardhash_guard_row(group, table, key[, old key])``, the
        TEMP triggers' ``WHEN``: records a row of another key or group."""
        if self.on:
            for k in keys:
                if (group != self.group or not _same(k, self.key)) and len(self.records) < _GUARD_RECORDS:
                    self.records.append((str(group), str(table), k))
        return 0


#: guards by token (their ``id``) and by their connection's ``id``; an entry
#: lives as long as its guard, which lives as long as its connection (whose
#: functions hold it; closing the connection frees them), so a later
#: connection with the same ``id`` never finds a stale one: its first guarded
#: statement fails for want of the function, and registers its own.
_tokens: weakref.WeakValueDictionary[int, _Guard] = weakref.WeakValueDictionary()
_by_conn: weakref.WeakValueDictionary[int, _Guard] = weakref.WeakValueDictionary()
_tokens_lock = threading.Lock()

#: The guard's versions of the file's schema and of the connection's TEMP
#: triggers: a generation number written with them in a TEMP table, which a
#: rollback of the transaction that made them takes back with them.
_GUARD_ARGS = ("(SELECT schema_version FROM pragma_schema_version), "
               "(SELECT n FROM temp._shardhash_guard_gen)")
_GUARD_GEN_TABLE = "CREATE TEMP TABLE IF NOT EXISTS _shardhash_guard_gen(n INTEGER NOT NULL)"
_generations = itertools.count(1)
_GUARD_ARGS_VERIFIED = "(SELECT schema_version FROM pragma_schema_version), -1"
#: The guard on (a client write transaction, after its BEGIN IMMEDIATE).
GUARD_ON = "SELECT _shardhash_guard(?, ?, " + _GUARD_ARGS + ")"
#: The guard on, and the shard's ownership-record epoch, in one statement.
GUARD_EPOCH = "SELECT (SELECT n FROM _shardhash_epoch WHERE id = 0), _shardhash_guard(?, ?, " + _GUARD_ARGS + ")"
#: The same two for a connection whose triggers were verified.
_GUARD_ON_VERIFIED = "SELECT _shardhash_guard(?, ?, " + _GUARD_ARGS_VERIFIED + ")"
_GUARD_EPOCH_VERIFIED = ("SELECT (SELECT n FROM _shardhash_epoch WHERE id = 0), _shardhash_guard(?, ?, "
                         + _GUARD_ARGS_VERIFIED + ")")


def guard_off(c: Any) -> list[tuple[str, str, Any]]:
    """The guard of connection ``c`` off; (group, table, key) of the rows of
    another key or group it recorded since it was turned on."""
    g = _by_conn.get(id(c))
    if g is None or not g.on:
        return []
    g.on = False
    return g.records


def _register_guard(c: Any) -> None:
    c.execute(_GUARD_GEN_TABLE)
    g = _Guard()
    c.create_function("_shardhash_guard", 4, g.begin)
    c.create_function("_shardhash_guard_row", -1, g.row)
    with _tokens_lock:
        _tokens[id(g)] = g


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
    #: (group, table, shard-key column) of tables the guard watches beside
    #: those ``init`` recorded in the file (``_shardhash_guarded``): a cluster
    #: gives its backends its groups' tables, so that a shard set up by an
    #: older version is guarded too.
    guard_tables: tuple[tuple[str, str, str], ...] = ()

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
        # The table joins the guarded ones (see _guard_triggers); persistent
        # guard triggers of earlier versions go (their marker table stays).
        qi(key), ql(group)  # (refused here, as any name a trigger cannot hold, not at a client's write)
        c.execute("INSERT INTO _shardhash_guarded(tbl, grp, col) VALUES (?, ?, ?) "
                  "ON CONFLICT (tbl) DO UPDATE SET grp = excluded.grp, col = excluded.col", (table, group, key))
        for k in "iud":
            c.execute("DROP TRIGGER IF EXISTS " + qi("_shardhash_g" + k + "1_" + table))

    def _guard_triggers(self, c: Any, g: _Guard) -> None:
        """The TEMP guard triggers of connection ``c`` on every guarded table
        the file holds (made inside the caller's transaction)."""
        tables = dict((t, (grp, col)) for grp, t, col in self.guard_tables)
        # the file's tables (grp NULL), this connection's guard triggers (grp
        # ''), the guarded tables
        q = ("SELECT name, NULL, NULL FROM main.sqlite_master WHERE type = 'table' "
             "UNION ALL SELECT name, '', NULL FROM temp.sqlite_master WHERE type = 'trigger' "
             "AND substr(name, 1, 13) = '_shardhash_tg'")
        try:
            rows = c.execute(q + " UNION ALL SELECT tbl, grp, col FROM _shardhash_guarded").fetchall()
        except sqlite3.OperationalError as e:
            if "_shardhash_guarded" not in str(e):
                raise
            rows = c.execute(q).fetchall()  # (a file set up by an older version: the cluster's tables only)
        tables.update((str(t), (str(grp), str(col))) for t, grp, col in rows if grp)
        present = {str(t) for t, grp, _col in rows if grp is None}
        # The connection's guard triggers made before go first: a trigger
        # follows its table when the table is renamed, and would otherwise
        # keep its name from a new table of the old name.
        for name, grp, _col in rows:
            if grp == "":
                c.execute("DROP TRIGGER IF EXISTS temp." + qi(str(name)))
        g.verified = False
        for table, (group, key) in sorted(tables.items()):
            if table not in present:
                continue
            t, lt, lg, kc = "main." + qi(table), ql(table), ql(group), qi(key)
            head = "_shardhash_guard_row(" + lg + ", " + lt + ", "
            stmts = {
                "i": "AFTER INSERT ON " + t + " WHEN " + head + "NEW." + kc + ")",
                "u": "AFTER UPDATE ON " + t + " WHEN " + head + "NEW." + kc + ", OLD." + kc + ")",
                "d": "AFTER DELETE ON " + t + " WHEN " + head + "OLD." + kc + ")",
            }
            for k, body in stmts.items():
                c.execute("CREATE TEMP TRIGGER " + qi("_shardhash_tg" + k + "_" + table) + " "
                          + body + " BEGIN SELECT 1; END")
        gen = next(_generations)
        c.execute(_GUARD_GEN_TABLE)
        c.execute("DELETE FROM temp._shardhash_guard_gen")
        c.execute("INSERT INTO temp._shardhash_guard_gen VALUES (?)", (gen,))
        row = c.execute("SELECT schema_version FROM pragma_schema_version").fetchone()
        g.installed = (int(row[0]), gen)

    def _guard_statement(self, c: Any, full: str, verified: str, group: str, key: Any, fresh: bool) -> Any:
        """Run ``full`` (the guard on, with both checks of its triggers) or,
        on a connection whose triggers were verified, ``verified`` (the
        schema check only); make the triggers when the check fails.  ``fresh``:
        the caller's transaction was begun just before (not inside another
        one), so triggers it finds were committed."""
        g = _by_conn.get(id(c))
        if g is None:  # (a connection not guarded yet: its functions first, sparing a failed statement)
            try:
                _register_guard(c)
            except sqlite3.Error:
                pass  # (the statement below decides)
        sql = verified if g is not None and g.verified else full
        try:
            row = c.execute(sql, (group, key)).fetchone()
        except sqlite3.OperationalError as e:
            if "_shardhash_guard" not in str(e):
                raise
            if "no such function" in str(e):
                _register_guard(c)  # (this connection's first guarded transaction)
            else:
                c.execute(_GUARD_GEN_TABLE)  # (a rollback took it: the triggers are made again)
            sql = full
            row = c.execute(sql, (group, key)).fetchone()
        token = row[-1]
        if g is None or id(g) != token:  # (another guard, or its triggers to make)
            with _tokens_lock:
                g = _tokens[abs(token)]
                _by_conn[id(c)] = g
            if token < 0:
                self._guard_triggers(c, g)
                return row
        if fresh and sql is full:
            g.verified = True
        return row

    def begin_guard(self, c: Any, group: str, key: Any, fresh: bool = True) -> None:
        """Inside a client's write transaction (after :meth:`begin_client_write`):
        record every row of a group table written by it whose shard key is
        not ``key`` or whose table is not of ``group`` (:meth:`end_guard`
        reads them).  ``fresh``: that transaction was begun just before."""
        self._guard_statement(c, GUARD_ON, _GUARD_ON_VERIFIED, group, key, fresh)

    def guard_epoch(self, c: Any, group: str, key: Any, fresh: bool = True) -> int | None:
        """:meth:`begin_guard` and the shard's ownership-record epoch (None:
        no epoch row) in one statement."""
        n = self._guard_statement(c, GUARD_EPOCH, _GUARD_EPOCH_VERIFIED, group, key, fresh)[0]
        return None if n is None else int(n)

    @staticmethod
    def end_guard(c: Any) -> list[tuple[str, str, Any]]:
        """(group, table, shard key) of every row the guard recorded since
        :meth:`begin_guard`; the guard is off again (before the commit)."""
        return guard_off(c)

    def rollback(self, c: Any) -> None:
        guard_off(c)
        if c.in_transaction:
            c.execute("ROLLBACK")

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
