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
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Callable, ClassVar, TypeVar

import numpy as np

from shardhash._hashing import Hasher
from shardhash._routing import (
    RouterCore,
    as_hashes,
    jump_hash,
    jump_hash_array,
    maglev_populate,
    mix64,
    prepare_out,
)

__all__ = [
    "ROUTER_FORMAT",
    "Router",
    "ModuloRouter",
    "JumpRouter",
    "load_router",
    "register_router_type",
    "router_types",
    "jump_hash",
    "jump_hash_array",
]

ROUTER_FORMAT = "shardhash.router/1"
U64_MAX = (1 << 64) - 1
_TOP_FIELDS = ("format", "type", "version", "shards", "hasher", "key_prefix", "params", "fingerprint")
_REQUIRED_TOP = ("format", "type", "version", "shards", "hasher", "params")
_32BIT_ALGOS = frozenset({"xxh32", "murmur3_32", "fnv1a_32"})

_REGISTRY: dict[str, type[Router]] = {}

R = TypeVar("R", bound="type[Router]")


# ---------------------------------------------------------------------------
# validation helpers


def _describe(v: Any) -> str:
    r = repr(v)
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
    v = int(v)
    if lo is not None and v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"{name} must be <= {hi}, got {v}")
    return v


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


def router_types() -> dict[str, type[Router]]:
    """The registered router document types."""
    return dict(_REGISTRY)


def _read_doc(src: Any) -> dict[str, Any]:
    if isinstance(src, Mapping):
        return dict(src)
    if isinstance(src, (bytes, bytearray)):
        src = bytes(src).decode("utf-8")
    if isinstance(src, str) and src.lstrip().startswith("{"):
        try:
            doc = json.loads(src)
        except json.JSONDecodeError as e:
            raise ValueError(f"router document is not valid JSON: {e}") from None
    elif isinstance(src, (str, os.PathLike)):
        try:
            text = Path(src).read_text(encoding="utf-8")
        except OSError as e:
            raise ValueError(f"cannot read router document {str(src)!r}: {e}") from None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"router document {str(src)!r} is not valid JSON: {e}") from None
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
    cls = _REGISTRY.get(typ) if isinstance(typ, str) else None
    if cls is None:
        raise ValueError(f"{where}: unknown router type {typ!r} (known: {', '.join(sorted(_REGISTRY))})")
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
    fp = doc.get("fingerprint")
    if fp is not None and fp != router.fingerprint:
        raise ValueError(f"{where}: fingerprint mismatch: document says {fp!r}, "
                         f"its content hashes to {router.fingerprint!r}")
    return router


# ---------------------------------------------------------------------------
# the base class


class Router(RouterCore):
    """Base class of every router (see the module docstring for the contract)."""

    type_name: ClassVar[str] = ""
    _doc_fields: ClassVar[tuple[str, ...]] = ()

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
        return self._version  # type: ignore[no-any-return]

    @property
    def fingerprint(self) -> str:
        """sha256 hex digest of the canonical JSON of ``to_dict()`` minus ``fingerprint``."""
        fp = self._fp
        if fp is None:
            fp = hashlib.sha256(_canonical(self._body())).hexdigest()
            self._set("_fp", fp)
        return fp  # type: ignore[no-any-return]

    def _doc_params(self) -> dict[str, Any]:
        return {}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        return cls(shards, hasher=hasher, version=version, key_prefix=key_prefix)  # type: ignore[call-arg]

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

    def __repr__(self) -> str:
        shards = ", ".join(map(repr, self.shards[:6])) + (", ..." if len(self.shards) > 6 else "")
        return (f"{type(self).__name__}([{shards}], n={len(self.shards)}, version={self.version}, "
                f"fingerprint={self.fingerprint[:12]!r})")


# ---------------------------------------------------------------------------
# hash % N and jump


@register_router_type("modulo")
class ModuloRouter(Router):
    """``hash % len(shards)``: the baseline (adding a shard moves most keys).

    >>> r = ModuloRouter(["a", "b", "c"])
    >>> r.route_hashes([0, 1, 2, 3, 4]).tolist()
    [0, 1, 2, 0, 1]
    """

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
        return self._placement  # type: ignore[no-any-return]


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
