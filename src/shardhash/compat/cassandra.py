"""Cassandra's ``Murmur3Partitioner``, reproduced to the bit.

A row's token is computed from its serialized partition key:

* ``h1`` of MurmurHash3 x64_128 (seed 0) -- but Cassandra's variant, whose
  tail bytes are Java signed bytes: a tail byte >= 0x80 is sign-extended
  before it is mixed in, so the token differs from standard murmur3
  (``mmh3.hash64``) for most binary keys;
* taken as a signed 64-bit integer, with ``-2**63`` replaced by ``2**63-1``;
* the empty key's token is ``-2**63`` (the ring's minimum).

:func:`serialize` produces the partition-key bytes of CQL values (``int``,
``bigint``, ``text``, ``uuid``, ... and composite keys), and
:class:`TokenRouter` finds the owner on a token ring: the node of the first
ring token >= the key's token, wrapping around (vnodes: several tokens per
node).

What is exact: tokens (checked against ``cassandra-driver``'s
``Murmur3Token.from_key`` on binary keys with high tail bytes), primary
ownership, SimpleStrategy and :class:`NetworkTopologyStrategy` replicas
(checked against the driver's ``make_token_replica_map``), and
``RandomPartitioner`` tokens and rings (:class:`RandomTokenRouter`, checked
against the driver's ``MD5Token``).  Not modelled: ByteOrderedPartitioner.

>>> token(b"hello")
-3758069500696749310
>>> token(serialize(1, "int")), token(serialize(1, "bigint"))
(-4069959284402364209, 6292367497774912474)
>>> token(serialize((1, "a"), ("int", "text")))
6516349416904725244
"""

from __future__ import annotations

import bisect
import hashlib
import numbers
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from shardhash import _parallel
from shardhash._parallel import kernel_array

from ..routing.base import RawKeyRouter, Router, as_int64, fill_out, register_router_type
from . import _native
from ._common import INT64_MAX, INT64_MIN, uuid_bytes
from ._doc import doc_field, int_list, node_map, raw_doc_shards
from ._ring import point_index

__all__ = [
    "MIN_TOKEN",
    "MAX_TOKEN",
    "CQL_TYPES",
    "token",
    "token_array",
    "serialize",
    "evenly_spaced_tokens",
    "random_tokens",
    "TokenRouter",
    "NetworkTopologyStrategy",
    "MAX_RANDOM_TOKEN",
    "random_partitioner_token",
    "RandomTokenRouter",
]

MIN_TOKEN = INT64_MIN
MAX_TOKEN = INT64_MAX

# CQL type name -> canonical name.
_ALIASES = {
    "int": "int",
    "bigint": "bigint",
    "counter": "bigint",
    "smallint": "smallint",
    "tinyint": "tinyint",
    "text": "text",
    "varchar": "text",
    "ascii": "ascii",
    "uuid": "uuid",
    "timeuuid": "uuid",
    "blob": "blob",
    "boolean": "boolean",
    "timestamp": "timestamp",
}
CQL_TYPES = tuple(sorted(_ALIASES))

_INT_RANGES = {
    "tinyint": (1, -(1 << 7), (1 << 7) - 1),
    "smallint": (2, -(1 << 15), (1 << 15) - 1),
    "int": (4, -(1 << 31), (1 << 31) - 1),
    "bigint": (8, -(1 << 63), (1 << 63) - 1),
    "timestamp": (8, -(1 << 63), (1 << 63) - 1),
}


def _bytes_like(key: Any, what: str = "key") -> bytes:
    if isinstance(key, bytes):
        return key
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    if isinstance(key, str):
        raise TypeError(f"{what} must be the serialized partition key (bytes), not str; "
                        f"use serialize({key!r:.40}, 'text')")
    raise TypeError(f"{what} must be bytes, not {type(key).__name__} ({key!r:.60})")


def _blob_keys(keys: Any) -> Any:
    """A router's ``blob`` keys refuse str, as :meth:`TokenRouter.route` does
    (:func:`token_array` alone takes str as its UTF-8 bytes)."""
    if isinstance(keys, np.ndarray) and keys.dtype.kind == "U":
        raise TypeError("keys must be serialized partition keys (bytes), not an array of str; "
                        "use cql_type='text'")
    if isinstance(keys, np.ndarray) and keys.dtype.kind == "O":
        keys = keys.tolist()
    if isinstance(keys, (list, tuple)):
        # checked in C (no key's code runs, so the keys stay as checked
        # until token_array reads them)
        i = _native.first_not_bytes_like(keys)
        if i >= 0:
            _bytes_like(keys[i], f"key at position {i}")  # raises
        return keys
    t = getattr(keys, "type", None)
    if t is not None and str(t) in ("string", "large_string", "string_view"):
        raise TypeError("keys must be serialized partition keys (binary), not an Arrow string array; "
                        "use cql_type='text'")
    return keys


def _token_py(key: bytes) -> int:
    # the reference for token(): every key but exact bytes
    return int(_native.cassandra_token(_bytes_like(key)))


_native._set_fallbacks(token=_token_py)
# token(key): the ``Murmur3Partitioner`` token of one serialized partition
# key; exact bytes in C, everything else via _token_py.
token = _native.token


def _type_name(cql_type: Any) -> str:
    if not isinstance(cql_type, str):
        raise TypeError(f"a CQL type name must be a str, not {type(cql_type).__name__}")
    t = _ALIASES.get(cql_type.strip().lower())
    if t is None:
        raise ValueError(f"unsupported CQL type {cql_type!r}; supported: {', '.join(CQL_TYPES)}")
    return t


def _serialize_one(value: Any, t: str) -> bytes:
    if value is None:
        raise ValueError("a partition key component cannot be null")
    if t in _INT_RANGES:
        size, lo, hi = _INT_RANGES[t]
        if t == "timestamp" and hasattr(value, "timestamp") and not isinstance(value, numbers.Number):
            import datetime as _dt

            if isinstance(value, _dt.datetime):
                if value.tzinfo is None:
                    value = value.replace(tzinfo=_dt.timezone.utc)
                delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
                value = (delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"a CQL {t} must be an int, not {type(value).__name__} ({value!r:.60})")
        v = int(value)
        if not lo <= v <= hi:
            raise OverflowError(f"{v} is out of range for CQL {t} ({lo}..{hi})")
        return v.to_bytes(size, "big", signed=True)
    if t in ("text", "ascii"):
        if not isinstance(value, str):
            raise TypeError(f"a CQL {t} must be a str, not {type(value).__name__} ({value!r:.60})")
        if t == "ascii":
            try:
                return value.encode("ascii")
            except UnicodeEncodeError:
                raise ValueError(f"{value!r:.60} is not ASCII") from None
        return value.encode("utf-8")
    if t == "uuid":
        return uuid_bytes(value, lambda text: f"{text!r:.60} is not a UUID",
                          lambda v: f"a CQL uuid must be a uuid.UUID or str, not {type(v).__name__}")
    if t == "blob":
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise TypeError(f"a CQL blob must be bytes, not {type(value).__name__}")
    if t == "boolean":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"a CQL boolean must be a bool, not {type(value).__name__}")
        return b"\x01" if value else b"\x00"
    raise AssertionError(t)  # pragma: no cover


def serialize(value: Any, cql_type: str | Sequence[str]) -> bytes:
    """The partition-key bytes Cassandra hashes for a CQL value.

    Single-column keys: ``int`` -> 4 bytes big-endian, ``bigint`` 8,
    ``smallint`` 2, ``tinyint`` 1, ``text``/``varchar`` UTF-8, ``ascii``,
    ``uuid``/``timeuuid`` 16 bytes, ``blob`` as is, ``boolean`` 1 byte,
    ``timestamp`` 8-byte milliseconds since the epoch (an ``int`` or a
    ``datetime``; naive datetimes are UTC).  Composite keys: ``value`` is a
    tuple and ``cql_type`` the tuple of column types; each component is
    written as a 2-byte big-endian length, its bytes and a 0 byte.

    >>> serialize(1, "int")
    b'\\x00\\x00\\x00\\x01'
    >>> serialize((1, "a"), ("int", "text"))
    b'\\x00\\x04\\x00\\x00\\x00\\x01\\x00\\x00\\x01a\\x00'
    """
    if isinstance(cql_type, (tuple, list)):
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"a composite key needs a tuple of {len(cql_type)} values, "
                            f"not {type(value).__name__}")
        if len(value) != len(cql_type):
            raise ValueError(f"composite key has {len(value)} values for {len(cql_type)} types")
        if len(cql_type) == 1:
            return _serialize_one(value[0], _type_name(cql_type[0]))
        parts = []
        for i, (v, t) in enumerate(zip(value, cql_type)):
            b = _serialize_one(v, _type_name(t))
            if len(b) > 0xFFFF:
                raise ValueError(f"component {i} of the composite key is {len(b)} bytes "
                                 "(at most 65535)")
            parts.append(struct.pack(">H", len(b)) + b + b"\x00")
        return b"".join(parts)
    return _serialize_one(value, _type_name(cql_type))


def _int_array(keys: Any, t: str) -> np.ndarray:
    size, lo, hi = _INT_RANGES[t]
    arr = np.asarray(keys)
    if not isinstance(keys, np.ndarray) and arr.dtype.kind not in "iu":
        arr = np.empty(len(keys), dtype=object)  # name the offending position below
        arr[:] = list(keys)
    if arr.ndim != 1:
        raise ValueError(f"keys must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuO":
        raise TypeError(f"CQL {t} keys must be integers, not an array of {arr.dtype}")
    if arr.dtype.kind == "O":
        for i, v in enumerate(arr.tolist()):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"key at position {i}: a CQL {t} must be an int, not "
                                f"{type(v).__name__} ({v!r:.60})")
            if not lo <= int(v) <= hi:
                raise OverflowError(f"key at position {i}: {int(v)} is out of range for CQL {t}")
        return np.array(arr.tolist(), dtype=np.int64)
    if arr.size:
        amin, amax = int(arr.min()), int(arr.max())
        if amin < lo or amax > hi:
            bad = int(np.flatnonzero((arr < lo) | (arr > hi))[0]) if arr.dtype.kind == "i" or amax <= hi \
                else int(np.flatnonzero(arr > hi)[0])
            raise OverflowError(f"key at position {bad}: {int(arr[bad])} is out of range for CQL {t}")
    return kernel_array(arr, dtype=np.int64)   # the kernels read a contiguous array (a slice may not be)


def token_array(keys: Any, cql_type: str | Sequence[str] = "blob", threads: int | None = None) -> np.ndarray:
    """Tokens of many partition keys at once, as an ``int64`` array.

    With ``cql_type="blob"`` (the default) ``keys`` are serialized partition
    keys: a sequence of bytes, or an Arrow binary array (used without
    copying); ``str`` items are taken as their UTF-8 bytes, which is what a
    ``text`` partition key serializes to.  With ``"bigint"`` or ``"int"`` (also ``smallint``,
    ``tinyint``, ``timestamp``) ``keys`` is an integer array or sequence and
    is serialized in the kernel.  Composite keys (``cql_type`` a tuple of
    column types, ``keys`` tuples of values) and the other types are
    serialized in C key by key into a reused buffer and hashed chunk by
    chunk by the calling thread; values of other Python types (a
    ``datetime`` timestamp, a ``str`` uuid, numpy scalars, ...) go through
    :func:`serialize`, and every error names the key's position.  Arrays run
    without the GIL on ``threads`` threads; a
    list or tuple of keys is read in place by the calling thread (holding
    the GIL) and hashed as it is read, with two threads or more (the
    default for large lists) by helper threads that take the keys read so
    far, chunk by chunk.

    >>> token_array([b"123", b""]).tolist()
    [-7468325962851647638, -9223372036854775808]
    >>> token_array(np.array([1, 2]), "int").tolist() == [token(serialize(v, "int")) for v in (1, 2)]
    True
    """
    if cql_type == "blob" and threads is None:  # up to 64 bytes/ASCII str keys: one pass in C
        small = _native.token_small(keys)
        if small is not None:
            return small
    if isinstance(cql_type, str):
        t = _type_name(cql_type)
        if t == "blob":
            return _blob_tokens(keys, threads)
        if t in ("bigint", "timestamp"):
            return _native.cassandra_token_bigint(_int_array(keys, t), threads)
        if t == "int":
            return _native.cassandra_token_int(_int_array(keys, t).astype(np.int32), threads)
        if t in ("text", "ascii"):
            if t == "text":
                for i, k in enumerate(keys if isinstance(keys, (list, tuple)) else ()):
                    if not isinstance(k, str):
                        raise TypeError(f"key at position {i}: a CQL text must be a str, not "
                                        f"{type(k).__name__} ({k!r:.60})")
                return _blob_tokens(keys, threads)
        types: tuple[str, ...] | None = (t,)
    elif isinstance(cql_type, (tuple, list)):
        try:
            types = tuple(_type_name(c) for c in cql_type)
        except (TypeError, ValueError):
            types = None  # serialize() raises, as the first key meets the bad name
    else:
        raise TypeError(f"cql_type must be a type name or a tuple of them, not {type(cql_type).__name__}")
    if isinstance(keys, np.ndarray):
        keys = keys.tolist()
    if types:
        # other types and composite keys: serialized in C key by key (keys of
        # other Python types by serialize(), errors naming the position),
        # hashed chunk by chunk by the calling thread
        n = len(keys) if isinstance(keys, (list, tuple)) else 0
        _parallel.resolve_threads(threads, n)  # validates threads
        tokens = _native.cassandra_token_cql(keys, types, isinstance(cql_type, str),
                                             lambda k: serialize(k, cql_type))
        if tokens is not None:
            return tokens
    parts = [serialize(k, cql_type) for k in keys]
    return _blob_tokens(parts, threads)


def _blob_tokens(keys: Any, threads: int | None) -> np.ndarray:
    """Tokens of serialized keys: a Python sequence is read in place (the
    kernel gets pointers to each key's bytes), Arrow data without copying."""
    tokens = _native.cassandra_token_seq(keys, threads)
    if tokens is not None:
        return tokens
    data, offsets = _native.pack_keys(keys)
    return _native.cassandra_token_offsets(data, offsets, threads)


def evenly_spaced_tokens(n: int, offset: int = 0) -> list[int]:
    """``n`` evenly spaced ring tokens, ``(2**64 // n) * i - 2**63 + offset``:
    the classic initial tokens for ``n`` single-token nodes.

    >>> evenly_spaced_tokens(4)
    [-9223372036854775808, -4611686018427387904, 0, 4611686018427387904]
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, not {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    step = (1 << 64) // n
    out = []
    for i in range(n):
        t = step * i + MIN_TOKEN + offset
        t = (t - MIN_TOKEN) % (1 << 64) + MIN_TOKEN
        out.append(t)
    return out


def random_tokens(num_tokens: int, seed: int | None = None, *, exclude: Iterable[int] = ()) -> list[int]:
    """``num_tokens`` distinct random ring tokens, sorted: how a node joining
    with ``num_tokens`` vnodes picks its tokens when no token-allocation
    algorithm is configured (``allocate_tokens_for_*`` unset).  ``seed``
    makes the choice reproducible; tokens in ``exclude`` (the ring's
    current tokens) are never picked.  Real clusters print their actual
    tokens with ``nodetool ring``: use those for an exact plan.

    >>> len(random_tokens(16, seed=1)), random_tokens(4, seed=7) == random_tokens(4, seed=7)
    (16, True)
    """
    import random

    if isinstance(num_tokens, bool) or not isinstance(num_tokens, int):
        raise TypeError(f"num_tokens must be an int, not {type(num_tokens).__name__}")
    if num_tokens < 1:
        raise ValueError(f"num_tokens must be >= 1, got {num_tokens}")
    rng = random.Random(seed)
    taken = {int(t) for t in exclude}
    out: set[int] = set()
    while len(out) < num_tokens:
        t = rng.randrange(MIN_TOKEN + 1, MAX_TOKEN + 1)  # MIN is never a node token
        if t not in taken:
            out.add(t)
    return sorted(out)


def _check_token(t: Any, node: Any) -> int:
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
        raise TypeError(f"token {t!r:.60} of node {node!r} must be an int, not {type(t).__name__}")
    v = int(t)
    if not MIN_TOKEN <= v <= MAX_TOKEN:
        raise ValueError(f"token {v} of node {node!r} is outside the Murmur3 range "
                         f"[{MIN_TOKEN}, {MAX_TOKEN}]")
    return v


def _ring_pairs(tokens: Mapping[Any, Iterable[int]],
                check: Callable[[Any, Any], int]) -> tuple[list[str], list[tuple[int, int]]]:
    """The node names and the sorted ``(token, node index)`` pairs of a ring,
    each token checked by ``check(token, node)`` and owned once."""
    if not isinstance(tokens, Mapping):
        raise TypeError(f"tokens must be a mapping node -> [token, ...], not {type(tokens).__name__}")
    nodes = [str(n) for n in tokens]
    if not nodes:
        raise ValueError("a token ring needs at least one node")
    if len(set(nodes)) != len(nodes):
        raise ValueError("node names must be distinct (as strings)")
    pairs: list[tuple[int, int]] = []
    owner_of: dict[int, str] = {}
    for idx, node in enumerate(tokens):
        given: Any = tokens[node]
        toks: list[Any] = [given] if isinstance(given, (int, np.integer)) and not isinstance(given, bool) \
            else list(given)
        if not toks:
            raise ValueError(f"node {node!r} has no tokens")
        for t in toks:
            v = check(t, node)
            if v in owner_of:
                raise ValueError(f"token {v} is owned twice: by {owner_of[v]!r} and by {str(node)!r}")
            owner_of[v] = str(node)
            pairs.append((v, idx))
    pairs.sort()
    return nodes, pairs


def _build_ring(tokens: Mapping[Any, Iterable[int]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    nodes, pairs = _ring_pairs(tokens, _check_token)
    ring = np.array([p[0] for p in pairs], dtype=np.int64)
    owners = np.array([p[1] for p in pairs], dtype=np.int32)
    return nodes, ring, owners


def _check_cql_type(cql_type: Any) -> str | tuple[str, ...]:
    """``cql_type`` checked: a CQL type name or a non-empty tuple of them."""
    if isinstance(cql_type, (list, tuple)):
        ct: str | tuple[str, ...] = tuple(cql_type)
        if not ct:
            raise ValueError("a composite cql_type needs at least one column type")
        for t in ct:
            _type_name(t)
    elif isinstance(cql_type, str):
        _type_name(cql_type)
        ct = cql_type
    else:
        raise TypeError(f"cql_type must be a type name or a tuple of them, not {type(cql_type).__name__}")
    return ct


def _doc_tokens(params: dict[str, Any], shards: tuple[str, ...], key_prefix: int | None) -> dict[str, list[int]]:
    """The ``params.tokens`` of a token router's document, checked."""
    shards = raw_doc_shards(shards, key_prefix, "a Cassandra token router")
    toks = node_map(params["tokens"], "params.tokens", shards, "tokens")
    return {s: int_list(toks[s], f"params.tokens[{s!r}]") for s in shards}


class _TokenRing(RawKeyRouter):
    """What :class:`TokenRouter` and :class:`RandomTokenRouter` share: a
    sorted ring of tokens, each owned by a node (``_owners``), and the
    ``cql_type`` of the keys.  A subclass gives ``_ring_tokens``,
    ``_key_token`` and ``_index_of_token``."""

    _doc_fields = ("tokens", "cql_type")
    cli_options = frozenset({"vnodes", "cql_type"})  # shardhash topology new

    @staticmethod
    def _cli_tokens(n: int) -> list[int]:
        """``n`` ring tokens for ``shardhash topology new``."""
        raise NotImplementedError

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Any, load: Callable[[str], Router]) -> Router:
        toks = cls._cli_tokens(len(shards) * (args.vnodes or 1))
        ct = [t.strip() for t in (args.cql_type or "blob").split(",")]
        return cls({sh: toks[i::len(shards)] for i, sh in enumerate(shards)},  # type: ignore[call-arg]
                   cql_type=ct[0] if len(ct) == 1 else ct)

    def _ring_tokens(self) -> list[int]:
        raise NotImplementedError

    def _key_token(self, key: Any) -> int:
        raise NotImplementedError

    def _index_of_token(self, t: int) -> int:
        raise NotImplementedError

    @staticmethod
    def _doc_cql_type(cql_type: Any) -> str | tuple[str, ...]:
        """A document's ``params.cql_type`` (default ``"blob"``), checked."""
        raise NotImplementedError

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Any, version: int,
                     key_prefix: int | None) -> Router:
        tokens = _doc_tokens(params, shards, key_prefix)
        cql_type = cls._doc_cql_type(params.get("cql_type", "blob"))
        with doc_field("tokens"):
            return cls(tokens, cql_type=cql_type, version=version)  # type: ignore[call-arg]

    def _doc_params(self) -> dict[str, Any]:
        per: dict[str, list[int]] = {s: [] for s in self.shards}
        for t, o in zip(self._ring_tokens(), self._owners.tolist()):
            per[self.shards[o]].append(int(t))
        ct = self._cql_type
        return {"tokens": per, "cql_type": list(ct) if isinstance(ct, tuple) else ct}

    @property
    def tokens(self) -> dict[str, list[int]]:
        """Node -> its sorted ring tokens."""
        return self._doc_params()["tokens"]  # type: ignore[no-any-return]

    @property
    def ring_owners(self) -> np.ndarray:
        return self._owners  # type: ignore[no-any-return]

    @property
    def cql_type(self) -> str | tuple[str, ...]:
        return self._cql_type  # type: ignore[no-any-return]

    def _replicas(self, key: Any, rf: int | Mapping[str, int],
                  topology: Mapping[str, tuple[str, str]] | None) -> list[str]:
        if isinstance(rf, Mapping):
            if topology is None:
                raise ValueError("NetworkTopologyStrategy replicas need topology={node: (datacenter, rack)}")
            return NetworkTopologyStrategy(cast("TokenRouter | RandomTokenRouter", self), rf, topology).replicas(key)
        if topology is not None:
            raise ValueError("topology is for NetworkTopologyStrategy: give rf as {datacenter: replicas}")
        if isinstance(rf, bool) or not isinstance(rf, int) or rf < 1:
            raise ValueError(f"rf must be a positive int, got {rf!r}")
        i = self._index_of_token(self._key_token(key))
        m = len(self._owners)  # one owner per ring token
        out: list[str] = []
        for k in range(m):
            node = self.shards[int(self._owners[(i + k) % m])]
            if node not in out:
                out.append(node)
                if len(out) == min(rf, len(self.shards)):
                    break
        return out


@register_router_type("cassandra_token")
class TokenRouter(_TokenRing):

    """Primary ownership on a Cassandra token ring (``Murmur3Partitioner``).

    ``tokens`` maps each node to its ring tokens (one token per node, or
    ``num_tokens`` vnodes each).  A key goes to the node of the first ring
    token >= its token, wrapping to the smallest token: node token ``T``
    owns ``(previous token, T]``.  ``cql_type`` says how :meth:`route` and
    :meth:`route_many` turn keys into partition-key bytes (``"blob"``: keys
    are already serialized; ``"bigint"``, ``"text"``, ``("int", "text")``
    ... : see :func:`serialize`).

    >>> r = TokenRouter({"n1": [-6148914691236517206], "n2": [-2], "n3": [6148914691236517202]},
    ...                 cql_type="bigint")
    >>> token(serialize(1, "bigint"))     # above the last ring token: wraps to n1
    6292367497774912474
    >>> r.route(1), r.route_many([1, 2, 3, 4]).tolist()
    ('n1', [0, 0, 0, 2])
    >>> from shardhash.routing import load_router
    >>> load_router(r.to_json()) == r
    True
    """

    _routes_instead = ("a Cassandra token router routes tokens", "use route_many(keys) or route_tokens(tokens)")
    _hashing = "Murmur3Partitioner token (Cassandra)"

    @staticmethod
    def _cli_tokens(n: int) -> list[int]:
        return evenly_spaced_tokens(n)

    def __init__(self, tokens: Mapping[Any, Iterable[int]], *, cql_type: str | Sequence[str] = "blob",
                 version: int = 1) -> None:
        nodes, ring, owners = _build_ring(tokens)
        ct = _check_cql_type(cql_type)
        super().__init__(nodes, version=version)
        ring.setflags(write=False)
        owners.setflags(write=False)
        self._set("_ring", ring)
        self._set("_owners", owners)
        self._set("_cql_type", ct)
        # every CQL type and composite key of the common Python types in C
        canon = _type_name(ct) if isinstance(ct, str) else tuple(_type_name(t) for t in ct)
        keys = _native.CassandraKeys(ring, owners, canon)
        self._use_native_keys(keys.capsule(), keys)
        self._finish()

    # -- document ----------------------------------------------------------------

    def _ring_tokens(self) -> list[int]:
        return self._ring.tolist()  # type: ignore[no-any-return]

    @staticmethod
    def _doc_cql_type(cql_type: Any) -> str | tuple[str, ...]:
        if isinstance(cql_type, list):
            for i, t in enumerate(cql_type):
                if not isinstance(t, str):
                    raise TypeError(f"params.cql_type[{i}] must be a CQL type name (str), not {t!r}")
            cql_type = tuple(cql_type)
        elif not isinstance(cql_type, str):
            raise TypeError(f"params.cql_type must be a CQL type name or a list of them, not {cql_type!r}")
        with doc_field("cql_type"):
            for i, t in enumerate((cql_type,) if isinstance(cql_type, str) else cql_type):
                try:
                    _type_name(t)
                except ValueError as e:
                    raise ValueError(str(e) if isinstance(cql_type, str) else f"[{i}]: {e}") from None
            if not cql_type:
                raise ValueError("a composite cql_type needs at least one column type")
        return cast("str | tuple[str, ...]", cql_type)  # a str, or a tuple of them: checked above

    # -- ring --------------------------------------------------------------------

    @property
    def ring(self) -> np.ndarray:
        """All ring tokens, sorted (read-only int64 array); ``ring_owners`` holds their nodes' indices."""
        return self._ring  # type: ignore[no-any-return]

    def _key_token(self, key: Any) -> int:
        ct = self._cql_type
        if ct == "blob":
            return token(key)
        return token(serialize(key, ct))

    def _index_of_token(self, t: int) -> int:
        i = int(np.searchsorted(self._ring, t, side="left"))
        return 0 if i == len(self._ring) else i

    # -- routing -----------------------------------------------------------------

    def _route_index_slow(self, key: Any) -> int:
        # route()/route_index() of the keys the compiled path leaves here
        return int(self._owners[self._index_of_token(self._key_token(key))])

    def route_tokens(self, tokens: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Node indices (int32) for precomputed tokens (int64)."""
        t = kernel_array(as_int64(tokens, "tokens"))  # checked: a cast would wrap a uint64 or truncate a float
        res: np.ndarray = _native.cassandra_ring_owner(self._ring, self._owners, t, threads)
        return fill_out(out, res)

    def route_many(self, keys: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Node indices (int32 array) for many keys, via :func:`token_array`."""
        if self._cql_type == "blob":
            keys = _blob_keys(keys)
        return self._route_keys(keys, out, threads, lambda: self.route_tokens(
            token_array(keys, self._cql_type, threads=threads), out=out, threads=threads))

    def replicas(self, key: Any, rf: int | Mapping[str, int], *,
                 topology: Mapping[str, tuple[str, str]] | None = None) -> list[str]:
        """The replicas of ``key``.  ``rf`` an int: SimpleStrategy -- walk the
        ring clockwise from the owning token, collecting ``rf`` distinct
        nodes.  ``rf`` a mapping datacenter -> replicas:
        NetworkTopologyStrategy, with ``topology`` giving each node's
        ``(datacenter, rack)`` (see :class:`NetworkTopologyStrategy`, which
        also places many keys at once).

        >>> r = TokenRouter({"a": [0], "b": [100], "c": [200]})
        >>> r.replicas(b"k", 2) == [r.route(b"k"), r.shards[(r.route_index(b"k") + 1) % 3]]
        True
        >>> r.replicas(b"k", {"dc1": 2}, topology={"a": ("dc1", "r1"), "b": ("dc1", "r1"), "c": ("dc1", "r2")})
        ['a', 'c']
        """
        return self._replicas(key, rf, topology)

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """Inclusive ``(lo, hi, node index)`` ranges covering ``[0, 2**64-1]``,
        in the token space shifted by ``2**63`` (``lo = token + 2**63``), so
        that ``shardhash.plan.moved_ranges`` can compare two rings."""
        off = 1 << 63
        ring = [int(t) + off for t in self._ring.tolist()]
        own = self._owners.tolist()
        out = [(0, ring[0], own[0])]
        for i in range(1, len(ring)):
            out.append((ring[i - 1] + 1, ring[i], own[i]))
        if ring[-1] < (1 << 64) - 1:
            out.append((ring[-1] + 1, (1 << 64) - 1, own[0]))
        return out


# --------------------------------------------------------------- NetworkTopologyStrategy


def _check_topology(router: TokenRouter | RandomTokenRouter, topology: Any) -> tuple[list[str], list[str]]:
    """Each node's (datacenter, rack), in the router's node order."""
    if not isinstance(topology, Mapping):
        raise TypeError(f"topology must map each node to its (datacenter, rack), not {type(topology).__name__}")
    extra = sorted(str(n) for n in topology if str(n) not in router.shards)
    if extra:
        raise ValueError(f"topology names node(s) that are not on the ring: {extra!r}")
    dcs, racks = [], []
    for node in router.shards:
        if node not in topology:
            raise ValueError(f"topology gives no (datacenter, rack) for node {node!r}")
        where = topology[node]
        if not (isinstance(where, (tuple, list)) and len(where) == 2):
            raise TypeError(f"topology[{node!r}] must be a (datacenter, rack) pair, not {where!r:.60}")
        for what, v in zip(("datacenter", "rack"), where):
            if not isinstance(v, str) or not v:
                raise ValueError(f"topology[{node!r}]: the {what} must be a non-empty str, not {v!r:.60}")
        dcs.append(where[0])
        racks.append(where[1])
    return dcs, racks


class NetworkTopologyStrategy:
    """Replica placement of a keyspace with ``NetworkTopologyStrategy``.

    ``router``: the ring (:class:`TokenRouter`, any number of tokens per
    node); ``replication``: replicas per datacenter, as in ``CREATE KEYSPACE
    ... {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 2}``;
    ``topology``: each node's ``(datacenter, rack)``, as ``nodetool status``
    shows them.

    For a token, each datacenter (in the order in which the ring first meets
    them, walking up from the smallest token) walks the ring clockwise from
    the token over its own nodes' tokens: a node joins the replicas if its
    rack has none yet; a node of a rack that already has one is held back,
    and the held-back nodes join (in the order met) once every rack of the
    datacenter has one, until the datacenter has its replicas or no nodes
    left.  This is ``make_token_replica_map`` of the Python driver's
    ``NetworkTopologyStrategy``, replica order included (datacenter by
    datacenter).

    >>> ring = TokenRouter({"a": [-2**62], "b": [0], "c": [2**62], "d": [2**62 + 1]})
    >>> nts = NetworkTopologyStrategy(ring, {"dc1": 2}, {"a": ("dc1", "r1"), "b": ("dc1", "r1"),
    ...                                                 "c": ("dc1", "r2"), "d": ("dc1", "r2")})
    >>> nts.replicas_of_token(1)          # c (rack r2) first, then the next node of another rack: a
    ['c', 'a']
    """

    def __init__(self, router: TokenRouter | RandomTokenRouter, replication: Mapping[str, int],
                 topology: Mapping[str, tuple[str, str]]) -> None:
        if not isinstance(router, (TokenRouter, RandomTokenRouter)):
            raise TypeError(f"router must be a cassandra.TokenRouter or RandomTokenRouter, not {type(router).__name__}")
        if not isinstance(replication, Mapping):
            raise TypeError(f"replication must map datacenter -> replicas, not {type(replication).__name__}")
        rf: dict[str, int] = {}
        for dc, n in replication.items():
            if not isinstance(dc, str):
                raise TypeError(f"replication: datacenter names are str, not {dc!r:.60}")
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or int(n) < 0:
                raise ValueError(f"replication[{dc!r}] must be a non-negative int, not {n!r:.60}")
            rf[dc] = int(n)
        dcs, racks = _check_topology(router, topology)
        self._router = router
        self._rf = rf
        self._node_dc = dcs
        self._node_rack = racks
        owners = router.ring_owners.tolist()
        self._pos_owner: list[int] = [int(o) for o in owners]
        self._dc_order: list[str] = []
        self._dc_offsets: dict[str, list[int]] = {}
        for pos, o in enumerate(self._pos_owner):
            dc = dcs[o]
            if dc not in self._dc_offsets:
                self._dc_order.append(dc)
                self._dc_offsets[dc] = []
            self._dc_offsets[dc].append(pos)
        self._dc_racks = {dc: {racks[i] for i in range(len(dcs)) if dcs[i] == dc} for dc in self._dc_order}
        self._dc_hosts = {dc: sum(1 for d in dcs if d == dc) for dc in self._dc_order}
        self._cache: dict[int, list[int]] = {}
        self._table: np.ndarray | None = None

    @property
    def router(self) -> TokenRouter | RandomTokenRouter:
        return self._router

    @property
    def replication(self) -> dict[str, int]:
        return dict(self._rf)

    def _at(self, pos: int) -> list[int]:
        """Replica node indices for the ring token at position ``pos``."""
        got = self._cache.get(pos)
        if got is not None:
            return got
        out: list[int] = []
        owner = self._pos_owner
        for dc in self._dc_order:
            want = self._rf.get(dc, 0)
            if want <= 0:
                continue
            offs = self._dc_offsets[dc]
            n = len(offs)
            start = int(np.searchsorted(offs, pos, side="left"))  # this DC's first token at or after pos
            racks_all = self._dc_racks[dc]
            hosts = self._dc_hosts[dc]
            placed: set[str] = set()
            held: list[int] = []
            here = 0
            for k in range(start, start + n):
                node = owner[offs[k % n]]
                if want == 0 or here == hosts:
                    break
                if node in out:
                    continue
                rack = self._node_rack[node]
                if rack in placed and len(placed) < len(racks_all):
                    if node not in held:  # a node met again (vnodes) is held once, as the server holds it
                        held.append(node)
                    continue
                out.append(node)
                here += 1
                want -= 1
                placed.add(rack)
                if len(placed) == len(racks_all):
                    for h in held:
                        if want == 0:
                            break
                        out.append(h)
                        want -= 1
                    held.clear()
        self._cache[pos] = out
        return out

    def _check(self, t: Any) -> int:
        return _check_random_token(t, "token") if isinstance(self._router, RandomTokenRouter) \
            else _check_token(t, "token")

    def replicas_of_token(self, t: int) -> list[str]:
        """The replicas (node names) of a token."""
        shards = self._router.shards
        return [shards[i] for i in self._at(self._router._index_of_token(self._check(t)))]

    def replicas(self, key: Any) -> list[str]:
        """The replicas (node names) of a partition key (as the router reads keys)."""
        return self.replicas_of_token(self._router._key_token(key))

    def token_replica_map(self) -> dict[int, list[str]]:
        """Ring token -> its replicas, for every token of the ring."""
        shards = self._router.shards
        ring = self._router.ring
        return {int(t): [shards[i] for i in self._at(p)]
                for p, t in enumerate(ring if isinstance(ring, list) else ring.tolist())}

    def _replica_table(self) -> np.ndarray:
        if self._table is None:
            rows = [self._at(p) for p in range(len(self._pos_owner))]
            width = max((len(r) for r in rows), default=0)
            table = np.full((len(rows), max(width, 1)), -1, dtype=np.int32)
            for p, r in enumerate(rows):
                table[p, :len(r)] = r
            table.setflags(write=False)
            self._table = table
        return self._table

    def replicas_of_tokens(self, tokens: Any, threads: int | None = None) -> np.ndarray:
        """Replica node indices of many tokens: an int32 array of one row per
        token, in replica order, padded with -1 (a datacenter with fewer
        nodes than its replication factor gives fewer replicas)."""
        r = self._router
        if isinstance(r, RandomTokenRouter):
            pos = np.array([r._index_of_token(self._check(t)) for t in tokens], dtype=np.int64)
        else:
            pos = _native.cassandra_ring_index(r.ring, kernel_array(as_int64(tokens, "tokens")), threads)
        return self._replica_table()[pos]

    def replicas_many(self, keys: Any, threads: int | None = None) -> np.ndarray:
        """Replica node indices of many keys (see :meth:`replicas_of_tokens`);
        keys are read as :meth:`TokenRouter.route_many` reads them."""
        r = self._router
        if isinstance(r, RandomTokenRouter):
            rows: np.ndarray = self._replica_table()[r._positions(keys, threads)]
            return rows
        k = _blob_keys(keys) if r.cql_type == "blob" else keys
        return self.replicas_of_tokens(token_array(k, r.cql_type, threads=threads), threads)


# --------------------------------------------------------------------- RandomPartitioner

MAX_RANDOM_TOKEN = 1 << 127


def random_partitioner_token(key: Any) -> int:
    """``RandomPartitioner``'s token of serialized partition-key bytes: the
    MD5 digest read as a signed 128-bit big-endian integer, made positive
    (``abs``), so tokens run from 0 to ``2**127``.

    >>> random_partitioner_token(b"hello")
    123957004363873451094272536567338222994
    """
    d = hashlib.md5(_bytes_like(key)).digest()
    return abs(int.from_bytes(d, "big", signed=True))


def _fixed_width_keys(keys: Any, ct: str | tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Serialized partition keys as Arrow-style ``(data, offsets)``."""
    if ct == "blob":
        return _native.pack_keys(_blob_keys(keys))
    if isinstance(ct, str):
        t = _type_name(ct)
        if isinstance(keys, np.ndarray) and keys.dtype.kind in "iu" and t in ("int", "bigint", "smallint",
                                                                            "tinyint", "timestamp"):
            width = _INT_RANGES[t][0]
            ints = _int_array(keys, t)
            data = ints.astype(f">i{width}").view(np.uint8)
            return data, np.arange(0, (len(ints) + 1) * width, width, dtype=np.int64)
        if t in ("text", "ascii") and not isinstance(keys, np.ndarray):
            try:
                return _native.pack_keys(keys if isinstance(keys, (list, tuple)) else list(keys))
            except (TypeError, ValueError):
                pass
    vals: list[Any] = keys.tolist() if isinstance(keys, np.ndarray) else list(keys)
    parts = []
    for i, k in enumerate(vals):
        try:
            parts.append(serialize(k, ct))
        except (TypeError, ValueError, OverflowError) as e:
            raise type(e)(f"key at position {i}: {e}") from None
    return _native.pack_keys(parts)


def _check_random_token(t: Any, node: Any) -> int:
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
        raise TypeError(f"token {t!r:.60} of node {node!r} must be an int, not {type(t).__name__}")
    v = int(t)
    if not 0 <= v <= MAX_RANDOM_TOKEN:
        raise ValueError(f"token {v} of node {node!r} is outside the RandomPartitioner range [0, 2**127]")
    return v


@register_router_type("cassandra_random")
class RandomTokenRouter(_TokenRing):
    """Primary ownership on a ``RandomPartitioner`` token ring.

    As :class:`TokenRouter`, but tokens are :func:`random_partitioner_token`
    values (0 .. 2**127) and ring tokens are given in that range.  A key goes
    to the node of the first ring token >= its token, wrapping.

    >>> r = RandomTokenRouter({"n1": [0], "n2": [2**126], "n3": [2**126 + 2**125]}, cql_type="bigint")
    >>> r.route(1), r.route_many([1, 2, 3, 4]).tolist()
    ('n2', [1, 1, 2, 2])
    """

    _routes_instead = ("a RandomPartitioner router routes its own MD5 tokens",
                       "use route_many(keys) or route_tokens(tokens)")
    _hashing = "RandomPartitioner token (Cassandra, MD5)"

    @staticmethod
    def _cli_tokens(n: int) -> list[int]:
        return [i * (MAX_RANDOM_TOKEN // n) for i in range(n)]

    def __init__(self, tokens: Mapping[Any, Iterable[int]], *, cql_type: str | Sequence[str] = "blob",
                 version: int = 1) -> None:
        nodes, pairs = _ring_pairs(tokens, _check_random_token)
        ct = _check_cql_type(cql_type)
        super().__init__(nodes, version=version)
        ring = [p[0] for p in pairs]
        owners = np.array([p[1] for p in pairs], dtype=np.int32)
        top = np.array([t >> 96 for t in ring], dtype=np.uint32)
        index, _ = point_index(top)
        self._set("_ringlist", ring)
        self._set_frozen(_owners=owners, _top=top, _index=index)
        self._set("_cql_type", ct)
        self._finish()

    def _ring_tokens(self) -> list[int]:
        return self._ringlist  # type: ignore[no-any-return]

    @staticmethod
    def _doc_cql_type(cql_type: Any) -> str | tuple[str, ...]:
        if isinstance(cql_type, list):
            cql_type = tuple(cql_type)
        with doc_field("cql_type"):
            if not isinstance(cql_type, (str, tuple)):
                raise TypeError(f"must be a CQL type name or a list of them, not {cql_type!r}")
        return cql_type

    @property
    def ring(self) -> list[int]:
        """All ring tokens, sorted (Python ints: they exceed 64 bits)."""
        return list(self._ringlist)

    def _key_token(self, key: Any) -> int:
        ct = self._cql_type
        return random_partitioner_token(key if ct == "blob" else serialize(key, ct))

    def _index_of_token(self, t: int) -> int:
        i = bisect.bisect_left(self._ringlist, t)
        return 0 if i == len(self._ringlist) else i

    def _route_index_slow(self, key: Any) -> int:
        return int(self._owners[self._index_of_token(self._key_token(key))])

    def route_index(self, key: Any) -> int:
        """The index of the node that owns ``key``."""
        return self._route_index_slow(key)

    def route(self, key: Any) -> str:
        """The node that owns ``key``."""
        return self.shards[self._route_index_slow(key)]

    def route_tokens(self, tokens: Iterable[int], *, out: np.ndarray | None = None) -> np.ndarray:
        """Node indices (int32) for RandomPartitioner tokens (Python ints)."""
        own = self._owners
        res = np.array([own[self._index_of_token(_check_random_token(t, "token"))] for t in tokens],
                       dtype=np.int32)
        return fill_out(out, res)

    def _positions(self, keys: Any, threads: int | None) -> np.ndarray:
        """Ring positions of many keys' tokens (int64).  MD5 runs in C; the
        first 4 digest bytes decide the position unless they meet a ring
        token's first 4 bytes, and then the key is decided on all 128 bits."""
        data, offsets = _fixed_width_keys(keys, self._cql_type)
        u = _native.ketama_hash_offsets(data, offsets, threads).byteswap()  # top 32 bits of the digest
        neg = u >= np.uint32(1 << 31)
        est = np.where(neg, ~u, u)  # top 32 bits of abs(): ~u, or ~u + 1 when the low 96 bits are zero
        top = self._top
        pos = np.searchsorted(top, est, side="left").astype(np.int64)
        near = np.isin(est, top) | (neg & np.isin(est + np.uint32(1), top))
        for i in np.flatnonzero(near).tolist():
            d = hashlib.md5(data[offsets[i]:offsets[i + 1]].tobytes()).digest()
            pos[i] = bisect.bisect_left(self._ringlist, abs(int.from_bytes(d, "big", signed=True)))
        pos[pos == len(top)] = 0
        positions: np.ndarray = pos
        return positions

    def route_many(self, keys: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Node indices (int32 array) for many keys."""
        return fill_out(out, self._owners[self._positions(keys, threads)])

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """Inclusive ``(lo, hi, node index)`` ranges covering ``[0, 2**64-1]``:
        token ``t`` is mapped to ``t >> 63`` (a boundary inside one step of
        2**63 tokens gives that step to the node above it; 2**127 maps to
        2**64 - 1)."""
        full = (1 << 64) - 1
        own = self._owners.tolist()
        out: list[tuple[int, int, int]] = []
        prev = 0
        for t, o in zip(self._ringlist, own):  # ring token t owns tokens (previous, t]
            hi = min(t >> 63, full)
            if hi >= prev:
                out.append((prev, hi, o))
                prev = hi + 1
            if prev > full:
                break
        if prev <= full:
            out.append((prev, full, own[0]))
        return out

    def replicas(self, key: Any, rf: int | Mapping[str, int], *,
                 topology: Mapping[str, tuple[str, str]] | None = None) -> list[str]:
        """The replicas of ``key``: SimpleStrategy for an int ``rf``,
        NetworkTopologyStrategy for ``{datacenter: replicas}`` with
        ``topology`` (see :meth:`TokenRouter.replicas`)."""
        return self._replicas(key, rf, topology)
