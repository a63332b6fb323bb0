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
>>> emails.change(1, "ada@example.com", "ada@lovelace.org")
>>> emails.lookup("ada@example.com") is None, emails.lookup("ada@lovelace.org")
(True, 1)
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from shardhash import _events

__all__ = ["LookupIndex", "DuplicateValue", "FactoryStore", "ClusterStore", "Store"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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
    (psycopg).
    """

    def __init__(self, shards: Mapping[str, Callable[[], Any]], router: Any, *, placeholder: str = "?") -> None:
        if not isinstance(shards, Mapping) or not shards:
            raise TypeError("shards must be a non-empty mapping {shard: connection factory}")
        missing = [s for s in router.shards if s not in shards]
        if missing:
            raise ValueError(f"the router names shard(s) {missing!r} that have no connection factory")
        self._f = dict(shards)
        self.router = router
        self.placeholder = placeholder

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
        self.placeholder = placeholder
        cluster.group(group)  # fails early on an unknown group

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
    """

    def __init__(self, name: str, *, lookup: Any, owner: Any, owner_table: str, owner_key: str = "id",
                 owner_value: str | None = None, table: str | None = None, grace: float = 60.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.name = name
        self.table = table or f"{name}_lookup"
        self.owner_table = owner_table
        self.owner_key = owner_key
        self.owner_value = owner_value or name
        for what, v in (("name", name), ("table", self.table), ("owner_table", owner_table),
                        ("owner_key", owner_key), ("owner_value", self.owner_value)):
            if not isinstance(v, str) or not _IDENT.match(v):
                raise ValueError(f"{what} must be a plain SQL identifier, got {v!r}")
        if not (isinstance(grace, (int, float)) and grace >= 0):
            raise ValueError(f"grace must be a number of seconds >= 0, got {grace!r}")
        self.lookup_store = lookup
        self.owner_store = owner
        self.grace = float(grace)
        self.clock = clock
        self._p = getattr(lookup, "placeholder", "?")
        self._po = getattr(owner, "placeholder", "?")
        # test hook: called between the lookup row and the owner row
        self._between: Callable[[], None] | None = None

    # -- schema --------------------------------------------------------------------

    def create_table(self, shards: Iterable[str] | None = None) -> None:
        """Create the lookup table on every lookup shard, or on ``shards`` (if absent)."""
        ddl = (f"CREATE TABLE IF NOT EXISTS {self.table} (value TEXT PRIMARY KEY, owner_id TEXT NOT NULL, "
               f"state TEXT NOT NULL, created DOUBLE PRECISION NOT NULL)")
        for s in self.lookup_store.shards() if shards is None else list(shards):
            with self.lookup_store.write_shard(s) as tx:
                tx.execute(ddl)

    # -- helpers -------------------------------------------------------------------

    def _owner_holds(self, owner_id: Any, value: Any) -> bool:
        """Does the owner row exist and hold ``value``?  (One routed read.)"""
        p = self._po
        with self.owner_store.read(owner_id) as tx:
            row = tx.execute(f"SELECT {self.owner_value} FROM {self.owner_table} WHERE {self.owner_key} = {p}",
                             (owner_id,)).fetchone()
        return row is not None and row[0] == value

    def _reserve(self, owner_id: Any, value: Any) -> None:
        """Insert-if-absent the lookup row (pending) for ``owner_id``, taking
        over an orphan; DuplicateValue when another owner holds the value."""
        p = self._p
        oid = _oid(owner_id)
        now = self.clock()
        with self.lookup_store.write(value) as tx:
            tx.execute(f"INSERT INTO {self.table} (value, owner_id, state, created) VALUES ({p}, {p}, 'pending', {p}) "
                       f"ON CONFLICT (value) DO NOTHING", (value, oid, now))
            row = tx.execute(f"SELECT owner_id, state, created FROM {self.table} WHERE value = {p}",
                             (value,)).fetchone()
        holder, state, created = row
        if holder == oid:
            return
        # Another owner's row: a real owner, a registration in flight, or an orphan.
        if self._owner_holds(_typed(holder, owner_id), value):
            raise DuplicateValue(self.name, value, _typed(holder, owner_id))
        if state == "pending" and now - float(created) < self.grace:
            raise DuplicateValue(self.name, value, _typed(holder, owner_id))  # maybe still in flight
        # An orphan: take it over, unless someone else did first (compare-and-set).
        with self.lookup_store.write(value) as tx:
            n = tx.execute(f"UPDATE {self.table} SET owner_id = {p}, state = 'pending', created = {p} "
                           f"WHERE value = {p} AND owner_id = {p} AND created = {p}",
                           (oid, now, value, holder, created)).rowcount
        if n != 1:
            raise DuplicateValue(self.name, value, "another registration")
        _events.emit("lookup", index=self.name, shard=self.lookup_store.shard_of(value), found=True,
                     orphan=True, op="takeover")

    def _commit(self, owner_id: Any, value: Any) -> bool:
        p = self._p
        with self.lookup_store.write(value) as tx:
            n = tx.execute(f"UPDATE {self.table} SET state = 'committed' WHERE value = {p} AND owner_id = {p}",
                           (value, _oid(owner_id))).rowcount
        return bool(n == 1)

    def _release(self, owner_id: Any, value: Any) -> None:
        p = self._p
        with self.lookup_store.write(value) as tx:
            tx.execute(f"DELETE FROM {self.table} WHERE value = {p} AND owner_id = {p}", (value, _oid(owner_id)))

    # -- writes --------------------------------------------------------------------

    def register(self, owner_id: Any, value: Any, row: Mapping[str, Any] | None = None) -> None:
        """Create the owner row ``{owner_key: owner_id, owner_value: value,
        **row}`` with ``value`` unique across every shard.

        Raises :class:`DuplicateValue` (nothing written) when another owner
        has the value.
        """
        self._reserve(owner_id, value)
        if self._between is not None:
            self._between()
        cols = {self.owner_key: owner_id, self.owner_value: value, **(row or {})}
        for c in cols:
            if not _IDENT.match(c):
                raise ValueError(f"column name {c!r} is not a plain SQL identifier")
        p = self._po
        try:
            with self.owner_store.write(owner_id) as tx:
                tx.execute(f"INSERT INTO {self.owner_table} ({', '.join(cols)}) VALUES "
                           f"({', '.join([p] * len(cols))})", tuple(cols.values()))
        except BaseException:
            self._release(owner_id, value)  # the owner row was not written: free the value
            raise
        if not self._commit(owner_id, value):
            # An orphan takeover beat us (we outlived `grace`): undo our row.
            with self.owner_store.write(owner_id) as tx:
                tx.execute(f"DELETE FROM {self.owner_table} WHERE {self.owner_key} = {p} AND "
                           f"{self.owner_value} = {p}", (owner_id, value))
            raise DuplicateValue(self.name, value, "a later registration (this one outlived the grace period)")

    def change(self, owner_id: Any, old: Any, new: Any) -> None:
        """Change an owner's value from ``old`` to ``new`` (new lookup row
        first, then the owner row, then the old lookup row goes)."""
        if old == new:
            return
        self._reserve(owner_id, new)
        if self._between is not None:
            self._between()
        p = self._po
        try:
            with self.owner_store.write(owner_id) as tx:
                n = tx.execute(f"UPDATE {self.owner_table} SET {self.owner_value} = {p} WHERE "
                               f"{self.owner_key} = {p} AND {self.owner_value} = {p}", (new, owner_id, old)).rowcount
            if n != 1:
                raise LookupError(f"owner {owner_id!r} does not hold {self.name} {old!r}")
        except BaseException:
            self._release(owner_id, new)
            raise
        if not self._commit(owner_id, new):  # pragma: no cover - needs a takeover race past `grace`
            raise DuplicateValue(self.name, new, "a later registration")
        self._release(owner_id, old)

    def remove(self, owner_id: Any, value: Any) -> None:
        """Delete the owner row, then its lookup row."""
        p = self._po
        with self.owner_store.write(owner_id) as tx:
            tx.execute(f"DELETE FROM {self.owner_table} WHERE {self.owner_key} = {p}", (owner_id,))
        self._release(owner_id, value)

    # -- reads ---------------------------------------------------------------------

    def _resolve(self, value: Any, owner_type: type | None) -> tuple[Any, dict[str, Any] | None]:
        """(owner id, owner row) of ``value``: the lookup row, then the owner
        row in one routed read that also verifies it (an orphan gives None)."""
        p = self._p
        with self.lookup_store.read(value) as tx:
            row = tx.execute(f"SELECT owner_id, state FROM {self.table} WHERE value = {p}", (value,)).fetchone()
        shard = self.lookup_store.shard_of(value)
        if row is None:
            _events.emit("lookup", index=self.name, shard=shard, found=False, orphan=False)
            return None, None
        oid = _typed(row[0], owner_type)
        po = self._po
        with self.owner_store.read(oid) as tx:
            cur = tx.execute(f"SELECT * FROM {self.owner_table} WHERE {self.owner_key} = {po}", (oid,))
            r = cur.fetchone()
            cols = [d[0] for d in cur.description]
        owner = None if r is None else dict(zip(cols, r))
        if owner is None or owner.get(self.owner_value) != value:
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
        p = self._p
        deleted = 0
        for s in self.lookup_store.shards():
            with self.lookup_store.write_shard(s) as tx:
                rows = tx.execute(f"SELECT value, owner_id, state, created FROM {self.table} "
                                  f"WHERE created <= {p}", (now - age,)).fetchall()
            for value, oid, state, created in rows:
                if self.lookup_store.shard_of(value) != s:
                    continue  # a row left behind by a migration of the lookup table: not ours to judge
                if self._owner_holds(_typed(oid, None), value):
                    if state == "pending":
                        self._commit(oid, value)
                    continue
                with self.lookup_store.write(value) as tx:
                    deleted += tx.execute(f"DELETE FROM {self.table} WHERE value = {p} AND owner_id = {p} "
                                          f"AND created = {p}", (value, oid, created)).rowcount
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
