"""The statements over the ``_shardhash_*`` tables and the row access that
read the same on every SQL backend, written once against the backend's own
placeholder and quoting.

:class:`SystemTables` implements the parts of
:class:`~shardhash.migrate.backend.ShardBackend` whose SQL is standard (no
dialect): ownership records and epoch, change-capture queues, key-ordered
scans and fetches by primary key.  A backend subclasses it and supplies
:attr:`placeholder`, :meth:`execute` / :meth:`executemany` (how its driver
runs a statement), its connections and transactions, its DDL, its triggers
and its bulk writes; it overrides any statement its database spells
differently.  Every statement is built from constant text, the backend's
placeholder (:meth:`ph`) and names quoted by :meth:`quote_ident`; values are
always bound.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["ServerSystemTables", "SystemTables", "decode_pk", "qi", "ql"]


def qi(name: str) -> str:
    """Quote an SQL identifier (any name the database can hold: ``"`` is
    doubled; a NUL, which no database name can hold, is a ValueError).  The
    one quoting helper of the SQLite and PostgreSQL backends: a quoted name
    goes into SQL text once, after any templating."""
    if not isinstance(name, str):
        raise TypeError(f"an SQL identifier must be a string, not {type(name).__name__}")
    if "\x00" in name:
        raise ValueError(f"SQL identifier {name!r} contains a NUL character")
    return '"' + name.replace('"', '""') + '"'


def ql(text: str) -> str:
    """Quote an SQL string literal (``'`` doubled; a NUL is a ValueError)."""
    if not isinstance(text, str):
        raise TypeError(f"an SQL string literal must be a string, not {type(text).__name__}")
    if "\x00" in text:
        raise ValueError(f"SQL string literal {text!r} contains a NUL character")
    return "'" + text.replace("'", "''") + "'"


def decode_pk(text: str) -> tuple[Any, ...]:
    """A primary key from its change-log form (a JSON array)."""
    return tuple(json.loads(text))


def keyset_chunks(b: Any, c: Any, table: str, cols: Sequence[str], pk: Sequence[str], chunk: int,
                  after: Sequence[Any] | None = None) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of ``table`` (columns ``cols``, which hold ``pk``) after
    primary key ``after`` (None: from the first), ``chunk`` rows at a time in
    primary-key order: backend ``b``'s ``scan`` after the last row of the
    previous chunk (keyset pagination); a short chunk is the last."""
    pkx = [list(cols).index(k) for k in pk]
    while True:
        rows = b.scan(c, table, cols, pk, after, chunk)
        if not rows:
            return
        after = [rows[-1][j] for j in pkx]
        yield rows
        if len(rows) < chunk:
            return


class SystemTables:
    """The standard-SQL half of a shard backend (see the module docstring)."""

    kind = "sql"
    #: The placeholder of a bound value in this backend's statements.
    placeholder = "?"
    #: Rows per :meth:`fetch` statement are bounded by this many bound values.
    max_params = 900

    # ------------------------------------------------------------ SQL text

    def quote_ident(self, name: str) -> str:
        """``name`` as a quoted identifier (ANSI double quotes)."""
        return qi(name)

    def quote_literal(self, text: str) -> str:
        """``text`` as a quoted string literal."""
        return ql(text)

    def ph(self, n: int = 1) -> str:
        """``n`` placeholders, comma-separated."""
        return ", ".join([self.placeholder] * n)

    def execute(self, c: Any, sql: str, params: Sequence[Any] | None = None) -> Any:  # pragma: no cover
        """Run one statement in this backend's placeholder style (subclasses)."""
        raise NotImplementedError

    def executemany(self, c: Any, sql: str, rows: Iterable[Sequence[Any]]) -> None:  # pragma: no cover
        """Run one statement once per row of ``rows`` (subclasses)."""
        raise NotImplementedError

    def conn(self) -> Any:  # pragma: no cover
        raise NotImplementedError

    def begin_write(self, c: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    # -------------------------------------------------------- transactions

    def commit(self, c: Any) -> None:
        self.execute(c, "COMMIT")

    def rollback(self, c: Any) -> None:
        if c.in_transaction:
            self.execute(c, "ROLLBACK")

    @contextmanager
    def writing(self, c: Any = None) -> Iterator[Any]:
        """A write transaction on ``c`` (default: this thread's connection),
        committed when the block ends and rolled back when it raises (a
        failed commit included)."""
        c = self.conn() if c is None else c
        self.begin_write(c)
        try:
            yield c
            self.commit(c)
        except BaseException:
            self.rollback(c)
            raise

    # ------------------------------------------------- ownership (epoch)

    def bump_epoch(self, c: Any) -> None:
        self.execute(c, "UPDATE _shardhash_epoch SET n = n + 1 WHERE id = 0")

    def epoch(self, c: Any) -> int:
        r = self.execute(c, "SELECT n FROM _shardhash_epoch WHERE id = 0").fetchone()
        return int(r[0]) if r else -1

    def unit_rows(self, c: Any, group: str | None = None) -> list[tuple[Any, ...]]:
        q = "SELECT grp, mig, idx, role, state, version, unit FROM _shardhash_units"
        if group is None:
            return list(self.execute(c, q).fetchall())
        return list(self.execute(c, q + " WHERE grp = " + self.ph(), (group,)).fetchall())

    def put_routers(self, c: Any, mig: str, old: str, new: str) -> None:
        self.execute(c, "INSERT INTO _shardhash_routers VALUES (" + self.ph(3) + ") ON CONFLICT DO NOTHING",
                     (mig, old, new))

    def put_unit(self, c: Any, grp: str, mig: str, idx: int, role: str, state: str, version: int,
                 unit: str) -> None:
        self.execute(c, "INSERT INTO _shardhash_units VALUES (" + self.ph(7) + ") ON CONFLICT DO NOTHING",
                     (grp, mig, idx, role, state, version, unit))

    def set_unit_state(self, c: Any, mig: str, role: str, frm: Sequence[str], to: str) -> None:
        p = self.placeholder
        self.execute(c, "UPDATE _shardhash_units SET state = " + p + " WHERE mig = " + p + " AND role = " + p
                     + " AND state IN (" + self.ph(len(frm)) + ")", (to, mig, role, *frm))

    def delete_units(self, c: Any, mig: str) -> None:
        self.execute(c, "DELETE FROM _shardhash_units WHERE mig = " + self.ph(), (mig,))
        self.execute(c, "DELETE FROM _shardhash_routers WHERE mig = " + self.ph(), (mig,))

    def set_fence(self, c: Any, mig: str, attempt: int, deadline: float) -> None:
        self.execute(c, "INSERT INTO _shardhash_fence VALUES (" + self.ph(3) + ") ON CONFLICT (mig) DO UPDATE SET "
                     "attempt = excluded.attempt, deadline = excluded.deadline", (mig, attempt, deadline))

    def fence_of(self, c: Any, mig: str) -> tuple[int, float] | None:
        try:
            r = self.execute(c, "SELECT attempt, deadline FROM _shardhash_fence WHERE mig = " + self.ph(),
                             (mig,)).fetchone()
        except Exception as e:  # noqa: BLE001 - a shard set up by an older version: no deadline
            if "_shardhash_fence" in str(e):
                return None
            raise
        return None if r is None else (int(r[0]), float(r[1]))

    def lock_fence(self, c: Any, mig: str) -> None:
        """Nothing: a write transaction here is serial (SQLite's BEGIN IMMEDIATE)."""

    def routers_of(self, c: Any, mig: str) -> tuple[str, str] | None:
        r = self.execute(c, "SELECT old, new FROM _shardhash_routers WHERE mig = " + self.ph(), (mig,)).fetchone()
        return None if r is None else (r[0], r[1])

    # --------------------------------------------------------- row access

    def pk_where(self, pk: Sequence[str]) -> str:
        return " AND ".join(self.quote_ident(k) + " = " + self.placeholder for k in pk)

    def scan(self, c: Any, table: str, cols: Sequence[str], pk: Sequence[str],
             after: Sequence[Any] | None, limit: int, where: str = "",
             args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        q = self.quote_ident
        sel = ", ".join(q(x) for x in cols)
        order = ", ".join(q(k) for k in pk)
        conds = []
        params: list[Any] = []
        if after is not None:
            conds.append("(" + order + ") > (" + self.ph(len(pk)) + ")")
            params.extend(after)
        if where:
            conds.append(where)
            params.extend(args)
        w = (" WHERE " + " AND ".join(conds)) if conds else ""
        return list(self.execute(c, "SELECT " + sel + " FROM " + q(table) + w + " ORDER BY " + order
                                 + " LIMIT " + str(int(limit)), params).fetchall())

    def scan_chunks(self, c: Any, table: str, cols: Sequence[str], pk: Sequence[str],
                    chunk: int) -> Iterator[list[tuple[Any, ...]]]:
        """Every row of ``table``, ``chunk`` rows at a time in primary-key
        order (:meth:`scan` after the last row of the previous chunk)."""
        return keyset_chunks(self, c, table, cols, pk, chunk)

    def fetch(self, c: Any, table: str, cols: Sequence[str], pk: Sequence[str],
              keys: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        if not keys:
            return []
        q = self.quote_ident
        sel = ", ".join(q(x) for x in cols)
        out: list[tuple[Any, ...]] = []
        n = len(pk)
        step = max(1, self.max_params // n)
        for i in range(0, len(keys), step):
            part = keys[i:i + step]
            if n == 1:
                sql = "SELECT " + sel + " FROM " + q(table) + " WHERE " + q(pk[0]) + " IN (" + self.ph(len(part)) + ")"
                params = [k[0] for k in part]
            else:
                tup = "(" + self.ph(n) + ")"
                sql = ("SELECT " + sel + " FROM " + q(table) + " WHERE (" + ", ".join(q(k) for k in pk) + ") IN "
                       "(VALUES " + ", ".join(tup for _ in part) + ")")
                params = [v for k in part for v in k]
            out.extend(self.execute(c, sql, params).fetchall())
        return out

    def insert_absent(self, c: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert the rows whose primary key is absent (``ON CONFLICT DO NOTHING``)."""
        q = self.quote_ident
        self.executemany(c, "INSERT INTO " + q(table) + " (" + ", ".join(q(x) for x in cols) + ") VALUES ("
                         + self.ph(len(cols)) + ") ON CONFLICT DO NOTHING", [tuple(r) for r in rows])

    def delete(self, c: Any, table: str, pk: Sequence[str], keys: Iterable[Sequence[Any]]) -> None:
        self.executemany(c, "DELETE FROM " + self.quote_ident(table) + " WHERE " + self.pk_where(pk),
                         [tuple(k) for k in keys])

    def min_key(self, c: Any, table: str, column: str) -> Any:
        q = self.quote_ident
        return self.execute(c, "SELECT min(" + q(column) + ") FROM " + q(table)).fetchone()[0]

    def count(self, c: Any, table: str) -> int:
        return int(self.execute(c, "SELECT count(*) FROM " + self.quote_ident(table)).fetchone()[0])

    # ----------------------------------------------------- change capture

    def start_capture(self, c: Any, name: str, group: str) -> None:
        self.execute(c, "INSERT INTO _shardhash_captures(name, grp) VALUES (" + self.ph(2) + ") ON CONFLICT DO NOTHING",
                     (name, group))

    def capture_id(self, c: Any, name: str) -> int | None:
        r = self.execute(c, "SELECT id FROM _shardhash_captures WHERE name = " + self.ph(), (name,)).fetchone()
        return None if r is None else int(r[0])

    def drop_capture(self, c: Any, name: str) -> None:
        cid = self.capture_id(c, name)
        if cid is not None:
            self.execute(c, "DELETE FROM _shardhash_changes WHERE capture = " + self.ph(), (cid,))
            self.execute(c, "DELETE FROM _shardhash_captures WHERE id = " + self.ph(), (cid,))

    def pending(self, c: Any, cid: int, limit: int) -> list[tuple[int, str, str]]:
        p = self.placeholder
        return list(self.execute(c, "SELECT id, tbl, pk FROM _shardhash_changes WHERE capture = " + p
                                 + " AND state = 0 ORDER BY id LIMIT " + p, (cid, limit)).fetchall())

    def pending_count(self, c: Any, cid: int) -> int:
        return int(self.execute(c, "SELECT count(*) FROM _shardhash_changes WHERE capture = " + self.ph()
                                + " AND state = 0", (cid,)).fetchone()[0])

    def pending_keys(self, c: Any, cid: int) -> list[tuple[str, str]]:
        return list(self.execute(c, "SELECT DISTINCT tbl, pk FROM _shardhash_changes WHERE capture = " + self.ph()
                                 + " AND state = 0", (cid,)).fetchall())

    def mark_applied(self, c: Any, ids: Sequence[int]) -> None:
        self.executemany(c, "UPDATE _shardhash_changes SET state = 1 WHERE id = " + self.ph(), [(i,) for i in ids])

    def dirty(self, c: Any, cid: int) -> list[tuple[str, str]]:
        """(table, pk json) of every change applied since the last full verify."""
        return list(self.execute(c, "SELECT DISTINCT tbl, pk FROM _shardhash_changes WHERE capture = " + self.ph()
                                 + " AND state = 1", (cid,)).fetchall())

    def dirty_rows(self, c: Any, cid: int, limit: int) -> list[tuple[int, str, str]]:
        p = self.placeholder
        return list(self.execute(c, "SELECT id, tbl, pk FROM _shardhash_changes WHERE capture = " + p
                                 + " AND state = 1 ORDER BY id LIMIT " + p, (cid, limit)).fetchall())

    def forget(self, c: Any, ids: Sequence[int]) -> None:
        self.executemany(c, "DELETE FROM _shardhash_changes WHERE id = " + self.ph(), [(i,) for i in ids])

    def forget_applied(self, c: Any, cid: int) -> None:
        self.execute(c, "DELETE FROM _shardhash_changes WHERE capture = " + self.ph() + " AND state = 1", (cid,))

    def all_keys(self, c: Any, cid: int) -> list[tuple[str, str]]:
        return list(self.execute(c, "SELECT tbl, pk FROM _shardhash_changes WHERE capture = " + self.ph(),
                                 (cid,)).fetchall())

    def position(self, c: Any) -> int:
        r = self.execute(c, "SELECT coalesce(max(id), 0) FROM _shardhash_changes").fetchone()
        return int(r[0] or 0)


class ServerSystemTables(SystemTables):
    """:class:`SystemTables` of a database server's shard (PostgreSQL,
    MySQL), which may not be set up yet: its ownership records, epoch and
    captures read as none until the system tables exist (looked up with
    ``has_table`` until they do, then no more).  One connection per thread
    (``_local.c``), table layouts cached (``_info``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.synchronous = "FULL"
        self._local = threading.local()
        self._info: dict[str, tuple[list[str], list[str]]] = {}
        self._system = False

    def has_table(self, c: Any, table: str) -> bool:  # pragma: no cover
        raise NotImplementedError

    def table_info(self, c: Any, table: str) -> tuple[list[str], list[str]]:  # pragma: no cover
        raise NotImplementedError

    def _layout(self, table: str, cols: list[str], pk: list[str], where: str) -> tuple[list[str], list[str]]:
        """``table_info``'s answer from the columns and primary key it read:
        a table without a primary key is a ValueError (naming ``where``); a
        table of the application's is cached."""
        if not pk:
            raise ValueError(f"table {table!r} on {where} has no primary key: "
                             "a migrated table needs one (rows are copied and caught up by primary key)")
        if not table.startswith("_shardhash"):
            self._info[table] = (cols, pk)
        return cols, pk

    def _upsert_rows(self, c: Any, table: str, cols: Sequence[str], rows: Iterable[Sequence[Any]]
                     ) -> tuple[list[Sequence[Any]], list[str], list[str]] | None:
        """An upsert's parts: (the rows, the table's primary key, the other
        columns of ``cols``); None when there is no row."""
        rows = list(rows)
        if not rows:
            return None
        _, pk = self.table_info(c, table)
        return rows, pk, [x for x in cols if x not in pk]

    def _has_system(self, c: Any) -> bool:
        if not self._system:
            self._system = self.has_table(c, "_shardhash_epoch") and self.has_table(c, "_shardhash_units")
        return self._system

    def active_capture_groups(self, c: Any) -> set[str]:
        if not self._has_system(c):
            return set()
        return {str(r[0]) for r in self.execute(c, "SELECT DISTINCT grp FROM _shardhash_captures").fetchall()}

    def unit_rows(self, c: Any, group: str | None = None) -> list[tuple[Any, ...]]:
        if not self._has_system(c):
            return []
        return super().unit_rows(c, group)

    def epoch(self, c: Any) -> int:
        if not self._has_system(c):
            return -1
        return super().epoch(c)
