"""MongoDB hashed shard keys, reproduced to the bit.

A collection sharded on ``{field: "hashed"}`` places a document by the
64-bit hash of the field's value: the MD5 digest of (seed 0 as 4 bytes,
the value's *canonical* BSON type as 4 bytes, then the value), whose first
8 bytes are read as a little-endian signed integer.  All numbers share one
canonical type and are hashed as the int64 they truncate to, so ``42``,
``42.9`` and ``NumberLong(42)`` hash alike; NaN hashes as 0, a double of
exactly 2**63 as ``-2**63`` (a legacy quirk) and doubles beyond the int64
range clamp.  Chunks are ``[min, max)`` ranges of that signed hash;
:class:`HashedChunkRouter` finds a document's chunk and shard.

Supported values: ``int`` (int64 range), ``float``, ``bool``, ``None``
(null), ``str``, ``bytes`` (BinData subtype 0) or :class:`BinData`,
``uuid.UUID`` (BinData subtype 4), ``datetime.datetime`` (BSON date, ms;
naive means UTC), ``dict`` (embedded document, in order), ``list``/``tuple``
(array), :class:`ObjectId` (or any object with a 12-byte ``binary``
attribute, like ``bson.ObjectId``), :data:`MIN_KEY` / :data:`MAX_KEY`.
Not modelled: Decimal128, regex, code, timestamps, DBRef.

>>> hashed(42), hashed(42.9), hashed("abc")
(-944302157085130861, -944302157085130861, 8478485326885698097)
>>> initial_split_points(4)
[-4611686018427387902, 0, 4611686018427387902]
"""

from __future__ import annotations

import bisect
import datetime as _dt
import struct
import uuid as _uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from shardhash._parallel import kernel_array

from ..routing.base import RawKeyRouter, Router, as_int64, fill_out, register_router_type
from . import _native
from ._common import INT64_MAX, INT64_MIN
from ._doc import doc_field, raw_doc_shards

__all__ = [
    "MIN_KEY",
    "MAX_KEY",
    "BinData",
    "ObjectId",
    "UNDEFINED",
    "Symbol",
    "Regex",
    "Code",
    "CodeWithScope",
    "DBPointer",
    "hashed",
    "hashed_array",
    "initial_split_points",
    "HashedChunkRouter",
]


class _Bound:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name


MIN_KEY = _Bound("MIN_KEY")
"""BSON MinKey: sorts (and bounds chunks) below every value."""
MAX_KEY = _Bound("MAX_KEY")
"""BSON MaxKey: sorts (and bounds chunks) above every value."""
UNDEFINED = _Bound("UNDEFINED")
"""BSON Undefined (deprecated type 0x06)."""


class Symbol(NamedTuple):
    """A BSON Symbol (deprecated type 0x0E): hashed as the string it holds."""

    text: str


class Regex(NamedTuple):
    """A BSON regular expression: the pattern and its option letters (stored sorted)."""

    pattern: str
    flags: str = ""


class Code(NamedTuple):
    """BSON JavaScript code (type 0x0D)."""

    code: str


class CodeWithScope(NamedTuple):
    """BSON JavaScript code with a scope document (deprecated type 0x0F)."""

    code: str
    scope: Mapping[str, Any]


class DBPointer(NamedTuple):
    """The deprecated BSON DBPointer (type 0x0C): a namespace and an ObjectId.
    (A DBRef as drivers write it, ``{"$ref": ..., "$id": ...}``, is a document.)"""

    namespace: str
    oid: bytes


class BinData(NamedTuple):
    """BSON binary data with an explicit subtype (0 generic, 4 UUID, 0x80 user...)."""

    data: bytes
    subtype: int = 0


class ObjectId(NamedTuple):
    """A 12-byte BSON ObjectId (``ObjectId.from_hex("0102...")``)."""

    binary: bytes

    @classmethod
    def from_hex(cls, text: str) -> ObjectId:
        b = bytes.fromhex(text)
        if len(b) != 12:
            raise ValueError(f"an ObjectId is 12 bytes, got {len(b)}")
        return cls(b)


# canonical BSON types (bsontypes.h canonicalizeBSONType)
_C_MINKEY, _C_NULL, _C_NUMBER, _C_STRING, _C_OBJECT, _C_ARRAY = -1, 5, 10, 15, 20, 25
_C_BINDATA, _C_OID, _C_BOOL, _C_DATE, _C_MAXKEY = 30, 35, 40, 45, 127
_C_UNDEFINED, _C_REGEX, _C_DBPOINTER, _C_CODE, _C_CODEWSCOPE = 0, 50, 55, 60, 65


def _cstring(text: str, path: str, what: str) -> bytes:
    b = text.encode("utf-8")
    if b"\x00" in b:
        raise ValueError(f"{path}: a BSON {what} cannot contain NUL characters")
    return b + b"\x00"


def _i32(v: int) -> bytes:
    return struct.pack("<i", v)


def _number_to_long(x: Any) -> int:
    """safeNumberLongForHash."""
    if isinstance(x, float):
        return int(_native.mongo_double_to_long(x))
    v = int(x)
    if not INT64_MIN <= v <= INT64_MAX:
        raise OverflowError(f"{v} does not fit a BSON int64")
    return v


def _ms_since_epoch(d: _dt.datetime) -> int:
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.timezone.utc)
    delta = d - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def _element(v: Any, out: list[bytes], path: str) -> None:
    """Append the hasher's bytes for one value: canonical type, then the value."""
    if v is MIN_KEY or type(v).__name__ == "MinKey":
        out.append(_i32(_C_MINKEY))
    elif v is MAX_KEY or type(v).__name__ == "MaxKey":
        out.append(_i32(_C_MAXKEY))
    elif v is None:
        out.append(_i32(_C_NULL))
    elif v is UNDEFINED:
        out.append(_i32(_C_UNDEFINED))
    elif isinstance(v, Symbol):
        b = _cstring(v.text, path, "symbol")
        out.append(_i32(_C_STRING) + _i32(len(b)) + b)
    elif isinstance(v, Regex):
        out.append(_i32(_C_REGEX) + _cstring(v.pattern, path, "regex pattern") +
                   _cstring("".join(sorted(v.flags)), path, "regex option"))
    elif isinstance(v, Code):
        b = _cstring(v.code, path, "code string")
        out.append(_i32(_C_CODE) + _i32(len(b)) + b)
    elif isinstance(v, CodeWithScope):
        if not isinstance(v.scope, Mapping):
            raise TypeError(f"{path}: the scope of CodeWithScope must be a document (dict)")
        out.append(_i32(_C_CODEWSCOPE) + _cstring(v.code, path, "code string"))
        _document_fields(v.scope, out, path)
    elif isinstance(v, DBPointer):
        if not isinstance(v.oid, bytes) or len(v.oid) != 12:
            raise ValueError(f"{path}: a DBPointer's ObjectId is 12 bytes")
        b = _cstring(v.namespace, path, "namespace")
        out.append(_i32(_C_DBPOINTER) + _i32(len(b)) + b + v.oid)
    elif type(v).__name__ in ("Timestamp", "Decimal128"):
        raise TypeError(f"{path}: BSON {type(v).__name__} values are not modelled: no published vectors pin "
                        "down how current servers hash them (a 2013 hasher test hashes Timestamp as a Date; "
                        "later servers give it its own canonical type)")
    elif isinstance(v, (bool, np.bool_)):
        out.append(_i32(_C_BOOL) + (b"\x01" if v else b"\x00"))
    elif isinstance(v, (int, np.integer)):
        out.append(_i32(_C_NUMBER) + struct.pack("<q", _number_to_long(int(v))))
    elif isinstance(v, (float, np.floating)):
        out.append(_i32(_C_NUMBER) + struct.pack("<q", _number_to_long(float(v))))
    elif isinstance(v, str):
        b = v.encode("utf-8")
        if b"\x00" in b:
            raise ValueError(f"{path}: BSON strings in keys cannot contain NUL characters")
        out.append(_i32(_C_STRING) + _i32(len(b) + 1) + b + b"\x00")
    elif isinstance(getattr(v, "binary", None), bytes) and len(v.binary) == 12:
        out.append(_i32(_C_OID) + v.binary)
    elif isinstance(v, BinData):
        if not 0 <= v.subtype <= 255:
            raise ValueError(f"{path}: BinData subtype must be 0..255, got {v.subtype}")
        data = bytes(v.data)
        out.append(_i32(_C_BINDATA) + _i32(len(data)) + bytes([v.subtype]) + data)
    elif isinstance(v, (bytes, bytearray, memoryview)):
        data = bytes(v)
        sub = getattr(v, "subtype", 0)  # bson.Binary is a bytes subclass with a subtype
        out.append(_i32(_C_BINDATA) + _i32(len(data)) + bytes([sub]) + data)
    elif isinstance(v, _uuid.UUID):
        out.append(_i32(_C_BINDATA) + _i32(16) + b"\x04" + v.bytes)
    elif isinstance(v, _dt.datetime):
        out.append(_i32(_C_DATE) + struct.pack("<q", _ms_since_epoch(v)))
    elif isinstance(v, Mapping):
        out.append(_i32(_C_OBJECT))
        _document_fields(v, out, path)
    elif isinstance(v, (list, tuple)):
        out.append(_i32(_C_ARRAY))
        for i, child in enumerate(v):
            _field(child, str(i).encode(), out, f"{path}[{i}]")
        out.append(_i32(0))
    else:
        raise TypeError(f"{path}: cannot hash a value of type {type(v).__name__} as MongoDB does "
                        f"({v!r:.60}); supported: int, float, bool, None, str, bytes, BinData, "
                        "uuid.UUID, datetime, dict, list, ObjectId, MIN_KEY, MAX_KEY, UNDEFINED, Symbol, "
                        "Regex, Code, CodeWithScope, DBPointer")


def _document_fields(doc: Mapping[Any, Any], out: list[bytes], path: str) -> None:
    """A document's elements (with their field names), then the EOO element."""
    for k, child in doc.items():
        if not isinstance(k, str):
            raise TypeError(f"{path}: document field names must be str, not {type(k).__name__}")
        kb = k.encode("utf-8")
        if b"\x00" in kb:
            raise ValueError(f"{path}: field names cannot contain NUL characters")
        _field(child, kb, out, f"{path}.{k}")
    out.append(_i32(0))  # the EOO element: canonical type 0, no name


def _field(v: Any, name: bytes, out: list[bytes], path: str) -> None:
    # Embedded elements: canonical type, the field name with its NUL, the value.
    part: list[bytes] = []
    _element(v, part, path)
    first = part[0]
    out.append(first[:4] + name + b"\x00" + first[4:])
    out.extend(part[1:])


def hashed(value: Any) -> int:
    """The hashed-index value of ``value`` (signed int64), as MongoDB computes
    it for ``{field: "hashed"}`` shard keys (``convertShardKeyToHashed``).

    >>> hashed(0), hashed(float("nan")), hashed(-1.789)
    (4854801880128277513, 4854801880128277513, 1140205862565771219)
    >>> hashed({"a": "abc", "b": 123})
    4771603801758380216
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(_native.mongo_hash_int64(_number_to_long(int(value))))
    if isinstance(value, (float, np.floating)):
        return int(_native.mongo_hash_int64(_number_to_long(float(value))))
    parts: list[bytes] = [_i32(0)]  # the seed
    _element(value, parts, "value")
    digest = _native.md5(b"".join(parts))
    return int(struct.unpack("<q", digest[:8])[0])


def hashed_array(values: Any, threads: int | None = None) -> np.ndarray:
    """Hashed-index values of many values, as an ``int64`` array.

    Integer and float numpy arrays are hashed in the C core without the GIL;
    anything else value by value with :func:`hashed`.

    >>> hashed_array(np.array([42, 0, 1])).tolist()
    [-944302157085130861, 4854801880128277513, 5902408780260971510]
    """
    arr = values if isinstance(values, np.ndarray) else None
    if arr is None and isinstance(values, (list, tuple)) and values and \
            all(type(v) is int for v in values):
        try:
            arr = np.array(values, dtype=np.int64)
        except OverflowError:
            arr = None
    if arr is not None:
        if arr.ndim != 1:
            raise ValueError(f"values must be one-dimensional, got shape {arr.shape}")
        if arr.dtype.kind == "i":
            return _native.mongo_hash_int64_array(kernel_array(arr, dtype=np.int64), threads)
        if arr.dtype.kind == "u":
            if arr.size and int(arr.max()) > INT64_MAX:
                bad = int(np.flatnonzero(arr > INT64_MAX)[0])
                raise OverflowError(f"value at position {bad} ({int(arr[bad])}) does not fit a BSON int64")
            return _native.mongo_hash_int64_array(arr.astype(np.int64), threads)
        if arr.dtype.kind == "f":
            return _native.mongo_hash_double_array(kernel_array(arr, dtype=np.float64), threads)
        values = arr.tolist()
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        try:
            out[i] = hashed(v)
        except (TypeError, ValueError, OverflowError) as e:
            raise type(e)(f"value at position {i}: {e}") from None
    return out


def initial_split_points(n: int) -> list[int]:
    """The split points MongoDB creates when a hashed collection is sharded
    with ``n`` initial chunks (``calculateHashedSplitPoints``): ``n - 1``
    points, evenly spaced around 0 (``0, ±I, ±2I, ...`` for even ``n``,
    ``±I/2, ±3I/2, ...`` for odd ``n``, with ``I = (2**63 - 1) // n * 2``).

    >>> initial_split_points(3)
    [-3074457345618258602, 3074457345618258602]
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, not {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    interval = (INT64_MAX // n) * 2
    pts: list[int] = []
    cur = 0
    if n % 2 == 0:
        pts.append(0)
        cur = interval
    else:
        cur = interval // 2
    for _ in range((n - 1) // 2):
        pts.append(cur)
        pts.append(-cur)
        cur += interval
    return sorted(pts)


def _bound(v: Any, what: str) -> int | None:
    """A chunk bound: int64, or None/MIN_KEY/MAX_KEY for the open ends."""
    if v is None or v is MIN_KEY or v is MAX_KEY:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{what} must be an int64 hash value, MIN_KEY or MAX_KEY, not {type(v).__name__} ({v!r:.60})")
    iv = int(v)
    if not INT64_MIN <= iv <= INT64_MAX:
        raise ValueError(f"{what} {iv} is outside the int64 range")
    return iv


@register_router_type("mongo_hashed")
class HashedChunkRouter(RawKeyRouter):
    """Route documents to shards by the ``[min, max)`` chunk holding their
    hashed shard-key value.

    ``chunks`` is a list of ``(min, max, shard)``: bounds are int64 hash
    values, with ``MIN_KEY`` (or None) as the first min and ``MAX_KEY`` (or
    None) as the last max -- as ``config.chunks`` lists them.  Chunks must
    tile the whole range: a gap or an overlap is a ValueError.

    >>> r = HashedChunkRouter.from_split_points(initial_split_points(4), ["s0", "s1"])
    >>> r.chunks[0]
    (MIN_KEY, -4611686018427387902, 's0')
    >>> hashed(42), hashed(-1)
    (-944302157085130861, 1140205862565771219)
    >>> r.route(42), r.route_many([42, -1]).tolist()
    ('s1', [1, 0])
    """

    _doc_fields = ("bounds", "owners")

    _routes_instead = ("a MongoDB chunk router routes hashed shard-key values",
                       "use route_many(values) or route_hashed(hashed_values)")
    _hashing = "MongoDB hashed index (MD5 of the BSON value, int64)"

    cli_options = frozenset()  # shardhash topology new

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Any, load: Callable[[str], Router]) -> Router:
        return cls.from_split_points(initial_split_points(len(shards)), shards)

    def __init__(self, chunks: Iterable[tuple[Any, Any, str]], *, version: int = 1) -> None:
        ch = list(chunks)
        if not ch:
            raise ValueError("need at least one chunk")
        parsed = []
        for i, c in enumerate(ch):
            if not (isinstance(c, (tuple, list)) and len(c) == 3):
                raise TypeError(f"chunk {i} must be a (min, max, shard) triple, not {c!r:.60}")
            lo = _bound(c[0], f"chunk {i} min")
            hi = _bound(c[1], f"chunk {i} max")
            if c[0] is MAX_KEY:
                raise ValueError(f"chunk {i}: min cannot be MAX_KEY")
            if c[1] is MIN_KEY:
                raise ValueError(f"chunk {i}: max cannot be MIN_KEY")
            parsed.append((lo, hi, c[2]))
        parsed.sort(key=lambda t: (-(1 << 64)) if t[0] is None else t[0])
        if parsed[0][0] is not None:
            raise ValueError(f"the chunks leave a gap: the first chunk starts at {parsed[0][0]}, not MIN_KEY")
        if parsed[-1][1] is not None:
            raise ValueError(f"the chunks leave a gap: the last chunk ends at {parsed[-1][1]}, not MAX_KEY")
        for i in range(len(parsed)):
            lo, hi, _ = parsed[i]
            if i and lo is None:
                raise ValueError("two chunks start at MIN_KEY (overlap)")
            if hi is not None and lo is not None and hi <= lo:
                raise ValueError(f"chunk [{lo}, {hi}) is empty or reversed")
            if i + 1 < len(parsed):
                nxt = parsed[i + 1][0]
                if hi is None:
                    raise ValueError("a chunk other than the last one ends at MAX_KEY (overlap)")
                if nxt != hi:
                    kind = "gap" if nxt is not None and nxt > hi else "overlap"
                    raise ValueError(f"the chunks leave a {kind} between {hi} and {nxt}")
        owner_ids = [c[2] for c in parsed]
        shards: list[str] = []
        pos: dict[str, int] = {}
        idx = []
        for s in owner_ids:
            if not isinstance(s, str) or not s:
                raise TypeError(f"chunk shard ids must be non-empty str, got {s!r:.60}")
            if s not in pos:
                pos[s] = len(shards)
                shards.append(s)
            idx.append(pos[s])
        super().__init__(shards, version=version)
        mins = np.array([INT64_MIN] + [c[0] for c in parsed[1:]], dtype=np.int64)
        owners = np.array(idx, dtype=np.int32)
        mins.setflags(write=False)
        owners.setflags(write=False)
        self._set("_mins", mins)
        self._set("_owners", owners)
        keys = _native.MongoKeys(mins, owners)  # route/route_index of int, float, ASCII str in C
        self._use_native_keys(keys.capsule(), keys)
        self._finish()

    @classmethod
    def from_split_points(cls, points: Sequence[int], shards: Sequence[str], *, version: int = 1) -> HashedChunkRouter:
        """Chunks between consecutive split points, dealt to ``shards``
        round-robin (chunk ``i`` to ``shards[i % len(shards)]``).  Where a
        real cluster put its chunks is in ``config.chunks``; read it and use
        the constructor for exact routing."""
        if not shards:
            raise ValueError("need at least one shard")
        pts = sorted(int(p) for p in points)
        bounds: list[Any] = [MIN_KEY] + pts + [MAX_KEY]
        return cls([(bounds[i], bounds[i + 1], shards[i % len(shards)]) for i in range(len(bounds) - 1)],
                   version=version)

    @property
    def chunks(self) -> list[tuple[Any, Any, str]]:
        """``(min, max, shard)`` of every chunk, in order."""
        mins = self._mins.tolist()
        out = []
        for i, lo in enumerate(mins):
            a = MIN_KEY if i == 0 else lo
            b = MAX_KEY if i + 1 == len(mins) else mins[i + 1]
            out.append((a, b, self.shards[int(self._owners[i])]))
        return out

    def _doc_params(self) -> dict[str, Any]:
        return {"bounds": [int(x) for x in self._mins.tolist()[1:]], "owners": [int(x) for x in self._owners]}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Any, version: int,
                     key_prefix: int | None) -> HashedChunkRouter:
        shards = raw_doc_shards(shards, key_prefix, "a MongoDB chunk router")
        bounds, owners = params["bounds"], params["owners"]
        if not isinstance(bounds, list) or not isinstance(owners, list) or len(owners) != len(bounds) + 1:
            raise ValueError("params.owners must list one shard index per chunk (len(bounds) + 1)")
        for o in owners:
            if isinstance(o, bool) or not isinstance(o, int) or not 0 <= o < len(shards):
                raise ValueError(f"params.owners holds an invalid shard index {o!r}")
        idle = [shards[i] for i in range(len(shards)) if i not in set(owners)]
        if idle:
            raise ValueError(f"params.owners gives no chunk to shard(s) {idle!r} of the document's shards")
        edges: list[Any] = [MIN_KEY] + list(bounds) + [MAX_KEY]
        with doc_field("bounds"):
            return cls([(edges[i], edges[i + 1], shards[owners[i]]) for i in range(len(owners))], version=version)

    def route_hashed(self, values: Any, *, out: np.ndarray | None = None) -> np.ndarray:
        """Shard indices (int32) for precomputed hashed values (int64)."""
        h = as_int64(values, "values")
        res: np.ndarray = self._owners[np.searchsorted(self._mins, h, side="right") - 1]
        return fill_out(out, res)

    def _route_index_slow(self, key: Any) -> int:
        # route()/route_index() of the keys the compiled path leaves here
        return int(self._owners[bisect.bisect_right(self._mins.tolist(), hashed(key)) - 1]) \
            if len(self._mins) < 64 else int(self.route_hashed([hashed(key)])[0])

    def route_many(self, keys: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Shard indices (int32 array) for many shard-key values, via :func:`hashed_array`."""
        return self._route_keys(keys, out, threads,
                                lambda: self.route_hashed(hashed_array(keys, threads=threads), out=out))

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """Inclusive ``(lo, hi, shard index)`` ranges covering ``[0, 2**64-1]``
        in the hashed-value space shifted by ``2**63`` (``lo = hash + 2**63``),
        for ``shardhash.plan.moved_ranges``."""
        off = 1 << 63
        mins = [int(m) + off for m in self._mins.tolist()]
        own = self._owners.tolist()
        return [(mins[i], (mins[i + 1] - 1) if i + 1 < len(mins) else (1 << 64) - 1, own[i])
                for i in range(len(mins))]
