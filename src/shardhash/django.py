"""Django on a shardhash cluster: a database router and an ownership-checked
``atomic``.

* :class:`ShardRouter` goes in ``DATABASE_ROUTERS``: reads and writes of a
  sharded model (one whose table is in a table group of the cluster) go to
  the database alias of the shard that owns the row's key -- from the
  instance, from a ``shard_key`` hint
  (``Model.objects.db_manager(hints={"shard_key": k})``), or, inside
  :func:`sharded_atomic`, the block's shard; ``allow_migrate`` applies the
  sharded apps' migrations on every shard alias (and nowhere else), other
  apps' not on shard aliases; ``allow_relation`` refuses a relation between
  rows of different shards with a ValueError that names both.
* ``with sharded_atomic(key): ...`` is ``transaction.atomic(using=alias)``
  on the key's owner with the checks of ``cluster.transaction`` inside it:
  the lock a cutover waits for, the shard's ownership records (a stale
  router is refreshed and the block retried before it runs; a frozen key
  waits for the cutover), and the shard-key guard (a row of another key
  written in the block is a :class:`~shardhash.migrate.ShardKeyError`, all
  rolled back).  Writes of sharded models must run inside one (else
  :class:`ShardedWriteOutsideAtomic`), so that every write is checked.

Shard aliases are the shard ids unless ``aliases`` maps them;
:func:`databases` builds ``DATABASES`` entries from the cluster's shard map
(SQLite entries take ``transaction_mode = "IMMEDIATE"``, which the check
needs: the write lock from the start of the transaction).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connections, transaction
from django.db import router as django_router

from . import _fence
from .migrate.cluster import Cluster, FenceTimeout, ShardKeyError

__all__ = ["ShardRouter", "sharded_atomic", "databases", "ShardedWriteOutsideAtomic", "ShardKeyRequired"]


class ShardKeyRequired(LookupError):
    """A query of a sharded model names no shard: give its key (instance,
    ``shard_key`` hint) or run it inside :func:`sharded_atomic`."""


class ShardedWriteOutsideAtomic(RuntimeError):
    """A write of a sharded model outside :func:`sharded_atomic` (it would
    skip the ownership check)."""


@dataclass(frozen=True)
class _Block:
    router: ShardRouter
    group: str
    key: Any
    shard: str
    alias: str


_local = threading.local()


def _blocks() -> list[_Block]:
    b: list[_Block] | None = getattr(_local, "blocks", None)
    if b is None:
        b = _local.blocks = []
    return b


def databases(cluster: Cluster, *, default: Mapping[str, Any] | None = None,
              aliases: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """``DATABASES`` entries for every shard of the cluster's shard map (plus
    ``default`` when given): SQLite files with ``transaction_mode``
    IMMEDIATE, PostgreSQL through its connection string's fields."""
    out: dict[str, dict[str, Any]] = {}
    if default is not None:
        out["default"] = dict(default)
    for shard in cluster.shard_ids():
        b = cluster.backend(shard)
        alias = (aliases or {}).get(shard, shard)
        if b.kind == "sqlite":
            out[alias] = {"ENGINE": "django.db.backends.sqlite3", "NAME": b.path,
                          "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 60}}
        else:
            from psycopg.conninfo import conninfo_to_dict

            info = {k: str(v) for k, v in conninfo_to_dict(getattr(b, "dsn", b.path)).items()}
            entry: dict[str, Any] = {"ENGINE": "django.db.backends.postgresql",
                                     "NAME": info.pop("dbname", ""), "USER": info.pop("user", ""),
                                     "PASSWORD": info.pop("password", ""), "HOST": info.pop("host", ""),
                                     "PORT": info.pop("port", "")}
            entry["OPTIONS"] = info
            out[alias] = entry
    return out


class ShardRouter:
    """A Django database router over a shardhash cluster.

    ``ShardRouter(cluster, apps, *, aliases=None)``: ``apps`` maps each
    sharded app label to its table group; ``aliases`` maps shard ids to
    database aliases (default: the same names).  A model of a sharded app
    is sharded when its table is one of the group's tables (its shard key:
    the field of the table's key column)."""

    def __init__(self, cluster: Cluster, apps: Mapping[str, str], *,
                 aliases: Mapping[str, str] | None = None) -> None:
        if not isinstance(cluster, Cluster):
            raise TypeError(f"cluster must be a shardhash.migrate.Cluster, not {type(cluster).__name__}")
        if not isinstance(apps, Mapping) or not apps:
            raise ValueError("apps must map at least one app label to a table group")
        self.cluster = cluster
        self.apps = {str(a): cluster.group(g).name for a, g in apps.items()}
        self.aliases = dict(aliases or {})
        self._shard_of_alias = {v: k for k, v in self.aliases.items()}
        self._keys: dict[type, tuple[str, str] | None] = {}
        self._groups = set(self.apps.values())
        self._immediate: dict[str, tuple[Any, bool]] = {}  # alias -> (its settings, IMMEDIATE?)

    # ------------------------------------------------------------ helpers

    def alias(self, shard: str) -> str:
        return self.aliases.get(shard, shard)

    def shard_aliases(self) -> set[str]:
        return {self.alias(s) for s in self.cluster.shard_ids()}

    def _model_key(self, model: type) -> tuple[str, str] | None:
        """(group, attname of the shard-key field), or None for a model that is not sharded."""
        try:
            return self._keys[model]
        except KeyError:
            pass
        meta = model._meta  # type: ignore[attr-defined]
        found = None
        g = self.apps.get(meta.app_label)
        if g is not None:
            tables = {t.name: t.key for t in self.cluster.group(g).tables}
            col = tables.get(meta.db_table)
            if col is not None:
                for f in meta.concrete_fields:
                    if f.column == col:
                        found = (g, f.attname)
                        break
                else:
                    raise ValueError(f"model {meta.label} (table {meta.db_table!r}) has no field on column "
                                     f"{col!r}, the shard key of group {g!r}")
        self._keys[model] = found
        return found

    def key_of(self, instance: Any) -> Any:
        """The shard key of a sharded model's instance."""
        mk = self._model_key(type(instance))
        if mk is None:
            raise ValueError(f"{type(instance).__name__} is not a sharded model")
        k = getattr(instance, mk[1])
        if k is None:
            raise ValueError(f"{type(instance).__name__}.{mk[1]} (its shard key) is not set")
        return k

    def alias_for(self, key: Any, group: str | None = None) -> str:
        """The database alias of the shard that owns ``key`` (current router)."""
        return self.alias(self.cluster.router(group or self._only_group()).route(key))

    def _only_group(self) -> str:
        gs = self._groups
        if len(gs) != 1:
            raise ValueError(f"this router serves groups {', '.join(sorted(gs))}: name one")
        return next(iter(gs))

    def _is_immediate(self, alias: str, settings: Mapping[str, Any]) -> bool:
        """Whether an SQLite database's settings begin its transactions with
        BEGIN IMMEDIATE (cached per alias and settings dict)."""
        known = self._immediate.get(alias)
        if known is not None and known[0] is settings:
            return known[1]
        ok = str(settings.get("OPTIONS", {}).get("transaction_mode", "")).upper() == "IMMEDIATE"
        self._immediate[alias] = (settings, ok)
        return ok

    def _block(self, group: str) -> _Block | None:
        blocks: list[_Block] | None = getattr(_local, "blocks", None)
        if not blocks:
            return None
        for b in reversed(blocks):
            if b.router is self and b.group == group:
                return b
        return None

    def _route(self, model: type, write: bool, hints: Mapping[str, Any]) -> str | None:
        mk = self._model_key(model)
        if mk is None:
            return None
        g = mk[0]
        inst = hints.get("instance")
        key = hints.get("shard_key")
        if key is None and inst is not None and type(inst) is model:
            key = getattr(inst, mk[1])
        block = self._block(g)
        if block is not None and (key is None or key == block.key):
            return block.alias
        if write:
            if block is not None:
                raise ShardKeyError(model._meta.db_table, key, block.key, g, g)  # type: ignore[attr-defined]
            raise ShardedWriteOutsideAtomic(
                f"a write of {model.__name__} (sharded, group {g!r}) outside sharded_atomic(key): "
                "run it inside `with sharded_atomic(key):` so that the shard's ownership is checked")
        if key is None:
            if inst is not None and inst._state.db in self.shard_aliases():
                return str(inst._state.db)  # (a related object of a row read from that shard)
            raise ShardKeyRequired(
                f"a query of {model.__name__} (sharded, group {g!r}) names no shard: use "
                f"{model.__name__}.objects.db_manager(hints={{'shard_key': key}}), "
                "run it inside sharded_atomic(key), or .using(alias) for one shard")
        return self.alias_for(key, g)

    # ------------------------------------------------------ router protocol

    def db_for_read(self, model: type, **hints: Any) -> str | None:
        return self._route(model, False, hints)

    def db_for_write(self, model: type, **hints: Any) -> str | None:
        return self._route(model, True, hints)

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        k1, k2 = self._model_key(type(obj1)), self._model_key(type(obj2))
        if k1 is None and k2 is None:
            return None
        if k1 is None or k2 is None:
            sharded, other = (obj1, obj2) if k1 is not None else (obj2, obj1)
            raise ValueError(f"a relation between {type(sharded).__name__} (sharded) and "
                             f"{type(other).__name__} (not sharded) cannot be kept on one database")
        s1 = self.cluster.router(k1[0]).route(getattr(obj1, k1[1]))
        s2 = self.cluster.router(k2[0]).route(getattr(obj2, k2[1]))
        if s1 != s2:
            raise ValueError(f"cross-shard relation refused: {type(obj1).__name__} with shard key "
                             f"{getattr(obj1, k1[1])!r} lives on shard {s1!r}, {type(obj2).__name__} with "
                             f"shard key {getattr(obj2, k2[1])!r} on shard {s2!r}")
        return True

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool | None:
        if app_label in self.apps:
            return db in self.shard_aliases()
        if db in self.shard_aliases():
            return False
        return None


def _active_router(group: str | None) -> ShardRouter:
    for r in django_router.routers:
        if isinstance(r, ShardRouter) and (group is None or group in r.apps.values()):
            return r
    raise LookupError("no shardhash.django.ShardRouter in settings.DATABASE_ROUTERS"
                      + (f" serving group {group!r}" if group else ""))


class _Retry(Exception):
    pass


#: SQLite: the shard's ownership-record epoch (SQLiteShard.epoch's read).
_SQLITE_EPOCH = "SELECT n FROM _shardhash_epoch WHERE id = 0"


def _check(cl: Cluster, shard: str, b: Any, c: Any, group: str, key: Any, version: int,
           guard: bool, fresh: bool) -> tuple[str, int, str, bool]:
    """In the shard's write transaction just begun on ``c``: the lock a
    cutover waits for, the ownership check of ``key`` (``Cluster._verdict``'s)
    and, when it passes and ``guard``, the shard-key guard; (verdict, current
    version, owner, whether the capture's skip marker was set); ``fresh``:
    the transaction was begun by this block.  On SQLite
    (whose transaction holds the write lock from its BEGIN IMMEDIATE) the
    guard is turned on by the statement that reads the epoch, and the
    cluster's records cached at that epoch decide without another read."""
    guarded = False
    if b.kind == "sqlite":
        if guard:
            ep = b.guard_epoch(c, group, key, fresh)
            guarded = True
        else:
            row = c.execute(_SQLITE_EPOCH).fetchone()
            ep = None if row is None else row[0]
        su = cl._units.get(shard)
        if su is None or ep is None or su.epoch != ep or ep < 0:
            su = cl._shard_units(shard, b, c)
    else:
        _fence.lock(b.kind, c)
        su = cl._shard_units(shard, b, c)
    v = cl._verdict_of(su, shard, group, key, version, True)
    if v is not None and v[0] != "ok":
        if guarded:
            b.end_guard(c)
        return v[0], v[1], v[2], False
    skip = v is None and group in su.captures
    if skip:
        b.skip_capture(c, group)
    if guard and not guarded:
        b.begin_guard(c, group, key)
    return "ok", version, shard, skip


@contextlib.contextmanager
def sharded_atomic(key: Any, *, group: str | None = None, router: ShardRouter | None = None,
                   guard: bool = True) -> Iterator[str]:
    """``transaction.atomic`` on the database of ``key``'s owner, with the
    ownership check of ``cluster.transaction`` inside it (see the module
    docstring); yields the alias.  Inside the block, queries of the group's
    models go to that shard.  ``guard=False`` leaves out the shard-key guard
    (a row of another key written in the block is then not refused; on
    SQLite the guard costs a function call per row written, on PostgreSQL
    two transaction-local settings)."""
    r = router or _active_router(group)
    cl = r.cluster
    g = cl.group(group or r._only_group()).name
    outer = r._block(g)
    if outer is not None:
        if outer.key != key or type(outer.key) is not type(key):
            raise ValueError(f"sharded_atomic({key!r}) inside sharded_atomic({outer.key!r}) of group {g!r}: "
                             "a block writes the rows of its one key (nest blocks of the same key only)")
        with transaction.atomic(using=outer.alias):  # (a savepoint; the outer block checked the key)
            yield outer.alias
        return
    attempt = 0
    t_wait: float | None = None
    while True:
        rt = cl.router(g)
        shard = rt.route(key)
        alias = r.alias(shard)
        conn = connections[alias]
        nested = conn.in_atomic_block
        fresh = not nested and conn.get_autocommit()  # (the atomic block begins the transaction)
        atomic = transaction.atomic(using=alias)
        atomic.__enter__()
        try:
            b = cl.backend(shard)
            if b.kind == "sqlite" and not nested and not r._is_immediate(alias, conn.settings_dict):
                raise ValueError(f"database {alias!r} (SQLite) needs OPTIONS['transaction_mode'] = 'IMMEDIATE' "
                                 "for sharded_atomic (the write lock from the start of the transaction)")
            c = _fence.adapt(b.kind, conn.connection)
            verdict, cur, owner, skip = _check(cl, shard, b, c, g, key, rt.version, guard, fresh)
        except BaseException:
            atomic.__exit__(*sys.exc_info())
            raise
        if verdict == "ok":
            break
        ep = _fence.epoch(cl, shard, c)
        atomic.__exit__(_Retry, _Retry(), None)  # (rolled back: nothing was written)
        if verdict == "wait":
            if nested:
                raise FenceTimeout(f"key {key!r} is frozen for a cutover on shard {shard!r}, inside an outer "
                                   "transaction there: roll it back and retry it")
            if t_wait is None:
                t_wait = time.perf_counter()
            end = None if b.kind == "sqlite" else conn.connection.rollback
            _fence.wait_unfrozen(cl, shard, c, ep, t_wait, key, end)
            continue
        _fence.stale_route(cl, g, key, shard, rt.version, cur, owner, attempt < cl.retries)
        attempt += 1
        cl.refresh(g)
    if t_wait is not None:
        cl.metrics.add_pause(time.perf_counter() - t_wait)
    blocks = _blocks()
    blocks.append(_Block(r, g, key, shard, alias))
    try:
        try:
            yield alias
        finally:
            blocks.pop()
        if skip:
            b.end_skip(c, g)
        if guard:
            cl._check_guard(b.end_guard(c), g, key)
    except BaseException as e:
        if guard:
            b.end_guard(c)  # (off, if the block left it on)
        v = b.guard_violation(e.__cause__ if e.__cause__ is not None else e)
        if v is not None:  # (PostgreSQL's guard refused a statement of another key)
            err2 = ShardKeyError(v[1], v[2], key, g, v[0])
            try:
                atomic.__exit__(type(err2), err2, None)
            finally:
                raise err2 from e
        atomic.__exit__(*sys.exc_info())
        raise
    atomic.__exit__(None, None, None)
