"""The PostgreSQL backend (psycopg 3, the optional extra ``shardhash[postgres]``).

A shard is a database, or a schema of one: the URL is a libpq connection
string or URI after ``postgresql:``, e.g. ``postgresql://host/db`` or
``postgresql:host=/run/pg dbname=app options='-csearch_path=shard3'``.

Same tables and protocol as the SQLite backend (see
:mod:`shardhash.migrate.sqlite`), with these PostgreSQL specifics:

* a client's write transaction starts with ``SELECT … FOR SHARE`` of the
  shard's ownership epoch row; the fence's update of the ownership records
  (which bumps that row) therefore waits for every write in flight, and every
  later write sees the new records;
* change capture is a statement-level trigger per table and event (transition
  tables, one set-based insert per statement); change ids come from a sequence and
  are *not* commit order (a transaction that took id 10 may commit after the
  one that took 11).  Catch-up never advances a position past such a change:
  it consumes the queue by row (pending -> applied), so a late commit is just
  a pending row that shows up later;
* the snapshot copy reads in one ``REPEATABLE READ`` transaction and writes
  each chunk with one ``COPY`` straight into the table, in autocommit (a
  resumed chunk falls back to ``COPY`` into a temporary table and one
  ``INSERT … ON CONFLICT DO UPDATE``).
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .systables import ServerSystemTables, qi, ql

SYSTEM_DDL = [
    """CREATE TABLE IF NOT EXISTS _shardhash_units(
        grp TEXT NOT NULL, mig TEXT NOT NULL, idx INTEGER NOT NULL, role TEXT NOT NULL,
        state TEXT NOT NULL, version BIGINT NOT NULL, unit TEXT NOT NULL,
        PRIMARY KEY (mig, idx, role))""",
    "CREATE TABLE IF NOT EXISTS _shardhash_routers(mig TEXT PRIMARY KEY, old TEXT NOT NULL, new TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS _shardhash_epoch(id INTEGER PRIMARY KEY CHECK (id = 0), n BIGINT NOT NULL)",
    "INSERT INTO _shardhash_epoch VALUES (0, 0) ON CONFLICT DO NOTHING",
    "CREATE TABLE IF NOT EXISTS _shardhash_captures(id BIGSERIAL PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
    "grp TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS _shardhash_changes(
        id BIGSERIAL PRIMARY KEY, capture BIGINT NOT NULL, tbl TEXT NOT NULL,
        pk TEXT NOT NULL, state INTEGER NOT NULL DEFAULT 0)""",
    "CREATE INDEX IF NOT EXISTS _shardhash_changes_q ON _shardhash_changes(capture, state, id)",
    "CREATE TABLE IF NOT EXISTS _shardhash_skip(grp TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS _shardhash_fence(mig TEXT PRIMARY KEY, attempt INTEGER NOT NULL, "
    "deadline DOUBLE PRECISION NOT NULL)",
]


_SEARCH_PATH = re.compile(r"(?:^|\s)(?:-c\s*|--)search_path\s*=\s*(.*)", re.S)


def url_schema(dsn: str) -> str | None:
    """The schema a libpq URL names: the first entry of the search path set by
    its ``options`` (``options='-csearch_path=NAME'``, or ``-c search_path=``,
    ``--search_path=``), as PostgreSQL reads it (an unquoted name folded to
    lower case, a double-quoted one exact); None when it sets none (or the
    first entry is ``$user``)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        opts = conninfo_to_dict(dsn).get("options")
    except Exception:  # noqa: BLE001 - not a valid URL: connecting says why
        return None
    m = _SEARCH_PATH.search(str(opts or ""))
    if m is None:
        return None
    text = m.group(1).replace("\\ ", " ").lstrip()
    if text.startswith('"'):
        end = 1
        name = ""
        while end < len(text):
            if text[end] == '"':
                if text[end + 1:end + 2] == '"':
                    name += '"'
                    end += 2
                    continue
                return name or None
            name += text[end]
            end += 1
        return None  # (an unterminated quote: connecting says why)
    name = re.split(r"[\s,]", text, maxsplit=1)[0]
    return None if not name or name == "$user" else name.lower()


_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|[?%]")


def _convert(m: re.Match[str]) -> str:
    t = m.group(0)
    return "%s" if t == "?" else t.replace("%", "%%")


#: The SQLSTATE of the guard's refusal of a statement in a client transaction.
GUARD_SQLSTATE = "SHK01"


def _guard_key(key: Any) -> str:
    # the key as PostgreSQL's json_build_array renders an int or a text value
    return json.dumps([key], ensure_ascii=False)


class PGConnection:
    """A psycopg connection in autocommit mode, as the application's code
    gets it (``Cluster.transaction``, scatter-gather, lookups): its
    :meth:`execute` takes ``?`` placeholders (converted to ``%s``; a literal
    ``%`` is escaped), like sqlite3, so application SQL reads the same on
    every backend (docs/migrate.md).  The backend's own statements do not
    pass through this translation: :meth:`PostgresShard.execute` sends them,
    written with ``%s``, to the driver as they are (:attr:`raw`)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    @staticmethod
    def _sql(sql: str) -> str:
        # ``?`` outside quoted names and string literals is a placeholder;
        # every ``%`` is escaped (psycopg reads ``%`` everywhere)
        return _PLACEHOLDER.sub(_convert, sql)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        if params is None or (not params and "?" not in sql):
            return self.raw.execute(sql)
        return self.raw.execute(self._sql(sql), params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        rows = list(rows)
        if not rows:
            return None
        with self.raw.cursor() as cur:
            cur.executemany(self._sql(sql), rows)
        return None

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(self.raw.info.transaction_status != TransactionStatus.IDLE)

    def close(self) -> None:
        self.raw.close()


#: A quoted name, a string literal, a placeholder or a lone ``%`` (psycopg's
#: reading of statement text that comes with parameters).
_PERCENT = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|%s|%")


def _escape_percent(m: re.Match[str]) -> str:
    t = m.group(0)
    return t if t == "%s" else t.replace("%", "%%")


@functools.lru_cache(maxsize=2048)
def _driver_text(sql: str) -> str:
    """A statement written with ``%s`` placeholders as psycopg must receive it
    with parameters: every other ``%`` (inside a quoted name or a string
    literal) doubled.  Placeholders are not translated."""
    return _PERCENT.sub(_escape_percent, sql)


def _raw(c: Any) -> Any:
    """The psycopg connection of ``c`` (a :class:`PGConnection` or psycopg's own)."""
    return c.raw if isinstance(c, PGConnection) else c


def _copy_in(c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """``COPY table (cols) FROM STDIN`` of ``rows`` on ``c`` (raises psycopg's
    UniqueViolation when a primary key is already there)."""
    collist = ", ".join(qi(x) for x in cols)
    with _raw(c).cursor() as cur:
        with cur.copy(f"COPY {qi(table)} ({collist}) FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)


class PostgresShard(ServerSystemTables):
    """One shard in a PostgreSQL database (or schema)."""

    kind = "postgresql"

    def lock_fence(self, c: Any, mig: str) -> None:
        """The fence record's row lock (a freeze's first statement takes it):
        under READ COMMITTED, a writer that read attempt N while a freeze of
        N+1 was in flight would otherwise unfreeze N+1's units when its
        UPDATE re-reads them after that freeze commits."""
        self.execute(c, "SELECT attempt FROM _shardhash_fence WHERE mig = %s FOR UPDATE", (mig,))
    #: psycopg's own placeholder: the backend's statements are sent as written.
    placeholder = "%s"
    prefetch = True  # (psycopg fetches a chunk in a few reads: the reader thread overlaps the server's work)

    def __init__(self, url: str) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError as e:
            raise ImportError("the PostgreSQL backend needs psycopg 3: pip install 'shardhash[postgres]'") from e
        dsn = url.split(":", 1)[1] if url.startswith(("postgresql:", "postgres:")) and \
            not url.startswith(("postgresql://", "postgres://")) else url
        super().__init__(url)
        self.dsn = dsn

    def __repr__(self) -> str:
        return f"PostgresShard({self.dsn!r})"

    def conn(self) -> Any:
        """This thread's connection; a new one when the last one was lost
        (the server restarted, the backend was terminated)."""
        c = getattr(self._local, "c", None)
        if c is not None and (c.raw.closed or c.raw.broken):
            try:
                c.close()
            except Exception:  # noqa: BLE001 - already gone
                pass
            self._local.c = c = None
        if c is None:
            c = self.connect()
            self._local.c = c
        return c

    def connect(self) -> PGConnection:
        import psycopg

        try:
            raw = psycopg.connect(self.dsn, autocommit=True)
        except psycopg.Error as e:
            raise ConnectionError(f"cannot connect to {self.dsn}: {e}") from e
        from .coltypes import register_exact_floats

        register_exact_floats(raw)  # (floats read as their exact values)
        return PGConnection(raw)

    def execute(self, c: Any, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement in psycopg's style (``%s`` placeholders) on the
        driver's connection itself (no placeholder translation)."""
        if not params:  # (no parameters: psycopg reads the text as it is)
            return _raw(c).execute(sql)
        return _raw(c).execute(_driver_text(sql), params)

    def executemany(self, c: Any, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            with _raw(c).cursor() as cur:
                cur.executemany(_driver_text(sql), rows)

    def close(self) -> None:
        c = getattr(self._local, "c", None)
        if c is not None:
            c.close()
            self._local.c = None

    # -------------------------------------------------------- transactions

    def begin_write(self, c: Any) -> None:
        self.execute(c, "BEGIN")

    def begin_client_write(self, c: Any, guard: tuple[str, Any] | None = None) -> None:
        self.execute(c, "BEGIN")
        # Shares the epoch row with every other writer; the fence's update of
        # the ownership records (which bumps it) waits for all of them.  The
        # guard's settings ride on the same statement (no extra round trip).
        if guard is None:
            self.execute(c, "SELECT n FROM _shardhash_epoch WHERE id = 0 FOR SHARE")
        else:
            self.execute(c, "SELECT n, set_config('shardhash.guard_grp', %s, true), "
                         "set_config('shardhash.guard_key', %s, true) FROM _shardhash_epoch WHERE id = 0 FOR SHARE",
                         (guard[0], _guard_key(guard[1])))

    def begin_guard(self, c: Any, group: str, key: Any) -> None:
        self.execute(c, "SELECT set_config('shardhash.guard_grp', %s, true), "
                     "set_config('shardhash.guard_key', %s, true)", (group, _guard_key(key)))

    def end_guard(self, c: Any) -> list[tuple[str, str, Any]]:
        # (the guard triggers refuse the statement itself: nothing to read here)
        return []

    def guard_violation(self, exc: BaseException) -> tuple[str, str, Any] | None:
        if getattr(exc, "sqlstate", None) != GUARD_SQLSTATE:
            return None
        diag = getattr(exc, "diag", None)
        g, t, k = json.loads(getattr(diag, "message_detail", None) or "[null, null, null]")
        return str(g), str(t), k

    def begin_read(self, c: Any) -> None:
        self.execute(c, "BEGIN ISOLATION LEVEL REPEATABLE READ")

    # ------------------------------------------------------------ schema

    def lock_schema(self, c: Any) -> None:
        # Two executors preparing one shard at once (two migrations of one
        # group side by side) would race on CREATE TABLE IF NOT EXISTS.
        self.execute(c, "SELECT pg_advisory_xact_lock(hashtext('shardhash.migrate.schema'))")

    def ensure_schema(self, c: Any) -> None:
        """Make sure there is a schema to create tables in: when no schema of
        the connection's search path exists, create the one the URL names
        (``options='-csearch_path=NAME'``), or refuse with the exact SQL to
        run (a URL that names none, or a user who may not create it).
        Called in the write transaction that creates the tables."""
        if self.execute(c, "SELECT current_schema()").fetchone()[0] is not None:
            return
        from .errors import MigrationError

        path = self.execute(c, "SHOW search_path").fetchone()[0]
        name = url_schema(self.dsn)
        if name is None:
            raise MigrationError(
                f"{self.dsn}: no schema of its search path ({path}) exists, and the URL names none to create; "
                f"name one in the URL (options='-csearch_path=NAME') or create one: CREATE SCHEMA NAME;")
        import psycopg

        self.execute(c, "SAVEPOINT shardhash_schema")
        try:
            self.execute(c, f"CREATE SCHEMA IF NOT EXISTS {qi(name)}")
        except psycopg.errors.InsufficientPrivilege as e:
            self.execute(c, "ROLLBACK TO SAVEPOINT shardhash_schema")
            user = self.execute(c, "SELECT current_user").fetchone()[0]
            raise MigrationError(
                f"{self.dsn}: schema {name!r} (named in the URL) does not exist and user {user!r} may not "
                f"create it ({e.sqlstate}: {str(e).strip()}); as a user who may, run: "
                f"CREATE SCHEMA {qi(name)} AUTHORIZATION {qi(user)};") from e
        self.execute(c, "RELEASE SAVEPOINT shardhash_schema")
        logging.getLogger("shardhash.migrate").info("created schema %r (named in %s)", name, self.dsn)

    def ensure_system(self, c: Any) -> None:
        self.ensure_schema(c)
        for stmt in SYSTEM_DDL:
            self.execute(c, stmt)

    def has_table(self, c: Any, table: str) -> bool:
        return self.execute(c, "SELECT to_regclass(%s)", (qi(table),)).fetchone()[0] is not None

    def table_info(self, c: Any, table: str) -> tuple[list[str], list[str]]:
        if table in self._info:
            return self._info[table]
        if not self.has_table(c, table):
            raise ValueError(f"table {table!r} does not exist on {self.dsn}")
        rel = (qi(table),)
        cols = [r[0] for r in self.execute(
            c, "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
            "ORDER BY attnum", rel).fetchall()]
        pk = [r[0] for r in self.execute(
            c, "SELECT a.attname FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) "
            "ON true JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "WHERE i.indrelid = %s::regclass AND i.indisprimary ORDER BY k.ord", rel).fetchall()]
        return self._layout(table, cols, pk, self.dsn)

    def table_ddl(self, c: Any, table: str) -> list[str]:
        cols = self.execute(
            c, "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            (qi(table),)).fetchall()
        _, pk = self.table_info(c, table)
        body = ", ".join(f"{qi(n)} {t}{' NOT NULL' if nn else ''}" for n, t, nn in cols)
        body += f", PRIMARY KEY ({', '.join(qi(k) for k in pk)})"
        out = [f"CREATE TABLE {qi(table)} ({body})"]
        for (idx,) in self.execute(
                c, "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = %s::regclass "
                "AND NOT indisprimary", (qi(table),)).fetchall():
            out.append(idx)
        return out

    def create_from(self, c: Any, ddl: Sequence[str]) -> None:
        import re

        for stmt in ddl:
            s = stmt.strip()
            s = re.sub(r"^CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", s)
            s = re.sub(r"^CREATE (UNIQUE )?INDEX ", lambda m: f"CREATE {m.group(1) or ''}INDEX IF NOT EXISTS ", s)
            # unqualify "ON schema.table" so the index lands next to the new table
            s = re.sub(r" ON [A-Za-z_][A-Za-z0-9_]*\.", " ON ", s)
            self.execute(c, s)

    def install_triggers(self, c: Any, group: str, table: str, pk: Sequence[str], key: str | None = None) -> None:
        """Statement-level triggers with transition tables: one set-based
        INSERT per statement into the change log (nothing when no capture is
        active, or when the writing transaction said its key is in no moving
        unit: the transaction-local setting ``shardhash.skip``, see
        :meth:`skip_capture`), instead of a PL/pgSQL call per row.

        With ``key`` (the table's shard-key column), also the guard triggers
        of client transactions (:meth:`begin_client_write`).  Every name is
        quoted once (:func:`qi` / :func:`ql`); a function body is a quoted
        string literal, so no name can end it."""
        if key is not None:
            self._install_guard(c, group, table, key)
        if self.execute(c, "SELECT 1 FROM pg_trigger WHERE tgname = %s AND tgrelid = %s::regclass",
                        ("_shardhash_d3_" + table, qi(table))).fetchone():
            return
        skip = "coalesce(current_setting('shardhash.skip', true), '') <> " + ql(group)

        def ins(alias: str, source: str | None = None) -> str:
            key = "json_build_array(" + ", ".join(alias + "." + qi(k) for k in pk) + ")::text"
            return ("INSERT INTO _shardhash_changes(capture, tbl, pk) SELECT c.id, " + ql(table) + ", " + key
                    + " FROM " + (source or alias) + " CROSS JOIN _shardhash_captures c WHERE c.grp = "
                    + ql(group) + " AND " + skip + ";")

        # An update logs the old keys only when a primary key changed: the old
        # keys EXCEPT the new ones (a hashed or sorted set difference, linear
        # in the rows the statement touched; a NOT EXISTS over the transition
        # tables, which have no statistics, was planned as a nested loop:
        # a 40,000-row UPDATE took 39 s).
        keys = ", ".join(qi(k) for k in pk)
        gone = ("(SELECT " + keys + " FROM _shardhash_old EXCEPT SELECT " + keys + " FROM _shardhash_new) "
                "AS _shardhash_gone")
        bodies = {
            "i": (ins("_shardhash_new"), "AFTER INSERT", "NEW TABLE AS _shardhash_new"),
            "u": (ins("_shardhash_new") + " " + ins("_shardhash_gone", gone),
                  "AFTER UPDATE", "OLD TABLE AS _shardhash_old NEW TABLE AS _shardhash_new"),
            "d": (ins("_shardhash_old"), "AFTER DELETE", "OLD TABLE AS _shardhash_old"),
        }
        for k, (body, when, refs) in bodies.items():
            for older in ("_shardhash_" + k + "_" + table, "_shardhash_" + k + "2_" + table):  # (versions 1, 2)
                self.execute(c, "DROP TRIGGER IF EXISTS " + qi(older) + " ON " + qi(table))
                self.execute(c, "DROP FUNCTION IF EXISTS " + qi(older) + "()")
            self._create_trigger(c, "_shardhash_" + k + "3_" + table, table, body, when, refs)

    def _create_trigger(self, c: Any, name: str, table: str, body: str, when: str, refs: str) -> None:
        fn = qi(name)
        self.execute(c, "CREATE OR REPLACE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql AS "
                     + ql("BEGIN " + body + " RETURN NULL; END"))
        self.execute(c, "CREATE TRIGGER " + fn + " " + when + " ON " + qi(table) + " REFERENCING " + refs
                     + " FOR EACH STATEMENT EXECUTE FUNCTION " + fn + "()")

    def _install_guard(self, c: Any, group: str, table: str, key: str) -> None:
        # Inside a client transaction (the transaction-local settings
        # shardhash.guard_grp / shardhash.guard_key hold its group and its key
        # as a JSON array) a row written whose key differs, or a row of another
        # group's table, fails its statement with SQLSTATE SHK01 and the row's
        # [group, table, key] as the detail (:meth:`guard_violation`).  Row
        # triggers whose WHEN condition is false call no function: a row of
        # the transaction's key costs one expression, a writer that sets no
        # guard (the executor, any other application) one current_setting.
        if self.execute(c, "SELECT 1 FROM pg_trigger WHERE tgname = %s AND tgrelid = %s::regclass",
                        ("_shardhash_gd1_" + table, qi(table))).fetchone():
            return
        kc, lg, lt = qi(key), ql(group), ql(table)

        def other(ref: str) -> str:
            return ("(current_setting('shardhash.guard_grp', true) <> '' AND (current_setting('shardhash.guard_grp', "
                    "true) <> " + lg + " OR json_build_array(" + ref + "." + kc + ")::text IS DISTINCT FROM "
                    "current_setting('shardhash.guard_key', true)))")

        fn = qi("_shardhash_g1_" + table)
        body = ("DECLARE d text; BEGIN IF TG_OP <> 'DELETE' AND " + other("NEW") + " THEN d := json_build_array("
                + lg + ", " + lt + ", NEW." + kc + ")::text; ELSE d := json_build_array(" + lg + ", " + lt + ", OLD."
                + kc + ")::text; END IF; RAISE EXCEPTION USING ERRCODE = " + ql(GUARD_SQLSTATE) + ", MESSAGE = "
                "'shardhash: a client transaction wrote a row of another shard key or table group', DETAIL = d; "
                "RETURN NULL; END")
        self.execute(c, "CREATE OR REPLACE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql AS " + ql(body))
        whens = {"i": ("INSERT", other("NEW")), "u": ("UPDATE", other("NEW") + " OR " + other("OLD")),
                 "d": ("DELETE", other("OLD"))}
        for k, (event, cond) in whens.items():
            self.execute(c, "CREATE TRIGGER " + qi("_shardhash_g" + k + "1_" + table) + " AFTER " + event + " ON "
                         + qi(table) + " FOR EACH ROW WHEN (" + cond + ") EXECUTE FUNCTION " + fn + "()")

    def skip_capture(self, c: Any, group: str) -> None:
        # transaction-local: gone at the commit or rollback
        self.execute(c, "SELECT set_config('shardhash.skip', %s, true)", (group,))

    def end_skip(self, c: Any, group: str) -> None:
        pass

    # ------------------------------------------------------------- units

    def mark_applied(self, c: Any, ids: Sequence[int]) -> None:
        self.execute(c, "UPDATE _shardhash_changes SET state = 1 WHERE id = ANY(%s)", (list(ids),))

    def forget(self, c: Any, ids: Sequence[int]) -> None:
        self.execute(c, "DELETE FROM _shardhash_changes WHERE id = ANY(%s)", (list(ids),))

    # --------------------------------------------------------- row access

    def upsert(self, c: Any, table: str, cols: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        parts = self._upsert_rows(c, table, cols, rows)
        if parts is None:
            return
        rows, pk, others = parts
        conflict = ", ".join(qi(k) for k in pk)
        action = ("DO UPDATE SET " + ", ".join(f"{qi(x)} = EXCLUDED.{qi(x)}" for x in others)) if others \
            else "DO NOTHING"
        collist = ", ".join(qi(x) for x in cols)
        if len(rows) < 64:
            self.executemany(c, f"INSERT INTO {qi(table)} ({collist}) VALUES ({self.ph(len(cols))}) "
                             f"ON CONFLICT ({conflict}) {action}", rows)
            return
        # Bulk: COPY into a temporary table, then one upsert.
        tmp = qi(f"_shardhash_tmp_{table}")
        self.execute(c, f"CREATE TEMP TABLE IF NOT EXISTS {tmp} (LIKE {qi(table)} INCLUDING DEFAULTS) "
                        "ON COMMIT DELETE ROWS")
        with _raw(c).cursor() as cur:
            with cur.copy(f"COPY {tmp} ({collist}) FROM STDIN") as cp:
                for r in rows:
                    cp.write_row(r)
        self.execute(c, f"INSERT INTO {qi(table)} ({collist}) SELECT {collist} FROM {tmp} "
                     f"ON CONFLICT ({conflict}) {action}")
        self.execute(c, f"DELETE FROM {tmp}")

    def insert_new(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """``COPY`` the rows straight into the table; when any primary key is
        already there the COPY is undone (savepoint) and 0 is returned, so the
        caller takes the checked upsert path."""
        import psycopg

        self.execute(c, "SAVEPOINT _shardhash_copy")
        try:
            _copy_in(c, table, cols, rows)
        except psycopg.errors.UniqueViolation:
            self.execute(c, "ROLLBACK TO SAVEPOINT _shardhash_copy")
            return 0
        self.execute(c, "RELEASE SAVEPOINT _shardhash_copy")
        return len(rows)

    def copy_new(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> bool:
        """The snapshot copy's fast path: one ``COPY`` of the rows straight
        into the table, in autocommit (the statement is its own transaction:
        no BEGIN, savepoint or COMMIT round trips).  True when committed;
        False when a primary key was already there (the COPY changed
        nothing; the caller takes the checked upsert path)."""
        import psycopg

        if c.in_transaction:  # (inside a caller's transaction: the savepoint path)
            return self.insert_new(c, table, cols, rows) == len(rows)
        try:
            _copy_in(c, table, cols, rows)
        except psycopg.errors.UniqueViolation:
            return False
        return True
