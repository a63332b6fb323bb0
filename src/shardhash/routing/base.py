"""The router base: the document, the registry, shared validators, ``Router``
(with the planning hooks every strategy may fill in), ``RawKeyRouter`` for
routers that place raw keys, and ``WrappingRouter`` for routers that place
keys through another router.

This is the only module that imports the compiled core (``shardhash.routing._kernels``);
the strategy modules and ``shardhash.compat`` take what they need from here.
"""

from __future__ import annotations

import contextvars
import hashlib
import importlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, NoReturn, TypeVar

import numpy as np

from shardhash import _limits
from shardhash._hashing import Hasher
from shardhash.routing._kernels import (
    ReplicaZones,
    RouterCore,
    _unmasked,
    as_hashes,
    bounded_assign,
    bounded_capacity,
    fill_out,
    jump_hash,
    jump_hash_array,
    maglev_populate,
    mix64,
    prepare_out,
    replicas_hashes,
    replicas_keys,
    unalias,
)

# What this module passes on from the compiled core (which no other module
# imports) and from shardhash._hashing.  Its own public names are exported by
# shardhash.routing (the package's __all__); the other routing and compat
# modules import the rest of its names from here directly.
__all__ = [
    "RouterCore",
    "Hasher",
    "jump_hash",
    "jump_hash_array",
    "maglev_populate",
    "mix64",
    "prepare_out",
    "fill_out",
    "as_hashes",
    "unalias",
    "_unmasked",
    "bounded_assign",
    "bounded_capacity",
]

ROUTER_FORMAT = "shardhash.router/1"
U64_MAX = (1 << 64) - 1
_TOP_FIELDS = ("format", "type", "version", "shards", "hasher", "key_prefix", "key_type", "zones", "params",
               "fingerprint")
_REQUIRED_TOP = ("format", "type", "version", "shards", "hasher", "params")
_32BIT_ALGOS = frozenset({"xxh32", "murmur3_32", "fnv1a_32"})

_REGISTRY: dict[str, type[Router]] = {}


# ---------------------------------------------------------------------------
# validation helpers


def _describe(v: Any) -> str:
    try:
        r = repr(v)
    except RecursionError:  # a deeply nested list: name its type only
        return f"a deeply nested {type(v).__name__}"
    return r if len(r) <= 60 else r[:57] + "..."


def _check_shard_id(s: Any, where: str) -> str:
    if not isinstance(s, str):
        raise TypeError(f"{where}: shard ids must be str, got {_describe(s)} (type {type(s).__name__})")
    if not s:
        raise ValueError(f"{where}: shard ids must be non-empty strings")
    return s


def _check_shards(shards: Any) -> tuple[str, ...]:
    if isinstance(shards, (str, bytes)) or not isinstance(shards, Iterable):
        raise TypeError(f"shards must be a sequence of shard id strings, not {type(shards).__name__}")
    out = tuple(shards)
    if not out:
        raise ValueError("shards must not be empty")
    seen: dict[str, int] = {}
    for i, s in enumerate(out):
        _check_shard_id(s, f"shards[{i}]")
        if s in seen:
            raise ValueError(f"duplicate shard id {s!r} at shards[{seen[s]}] and shards[{i}]")
        seen[s] = i
    if len(out) > 0x7FFFFFFF:
        raise ValueError("too many shards")
    return out


def _check_hasher(hasher: Any) -> Hasher:
    if hasher is None:
        return Hasher()
    if not isinstance(hasher, Hasher):
        raise TypeError(f"hasher must be a shardhash.Hasher, not {type(hasher).__name__}")
    return hasher


def _check_int(v: Any, name: str, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {_describe(v)} (type {type(v).__name__})")
    n: int = int(v)
    if lo is not None and n < lo:
        raise ValueError(f"{name} must be >= {lo}, got {n}")
    if hi is not None and n > hi:
        raise ValueError(f"{name} must be <= {hi}, got {n}")
    return n


def _check_weights(weights: Any, shards: tuple[str, ...]) -> dict[str, float] | None:
    """Validate a shard id -> positive finite weight mapping; missing ids weigh 1."""
    if weights is None:
        return None
    if not isinstance(weights, Mapping):
        raise TypeError(f"weights must be a mapping shard id -> weight, not {type(weights).__name__}")
    known = set(shards)
    out: dict[str, float] = {}
    for k, w in weights.items():
        if k not in known:
            raise ValueError(f"weights names unknown shard {k!r}")
        if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)):
            raise TypeError(f"weight of shard {k!r} must be a number, got {_describe(w)}")
        wf = float(w)
        if not math.isfinite(wf) or wf <= 0:
            raise ValueError(f"weight of shard {k!r} must be positive and finite, got {w!r}")
        out[k] = wf
    return {s: out[s] for s in shards if s in out}


def _check_zones(zones: Any, shards: tuple[str, ...]) -> dict[str, str] | None:
    """Validate a shard id -> zone name mapping naming every shard; the
    result is in shard order.  None stays None."""
    if zones is None:
        return None
    if not isinstance(zones, Mapping):
        raise TypeError(f"zones must be a mapping shard id -> zone name, not {type(zones).__name__}")
    known = set(shards)
    for k in zones:
        if k not in known:
            raise ValueError(f"zones names unknown shard {_describe(k)}")
    out: dict[str, str] = {}
    for i, s in enumerate(shards):
        if s not in zones:
            raise ValueError(f"zones gives no zone for shards[{i}] = {s!r} (every shard needs one)")
        z = zones[s]
        if not isinstance(z, str) or not z:
            raise TypeError(f"zone of shard {s!r} must be a non-empty str, got {_describe(z)}")
        out[s] = z
    return out


def _zone_numbers(zones: Mapping[str, str], shards: tuple[str, ...]) -> ReplicaZones:
    """Zones numbered by first appearance in shard order (the numbering does
    not change any list: only equality of zones matters)."""
    num: dict[str, int] = {}
    return ReplicaZones([num.setdefault(zones[s], len(num)) for s in shards])


def _weights_doc(weights: dict[str, float] | None) -> dict[str, float] | None:
    return dict(weights) if weights else None


def _identity_hash(hasher: Hasher, ident: str) -> int:
    """The hash of a shard's or a token's identity string (docs/routers.md)."""
    return int(hasher(ident))


def hash_bits(hasher: Hasher) -> int:
    """How many bits the hasher's hashes have: 32 for a 32-bit algorithm
    (its hashes are below 2**32), else 64.

    >>> hash_bits(Hasher("xxh32")), hash_bits(Hasher())
    (32, 64)
    """
    return 32 if hasher.algorithm in _32BIT_ALGOS else 64


_width = hash_bits


def _default_weights(weights: Mapping[str, float] | None) -> dict[str, float] | None:
    """Weights without the entries of weight 1 (the default), so documents
    built by planners stay canonical; None when nothing is left."""
    if weights is None:
        return None
    return {s: w for s, w in weights.items() if w != 1.0} or None


def no_weights(router: Router) -> ValueError:
    """The error of ``with_weights`` for a strategy that has no weights."""
    return ValueError(f"{type(router).__name__} has no weights; use buckets, a ring, rendezvous or Maglev")


def _route_each(route: Callable[[Any], int], keys: Any, out: np.ndarray | None, what: str,
                errors: tuple[type[Exception], ...]) -> np.ndarray:
    """``route(key)`` of each key of an iterable ``keys`` (not str/bytes) into
    ``out``: the Python path of a raw-key router's ``route_many``.  An error
    of the kinds ``errors`` (TypeError or ValueError) is raised again of its
    kind with the key's position (``keys[i]: ...``)."""
    if not isinstance(keys, Iterable) or isinstance(keys, (str, bytes)):
        raise TypeError(f"keys must be an iterable of {what}, not {type(keys).__name__}")
    items = list(keys)
    o = prepare_out(out, len(items))
    for i, key in enumerate(items):
        try:
            o[i] = route(key)
        except errors as e:
            raise (TypeError if isinstance(e, TypeError) else ValueError)(f"keys[{i}]: {e}") from None
    return o


def _merge_ranges(ranges: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Drop empty ``(lo, hi, owner)`` intervals and merge adjacent ones of one owner."""
    out: list[tuple[int, int, int]] = []
    for lo, hi, s in ranges:
        if lo > hi:
            continue
        if out and out[-1][2] == s and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, s)
        else:
            out.append((lo, hi, s))
    return out


def _canonical(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def _owners_of(owner_ids: Sequence[Any], what: str) -> tuple[tuple[str, ...], list[int]]:
    """Per-range owner ids -> (unique shard tuple in first-appearance order, indices)."""
    shards: list[str] = []
    pos: dict[str, int] = {}
    idx = []
    for i, s in enumerate(owner_ids):
        _check_shard_id(s, f"{what}[{i}]")
        if s not in pos:
            pos[s] = len(shards)
            shards.append(s)
        idx.append(pos[s])
    return tuple(shards), idx


# ---------------------------------------------------------------------------
# registry and documents


def register_router_type(name: str, cls: type[Router] | None = None) -> Any:
    """Register ``cls`` as the class that ``load_router`` uses for documents of
    type ``name``.  Usable as a decorator: ``@register_router_type("ring")``.
    """
    if not isinstance(name, str) or not name:
        raise TypeError("router type name must be a non-empty str")

    def deco(c: type[Router]) -> type[Router]:
        if not (isinstance(c, type) and issubclass(c, Router)):
            raise TypeError(f"{c!r} is not a Router subclass")
        old = _REGISTRY.get(name)
        if old is not None and old is not c and old.__qualname__ != c.__qualname__:
            raise ValueError(f"router type {name!r} is already registered to {old.__qualname__}")
        _REGISTRY[name] = c
        c.type_name = name
        return c

    return deco(cls) if cls is not None else deco


# Router types defined in shardhash.compat: load_router imports their module
# on first use, so a fresh process rebuilds them from a document alone.
_COMPAT_MODULES = {
    "postgres_hash_partition": "shardhash.compat.postgres",
    "citus": "shardhash.compat.citus",
    "cassandra_token": "shardhash.compat.cassandra",
    "cassandra_random": "shardhash.compat.cassandra",
    "ketama": "shardhash.compat.ketama",
    "vitess": "shardhash.compat.vitess",
    "mongo_hashed": "shardhash.compat.mongo",
    "redis_cluster": "shardhash.compat.redis",
    "uhashring": "shardhash.compat.uhashring",
}


def _registered(name: str) -> type[Router] | None:
    """The class registered for ``name``, importing its compat module if needed."""
    cls = _REGISTRY.get(name)
    if cls is None and name in _COMPAT_MODULES:
        importlib.import_module(_COMPAT_MODULES[name])
        cls = _REGISTRY.get(name)
    return cls


def router_types() -> dict[str, type[Router]]:
    """The registered router document types."""
    return dict(_REGISTRY)


def router_type_names() -> list[str]:
    """Every document type ``load_router`` knows: the registered ones and
    those of ``shardhash.compat``, whose modules load on first use."""
    return sorted(set(_REGISTRY) | set(_COMPAT_MODULES))


def router_type(name: str) -> type[Router] | None:
    """The class of document type ``name`` (importing its ``shardhash.compat``
    module on first use), or None."""
    return _registered(name)


def _read_doc(src: Any) -> dict[str, Any]:
    if isinstance(src, Mapping):
        _limits.check_depth(src)
        return dict(src)
    if isinstance(src, (bytes, bytearray)):
        src = bytes(src).decode("utf-8")
    if isinstance(src, str) and src.lstrip().startswith("{"):
        doc = _limits.loads(src)
    elif isinstance(src, (str, os.PathLike)):
        try:
            text = Path(src).read_text(encoding="utf-8")
        except OSError as e:
            raise ValueError(f"cannot read router document {str(src)!r}: {e}") from None
        doc = _limits.loads(text, f"router document {str(src)!r}")
    else:
        raise TypeError(f"load_router takes a dict, JSON text or a path, not {type(src).__name__}")
    if not isinstance(doc, dict):
        raise ValueError(f"a router document is a JSON object, got {type(doc).__name__}")
    return doc


def load_router(src: Mapping[str, Any] | str | bytes | os.PathLike[str]) -> Router:
    """Rebuild a router from its document (dict, JSON text, or a path to a JSON file).

    The document is checked strictly: unknown fields, another format version
    or a fingerprint that does not match are ValueErrors.

    >>> from shardhash import RingRouter, load_router
    >>> r = RingRouter(["a", "b"], vnodes=8)
    >>> load_router(r.to_dict()).fingerprint == r.fingerprint
    True
    """
    doc = _read_doc(src)
    with _limits.document_budget():  # docs/protocol.md: what loading may cost
        return _from_doc(doc)


def as_int64(values: Any, what: str) -> np.ndarray:
    """``values`` (an array or sequence of ints) as a 1-D int64 array, checked
    rather than cast: a cast wraps a uint64 beyond 2**63 - 1 into a negative
    value (and, under NumPy 1.x, a list mixing negative values with values
    beyond 2**63 - 1) and truncates floats, which would route another value
    without a word.  Errors name ``what`` and the offending position.  The
    result may be the caller's array itself (pass it through
    ``kernel_array`` before a kernel reads it)."""
    arr: np.ndarray | None = values if isinstance(values, np.ndarray) else None
    if arr is None:
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise TypeError(f"{what} must be a sequence of int64 values, not {type(values).__name__}")
        try:
            arr = np.asarray(values)
        except (OverflowError, ValueError, TypeError):
            arr = None
        if arr is None or arr.dtype.kind not in "iu":
            arr = np.empty(len(values), dtype=object)  # name the offending position below
            arr[:] = list(values)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind == "O":
        for i, v in enumerate(arr.tolist()):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{what}[{i}] = {v!r:.60} is not an integer (type {type(v).__name__})")
            if not -(2**63) <= int(v) < 2**63:
                raise ValueError(f"{what}[{i}] = {int(v)} is outside the int64 range")
        return np.array(arr.tolist(), dtype=np.int64)
    if kind not in "iu":
        raise TypeError(f"{what} must hold int64 values, got dtype {arr.dtype}")
    if kind == "u" and arr.dtype.itemsize == 8 and arr.size and int(arr.max()) >= 2**63:
        i = int(np.flatnonzero(arr >= np.uint64(2**63))[0])
        raise ValueError(f"{what}[{i}] = {int(arr[i])} is outside the int64 range")
    return arr.astype(np.int64, copy=False)


class _Loading:
    """The router of class ``cls`` that ``_from_doc`` is building (set by its
    constructor's ``_finish``), still open for the document's zones."""

    __slots__ = ("cls", "router")

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.router: Router | None = None


_LOADING: contextvars.ContextVar[_Loading | None] = contextvars.ContextVar("shardhash_loading", default=None)


def _from_doc(doc: Mapping[str, Any], where: str = "router document") -> Router:
    if not isinstance(doc, Mapping):
        raise TypeError(f"{where} must be a JSON object, not {type(doc).__name__}")
    unknown = sorted(set(doc) - set(_TOP_FIELDS))
    if unknown:
        raise ValueError(f"{where} has unknown field(s): {', '.join(map(repr, unknown))}")
    missing = [k for k in _REQUIRED_TOP if k not in doc]
    if missing:
        raise ValueError(f"{where} lacks field(s): {', '.join(map(repr, missing))}")
    if doc["format"] != ROUTER_FORMAT:
        raise ValueError(f"{where}: unsupported format {doc['format']!r} (expected {ROUTER_FORMAT!r})")
    typ = doc["type"]
    cls = _registered(typ) if isinstance(typ, str) else None
    if cls is None:
        known = ", ".join(sorted(set(_REGISTRY) | set(_COMPAT_MODULES)))
        raise ValueError(f"{where}: unknown router type {typ!r} (known: {known})")
    params = doc["params"]
    if not isinstance(params, Mapping):
        raise ValueError(f"{where}: 'params' must be an object")
    unknown = sorted(set(params) - set(cls._doc_fields))
    if unknown:
        raise ValueError(f"{where}: {typ} params have unknown field(s): {', '.join(map(repr, unknown))}")
    if not isinstance(doc["hasher"], Mapping):
        raise ValueError(f"{where}: 'hasher' must be an object")
    try:
        hasher = Hasher.from_dict(dict(doc["hasher"]))
    except OverflowError as e:  # e.g. a seed beyond the algorithm's bits
        raise ValueError(f"{where}: 'hasher': {e}") from None
    shards = doc["shards"]
    if not isinstance(shards, list):
        raise ValueError(f"{where}: 'shards' must be a list")
    # The router the document describes is sealed once its document-level
    # fields (zones) are set on it, below: see Router._finish.
    loading = _Loading(cls)
    token = _LOADING.set(loading)
    try:
        router = cls._from_params(dict(params), shards=tuple(shards), hasher=hasher,
                                  version=doc["version"], key_prefix=doc.get("key_prefix"))
    except KeyError as e:
        raise ValueError(f"{where}: {typ} params lack field {e.args[0]!r}") from None
    except OverflowError as e:  # a number in the document outside what its field takes
        raise ValueError(f"{where}: {typ} params: {e}") from None
    finally:
        _LOADING.reset(token)
    if loading.router is not None and loading.router is not router:
        loading.router._seal()  # not the router _from_params returned: nothing more to set on it
    if list(router.shards) != list(shards):
        raise ValueError(f"{where}: 'shards' {shards!r} does not match the routing parameters "
                         f"(which give {list(router.shards)!r})")
    if "key_type" in doc:
        from shardhash._keytypes import key_type_from_doc

        try:
            kt = key_type_from_doc(doc["key_type"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        router._set("_key_type", kt)
        router._set("_fp", None)
    if "zones" in doc:
        try:
            zones = _check_zones(doc["zones"], router.shards)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        if zones is None:
            raise ValueError(f"{where}: 'zones' must be an object, not null (leave the field out)")
        router._set_zones(zones)
    if loading.router is router:
        router._seal()
    fp = doc.get("fingerprint")
    if fp is not None and fp != router.fingerprint:
        raise ValueError(f"{where}: fingerprint mismatch: document says {fp!r}, "
                         f"its content hashes to {router.fingerprint!r}")
    return router


# ---------------------------------------------------------------------------
# the base class


class Router(RouterCore):
    """Base class of every router (see ``help(shardhash.routing)`` for the
    protocol and the subclass contract).

    Parameters shared by every hash router's constructor:

    * ``shards`` -- the logical shard ids (non-empty, distinct strings), in
      index order: ``route_index`` and ``route_many`` give positions in it.
    * ``hasher`` -- the :class:`shardhash.Hasher` that turns keys into 64-bit
      hashes (default ``Hasher()``: xxh3_64, seed 0, the default codec).
    * ``version`` -- an int in ``[0, 2**63 - 1]`` chosen by whoever publishes
      the topology (default 1); planners give the next topology
      ``version + 1`` (so the successor of ``2**63 - 1`` is refused).
    * ``key_prefix`` -- route tuple keys on their first ``key_prefix`` parts
      only (default None: the whole key).
    """

    _version: int
    _fp: str | None

    type_name: ClassVar[str] = ""
    _doc_fields: ClassVar[tuple[str, ...]] = ()
    _key_type: str | tuple[str, ...] | None = None
    _zones: dict[str, str] | None = None
    _zone_map: ReplicaZones | None = None

    def __init__(self, shards: Iterable[str], *, hasher: Hasher | None = None, version: int = 1,
                 key_prefix: int | None = None) -> None:
        shards_t = _check_shards(shards)
        hasher = _check_hasher(hasher)
        # (a signed 64-bit integer: metadata stores keep it in a BIGINT column;
        # a successor of the largest is refused here, not by a database later)
        self._set("_version", _check_int(version, "version", 0, (1 << 63) - 1))
        if key_prefix is not None:
            key_prefix = _check_int(key_prefix, "key_prefix", 1, 1 << 20)
        self._core_init(shards_t, hasher, key_prefix or 0)
        self._set("_fp", None)

    # -- immutability ---------------------------------------------------------

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _set_frozen(self, **arrays: np.ndarray) -> None:
        """Set each array attribute, made read-only first (a router's tables never change)."""
        for name, a in arrays.items():
            a.setflags(write=False)
            self._set(name, a)

    def __getattr__(self, name: str) -> Any:
        # Only reached when an attribute is missing: on a router whose
        # __init__ never ran (a subclass that skipped Router.__init__, or
        # cls.__new__(cls)) that is a TypeError naming the cause.
        if RouterCore.hasher.__get__(self) is None and not name.startswith("__"):
            raise TypeError(f"{type(self).__name__} was never initialised "
                            "(its __init__ must call Router.__init__)")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable (cannot delete {name!r})")

    def _finish(self) -> None:
        # The end of every constructor.  A router _from_doc is loading stays
        # open until the document's zones are set on it (a sealed router's
        # zones cannot change): _from_doc seals it.  Its constructor's
        # _finish is the last of its class to run while _from_params builds
        # it, so a router of the same class built on the way is sealed here.
        loading = _LOADING.get()
        if loading is not None and type(self) is loading.cls:
            earlier, loading.router = loading.router, self
            if earlier is not None:
                earlier._seal()
            return
        self._seal()

    # -- protocol --------------------------------------------------------------

    @property
    def version(self) -> int:
        """Topology version (an int chosen by the publisher)."""
        return self._version

    @property
    def routes_on_hash(self) -> bool:
        """True when the router places a key by its hasher's 64-bit hash alone:
        ``route_many(keys) == route_hashes(hasher.hash_array(keys))`` for every
        input.  False for routers on raw keys (RangeRouter, WatermarkRouter),
        for routers on a key prefix, and for subclasses that override
        ``route_many`` (they may route on something else); such subclasses
        that do route on the hash can say so with a class attribute
        ``routes_on_hash = True``.  Planners use it to hash keys only once.

        >>> JumpRouter(["a", "b"]).routes_on_hash
        True
        >>> RangeRouter([10], ["a", "b"]).routes_on_hash
        False
        """
        if self.key_prefix is not None:
            return False
        return type(self).route_many is _CORE_ROUTE_MANY

    @property
    def key_type(self) -> str | tuple[str, ...] | None:
        """The declared key type (``"int"``, ``"str"``, ``"bytes"``, ``"uuid"``
        or a tuple of those), or ``None`` when the document declares none.

        It tells file readers (the command line) how to parse ids; the
        Python API hashes whatever keys it is given, as before.

        >>> JumpRouter(["a", "b"]).with_key_type("int").key_type
        'int'
        """
        return self._key_type

    def with_key_type(self, key_type: Any) -> Router:
        """The same routing with a declared key type (``None`` removes it);
        the document gains a ``key_type`` field (docs/protocol.md).

        >>> JumpRouter(["a"]).with_key_type(["str", "int"]).to_dict()["key_type"]
        {'format': 'shardhash.keytype/1', 'type': ['str', 'int']}
        """
        from shardhash._keytypes import key_type_to_doc, parse_key_type

        doc = self._body()
        doc.pop("key_type", None)
        if key_type is not None:
            doc["key_type"] = key_type_to_doc(parse_key_type(key_type))
        return _from_doc(doc)

    @property
    def fingerprint(self) -> str:
        """sha256 hex digest of the canonical JSON of ``to_dict()`` minus ``fingerprint``."""
        fp = self._fp
        if fp is None:
            fp = hashlib.sha256(_canonical(self._body())).hexdigest()
            self._set("_fp", fp)
        return fp

    def _doc_params(self) -> dict[str, Any]:
        return {}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        return cls(shards, hasher=hasher, version=version, key_prefix=key_prefix)

    def _body(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "format": ROUTER_FORMAT,
            "type": self.type_name,
            "version": self.version,
            "shards": list(self.shards),
            "hasher": self.hasher.to_dict(),
            "params": self._doc_params(),
        }
        if self.key_prefix is not None:
            doc["key_prefix"] = self.key_prefix
        if self._key_type is not None:
            from shardhash._keytypes import key_type_to_doc

            doc["key_type"] = key_type_to_doc(self._key_type)
        if self._zones is not None:
            doc["zones"] = dict(self._zones)
        return doc

    def to_dict(self) -> dict[str, Any]:
        """The router's document (JSON-able; see docs/routers.md)."""
        doc = self._body()
        doc["fingerprint"] = self.fingerprint
        return doc

    def to_json(self, *, indent: int | None = None) -> str:
        """The document as JSON text (keys sorted)."""
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent, ensure_ascii=False)

    def with_version(self, version: int) -> Router:
        """The same routing under another version number."""
        doc = self._body()
        doc["version"] = version
        return _from_doc(doc)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Router):
            return NotImplemented
        return type(self) is type(other) and self.fingerprint == other.fingerprint

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __reduce__(self) -> tuple[Callable[..., Router], tuple[dict[str, Any]]]:
        return (load_router, (self.to_dict(),))

    def __dask_tokenize__(self) -> tuple[str, str]:
        # Dask names tasks by their arguments' tokens: a router is its fingerprint.
        return ("shardhash.router", self.fingerprint)

    # -- replica (preference) lists ---------------------------------------------
    # docs/routers.md, section 2.17.  A strategy only declares its rule; the
    # compiled core reads the list from the kernel the router configured.

    #: The strategy's replica rule: ``"ring"`` (tokens met clockwise),
    #: ``"score"`` (highest scores first), ``"probe"`` (nearest tokens to the
    #: probes first), ``"rehash"`` (the routes of a
    #: fixed sequence of rehashes), ``"base"`` (the base router's lists), or
    #: None: the router has no replica lists and the ``route_replicas*``
    #: methods raise TypeError.
    replica_rule: ClassVar[str | None] = None

    @property
    def zones(self) -> dict[str, str] | None:
        """The failure domain (zone name) of every shard, in shard order, or
        None.  With zones, replica lists put no two replicas in one zone
        while ``n`` is at most the number of zones (docs/routers.md 2.17)."""
        return dict(self._zones) if self._zones is not None else None

    def with_zones(self, zones: Mapping[str, str] | None) -> Router:
        """The same routing with a zone for every shard (``None`` removes
        them); the document gains a top-level ``zones`` field.  Routes do not
        change, replica lists do.

        >>> r = JumpRouter(["a", "b", "c"]).with_zones({"a": "z1", "b": "z1", "c": "z2"})
        >>> r.to_dict()["zones"]
        {'a': 'z1', 'b': 'z1', 'c': 'z2'}
        """
        checked = _check_zones(zones, self.shards)
        doc = self._body()
        doc.pop("zones", None)
        if checked is not None:
            doc["zones"] = checked
        return _from_doc(doc)

    def _set_zones(self, zones: dict[str, str] | None) -> None:
        zmap = None if zones is None else _zone_numbers(zones, self.shards)
        self._set_replica_zones(zmap)  # first: a sealed router refuses before anything changes
        self._set("_zones", zones)
        self._set("_zone_map", zmap)
        self._set("_fp", None)

    def _replica_refused(self) -> TypeError:
        return TypeError(f"{type(self).__name__} has no replica lists: they are defined for "
                         "ring, hash_range, bounded, rendezvous, multiprobe, jump, memento, modulo, bucket and "
                         "Maglev routers "
                         "(docs/routers.md, section 2.17)")

    def _zones_for_call(self, zones: Mapping[str, str]) -> ReplicaZones:
        checked = _check_zones(zones, self.shards)
        assert checked is not None
        return _zone_numbers(checked, self.shards)

    def _replica_setup(self, zones: Mapping[str, str] | None) -> ReplicaZones | None:
        if self.replica_rule is None:
            raise self._replica_refused()
        return self._zone_map if zones is None else self._zones_for_call(zones)

    # route_replicas(key, n, *, zones=None) and route_replicas_hash(h, n, *,
    # zones=None) are RouterCore's (compiled: one key costs about one route).

    def route_replicas_many(self, keys: Any, n: int, *, zones: Mapping[str, str] | None = None,
                            out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Replica lists of many keys: an int32 array of shape ``(len(keys), n)``
        whose row *i* is ``route_replicas`` of key *i* as shard indices (column
        0 is ``route_many(keys)``).  ``out`` (C-contiguous int32 of that shape)
        and ``threads`` as for ``route_many``."""
        z = self._replica_setup(zones)
        return replicas_keys(self, keys, n, z, out, threads)

    def route_replicas_hashes(self, hashes: Any, n: int, *, zones: Mapping[str, str] | None = None,
                              out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Replica lists of precomputed uint64 hashes (shape ``(len(hashes), n)``)."""
        z = self._replica_setup(zones)
        return replicas_hashes(self, hashes, n, z, out, threads)

    # -- planning hooks ----------------------------------------------------------
    # A strategy fills in what applies to it; shardhash.plan and the command
    # line only call these (docs/routers.md, "How a strategy owns its planning").

    #: What ``topology show`` and ``route --explain`` call one entry of
    #: ``bucket_table()`` ("bucket", or "slot" for Maglev).
    table_unit: ClassVar[str] = "bucket"
    #: True when two routers of this type whose tables have one size number
    #: their buckets alike, so that a moved entry is a bucket to copy (False
    #: for modulo, whose table is only the residues mod the shard count).
    table_buckets: ClassVar[bool] = True
    #: What ``route --explain`` calls the interval of ``hash_ranges()`` a hash is in.
    range_label: ClassVar[str] = "hash range"

    def bucket_table(self) -> np.ndarray | None:
        """Shard index (int64) of each bucket, for a router that places a key
        by ``table[hash % len(table)]``; None for the others (the default)."""
        return None

    def hash_ranges(self) -> list[tuple[int, int, int]] | None:
        """Sorted ``(lo, hi, shard index)`` inclusive intervals of the 64-bit
        space, from ``owned_ranges()`` when the router has that method; else None."""
        fn = getattr(self, "owned_ranges", None)
        if fn is None:
            return None
        return sorted((int(lo), int(hi), int(s)) for lo, hi, s in fn())

    def target_weights(self, space: int) -> np.ndarray | None:
        """The load each shard is meant to carry when the strategy's structure
        (a placement table, hash ranges) says it and the router has no
        ``weights``: one number per shard, any scale.  ``space`` is how many
        hash values the hasher gives (2**32 or 2**64).  None (the default):
        equal shares."""
        return None

    def expected_moves(self, new: Router) -> dict[tuple[int, int], float] | None:
        """For a strategy without interval or table structure that knows it in
        closed form (jump hash): the expected share of the hash space moving
        from shard index ``i`` of this router to shard index ``j`` of ``new``,
        as ``{(i, j): share}``.  None (the default): not known."""
        return None

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> Router:
        """The same strategy and settings over ``shards`` (the planners'
        successor: ``version + 1`` unless given).  Shards kept keep as much of
        what they own as the strategy allows.  ``weights`` are the weights of
        every shard (missing ones weigh 1); ``tokens`` gives positions for new
        shards of a ring built with explicit tokens.  The default refuses:
        a strategy without a planner raises ValueError."""
        raise ValueError(
            f"no planner for {type(self).__name__}: planners support modulo, jump, ring, rendezvous, "
            "Maglev, bucket and hash-range routers"
        )

    def with_weights(self, weights: Mapping[str, float], *, version: int | None = None) -> Router:
        """The same shards under new ``weights`` (every shard's; the planners'
        successor, ``version + 1`` unless given)."""
        return self.with_shards(self.shards, weights=weights, version=version)

    def replanned(self, plan_base: Callable[[Router], Router], *,
                  removing: Sequence[str] = ()) -> Router | None:
        """For a router that places keys through another one (its base): the
        successor, given ``plan_base`` that plans the base (``removing``: the
        shards being removed).  None (the default) for every other router."""
        return None

    def base_pair(self, new: Router) -> tuple[Router, Router] | None:
        """When going from this router to ``new`` moves exactly what going
        from one base router to another moves: those two bases.  None (the
        default) otherwise."""
        return None

    def moves_only_added_removed(self, new: Router) -> bool:
        """True when going from this router to ``new`` provably moves keys
        only off shards ``new`` drops or onto shards it adds: a key of a
        shard both keep never goes to another shard both keep.  The planner
        uses it to tell which (source, destination) pairs can hold moving
        keys when it cannot list the moved hash ranges.  False (the default)
        when it cannot be shown for this change."""
        return False

    def _same_placement_params(self, new: Router) -> bool:
        """``new`` is of this router's type, hasher and key prefix."""
        return type(new) is type(self) and new.hasher == self.hasher and new.key_prefix == self.key_prefix

    # -- `shardhash topology new` ----------------------------------------------------

    #: The ``topology new`` options this strategy takes, by their argparse
    #: names ("vnodes", "shard_weights", ...); None: ``topology new`` does not
    #: offer the strategy.
    cli_options: ClassVar[frozenset[str] | None] = None
    #: The name ``topology new`` gives the strategy when it is not the type name.
    cli_name: ClassVar[str | None] = None
    #: True when ``--algorithm``/``--seed`` apply (keys are hashed by the hasher).
    cli_hashes: ClassVar[bool] = False
    #: False when ``topology new`` builds the router without ``--shards``.
    cli_needs_shards: ClassVar[bool] = True
    #: Options ``topology new`` cannot do without, and how to ask for them.
    cli_requires: ClassVar[tuple[tuple[str, ...], str] | None] = None

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        """A new router for ``shardhash topology new``: ``args`` holds the
        parsed options (by their argparse names), ``weights`` the parsed
        ``--shard-weights``, ``hasher`` the one ``--algorithm``/``--seed``
        give (strategies with ``cli_hashes``), ``load`` reads a topology file
        an option names.  Raise :class:`TopologyOptionError` for a message the
        command line shows as it is.  The default builds ``cls(shards,
        hasher=hasher)`` for a strategy that offers itself (``cli_options``
        set) and refuses otherwise."""
        if cls.cli_options is None:
            raise TopologyOptionError(f"topology new does not offer {cls.type_name or cls.__name__}")
        return cls(shards, hasher=hasher)

    # -- describing itself (the command line) --------------------------------------

    def hashing_description(self) -> str:
        """How a key becomes a position (``topology show``, ``route --explain``)."""
        h = self.hasher
        codec = "" if h.codec.to_dict() == type(h.codec)().to_dict() else f", codec {h.codec!r}"
        return f"{h.algorithm}, seed {h.seed}{codec}"

    def ownership(self) -> tuple[list[float], list[str]] | None:
        """The share of the hash space each shard owns and what it owns
        (``"1,024 buckets"``, ``"3 ranges"``), in shard order; None when no
        fixed part of the space belongs to a shard (jump, rendezvous...)."""
        t = self.bucket_table()
        if t is not None:
            c = np.bincount(t, minlength=len(self.shards))
            return [float(v) / len(t) for v in c], [f"{int(v):,} {self.table_unit}s" for v in c]
        try:
            rng = self.hash_ranges()
        except (ValueError, TypeError, NotImplementedError):
            rng = None
        if not rng:
            return None
        space = [0.0] * len(self.shards)
        pieces = [0] * len(self.shards)
        total = sum(hi - lo + 1 for lo, hi, _ in rng)
        for lo, hi, i in rng:
            space[i] += (hi - lo + 1) / total
            pieces[i] += 1
        return space, [f"{p:,} ranges" for p in pieces]

    def explain(self, key: Any) -> list[str]:
        """Lines for ``route --explain``: how this router places ``key``."""
        if not self.routes_on_hash:
            return ["placement: by the key itself (not by a shardhash hash)"]
        h = int(self.hasher(key))
        return [f"hash:     {h:#018x} ({h:,})", *self.explain_hash(h, key)]

    def explain_hash(self, h: int, key: Any) -> list[str]:
        """Lines for ``route --explain`` after the hash ``h`` of ``key``: its
        bucket, or the hash range it falls in."""
        t = self.bucket_table()
        if t is not None:
            return [f"{self.table_unit}:   {h % len(t):,} of {len(t):,}"]
        for lo, hi, _ in self.hash_ranges() or ():
            if lo <= h <= hi:
                return [f"{self.range_label}: [{lo:#018x}, {hi:#018x}]"]
        return []

    def __repr__(self) -> str:
        shards = ", ".join(map(repr, self.shards[:6])) + (", ..." if len(self.shards) > 6 else "")
        return (f"{type(self).__name__}([{shards}], n={len(self.shards)}, version={self.version}, "
                f"fingerprint={self.fingerprint[:12]!r})")


_CORE_ROUTE_MANY = RouterCore.route_many


class TopologyOptionError(ValueError):
    """A ``topology new`` option that does not fit the strategy (the command
    line shows the message as it is)."""


class RawKeyRouter(Router):
    """Base class of routers that place the raw key, not its shardhash hash
    (RangeRouter, WatermarkRouter and every ``shardhash.compat`` router).

    ``route``/``route_index`` go to a compiled key path when the subclass
    configures one (``_use_key_ranges``, ``_use_watermark``,
    ``_use_native_keys``) and otherwise to the Python fallback
    ``_route_index_slow(key)`` that every subclass implements; ``route_many``
    is the subclass's own.  ``routes_on_hash`` is False, and ``route_hashes``
    / ``route_hash`` raise TypeError: there is no shardhash hash to route.
    A subclass may say what it routes instead with the class attribute
    ``_routes_instead``, ``(what, use)``: ``route_hash`` then refuses with
    ``"<what>, not shardhash hashes"`` and ``route_hashes`` adds
    ``": <use>"``; or with messages of its own, ``_hashes_refused`` (of
    ``route_hashes``) and ``_hash_refused`` (of ``route_hash``; default: the
    same).  A router whose keys become positions by a fixed function (not
    the hasher) names it in ``_hashing`` (its ``hashing_description()``).
    """

    _routes_instead: ClassVar[tuple[str, str] | None] = None
    _hashes_refused: ClassVar[str | None] = None
    _hash_refused: ClassVar[str | None] = None
    _hashing: ClassVar[str | None] = None

    def __init__(self, shards: Iterable[str], *, hasher: Hasher | None = None, version: int = 1,
                 key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        self._use_python()  # the Python fallback; a compiled key path may come on top

    @property
    def routes_on_hash(self) -> bool:
        """False: this router places raw keys."""
        return False

    def hashing_description(self) -> str:
        return self._hashing if self._hashing is not None else super().hashing_description()

    def _no_hashes(self, one: bool) -> TypeError:
        if self._routes_instead is not None:
            what, use = self._routes_instead
            return TypeError(f"{what}, not shardhash hashes" + ("" if one else f": {use}"))
        msg = (self._hash_refused if one else None) or self._hashes_refused
        return TypeError(msg or f"{type(self).__name__} routes on raw keys, not on hashes; use route_many")

    def route_hashes(self, hashes: Any, *, out: np.ndarray | None = None,
                     threads: int | None = None) -> NoReturn:
        """Refused: this router places raw keys (use ``route_many``)."""
        raise self._no_hashes(False)

    def route_hash(self, h: Any) -> NoReturn:
        """Refused: this router places raw keys (use ``route``)."""
        raise self._no_hashes(True)

    def _route_hashes_kernel(self, hashes: np.ndarray, out: np.ndarray) -> NoReturn:
        raise self._no_hashes(True)

    def _route_keys(self, keys: Any, out: np.ndarray | None, threads: int | None,
                    general: Callable[[], np.ndarray]) -> np.ndarray:
        """What a subclass's ``route_many`` returns: up to 64 common keys in
        one pass through the compiled key path (when neither ``out`` nor
        ``threads`` is given and the subclass configured one), else
        ``general()``, the subclass's own array path (which checks the keys
        and raises)."""
        if out is None and threads is None:
            small: np.ndarray | None = self._route_small_keys(keys)
            if small is not None:
                return small
        return general()


_S = TypeVar("_S")


class SplitRanges(Router, Generic[_S]):
    """Base class of routers whose ranges are cut at split points
    (HashRangeRouter: hashes, RangeRouter: raw keys): range 0 lies below
    ``splits[0]``, range ``i`` starts at ``splits[i-1]`` (inclusive), and
    each range has one owner.  A subclass's ``__init__`` calls
    ``_set_ranges``; the document's params are ``splits`` and ``owners``."""

    _splits: tuple[_S, ...]
    _range_owners: tuple[int, ...]

    _doc_fields: ClassVar[tuple[str, ...]] = ("splits", "owners")

    def _set_ranges(self, splits: Sequence[_S], owner_index: Sequence[int]) -> None:
        self._set("_splits", tuple(splits))
        self._set("_range_owners", tuple(owner_index))

    @property
    def splits(self) -> tuple[_S, ...]:
        """The split points, increasing: the lower bounds of ranges 1, 2, ..."""
        return self._splits

    @property
    def range_owners(self) -> tuple[str, ...]:
        """Owner of each range, in range order."""
        return tuple(self.shards[i] for i in self._range_owners)

    def _doc_params(self) -> dict[str, Any]:
        return {"splits": list(self._splits), "owners": list(self.range_owners)}


class WrappingRouter(Router):
    """Base class of routers that place keys through another router, their
    ``base`` (DirectoryRouter, ``shardhash.hotkeys.HotKeyRouter``): the base's
    compiled kernel when it has one, else its ``route_hashes``."""

    _base: Router

    def _wrap(self, base: Router) -> None:
        """Keep ``base`` and place keys through it (call once, in ``__init__``)."""
        self._set("_base", base)
        if base._has_c_kernel():
            self._use_delegate(base)
        else:
            self._use_python()

    def _route_hashes_kernel(self, hashes: np.ndarray, out: np.ndarray) -> None:
        self._base.route_hashes(hashes, out=out)

    @property
    def base(self) -> Router:
        """The router keys fall back to."""
        return self._base

    @staticmethod
    def _base_and_pairs(params: Mapping[str, Any], name: str, field: str,
                        pair: str) -> tuple[Router, list[tuple[Any, ...]]]:
        """A wrapper document's base router and its list of ``[a, b]`` pairs
        (``params[field]``; ``pair`` names the two items in the error)."""
        base = _from_doc(params["base"], f"{name} base")
        items = params[field]
        if not isinstance(items, list) or not all(isinstance(p, list) and len(p) == 2 for p in items):
            raise ValueError(f"{name} params: {field!r} must be a list of [{pair}] pairs")
        return base, [tuple(p) for p in items]

    def _check_base_hashing(self, hasher: Hasher, key_prefix: int | None, name: str) -> None:
        """A wrapper document's hasher and key_prefix are its base's."""
        if self.hasher != hasher or self.key_prefix != key_prefix:
            raise ValueError(f"{name} document: 'hasher'/'key_prefix' differ from the base router's")
