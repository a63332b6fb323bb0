"""Global lookups and uniqueness across shards (a consistent lookup index).

Users are sharded by user id, but login starts from an email, and a unique
index on each shard does not make emails unique across the service.  A
lookup index is a second table, ``value -> owner id``, sharded by the
*value's* own hash:

* **uniqueness**: the value's row is inserted if absent on the one shard
  that owns the value, so two registrations of one email, from any number
  of writers on any shards, meet on the same row and exactly one wins;
* **write order**: the lookup row first (``pending``), then the owner's row,
  then the lookup row is marked ``committed``.  A crash between them leaves
  at worst a lookup row whose owner row does not exist or holds another
  value: an *orphan*.  Readers verify the owner row, so an orphan is never
  visible; a later registration of the same value takes an orphan over once
  it is older than ``grace`` seconds (a pending row younger than that may be
  a registration still in flight); :meth:`LookupIndex.cleanup` deletes them;
* **repeats**: a repeated call (a client retry, a double submit, a retry
  after a crash) finishes what is missing and succeeds, or is refused with
  nothing written; a failing call undoes only what it wrote itself, so it
  never frees a value another call committed;
* **reads**: :meth:`LookupIndex.lookup` reads the lookup row on the value's
  shard, then :meth:`LookupIndex.get` reads the owner row with one routed
  read: one extra round trip, never a scatter.

Both tables live behind *stores*: :class:`FactoryStore` (plain DB-API
connection factories ``{shard: factory}`` and a router) or
:class:`ClusterStore` (a table group of a ``shardhash.migrate.Cluster``).

>>> import functools, os, sqlite3, tempfile
>>> from shardhash import JumpRouter
>>> d = tempfile.mkdtemp()
>>> shards = {s: functools.partial(sqlite3.connect, os.path.join(d, s + ".db"), timeout=30) for s in ("a", "b", "c")}
>>> for f in shards.values():
...     c = f(); _ = c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT, name TEXT)"); c.close()
>>> store = FactoryStore(shards, JumpRouter(list(shards)))
>>> emails = LookupIndex("email", lookup=store, owner=store, owner_table="users", owner_key="id",
...                      owner_value="email")
>>> emails.create_table()
>>> emails.register(1, "ada@example.com", {"name": "Ada"})
>>> emails.register(2, "ada@example.com", {"name": "Eve"})
Traceback (most recent call last):
  ...
shardhash.lookups.DuplicateValue: email 'ada@example.com' already belongs to 1
>>> emails.lookup("ada@example.com"), emails.get("ada@example.com")["name"]
(1, 'Ada')
>>> emails.register(1, "ada@example.com", {"name": "Ada"})  # a retry: nothing changes
>>> emails.change(1, "ada@example.com", "ada@lovelace.org")
>>> emails.lookup("ada@example.com") is None, emails.lookup("ada@lovelace.org")
(True, 1)
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any, Protocol

from shardhash import _events

__all__ = ["LookupIndex", "DuplicateValue", "FactoryStore", "ClusterStore", "Store"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _ident(what: str, name: Any) -> str:
    """``name`` checked (a plain SQL identifier: ASCII letters, digits and
    underscores, not starting with a digit) and quoted: the one place a name
    becomes SQL text, the same for SQLite and PostgreSQL."""
    if not isinstance(name, str) or not _IDENT.match(name):
        raise ValueError(f"{what} must be a plain SQL identifier (letters, digits, underscores, "
                         f"not starting with a digit), got {name!r}")
    return '"' + name + '"'


def _same(stored: Any, value: Any) -> bool:
    """Does the owner column's ``stored`` value hold exactly ``value``?  The
    lookup index places and compares values as keys are (the integer 7 and
    the string "7" are two keys), so a column that stores one as the other
    (SQLite's or MySQL's text columns store 7 as "7") does not hold it.
    Bytes compare by content whatever buffer type the driver returns; an
    integer equals an integral NUMERIC (PostgreSQL returns a Decimal)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return isinstance(stored, (bytes, bytearray, memoryview)) and bytes(stored) == bytes(value)
    if isinstance(value, str):
        return isinstance(stored, str) and stored == value
    if isinstance(value, int):
        return isinstance(stored, (int, Decimal)) and not isinstance(stored, bool) and stored == value
    return bool(stored == value)


#: SQL dialects of a store: "standard" (SQLite, PostgreSQL) or "mysql" (MariaDB / MySQL).
_DIALECTS = ("standard", "mysql")
#: Longest value (UTF-8 bytes) a MySQL lookup table holds: its primary key is a VARBINARY.
MYSQL_MAX_VALUE = 1024


def _dialect(dialect: Any) -> str:
    if dialect not in _DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(_DIALECTS)}, got {dialect!r}")
    return str(dialect)


def _placeholder(what: str, placeholder: Any) -> str:
    if not isinstance(placeholder, str) or placeholder not in ("?", "%s"):
        raise ValueError(f"{what} placeholder must be '?' (sqlite3, a Cluster) or '%s' (psycopg), "
                         f"got {placeholder!r}")
    return placeholder


class DuplicateValue(ValueError):
    """The value already belongs to another owner (``owner``)."""

    def __init__(self, index: str, value: Any, owner: Any) -> None:
        self.index, self.value, self.owner = index, value, owner
        super().__init__(f"{index} {value!r} already belongs to {owner!r}")


class Store(Protocol):
    """Where a sharded table lives: transactions on the shard that owns a key."""

    def write(self, key: Any) -> contextlib.AbstractContextManager[Any]:
        """A write transaction (an object with ``execute(sql, params)``) on the
        key's shard, committed when the block ends without error."""

    def read(self, key: Any) -> contextlib.AbstractContextManager[Any]:
        """A read transaction on the key's shard."""

    def shard_of(self, key: Any) -> str: ...

    def shards(self) -> list[str]: ...

    def write_shard(self, shard: str) -> contextlib.AbstractContextManager[Any]:
        """A write transaction on one named shard (for scans)."""


class _Tx:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Any = ()) -> Any:
        cursor = getattr(self.conn, "cursor", None)
        if cursor is None:  # an adapter that executes on the connection (the Cluster's PostgreSQL one)
            return self.conn.execute(sql, tuple(params))
        cur = cursor()
        cur.execute(sql, tuple(params))
        return cur


class FactoryStore:
    """A sharded table over DB-API connection factories ``{shard: factory}``,
    placed by ``router`` (whose shard ids are the factories' names).

    Each transaction opens a connection, runs, commits (writes) or rolls back
    (reads), and closes it.  ``placeholder``: ``"?"`` (sqlite3) or ``"%s"``
    (psycopg, mysqlclient).  ``dialect="mysql"`` for MariaDB / MySQL shards,
    whose connections must read ``"name"`` as an identifier and count the
    rows an UPDATE matched (``sql_mode`` ANSI_QUOTES, the FOUND_ROWS client
    flag: :func:`shardhash.migrate.mysql.open_raw` opens such a connection).
    """

    def __init__(self, shards: Mapping[str, Callable[[], Any]], router: Any, *, placeholder: str = "?",
                 dialect: str = "standard") -> None:
        if not isinstance(shards, Mapping) or not shards:
            raise TypeError("shards must be a non-empty mapping {shard: connection factory}")
        missing = [s for s in router.shards if s not in shards]
        if missing:
            raise ValueError(f"the router names shard(s) {missing!r} that have no connection factory")
        self._f = dict(shards)
        self.router = router
        self.placeholder = _placeholder("the", placeholder)
        self.dialect = _dialect(dialect)

    def shard_of(self, key: Any) -> str:
        return str(self.router.route(key))

    def shards(self) -> list[str]:
        return list(self.router.shards)

    @contextlib.contextmanager
    def _tx(self, shard: str, write: bool) -> Iterator[_Tx]:
        conn = self._f[shard]()
        # SQLite: take the write lock up front (BEGIN IMMEDIATE), so that a
        # read-then-write transaction cannot fail half way on a lock upgrade.
        explicit = write and type(conn).__module__.startswith("sqlite3")
        try:
            if explicit:
                conn.isolation_level = None
                conn.execute("BEGIN IMMEDIATE")
            try:
                yield _Tx(conn)
            except BaseException:
                conn.execute("ROLLBACK") if explicit else conn.rollback()
                raise
            if explicit:
                conn.execute("COMMIT")
            elif write:
                conn.commit()
            else:
                conn.rollback()
        finally:
            conn.close()

    def write(self, key: Any) -> contextlib.AbstractContextManager[_Tx]:
        return self._tx(self.shard_of(key), True)

    def read(self, key: Any) -> contextlib.AbstractContextManager[_Tx]:
        return self._tx(self.shard_of(key), False)

    def write_shard(self, shard: str) -> contextlib.AbstractContextManager[_Tx]:
        return self._tx(shard, True)


class ClusterStore:
    """A table group of a ``shardhash.migrate.Cluster``: transactions go
    through ``cluster.transaction``/``cluster.read`` (so they get its
    ownership checks, stale-route retries and cutover fences)."""

    def __init__(self, cluster: Any, group: str, *, placeholder: str = "?") -> None:
        self.cluster = cluster
        self.group = group
        self.placeholder = _placeholder("the", placeholder)
        cluster.group(group)  # fails early on an unknown group

    @property
    def dialect(self) -> str:
        """"mysql" when the group's shards are MariaDB / MySQL ones, else "standard"."""
        # (the group's declared shards: readable before the cluster's init)
        kinds = {getattr(self.cluster.backend(s), "kind", "") == "mysql"
                 for s in self.cluster.group(self.group).router.shards}
        if len(kinds) > 1:
            raise ValueError(f"group {self.group!r} mixes MySQL and other shards: a lookup table's statements "
                             "are written for one of the two; keep a lookup group on one kind of backend")
        return "mysql" if kinds == {True} else "standard"

    def shard_of(self, key: Any) -> str:
        return str(self.cluster.router(self.group).route(key))

    def shards(self) -> list[str]:
        return list(self.cluster.router(self.group).shards)

    def write(self, key: Any) -> contextlib.AbstractContextManager[Any]:
        return self.cluster.transaction(key, group=self.group)  # type: ignore[no-any-return]

    def read(self, key: Any) -> contextlib.AbstractContextManager[Any]:
        return self.cluster.read(key, group=self.group)  # type: ignore[no-any-return]

    @contextlib.contextmanager
    def write_shard(self, shard: str) -> Iterator[Any]:
        with self.cluster.backend(shard).writing() as c:
            yield _Tx(c)


class LookupIndex:
    """A consistent lookup index ``value -> owner id`` (see the module docstring).

    ``name``: the index's name (``"email"``); ``lookup``: the store of the
    lookup table (named ``table``, default ``f"{name}_lookup"``), sharded by
    the value; ``owner``: the store of the owners' table ``owner_table``,
    sharded by ``owner_key``, whose column ``owner_value`` holds the value.
    ``grace``: seconds after which a pending lookup row whose owner row is
    missing counts as an orphan (registrations must finish within it).

    Every name is a plain SQL identifier (letters, digits, underscores, not
    starting with a digit) and is quoted in the SQL (on PostgreSQL it then
    matches case-sensitively, as a Cluster's migrations do); every value is a
    bound parameter.
    """

    def __init__(self, name: str, *, lookup: Any, owner: Any, owner_table: str, owner_key: str = "id",
                 owner_value: str | None = None, table: str | None = None, grace: float = 60.0,
                 clock: Callable[[], float] = time.time) -> None:
        _ident("name", name)
        self.name = name
        self.table = table or f"{name}_lookup"
        self.owner_table = owner_table
        self.owner_key = owner_key
        self.owner_value = owner_value or name
        t = _ident("table", self.table)
        ot = _ident("owner_table", owner_table)
        ok = _ident("owner_key", owner_key)
        ov = _ident("owner_value", self.owner_value)
        if self.owner_key.lower() == self.owner_value.lower():
            raise ValueError(f"owner_key and owner_value must be two columns, both are {owner_key!r}")
        if not (isinstance(grace, (int, float)) and grace >= 0):
            raise ValueError(f"grace must be a number of seconds >= 0, got {grace!r}")
        self.lookup_store = lookup
        self.owner_store = owner
        self.grace = float(grace)
        self.clock = clock
        p = self._p = _placeholder("the lookup store's", getattr(lookup, "placeholder", "?"))
        self._mysql = _dialect(getattr(lookup, "dialect", "standard")) == "mysql"
        po = self._po = _placeholder("the owner store's", getattr(owner, "placeholder", "?"))
        # Columns in expressions are qualified by the table: SQLite reads an
        # unknown bare "name" as a string literal, an unknown "table"."name" is an error.
        self._ot, self._ok, self._ov, self._tok, self._tov = ot, ok, ov, ot + "." + ok, ot + "." + ov
        tok, tov = self._tok, self._tov
        value, owner_id, state, created = (t + "." + _ident("column", c) for c in ("value", "owner_id", "state",
                                                                                    "created"))
        # Every fixed statement, built once from the quoted names and the
        # placeholders (values are always bound parameters).
        self._sql: dict[str, str] = {
            "create": f'CREATE TABLE IF NOT EXISTS {t} ("value" TEXT PRIMARY KEY, "owner_id" TEXT NOT NULL, '
                      f'"state" TEXT NOT NULL, "created" DOUBLE PRECISION NOT NULL)',
            "reserve": f'INSERT INTO {t} ("value", "owner_id", "state", "created") VALUES ({p}, {p}, {p}, {p}) '
                       f'ON CONFLICT ("value") DO NOTHING',
            "holder": f"SELECT {owner_id}, {state}, {created} FROM {t} WHERE {value} = {p}",
            "takeover": f'UPDATE {t} SET "owner_id" = {p}, "state" = {p}, "created" = {p} '
                        f"WHERE {value} = {p} AND {owner_id} = {p} AND {created} = {p}",
            "commit": f'UPDATE {t} SET "state" = {p} WHERE {value} = {p} AND {owner_id} = {p}',
            "release": f"DELETE FROM {t} WHERE {value} = {p} AND {owner_id} = {p}",
            "unreserve": f"DELETE FROM {t} WHERE {value} = {p} AND {owner_id} = {p} AND {state} = {p} "
                         f"AND {created} = {p}",
            "scan": f"SELECT {value}, {owner_id}, {state}, {created} FROM {t} WHERE {created} <= {p}",
            "orphan": f"DELETE FROM {t} WHERE {value} = {p} AND {owner_id} = {p} AND {created} = {p}",
            "owner_value": f"SELECT {tov} FROM {ot} WHERE {tok} = {po}",
            "owner_row": f"SELECT * FROM {ot} WHERE {tok} = {po}",
            "owner_change": f"UPDATE {ot} SET {ov} = {po} WHERE {tok} = {po} AND {tov} = {po}",
            "owner_delete": f"DELETE FROM {ot} WHERE {tok} = {po} AND {tov} = {po}",
        }
        if self._mysql:
            # MariaDB / MySQL: no ON CONFLICT, and a TEXT column cannot be a
            # primary key; the value is a byte-exact VARBINARY (a VARCHAR's
            # collation would make 'a' and 'a ' or 'A' one value), read back
            # as text.  (INSERT IGNORE: the value's length is checked before.)
            self._sql.update(
                create=f'CREATE TABLE IF NOT EXISTS {t} ("value" VARBINARY({MYSQL_MAX_VALUE}) PRIMARY KEY, '
                       f'"owner_id" TEXT NOT NULL, "state" VARCHAR(16) NOT NULL, "created" DOUBLE NOT NULL)',
                reserve=f'INSERT IGNORE INTO {t} ("value", "owner_id", "state", "created") VALUES ({p}, {p}, {p}, {p})',
                scan=f"SELECT CONVERT({value} USING utf8mb4), {owner_id}, {state}, {created} FROM {t} "
                     f"WHERE {created} <= {p}")
        # test hook: called between the lookup row and the owner row
        self._between: Callable[[], None] | None = None

    # -- schema --------------------------------------------------------------------

    def create_table(self, shards: Iterable[str] | None = None) -> None:
        """Create the lookup table on every lookup shard, or on ``shards`` (if absent)."""
        for s in self.lookup_store.shards() if shards is None else list(shards):
            with self.lookup_store.write_shard(s) as tx:
                tx.execute(self._sql["create"])

    # -- helpers -------------------------------------------------------------------

    def _owner_holds(self, owner_id: Any, value: Any) -> bool:
        """Does the owner row exist and hold ``value``?  (One routed read.)"""
        with self.owner_store.read(owner_id) as tx:
            row = tx.execute(self._sql["owner_value"], (owner_id,)).fetchone()
        return row is not None and _same(row[0], value)

    def _row_columns(self, row: Mapping[str, Any] | None) -> list[tuple[str, str, Any]]:
        """``row`` as (name, quoted name, value): every name a plain SQL
        identifier, none of them the owner key or the value column."""
        if row is None:
            return []
        if not isinstance(row, Mapping):
            raise TypeError(f"row must be a mapping {{column: value}}, got {type(row).__name__}")
        out = []
        for c, v in row.items():
            q = _ident("a row column", c)
            for what, col, arg in (("owner_key", self.owner_key, "owner id"),
                                   ("owner_value", self.owner_value, "value")):
                if c.lower() == col.lower():
                    raise ValueError(f"row names the column {c!r}, the index's {what} ({col!r}): "
                                     f"the {arg} is register's own argument, not part of row")
            out.append((c, q, v))
        return out

    def _check_stored(self, tx: Any, owner_id: Any, value: Any) -> None:
        """In the owner row's own write transaction: the column must give
        ``value`` back as it was given (else TypeError, and the transaction
        and this call's lookup row are undone): a value the column changes
        could never be found again."""
        got = tx.execute(self._sql["owner_value"], (owner_id,)).fetchone()
        if got is None or not _same(got[0], value):
            stored = None if got is None else got[0]
            raise TypeError(f"{self.name} {value!r} ({type(value).__name__}) comes back from "
                            f"{self.owner_table}.{self.owner_value} as {stored!r} ({type(stored).__name__}): "
                            f"the lookup index compares values exactly, so give values of the column's type")

    def _registered(self, owner_id: Any, value: Any, extra: list[tuple[str, str, Any]]) -> bool:
        """Does the owner row exist holding ``value``?  If it does but its
        ``extra`` columns hold other values, ValueError: a repeat of a
        registration must repeat its row (register never updates one)."""
        po, ot = self._po, self._ot
        checks = ["CASE WHEN " + ot + "." + q + (" IS NULL" if v is None else " = " + po) + " THEN 1 ELSE 0 END"
                  for _, q, v in extra]
        sql = "SELECT " + ", ".join([self._tov, *checks]) + " FROM " + ot + " WHERE " + self._tok + " = " + po
        params = [v for _, _, v in extra if v is not None] + [owner_id]
        with self.owner_store.read(owner_id) as tx:
            r = tx.execute(sql, params).fetchone()
        if r is None or not _same(r[0], value):
            return False
        differ = [c for (c, _, _), same in zip(extra, r[1:]) if not same]
        if differ:
            raise ValueError(f"owner {owner_id!r} already holds {self.name} {value!r} with other values in "
                             f"{differ!r}: register does not change an existing owner row")
        return True

    def _reserve(self, owner_id: Any, value: Any) -> float | None:
        """Insert-if-absent the lookup row (pending) for ``owner_id``, taking
        over an orphan; DuplicateValue when another owner holds the value.
        Returns the row's ``created`` stamp when this call wrote the row
        (inserted it or took it over), None when the row was already the
        owner's (a repeat, or a retry after a crash)."""
        sql, oid, now = self._sql, _oid(owner_id), self.clock()
        if self._mysql and isinstance(value, str) and len(value.encode("utf-8", "surrogatepass")) > MYSQL_MAX_VALUE:
            raise ValueError(f"{self.name} value of {len(value.encode('utf-8', 'surrogatepass'))} bytes: a MySQL "
                             f"lookup table holds values of at most {MYSQL_MAX_VALUE} bytes (UTF-8)")
        with self.lookup_store.write(value) as tx:
            n = tx.execute(sql["reserve"], (value, oid, "pending", now)).rowcount
            holder, state, created = tx.execute(sql["holder"], (value,)).fetchone()
        if holder == oid:
            return now if n == 1 else None
        # Another owner's row: a real owner, a registration in flight, or an orphan.
        if self._owner_holds(_typed(holder, owner_id), value):
            raise DuplicateValue(self.name, value, _typed(holder, owner_id))
        if state == "pending" and now - float(created) < self.grace:
            raise DuplicateValue(self.name, value, _typed(holder, owner_id))  # maybe still in flight
        # An orphan: take it over, unless someone else did first (compare-and-set).
        with self.lookup_store.write(value) as tx:
            n = tx.execute(sql["takeover"], (oid, "pending", now, value, holder, created)).rowcount
        if n != 1:
            raise DuplicateValue(self.name, value, "another registration")
        _events.emit("lookup", index=self.name, shard=self.lookup_store.shard_of(value), found=True,
                     orphan=True, op="takeover")
        return now

    def _unreserve(self, owner_id: Any, value: Any, created: float) -> None:
        """Delete the pending lookup row this call wrote (stamped ``created``), and only that."""
        with self.lookup_store.write(value) as tx:
            tx.execute(self._sql["unreserve"], (value, _oid(owner_id), "pending", created))

    def _commit(self, owner_id: Any, value: Any) -> bool:
        with self.lookup_store.write(value) as tx:
            n = tx.execute(self._sql["commit"], ("committed", value, _oid(owner_id))).rowcount
        return bool(n == 1)

    def _release(self, owner_id: Any, value: Any) -> None:
        with self.lookup_store.write(value) as tx:
            tx.execute(self._sql["release"], (value, _oid(owner_id)))

    # -- writes --------------------------------------------------------------------

    def register(self, owner_id: Any, value: Any, row: Mapping[str, Any] | None = None) -> None:
        """Create the owner row ``{owner_key: owner_id, owner_value: value,
        **row}`` with ``value`` unique across every shard.

        Raises :class:`DuplicateValue` (nothing written) when another owner
        has the value.  A repeat (the owner row already holds ``value``)
        succeeds and changes nothing, or raises ValueError (nothing written)
        when that row holds other values in ``row``'s columns.  ``row`` may
        not name the owner key or the value column (ValueError).  A call that
        fails undoes only what it wrote itself.
        """
        _oid(owner_id)
        extra = self._row_columns(row)
        wrote = self._reserve(owner_id, value)
        if self._between is not None:
            self._between()
        inserted = False
        try:
            if not self._registered(owner_id, value, extra):
                cols = [self._ok, self._ov, *(q for _, q, _ in extra)]
                sql = ("INSERT INTO " + self._ot + " (" + ", ".join(cols) + ") VALUES ("
                       + ", ".join([self._po] * len(cols)) + ")")
                try:
                    with self.owner_store.write(owner_id) as tx:
                        tx.execute(sql, (owner_id, value, *(v for _, _, v in extra)))
                        self._check_stored(tx, owner_id, value)
                    inserted = True
                except Exception:
                    if not self._registered(owner_id, value, extra):  # not a concurrent repeat of this call
                        raise
        except BaseException:
            if wrote is not None:
                self._unreserve(owner_id, value, wrote)  # free the value only if this call took it
            raise
        if not self._commit(owner_id, value):
            # An orphan takeover beat us (we outlived `grace`): undo our row.
            if inserted:
                with self.owner_store.write(owner_id) as tx:
                    tx.execute(self._sql["owner_delete"], (owner_id, value))
            raise DuplicateValue(self.name, value, "a later registration (this one outlived the grace period)")

    def change(self, owner_id: Any, old: Any, new: Any) -> None:
        """Change an owner's value from ``old`` to ``new`` (new lookup row
        first, then the owner row, then the old lookup row goes).

        Raises :class:`DuplicateValue` when another owner has ``new``, and
        LookupError when the owner row holds neither ``old`` nor ``new``
        (nothing changed either way).  A repeat (the owner row already holds
        ``new``) succeeds: it only finishes what a crashed call left (the
        commit mark of ``new``, the removal of ``old``'s lookup row).
        """
        _oid(owner_id)
        if old == new:
            return
        wrote = self._reserve(owner_id, new)
        if self._between is not None:
            self._between()
        try:
            with self.owner_store.write(owner_id) as tx:
                n = tx.execute(self._sql["owner_change"], (new, owner_id, old)).rowcount
                if n == 1:
                    self._check_stored(tx, owner_id, new)
            if n != 1 and not self._owner_holds(owner_id, new):
                raise LookupError(f"owner {owner_id!r} does not hold {self.name} {old!r}")
        except BaseException:
            if wrote is not None:
                self._unreserve(owner_id, new, wrote)
            raise
        if not self._commit(owner_id, new):
            # A takeover beat us (we outlived `grace`): put our owner row back
            # (old's lookup row is still ours).
            if n == 1:
                with self.owner_store.write(owner_id) as tx:
                    tx.execute(self._sql["owner_change"], (old, owner_id, new))
            raise DuplicateValue(self.name, new, "a later registration (this change outlived the grace period)")
        self._release(owner_id, old)

    def remove(self, owner_id: Any, value: Any) -> None:
        """Delete the owner row (if it holds ``value``), then its lookup row.
        LookupError (nothing removed) when the owner row holds another value;
        a repeat (no owner row) only makes sure the lookup row is gone."""
        _oid(owner_id)
        with self.owner_store.write(owner_id) as tx:
            n = tx.execute(self._sql["owner_delete"], (owner_id, value)).rowcount
            if n != 1:
                held = tx.execute(self._sql["owner_value"], (owner_id,)).fetchone()
                if held is not None:
                    raise LookupError(f"owner {owner_id!r} does not hold {self.name} {value!r}: nothing removed")
        self._release(owner_id, value)

    # -- reads ---------------------------------------------------------------------

    def _resolve(self, value: Any, owner_type: type | None) -> tuple[Any, dict[str, Any] | None]:
        """(owner id, owner row) of ``value``: the lookup row, then the owner
        row in one routed read that also verifies it (an orphan gives None)."""
        with self.lookup_store.read(value) as tx:
            row = tx.execute(self._sql["holder"], (value,)).fetchone()
        shard = self.lookup_store.shard_of(value)
        if row is None:
            _events.emit("lookup", index=self.name, shard=shard, found=False, orphan=False)
            return None, None
        oid = _typed(row[0], owner_type)
        with self.owner_store.read(oid) as tx:
            cur = tx.execute(self._sql["owner_row"], (oid,))
            r = cur.fetchone()
            cols = [d[0] for d in cur.description]
        owner = None if r is None else dict(zip(cols, r))
        if owner is None or not _same(owner.get(self.owner_value), value):
            _events.emit("lookup", index=self.name, shard=shard, found=False, orphan=True)
            return None, None
        if row[1] == "pending":  # the owner row exists: a crash before the commit mark; repair it
            self._commit(oid, value)
        _events.emit("lookup", index=self.name, shard=shard, found=True, orphan=False)
        return oid, owner

    def lookup(self, value: Any, *, owner_type: type | None = None) -> Any:
        """The owner id of ``value``, or None.  The owner row is verified (one
        routed read), so an orphan left by a crash is never returned.
        ``owner_type`` (int or str): the type of owner ids; by default a
        stored id that is a canonical decimal integer comes back as an int."""
        return self._resolve(value, owner_type)[0]

    def get(self, value: Any, *, owner_type: type | None = None) -> dict[str, Any] | None:
        """The owner row of ``value`` as a dict, or None: the lookup row, then
        one routed read of the owner row (one extra round trip, no scatter)."""
        return self._resolve(value, owner_type)[1]

    # -- repair --------------------------------------------------------------------

    def cleanup(self, *, older_than: float | None = None) -> int:
        """Delete orphaned lookup rows (owner row missing or holding another
        value) older than ``older_than`` seconds (default: ``grace``); mark
        pending rows whose owner row exists committed.  Returns the number of
        rows deleted."""
        age = self.grace if older_than is None else float(older_than)
        now = self.clock()
        deleted = 0
        for s in self.lookup_store.shards():
            with self.lookup_store.write_shard(s) as tx:
                rows = tx.execute(self._sql["scan"], (now - age,)).fetchall()
            for value, oid, state, created in rows:
                if self.lookup_store.shard_of(value) != s:
                    continue  # a row left behind by a migration of the lookup table: not ours to judge
                if self._owner_holds(_typed(oid, None), value):
                    if state == "pending":
                        self._commit(oid, value)
                    continue
                with self.lookup_store.write(value) as tx:
                    deleted += tx.execute(self._sql["orphan"], (value, oid, created)).rowcount
        return deleted


def _oid(owner_id: Any) -> str:
    if isinstance(owner_id, bool) or not isinstance(owner_id, (int, str)):
        raise TypeError(f"owner ids must be int or str, got {owner_id!r}")
    return str(owner_id)


def _typed(stored: str, like: Any) -> Any:
    """The owner id as stored (text) back as the caller's type: int when the
    caller's id is an int (or ``like is int``), or when the text is a
    canonical decimal integer and no type is known."""
    if like is int or isinstance(like, int):
        return int(stored)
    if like is str or isinstance(like, str):
        return stored
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", stored):
        return int(stored)
    return stored
