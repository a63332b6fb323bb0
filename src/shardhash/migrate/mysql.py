"""The MariaDB / MySQL backend (mysqlclient, the optional extra ``shardhash[mysql]``).

A shard is a database (a "schema" in MySQL's words: the two are one thing
there) on a MariaDB >= 10.6 or MySQL >= 8.0 server, InnoDB tables.  The URL
is ``mysql://USER:PASSWORD@HOST:PORT/DATABASE`` or the same with
``mariadb://``; ``?unix_socket=PATH`` connects through a unix socket
(``connect_timeout``, ``read_default_file`` and ``read_default_group`` are
passed on too).  A database the URL names that does not exist yet is created
(``CREATE DATABASE``) when the shard or the metadata store is set up.

Same tables and protocol as the SQLite backend (see
:mod:`shardhash.migrate.sqlite`), the MySQL way:

* every connection reads and writes at ``READ COMMITTED`` (InnoDB takes no
  gap locks for searches then: the catch-up's writes by primary key lock the
  rows they touch, not the gaps next to them, so they do not deadlock with
  writers inserting nearby keys; see docs/migrate.md) and with
  ``ANSI_QUOTES`` (a ``"name"`` is an identifier, as in SQLite and
  PostgreSQL; the backend's own SQL quotes with backticks, :func:`qi`) and
  ``STRICT_ALL_TABLES`` (a value that does not fit is an error, never
  truncated);
* a client's write transaction starts with ``SELECT … LOCK IN SHARE MODE``
  (``FOR SHARE``) of the shard's ownership epoch row; the fence's update of
  the ownership records bumps that row, so it waits for every write in
  flight, and every later write sees the new records;
* change capture is one row trigger per table and event (as
  pt-online-schema-change does), which also holds the shard-key guard of
  client transactions; the transaction's group, key and skip marker are
  session variables that the client sets after its ``BEGIN`` and clears
  before its ``COMMIT`` (and at every rollback);
* the snapshot copy reads in one ``START TRANSACTION WITH CONSISTENT
  SNAPSHOT`` (REPEATABLE READ for that transaction only) and writes each
  chunk with multi-row ``INSERT`` statements in one transaction;
* a transaction the backend owns whole (a chunk of the copy, a schema
  change) is retried when InnoDB reports a deadlock (1213) or a lock wait
  timeout (1205); a client's transaction is not (its block cannot be run
  again): the error reaches the caller, nothing of it was written.

DDL commits implicitly in MySQL: setting a shard up is idempotent statement
by statement (``IF NOT EXISTS``), serialised by a named lock
(``GET_LOCK``), not by a transaction.

Placeholders: the backend's own statements are written with the driver's
``%s`` and run by :meth:`MySQLConnection.run`; :meth:`MySQLConnection.execute`
takes the ``?`` placeholders of the statements shared by every backend (and
of application code in a :class:`~shardhash.migrate.cluster.ShardTransaction`),
converted to ``%s`` outside quoted names and string literals.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.parse
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import accumulate
from typing import Any, TypeVar

from .systables import ServerSystemTables

T = TypeVar("T")

log = logging.getLogger("shardhash.migrate")

#: InnoDB's deadlock and lock wait timeout errors: the transaction (1213) or
#: the statement (1205) was rolled back; retried where the backend owns the
#: whole transaction.
DEADLOCK, LOCK_WAIT_TIMEOUT = 1213, 1205
RETRYABLE = (DEADLOCK, LOCK_WAIT_TIMEOUT)
#: Attempts of a retried transaction.
RETRIES = 8
#: Errors after which the connection is gone (a new one is opened).
_GONE = (2006, 2013, 2055, 4031)
#: The guard's refusal: SIGNAL with this errno, the message starts with _GUARD_TAG.
GUARD_ERRNO = 1644
_GUARD_TAG = "shardhash-guard:"
#: Bytes of row values per multi-row INSERT (the copy's, the catch-up's):
#: at most this, and at most half the server's ``max_allowed_packet``; a row
#: longer than that goes alone.
STATEMENT_BYTES = 1 << 20
#: Session settings of every connection (see the module docstring).
_SESSION = ("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
            "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'ANSI_QUOTES', 'STRICT_ALL_TABLES')")
#: URL query parameters passed on to the driver.
_URL_PARAMS = ("unix_socket", "connect_timeout", "read_default_file", "read_default_group")
#: A database name the backend creates: a plain identifier.
_DATABASE = re.compile(r"[A-Za-z0-9_$]{1,64}")


def qi(name: str) -> str:
    """Quote a MySQL identifier with backticks (a backtick is doubled; a
    NUL, or a name longer than MySQL's 64 characters, is a ValueError).  The
    one quoting helper of the MySQL backend's own SQL."""
    if not isinstance(name, str):
        raise TypeError(f"an SQL identifier must be a string, not {type(name).__name__}")
    if "\x00" in name or not name or len(name) > 64:
        raise ValueError(f"MySQL identifier {name!r} is empty, holds a NUL or is longer than 64 characters")
    return "`" + name.replace("`", "``") + "`"


def ql(text: str) -> str:
    """Quote a MySQL string literal: ``'`` doubled and ``\\`` doubled (the
    default sql_mode reads a backslash as an escape); a NUL is a ValueError."""
    if not isinstance(text, str):
        raise TypeError(f"an SQL string literal must be a string, not {type(text).__name__}")
    if "\x00" in text:
        raise ValueError(f"SQL string literal {text!r} contains a NUL character")
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


# ``?`` outside `names`, "names" (ANSI_QUOTES) and 'literals' (with MySQL's
# backslash escapes) is a placeholder; every ``%`` is escaped for the driver,
# inside a quoted name or literal too (mysqlclient formats the whole text).
_PLACEHOLDER = re.compile(r"`(?:[^`]|``)*`|\"(?:[^\"]|\"\")*\"|'(?:[^'\\]|''|\\.)*'|[?%]", re.S)


def _convert(m: re.Match[str]) -> str:
    t = m.group(0)
    return "%s" if t == "?" else t.replace("%", "%%")


# The backend's own statements: ``%s`` outside quotes is a placeholder, any
# other ``%`` (in a quoted name, say) is escaped for the driver.
_PERCENT = re.compile(r"`(?:[^`]|``)*`|\"(?:[^\"]|\"\")*\"|'(?:[^'\\]|''|\\.)*'|%s|%", re.S)


def _escape_percent(m: re.Match[str]) -> str:
    t = m.group(0)
    return t if t == "%s" else t.replace("%", "%%")


def driver_text(sql: str) -> str:
    """A statement in the backend's ``%s`` style as mysqlclient must see it
    when values are bound: every ``%`` that is not a placeholder doubled.

    >>> driver_text("SELECT `a%s`, '%' FROM t WHERE a = %s")
    "SELECT `a%%s`, '%%' FROM t WHERE a = %s"
    """
    return _PERCENT.sub(_escape_percent, sql) if "%" in sql else sql


def to_driver(sql: str) -> str:
    """``sql`` with ``?`` placeholders in the driver's ``%s`` style.

    >>> to_driver("SELECT '?', `a?`, \\"%\\" FROM t WHERE a = ? AND b LIKE 'x%'")
    'SELECT \\'?\\', `a?`, "%%" FROM t WHERE a = %s AND b LIKE \\'x%%\\''
    """
    return _PLACEHOLDER.sub(_convert, sql)


def connect_args(url: str, *, database: bool = True) -> dict[str, Any]:
    """mysqlclient's keyword arguments for a ``mysql://`` / ``mariadb://``
    URL (ValueError naming what is wrong); ``database=False``: without the
    database (to create it)."""
    if not isinstance(url, str):
        raise TypeError(f"connection URL must be a string, not {type(url).__name__}")
    p = urllib.parse.urlsplit(url)
    if p.scheme not in ("mysql", "mariadb"):
        raise ValueError(f"not a MySQL URL (mysql://... or mariadb://...): {url!r}")
    kw: dict[str, Any] = {"charset": "utf8mb4", "use_unicode": True}
    if p.hostname:
        kw["host"] = p.hostname
    if p.port:
        kw["port"] = p.port
    if p.username:
        kw["user"] = urllib.parse.unquote(p.username)
    if p.password is not None:
        kw["password"] = urllib.parse.unquote(p.password)
    for k, v in urllib.parse.parse_qsl(p.query, keep_blank_values=True):
        if k not in _URL_PARAMS:
            raise ValueError(f"MySQL URL {url!r}: unknown parameter {k!r} (known: {', '.join(_URL_PARAMS)})")
        kw[k] = int(v) if k == "connect_timeout" else v
    db = urllib.parse.unquote(p.path.lstrip("/"))
    if database and db:
        kw["database"] = db
    return kw


def errno_of(exc: BaseException) -> int | None:
    """The server's error number of a mysqlclient exception, else None."""
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def row_literals(raw: Any, rows: Sequence[Sequence[Any]], ncols: int) -> list[bytes]:
    """Each row as the text of an SQL row value without its parentheses
    (``1,'a\\'b',NULL``), every value escaped by the driver exactly as a bound
    parameter is (its ``literal``; a column of plain ``int`` or ``str``
    values column-wise by the same conversions, without the per-value type
    dispatch).  A row of another length than ``ncols`` is a ValueError
    naming its position."""
    if set(map(len, rows)) - {ncols}:
        i, r = next((i, r) for i, r in enumerate(rows) if len(r) != ncols)
        raise ValueError(f"row {i} has {len(r)} values for {ncols} columns")
    enc, text, lit = raw.encoding, raw.string_literal, raw.literal
    cols: list[list[bytes]] = []
    for col in zip(*rows):
        kinds = set(map(type, col))
        if kinds == {int}:
            cols.append([b"%d" % v for v in col])
        elif kinds == {str}:
            cols.append([text(v.encode(enc)) for v in col])
        else:
            cols.append(list(map(lit, col)))
    return list(map(b",".join, zip(*cols)))


def statements(head: bytes, values: Sequence[bytes], tail: bytes, budget: int) -> Iterator[bytes]:
    """Multi-row statements ``head (v),(v)… tail`` of at most ``budget``
    bytes of values each (a longer row alone), each value counted with its
    parentheses and comma."""
    ends = list(accumulate(map(len, values)))  # (bytes of values[:j + 1])
    i, n = 0, len(values)
    while i < n:
        base = ends[i - 1] if i else 0
        # (the most rows from i whose bytes with 3 each fit: a monotone key, bisected)
        j = i + max(1, bisect_right(range(i, n), budget, key=lambda k: ends[k] - base + 3 * (k - i + 1)))
        yield head + b"(" + b"),(".join(values[i:j]) + b")" + tail
        i = j


def retrying(fn: Callable[[], T], what: str, attempts: int = RETRIES) -> T:
    """``fn()``, again after a deadlock or a lock wait timeout (up to
    ``attempts`` times, with a short growing pause); ``fn`` must be one whole
    transaction that it rolls back itself when it raises."""
    for i in range(attempts):
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - only InnoDB's two are retried
            if errno_of(e) not in RETRYABLE or i == attempts - 1:
                raise
            log.info("%s: %s (error %s), retrying (%d of %d)", what,
                     "deadlock" if errno_of(e) == DEADLOCK else "lock wait timeout", errno_of(e), i + 1, attempts)
            time.sleep(min(0.5, 0.01 * 2 ** i))
    raise AssertionError("unreachable")


class MySQLConnection:
    """A mysqlclient connection in autocommit mode.

    :meth:`execute` / :meth:`executemany` take ``?`` placeholders (the
    statements every backend shares); :meth:`run` / :meth:`runmany` the
    driver's own ``%s`` (the backend's statements).  Each returns the cursor
    (``fetchone``, ``fetchall``, ``rowcount``)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.broken = False
        self.in_transaction = False
        #: the client's session variables are set (cleared before the commit)
        self.vars_set = False
        #: this transaction holds the epoch row's exclusive lock
        self.epoch_locked = False
        #: bytes of values per multi-row INSERT (from max_allowed_packet, read once)
        self.statement_bytes = 0

    def run(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        cur = self.raw.cursor()
        try:
            cur.execute(sql, None if params is None else tuple(params))
        except Exception as e:
            self._failed(e)
            raise
        self._track(sql)
        return cur

    def run_text(self, sql: bytes) -> Any:
        """Run a statement whose values are already literals in its text
        (:func:`row_literals`); no placeholder, no transaction control."""
        cur = self.raw.cursor()
        try:
            cur.execute(sql)
        except Exception as e:
            self._failed(e)
            raise
        return cur

    def runmany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        cur = self.raw.cursor()
        try:
            cur.executemany(sql, [tuple(r) for r in rows])
        except Exception as e:
            self._failed(e)
            raise
        return cur

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        if params is None or (not params and "?" not in sql):
            return self.run(sql)
        return self.run(to_driver(sql), params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        rows = list(rows)
        if not rows:
            return None
        return self.runmany(to_driver(sql), rows)

    def _track(self, sql: str) -> None:
        head = sql.lstrip()[:8].upper()
        if head.startswith(("BEGIN", "START TR")):
            self.in_transaction = True
            self.epoch_locked = False
        elif head.startswith(("COMMIT", "ROLLBACK")):
            self.in_transaction = self.epoch_locked = False

    def _failed(self, e: BaseException) -> None:
        n = errno_of(e)
        if n in _GONE:
            self.broken = True
        if n == DEADLOCK:  # (InnoDB rolled the whole transaction back)
            self.in_transaction = self.epoch_locked = False

    def close(self) -> None:
        try:
            self.raw.close()
        except Exception:  # noqa: BLE001 - already closed
            pass


def open_raw(url: str) -> Any:
    """A new mysqlclient connection to the database ``url`` names (created
    when missing), with the backend's session settings, autocommit."""
    import MySQLdb
    from MySQLdb.constants import CLIENT

    kw = connect_args(url)
    # (FOUND_ROWS: an UPDATE's rowcount is the rows it matched, as on SQLite
    # and PostgreSQL, not only those whose values changed)
    kw["client_flag"] = CLIENT.FOUND_ROWS
    try:
        raw = MySQLdb.connect(**kw, autocommit=True)
    except MySQLdb.OperationalError as e:
        if errno_of(e) != 1049 or "database" not in kw:  # (1049: unknown database)
            raise ConnectionError(f"cannot connect to {url}: {e}") from e
        name = kw.pop("database")
        if _DATABASE.fullmatch(name) is None:
            raise ConnectionError(f"cannot connect to {url}: database {name!r} does not exist (and is not a "
                                  "plain name the backend creates: ASCII letters, digits, _ and $)") from e
        try:
            raw = MySQLdb.connect(**kw, autocommit=True)
            cur = raw.cursor()
            cur.execute("CREATE DATABASE IF NOT EXISTS " + qi(name) + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
            cur.execute("USE " + qi(name))
        except MySQLdb.Error as e2:
            raise ConnectionError(f"cannot create database {name!r} named in {url}: {e2}") from e2
        log.info("created database %r (named in %s)", name, url)
    except MySQLdb.Error as e:
        raise ConnectionError(f"cannot connect to {url}: {e}") from e
    cur = raw.cursor()
    for stmt in _SESSION:
        cur.execute(stmt)
    return raw


SYSTEM_DDL = [
    """CREATE TABLE IF NOT EXISTS _shardhash_units(
        grp VARCHAR(64) NOT NULL, mig VARCHAR(255) NOT NULL, idx INTEGER NOT NULL, role VARCHAR(16) NOT NULL,
        state VARCHAR(16) NOT NULL, version BIGINT NOT NULL, unit LONGTEXT NOT NULL,
        PRIMARY KEY (mig, idx, role)) ENGINE=InnoDB""",
    "CREATE TABLE IF NOT EXISTS _shardhash_routers(mig VARCHAR(255) PRIMARY KEY, old LONGTEXT NOT NULL, "
    "new LONGTEXT NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS _shardhash_epoch(id INTEGER PRIMARY KEY CHECK (id = 0), n BIGINT NOT NULL) "
    "ENGINE=InnoDB",
    "INSERT INTO _shardhash_epoch VALUES (0, 0) ON DUPLICATE KEY UPDATE id = id",
    "CREATE TABLE IF NOT EXISTS _shardhash_captures(id BIGINT AUTO_INCREMENT PRIMARY KEY, "
    "name VARCHAR(255) NOT NULL UNIQUE, grp VARCHAR(64) NOT NULL) ENGINE=InnoDB",
    """CREATE TABLE IF NOT EXISTS _shardhash_changes(
        id BIGINT AUTO_INCREMENT PRIMARY KEY, capture BIGINT NOT NULL, tbl VARCHAR(64) NOT NULL,
        pk TEXT NOT NULL, state INTEGER NOT NULL DEFAULT 0, KEY _shardhash_changes_q (capture, state, id))
        ENGINE=InnoDB""",
    "CREATE TABLE IF NOT EXISTS _shardhash_fence(mig VARCHAR(255) PRIMARY KEY, attempt INTEGER NOT NULL, "
    "deadline DOUBLE NOT NULL) ENGINE=InnoDB",
]


class MySQLShard(ServerSystemTables):
    """One shard (or the metadata store) in a MariaDB / MySQL database: a
    :class:`~shardhash.migrate.backend.ShardBackend`.

    ``placeholder``: the style of the backend's own statements (run by
    :meth:`execute`, through :meth:`MySQLConnection.run`); the connection's
    ``execute`` takes ``?`` (the application's statements)."""

    kind = "mysql"
    placeholder = "%s"
    prefetch = True  # (mysqlclient releases the GIL while the server works: the reader thread overlaps it)

    def __init__(self, url: str) -> None:
        try:
            import MySQLdb  # noqa: F401
        except ImportError as e:
            raise ImportError("the MySQL backend needs mysqlclient: pip install 'shardhash[mysql]'") from e
        connect_args(url)  # (a malformed URL fails here, naming what is wrong)
        super().__init__(url)
        self.url = url

    def __repr__(self) -> str:
        return f"MySQLShard({self.url!r})"

    # ------------------------------------------------------------ SQL text

    def quote_ident(self, name: str) -> str:
        """``name`` quoted with backticks (:func:`qi`)."""
        return qi(name)

    def quote_literal(self, text: str) -> str:
        """``text`` as a MySQL string literal (:func:`ql`)."""
        return ql(text)

    def execute(self, c: Any, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement in the driver's ``%s`` style (a ``%`` that is no
        placeholder is escaped for it: :func:`driver_text`)."""
        if not params:  # (no values: mysqlclient sends the text as it is)
            return c.run(sql)
        return c.run(driver_text(sql), params)

    def executemany(self, c: Any, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            c.runmany(driver_text(sql), rows)

    # --------------------------------------------------------- connections

    def connect(self) -> MySQLConnection:
        return MySQLConnection(open_raw(self.url))

    def close(self) -> None:
        c: MySQLConnection | None = getattr(self._local, "c", None)
        if c is not None:
            c.close()
            self._local.c = None

    def conn(self) -> MySQLConnection:
        """This thread's connection; a new one when the last one was lost."""
        c: MySQLConnection | None = getattr(self._local, "c", None)
        if c is not None and c.broken:
            c.close()
            self._local.c = c = None
        if c is None:
            c = self.connect()
            self._local.c = c
        return c

    # -------------------------------------------------------- transactions

    def begin_write(self, c: Any) -> None:
        self.execute(c, "START TRANSACTION")

    def begin_client_write(self, c: Any, guard: tuple[str, Any] | None = None) -> None:
        self.execute(c, "START TRANSACTION")
        # Shares the epoch row with every other writer: the fence's update of
        # the ownership records (which bumps it) waits for all of them.
        self.execute(c, "SELECT n FROM _shardhash_epoch WHERE id = 0 LOCK IN SHARE MODE")
        if guard is not None:
            self.begin_guard(c, guard[0], guard[1])

    def begin_read(self, c: Any) -> None:
        # (REPEATABLE READ for this transaction only: the session's READ
        # COMMITTED ignores WITH CONSISTENT SNAPSHOT)
        self.execute(c, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        self.execute(c, "START TRANSACTION WITH CONSISTENT SNAPSHOT")

    def commit(self, c: Any) -> None:
        self.execute(c, "COMMIT")

    def rollback(self, c: Any) -> None:
        if c.broken:
            return
        if c.in_transaction:
            self.execute(c, "ROLLBACK")
        self._clear_vars(c)

    def _clear_vars(self, c: Any) -> None:
        if c.vars_set:
            self.execute(c, "SET @shardhash_skip = NULL, @shardhash_guard_grp = NULL, @shardhash_guard_key = NULL, "
                         "@shardhash_nocapture = NULL")
            c.vars_set = False

    # ------------------------------------------------------------ schema

    def lock_schema(self, c: Any) -> None:
        # (DDL commits implicitly: a named lock, held by the session until
        # the end of the transaction that set the shard up)
        r = self.execute(c, "SELECT GET_LOCK('shardhash.migrate.schema', 600)").fetchone()
        if not r or r[0] != 1:
            raise TimeoutError(f"{self.url}: another process holds the schema lock for more than 600 s")
        c.named_lock = True

    def _release_schema(self, c: Any) -> None:
        if getattr(c, "named_lock", False):
            c.named_lock = False
            self.execute(c, "SELECT RELEASE_LOCK('shardhash.migrate.schema')")

    def ensure_schema(self, c: Any) -> None:
        """Nothing to do: the database the URL names is created when a
        connection finds it missing (:func:`open_raw`)."""

    @contextmanager
    def writing(self, c: Any = None) -> Iterator[Any]:
        """A write transaction (see :class:`ShardBackend`); it also releases
        the schema lock :meth:`lock_schema` took in it."""
        c = self.conn() if c is None else c
        try:
            with super().writing(c):
                yield c
        finally:
            self._release_schema(c)

    def ensure_system(self, c: Any) -> None:
        for stmt in SYSTEM_DDL:
            self.execute(c, stmt)

    def has_table(self, c: Any, table: str) -> bool:
        return self.execute(c, "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                            "TABLE_NAME = %s", (table,)).fetchone() is not None

    def table_info(self, c: Any, table: str) -> tuple[list[str], list[str]]:
        if table in self._info:
            return self._info[table]
        cols = [str(r[0]) for r in self.execute(c,
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s "
            "ORDER BY ORDINAL_POSITION", (table,)).fetchall()]
        if not cols:
            raise ValueError(f"table {table!r} does not exist on {self.url}")
        pk = [str(r[0]) for r in self.execute(c,
            "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND "
            "TABLE_NAME = %s AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX", (table,)).fetchall()]
        return self._layout(table, cols, pk, self.url)

    def column_types(self, c: Any, table: str) -> list[tuple[str, str, bool]]:
        """(name, column type as MySQL writes it, not null) of every column."""
        return [(str(r[0]), str(r[1]).lower(), r[2] == "NO") for r in self.execute(c,
            "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS WHERE "
            "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (table,)).fetchall()]

    def indexes(self, c: Any, table: str) -> list[tuple[str, bool, list[str]]]:
        """(name, unique, columns) of every secondary index of ``table``."""
        out: dict[str, tuple[bool, list[str]]] = {}
        for name, non_unique, col, sub in self.execute(c,
                "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS WHERE "
                "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s AND INDEX_NAME <> 'PRIMARY' "
                "ORDER BY INDEX_NAME, SEQ_IN_INDEX", (table,)).fetchall():
            if col is None or sub is not None:
                from .coltypes import ColumnTypeError

                raise ColumnTypeError(f"table {table!r}: index {name!r} is on an expression or a prefix; create "
                                      f"the destination table yourself")
            out.setdefault(str(name), (not non_unique, []))[1].append(str(col))
        return [(n, u, cols) for n, (u, cols) in out.items()]

    def table_ddl(self, c: Any, table: str) -> list[str]:
        return [str(self.execute(c, "SHOW CREATE TABLE " + qi(table)).fetchone()[1])]

    def create_from(self, c: Any, ddl: Sequence[str]) -> None:
        """Run the statements that create a table and its indexes, each one
        skipped when what it creates is there (MySQL 8 has no ``CREATE INDEX
        IF NOT EXISTS``: an index is looked up by name instead)."""
        index = re.compile(r'^CREATE (?:UNIQUE )?INDEX "((?:[^"]|"")+)" ON "((?:[^"]|"")+)"')
        for stmt in ddl:
            s = re.sub(r"^CREATE TABLE (?!IF NOT EXISTS)", "CREATE TABLE IF NOT EXISTS ", stmt.strip())
            m = index.match(s)
            if m is not None and self.execute(c,
                    "SELECT 1 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s "
                    "AND INDEX_NAME = %s LIMIT 1", (m.group(2).replace('""', '"'),
                                                    m.group(1).replace('""', '"'))).fetchone() is not None:
                continue
            self.execute(c, s)

    # ------------------------------------------------ capture and guard

    def install_triggers(self, c: Any, group: str, table: str, pk: Sequence[str], key: str | None = None) -> None:
        """One AFTER trigger per event on ``table``: with ``key`` (the
        table's shard-key column) the guard of client transactions first (a
        row of another key, or of another group's table, fails the statement
        with error :data:`GUARD_ERRNO`), then the capture: the primary key
        (a JSON array) into ``_shardhash_changes`` once per active capture
        of ``group``, unless the writing transaction said its key is in no
        moving unit (:meth:`skip_capture`).  An update logs the old key too
        only when the primary key changed.  The whole body is skipped at one
        test in the snapshot copy's own transactions on a shard without
        captures (``@shardhash_nocapture``, see :meth:`copy_new`): a row
        costs the copy little more than an insert without triggers.  Every
        name is a validated plain identifier quoted once (:func:`qi` /
        :func:`ql`).

        Version 2 of the triggers (``_shardhash_i2_…``); a version-1 trigger
        is dropped after its successor exists (MySQL has no transactional
        DDL: in between both run, which logs a change twice at worst, never
        lets a write pass unlogged or unguarded)."""
        t, lt, lg = qi(table), ql(table), ql(group)

        def same(a: str, b: str) -> str:
            # (byte-exact: a case-insensitive collation must not match 'A' to 'a')
            return "(CAST(" + a + " AS BINARY) <=> CAST(" + b + " AS BINARY))"

        def logit(ref: str) -> str:
            arr = "JSON_ARRAY(" + ", ".join(ref + "." + qi(k) for k in pk) + ")"
            return ("INSERT INTO _shardhash_changes(capture, tbl, pk) SELECT id, " + lt + ", " + arr
                    + " FROM _shardhash_captures WHERE grp = " + lg + " AND NOT " + same("@shardhash_skip", lg) + ";")

        def guard(ref: str) -> str:
            if key is None:
                return ""
            kc = ref + "." + qi(key)
            other = ("NOT " + same("@shardhash_guard_grp", lg) + " OR NOT " + same(kc, "@shardhash_guard_key"))
            msg = "LEFT(CONCAT(" + ql(_GUARD_TAG) + ", JSON_ARRAY(" + lg + ", " + lt + ", " + kc + ")), 128)"
            return ("IF @shardhash_guard_grp IS NOT NULL AND (" + other + ") THEN SET shardhash_msg = " + msg
                    + "; SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = " + str(GUARD_ERRNO)
                    + ", MESSAGE_TEXT = shardhash_msg; END IF;")

        moved = " OR ".join("NOT (OLD." + qi(k) + " <=> NEW." + qi(k) + ")" for k in pk)
        bodies = {
            "i": ("INSERT", guard("NEW") + logit("NEW")),
            "u": ("UPDATE", guard("NEW") + guard("OLD") + logit("NEW") + " IF " + moved + " THEN " + logit("OLD")
                  + " END IF;"),
            "d": ("DELETE", guard("OLD") + logit("OLD")),
        }
        have = {str(r[0]): str(r[1]) for r in self.execute(c,
            "SELECT TRIGGER_NAME, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE "
            "EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = %s", (table,)).fetchall()}
        for k, (event, body) in bodies.items():
            name = "_shardhash_" + k + "2_" + table
            # (the snapshot copy's transaction found no capture on the shard,
            # under the epoch row's lock, and set no guard: see copy_new)
            stmt = ("IF @shardhash_nocapture IS NULL THEN BEGIN "
                    + ("DECLARE shardhash_msg VARCHAR(128); " if key is not None else "") + body + " END; END IF")
            if have.get(name, "").strip() != stmt:
                if name in have:
                    self.execute(c, "DROP TRIGGER IF EXISTS " + qi(name))
                self.execute(c, "CREATE TRIGGER " + qi(name) + " AFTER " + event + " ON " + t + " FOR EACH ROW "
                             + stmt)
            older = "_shardhash_" + k + "1_" + table
            if older in have:
                self.execute(c, "DROP TRIGGER IF EXISTS " + qi(older))

    def begin_guard(self, c: Any, group: str, key: Any) -> None:
        self.execute(c, "SET @shardhash_skip = NULL, @shardhash_guard_grp = %s, @shardhash_guard_key = %s",
                     (group, key))
        c.vars_set = True

    def end_guard(self, c: Any) -> list[tuple[str, str, Any]]:
        # (the guard refuses the statement itself: nothing to read here)
        self._clear_vars(c)
        return []

    def guard_violation(self, exc: BaseException) -> tuple[str, str, Any] | None:
        args: tuple[Any, ...] = tuple(getattr(exc, "args", ()))
        if errno_of(exc) != GUARD_ERRNO or len(args) < 2 or not str(args[1]).startswith(_GUARD_TAG):
            return None
        text = str(args[1])[len(_GUARD_TAG):]
        try:
            g, t, k = json.loads(text)
        except ValueError:  # (a long key cut at MySQL's 128 characters of message)
            m = re.match(r'\["([^"]*)", "([^"]*)", (.*)', text)
            if m is None:
                return "?", "?", text
            return m.group(1), m.group(2), m.group(3) + "..."
        return str(g), str(t), k

    def skip_capture(self, c: Any, group: str) -> None:
        self.execute(c, "SET @shardhash_skip = %s", (group,))
        c.vars_set = True

    def end_skip(self, c: Any, group: str) -> None:
        self._clear_vars(c)

    # ------------------------------------------------------------- units

    def _lock_epoch(self, c: Any) -> None:
        """In a transaction that writes the ownership or capture records: take
        the epoch row's exclusive lock first.  Every client write transaction
        holds that row's shared lock before its triggers read the captures,
        so both lock the epoch row first -- one order, no deadlock (without
        it a writer holding the epoch row waits for a capture row this
        transaction inserted, while this one's epoch bump waits for it)."""
        if c.in_transaction and not c.epoch_locked:
            self.execute(c, "SELECT n FROM _shardhash_epoch WHERE id = 0 FOR UPDATE")
            c.epoch_locked = True

    def bump_epoch(self, c: Any) -> None:
        self._lock_epoch(c)
        self.execute(c, "UPDATE _shardhash_epoch SET n = n + 1 WHERE id = 0")

    def set_unit_state(self, c: Any, mig: str, role: str, frm: Sequence[str], to: str) -> None:
        self._lock_epoch(c)
        super().set_unit_state(c, mig, role, frm, to)

    def delete_units(self, c: Any, mig: str) -> None:
        self._lock_epoch(c)
        super().delete_units(c, mig)

    def drop_capture(self, c: Any, name: str) -> None:
        self._lock_epoch(c)
        super().drop_capture(c, name)

    def set_fence(self, c: Any, mig: str, attempt: int, deadline: float) -> None:
        self._lock_epoch(c)
        self.execute(c, "INSERT INTO _shardhash_fence VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE "
                     "attempt = VALUES(attempt), deadline = VALUES(deadline)", (mig, attempt, deadline))

    def fence_of(self, c: Any, mig: str) -> tuple[int, float] | None:
        """In a transaction, after the epoch row's exclusive lock (a writer
        that breaks a fence reads the record and unfreezes under the same
        lock the freeze takes first: no newer attempt slips in between)."""
        self._lock_epoch(c)
        if not self.has_table(c, "_shardhash_fence"):  # (a shard prepared before fence deadlines existed)
            return None
        r = self.execute(c, "SELECT attempt, deadline FROM _shardhash_fence WHERE mig = %s", (mig,)).fetchone()
        return None if r is None else (int(r[0]), float(r[1]))

    def put_routers(self, c: Any, mig: str, old: str, new: str) -> None:
        self._lock_epoch(c)
        self.execute(c, "INSERT INTO _shardhash_routers VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE mig = mig",
                     (mig, old, new))

    def put_unit(self, c: Any, grp: str, mig: str, idx: int, role: str, state: str, version: int,
                 unit: str) -> None:
        self._lock_epoch(c)
        self.execute(c, "INSERT INTO _shardhash_units VALUES (%s, %s, %s, %s, %s, %s, %s) "
                     "ON DUPLICATE KEY UPDATE mig = mig", (grp, mig, idx, role, state, version, unit))

    def start_capture(self, c: Any, name: str, group: str) -> None:
        self._lock_epoch(c)
        self.execute(c, "INSERT INTO _shardhash_captures(name, grp) VALUES (%s, %s) "
                     "ON DUPLICATE KEY UPDATE name = name", (name, group))

    def mark_applied(self, c: Any, ids: Sequence[int]) -> None:
        for i in range(0, len(ids), 1000):
            part = [int(x) for x in ids[i:i + 1000]]
            self.execute(c, "UPDATE _shardhash_changes SET state = 1 WHERE id IN ("
                         + ", ".join("%s" for _ in part) + ")", part)

    def forget(self, c: Any, ids: Sequence[int]) -> None:
        for i in range(0, len(ids), 1000):
            part = [int(x) for x in ids[i:i + 1000]]
            self.execute(c, "DELETE FROM _shardhash_changes WHERE id IN (" + ", ".join("%s" for _ in part) + ")", part)

    def position(self, c: Any) -> int:
        r = self.execute(c, "SELECT COALESCE(MAX(id), 0) FROM _shardhash_changes").fetchone()
        return int(r[0] or 0)

    # --------------------------------------------------------- row access

    def scan(self, c: Any, table: str, cols: Sequence[str], pk: Sequence[str], after: Sequence[Any] | None,
             limit: int, where: str = "", args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        sel = ", ".join(qi(x) for x in cols)
        order = ", ".join(qi(k) for k in pk)
        conds: list[str] = []
        params: list[Any] = []
        if after is not None:
            # (a > %s) OR (a = %s AND b > %s) ...: a range on the primary key
            # for every server's optimizer (a row comparison is one on some)
            ors = []
            for i in range(len(pk)):
                terms = [f"{qi(pk[j])} = %s" for j in range(i)] + [f"{qi(pk[i])} > %s"]
                params.extend(list(after[:i]) + [after[i]])
                ors.append("(" + " AND ".join(terms) + ")")
            conds.append("(" + " OR ".join(ors) + ")")
        if where:
            conds.append(where)
            params.extend(args)
        w = (" WHERE " + " AND ".join(conds)) if conds else ""
        return list(self.execute(c, f"SELECT {sel} FROM {qi(table)}{w} ORDER BY {order} LIMIT {int(limit)}",
                                 params).fetchall())

    def fetch(self, c: Any, table: str, cols: Sequence[str], pk: Sequence[str],
              keys: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        if not keys:
            return []
        sel = ", ".join(qi(x) for x in cols)
        out: list[tuple[Any, ...]] = []
        n = len(pk)
        step = max(1, 1000 // n)
        for i in range(0, len(keys), step):
            part = keys[i:i + step]
            if n == 1:
                q = f"SELECT {sel} FROM {qi(table)} WHERE {qi(pk[0])} IN ({', '.join('%s' for _ in part)})"
                params = [k[0] for k in part]
            else:
                tup = "(" + ", ".join("%s" for _ in pk) + ")"
                q = (f"SELECT {sel} FROM {qi(table)} WHERE ({', '.join(qi(k) for k in pk)}) IN "
                     f"({', '.join(tup for _ in part)})")
                params = [v for k in part for v in k]
            out.extend(self.execute(c, q, params).fetchall())
        return out

    def _insert(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]], tail: str = "") -> None:
        """``INSERT INTO table (cols) VALUES (…),(…) tail`` of every row, in
        multi-row statements of up to :data:`STATEMENT_BYTES` of values (at
        most half the server's ``max_allowed_packet``), the values escaped
        by the driver (:func:`row_literals`): no placeholder to convert, no
        ``%`` formatting of the statement's text."""
        if not rows:
            return
        if not c.statement_bytes:
            packet = int(self.execute(c, "SELECT @@max_allowed_packet").fetchone()[0])
            c.statement_bytes = max(1024, min(STATEMENT_BYTES, packet // 2))
        head = (f"INSERT INTO {qi(table)} ({', '.join(qi(x) for x in cols)}) VALUES ").encode(c.raw.encoding)
        end = tail.encode(c.raw.encoding)
        for sql in statements(head, row_literals(c.raw, rows, len(cols)), end, c.statement_bytes):
            c.run_text(sql)

    def upsert(self, c: Any, table: str, cols: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        parts = self._upsert_rows(c, table, cols, rows)
        if parts is None:
            return
        rows, pk, others = parts
        upd = ", ".join(f"{qi(x)} = VALUES({qi(x)})" for x in others) or f"{qi(pk[0])} = {qi(pk[0])}"
        self._insert(c, table, cols, rows, " ON DUPLICATE KEY UPDATE " + upd)

    def insert_new(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """Inside the caller's transaction: insert every row with plain
        multi-row INSERTs; when any primary key is already there the inserts
        are undone (savepoint) and 0 is returned (the caller takes the
        checked upsert path)."""
        import MySQLdb

        if not rows:
            return 0
        self.execute(c, "SAVEPOINT _shardhash_copy")
        try:
            self._insert(c, table, cols, rows)
        except MySQLdb.IntegrityError as e:
            if errno_of(e) != 1062:  # (1062: a duplicate primary key)
                raise
            self.execute(c, "ROLLBACK TO SAVEPOINT _shardhash_copy")
            return 0
        self.execute(c, "RELEASE SAVEPOINT _shardhash_copy")
        return len(rows)

    def insert_absent(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert the rows whose primary key is absent; a present one is left
        as it is (its "update" sets a key column to itself)."""
        _, pk = self.table_info(c, table)
        self._insert(c, table, cols, rows, f" ON DUPLICATE KEY UPDATE {qi(pk[0])} = {qi(pk[0])}")

    def copy_new(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> bool:
        """The snapshot copy's fast path: plain multi-row INSERTs of every
        row in one transaction (True, committed); when a primary key is
        already there nothing is changed and False is returned (the caller
        takes the checked upsert path).  A deadlock or lock wait timeout
        runs the transaction again.

        The row triggers are what an insert costs most on InnoDB (MySQL
        cannot switch them off for one session), so the transaction first
        takes the epoch row's shared lock (as a client write does: no
        capture can start until it ends, since a capture's start locks that
        row first) and counts the shard's captures; when there is none, it
        sets ``@shardhash_nocapture`` (cleared at the end), and the
        triggers skip their whole body at one test -- exactly what they
        would have done: no capture to log for, and no guard set in this
        transaction (it is the backend's, not a client's)."""
        import MySQLdb

        if not rows:
            return True
        system = self._has_system(c)

        def once() -> bool:
            self.begin_write(c)
            try:
                if system:
                    self.execute(c, "SELECT n FROM _shardhash_epoch WHERE id = 0 LOCK IN SHARE MODE")
                    if self.execute(c, "SELECT COUNT(*) FROM _shardhash_captures").fetchone()[0] == 0:
                        self.execute(c, "SET @shardhash_nocapture = 1")
                        c.vars_set = True
                self._insert(c, table, cols, rows)
                self.commit(c)
                self._clear_vars(c)
            except MySQLdb.IntegrityError as e:
                self.rollback(c)
                if errno_of(e) == 1062:  # (a duplicate primary key)
                    return False
                raise
            except BaseException:
                self.rollback(c)
                raise
            return True

        return retrying(once, f"{self.url}: copying {len(rows)} rows into {table!r}")

    def delete(self, c: Any, table: str, pk: Sequence[str], keys: Iterable[Sequence[Any]]) -> None:
        keys = [tuple(k) for k in keys]
        if not keys:
            return
        if len(pk) == 1:
            for i in range(0, len(keys), 1000):
                part = [k[0] for k in keys[i:i + 1000]]
                self.execute(c, f"DELETE FROM {qi(table)} WHERE {qi(pk[0])} IN ({', '.join('%s' for _ in part)})", part)
            return
        self.executemany(c, f"DELETE FROM {qi(table)} WHERE {' AND '.join(f'{qi(k)} = %s' for k in pk)}", keys)

    def min_key(self, c: Any, table: str, column: str) -> Any:
        return self.execute(c, f"SELECT MIN({qi(column)}) FROM {qi(table)}").fetchone()[0]

    def count(self, c: Any, table: str) -> int:
        return int(self.execute(c, f"SELECT COUNT(*) FROM {qi(table)}").fetchone()[0])


# ------------------------------------------------------------------ column kinds

#: MySQL column types and the kind of values they hold (see shardhash.migrate.coltypes).
_KINDS = {"tinyint(1)": ("bool", 64), "smallint": ("int", 16), "int": ("int", 32), "integer": ("int", 32),
          "bigint": ("int", 64), "double": ("float", 64), "float": ("float", 32), "varchar": ("text", 64),
          "char": ("text", 64), "text": ("text", 64), "mediumtext": ("text", 64), "longtext": ("text", 64),
          "tinytext": ("text", 64), "blob": ("bytes", 64), "longblob": ("bytes", 64), "mediumblob": ("bytes", 64),
          "varbinary": ("bytes", 64), "binary": ("bytes", 64)}
#: The MySQL column type of each kind, for a table created like one of another backend.
TYPE_OF = {"int": "BIGINT", "bool": "BIGINT", "float": "DOUBLE", "text": "LONGTEXT", "bytes": "LONGBLOB"}


def indexed_text_type() -> str:
    """The MySQL type of a text column in a primary key or an index (TEXT
    cannot be one without a prefix length): a VARCHAR of 255 characters,
    byte-exact comparison (a longer value is refused in strict mode)."""
    return "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"


def mysql_kind(declared: str) -> tuple[str, int] | None:
    """(kind, bits) of a MySQL column type (``bigint(20)``, ``varchar(255)``,
    ``double``…), or None when it has no exact counterpart elsewhere
    (``decimal``, dates, unsigned integers, ``json``…)."""
    t = declared.strip().lower()
    if t == "tinyint(1)":
        return _KINDS[t]
    if "unsigned" in t or "zerofill" in t:
        return None
    base = t.split("(")[0].strip()
    if base in ("tinyint", "mediumint"):
        return ("int", 32) if base == "mediumint" else ("int", 16)
    return _KINDS.get(base)
