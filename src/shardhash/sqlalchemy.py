"""SQLAlchemy 2.x on a shardhash cluster: SQLAlchemy's own ``ShardedSession``
(``sqlalchemy.ext.horizontal_shard``) routed by a table group's router, with
the ownership check of ``Cluster.transaction`` inside the ORM's transaction.

>>> from shardhash.sqlalchemy import ShardedORM          # doctest: +SKIP
>>> orm = ShardedORM(cluster, "users")                   # doctest: +SKIP
>>> with orm.session() as s, s.begin():                  # doctest: +SKIP
...     s.add(User(id=42, name="ada"))

* one engine per shard of the cluster's shard map (``orm.engines``; a shard
  that a migration adds gets its engine at the next :meth:`ShardedORM.session`);
* ``shard_chooser``: a new instance goes to the owner of its shard-key
  attribute (the mapped column of the group table's ``key``; when it is
  unset, the shard key of the instance a many-to-one relationship points
  to -- one on that column, else one to another table of the group -- which
  is then copied into the attribute);
* ``identity_chooser``: a primary-key lookup goes to the key's owner when
  the shard key is part of the primary key, else to every shard;
* ``execute_chooser``: a statement goes only to the owners of the keys its
  WHERE clause pins (``key == v``, ``key IN (...)``, bound parameters
  included, under AND and OR), else to every shard; an INSERT statement
  into a group table is refused (add instances: the flush routes them).

Before each flush, on each shard it writes to, the session takes the lock
that excludes a cutover and checks the shard's ownership records for every
key it writes, in the transaction the flush then writes in: a new instance
routed by a stale router is routed again after a refresh of the cluster's
router (at most ``cluster.retries`` times); a loaded instance whose key the
shard gave away raises :class:`~shardhash.migrate.StaleRouteError`; a key
whose unit is frozen for a cutover waits for it (the shard's transaction is
rolled back and begun again first, which only a shard this transaction has
not written to yet allows: otherwise ``FenceTimeout``, nothing committed).
The choosers read ``cluster.router(group)`` on every call, so
``cluster.refresh(group)`` re-points every session.

The fast path of a request that knows its key, ``orm.session_for(key)``,
is a plain ``Session`` (:class:`KeySession`) bound to the key's owner: no
chooser runs, its flushes take the same lock and check the key the same way
(a stale router: :class:`~shardhash.migrate.StaleRouteError` before anything
commits; ``orm.run_for(key, work)`` refreshes and runs ``work`` again), and
a row of another key is a :class:`~shardhash.migrate.ShardKeyError`.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.ext.horizontal_shard import ShardedQuery, ShardedSession, execute_and_instances
from sqlalchemy.orm import Mapper, ORMExecuteState, Session, SessionTransaction, sessionmaker
from sqlalchemy.orm.base import instance_state
from sqlalchemy.orm.interfaces import MANYTOONE
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import (
    BinaryExpression,
    BindParameter,
    BooleanClauseList,
    ClauseElement,
    ColumnElement,
    Grouping,
)
from sqlalchemy.sql.schema import Column, Table

from . import _fence
from .migrate.cluster import Cluster, FenceTimeout, ShardKeyError, StaleRouteError
from .migrate.sqlite import SQLiteShard

__all__ = ["KeySession", "ShardedORM", "ShardhashSession", "keys_of"]

T = TypeVar("T")
S = TypeVar("S", bound=Session)

#: The session.info entry holding the per-transaction fence state.
_INFO = "shardhash.fence"


#: The shard's ownership-record epoch (SQLiteShard.epoch's statement).
_EPOCH = "SELECT n FROM _shardhash_epoch WHERE id = 0"


def _begin_immediate(raw: Any) -> None:
    """Begin the SQLite connection's transaction with the write lock (one
    open now was begun by the application, not by the driver, which begins
    none on these engines: it is rolled back and begun again)."""
    if raw.in_transaction:
        raw.execute("ROLLBACK")
    raw.execute("BEGIN IMMEDIATE")


def _all_owned(cl: Cluster, shard: str, raw: Any) -> bool:
    """Inside the SQLite shard's locked transaction: whether the shard's
    ownership records, read at this epoch, hold no migration (then every key
    routed there is its own; else :func:`_fence.refusals` checks each).
    The cluster's cached records are used when they are of the epoch read
    now, which the lock keeps from changing."""
    row = raw.execute(_EPOCH).fetchone()
    su = cl._units.get(shard)
    if su is None or row is None or su.epoch != row[0] or row[0] < 0:
        return False  # (not cached at this epoch: refusals reads and caches them)
    return not su.migs


@dataclass
class _TxState:
    # (a weak reference: a strong one, kept in session.info, would make every session a
    # reference cycle left to the garbage collector -- a third of the fast path's cost)
    root: weakref.ref[SessionTransaction]
    locked: set[str] = field(default_factory=set)   # shards locked in this transaction
    written: set[str] = field(default_factory=set)  # shards this transaction flushed writes to


@dataclass(frozen=True)
class _KeyAttr:
    table: Table
    column: Column[Any]
    attr: str


def keys_of(clause: Any, is_key: Callable[[Any], bool],
            params: Mapping[str, Any] | None = None) -> set[Any] | None:
    """The shard-key values a WHERE clause pins (a superset of the keys of
    every row it can match), or None when it pins none.

    ``key == v`` gives ``{v}``, ``key IN (...)`` its values (an expanding
    bound parameter's too, ``params`` holding the execution's values);
    AND intersects what its terms pin, OR unites them when every term pins
    some.  ``is_key(column)`` says whether a column is the shard key."""
    if clause is None:
        return None
    if isinstance(clause, Grouping):
        return keys_of(clause.element, is_key, params)
    if isinstance(clause, BooleanClauseList):
        parts = [keys_of(c, is_key, params) for c in clause.clauses]
        if clause.operator is operators.and_:
            pinned = [p for p in parts if p is not None]
            if not pinned:
                return None
            out = set(pinned[0])
            for p in pinned[1:]:
                out &= p
            return out
        if clause.operator is operators.or_:
            if not parts or any(p is None for p in parts):
                return None
            return set().union(*[p for p in parts if p is not None])
        return None
    if isinstance(clause, BinaryExpression):
        op = clause.operator
        if op not in (operators.eq, operators.in_op):
            return None
        left: Any = clause.left
        right: Any = clause.right
        if isinstance(left, BindParameter) and op is operators.eq:
            left, right = right, left
        if isinstance(right, Grouping):
            right = right.element
        if not (is_key(left) and isinstance(right, BindParameter)):
            return None
        if params is not None and right.key in params:
            value = params[right.key]
        else:
            value = right.effective_value
        if op is operators.eq:
            return None if value is None else {value}
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            return None
        return {v for v in value if v is not None}
    return None


class ShardhashSession(ShardedSession):
    """SQLAlchemy's ``ShardedSession``, with its statement hook
    (``horizontal_shard.execute_and_instances``) registered once on the
    class instead of on every new session (that registration is a third of
    the cost of a short session)."""

    def __init__(self, shard_chooser: Any, identity_chooser: Any, execute_chooser: Any,
                 shards: Mapping[str, Engine], **kw: Any) -> None:
        Session.__init__(self, query_cls=ShardedQuery, **kw)
        self.shard_chooser = shard_chooser
        self.identity_chooser = identity_chooser
        self.execute_chooser = execute_chooser
        self._ShardedSession__shards: dict[str, Any] = {}  # (ShardedSession's own table of binds)
        for k, v in shards.items():
            self.bind_shard(k, v)


event.listen(ShardhashSession, "do_orm_execute", execute_and_instances, retval=True)


class KeySession(Session):
    """A plain SQLAlchemy ``Session`` bound to the engine of one shard key's
    owner (:meth:`ShardedORM.session_for`): the fast path of a request that
    knows its key.  Its flushes are checked as a ``ShardedSession``'s are
    (the lock a cutover waits for, the shard's ownership records, a wait for
    a frozen key) and every row they write must be of its key
    (:class:`~shardhash.migrate.ShardKeyError` otherwise).  A key the
    shard gave away raises :class:`~shardhash.migrate.StaleRouteError` at
    the flush, before anything commits; the next session of a refreshed
    router goes to the new owner.

    ``shardhash_key`` and ``shardhash_shard``: its key and shard."""

    shardhash_key: Any
    shardhash_shard: str
    _shardhash_orm: ShardedORM


def _key_before_flush(session: KeySession, _ctx: Any, _instances: Any) -> None:
    session._shardhash_orm._key_flush(session)


def _key_execute(ctx: ORMExecuteState) -> None:
    if ctx.is_update or ctx.is_delete or ctx.is_insert:
        sess = ctx.session
        assert isinstance(sess, KeySession)
        sess._shardhash_orm._key_bulk(sess, ctx)


event.listen(KeySession, "before_flush", _key_before_flush)
event.listen(KeySession, "do_orm_execute", _key_execute)


class ShardedORM:
    """SQLAlchemy sessions over one table group of a shardhash cluster.

    ``ShardedORM(cluster, group=None, *, engine_options=None)``: one engine
    per shard (``engine_options`` are passed to ``create_engine``).
    :meth:`session` makes a ``ShardedSession``; :meth:`sessionmaker` a
    ``sessionmaker`` of them (:class:`ShardhashSession`, a
    ``ShardedSession``).  A transaction takes the lock that a cutover
    waits for when it first flushes to a shard (as ``cluster.transaction``
    does when it begins): on SQLite the write lock (the shard's transaction
    begins with ``BEGIN IMMEDIATE``; one that read there before is rolled
    back and begun again, so reads before the first flush are not
    repeatable, as under PostgreSQL's READ COMMITTED), on PostgreSQL ``FOR
    SHARE`` on the shard's epoch row."""

    def __init__(self, cluster: Cluster, group: str | None = None, *,
                 engine_options: Mapping[str, Any] | None = None) -> None:
        if not isinstance(cluster, Cluster):
            raise TypeError(f"cluster must be a shardhash.migrate.Cluster, not {type(cluster).__name__}")
        self.cluster = cluster
        self.group = cluster.group(group).name
        self._tables = {t.name: t.key for t in cluster.group(self.group).tables}
        self._engine_options = dict(engine_options or {})
        self.engines: dict[str, Engine] = {}
        self._urls: dict[str, str] = {}
        self._key_attrs: dict[Any, _KeyAttr | None] = {}
        self._key_cols: dict[int, tuple[Any, bool]] = {}  # (the columns are the mapped tables')
        self._maker = sessionmaker(class_=ShardhashSession, shard_chooser=self.shard_chooser,
                                   identity_chooser=self.identity_chooser, execute_chooser=self.execute_chooser)
        event.listen(self._maker, "before_flush", self._before_flush)
        self.sync_engines()
        self._shards_seen = self.cluster._shard_map

    # ----------------------------------------------------------- engines

    def sync_engines(self) -> dict[str, Engine]:
        """An engine for every shard of the cluster's shard map (a shard whose
        primary changed, by a failover, gets a new one); returns them."""
        for shard, (url, _reps) in self.cluster.shard_map().items():
            if self._urls.get(shard) == url:
                continue
            old = self.engines.get(shard)
            self.engines[shard] = self._make_engine(shard)
            self._urls[shard] = url
            if old is not None:
                old.dispose()
        return self.engines

    def _make_engine(self, shard: str) -> Engine:
        b = self.cluster.backend(shard)
        opts = dict(self._engine_options)
        if isinstance(b, SQLiteShard):
            sync = b.synchronous
            e = create_engine(URL.create("sqlite", database=b.path), **opts)

            @event.listens_for(e, "connect")
            def _connect(dbapi_conn: Any, _rec: Any) -> None:
                dbapi_conn.isolation_level = None  # (transactions begin below, not in the driver)
                dbapi_conn.execute("PRAGMA journal_mode=WAL")
                dbapi_conn.execute(f"PRAGMA synchronous={sync}")
                dbapi_conn.execute("PRAGMA busy_timeout=60000")

            # (no "begin" listener: the driver begins no transaction, so reads run without
            # one -- each statement its own snapshot, as the sqlite3 driver's default does --
            # and a flush begins the shard's with BEGIN IMMEDIATE itself, see _fence; an engine
            # with a connection event listener costs every statement its event checks)
            return e
        dsn = getattr(b, "dsn", b.path)

        def connect() -> Any:
            import psycopg

            return psycopg.connect(dsn)

        return create_engine("postgresql+psycopg://", creator=connect, **opts)

    def dispose(self) -> None:
        """Close every engine's pooled connections."""
        for e in self.engines.values():
            e.dispose()

    # ---------------------------------------------------------- sessions

    def session(self, **kw: Any) -> ShardedSession:
        """A new ``ShardedSession`` over the shards (keywords: ``Session``'s)."""
        if self._shards_seen is None or self._shards_seen is not self.cluster._shard_map:
            self.sync_engines()  # (the shard map was read again: a failover, a new shard)
            self._shards_seen = self.cluster._shard_map
        return self._maker(shards=self.engines, **kw)

    def sessionmaker(self, **kw: Any) -> Callable[..., ShardedSession]:
        """A callable making sessions like :meth:`session` (keywords: ``Session``'s)."""
        def make(**more: Any) -> ShardedSession:
            return self.session(**{**kw, **more})
        return make

    def run(self, work: Callable[[ShardedSession], T], **kw: Any) -> T:
        """``work(session)`` in a new session's transaction, committed; run
        again in a new session after a :class:`StaleRouteError` (an instance
        it loaded moved to another shard before its flush: the cluster's
        router is refreshed first), at most ``cluster.retries`` times.
        ``work`` must be safe to run again (nothing of a failed run is
        committed)."""
        return self._retried(lambda: self.session(**kw), work)

    def session_for(self, key: Any, **kw: Any) -> KeySession:
        """A plain ``Session`` (:class:`KeySession`) bound to the engine of
        the shard that owns ``key`` (the cluster's router now), for the rows
        of that one key: no chooser runs, and each transaction's first flush
        takes the lock and checks the key against the shard's ownership
        records, as a ``ShardedSession``'s flush does; a written row of
        another key is a :class:`~shardhash.migrate.ShardKeyError`, a key
        the shard gave away a :class:`~shardhash.migrate.StaleRouteError`
        (nothing committed: refresh the router, or use :meth:`run_for`).
        Reads go to that shard (keywords: ``Session``'s)."""
        if self._shards_seen is None or self._shards_seen is not self.cluster._shard_map:
            self.sync_engines()
            self._shards_seen = self.cluster._shard_map
        shard = self.cluster.router(self.group).route(key)
        engine = self.engines.get(shard)
        if engine is None:  # (a shard the router names that the cached shard map does not)
            shard = self.cluster.refresh(self.group).route(key)
            engine = self.sync_engines()[shard]
            self._shards_seen = self.cluster._shard_map
        s = KeySession(bind=engine, **kw)
        s.shardhash_key = key
        s.shardhash_shard = shard
        s._shardhash_orm = self
        return s

    def run_for(self, key: Any, work: Callable[[KeySession], T], **kw: Any) -> T:
        """``work(session)`` in the transaction of a new :meth:`session_for`
        session of ``key``, committed; after a :class:`StaleRouteError` the
        cluster's router is refreshed and ``work`` runs again in a session on
        the new owner, at most ``cluster.retries`` times (``work`` must be
        safe to run again: nothing of a failed run is committed)."""
        return self._retried(lambda: self.session_for(key, **kw), work)

    def _retried(self, open_session: Callable[[], S], work: Callable[[S], T]) -> T:
        """``work`` in the transaction of ``open_session()``, committed; after
        a :class:`StaleRouteError` the router is refreshed and ``work`` runs
        again in a new session, at most ``cluster.retries`` times."""
        attempt = 0
        while True:
            try:
                with open_session() as s, s.begin():
                    return work(s)
            except StaleRouteError:
                if attempt >= self.cluster.retries:
                    raise
                attempt += 1
                self.cluster.refresh(self.group)

    # ---------------------------------------------------------- choosers

    def _key_attr(self, mapper: Mapper[Any]) -> _KeyAttr | None:
        try:
            return self._key_attrs[mapper]
        except KeyError:
            pass
        found = None
        for t in mapper.tables:
            if isinstance(t, Table) and t.name in self._tables:
                col = t.c[self._tables[t.name]]
                found = _KeyAttr(t, col, mapper.get_property_by_column(col).key)
                break
        self._key_attrs[mapper] = found
        return found

    def _key_of(self, mapper: Mapper[Any], instance: Any) -> Any:
        ka = self._key_attr(mapper)
        if ka is None:
            raise ValueError(f"{mapper.class_.__name__} maps no table of group {self.group!r} "
                             f"(its tables: {', '.join(sorted(self._tables))})")
        v = getattr(instance, ka.attr)
        if v is not None:
            return v
        # the shard key through a many-to-one relationship: on the key column itself, else
        # to another mapped table of the group (same key domain: the parent's shard key)
        for on_key in (True, False):
            for rel in mapper.relationships:
                if rel.direction is not MANYTOONE:
                    continue
                rm = rel.mapper
                pairs = [(lo, re) for lo, re in rel.local_remote_pairs or () if lo is ka.column]
                if on_key != bool(pairs) or (not on_key and self._key_attr(rm) is None):
                    continue
                other = getattr(instance, rel.key)
                if other is None:
                    continue
                v = getattr(other, rm.get_property_by_column(pairs[0][1]).key) if pairs else None
                if v is None and self._key_attr(rm) is not None:
                    v = self._key_of(rm, other)
                if v is not None:
                    setattr(instance, ka.attr, v)
                    return v
        raise ValueError(f"{mapper.class_.__name__} instance has no shard key: set {ka.attr!r} "
                         f"(column {ka.table.name}.{ka.column.name}, the key of group {self.group!r})")

    def shard_chooser(self, mapper: Mapper[Any] | None, instance: Any, clause: ClauseElement | None = None,
                      **kw: Any) -> str:
        """The shard of a new instance: its shard key's owner."""
        if instance is not None and mapper is not None:
            return self.cluster.router(self.group).route(self._key_of(mapper, instance))
        if mapper is not None and clause is not None:
            ks = self._clause_keys(clause, None)
            if ks:
                r = self.cluster.router(self.group)
                owners = {r.route(k) for k in ks}
                if len(owners) == 1:
                    return owners.pop()
        raise ValueError(f"no single shard for this statement of group {self.group!r}: name its shard key, "
                         "or pick the shard with set_shard_id")

    def identity_chooser(self, mapper: Mapper[Any], primary_key: Sequence[Any], *,
                         lazy_loaded_from: Any = None, **kw: Any) -> list[str]:
        """The shards a primary-key lookup tries: the key's owner when the
        shard key is part of the primary key (or the lazy load's origin)."""
        if lazy_loaded_from is not None and lazy_loaded_from.identity_token is not None:
            return [lazy_loaded_from.identity_token]
        ka = self._key_attr(mapper)
        if ka is not None:
            for col, v in zip(mapper.primary_key, primary_key):
                if col is ka.column and v is not None:
                    return [self.cluster.router(self.group).route(v)]
        return self._all()

    def _all(self) -> list[str]:
        return list(self.cluster.router(self.group).shards)

    def _is_key(self, col: Any) -> bool:
        if not isinstance(col, ColumnElement):
            return False
        known = self._key_cols.get(id(col))
        if known is not None and known[0] is col:
            return known[1]
        found = False
        for c in col.proxy_set:
            t = getattr(c, "table", None)
            if isinstance(t, Table) and self._tables.get(t.name) == getattr(c, "name", None):
                found = True
                break
        if isinstance(col, Column):  # (a table's own column: the same object in every statement)
            self._key_cols[id(col)] = (col, found)
        return found

    def _clause_keys(self, clause: Any, params: Any) -> set[Any] | None:
        return keys_of(clause, self._is_key, params if isinstance(params, Mapping) else None)

    def execute_chooser(self, ctx: ORMExecuteState) -> list[str]:
        """The shards a statement runs on: the owners of the keys its WHERE
        clause pins, else every shard.  An ORM UPDATE or DELETE by criteria
        is fenced like a flush, on the owners of the keys it pins (and
        refused when it pins none: name the keys, or run it through
        ``cluster.transaction``); an INSERT statement into a group table is
        refused."""
        stmt = ctx.statement
        if ctx.is_insert:
            self._refuse_insert(stmt)
        keys = self._clause_keys(getattr(stmt, "whereclause", None), ctx.parameters)
        if ctx.is_update or ctx.is_delete:
            if keys is None:
                raise ValueError(f"an ORM UPDATE/DELETE on group {self.group!r} must pin its shard keys "
                                 "(key == v or key IN (...)) so that its owners can be fenced")
            sess = ctx.session
            assert isinstance(sess, ShardedSession)
            return sorted(self._fence(sess, lambda r: self._plan_keys(r, keys)))
        if keys is None:
            return self._all()
        r = self.cluster.router(self.group)
        owners: list[str] = []
        try:
            for k in keys:
                s = r.route(k)
                if s not in owners:
                    owners.append(s)
        except (TypeError, ValueError, OverflowError):
            return self._all()  # (a value the router cannot place matches no row of a placed key)
        return owners or [r.shards[0]]  # (IN () matches nothing: one shard says so)

    def _refuse_insert(self, stmt: Any) -> None:
        """ValueError for an INSERT statement into a table of the group: its
        rows' keys are neither routed nor checked (through a
        ``ShardedSession`` it would run on every shard)."""
        t = getattr(stmt, "table", None)
        if isinstance(t, Table) and t.name in self._tables:
            raise ValueError(f"an INSERT statement into {t.name!r} (group {self.group!r}) is neither routed "
                             "nor checked: add instances to the session instead (the flush routes and checks "
                             "them), or write it with cluster.transaction(key)")

    @staticmethod
    def _plan_keys(r: Any, keys: Iterable[Any]) -> dict[str, list[tuple[Any, Any]]]:
        plan: dict[str, list[tuple[Any, Any]]] = {}
        for k in keys:
            plan.setdefault(r.route(k), []).append((k, None))
        return plan

    # ------------------------------------------------------------- fence

    def _state(self, session: Session) -> _TxState:
        root = session.get_transaction()
        if root is None:  # (never: the caller began one)
            raise RuntimeError("the session has no transaction")
        st = session.info.get(_INFO)
        if st is None or st.root() is not root:
            st = _TxState(weakref.ref(root))
            session.info[_INFO] = st
        return st

    def _before_flush(self, session: Session, _ctx: Any, _instances: Any) -> None:
        assert isinstance(session, ShardedSession)
        writes: list[tuple[Mapper[Any], Any, bool]] = []   # (mapper, instance, is_new)
        for obj in session.new:
            st = instance_state(obj)
            if self._key_attr(st.mapper) is not None:
                writes.append((st.mapper, obj, True))
        for obj in list(session.dirty) + list(session.deleted):
            st = instance_state(obj)
            ka = self._key_attr(st.mapper)
            if ka is None or st.key is None:
                continue
            if ka.attr in st.committed_state:  # (the key attribute was set)
                self._immutable_key(st)
            writes.append((st.mapper, obj, False))
        if not writes:
            return
        keyed = [(self._key_of(m, o), o, new) for m, o, new in writes]

        def plan(r: Any) -> dict[str, list[tuple[Any, Any]]]:
            out: dict[str, list[tuple[Any, Any]]] = {}
            for k, o, new in keyed:
                st = instance_state(o)
                if not new:
                    shard = str(st.key[2] if st.key is not None else st.identity_token)
                    out.setdefault(shard, []).append((k, None))  # (pinned: its rows are on that shard)
                else:
                    out.setdefault(r.route(k), []).append((k, o))
            return out

        placed = self._fence(session, plan)
        for shard, items in placed.items():
            for _k, o in items:
                if o is not None:
                    instance_state(o).identity_token = shard

    def _key_flush(self, session: KeySession) -> None:
        """Before a :class:`KeySession`'s flush: every row it writes is of
        its key; the first flush of a transaction checks the key on its
        shard (the lock it takes is held to the end of the transaction)."""
        key = session.shardhash_key
        wrote = False
        for obj in session.new:
            self._own_key(instance_state(obj).mapper, obj, key)
            wrote = True
        for obj in (*session.dirty, *session.deleted):
            st = instance_state(obj)
            if st.key is None:
                continue
            ka = self._key_attr(st.mapper)
            if ka is not None and ka.attr in st.committed_state:  # (the key attribute was set)
                self._immutable_key(st)
            self._own_key(st.mapper, obj, key)
            wrote = True
        if wrote:
            self._fence_key(session)

    def _own_key(self, mapper: Mapper[Any], obj: Any, key: Any) -> None:
        k = self._key_of(mapper, obj)
        if type(k) is not type(key) or k != key:
            ka = self._key_attr(mapper)
            assert ka is not None
            raise ShardKeyError(ka.table.name, k, key, self.group, self.group)

    def _key_bulk(self, session: KeySession, ctx: ORMExecuteState) -> None:
        """An ORM UPDATE/DELETE by criteria in a :class:`KeySession`: its
        WHERE clause must pin its key (and no other); fenced like a flush.
        An INSERT statement into a table of the group is refused (its rows'
        keys are not checked: add instances instead)."""
        if ctx.is_insert:
            self._refuse_insert(ctx.statement)
            return
        keys = self._clause_keys(getattr(ctx.statement, "whereclause", None), ctx.parameters)
        if keys is None:
            raise ValueError(f"an ORM UPDATE/DELETE on group {self.group!r} must pin its shard key "
                             f"({session.shardhash_key!r}: key == v) so that its owner can be fenced")
        key = session.shardhash_key
        for k in keys:
            if type(k) is not type(key) or k != key:
                raise ShardKeyError(self._tables_of_statement(ctx), k, key, self.group, self.group)
        self._fence_key(session)

    def _tables_of_statement(self, ctx: ORMExecuteState) -> str:
        m = ctx.bind_mapper
        ka = self._key_attr(m) if m is not None else None
        return ka.table.name if ka is not None else "?"

    def _fence_key(self, session: KeySession) -> None:
        """:meth:`_fence` of a :class:`KeySession`'s one key and shard, once
        per transaction; its common case (SQLite, no ownership record of a
        migration on the shard) without the general bookkeeping."""
        root = session.get_transaction()
        st = session.info.get(_INFO)
        if st is not None and st.root() is root and st.written:
            return  # (checked in this transaction, whose lock it holds)
        shard, key = session.shardhash_shard, session.shardhash_key
        cl = self.cluster
        b = cl.backend(shard)
        if b.kind == "sqlite" and root is not None:
            raw = session.connection().connection.dbapi_connection
            _begin_immediate(raw)
            if _all_owned(cl, shard, raw):
                session.info[_INFO] = _TxState(weakref.ref(root), {shard}, {shard})
                return
            session.info[_INFO] = _TxState(weakref.ref(root), {shard})
        self._fence(session, lambda _r: {shard: [(key, None)]})

    def _immutable_key(self, st: Any) -> None:
        """ValueError when the shard-key attribute of a loaded row changed
        (reading its history makes the state a reference cycle: only an
        attribute that was set, in ``committed_state``, is read)."""
        ka = self._key_attr(st.mapper)
        if ka is None:
            return
        hist = st.attrs[ka.attr].history
        if hist.deleted and hist.added and hist.deleted[0] is not None and hist.added != hist.deleted:
            raise ValueError(f"{st.mapper.class_.__name__}.{ka.attr} is the shard key of group "
                             f"{self.group!r} and cannot change ({hist.deleted[0]!r} -> {hist.added[0]!r}): "
                             "delete the row and insert a new one")

    def _fence(self, session: Session,
               plan: Callable[[Any], dict[str, list[tuple[Any, Any]]]]) -> dict[str, list[tuple[Any, Any]]]:
        """Lock every shard of ``plan(router)`` in this session's transaction
        and check its keys there (see the module docstring); returns the
        plan that passed.  ``plan`` items: (key, instance to re-route or None
        when the key's shard is fixed)."""
        cl, g = self.cluster, self.group
        attempt = 0
        t_wait: float | None = None
        while True:
            r = cl.router(g)
            p = plan(r)
            stale: tuple[Any, str, int, str, bool] | None = None
            for shard in sorted(p):
                if shard not in self.engines and isinstance(session, ShardedSession):
                    self.sync_engines()
                    session.bind_shard(shard, self.engines[shard])
                conn = session.connection(bind_arguments={"shard_id": shard})
                st = self._state(session)
                b = cl.backend(shard)
                raw = conn.connection.dbapi_connection
                c = _fence.adapt(b.kind, raw)
                if shard not in st.locked:
                    if b.kind == "sqlite":
                        # BEGIN IMMEDIATE (the driver begins nothing: a transaction open on the
                        # connection now was begun by the application, and is begun again)
                        _begin_immediate(c)
                    else:
                        _fence.lock(b.kind, c)
                    st.locked.add(shard)
                items = p[shard]
                if b.kind == "sqlite" and _all_owned(cl, shard, c):
                    continue
                refused = _fence.refusals(cl, g, shard, c, [k for k, _ in items], r.version)
                if not refused:
                    continue
                fixed = {id(k) for k, o in items if o is None}
                k, verdict, cur, owner = refused[0]
                if verdict == "stale":
                    stale = (k, shard, cur, owner, any(id(x[0]) in fixed for x in refused))
                    break
                # frozen for a cutover: wait outside the transaction, then again
                if shard in st.written:
                    raise FenceTimeout(f"key {k!r} is frozen for a cutover on shard {shard!r}, and this "
                                       "transaction already wrote there: roll it back and retry it")
                if t_wait is None:
                    t_wait = time.perf_counter()
                ep = _fence.epoch(cl, shard, c)
                end = None if b.kind == "sqlite" or raw is None else raw.rollback
                self._restart(b.kind, conn, c, partial(_fence.wait_unfrozen, cl, shard, c, ep, t_wait, k, end))
                st.locked.discard(shard)
                break
            else:
                if t_wait is not None:
                    cl.metrics.add_pause(time.perf_counter() - t_wait)
                st = self._state(session)
                st.written.update(p)
                return p
            if stale is None:
                continue  # (waited: check again)
            k, shard, cur, owner, is_fixed = stale
            _fence.stale_route(cl, g, k, shard, r.version, cur, owner, attempt < cl.retries and not is_fixed)
            attempt += 1
            cl.refresh(g)

    @staticmethod
    def _restart(kind: str, conn: Connection, c: Any, wait: Callable[[], None]) -> None:
        """Roll the shard's DB-API transaction back (nothing of this session
        was written there), run ``wait``, and begin it again (the session
        keeps its connection)."""
        raw = conn.connection.dbapi_connection
        assert raw is not None
        if kind == "sqlite":
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            try:
                wait()
            finally:
                raw.execute("BEGIN IMMEDIATE")
        else:
            raw.rollback()
            wait()
