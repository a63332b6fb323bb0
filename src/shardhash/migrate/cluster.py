"""A sharded cluster: its shard map, table groups, routers and client.

A cluster is described by a JSON or TOML file::

    metadata = "sqlite:meta.db"            # the metadata store (paths are
                                           # relative to this file)
    [shards.s0]
    primary = "sqlite:s0.db"               # logical shard id -> connection
    replicas = ["sqlite:s0-replica.db"]    # (optional)
    [shards.s1]
    primary = "sqlite:s1.db"

    [groups.users]                         # a table group: its own router
    router = "users.router.json"           # a router document (file or inline)
    tables = [{ name = "users", key = "id" },
              { name = "orders", key = "user_id" }]

The shard map (logical id -> connection) is kept apart from the topology
(the routers): promoting a replica rewrites the shard map only
(:meth:`Cluster.failover`), never a router or any key's owner.  After
:meth:`Cluster.init` the metadata store holds the current router of each
group with its version and the shard map; the file only seeds them.

Application code writes and reads through :meth:`Cluster.transaction` and
:meth:`Cluster.read`.  Each opens a local transaction on the shard its
router names and, *inside that same transaction*, checks the shard's own
ownership records of any migrating unit the key belongs to:

* the shard gave the key away (a stale router): :class:`StaleRouteError`;
  the client reloads its router from the metadata store and retries, at most
  ``retries`` times (then the error reaches the caller);
* the key's unit is frozen for a cutover: the transaction is rolled back and
  retried until the freeze ends (writers wait, they do not fail), at most
  ``wait_timeout`` seconds (then :class:`FenceTimeout`; nothing was written).

>>> import json, os, sqlite3, tempfile
>>> from shardhash import JumpRouter
>>> d = tempfile.mkdtemp()
>>> doc = {"metadata": "sqlite:meta.db",
...        "shards": {s: {"primary": f"sqlite:{s}.db"} for s in ("a", "b")},
...        "groups": {"users": {"router": JumpRouter(["a", "b"]).to_dict(),
...                             "tables": [{"name": "users", "key": "id"}]}}}
>>> for s in ("a", "b"):
...     sqlite3.connect(os.path.join(d, s + ".db")).execute(
...         "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)").connection.close()
>>> cluster = Cluster.from_dict(doc, base_dir=d)
>>> cluster.init()
>>> with cluster.transaction(42) as tx:
...     _ = tx.execute("INSERT INTO users VALUES (?, ?)", (42, "ada"))
>>> with cluster.read(42) as tx:
...     tx.execute("SELECT name FROM users WHERE id = 42").fetchone()[0]
'ada'
>>> cluster.close()
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _events
from .._limits import MAX_DOC_DEPTH, check_depth
from .._limits import loads as _loads
from ..routing import Router, load_router
from .backend import ShardBackend
from .cluster_extras import ClusterExtras
from .metadata import Metadata
from .sqlite import SHARD_ID, SYNCHRONOUS, SQLiteShard, check_identifier
from .units import Membership, Unit

__all__ = ["Cluster", "StaleRouteError", "FenceTimeout", "ShardKeyError", "TableSpec", "GroupSpec", "Metrics",
           "ShardTransaction"]

log = logging.getLogger("shardhash.migrate")

#: The keys of a cluster document, of a group and of a table entry.
_DOC_KEYS = ("metadata", "shards", "groups", "options")
_GROUP_KEYS = ("router", "tables", "key_type")
_TABLE_KEYS = ("name", "key")
#: The ``[options]`` of a cluster file (also keyword arguments of load/from_dict).
OPTIONS = ("retries", "wait_timeout", "synchronous")
#: Bounds of the options: retries of a stale route, seconds a write waits for a cutover.
MAX_RETRIES = 1000
MAX_WAIT_TIMEOUT = 1e6


class StaleRouteError(Exception):
    """A shard refused a key routed with an outdated topology version.

    Attributes: ``key``, ``shard`` (the one that refused), ``used_version``
    (the router's), ``current_version`` (the shard's record) and ``owner``
    (the shard that owns the key now)."""

    def __init__(self, key: Any, shard: str, used_version: int, current_version: int, owner: str) -> None:
        self.key, self.shard, self.used_version = key, shard, used_version
        self.current_version, self.owner = current_version, owner
        super().__init__(f"stale route for key {key!r}: shard {shard!r} no longer owns it (router version "
                         f"{used_version}, current version {current_version}, owner {owner!r})")


class FenceTimeout(TimeoutError):
    """A write waited longer than ``wait_timeout`` for a cutover to finish (nothing was written)."""


#: Seconds between a waiting writer's attempts to have a fence past its
#: deadline decided when the metadata store (or a shard) could not be reached.
_FENCE_RETRY_S = 0.05


def _unreachable(e: BaseException) -> bool:
    """A database or network error (PEP 249's DatabaseError / InterfaceError
    of any driver, or an OSError): the store is down or the connection lost,
    not a fault of the call."""
    if isinstance(e, OSError):
        return True
    return any(k.__name__ in ("DatabaseError", "InterfaceError") for k in type(e).__mro__)


class _FenceWait:
    """The deadline side of a writer's wait on a frozen unit (the sync and
    the asyncio client): ``fence`` is ``(migration, (attempt, deadline))``
    of the freeze, or None.  :meth:`due` says when to ask the metadata
    store to decide the fence; :meth:`failed` takes that call's error (an
    unreachable store: ask again in ``_FENCE_RETRY_S``; anything else is
    raised); :meth:`timeout` is the ``FenceTimeout`` of a wait that lasted
    ``wait_timeout``."""

    def __init__(self, fence: tuple[str, Any] | None) -> None:
        self.fence = fence
        self.undecided: Exception | None = None
        self.next_try = 0.0

    def due(self) -> bool:
        return (self.fence is not None and time.time() > self.fence[1][1]
                and time.perf_counter() >= self.next_try)

    def failed(self, e: Exception) -> None:
        if not _unreachable(e):
            raise e
        # The store that decides (or a shard to update) cannot be reached:
        # nothing is written; wait on and ask again (the decision is idempotent).
        self.undecided, self.next_try = e, time.perf_counter() + _FENCE_RETRY_S

    def timeout(self, key: Any, shard: str, waited: float) -> FenceTimeout:
        msg = f"key {key!r} waited {waited:.1f} s for a cutover on shard {shard!r}"
        if self.undecided is not None:
            msg += (f"; past the freeze's deadline the metadata store could not be reached to "
                    f"decide it ({type(self.undecided).__name__}: {self.undecided}); nothing was written")
        err = FenceTimeout(msg)
        err.__cause__ = self.undecided
        return err


class ShardKeyError(ValueError):
    """A client transaction wrote a row of another shard key (or of another
    group's table); it was rolled back, nothing was written.

    Attributes: ``table``, ``key`` (the row's shard key), ``tx_key`` (the
    transaction's) and ``group`` (the transaction's group)."""

    def __init__(self, table: str, key: Any, tx_key: Any, group: str, table_group: str) -> None:
        self.table, self.key, self.tx_key, self.group = table, key, tx_key, group
        if table_group != group:
            msg = (f"transaction({tx_key!r}) of group {group!r} wrote table {table!r} of group {table_group!r} "
                   "(a transaction touches the tables of its own group only); rolled back")
        else:
            msg = (f"transaction({tx_key!r}) wrote a row of table {table!r} with shard key {key!r}, not "
                   f"{tx_key!r} (a transaction touches the rows of its one key, and a row's shard key is "
                   "immutable); rolled back")
        super().__init__(msg)


@dataclass(frozen=True)
class TableSpec:
    """One table of a group: its name and shard-key column (primary key read from the database)."""

    name: str
    key: str


@dataclass(frozen=True)
class GroupSpec:
    """A table group: tables that move together under one router."""

    name: str
    tables: tuple[TableSpec, ...]
    router: Router
    key_type: str = "auto"


class Metrics:
    """Counters and the write-pause samples of one process (thread-safe).

    ``snapshot()`` gives a plain dict (``status --json`` prints the
    executor's); :func:`shardhash.migrate.metrics.export` exposes them through
    ``prometheus_client`` when that optional extra is installed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stale_retries = 0
        self.stale_errors = 0
        self.fence_waits = 0
        self.write_pauses: list[float] = []

    def add_pause(self, seconds: float) -> None:
        with self._lock:
            self.fence_waits += 1
            if len(self.write_pauses) < 1_000_000:
                self.write_pauses.append(seconds)

    def stale(self, retried: bool) -> None:
        with self._lock:
            if retried:
                self.stale_retries += 1
            else:
                self.stale_errors += 1

    def pause_quantiles(self) -> dict[str, float | None]:
        with self._lock:
            v = sorted(self.write_pauses)
        if not v:
            return {"p50": None, "p99": None, "max": None, "count": 0}
        def q(p: float) -> float:
            return v[min(len(v) - 1, int(p * len(v)))]
        return {"p50": q(0.5), "p99": q(0.99), "max": v[-1], "count": len(v)}

    def snapshot(self) -> dict[str, Any]:
        return {"stale_retries": self.stale_retries, "stale_errors": self.stale_errors,
                "fence_waits": self.fence_waits, "write_pause": self.pause_quantiles()}


def open_backend(url: str, base_dir: str | os.PathLike[str] | None = None, *,
                 synchronous: str = "FULL") -> Any:
    """A backend for a connection URL: ``sqlite:PATH`` (relative to ``base_dir``)
    or ``postgresql:...`` -- a :class:`~shardhash.migrate.backend.ShardBackend`
    (typed ``Any``: callers may hold it as the concrete class they asked for)."""
    if not isinstance(url, str):
        raise TypeError(f"connection URL must be a string, not {type(url).__name__}")
    if url.startswith("sqlite:"):
        p = url[len("sqlite:"):]
        if p.startswith("///"):
            p = p[2:]
        path = Path(p)
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        return SQLiteShard(path, synchronous=synchronous)
    if url.startswith(("postgresql:", "postgres:")):
        from .postgres import PostgresShard

        return PostgresShard(url)
    if url.startswith(("mysql://", "mariadb://")):  # (MariaDB / MySQL: shardhash.migrate.mysql)
        from .mysql import MySQLShard

        return MySQLShard(url)
    raise ValueError(f"unsupported connection URL {url!r}: use sqlite:PATH, postgresql://... or mysql://...")


def _read_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    where = f"cluster file {p.name}"
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{where} is not UTF-8 text: {e}") from None
    if p.suffix.lower() == ".toml":
        try:  # tomllib is new in Python 3.11; tomli is the same parser for 3.10
            toml = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
        except ImportError:
            raise ImportError("reading a TOML cluster file needs Python 3.11+ (or the tomli package); "
                              "a JSON cluster file works everywhere") from None
        try:
            doc = toml.loads(text)
        except RecursionError:  # (the parser recurses into nested arrays and inline tables)
            raise ValueError(f"{where} nests arrays/tables more than {MAX_DOC_DEPTH} deep") from None
        except ValueError as e:  # (tomllib.TOMLDecodeError)
            raise ValueError(f"{where} is not valid TOML: {e}") from None
    else:
        doc = _loads(text, where)
    check_depth(doc, where)
    if not isinstance(doc, dict):
        raise ValueError(f"{where} must hold an object (a table of settings), not {type(doc).__name__}")
    return doc


def _check_url(url: Any, where: str) -> str:
    if not isinstance(url, str):
        raise ValueError(f"cluster document: {where} must be a connection URL (a string), "
                         f"not {type(url).__name__}")
    if not url.startswith(("sqlite:", "postgresql:", "postgres:", "mysql://", "mariadb://")):
        raise ValueError(f"cluster document: {where}: unsupported connection URL {url!r} "
                         "(use sqlite:PATH, postgresql://... or mysql://...)")
    if "\x00" in url or len(url) > 4096:
        raise ValueError(f"cluster document: {where}: connection URL {url[:80]!r} holds a NUL or is too long")
    return url


def _check_name(name: Any, where: str) -> str:
    try:
        return check_identifier(name, where)
    except TypeError as e:
        raise ValueError(f"cluster document: {e}") from None
    except ValueError as e:
        raise ValueError(f"cluster document: {e}") from None


def _check_shard_id(sid: Any, where: str) -> str:
    if not isinstance(sid, str) or SHARD_ID.fullmatch(sid) is None:
        raise ValueError(f"cluster document: {where}: {sid!r} is not a valid shard id (ASCII letters, "
                         "digits and _ . : -, not starting with . : or -, 1-128 characters)")
    return sid


def _check_version(v: Any, where: str) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**63:
        raise ValueError(f"cluster document: {where} version must be an integer in 0..2**63-1 "
                         f"(it is stored as a 64-bit integer), not {v!r}")


def _check_keys(d: Mapping[str, Any], known: Sequence[str], where: str) -> None:
    for k in d:
        if k not in known:
            raise ValueError(f"cluster document: unknown key {k!r} in {where} (known: {', '.join(known)})")


def check_options(opts: Mapping[str, Any]) -> dict[str, Any]:
    """The cluster options, validated (ValueError naming the option):
    ``retries`` an int in 0..1000, ``wait_timeout`` a finite number of
    seconds in 0..1e6, ``synchronous`` one of OFF, NORMAL, FULL, EXTRA (any
    case)."""
    out: dict[str, Any] = {}
    for k, v in opts.items():
        if k not in OPTIONS:
            raise ValueError(f"cluster options: unknown option {k!r} (options: {', '.join(OPTIONS)})")
        if k == "retries":
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_RETRIES:
                raise ValueError(f"cluster options: retries must be an integer in 0..{MAX_RETRIES}, not {v!r}")
        elif k == "wait_timeout":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or not 0 <= v <= MAX_WAIT_TIMEOUT:
                raise ValueError(f"cluster options: wait_timeout must be a finite number of seconds in "
                                 f"0..{MAX_WAIT_TIMEOUT:g}, not {v!r}")
            v = float(v)
        else:
            if not isinstance(v, str) or v.upper() not in SYNCHRONOUS:
                raise ValueError(f"cluster options: synchronous must be one of {', '.join(SYNCHRONOUS)}, "
                                 f"not {v!r}")
            v = v.upper()
        out[k] = v
    return out


@dataclass
class _ShardUnits:
    epoch: int
    # per migration: (group, version, membership over its units here, unit index -> (unit, role, state),
    # migration id)
    migs: list[tuple[str, int, Membership, dict[int, tuple[Unit, str, str, int]], str]] = \
        field(default_factory=list)
    # groups with an active change capture on the shard
    captures: set[str] = field(default_factory=set)


class ShardTransaction:
    """A local transaction on the shard that owns a key (from :meth:`Cluster.transaction`).

    ``shard`` is the logical shard id, ``version`` the router version that
    routed the key, ``conn`` the raw connection (sqlite3, or the PostgreSQL
    adapter that takes ``?`` placeholders), ``backend`` the shard's backend."""

    def __init__(self, conn: Any, shard: str, version: int, backend: ShardBackend, group: str | None = None,
                 key: Any = None) -> None:
        self.conn, self.shard, self.version, self.backend = conn, shard, version, backend
        self.group, self.key = group, key
        #: the guard's refusal of a statement (raised again at the end of the
        #: block, should the application catch it inside)
        self.violation: ShardKeyError | None = None

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        try:
            return self.conn.execute(sql, params)
        except Exception as e:
            self._guard(e)
            raise

    def executemany(self, sql: str, rows: Any) -> Any:
        try:
            return self.conn.executemany(sql, rows)
        except Exception as e:
            self._guard(e)
            raise

    def _guard(self, e: BaseException) -> None:
        v = self.backend.guard_violation(e) if self.group is not None else None
        if v is not None:
            self.violation = ShardKeyError(v[1], v[2], self.key, str(self.group), v[0])
            raise self.violation from e


class Cluster(ClusterExtras):
    """A cluster loaded from a document (see the module docstring).

    Hot keys, scatter-gather and lookup indexes: see
    :class:`shardhash.migrate.cluster_extras.ClusterExtras` (docs/hotkeys.md,
    docs/scatter.md, docs/lookups.md)."""

    def __init__(self, metadata_url: str, shards: Mapping[str, tuple[str, list[str]]],
                 groups: Mapping[str, GroupSpec], *, base_dir: str | os.PathLike[str] | None = None,
                 retries: int = 3, wait_timeout: float = 30.0, synchronous: str = "FULL") -> None:
        o = check_options({"retries": retries, "wait_timeout": wait_timeout, "synchronous": synchronous})
        retries, wait_timeout, synchronous = o["retries"], o["wait_timeout"], o["synchronous"]
        self.base_dir = str(base_dir) if base_dir is not None else None
        self.synchronous = synchronous
        meta_backend = open_backend(metadata_url, self.base_dir)
        self.metadata = Metadata(meta_backend)
        self._seed_shards = {k: (v[0], list(v[1])) for k, v in shards.items()}
        self.groups = dict(groups)
        if not self.groups:
            raise ValueError("a cluster needs at least one table group")
        # (from_dict checked these already; a Cluster built directly gets the same checks)
        for sid, (url, reps) in self._seed_shards.items():
            _check_shard_id(sid, "shards")
            for u in (url, *reps):
                _check_url(u, f"shards.{sid}")
        for gname, g in self.groups.items():
            if not isinstance(g, GroupSpec) or g.name != gname:
                raise ValueError(f"groups[{gname!r}] must be the GroupSpec of group {gname!r}")
            _check_name(g.name, "groups: a group name")
            _check_version(g.router.version, f"groups.{g.name}.router")
            for i, t in enumerate(g.tables):
                _check_name(t.name, f"groups.{g.name}.tables[{i}].name")
                _check_name(t.key, f"groups.{g.name}.tables[{i}].key")
        self.retries = int(retries)
        self.wait_timeout = float(wait_timeout)
        self.metrics = Metrics()
        self._lock = threading.Lock()
        self._backends: dict[str, ShardBackend] = {}
        self._shard_map: dict[str, tuple[str, list[str]]] | None = None
        self._seed_logged = False
        #: the cluster file this cluster was loaded from (:meth:`load`), for messages
        self.file: str | None = None
        self._routers: dict[str, Router] = {}
        self._units: dict[str, _ShardUnits] = {}
        self._mig_cache: dict[tuple[str, str], tuple[Router, Router]] = {}

    # ----------------------------------------------------------- loading

    @classmethod
    def load(cls, path: str | os.PathLike[str], **kw: Any) -> Cluster:
        """Load a cluster file (``.toml`` or ``.json``)."""
        cl = cls.from_dict(_read_config(path), base_dir=Path(path).resolve().parent, **kw)
        cl.file = str(path)
        return cl

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], *, base_dir: str | os.PathLike[str] | None = None,
                  **kw: Any) -> Cluster:
        """A cluster from a parsed document (relative paths resolve against ``base_dir``)."""
        if not isinstance(doc, Mapping):
            raise TypeError(f"cluster document must be a mapping, not {type(doc).__name__}")
        check_depth(doc, "cluster document")
        _check_keys(doc, _DOC_KEYS, "the cluster document")
        if "metadata" not in doc:
            raise ValueError("cluster document: 'metadata' (a connection URL) is required")
        meta = _check_url(doc["metadata"], "metadata")
        shards_doc = doc.get("shards")
        if not isinstance(shards_doc, Mapping) or not shards_doc:
            raise ValueError("cluster document: 'shards' must map shard ids to {primary, replicas}")
        shards: dict[str, tuple[str, list[str]]] = {}
        for sid, s in shards_doc.items():
            _check_shard_id(sid, "shards")
            if isinstance(s, str):
                shards[sid] = (_check_url(s, f"shards.{sid}"), [])
                continue
            if not isinstance(s, Mapping) or "primary" not in s:
                raise ValueError(f"cluster document: shards.{sid} needs a 'primary' connection URL")
            _check_keys(s, ("primary", "replicas"), f"shards.{sid}")
            primary = _check_url(s["primary"], f"shards.{sid}.primary")
            reps = s.get("replicas", [])
            if not isinstance(reps, list):
                raise ValueError(f"cluster document: shards.{sid}.replicas must be a list of URLs")
            for i, r in enumerate(reps):
                _check_url(r, f"shards.{sid}.replicas[{i}]")
            shards[sid] = (primary, list(reps))
        groups_doc = doc.get("groups")
        if not isinstance(groups_doc, Mapping) or not groups_doc:
            raise ValueError("cluster document: 'groups' must name at least one table group")
        groups: dict[str, GroupSpec] = {}
        seen_tables: dict[str, str] = {}
        for gname, g in groups_doc.items():
            _check_name(gname, "groups: a group name")
            where = f"groups.{gname}"
            if not isinstance(g, Mapping):
                raise ValueError(f"cluster document: {where} must be a table")
            _check_keys(g, _GROUP_KEYS, where)
            rdoc = g.get("router")
            if isinstance(rdoc, str):
                rp = Path(rdoc)
                if not rp.is_absolute() and base_dir is not None:
                    rp = Path(base_dir) / rp
                router = load_router(str(rp))
            elif isinstance(rdoc, Mapping):
                router = load_router(dict(rdoc))
            else:
                raise ValueError(f"cluster document: {where}.router must be a router document or a file name")
            _check_version(router.version, f"{where}.router")
            for s in router.shards:
                if s not in shards:
                    raise ValueError(f"cluster document: {where}.router names shard {s!r}, "
                                     f"which is not in 'shards'")
            tabs = g.get("tables")
            if not isinstance(tabs, list) or not tabs:
                raise ValueError(f"cluster document: {where}.tables must list at least one table")
            specs = []
            for i, t in enumerate(tabs):
                if not (isinstance(t, Mapping) and "name" in t and "key" in t):
                    raise ValueError(f"cluster document: {where}.tables[{i}] needs 'name' and 'key' strings")
                _check_keys(t, _TABLE_KEYS, f"{where}.tables[{i}]")
                name = _check_name(t["name"], f"{where}.tables[{i}].name")
                key = _check_name(t["key"], f"{where}.tables[{i}].key")
                other = seen_tables.get(name.lower())
                if other is not None:
                    raise ValueError(f"cluster document: {where}.tables[{i}]: table {name!r} is already listed "
                                     f"(in {other}); a table belongs to one group, once")
                seen_tables[name.lower()] = where
                specs.append(TableSpec(name, key))
            kt = g.get("key_type", "auto")
            if kt not in ("auto", "int", "str"):
                raise ValueError(f"cluster document: {where}.key_type must be auto, int or str, not {kt!r}")
            groups[gname] = GroupSpec(gname, tuple(specs), router, kt)
        raw_opts = doc.get("options", {})
        if not isinstance(raw_opts, Mapping):
            raise ValueError(f"cluster document: 'options' must be a table, not {type(raw_opts).__name__}")
        opts = dict(raw_opts)
        opts.update(kw)
        opts = check_options(opts)
        return cls(meta, shards, groups, base_dir=base_dir, **opts)

    # ------------------------------------------------------------- setup

    def init(self) -> None:
        """Create the metadata store, record each group's router and the shard
        map (unless already recorded), and set up every shard: ownership and
        change-capture tables, and capture triggers on every group table (they
        log nothing until a migration starts a capture).  Idempotent."""
        self.metadata.setup()
        with self.metadata.tx() as c:
            self.metadata.seed(c, self._seed_shards, {g.name: g.router for g in self.groups.values()})
        self._shard_map = None
        for sid in self.shard_ids():
            self.prepare_shard(sid)

    def prepare_shard(self, shard: str, *, create_from: str | None = None) -> None:
        """Set up one shard (system tables, triggers); with ``create_from``,
        first create the groups' tables like on that shard."""
        b = self.backend(shard)
        with b.writing() as c:
            b.lock_schema(c)
            b.ensure_system(c)
            for g in self.groups.values():
                for t in g.tables:
                    if not b.has_table(c, t.name):
                        if create_from is None:
                            continue
                        sb = self.backend(create_from)
                        from .coltypes import translate_ddl

                        # (between SQLite and PostgreSQL: each column's exact counterpart)
                        b.create_from(c, translate_ddl(sb, sb.conn(), t.name, b.kind))
                    cols, pk = b.table_info(c, t.name)
                    if t.key not in cols:
                        raise ValueError(f"table {t.name!r} on shard {shard!r} has no column {t.key!r} "
                                         f"(the shard key of group {g.name!r})")
                    b.install_triggers(c, g.name, t.name, pk, t.key)

    def import_from(self, url: str, group: str | None = None, **kw: Any) -> Any:
        """Load the group's tables from the unsharded database at ``url`` onto
        their owners (resumable, idempotent, verified): see
        :func:`shardhash.migrate.importer.import_from` for the keywords."""
        from .importer import import_from

        return import_from(self, url, group, **kw)

    # ------------------------------------------------------------ lookups

    def shard_map(self) -> dict[str, tuple[str, list[str]]]:
        """Logical shard id -> (primary URL, replica URLs), from the metadata store.

        Cached until :meth:`refresh` or :meth:`failover`.  Only a store that is
        not initialised yet (no shard map recorded: before :meth:`init`) gives
        the cluster file's seed map, with a log record, and that is not
        cached; any error reading the store reaches the caller, and nothing
        is cached from a failed read (a client must never fall back to a
        primary that a failover replaced)."""
        with self._lock:
            if self._shard_map is not None:
                return dict(self._shard_map)
        m = self.metadata.shard_map_or_none()  # (an error propagates: nothing cached)
        if m is None or not m:
            if not self._seed_logged:
                self._seed_logged = True
                log.warning("metadata store %r is not initialised (no shard map recorded): using the cluster "
                            "file's shard map until init() records one", self.metadata)
            return dict(self._seed_shards)
        with self._lock:
            self._shard_map = m
            return dict(m)

    def shard_ids(self) -> list[str]:
        """Every logical shard id of the shard map, sorted."""
        return sorted(self.shard_map())

    def backend(self, shard: str) -> ShardBackend:
        """The backend of a logical shard's current primary."""
        m = self.shard_map()
        if shard not in m:
            raise KeyError(f"unknown shard {shard!r} (shards: {', '.join(sorted(m))})")
        url = m[shard][0]
        with self._lock:
            b = self._backends.get(url)
            if b is None:
                b = open_backend(url, self.base_dir, synchronous=self.synchronous)
                if b.kind == "sqlite":  # (the tables its client guard watches: see SQLiteShard)
                    b.guard_tables = tuple((g.name, t.name, t.key) for g in self.groups.values()
                                           for t in g.tables)
                self._backends[url] = b
            return b

    def group(self, name: str | None = None) -> GroupSpec:
        """A table group by name (``None``: the only one)."""
        if name is None:
            if len(self.groups) != 1:
                raise ValueError(f"this cluster has {len(self.groups)} table groups: name one "
                                 f"({', '.join(sorted(self.groups))})")
            return next(iter(self.groups.values()))
        try:
            return self.groups[name]
        except KeyError:
            raise KeyError(f"unknown table group {name!r} (groups: {', '.join(sorted(self.groups))})") from None

    def router(self, group: str | None = None) -> Router:
        """The group's current router (cached; :meth:`refresh` reloads it)."""
        g = self.group(group)
        with self._lock:
            r = self._routers.get(g.name)
        if r is None:
            r = self._load_router(g.name)
        return r

    def _load_router(self, group: str) -> Router:
        t = self.metadata.topology(group)
        r = load_router(json.loads(t[1])) if t is not None else self.groups[group].router
        with self._lock:
            self._routers[group] = r
        return r

    def refresh(self, group: str | None = None) -> Router:
        """Reload the group's router and the shard map from the metadata store."""
        g = self.group(group)
        with self._lock:
            self._shard_map = None
        return self._load_router(g.name)

    def failover(self, shard: str, primary: str, replicas: Sequence[str] | None = None) -> None:
        """Point a logical shard at another primary (e.g. a promoted replica).

        Only the shard map changes: no router, no topology version and no
        key's owner.  Clients pick the new primary up on :meth:`refresh`."""
        m = self.shard_map()
        if shard not in m:
            raise KeyError(f"unknown shard {shard!r}")
        reps = list(m[shard][1]) if replicas is None else list(replicas)
        reps = [r for r in reps if r != primary]
        with self.metadata.tx() as c:
            self.metadata.set_shard(c, shard, primary, reps)
        with self._lock:
            self._shard_map = None

    # ------------------------------------------------------- ownership check

    def _shard_units(self, shard: str, b: ShardBackend, c: Any) -> _ShardUnits:
        ep = b.epoch(c)
        with self._lock:
            cached = self._units.get(shard)
        if cached is not None and cached.epoch == ep and ep >= 0:
            return cached
        per: dict[str, tuple[str, int, dict[int, tuple[Unit, str, str, int]]]] = {}
        for grp, mig, idx, role, state, version, unit in b.unit_rows(c):
            ud = json.loads(unit)
            u = Unit.from_dict(ud)
            entry = per.setdefault(mig, (grp, int(version), {}))
            entry[2][int(idx)] = (u, role, state, int(ud.get("from_version", int(version) - 1)))
        su = _ShardUnits(ep, captures=b.active_capture_groups(c) if per else set())
        for mig, (grp, version, units) in per.items():
            routers = self._mig_cache.get((shard, mig))
            if routers is None:
                docs = b.routers_of(c, mig)
                if docs is None:
                    continue
                routers = (load_router(json.loads(docs[0])), load_router(json.loads(docs[1])))
                self._mig_cache[(shard, mig)] = routers
            ordered = sorted(units.values(), key=lambda e: e[0].index)
            mem = Membership(routers[0], routers[1], [Unit.from_dict(dict(e[0].to_dict(), index=i))
                                                       for i, e in enumerate(ordered)])
            su.migs.append((grp, version, mem, dict(enumerate(ordered)), mig))
        su.migs.sort(key=lambda m: -m[1])  # newest version first: it decides
        with self._lock:
            self._units[shard] = su
        return su

    def _verdict(self, shard: str, b: ShardBackend, c: Any, group: str, key: Any,
                 version: int, write: bool = True) -> tuple[str, int, str]:
        """('ok' | 'wait' | 'stale', current version, owner) for ``key`` on ``shard``:
        the newest migration record whose units hold the key decides.  A
        write whose key no record holds, on a shard where the group has a
        change capture, tells the capture to skip it (nothing of it moves)."""
        su = self._shard_units(shard, b, c)
        v = self._verdict_of(su, shard, group, key, version, write)
        if v is None:
            if write and group in su.captures:
                b.skip_capture(c, group)
            return "ok", version, shard
        return v

    @staticmethod
    def _verdict_of(su: _ShardUnits, shard: str, group: str, key: Any, version: int,
                    write: bool) -> tuple[str, int, str] | None:
        for grp, v, mem, units, _mig in su.migs:
            if grp != group:
                continue
            i = mem.unit_of(key)
            if i < 0:
                continue
            u, role, state, v_from = units[i]
            if role == "source":
                if state == "copying":
                    # still the owner, for routers at the migration's start version or later
                    return ("ok" if version >= v_from else "stale"), v_from, shard
                if state == "frozen":
                    # still the owner: reads go on, writes wait for the cutover
                    return ("wait" if write else "ok"), v, u.destination
                return "stale", v, u.destination
            if state == "owned":
                # the owner, but only routers of this version or later may know it
                return ("ok" if version >= v else "stale"), v, shard
            if version >= v:
                return "wait", v, shard
            return "stale", v_from, u.source
        return None

    def _migration_of(self, shard: str, b: ShardBackend, c: Any, group: str, key: Any) -> str | None:
        """The migration whose record on ``shard`` decides ``key`` (for the
        structured log record of a stale-route retry), or None."""
        for grp, _v, mem, _units, mig in self._shard_units(shard, b, c).migs:
            if grp == group and mem.unit_of(key) >= 0:
                return mig
        return None

    @contextmanager
    def _open(self, key: Any, group: str | None, write: bool) -> Iterator[ShardTransaction]:
        g = self.group(group)
        attempt = 0
        while True:
            router = self.router(g.name)
            shard = router.route(key)
            b = self.backend(shard)
            c = b.conn()
            t_wait: float | None = None
            while True:
                if write:
                    b.begin_client_write(c, (g.name, key))
                else:
                    b.begin_read(c)
                try:
                    verdict, cur, owner = self._verdict(shard, b, c, g.name, key, router.version, write)
                except BaseException:
                    b.rollback(c)
                    raise
                if verdict != "wait":
                    break
                ep = b.epoch(c)
                mig = self._migration_of(shard, b, c, g.name, key) if owner != shard else None
                b.rollback(c)
                if t_wait is None:
                    t_wait = time.perf_counter()
                # (a frozen source unit: the freeze's deadline, read once per epoch)
                fence = b.fence_of(c, mig) if mig is not None else None
                fw = _FenceWait(None if mig is None or fence is None else (mig, fence))
                # Wait for the shard's ownership records to change (a cheap
                # read that takes no lock), then check again.
                while b.epoch(c) == ep:
                    waited = time.perf_counter() - t_wait
                    if fw.due() and fw.fence is not None:
                        # Past the freeze's deadline: the executor may be gone.
                        try:
                            self._break_fence(g.name, shard, b, fw.fence[0], fw.fence[1][0])
                            break
                        except Exception as e:
                            fw.failed(e)
                    if waited > self.wait_timeout:
                        raise fw.timeout(key, shard, waited)
                    time.sleep(0.001)
            if t_wait is not None:
                self.metrics.add_pause(time.perf_counter() - t_wait)
            if verdict == "stale":
                mig = self._migration_of(shard, b, c, g.name, key)
                b.rollback(c)
                err = StaleRouteError(key, shard, router.version, cur, owner)
                _events.emit("stale_route_retry", shard=shard, group=g.name, shard_key=key,
                             topology_version=router.version, current_version=cur, retry_reason=str(err),
                             retried=attempt < self.retries, migration_id=mig)
                if attempt >= self.retries:
                    self.metrics.stale(False)
                    raise err
                self.metrics.stale(True)
                attempt += 1
                self.refresh(g.name)
                continue
            break
        tx = ShardTransaction(c, shard, router.version, b, g.name if write else None, key)
        _events.emit("route", shard=shard, keys=1, group=g.name, shard_key=key, topology_version=router.version)
        t0 = time.perf_counter()
        try:
            yield tx
            if tx.violation is not None:
                raise tx.violation
            if write:
                b.end_skip(c, g.name)
                self._check_guard(b.end_guard(c), g.name, key)
        except BaseException as e:
            b.rollback(c)
            _events.emit("shard_op", shard=shard, op="write" if write else "read",
                         seconds=time.perf_counter() - t0, ok=False)
            if write and not isinstance(e, ShardKeyError):
                tx._guard(e)  # (a statement refused by the guard, run through tx.conn)
            raise
        b.commit(c)
        _events.emit("shard_op", shard=shard, op="write" if write else "read",
                     seconds=time.perf_counter() - t0, ok=True)

    def _fence_for_wait(self, shard: str, group: str, key: Any, owner: str | None) -> tuple[str, Any] | None:
        """For a writer told to wait on ``shard`` (the asyncio client, on a
        worker thread): ``(migration, (attempt, deadline))`` of the freeze
        that holds ``key`` there, read on a connection of its own (closed
        after); None when ``shard`` owns the key or no fence is recorded."""
        if owner == shard:
            return None
        b = self.backend(shard)
        c = b.connect()
        try:
            b.begin_read(c)
            try:
                mig = self._migration_of(shard, b, c, group, key)
                fence = b.fence_of(c, mig) if mig is not None else None
            finally:
                b.rollback(c)
        finally:
            c.close()
        return None if mig is None or fence is None else (mig, fence)

    def _break_fence_off_loop(self, group: str, shard: str, mig: str, attempt: int) -> None:
        """:meth:`_break_fence` on a worker thread of the asyncio client; the
        connections it opened on that thread (the metadata store's, the
        shards') are closed after, so that waits do not pile up connections."""
        try:
            self._break_fence(group, shard, self.backend(shard), mig, attempt)
        finally:
            self.metadata.close()
            with self._lock:
                backends = list(self._backends.values())
            for b in backends:
                b.close()

    def _break_fence(self, group: str, shard: str, b: ShardBackend, mig: str, attempt: int) -> None:
        """A writer found ``mig``'s units on source ``shard`` frozen past the
        deadline of fence attempt ``attempt``.  The metadata store decides
        (:meth:`Metadata.break_fence`, one transaction that excludes the
        cutover's commit): if the cutover committed, this writer brings the
        records in line -- the destinations' units ``owned``, this source's
        ``moved`` -- so that the write is refused here (StaleRouteError) and
        lands on the owner; if not, the attempt is aborted and this source's
        units are unfrozen (unless a newer attempt froze them since), so the
        write goes on here.  Either way the ownership epoch changes."""
        outcome = self.metadata.break_fence(mig, attempt)
        _events.emit("fence_break", shard=shard, group=group, migration_id=mig, attempt=attempt, outcome=outcome)
        if outcome == "committed":
            dests = {e[0].destination for _g, _v, _mem, units, m in self._shard_units(shard, b, b.conn()).migs
                     if m == mig for e in units.values() if e[1] == "source"}
            for d in sorted(dests):
                bd = self.backend(d)
                with bd.writing() as c:
                    bd.set_unit_state(c, mig, "destination", ("importing",), "owned")
                    bd.bump_epoch(c)
            with b.writing() as c:
                b.set_unit_state(c, mig, "source", ("copying", "frozen"), "moved")
                b.bump_epoch(c)
            return
        with b.writing() as c:
            b.lock_fence(c, mig)  # (serialised with a newer freeze: see ShardBackend.lock_fence)
            f = b.fence_of(c, mig)
            if f is not None and f[0] == attempt:
                b.set_unit_state(c, mig, "source", ("frozen",), "copying")
                b.bump_epoch(c)

    @staticmethod
    def _check_guard(touched: Sequence[tuple[str, str, Any]], group: str, key: Any) -> None:
        """ShardKeyError for the first row the guard recorded that is not of
        ``key`` (same value and kind: an int key is not its decimal string)
        in a table of ``group``."""
        for grp, table, k in touched:
            if grp != group or type(k) is not type(key) or k != key:
                raise ShardKeyError(table, k, key, group, grp)

    def transaction(self, key: Any, *, group: str | None = None) -> Any:
        """A write transaction on the shard that owns ``key`` (context manager
        yielding a :class:`ShardTransaction`; commits on success)."""
        return self._open(key, group, True)

    def read(self, key: Any, *, group: str | None = None) -> Any:
        """A read transaction on the shard that owns ``key`` (same checks)."""
        return self._open(key, group, False)

    def atransaction(self, key: Any, *, group: str | None = None) -> Any:
        """:meth:`transaction` for asyncio: ``async with cluster.atransaction(key) as tx``
        (:mod:`shardhash.migrate.aclient`)."""
        from .aclient import client_of

        return client_of(self).open(key, group, True)

    def aread(self, key: Any, *, group: str | None = None) -> Any:
        """:meth:`read` for asyncio: ``async with cluster.aread(key) as tx``."""
        from .aclient import client_of

        return client_of(self).open(key, group, False)

    async def aclose(self) -> None:
        """Close the asyncio client's connection pools of the running event loop."""
        from .aclient import client_of

        await client_of(self).close()

    def close(self) -> None:
        """Close this thread's connections."""
        with self._lock:
            backends = list(self._backends.values())
        for b in backends:
            b.close()
        self.metadata.close()
