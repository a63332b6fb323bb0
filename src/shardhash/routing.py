"""Routers: which shard owns this key?

Every router is immutable and speaks one protocol::

    router.shards          # tuple of logical shard ids (str), index order
    router.hasher          # the shardhash.Hasher that turns keys into 64-bit values
    router.version         # int, bumped by whoever publishes a new topology
    router.fingerprint     # sha256 hex digest of the canonical document
    router.route(key) -> str                 router.route_index(key) -> int
    router.route_many(keys, *, out=None, threads=None) -> np.ndarray[int32]
    router.route_hashes(hashes, *, out=None, threads=None) -> np.ndarray[int32]
    router.to_dict() / router.to_json()      shardhash.load_router(doc) rebuilds it
    router.routes_on_hash  # route_many(k) == route_hashes(hasher.hash_array(k))

>>> from shardhash import JumpRouter, load_router
>>> r = JumpRouter(["a", "b", "c"])
>>> r.route("user:42") in r.shards
True
>>> load_router(r.to_json()) == r
True

Routers over the hash space expose their ownership for planning:
``owned_ranges()`` (RingRouter, HashRangeRouter) lists ``(lo, hi, shard
index)`` inclusive intervals covering ``[0, 2**64 - 1]`` in order;
ModuloRouter, BucketRouter and MaglevRouter expose ``bucket_count`` and
``placement`` (shard index of each bucket ``hash % bucket_count``);
JumpRouter and RendezvousRouter have no finite table (plan by sampling).

Subclass contract (for routers defined outside this module)
-----------------------------------------------------------
1. Subclass ``Router`` and register the class::

       @register_router_type("mytype")
       class MyRouter(Router):
           _doc_fields = ("param_a", "param_b")     # every key of the "params" object

2. ``__init__`` calls ``Router.__init__(self, shards, hasher=..., version=...,
   key_prefix=...)`` first (it validates the shards and the hasher), stores
   its own attributes with ``self._set(name, value)`` (instances are frozen:
   plain assignment raises), then configures exactly one placement kernel and
   finally calls ``self._finish()``.  Kernels (all take the key's 64-bit hash,
   after an optional ``self._use_pre_transform(add=, xor=)`` that feeds them
   ``((h + add) mod 2**64) ^ xor``):

   * ``self._use_bucket(placement)``  -- shard index = placement[h % len(placement)];
   * ``self._use_jump()``             -- jump hash over ``len(shards)`` buckets;
   * ``self._use_ring(tokens, owners, width)`` -- first token >= h, wrapping;
     ``tokens`` strictly increasing uint64, ``owners`` shard indices;
   * ``self._use_rendezvous(seeds, weights)``  -- see docs/routers.md;
   * ``self._use_delegate(router)``   -- place exactly as another router;
   * ``self._use_python()`` plus a method ``_route_hashes_kernel(self, hashes,
     out)`` that fills the int32 array ``out`` from the uint64 array
     ``hashes`` (optionally ``_route_hash(self, h) -> int`` for one hash).

   Routers whose keys are not hashed (ranges on raw keys) override ``route``,
   ``route_index`` and ``route_many`` instead, and ``route_hashes`` to raise.
3. ``_doc_params(self) -> dict``: the JSON-able type-specific parameters;
   ``_from_params(cls, params, *, shards, hasher, version, key_prefix)``
   (classmethod): rebuild from them.  ``load_router`` checks ``params``
   against ``_doc_fields`` (unknown keys are a ValueError) and the fingerprint.
4. Routers over the hash space should offer ``owned_ranges()`` (rings:
   ``ring_owned_ranges(tokens, owners)``) or ``bucket_count``/``placement``.
"""

from __future__ import annotations

import bisect
import hashlib
import importlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Callable, ClassVar

import numpy as np

from shardhash import _limits
from shardhash._hashing import Hasher
from shardhash._routing import (
    RouterCore,
    _unmasked,
    jump_hash,
    jump_hash_array,
    maglev_populate,
    mix64,
    prepare_out,
    unalias,
)

__all__ = [
    "ROUTER_FORMAT",
    "Router",
    "ModuloRouter",
    "JumpRouter",
    "RingRouter",
    "RendezvousRouter",
    "MaglevRouter",
    "BucketRouter",
    "RangeRouter",
    "HashRangeRouter",
    "DirectoryRouter",
    "WatermarkRouter",
    "load_router",
    "register_router_type",
    "router_types",
    "ring_owned_ranges",
    "jump_hash",
    "jump_hash_array",
    "maglev_default_table_size",
]

ROUTER_FORMAT = "shardhash.router/1"
U64_MAX = (1 << 64) - 1
_TOP_FIELDS = ("format", "type", "version", "shards", "hasher", "key_prefix", "key_type", "params", "fingerprint")
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


def _weights_doc(weights: dict[str, float] | None) -> dict[str, float] | None:
    return dict(weights) if weights else None


def _identity_hash(hasher: Hasher, ident: str) -> int:
    """The hash of a shard's or a token's identity string (docs/routers.md)."""
    return int(hasher(ident))


def _width(hasher: Hasher) -> int:
    return 32 if hasher.algorithm in _32BIT_ALGOS else 64


def _canonical(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):  # deterministic below 3.3e24
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _next_prime(n: int) -> int:
    n = max(n, 2)
    while not _is_prime(n):
        n += 1
    return n


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
    "ketama": "shardhash.compat.ketama",
    "vitess": "shardhash.compat.vitess",
    "mongo_hashed": "shardhash.compat.mongo",
    "redis_cluster": "shardhash.compat.redis",
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
        raise ValueError(f"{where}: unknown router type {typ!r} (known: {', '.join(sorted(set(_REGISTRY) | set(_COMPAT_MODULES)))})")
    params = doc["params"]
    if not isinstance(params, Mapping):
        raise ValueError(f"{where}: 'params' must be an object")
    unknown = sorted(set(params) - set(cls._doc_fields))
    if unknown:
        raise ValueError(f"{where}: {typ} params have unknown field(s): {', '.join(map(repr, unknown))}")
    if not isinstance(doc["hasher"], Mapping):
        raise ValueError(f"{where}: 'hasher' must be an object")
    hasher = Hasher.from_dict(dict(doc["hasher"]))
    shards = doc["shards"]
    if not isinstance(shards, list):
        raise ValueError(f"{where}: 'shards' must be a list")
    try:
        router = cls._from_params(dict(params), shards=tuple(shards), hasher=hasher,
                                  version=doc["version"], key_prefix=doc.get("key_prefix"))
    except KeyError as e:
        raise ValueError(f"{where}: {typ} params lack field {e.args[0]!r}") from None
    if list(router.shards) != list(shards):
        raise ValueError(f"{where}: 'shards' {shards!r} does not match the routing parameters "
                         f"(which give {list(router.shards)!r})")
    if "key_type" in doc:
        from ._keytypes import key_type_from_doc

        try:
            kt = key_type_from_doc(doc["key_type"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        router._set("_key_type", kt)
        router._set("_fp", None)
    fp = doc.get("fingerprint")
    if fp is not None and fp != router.fingerprint:
        raise ValueError(f"{where}: fingerprint mismatch: document says {fp!r}, "
                         f"its content hashes to {router.fingerprint!r}")
    return router


# ---------------------------------------------------------------------------
# the base class


class Router(RouterCore):
    """Base class of every router (see the module docstring for the contract)."""

    _version: int
    _fp: str | None

    type_name: ClassVar[str] = ""
    _doc_fields: ClassVar[tuple[str, ...]] = ()
    _key_type: str | tuple[str, ...] | None = None

    def __init__(self, shards: Iterable[str], *, hasher: Hasher | None = None, version: int = 1,
                 key_prefix: int | None = None) -> None:
        shards_t = _check_shards(shards)
        hasher = _check_hasher(hasher)
        self._set("_version", _check_int(version, "version", 0))
        if key_prefix is not None:
            key_prefix = _check_int(key_prefix, "key_prefix", 1, 1 << 20)
        self._core_init(shards_t, hasher, key_prefix or 0)
        self._set("_fp", None)

    # -- immutability ---------------------------------------------------------

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

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
        from ._keytypes import key_type_to_doc, parse_key_type

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
            from ._keytypes import key_type_to_doc

            doc["key_type"] = key_type_to_doc(self._key_type)
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

    def __repr__(self) -> str:
        shards = ", ".join(map(repr, self.shards[:6])) + (", ..." if len(self.shards) > 6 else "")
        return (f"{type(self).__name__}([{shards}], n={len(self.shards)}, version={self.version}, "
                f"fingerprint={self.fingerprint[:12]!r})")


_CORE_ROUTE_MANY = RouterCore.route_many


# ---------------------------------------------------------------------------
# hash % N and jump


@register_router_type("modulo")
class ModuloRouter(Router):
    """``hash % len(shards)``: the baseline (adding a shard moves most keys).

    >>> r = ModuloRouter(["a", "b", "c"])
    >>> r.route_hashes([0, 1, 2, 3, 4]).tolist()
    [0, 1, 2, 0, 1]
    """

    _placement: np.ndarray

    def __init__(self, shards: Iterable[str], *, hasher: Hasher | None = None, version: int = 1,
                 key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        self._set("_placement", self._use_bucket(np.arange(len(self.shards), dtype=np.int32)))
        self._finish()

    @property
    def bucket_count(self) -> int:
        """Buckets are ``hash % bucket_count`` (here: the number of shards)."""
        return len(self.shards)

    @property
    def placement(self) -> np.ndarray:
        """Shard index of each bucket (read-only int32 array)."""
        return self._placement


@register_router_type("jump")
class JumpRouter(Router):
    """Jump consistent hash (Lamping & Veach 2014) of the key's 64-bit hash.

    >>> r = JumpRouter([f"s{i}" for i in range(100)])
    >>> r.route_hashes([0, 1, 2]).tolist()
    [0, 55, 62]
    """

    def __init__(self, shards: Iterable[str], *, hasher: Hasher | None = None, version: int = 1,
                 key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        self._use_jump()
        self._finish()


# ---------------------------------------------------------------------------
# consistent-hash ring


def _merge_ranges(ranges: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    for lo, hi, s in ranges:
        if lo > hi:
            continue
        if out and out[-1][2] == s and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, s)
        else:
            out.append((lo, hi, s))
    return out


def ring_owned_ranges(tokens: Sequence[int] | np.ndarray,
                      owners: Sequence[int] | np.ndarray) -> list[tuple[int, int, int]]:
    """Ownership of the hash space by a ring (token ``i`` owns the arc
    ``(tokens[i-1], tokens[i]]``, wrapping): ``(lo, hi, owner)`` inclusive
    intervals covering [0, 2**64 - 1] in order, adjacent intervals of one
    owner merged.  ``tokens`` sorted strictly increasing.

    >>> ring_owned_ranges([20, 50], [0, 1])
    [(0, 20, 0), (21, 50, 1), (51, 18446744073709551615, 0)]
    """
    t = [int(x) for x in tokens]
    o = [int(x) for x in owners]
    if not t or len(t) != len(o):
        raise ValueError("a ring needs as many owners as tokens, and at least one token")
    ranges = [(0, t[0], o[0])]
    ranges += [(t[i - 1] + 1, t[i], o[i]) for i in range(1, len(t))]
    if t[-1] < U64_MAX:
        ranges.append((t[-1] + 1, U64_MAX, o[0]))
    return _merge_ranges(ranges)


_COLLISION_RULES = ("error", "first")


@register_router_type("ring")
class RingRouter(Router):
    """Consistent-hash ring: a key belongs to the first token at or after its hash.

    Each shard ``s`` gets ``floor(vnodes * weight(s) + 0.5)`` tokens (at least
    one), token ``i`` at position ``hasher("s:i")`` (the router's hasher
    applied to the string ``f"{s}:{i}"``), so adding a shard never moves the
    others' tokens.  ``tokens={"A": [20, ...], ...}`` gives explicit positions
    instead.  Two tokens on one position are an error naming both
    (``collisions="error"``), or with ``collisions="first"`` the token whose
    ``(shard id, token number)`` sorts first keeps it.

    >>> r = RingRouter(["A", "B", "C", "D"], tokens={"A": [20], "B": [50], "C": [80], "D": [40]})
    >>> [r.shards[i] for i in r.route_hashes([35, 40, 20, 21, 45, 51, 81, 90, 0])]
    ['D', 'D', 'A', 'D', 'B', 'C', 'A', 'A', 'A']
    """

    _collisions: str
    _vnodes: int | None
    _weights: dict[str, float] | None
    _explicit: dict[str, list[int]] | None
    _tokens: np.ndarray
    _owners: np.ndarray

    _doc_fields = ("vnodes", "weights", "tokens", "collisions")

    def __init__(self, shards: Iterable[str], *, vnodes: int | None = None,
                 weights: Mapping[str, float] | None = None,
                 tokens: Mapping[str, Sequence[int]] | None = None, collisions: str = "error",
                 hasher: Hasher | None = None, version: int = 1, key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        if collisions not in _COLLISION_RULES:
            raise ValueError(f"collisions must be one of {_COLLISION_RULES}, got {collisions!r}")
        self._set("_collisions", collisions)
        index = {s: i for i, s in enumerate(self.shards)}
        pos_l: Any = []           # token positions (list of ints, or a uint64 array)
        sid_l: list[int] = []     # owner's shard index
        num_l: list[int] = []     # token number within its shard
        if tokens is not None:
            if vnodes is not None or weights is not None:
                raise ValueError("give either tokens= or vnodes=/weights=, not both")
            if not isinstance(tokens, Mapping):
                raise TypeError(f"tokens must be a mapping shard id -> positions, not {type(tokens).__name__}")
            known = set(self.shards)
            for s in tokens:
                if s not in known:
                    raise ValueError(f"tokens names unknown shard {s!r}")
            explicit: dict[str, list[int]] = {}
            total = 0
            for s in self.shards:
                if s not in tokens:
                    raise ValueError(f"shard {s!r} has no tokens")
                given = tokens[s]
                if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
                    raise TypeError(f"tokens[{s!r}] must be a list of ints")
                plist = [_check_int(p, f"tokens[{s!r}][{i}]", 0, U64_MAX) for i, p in enumerate(given)]
                if not plist:
                    raise ValueError(f"shard {s!r} has no tokens")
                total += len(plist)
                _limits.check_size(total, _limits.MAX_RING_TOKENS, "ring tokens")
                explicit[s] = plist
                pos_l += plist
                sid_l += [index[s]] * len(plist)
                num_l += range(len(plist))
            self._set("_vnodes", None)
            self._set("_weights", None)
            self._set("_explicit", explicit)
            _limits.reserve(total, _limits.MAX_RING_TOKENS, "ring tokens")
        else:
            v = 256 if vnodes is None else _check_int(vnodes, "vnodes", 1, 1 << 20)
            w = _check_weights(weights, self.shards)
            self._set("_vnodes", v)
            self._set("_weights", w)
            self._set("_explicit", None)
            # Count every shard's tokens before building any (a weight of
            # 1e12 must not build a trillion token names first).
            scaled = [v * (w.get(s, 1.0) if w else 1.0) + 0.5 for s in self.shards]
            if not all(math.isfinite(x) for x in scaled):  # vnodes * weight overflowed a float
                raise ValueError(f"ring tokens: vnodes={v} times a weight is beyond "
                                 f"the limit of {_limits.MAX_RING_TOKENS:,}")
            counts = [max(1, math.floor(x)) for x in scaled]
            _limits.reserve(sum(counts), _limits.MAX_RING_TOKENS,
                            f"ring tokens ({len(counts)} shards, vnodes={v}, weights)")
            idents: list[str] = []
            for k, s in enumerate(self.shards):
                count = counts[k]
                idents += [f"{s}:{i}" for i in range(count)]
                sid_l += [k] * count
                num_l += range(count)
            # Token position = hasher(f"{shard}:{i}"); hash_array gives hasher(x) for each x.
            pos_l = self.hasher.hash_array(idents)
        pos = np.asarray(pos_l, dtype=np.uint64)
        sid = np.array(sid_l, dtype=np.int32)
        num = np.array(num_l, dtype=np.int64)
        # Sort by (position, shard id as a string, token number).
        id_rank = np.empty(len(self.shards), dtype=np.int64)
        id_rank[sorted(range(len(self.shards)), key=lambda k: self.shards[k])] = np.arange(len(self.shards))
        order = np.lexsort((num, id_rank[sid], pos))
        pos, sid, num = pos[order], sid[order], num[order]
        dup = pos[1:] == pos[:-1]
        if dup.any():
            same = dup & (sid[1:] == sid[:-1])
            bad = np.flatnonzero(same if collisions == "first" else dup)
            if bad.size:
                j = int(bad[0])
                a, b = f"{self.shards[sid[j]]}:{num[j]}", f"{self.shards[sid[j + 1]]}:{num[j + 1]}"
                raise ValueError(f"ring tokens collide: {a} and {b} both sit at position {int(pos[j])}")
            keep = np.concatenate([[True], ~dup])  # of the tokens at one position, the first stays
            pos, sid = pos[keep], sid[keep]
        t, o = pos, sid
        tok, own = self._use_ring(t, o, _width(self.hasher))
        self._set("_tokens", tok)
        self._set("_owners", own)
        self._finish()

    @property
    def vnodes(self) -> int | None:
        """Tokens per unit of weight (None for explicit tokens)."""
        return self._vnodes

    @property
    def weights(self) -> dict[str, float] | None:
        return dict(self._weights) if self._weights else None

    @property
    def tokens(self) -> np.ndarray:
        """Token positions, sorted (read-only uint64 array)."""
        return self._tokens

    @property
    def collisions(self) -> str:
        """The collision rule: ``"error"`` or ``"first"``."""
        return self._collisions

    @property
    def explicit_tokens(self) -> dict[str, tuple[int, ...]] | None:
        """The positions given with ``tokens=`` (shard id -> tuple of ints, in
        the order given, shards in ``shards`` order), or None for a ring whose
        positions come from ``vnodes``/``weights``.  A fresh dict each time.

        >>> RingRouter(["A", "B"], tokens={"A": [20, 70], "B": [50]}).explicit_tokens
        {'A': (20, 70), 'B': (50,)}
        >>> RingRouter(["A", "B"], vnodes=4).explicit_tokens is None
        True
        """
        if self._explicit is None:
            return None
        return {s: tuple(p) for s, p in self._explicit.items()}

    @property
    def token_owners(self) -> np.ndarray:
        """Shard index owning each token (read-only int32 array)."""
        return self._owners

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """``(lo, hi, shard index)`` inclusive hash intervals covering [0, 2**64 - 1]."""
        return ring_owned_ranges(self._tokens, self._owners)

    def _doc_params(self) -> dict[str, Any]:
        if self._explicit is not None:
            return {"tokens": {s: list(p) for s, p in self._explicit.items()},
                    "collisions": self._collisions}
        return {"vnodes": self._vnodes, "weights": _weights_doc(self._weights),
                "collisions": self._collisions}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        collisions = params.get("collisions", "error")
        if params.get("tokens") is not None:
            return cls(shards, tokens=params["tokens"], collisions=collisions, hasher=hasher,
                       version=version, key_prefix=key_prefix)
        return cls(shards, vnodes=params["vnodes"], weights=params.get("weights"),
                   collisions=collisions, hasher=hasher, version=version, key_prefix=key_prefix)


# ---------------------------------------------------------------------------
# rendezvous


@register_router_type("rendezvous")
class RendezvousRouter(Router):
    """Highest random weight: each shard draws ``mix64(hash ^ seed)``; the largest wins.

    ``seed = mix64(hasher(shard id))``.  With ``weights``, the logarithmic
    method: ``score = -weight / ln(u)`` with ``u = ((draw >> 11) | 1) / 2**53``.

    >>> r = RendezvousRouter(["a", "b", "c"])
    >>> r.route("user:1") in ("a", "b", "c")
    True
    """

    _weights: dict[str, float] | None

    _doc_fields = ("weights",)

    def __init__(self, shards: Iterable[str], *, weights: Mapping[str, float] | None = None,
                 hasher: Hasher | None = None, version: int = 1, key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        w = _check_weights(weights, self.shards)
        self._set("_weights", w)
        seeds = np.array([mix64(_identity_hash(self.hasher, s)) for s in self.shards], dtype=np.uint64)
        wl = None
        if w:
            full = [w.get(s, 1.0) for s in self.shards]
            if len(set(full)) > 1:
                wl = np.array(full, dtype=np.float64)
        self._use_rendezvous(seeds, wl)
        self._finish()

    @property
    def weights(self) -> dict[str, float] | None:
        return dict(self._weights) if self._weights else None

    def _doc_params(self) -> dict[str, Any]:
        return {"weights": _weights_doc(self._weights)}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        return cls(shards, weights=params.get("weights"), hasher=hasher, version=version,
                   key_prefix=key_prefix)


# ---------------------------------------------------------------------------
# Maglev


_MAGLEV_MAX = _limits.MAX_MAGLEV_TABLE
# Default table sizes: the smallest prime >= 2**16 * 4**k, k = 0..5.
_MAGLEV_LADDER = (65537, 262147, 1048583, 4194319, 16777259, 67108879)


def maglev_default_table_size(n: int) -> int:
    """The table size ``MaglevRouter`` picks for ``n`` shards: the first of
    65537, 262147, 1048583, 4194319, 16777259, 67108879 (the smallest primes
    >= 2**16 * 4**k) that is >= 100 * n, else the smallest prime >= 100 * n.
    It stays the same as shards are added (up to 655 shards it is 65537), so
    growing a cluster with default arguments moves about 1/(N+1) of the keys.

    >>> maglev_default_table_size(3), maglev_default_table_size(656)
    (65537, 262147)
    """
    n = _check_int(n, "n", 1)
    for m in _MAGLEV_LADDER:
        if m >= 100 * n:
            return m
    return _next_prime(100 * n)


@register_router_type("maglev")
class MaglevRouter(Router):
    """Maglev hashing (Eisenbud et al. 2016): a prime-sized lookup table
    ``table[hash % table_size]`` filled from per-shard permutations.

    The default table size, ``maglev_default_table_size(len(shards))``, is
    65537 up to 655 shards (then the next of a few fixed primes, each >= 100
    slots per shard), so adding a shard with default arguments keeps the table
    size and moves about 1/(N+1) of the keys.  Documents store the size, so
    routers rebuilt from them never change.

    >>> r = MaglevRouter(["a", "b", "c"])
    >>> r.table_size
    65537
    """

    _weights: dict[str, float] | None
    _m: int
    _table: np.ndarray

    _doc_fields = ("table_size", "weights")

    def __init__(self, shards: Iterable[str], *, table_size: int | None = None,
                 weights: Mapping[str, float] | None = None, hasher: Hasher | None = None,
                 version: int = 1, key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        n = len(self.shards)
        if table_size is None:
            m = maglev_default_table_size(n)
        else:
            m = _check_int(table_size, "table_size", 2, _MAGLEV_MAX)
            if not _is_prime(m):
                raise ValueError(f"table_size must be prime, got {m}")
            if m < n:
                raise ValueError(f"table_size {m} is smaller than the number of shards ({n})")
        if m > _MAGLEV_MAX:
            raise ValueError(f"table_size {m} exceeds {_MAGLEV_MAX}")
        _limits.reserve(m, _MAGLEV_MAX, "Maglev table_size")
        w = _check_weights(weights, self.shards)
        rel = None
        if w:
            full = [w.get(s, 1.0) for s in self.shards]
            top = max(full)
            if min(full) != top:
                rel = np.array([x / top for x in full], dtype=np.float64)
        ids = np.array([_identity_hash(self.hasher, s) for s in self.shards], dtype=np.uint64)
        table = maglev_populate(ids, rel, m)
        self._set("_weights", w)
        self._set("_m", m)
        self._set("_table", self._use_bucket(table))
        self._finish()

    @property
    def table_size(self) -> int:
        return self._m

    @property
    def bucket_count(self) -> int:
        """Same as ``table_size``: bucket = hash % bucket_count."""
        return self._m

    @property
    def table(self) -> np.ndarray:
        """The lookup table: shard index of each slot (read-only int32 array)."""
        return self._table

    placement = table

    @property
    def weights(self) -> dict[str, float] | None:
        return dict(self._weights) if self._weights else None

    def _doc_params(self) -> dict[str, Any]:
        return {"table_size": self._m, "weights": _weights_doc(self._weights)}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        return cls(shards, table_size=params["table_size"], weights=params.get("weights"),
                   hasher=hasher, version=version, key_prefix=key_prefix)


# ---------------------------------------------------------------------------
# buckets


@register_router_type("bucket")
class BucketRouter(Router):
    """A fixed number of logical buckets (``hash % len(placement)``) and a
    placement table bucket -> shard id.

    >>> r = BucketRouter(["db1", "db2"], ["db1", "db1", "db2", "db2"])
    >>> [r.shards[i] for i in r.route_hashes([0, 1, 2, 3, 6])]
    ['db1', 'db1', 'db2', 'db2', 'db2']
    """

    _placement: np.ndarray

    _doc_fields = ("placement",)

    def __init__(self, shards: Iterable[str], placement: Sequence[str], *,
                 hasher: Hasher | None = None, version: int = 1, key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        if isinstance(placement, (str, bytes)) or not isinstance(placement, Iterable):
            raise TypeError(f"placement must be a sequence of shard ids, not {type(placement).__name__}")
        index = {s: i for i, s in enumerate(self.shards)}
        idx = []
        for b, s in enumerate(placement):
            if not isinstance(s, str):
                raise TypeError(f"placement[{b}] must be a shard id string, got {_describe(s)}")
            i = index.get(s)
            if i is None:
                raise ValueError(f"placement[{b}] names unknown shard {s!r}")
            idx.append(i)
        if not idx:
            raise ValueError("placement must not be empty")
        _limits.reserve(len(idx), _limits.MAX_BUCKETS, "bucket count")
        self._set("_placement", self._use_bucket(np.array(idx, dtype=np.int32)))
        self._finish()

    @classmethod
    def from_ranges(cls, starts: Mapping[int, str] | Iterable[tuple[int, str]], bucket_count: int, *,
                    shards: Iterable[str] | None = None, hasher: Hasher | None = None,
                    version: int = 1, key_prefix: int | None = None) -> BucketRouter:
        """Build from range starts: bucket ``b`` goes to the shard of the
        greatest start <= b (the first start must be 0).

        >>> r = BucketRouter.from_ranges({0: "db1", 256: "db2"}, 512)
        >>> r.placement_ids[255], r.placement_ids[256]
        ('db1', 'db2')
        """
        n = _check_int(bucket_count, "bucket_count", 1, _limits.MAX_BUCKETS)
        items = list(starts.items()) if isinstance(starts, Mapping) else list(starts)
        if not items:
            raise ValueError("starts must not be empty")
        pairs = []
        for i, it in enumerate(items):
            if not isinstance(it, tuple) or len(it) != 2:
                raise TypeError(f"starts[{i}] must be a (start, shard id) pair")
            st = _check_int(it[0], f"start of range {i}", 0, n - 1)
            _check_shard_id(it[1], f"shard of range {i}")
            pairs.append((st, it[1]))
        for i in range(1, len(pairs)):
            if pairs[i][0] <= pairs[i - 1][0]:
                raise ValueError(f"range starts must be strictly increasing: {pairs[i - 1][0]} then {pairs[i][0]}")
        if pairs[0][0] != 0:
            raise ValueError(f"the first range must start at bucket 0, not {pairs[0][0]}")
        placement: list[str] = []
        for i, (st, s) in enumerate(pairs):
            end = pairs[i + 1][0] if i + 1 < len(pairs) else n
            placement.extend([s] * (end - st))
        if shards is None:
            shards = list(dict.fromkeys(s for _, s in pairs))
        return cls(shards, placement, hasher=hasher, version=version, key_prefix=key_prefix)

    @property
    def bucket_count(self) -> int:
        return int(self._placement.shape[0])

    @property
    def placement(self) -> np.ndarray:
        """Shard index of each bucket (read-only int32 array)."""
        return self._placement

    @property
    def placement_ids(self) -> tuple[str, ...]:
        """Shard id of each bucket."""
        sh = self.shards
        return tuple(sh[i] for i in self._placement.tolist())

    def _doc_params(self) -> dict[str, Any]:
        return {"placement": self._placement.tolist()}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        p = params["placement"]
        if not isinstance(p, list):
            raise ValueError("bucket params: 'placement' must be a list of shard indices")
        ids = []
        for b, i in enumerate(p):
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(shards):
                raise ValueError(f"bucket params: placement[{b}] = {i!r} is not a shard index")
            ids.append(shards[i])
        return cls(shards, ids, hasher=hasher, version=version, key_prefix=key_prefix)


# ---------------------------------------------------------------------------
# ranges over the hash space


@register_router_type("hash_range")
class HashRangeRouter(Router):
    """Ranges of the 64-bit hash space (Citus, MongoDB hashed, Vitess style).

    ``splits`` are the lower bounds (inclusive) of ranges 1..k; range 0
    starts at 0.  ``shards[i]`` owns range ``i``; a shard may own several
    ranges (``router.shards`` then lists it once, in first-appearance order).

    >>> r = HashRangeRouter([2**63], ["low", "high"])
    >>> [r.shards[i] for i in r.route_hashes([0, 2**63 - 1, 2**63, 2**64 - 1])]
    ['low', 'low', 'high', 'high']
    """

    _splits: tuple[int, ...]
    _range_owners: tuple[int, ...]

    _doc_fields = ("splits", "owners")

    def __init__(self, splits: Sequence[int], shards: Sequence[str], *, hasher: Hasher | None = None,
                 version: int = 1, key_prefix: int | None = None) -> None:
        if isinstance(splits, (str, bytes)) or not isinstance(splits, Iterable):
            raise TypeError(f"splits must be a sequence of ints, not {type(splits).__name__}")
        if isinstance(shards, (str, bytes)) or not isinstance(shards, Iterable):
            raise TypeError(f"shards must be a sequence of shard ids, not {type(shards).__name__}")
        sp = [_check_int(s, f"splits[{i}]", 1, U64_MAX) for i, s in enumerate(splits)]
        owners = list(shards)
        if len(owners) != len(sp) + 1:
            raise ValueError(f"{len(sp)} splits need {len(sp) + 1} shards, got {len(owners)}")
        for i in range(1, len(sp)):
            if sp[i] <= sp[i - 1]:
                raise ValueError(f"splits must be strictly increasing: splits[{i - 1}] = {sp[i - 1]}, "
                                 f"splits[{i}] = {sp[i]}")
        uniq, idx = _owners_of(owners, "shards")
        super().__init__(uniq, hasher=hasher, version=version, key_prefix=key_prefix)
        self._set("_splits", tuple(sp))
        self._set("_range_owners", tuple(idx))
        # Range i = [splits[i-1], splits[i] - 1]: a ring whose tokens are the
        # ranges' inclusive upper ends.
        tokens = [s - 1 for s in sp] + [U64_MAX]
        self._use_ring(np.array(tokens, dtype=np.uint64), np.array(idx, dtype=np.int32), _width(self.hasher))
        self._finish()

    @property
    def splits(self) -> tuple[int, ...]:
        return self._splits

    @property
    def range_owners(self) -> tuple[str, ...]:
        """Owner of each range, in range order."""
        return tuple(self.shards[i] for i in self._range_owners)

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """``(lo, hi, shard index)`` inclusive hash intervals covering [0, 2**64 - 1]."""
        lows = [0, *self._splits]
        highs = [s - 1 for s in self._splits] + [U64_MAX]
        return _merge_ranges(list(zip(lows, highs, self._range_owners)))

    def _doc_params(self) -> dict[str, Any]:
        return {"splits": list(self._splits), "owners": [self.shards[i] for i in self._range_owners]}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        return cls(params["splits"], params["owners"], hasher=hasher, version=version,
                   key_prefix=key_prefix)


# ---------------------------------------------------------------------------
# ranges over raw keys


def _no_hashes(self: Router, *args: Any, **kwargs: Any) -> Any:
    raise TypeError(f"{type(self).__name__} routes on raw keys, not on hashes; use route_many")


def _split_kind(splits: Sequence[Any]) -> str:
    kinds = set()
    for i, s in enumerate(splits):
        if isinstance(s, bool) or not isinstance(s, (int, str, np.integer)):
            raise TypeError(f"splits[{i}] = {_describe(s)} must be an int or a str")
        kinds.add("str" if isinstance(s, str) else "int")
    if len(kinds) > 1:
        raise TypeError("splits mix ints and strings")
    return kinds.pop() if kinds else "int"


@register_router_type("range")
class RangeRouter(Router):
    """Ranges of the raw key (ints or strings), lower bounds inclusive.

    ``len(shards) == len(splits) + 1``; ``shards[i]`` owns the keys ``k``
    with ``splits[i-1] <= k < splits[i]``.  Strings compare by code point.
    The hasher is kept for the protocol but not used.

    >>> r = RangeRouter([1_000_000, 2_000_000], ["a", "b", "c"])
    >>> r.route(999_999), r.route(1_000_000), r.route(2_000_000)
    ('a', 'b', 'c')
    """

    _splits: tuple[Any, ...]
    _split_type: str
    _range_owners: tuple[int, ...]
    _owner_arr: np.ndarray

    _doc_fields = ("splits", "owners")

    def __init__(self, splits: Sequence[int] | Sequence[str], shards: Sequence[str], *,
                 hasher: Hasher | None = None, version: int = 1, key_prefix: int | None = None) -> None:
        if isinstance(splits, (str, bytes)) or not isinstance(splits, Iterable):
            raise TypeError(f"splits must be a sequence of ints or strings, not {type(splits).__name__}")
        if isinstance(shards, (str, bytes)) or not isinstance(shards, Iterable):
            raise TypeError(f"shards must be a sequence of shard ids, not {type(shards).__name__}")
        sp: list[Any] = list(splits)
        kind = _split_kind(sp)
        if kind == "int":
            sp = [int(s) for s in sp]
        owners = list(shards)
        if len(owners) != len(sp) + 1:
            raise ValueError(f"{len(sp)} splits need {len(sp) + 1} shards, got {len(owners)}")
        for i in range(1, len(sp)):
            if not sp[i - 1] < sp[i]:
                raise ValueError(f"splits must be strictly increasing: splits[{i - 1}] = {sp[i - 1]!r}, "
                                 f"splits[{i}] = {sp[i]!r}")
        uniq, idx = _owners_of(owners, "shards")
        super().__init__(uniq, hasher=hasher, version=version, key_prefix=key_prefix)
        self._set("_splits", tuple(sp))
        self._set("_split_type", kind)
        self._set("_range_owners", tuple(idx))
        self._set("_owner_arr", np.array(idx, dtype=np.int32))
        self._use_python()
        self._use_key_ranges(self._splits, idx)  # route/route_index of exact ints/str in C
        self._finish()

    @classmethod
    def from_sample(cls, keys: Iterable[Any], n: int, *, shards: Sequence[str] | None = None,
                    hasher: Hasher | None = None, version: int = 1) -> RangeRouter:
        """Split points at the sample's quantiles so that ``n`` ranges hold equal data.

        >>> r = RangeRouter.from_sample(range(1000), 4)
        >>> r.splits
        (250, 500, 750)
        """
        n = _check_int(n, "n", 1, 1 << 20)
        sample = list(keys.tolist() if isinstance(keys, np.ndarray) else keys)
        if not sample:
            raise ValueError("the sample is empty")
        kind = _split_kind(sample)
        if kind == "int":
            sample = [int(k) for k in sample]
        sample.sort()
        splits: list[Any] = []
        for i in range(1, n):
            s = sample[(len(sample) * i) // n]
            if splits and s <= splits[-1] or (not splits and s <= sample[0]):
                raise ValueError(f"the sample has too few distinct keys for {n} ranges")
            splits.append(s)
        if shards is None:
            shards = [f"range-{i}" for i in range(n)]
        return cls(splits, shards, hasher=hasher, version=version)

    @property
    def splits(self) -> tuple[Any, ...]:
        return self._splits

    @property
    def range_owners(self) -> tuple[str, ...]:
        return tuple(self.shards[i] for i in self._range_owners)

    def _key(self, key: Any) -> Any:
        p = self.key_prefix
        if p is not None:
            if isinstance(key, tuple):
                if len(key) < p:
                    raise ValueError(f"key {key!r} has fewer than {p} parts")
                key = key[0] if p == 1 else key[:p]
            elif p != 1:
                raise TypeError(f"this router routes on the first {p} parts of a tuple key; got {key!r}")
        if self._split_type == "int":
            if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
                raise TypeError(f"this RangeRouter splits integer keys; got {_describe(key)} "
                                f"(type {type(key).__name__})")
        elif not isinstance(key, str):
            raise TypeError(f"this RangeRouter splits string keys; got {_describe(key)} "
                            f"(type {type(key).__name__})")
        return key

    def _route_index_slow(self, key: Any) -> int:
        # route()/route_index() of keys the compiled path leaves here: numpy
        # integers, ints beyond 64 bits, tuple keys (key_prefix), and every
        # key of the wrong type (which raises)
        return self._range_owners[bisect.bisect_right(self._splits, self._key(key))]

    def route_many(self, keys: Any, *, out: np.ndarray | None = None,
                   threads: int | None = None) -> np.ndarray:
        if isinstance(keys, np.ma.MaskedArray):
            keys = _unmasked(keys, "keys")
        if isinstance(keys, np.ndarray) and self.key_prefix is None and keys.ndim == 1:
            k = keys.dtype.kind
            if self._split_type == "int" and k in "iu":
                info = np.iinfo(keys.dtype)
                below = sum(1 for s in self._splits if s < info.min)
                inside = np.array([s for s in self._splits if info.min <= s <= info.max], dtype=keys.dtype)
                r = np.searchsorted(inside, keys, side="right") + below
                res = self._owner_arr[r]
                o = prepare_out(out, keys.shape[0])
                o[:] = res
                return o
            if self._split_type == "str" and k == "U":
                sp = np.array(self._splits, dtype=str)
                if sp.tolist() == list(self._splits):
                    r = np.searchsorted(sp, keys, side="right")
                    o = prepare_out(out, keys.shape[0])
                    o[:] = self._owner_arr[r]
                    return o
                # numpy drops trailing NULs: a split such as "b\0" would compare
                # as "b"; route the keys (as numpy gives them) one by one
                keys = keys.tolist()
            elif k != "O":
                want = "integer" if self._split_type == "int" else "string"
                raise TypeError(f"this RangeRouter splits {want} keys; got an array of dtype {keys.dtype}")
        if not isinstance(keys, Iterable) or isinstance(keys, (str, bytes)):
            raise TypeError(f"keys must be an iterable of keys, not {type(keys).__name__}")
        items = list(keys)
        o = prepare_out(out, len(items))
        for i, key in enumerate(items):
            try:
                o[i] = self.route_index(key)
            except TypeError as e:
                raise TypeError(f"keys[{i}]: {e}") from None
        return o

    route_hashes = _no_hashes
    route_hash = _no_hashes

    def _doc_params(self) -> dict[str, Any]:
        return {"splits": list(self._splits), "owners": [self.shards[i] for i in self._range_owners]}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        return cls(params["splits"], params["owners"], hasher=hasher, version=version,
                   key_prefix=key_prefix)


# ---------------------------------------------------------------------------
# directory overrides


def _override_key(k: Any, where: str) -> Any:
    if isinstance(k, bool) or not isinstance(k, (int, str)):
        raise TypeError(f"{where}: override keys must be int or str (they are stored in the "
                        f"document), got {_describe(k)}")
    return k


@register_router_type("directory")
class DirectoryRouter(Router):
    """Explicit key -> shard overrides over any hash router.

    An override applies to every key whose hash equals the hash of the
    override key (with 64-bit hashers that is the key itself).  Shards that
    only overrides name are appended after the base router's shards.

    >>> base = JumpRouter(["a", "b"])
    >>> r = DirectoryRouter(base, {"giant-tenant": "c"})
    >>> r.route("giant-tenant"), r.shards
    ('c', ('a', 'b', 'c'))
    """

    _base: Router
    _overrides: tuple[tuple[Any, str], ...]

    _doc_fields = ("base", "overrides")

    def __init__(self, base: Router, overrides: Mapping[Any, str] | Iterable[tuple[Any, str]], *,
                 version: int = 1) -> None:
        if not isinstance(base, Router):
            raise TypeError(f"base must be a Router, not {type(base).__name__}")
        if isinstance(base, (RangeRouter, WatermarkRouter)) or not (
                type(base).route_many is _CORE_ROUTE_MANY or getattr(type(base), "routes_on_hash") is True):
            # overrides apply to the base's hashes: a router that places keys
            # some other way (Redis slots, Cassandra tokens...) would fail on every key
            raise TypeError(f"DirectoryRouter needs a hash router as base (one that places keys by "
                            f"its hasher's hash), not {type(base).__name__}")
        items = list(overrides.items()) if isinstance(overrides, Mapping) else list(overrides)
        shards = list(base.shards)
        pos = {s: i for i, s in enumerate(shards)}
        pairs: list[tuple[Any, str]] = []
        seen: dict[int, Any] = {}
        byhash: dict[int, int] = {}
        for i, it in enumerate(items):
            if not isinstance(it, tuple) or len(it) != 2:
                raise TypeError(f"overrides[{i}] must be a (key, shard id) pair")
            k = _override_key(it[0], f"overrides[{i}]")
            s = _check_shard_id(it[1], f"shard of override {k!r}")
            if s not in pos:
                pos[s] = len(shards)
                shards.append(s)
            h = int(base.hasher(k))
            if h in seen:
                raise ValueError(f"override keys {seen[h]!r} and {k!r} have the same hash {h}")
            seen[h] = k
            byhash[h] = pos[s]
            pairs.append((k, s))
        super().__init__(shards, hasher=base.hasher, version=version, key_prefix=base.key_prefix)
        self._set("_base", base)
        self._set("_overrides", tuple(pairs))
        hs = sorted(byhash)
        if base._has_c_kernel():
            self._use_delegate(base)
        else:
            self._use_python()
        self._use_overrides(np.array(hs, dtype=np.uint64), np.array([byhash[h] for h in hs], dtype=np.int32))
        self._finish()

    def _route_hashes_kernel(self, hashes: np.ndarray, out: np.ndarray) -> None:
        self._base.route_hashes(hashes, out=out)

    @property
    def base(self) -> Router:
        return self._base

    @property
    def overrides(self) -> dict[Any, str]:
        return dict(self._overrides)

    def _doc_params(self) -> dict[str, Any]:
        return {"base": self._base.to_dict(), "overrides": [list(p) for p in self._overrides]}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        base = _from_doc(params["base"], "directory base")
        ov = params["overrides"]
        if not isinstance(ov, list) or not all(isinstance(p, list) and len(p) == 2 for p in ov):
            raise ValueError("directory params: 'overrides' must be a list of [key, shard id] pairs")
        r = cls(base, [tuple(p) for p in ov], version=version)
        if r.hasher != hasher or r.key_prefix != key_prefix:
            raise ValueError("directory document: 'hasher'/'key_prefix' differ from the base router's")
        return r


# ---------------------------------------------------------------------------
# watermark resharding


@register_router_type("watermark")
class WatermarkRouter(Router):
    """Resharding by id watermark: integer ids >= ``watermark`` follow ``new``,
    smaller ids follow ``old``.  ``lowered(k)`` gives the next version as the
    background copy moves older ids.

    >>> old = ModuloRouter(["a", "b"]); new = JumpRouter(["a", "b", "c"])
    >>> r = WatermarkRouter(old, new, 1000)
    >>> r.route(5) == old.route(5), r.route(5000) == new.route(5000)
    (True, True)
    """

    _old: Router
    _new: Router
    _wm: int
    _new_map: np.ndarray

    _doc_fields = ("old", "new", "watermark")

    def __init__(self, old: Router, new: Router, watermark: int, *, version: int = 1) -> None:
        for name, r in (("old", old), ("new", new)):
            if not isinstance(r, Router):
                raise TypeError(f"{name} must be a Router, not {type(r).__name__}")
            if r.key_prefix is not None:
                raise ValueError(f"{name} routes on a key prefix; a watermark needs integer ids")
            try:  # a router that cannot route an integer id would fail on every key
                r.route_index(0)
            except TypeError as e:
                raise TypeError(f"{name} ({type(r).__name__}) cannot route integer ids: {e}") from None
            except (ValueError, OverflowError):
                pass  # 0 may be outside what it routes; other ids are not
        wm = _check_int(watermark, "watermark", -(1 << 63), U64_MAX)
        shards = list(old.shards)
        pos = {s: i for i, s in enumerate(shards)}
        for s in new.shards:
            if s not in pos:
                pos[s] = len(shards)
                shards.append(s)
        super().__init__(shards, hasher=new.hasher, version=version)
        self._set("_old", old)
        self._set("_new", new)
        self._set("_wm", wm)
        self._set("_new_map", np.array([pos[s] for s in new.shards], dtype=np.int32))
        self._use_python()
        self._use_watermark(old, new, wm, self._new_map)  # route/route_index of exact ints in C
        self._finish()

    @property
    def old(self) -> Router:
        return self._old

    @property
    def new(self) -> Router:
        return self._new

    @property
    def watermark(self) -> int:
        return self._wm

    def lowered(self, watermark: int, *, version: int | None = None) -> WatermarkRouter:
        """The same migration with the watermark moved (version + 1 by default)."""
        return WatermarkRouter(self._old, self._new, watermark,
                               version=self.version + 1 if version is None else version)

    @staticmethod
    def _id(key: Any) -> int:
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
            raise TypeError(f"WatermarkRouter routes integer ids; got {_describe(key)} "
                            f"(type {type(key).__name__})")
        return int(key)

    def _route_index_slow(self, key: Any) -> int:
        # route()/route_index() of ids the compiled path leaves here (numpy
        # integers, ids beyond 64 bits) and of every non-integer key (raises)
        k = self._id(key)
        if k >= self._wm:
            return int(self._new_map[self._new.route_index(k)])
        return self._old.route_index(k)

    def route_many(self, keys: Any, *, out: np.ndarray | None = None,
                   threads: int | None = None) -> np.ndarray:
        if isinstance(keys, np.ma.MaskedArray):
            keys = _unmasked(keys, "keys")
        a = keys if isinstance(keys, np.ndarray) else None
        if a is None:
            if not isinstance(keys, Iterable) or isinstance(keys, (str, bytes)):
                raise TypeError(f"keys must be an iterable of integer ids, not {type(keys).__name__}")
            items = list(keys)
            for i, k in enumerate(items):
                if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
                    raise TypeError(f"keys[{i}]: WatermarkRouter routes integer ids; got {_describe(k)}")
            try:
                a = np.array(items, dtype=np.int64) if items else np.empty(0, dtype=np.int64)
            except OverflowError:
                try:
                    a = np.array(items, dtype=np.uint64)
                except OverflowError:  # ids on both sides of the int64/uint64 ranges
                    o = prepare_out(out, len(items))
                    for i, k in enumerate(items):
                        o[i] = self.route_index(k)
                    return o
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise TypeError(f"WatermarkRouter routes integer ids; got an array of dtype {a.dtype}")
        o = prepare_out(out, a.shape[0])
        a = unalias(a, o)  # o is written in two passes, a read in both
        wm = self._wm
        info = np.iinfo(a.dtype)
        if wm <= info.min:
            mask = np.ones(a.shape[0], dtype=bool)
        elif wm > info.max:
            mask = np.zeros(a.shape[0], dtype=bool)
        else:
            mask = a >= a.dtype.type(wm)
        if mask.any():
            o[mask] = self._new_map[self._new.route_many(a[mask], threads=threads)]
        if not mask.all():
            o[~mask] = self._old.route_many(a[~mask], threads=threads)
        return o

    route_hashes = _no_hashes
    route_hash = _no_hashes

    def _doc_params(self) -> dict[str, Any]:
        return {"old": self._old.to_dict(), "new": self._new.to_dict(), "watermark": self._wm}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        r = cls(_from_doc(params["old"], "watermark old"), _from_doc(params["new"], "watermark new"),
                params["watermark"], version=version)
        if r.hasher != hasher or key_prefix is not None:
            raise ValueError("watermark document: 'hasher' must be the new router's, no key_prefix")
        return r
