"""PostgreSQL declarative hash partitioning, reproduced to the bit.

``CREATE TABLE t (...) PARTITION BY HASH (a, b)`` sends a row to the
partition ``(MODULUS m, REMAINDER r)`` whose remainder is ``rowhash % m``,
where ``rowhash`` combines, column by column with ``hash_combine64``, the
type's seeded 64-bit hash (``hashint8extended``, ``hashtextextended``, ...)
with seed :data:`HASH_PARTITION_SEED`.  NULL columns are skipped.  This
module computes the same values, one at a time or over whole arrays, and
routes rows with :class:`HashPartitionRouter`.

Supported column types (PostgreSQL's names; SQL aliases such as ``bigint``,
``integer``, ``double precision`` are accepted):

==============  =============================================================
``int2``        Python ``int`` in [-32768, 32767]
``int4``        ``int`` in [-2**31, 2**31-1]
``int8``        ``int`` in [-2**63, 2**63-1]
``date``        :class:`datetime.date` (arrays: ``datetime64``, whole days)
``timestamp``   naive :class:`datetime.datetime` (arrays: ``datetime64``)
``timestamptz`` aware :class:`datetime.datetime` (arrays: ``datetime64`` as UTC)
``text``        ``str`` (UTF-8, the database encoding; no NUL characters)
``varchar``     same as ``text``
``bpchar``      ``char(n)``: a ``str``, trailing spaces ignored
``bytea``       ``bytes``-like
``uuid``        :class:`uuid.UUID` or its text
``float8``      ``float`` (or ``int``); ``0.0 == -0.0``, every NaN alike
``float4``      ``float``, rounded to single precision first
==============  =============================================================

What is exact, and what is not: the database must use a deterministic
collation for text (the default; ICU nondeterministic collations hash a
sort key) and the UTF-8 encoding; the server must be little-endian (x86-64,
arm64: byte-string types hash differently on big-endian servers).
Enum columns are not modelled.  See docs/compat.md.

>>> hash_extended(42, "int8")
7363975540656877951
>>> hash32("hello", "text")
-1870292951
>>> partition_of((42,), 4, ("int8",))
2
>>> partition_of((1, "a"), 8, ("int4", "text"))
5
"""

from __future__ import annotations

import dataclasses as _dataclasses
import datetime as _dt
import decimal as _decimal
import functools as _functools
import math
import numbers
import operator
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from shardhash._parallel import kernel_array
from shardhash.routing._kernels import prepare_out

from .. import _limits
from ..routing.base import RawKeyRouter, Router, register_router_type
from . import _native
from . import _native_postgres as _pgn
from ._common import int_pair_seq, uuid_bytes
from ._doc import doc_field, raw_doc_shards

__all__ = [
    "HASH_PARTITION_SEED",
    "TYPES",
    "MORE_TYPES",
    "ALL_TYPES",
    "RANGE_TYPES",
    "Range",
    "MULTIRANGE_TYPES",
    "Multirange",
    "NUMERIC",
    "canonical_type",
    "hash_extended",
    "hash32",
    "hash_extended_array",
    "hash32_array",
    "row_hash",
    "partition_of",
    "partition_of_array",
    "HashPartitionRouter",
]

#: ``HASH_PARTITION_SEED`` of PostgreSQL's ``src/include/catalog/partition.h``.
HASH_PARTITION_SEED: int = 0x7A5B22367996DCFD

#: The column types this module hashes, by PostgreSQL's own names.
TYPES = ("int2", "int4", "int8", "date", "timestamp", "timestamptz", "text", "varchar",
         "bpchar", "bytea", "uuid", "float4", "float8")
#: More column types, hashed through the integer kernels: bool as hashchar
#: (0/1), oid as hashoid, interval as hashint8 of its span (interval_hash_extended).
MORE_TYPES = ("bool", "oid", "interval")
ALL_TYPES = TYPES + MORE_TYPES
_INT_LIKE = MORE_TYPES
#: ``numeric``: hash_numeric(_extended) of its base-10000 digits (Python int or decimal.Decimal).
NUMERIC = "numeric"
#: Range types and their element types (``hash_range_extended``).
RANGE_TYPES = {"int4range": "int4", "int8range": "int8", "daterange": "date", "tsrange": "timestamp",
               "tstzrange": "timestamptz", "numrange": "numeric"}
_DISCRETE = ("int4range", "int8range", "daterange")  # canonical form [lower, upper)
#: Multirange types and their range types (``hash_multirange_extended``).
MULTIRANGE_TYPES = {"int4multirange": "int4range", "int8multirange": "int8range",
                    "datemultirange": "daterange", "tsmultirange": "tsrange", "tstzmultirange": "tstzrange",
                    "nummultirange": "numrange"}
_R_EMPTY, _R_LB_INC, _R_UB_INC, _R_LB_INF, _R_UB_INF = 0x01, 0x02, 0x04, 0x08, 0x10


@_dataclasses.dataclass(frozen=True)
class Range:
    """A range value: ``lower``/``upper`` (None: unbounded), ``bounds`` one of
    ``"[)"``, ``"[]"``, ``"(]"``, ``"()"``; ``empty=True`` for ``'empty'``.
    (Not a tuple, so that a one-column key's value is not read as a row.)"""

    lower: Any = None
    upper: Any = None
    bounds: str = "[)"
    empty: bool = False


@_dataclasses.dataclass(frozen=True)
class Multirange:
    """A multirange value: its ranges (:class:`Range` or ``"empty"``), in any
    order; PostgreSQL sorts them and merges those that overlap or touch, and
    so does the hash.  ``Multirange()`` is the empty multirange."""

    ranges: tuple[Any, ...] = ()

    def __init__(self, ranges: Any = ()) -> None:
        if isinstance(ranges, (str, Range)):
            raise TypeError("Multirange takes a sequence of ranges, e.g. Multirange([Range(1, 3)])")
        object.__setattr__(self, "ranges", tuple(ranges))


_ALIASES = {
    "smallint": "int2", "smallserial": "int2", "serial2": "int2",
    "integer": "int4", "int": "int4", "serial": "int4", "serial4": "int4",
    "bigint": "int8", "bigserial": "int8", "serial8": "int8",
    "timestamp without time zone": "timestamp",
    "timestamp with time zone": "timestamptz",
    "character varying": "varchar",
    "character": "bpchar", "char": "bpchar",
    "double precision": "float8", "real": "float4",
    "boolean": "bool",
    "decimal": "numeric",
}

_INT_RANGE = {"int2": (-(1 << 15), (1 << 15) - 1), "int4": (-(1 << 31), (1 << 31) - 1),
              "int8": (-(1 << 63), (1 << 63) - 1)}
_INT_DTYPE = {"int2": np.int16, "int4": np.int32, "int8": np.int64}

_EPOCH_DATE_ORD = _dt.date(2000, 1, 1).toordinal()
_EPOCH_TS = _dt.datetime(2000, 1, 1)
_UNIX_TO_PG_DAYS = 10957                      # 1970-01-01 -> 2000-01-01
_UNIX_TO_PG_US = 946684800 * 1_000_000
# PostgreSQL's accepted ranges, in its internal units since 2000-01-01.
_DATE_MIN, _DATE_MAX = -2451545, 2145031948    # 4714-11-24 BC .. 5874897-12-31
_TS_MIN, _TS_MAX = -211813488000000000, 9223371331199999999   # 4714-11-24 BC .. 294276 AD

_M64 = (1 << 64) - 1
_TYPMOD = re.compile(r"\s*\(\s*\d+\s*(?:,\s*-?\d+\s*)?\)")  # varchar(20), numeric(10, 2)
_TEXT_TYPES = ("text", "varchar", "bpchar")

# Key kinds after conversion.
_U32, _FLOAT, _BYTES = 0, 1, 2


def canonical_type(type: str) -> str:
    """PostgreSQL's name for a column type, from it or an SQL alias.

    Length and precision modifiers do not change the hash and are dropped.

    >>> canonical_type("bigint"), canonical_type("character varying(64)"), canonical_type("char(3)")
    ('int8', 'varchar', 'bpchar')
    """
    if not isinstance(type, str):
        raise TypeError(f"type must be a str such as 'int8', not {type!r}")
    t = " ".join(_TYPMOD.sub(" ", type.strip().lower()).split())   # varchar(20) -> varchar
    if t.endswith("[]"):  # an array of a supported type (int4[][] is int4[]: dimensions are not types)
        base = t.rstrip("[] ")
        return canonical_type(base) + "[]" if base else canonical_type(type.strip()[:-2] or "?")
    if t.startswith("(") and t.endswith(")"):  # a composite type, described by its field types
        return "(" + ",".join(_composite_fields(t)) + ")"
    t = _ALIASES.get(t, t)
    if t in RANGE_TYPES or t == NUMERIC or t in MULTIRANGE_TYPES:
        return t
    if t not in ALL_TYPES:
        raise ValueError(f"unsupported PostgreSQL type {type!r}; supported: {', '.join(ALL_TYPES)}")
    return t


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}")
    s = int(seed)
    if not -(1 << 63) <= s <= _M64:
        raise ValueError(f"seed {s} does not fit in 64 bits")
    return s & _M64


def _describe(value: Any) -> str:
    r = repr(value)
    if len(r) > 60:
        r = r[:57] + "..."
    return f"{r} (type {type(value).__name__})"


# ------------------------------------------------------------------ scalars

def _int_value(value: Any, t: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{t} value must be an int, not {_describe(value)}")
    v = operator.index(value)
    lo, hi = _INT_RANGE[t]
    if not lo <= v <= hi:
        raise ValueError(f"value {v} out of range for {t} [{lo}, {hi}]")
    return v


def _date_days(value: Any) -> int:
    if isinstance(value, _dt.datetime) or not isinstance(value, _dt.date):
        raise TypeError(f"date value must be a datetime.date, not {_describe(value)}")
    return value.toordinal() - _EPOCH_DATE_ORD


def _timestamp_us(value: Any, t: str) -> int:
    if not isinstance(value, _dt.datetime):
        raise TypeError(f"{t} value must be a datetime.datetime, not {_describe(value)}")
    if t == "timestamp":
        if value.tzinfo is not None and value.utcoffset() is not None:
            raise ValueError(f"timestamp value must be naive (use 'timestamptz'): {value!r}")
        naive = value.replace(tzinfo=None)
    else:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"timestamptz value must be timezone-aware: {value!r}")
        naive = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return (naive - _EPOCH_TS) // _dt.timedelta(microseconds=1)


def _beyond_unicode(s: str) -> bool:
    """True if ``s`` holds a code point above U+10FFFF (numpy str arrays can
    produce such strings; PostgreSQL cannot store them)."""
    if s.isascii():
        return False
    return bool((np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype="<u4") > 0x10FFFF).any())


def _text_bytes(value: Any, t: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"{t} value must be a str, not {_describe(value)}")
    if "\x00" in value:
        raise ValueError(f"{t} value cannot contain NUL characters: {value!r}")
    if _beyond_unicode(value):
        raise ValueError(f"{t} value holds a code point beyond U+10FFFF: {value!r}")
    text: str = value.rstrip(" ") if t == "bpchar" else value   # char(n) ignores trailing spaces
    return text.encode("utf-8")


def _bytea_bytes(value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"bytea value must be bytes-like, not {_describe(value)}")
    return bytes(value)


def _uuid_bytes(value: Any) -> bytes:
    return uuid_bytes(value, lambda text: f"invalid uuid text {text!r}",
                      lambda v: f"uuid value must be a uuid.UUID or str, not {_describe(v)}")


def _float_value(value: Any, t: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{t} value must be a float, not {_describe(value)}")
    try:
        v = float(value)
    except OverflowError:
        raise ValueError(f"value {value} out of range for {t}") from None
    if t == "float4" and not math.isnan(v):
        try:
            v = struct.unpack("<f", struct.pack("<f", v))[0]
        except OverflowError:
            raise ValueError(f"value {value} out of range for float4") from None
    return v


def _bool_value(value: Any) -> int:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"a bool value must be True or False, not {_describe(value)}")
    return int(value)


def _oid_value(value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"an oid value must be an int, not {_describe(value)}")
    v = int(value)
    if not 0 <= v <= 0xFFFFFFFF:
        raise ValueError(f"oid value {v} is out of range (0..4294967295)")
    return v


_USECS_PER_DAY = 86_400_000_000


def _interval_span(value: Any) -> int:
    """``interval_cmp_value`` cut to 64 bits, as ``interval_hash_extended``
    hashes it: ``time + (months * 30 + days) * 86400e6`` microseconds.  A
    ``datetime.timedelta`` (no months), or a ``(months, days, microseconds)``
    tuple as PostgreSQL stores an interval."""
    if isinstance(value, _dt.timedelta):
        months, days, time = 0, value.days, value.seconds * 1_000_000 + value.microseconds
    elif isinstance(value, tuple) and len(value) == 3 and all(
            isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) for x in value):
        months, days, time = (int(x) for x in value)
        if not (-(1 << 31) <= months < (1 << 31) and -(1 << 31) <= days < (1 << 31)
                and -(1 << 63) <= time < (1 << 63)):
            raise ValueError(f"interval {value!r}: months and days must fit int32, microseconds int64")
    else:
        raise TypeError("an interval value must be a datetime.timedelta or a (months, days, microseconds) "
                        f"tuple, not {_describe(value)}")
    span = (time + (months * 30 + days) * _USECS_PER_DAY) & _M64
    return span - (1 << 64) if span >> 63 else span


def _scalar_key(value: Any, t: str) -> tuple[int, Any]:
    if value is None:
        raise TypeError(f"cannot hash NULL (None) as {t}; rows skip NULL columns (see partition_of)")
    if t == "bool":
        return _U32, _bool_value(value)
    if t == "oid":
        return _U32, _oid_value(value)
    if t == "interval":
        return _U32, _native.fold_int8(_interval_span(value))
    if t in ("int2", "int4"):
        return _U32, _int_value(value, t) & 0xFFFFFFFF
    if t == "int8":
        return _U32, _native.fold_int8(_int_value(value, t))
    if t == "date":
        return _U32, _date_days(value) & 0xFFFFFFFF
    if t in ("timestamp", "timestamptz"):
        us = _timestamp_us(value, t)
        if not _TS_MIN <= us <= _TS_MAX:
            raise ValueError(f"{t} value out of PostgreSQL's range: {value!r}")
        return _U32, _native.fold_int8(us)
    if t in _TEXT_TYPES:
        return _BYTES, _text_bytes(value, t)
    if t == "bytea":
        return _BYTES, _bytea_bytes(value)
    if t == "uuid":
        return _BYTES, _uuid_bytes(value)
    return _FLOAT, _float_value(value, t)


def _hash_extended_py(value: Any, type: str, seed: int = HASH_PARTITION_SEED) -> int:
    """The type's seeded 64-bit hash (hash opclass proc 2), as an unsigned int.

    ``hash_extended(v, "int8", s)`` equals ``hashint8extended(v, s)`` in SQL
    (which shows it signed: take it modulo ``2**64``).

    >>> hash_extended(42, "bigint")
    7363975540656877951
    >>> hash_extended(-0.0, "float8", seed=7)
    7
    """
    t = canonical_type(type)
    s = _check_seed(seed)
    if t.endswith("[]"):
        return _array_hash_one(value, t[:-2], s)
    if t in RANGE_TYPES:
        return _range_hash(value, t, s)
    if t in MULTIRANGE_TYPES:
        return _multirange_hash(value, t, s)
    if t.startswith("("):
        return _composite_hash(value, t, s)
    if t == NUMERIC:
        return _numeric_hash(value, s)
    kind, key = _scalar_key(value, t)
    if kind == _U32:
        return int(_native.hash_uint32_extended(key, s))
    if kind == _FLOAT:
        return int(_native.float8_extended(key, s))
    return int(_native.hash_bytes_extended(key, s))


_native._set_fallbacks(hash_extended=_hash_extended_py,
                       pg_type_codes={**{t: t for t in ALL_TYPES}, **_ALIASES})
# hash_extended(value, type, seed=HASH_PARTITION_SEED): the type's seeded
# 64-bit hash; int2/4/8, text/varchar/bpchar, bytea, uuid, date and timestamp
# values of the exact Python types in C, everything else via _hash_extended_py.
hash_extended = _native.hash_extended


def hash32(value: Any, type: str) -> int:
    """The type's unseeded 32-bit hash (``hashint4``, ``hashtext``, ...), signed.

    This is the hash Citus distributes rows by (``worker_hash``).

    >>> hash32(42, "int4"), hash32(42, "int8"), hash32("hello", "text")
    (1509752520, 1509752520, -1870292951)
    """
    t = canonical_type(type)
    if t in MULTIRANGE_TYPES or (t.startswith("(") and not t.endswith("[]")):
        h = _multirange_hash(value, t, None) if t in MULTIRANGE_TYPES else _composite_hash(value, t, None)
        return h - (1 << 32) if h >> 31 else h
    if t.endswith("[]") or t in RANGE_TYPES or t == NUMERIC:
        h = _array_hash_one(value, t[:-2], None) if t.endswith("[]") else \
            _numeric_hash(value, None) if t == NUMERIC else _range_hash(value, t, None)
        return h - (1 << 32) if h >> 31 else h
    kind, key = _scalar_key(value, t)
    if kind == _U32:
        return int(_native.hash_uint32(key))
    if kind == _FLOAT:
        return int(_native.float8_32(key))
    return int(_native.hash_bytes(key))


# ------------------------------------------------------------------- arrays

class _Keys:
    """Converted array keys: one of ints (int16/32/64 array), floats, fixed, varlen."""

    __slots__ = ("kind", "a", "b", "n", "isnull")

    def __init__(self, kind: str, a: Any, b: Any, n: int, isnull: np.ndarray | None) -> None:
        self.kind, self.a, self.b, self.n, self.isnull = kind, a, b, n, isnull


def _is_arrow(values: Any) -> bool:
    return type(values).__module__.split(".")[0] == "pyarrow"


def _varlen_from_bytes(items: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    n = len(items)
    offsets = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.fromiter(map(len, items), dtype=np.int64, count=n), out=offsets[1:])
    data = np.frombuffer(b"".join(items), dtype=np.uint8)
    return data, offsets


def _arrow_keys(values: Any, t: str, allow_null: bool) -> _Keys:
    import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if not isinstance(values, pa.Array):
        raise TypeError(f"unsupported Arrow object {type(values).__name__}")
    n = len(values)
    isnull = None
    if values.null_count:
        if not allow_null:
            raise TypeError(f"cannot hash NULLs as {t} (null at position "
                            f"{int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])})")
        isnull = values.is_null().to_numpy(zero_copy_only=False).astype(np.uint8)
    ty = values.type
    if t in ("text", "varchar", "bytea") and (pa.types.is_string(ty) or pa.types.is_large_string(ty)
                                               or pa.types.is_binary(ty) or pa.types.is_large_binary(ty)):
        is_str = pa.types.is_string(ty) or pa.types.is_large_string(ty)
        if (t == "bytea") == is_str:
            want = "binary" if t == "bytea" else "string"
            raise TypeError(f"{t} values must be an Arrow {want} array, not {ty}")
        arr = values.cast(pa.large_binary())
        bufs = arr.buffers()
        offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset:arr.offset + n + 1]
        data = (np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None
                else np.zeros(0, dtype=np.uint8))
        if t != "bytea" and n:
            body = data[offsets[0]:offsets[n]]
            if body.size and not body.all():
                zero_at = np.flatnonzero(body == 0) + offsets[0]
                rows = np.searchsorted(offsets, zero_at, side="right") - 1
                if isnull is not None:
                    rows = rows[isnull[rows] == 0]         # bytes under a null slot do not count
                if rows.size:
                    raise ValueError(f"{t} value at position {int(rows[0])} contains a NUL character")
        return _Keys("varlen", kernel_array(data), kernel_array(offsets), n, isnull)
    if isnull is not None or not (pa.types.is_integer(ty) or pa.types.is_floating(ty)
                                  or pa.types.is_temporal(ty)):
        return _list_keys(values.to_pylist(), t, allow_null)
    return _numpy_keys(values.to_numpy(zero_copy_only=False), t, allow_null)


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _datetime_ints(arr: np.ndarray, t: str) -> np.ndarray:
    if np.isnat(arr).any():
        raise ValueError(f"NaT at position {_first_bad(np.isnat(arr))} cannot be hashed as {t}")
    if t == "date":
        days = arr.astype("datetime64[D]")
        if (days.astype(arr.dtype) != arr).any():
            pos = _first_bad(days.astype(arr.dtype) != arr)
            raise ValueError(f"date value at position {pos} is not a whole day: {arr[pos]}")
        v = days.astype(np.int64)
        lo, hi = _DATE_MIN + _UNIX_TO_PG_DAYS, _DATE_MAX + _UNIX_TO_PG_DAYS
        bad = (v < lo) | (v > hi)
        if bad.any():
            raise ValueError(f"date value at position {_first_bad(bad)} out of PostgreSQL's range")
        return (v - _UNIX_TO_PG_DAYS).astype(np.int32)
    us = arr.astype("datetime64[us]")
    if (us.astype(arr.dtype) != arr).any():
        pos = _first_bad(us.astype(arr.dtype) != arr)
        raise ValueError(f"{t} value at position {pos} has sub-microsecond precision: {arr[pos]}")
    v = us.astype(np.int64)
    # datetime64[us] never exceeds PostgreSQL's upper bound once shifted to
    # 2000-01-01; only the lower one (4714-11-24 BC) needs checking.
    bad = v < _TS_MIN + _UNIX_TO_PG_US
    if bad.any():
        raise ValueError(f"{t} value at position {_first_bad(bad)} out of PostgreSQL's range")
    return v - _UNIX_TO_PG_US


def _numpy_keys(arr: np.ndarray, t: str, allow_null: bool) -> _Keys:
    n = len(arr)
    k = arr.dtype.kind
    if k == "O":
        return _list_keys(arr.tolist(), t, allow_null)
    if t in _INT_RANGE:
        if k not in "iu":
            raise TypeError(f"{t} values must be integers, not an array of {arr.dtype}")
        lo, hi = _INT_RANGE[t]
        if n and (np.iinfo(arr.dtype).min < lo or np.iinfo(arr.dtype).max > hi):
            mn, mx = arr.min(), arr.max()
            if mn < lo or mx > hi:
                pos = _first_bad((arr < lo) | (arr > hi))
                raise ValueError(f"value {int(arr[pos])} at position {pos} out of range for {t} [{lo}, {hi}]")
        return _Keys("int", kernel_array(arr, dtype=_INT_DTYPE[t]), None, n, None)
    if t in ("date", "timestamp", "timestamptz"):
        if k != "M":
            raise TypeError(f"{t} values must be datetime64 or datetime objects, not {arr.dtype}")
        return _Keys("int", kernel_array(_datetime_ints(arr, t)), None, n, None)
    if t in ("float8", "float4"):
        if k not in "fiu":
            raise TypeError(f"{t} values must be floats, not an array of {arr.dtype}")
        with np.errstate(over="ignore"):
            f = np.asarray(arr, dtype=np.float64)
            if t == "float4":
                f32 = f.astype(np.float32)
                bad = np.isinf(f32) & ~np.isinf(f)
                if bad.any():
                    pos = _first_bad(bad)
                    raise ValueError(f"value {f[pos]} at position {pos} out of range for float4")
                f = f32.astype(np.float64)
        return _Keys("float", kernel_array(f), None, n, None)
    if t == "uuid":
        if arr.dtype == np.uint8 and arr.ndim == 2 and arr.shape[1] == 16:
            return _Keys("fixed", kernel_array(arr).reshape(-1), 16, n, None)
        if k == "U":
            return _list_keys(arr.tolist(), t, allow_null)
        raise TypeError(f"uuid values must be uuid.UUID/str objects or an (n, 16) uint8 array, not {arr.dtype}")
    if t in _TEXT_TYPES:
        if k != "U":
            raise TypeError(f"{t} values must be str, not an array of {arr.dtype}")
        return _list_keys(arr.tolist(), t, allow_null)
    # bytea
    if k == "S":
        raise TypeError("bytea values cannot come from a numpy bytes_ array (it drops trailing NUL "
                        "bytes); pass a list or an object array of bytes")
    raise TypeError(f"bytea values must be bytes, not an array of {arr.dtype}")


def _varlen_fast(items: list[Any], t: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Data and offsets of a list of plain str (text) or bytes (bytea),
    packed in C; None when the general per-value path is needed (other
    types, subclasses, NUL characters, unencodable text), which also reports
    errors."""
    if t == "bytea":
        if _native.first_not_type(items, bytes) >= 0:
            return None
        packed: tuple[np.ndarray, np.ndarray] = _native.pack_keys(items)
        return packed
    # one C pass for a list of ASCII str (the usual case), a second for the others
    first = _native.first_not_ascii_str(items)
    if first >= 0 and _native.first_not_type(items, str) >= 0:
        return None
    if t == "bpchar":
        items = [x.rstrip(" ") for x in items]
    if first >= 0 and _beyond_unicode("".join(items[first:])):  # (numpy's str can hold them)
        return None
    try:
        packed = _native.pack_keys(items)
    except ValueError:  # a lone surrogate has no UTF-8 (UnicodeEncodeError)
        return None
    if _native.find_byte(packed[0], 0) >= 0:  # NUL: refused, with its position, by the general path
        return None
    return packed


# The integer-like types _pgn.int_column reads (dates as days, timestamps as microseconds).
_INT_CODES = {**{t: _pgn.PG_CODES[t] for t in ("int2", "int4", "int8", "date", "timestamp")},
              "timestamptz": _pgn.RANGE_ELEMENT_CODES["timestamptz"]}


def _list_keys(items: list[Any], t: str, allow_null: bool) -> _Keys:
    n = len(items)
    isnull = None
    pos = _native.first_of_type(items, type(None))  # the first NULL, by a C loop
    if pos >= 0:
        if not allow_null:
            raise TypeError(f"cannot hash NULL (None) at position {pos} as {t}")
        isnull = np.fromiter((x is None for x in items), dtype=np.uint8, count=n)
    code = _INT_CODES.get(t)
    if code is not None:  # one C pass over exact ints, dates and datetimes (NULLs too)
        got = _pgn.int_column(items, code)
        if got is not None:
            vals = got[0] if t in ("int8", "timestamp", "timestamptz") else \
                got[0].astype(_INT_DTYPE.get(t, np.int32))
            return _Keys("int", vals, None, n, isnull)
    try:
        if t in _INT_RANGE:
            out = np.empty(n, dtype=_INT_DTYPE[t])
            for i, x in enumerate(items):
                out[i] = 0 if x is None else _int_value(x, t)
            return _Keys("int", out, None, n, isnull)
        if t == "date":
            out = np.empty(n, dtype=np.int32)
            for i, x in enumerate(items):
                out[i] = 0 if x is None else _date_days(x)
            return _Keys("int", out, None, n, isnull)
        if t in ("timestamp", "timestamptz"):
            out = np.empty(n, dtype=np.int64)
            for i, x in enumerate(items):
                if x is None:
                    out[i] = 0
                    continue
                us = _timestamp_us(x, t)
                if not _TS_MIN <= us <= _TS_MAX:
                    raise ValueError(f"{t} value out of PostgreSQL's range: {x!r}")
                out[i] = us
            return _Keys("int", out, None, n, isnull)
        if t in ("float8", "float4"):
            f = np.fromiter((0.0 if x is None else _float_value(x, t) for x in items),
                            dtype=np.float64, count=n)
            return _Keys("float", f, None, n, isnull)
        if t == "uuid":
            blob = b"".join(b"\0" * 16 if x is None else _uuid_bytes(x) for x in items)
            return _Keys("fixed", np.frombuffer(blob, dtype=np.uint8), 16, n, isnull)
        if t in _TEXT_TYPES or t == "bytea":
            blank = b"" if t == "bytea" else ""
            fast = _varlen_fast(items if isnull is None else [blank if x is None else x for x in items], t)
            if fast is not None:
                return _Keys("varlen", fast[0], fast[1], n, isnull)
        if t == "bytea":
            data, offsets = _varlen_from_bytes([b"" if x is None else _bytea_bytes(x) for x in items])
        else:
            data, offsets = _varlen_from_bytes([b"" if x is None else _text_bytes(x, t) for x in items])
        return _Keys("varlen", data, offsets, n, isnull)
    except (TypeError, ValueError) as exc:
        # Name the position of the offending value.
        for i, x in enumerate(items):
            if x is None:
                continue
            try:
                _scalar_key(x, t)
            except (TypeError, ValueError):
                raise type(exc)(f"at position {i}: {exc}") from None
        raise


# ---------------------------------------------------------------------- numeric
# hash_numeric(_extended): lookup3 over the value's base-10000 digits (int16,
# little-endian) without leading and trailing zero digits, xor the weight (the
# first kept digit's power of 10000); the sign is not hashed; zero hashes to
# seed - 1 (32-bit: -1), NaN and infinities to the seed (32-bit: 0).


def _numeric_digits(value: Any) -> tuple[bytes, int] | str:
    """(digit bytes, weight), or "zero" / "special"."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, _decimal.Decimal)):
        raise TypeError(f"a numeric value must be an int or a decimal.Decimal, not {_describe(value)}")
    d = _decimal.Decimal(int(value)) if isinstance(value, (int, np.integer)) else value
    if not d.is_finite():
        if d.is_snan():
            raise ValueError("a signalling NaN is not a PostgreSQL numeric")
        return "special"
    _sign, dig, exp = d.as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, dig)).lstrip("0")  # value = int(digits) * 10**exp
    if not digits:
        return "zero"
    intlen = len(digits) + exp  # digits before the decimal point (may be <= 0)
    if exp >= 0:
        ipart, fpart = digits + "0" * exp, ""
    elif intlen > 0:
        ipart, fpart = digits[:intlen], digits[intlen:]
    else:
        ipart, fpart = "", "0" * (-intlen) + digits
    ipart = "0" * (-len(ipart) % 4) + ipart
    fpart = fpart + "0" * (-len(fpart) % 4)
    groups = [int(ipart[i:i + 4]) for i in range(0, len(ipart), 4)] + \
        [int(fpart[i:i + 4]) for i in range(0, len(fpart), 4)]
    weight = len(ipart) // 4 - 1
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    return struct.pack(f"<{len(groups)}h", *groups), weight


def _numeric_hash(value: Any, seed: int | None) -> int:
    """The numeric's extended hash with ``seed``, or its 32-bit hash (unsigned) for None."""
    if value is None:
        raise TypeError("cannot hash NULL (None) as numeric; rows skip NULL columns (see partition_of)")
    got = _numeric_digits(value)
    if isinstance(got, str):
        if got == "special":
            return 0 if seed is None else seed
        return 0xFFFFFFFF if seed is None else (seed - 1) & _M64  # zero
    data, weight = got
    if seed is None:
        return (int(_native.hash_bytes(data)) ^ weight) & 0xFFFFFFFF
    return (int(_native.hash_bytes_extended(data, seed)) ^ weight) & _M64


# ------------------------------------------------------------------- range types
# hash_range(_extended): the flags byte's hash, xor the lower bound's hash,
# rotated (each 32-bit half left by one), xor the upper bound's hash; a
# missing bound hashes 0.  Discrete ranges are canonical first: [lower, upper).


def _check_bound(b: Any, et: str) -> None:
    """A range bound's own checks, as its element type's values get."""
    if et == NUMERIC:
        if type(b) is int or (type(b) is _decimal.Decimal and not b.is_snan()):
            return  # what _numeric_digits takes without a word, checked without its digits
        _numeric_digits(b)
    else:
        _scalar_key(b, et)


def _ord(v: Any) -> Any:
    """A bound's sort key: the value itself, but a numeric NaN sorts above
    every other numeric (and equals itself), as in PostgreSQL."""
    if isinstance(v, _decimal.Decimal):
        return (1, 0) if v.is_nan() else (0, v)
    return (0, v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else v


def _range_parts(value: Any, t: str) -> tuple[int, Any, Any]:
    """The flags and bounds of a range value of type ``t``, checked and
    canonical as range_serialize leaves them (a daterange's bounds as days
    since 2000-01-01)."""
    if isinstance(value, str) and value == "empty":
        return _R_EMPTY, None, None
    if not isinstance(value, Range):
        raise TypeError(f"a {t} value must be a Range(lower, upper, bounds) or 'empty', not {_describe(value)}")
    if value.empty:
        return _R_EMPTY, None, None
    if value.bounds not in ("[)", "[]", "(]", "()"):
        raise ValueError(f"range bounds must be one of [), [], (], (), not {value.bounds!r}")
    et = RANGE_TYPES[t]
    lo, hi = value.lower, value.upper
    lo_inc, hi_inc = value.bounds[0] == "[", value.bounds[1] == "]"
    for b in (lo, hi):
        if b is not None:
            _check_bound(b, et)  # the bound's own checks
    # as range_serialize: the bounds as given first, then (not empty) the canonical form, checked again
    if lo is not None and hi is not None:
        if _ord(lo) > _ord(hi):
            raise ValueError(f"range lower bound must be less than or equal to range upper bound: {value!r}")
        if _ord(lo) == _ord(hi) and not (lo_inc and hi_inc):
            return _R_EMPTY, None, None
    if t in _DISCRETE:
        if t == "daterange":  # in days since 2000-01-01 from here: 9999-12-31 + 1 day is a PostgreSQL date
            lo = None if lo is None else _date_days(lo)
            hi = None if hi is None else _date_days(hi)
        if lo is not None and not lo_inc:
            lo, lo_inc = lo + 1, True
        if hi is not None and hi_inc:
            hi, hi_inc = hi + 1, False
        if t != "daterange":  # (a datetime.date + 1 day is always within PostgreSQL's dates)
            for b in (lo, hi):
                if b is not None:
                    _scalar_key(b, et)  # lower + 1 / upper + 1 may leave the element type's range
        if lo is not None and hi is not None and lo == hi:
            return _R_EMPTY, None, None
    flags = (_R_LB_INF if lo is None else _R_LB_INC if lo_inc else 0) | \
        (_R_UB_INF if hi is None else _R_UB_INC if hi_inc else 0)
    return flags, lo, hi


def _range_hash(value: Any, t: str, seed: int | None) -> int:
    """The range's extended hash with ``seed``, or its 32-bit hash (unsigned) for None."""
    if value is None:
        raise TypeError(f"cannot hash NULL (None) as {t}; rows skip NULL columns (see partition_of)")
    flags, lo, hi = _range_parts(value, t)
    return _parts_hash(flags, lo, hi, t, seed)


def _parts_hash(flags: int, lo: Any, hi: Any, t: str, seed: int | None) -> int:
    """hash_range(_extended) of a canonical range given by _range_parts."""
    et = "int4" if t == "daterange" else RANGE_TYPES[t]  # days: date's hash is hashint4's
    if seed is None:
        lh = hash32(lo, et) & 0xFFFFFFFF if lo is not None else 0
        uh = hash32(hi, et) & 0xFFFFFFFF if hi is not None else 0
        r = (int(_native.hash_uint32(flags)) & 0xFFFFFFFF) ^ lh
        return (((r << 1) | (r >> 31)) & 0xFFFFFFFF) ^ uh
    lh = hash_extended(lo, et, seed) if lo is not None else 0
    uh = hash_extended(hi, et, seed) if hi is not None else 0
    r = int(_native.hash_uint32_extended(flags, seed)) ^ lh
    r = ((r << 1) & 0xFFFFFFFEFFFFFFFE) | ((r >> 31) & 0x100000001)
    return r ^ uh


def _null_at(v: Any, i: int, t: str, allow_null: bool) -> bool:
    """True when the value at position ``i`` is NULL (None) and NULLs are
    allowed; a TypeError naming the position when they are not."""
    if v is None and not allow_null:
        raise TypeError(f"value at position {i} is NULL (None): cannot hash NULL as {t}")
    return v is None


# Batches of range, multirange and composite values.  The compiled path
# (_native_postgres) reads ranges of int4/int8/date/timestamp/timestamptz
# into canonical (flags, lower, upper) columns, multiranges into their
# sorted and merged ranges, and composites into one column per field; C
# kernels hash those (a composite's fields through the element types' own
# batch paths, folded with hash_record's r * 31 + h).  A value the compiled
# path does not read (another type, a subclass, a bad value) is hashed --
# or refused, naming its position -- by the one-value functions above, which
# stay the reference.  Numeric values are read in C too (_numeric_hasher);
# numranges are checked in Python and their bounds hashed by that batch;
# nummultiranges take the one-value path whole.

_Hasher = Callable[[int | None, int | None], np.ndarray]


def _range_keys(values: Any, t: str, allow_null: bool) -> _Keys:
    items = values.to_pylist() if _is_arrow(values) else list(values)
    pos = _native.first_of_type(items, type(None))
    isnull = None
    if pos >= 0:
        _null_at(None, pos, t, allow_null)  # raises unless NULLs are allowed
        isnull = np.fromiter((x is None for x in items), dtype=np.uint8, count=len(items))
    hasher: _Hasher | None = None
    if t in RANGE_TYPES or t in MULTIRANGE_TYPES:
        hasher = _ranges_hasher(items, t)
    elif t.startswith("("):
        hasher = _composite_hasher(items, t)
    elif t == NUMERIC:
        hasher = _numeric_hasher(items)
    if hasher is not None:
        return _Keys("native", hasher, None, len(items), isnull)
    return _Keys("pyvalues", items, t, len(items), isnull)


def _one_hash(v: Any, t: str, seed: int | None) -> int:
    """The one-value hash of a non-NULL range, multirange, composite or numeric value."""
    if t == NUMERIC:
        return _numeric_hash(v, seed)
    if t in MULTIRANGE_TYPES:
        return _multirange_hash(v, t, seed)
    if t.startswith("("):
        return _composite_hash(v, t, seed)
    return _range_hash(v, t, seed)


def _hashes_at(items: list[Any], positions: Iterable[int], t: str, seed: int | None, out: np.ndarray) -> None:
    """out[i] = the one-value hash of items[i] for each position (NULLs: 0);
    an error names the position."""
    for i in positions:
        v = items[i]
        if v is None:
            out[i] = 0
            continue
        try:
            out[i] = _one_hash(v, t, seed)
        except (TypeError, ValueError, OverflowError) as e:
            raise type(e)(f"value at position {i}: {e}") from None


def _pyvalues_hashes(keys: _Keys, seed: int | None) -> np.ndarray:
    """One value at a time in Python (numeric multiranges; the reference of the others)."""
    out = np.zeros(keys.n, dtype=np.uint64)
    _hashes_at(keys.a, range(keys.n), keys.b, seed, out)
    return out


def _ranges_hasher(items: list[Any], t: str) -> _Hasher | None:
    """The batch hasher of range or multirange values, or None (numeric: one at a time)."""
    multi = t in MULTIRANGE_TYPES
    code = _pgn.RANGE_ELEMENT_CODES.get(RANGE_TYPES[MULTIRANGE_TYPES[t] if multi else t])
    if code is None:
        return _numrange_hasher(items) if t == "numrange" else None
    if multi:
        flags, lo, hi, offsets, _, slow = _pgn.multirange_columns(items, Range, Multirange, code)
    else:
        (flags, lo, hi, _, slow), offsets = _pgn.range_columns(items, Range, code), None

    def hashes(seed: int | None, threads: int | None) -> np.ndarray:
        out = np.empty(len(items), dtype=np.int32 if seed is None else np.uint64)
        _pgn.range_hashes(flags, lo, hi, offsets, code, seed, out, threads)
        res = out.view(np.uint32).astype(np.uint64) if seed is None else out
        _hashes_at(items, slow, t, seed, res)
        return res
    return hashes


def _numrange_hasher(items: list[Any]) -> _Hasher:
    """The batch hasher of numrange values: each value checked and made
    canonical by _range_parts (in Python), its bounds hashed by the numeric
    batch, its flags by hashint4's kernel, combined as hash_range does; a
    value _range_parts refuses is refused by the one-value path at its position."""
    n = len(items)
    flags = np.zeros(n, dtype=np.int32)
    lo: list[Any] = [None] * n
    hi: list[Any] = [None] * n
    bad = []
    for i, v in enumerate(items):
        if v is None:  # (NULLs: refused before, or masked by the caller's isnull)
            continue
        try:
            f, lo[i], hi[i] = _range_parts(v, "numrange")
        except (TypeError, ValueError, OverflowError):
            bad.append(i)
            continue
        flags[i] = f
    lo_hash, hi_hash = _numeric_hasher(lo), _numeric_hasher(hi)

    def hashes(seed: int | None, threads: int | None) -> np.ndarray:
        lh, uh = lo_hash(seed, threads), hi_hash(seed, threads)  # a missing bound hashes 0
        r: np.ndarray
        if seed is None:
            fh = np.empty(n, dtype=np.int32)
            _pgn.int_32(flags, fh, threads)
            r = fh.view(np.uint32).astype(np.uint64) ^ lh
            r = ((r << np.uint64(1)) | (r >> np.uint64(31))) & np.uint64(0xFFFFFFFF)
        else:
            r = np.empty(n, dtype=np.uint64)
            _pgn.int_extended(flags, seed, r, threads)
            r ^= lh
            r = ((r << np.uint64(1)) & np.uint64(0xFFFFFFFEFFFFFFFE)) | \
                ((r >> np.uint64(31)) & np.uint64(0x100000001))
        r ^= uh
        _hashes_at(items, bad, "numrange", seed, r)
        return r
    return hashes


def _numeric_hasher(items: list[Any]) -> _Hasher:
    """The batch hasher of numeric values: exact ints and Decimals in C (their
    decimal text read into base-10000 digits), the rest -- NULLs, subclasses,
    numpy integers, bad values -- by the one-value path at their position."""
    def hashes(seed: int | None, threads: int | None) -> np.ndarray:
        out = np.zeros(len(items), dtype=np.uint64)
        slow = _pgn.numeric_hashes(items, _decimal.Decimal, seed, out)
        _hashes_at(items, slow, NUMERIC, seed, out)  # (None: 0, a missing range bound's hash)
        return out
    return hashes


def _composite_hasher(items: list[Any], t: str) -> _Hasher | None:
    """The batch hasher of composite values: each field column hashed by its
    type's batch path, folded as hash_record does; None when a value is not a
    tuple of the fields or a field column is refused (the one-value path then
    names the position)."""
    fields = _composite_fields(t)
    cols, _, bad = _pgn.composite_columns(items, len(fields))
    if cols is None or bad >= 0:
        return None
    try:
        fkeys = [_to_keys(c, ft, allow_null=True) for c, ft in zip(cols, fields)]
    except (TypeError, ValueError, OverflowError):
        return None
    n = len(items)

    def hashes(seed: int | None, threads: int | None) -> np.ndarray:
        acc = np.zeros(n, dtype=np.uint64)
        h = np.empty(n, dtype=np.uint64)
        h32 = np.empty(n, dtype=np.int32) if seed is None else None
        try:
            for k in fkeys:
                if h32 is not None:
                    _hash32_keys(k, h32, threads)
                    h[:] = h32.view(np.uint32)
                else:
                    assert seed is not None
                    _extended_keys(k, seed, h, threads)
                _pgn.fold31(acc, h, k.isnull, threads)
        except (TypeError, ValueError, OverflowError):
            _hashes_at(items, range(n), t, seed, acc)  # the error again, naming the value and its field
            raise
        return acc & np.uint64(0xFFFFFFFF) if seed is None else acc
    return hashes


# ------------------------------------------------------------------- multirange types
# hash_multirange(_extended): r = 1, then r = r * 31 + (each range's hash, as
# hash_range computes it from its flags and bounds) over the ranges of the
# canonical multirange: empty ranges dropped, the rest sorted by lower then
# upper bound and merged where they overlap or touch (multirange_canonicalize).

def _bound_cmp(a: tuple[Any, bool, bool], b: tuple[Any, bool, bool]) -> int:
    """range_cmp_bounds of two bounds ``(value or None, inclusive, is_lower)``."""
    (av, ainc, alow), (bv, binc, blow) = a, b
    if av is None and bv is None:
        return 0 if alow == blow else (-1 if alow else 1)
    if av is None:
        return -1 if alow else 1
    if bv is None:
        return 1 if blow else -1
    if _ord(av) != _ord(bv):
        return -1 if _ord(av) < _ord(bv) else 1
    if not ainc and not binc:
        return 0 if alow == blow else (1 if alow else -1)
    if not ainc:
        return 1 if alow else -1
    if not binc:
        return -1 if blow else 1
    return 0


def _canonical_ranges(value: Any, t: str) -> list[tuple[int, Any, Any]]:
    """The (flags, lower, upper) of each range of the canonical multirange."""
    if not isinstance(value, Multirange):
        raise TypeError(f"a {t} value must be a Multirange([...ranges]), not {_describe(value)}")
    rt = MULTIRANGE_TYPES[t]
    parts = [p for p in (_range_parts(r, rt) for r in value.ranges) if not p[0] & _R_EMPTY]

    def lower(p: tuple[int, Any, Any]) -> tuple[Any, bool, bool]:
        return (None if p[0] & _R_LB_INF else p[1], bool(p[0] & _R_LB_INC), True)

    def upper(p: tuple[int, Any, Any]) -> tuple[Any, bool, bool]:
        return (None if p[0] & _R_UB_INF else p[2], bool(p[0] & _R_UB_INC), False)

    def order(a: tuple[int, Any, Any], b: tuple[int, Any, Any]) -> int:
        return _bound_cmp(lower(a), lower(b)) or _bound_cmp(upper(a), upper(b))

    parts.sort(key=_functools.cmp_to_key(order))
    out: list[tuple[int, Any, Any]] = []
    for p in parts:
        if not out:
            out.append(p)
            continue
        last = out[-1]
        lu, pl = upper(last), lower(p)
        adjacent = lu[0] is not None and pl[0] is not None and _ord(lu[0]) == _ord(pl[0]) and lu[1] != pl[1]
        if not adjacent and _bound_cmp(lu, pl) < 0:  # a gap: a new range
            out.append(p)
            continue
        # overlapping or touching: the union, from the lower of the lower bounds to the higher of the upper
        lo = lower(last) if _bound_cmp(lower(last), pl) <= 0 else pl
        hi = lu if _bound_cmp(lu, upper(p)) >= 0 else upper(p)
        flags = (_R_LB_INF if lo[0] is None else _R_LB_INC if lo[1] else 0) | \
            (_R_UB_INF if hi[0] is None else _R_UB_INC if hi[1] else 0)
        out[-1] = (flags, lo[0], hi[0])
    return out


def _multirange_hash(value: Any, t: str, seed: int | None) -> int:
    """The multirange's extended hash with ``seed``, or its 32-bit hash (unsigned) for None."""
    if value is None:
        raise TypeError(f"cannot hash NULL (None) as {t}; rows skip NULL columns (see partition_of)")
    rt = MULTIRANGE_TYPES[t]
    mask = 0xFFFFFFFF if seed is None else 0xFFFFFFFFFFFFFFFF
    result = 1
    for flags, lo, hi in _canonical_ranges(value, t):
        result = (result * 31 + _parts_hash(flags, lo, hi, rt, seed)) & mask
    return result


# ------------------------------------------------------------------- composite types
# hash_record(_extended): r = 0, then r = r * 31 + (each field's hash, 0 for
# NULL) over the fields in order, in 32 or 64 bits; the extended field hashes
# take the seed.  A composite type is named by its field types: "(int4,text)".

@_functools.lru_cache(maxsize=256)
def _composite_fields(t: str) -> tuple[str, ...]:
    """The canonical field types of a composite type ``"(type, type, ...)"``."""
    inner = t.strip()[1:-1]
    fields: list[str] = []
    depth = 0
    start = 0
    for i, c in enumerate(inner):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                break
        elif c == "," and depth == 0:
            fields.append(inner[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"unbalanced parentheses in the composite type {t!r}")
    fields.append(inner[start:])
    if any(not f.strip() for f in fields):
        raise ValueError(f"a composite type lists its field types, e.g. '(int4, text)', not {t!r}")
    return tuple(canonical_type(f) for f in fields)


def _composite_hash(value: Any, t: str, seed: int | None) -> int:
    """The composite value's extended hash with ``seed``, or its 32-bit hash (unsigned) for None."""
    if value is None:
        raise TypeError(f"cannot hash NULL (None) as {t}; rows skip NULL columns (see partition_of)")
    fields = _composite_fields(t)
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"a {t} value must be a tuple of its {len(fields)} fields, not {_describe(value)}")
    if len(value) != len(fields):
        raise ValueError(f"a {t} value has {len(fields)} fields, got {len(value)}")
    return _fold31(0, zip(value, fields), seed, "field")


def _fold31(r: int, parts: Iterable[tuple[Any, str]], seed: int | None, what: str) -> int:
    """PostgreSQL's fold of a record's fields and of an array's elements:
    ``r = r * 31 + (the part's hash, 0 for NULL)`` over ``(value, type)``
    parts, in 64 bits with the extended hashes' ``seed``, else in 32; an
    error names the part (``what`` and its position)."""
    bits = _M64 if seed is not None else 0xFFFFFFFF
    for i, (v, t) in enumerate(parts):
        if v is None:
            h = 0
        else:
            try:
                h = hash_extended(v, t, seed) if seed is not None else hash32(v, t) & 0xFFFFFFFF
            except (TypeError, ValueError, OverflowError) as e:
                raise type(e)(f"{what} {i}: {e}") from None
        r = (r * 31 + h) & bits
    return r


# ------------------------------------------------------------------- array types
# hash_array / hash_array_extended: r = 1, then r = r * 31 + (element hash, 0 for
# NULL) over the elements in storage order (every dimension flattened), in 32
# or 64 bits; the extended element hashes take the seed.


def _flatten(value: Any, path: str) -> list[Any]:
    """An array value's elements in storage order: lists (and numpy arrays)
    nest for more dimensions; a tuple inside is an element (an interval's
    ``(months, days, microseconds)``)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{path}: an array value must be a list (nested for more dimensions), not {_describe(value)}")
    out: list[Any] = []
    for v in value:
        if isinstance(v, (list, np.ndarray)):
            out.extend(_flatten(v, path))
        else:
            out.append(v)
    return out


def _array_hash_one(value: Any, et: str, seed: int | None) -> int:
    """The array's hash: extended with ``seed``, or the 32-bit one (unsigned) for None."""
    if value is None:
        raise TypeError("cannot hash NULL (None) as an array; rows skip NULL columns (see partition_of)")
    return _fold31(1, ((v, et) for v in _flatten(value, "array value")), seed, "array element")


_POW31: list[int] = [1]


def _pow31(n: int) -> np.ndarray:
    while len(_POW31) <= n:
        _POW31.append(_POW31[-1] * 31 & _M64)
    return np.array(_POW31[:n + 1], dtype=np.uint64)


def _array_keys(values: Any, t: str, allow_null: bool) -> _Keys:
    """Array values: their elements flattened (``a``: the elements, ``b``: the
    number per array), NULL arrays marked."""
    if _is_arrow(values) or (hasattr(values, "to_arrow") and type(values).__module__.split(".")[0] == "polars"):
        items = (values.to_arrow() if hasattr(values, "to_arrow") else values).to_pylist()
    elif isinstance(values, np.ndarray):
        items = list(values) if values.dtype == object else values.tolist()
    else:
        try:
            items = list(values)
        except TypeError:
            raise TypeError(f"expected a sequence of {t} values, not {_describe(values)}") from None
    pos = _native.first_of_type(items, type(None))
    if pos >= 0:
        _null_at(None, pos, t, allow_null)  # raises unless NULLs are allowed
    fast = _pgn.flatten_arrays(items)  # lists and tuples of elements, in one C pass
    if fast is not None:
        flat, lengths, isnull = fast
        return _Keys("array", (flat, t[:-2]), lengths, len(items), isnull if pos >= 0 else None)
    flat = []
    lengths = np.zeros(len(items), dtype=np.int64)
    isnull = np.zeros(len(items), dtype=np.uint8)
    for i, v in enumerate(items):
        if _null_at(v, i, t, allow_null):
            isnull[i] = 1
            continue
        elems = _flatten(v, f"value at position {i}")
        lengths[i] = len(elems)
        flat.extend(elems)
    return _Keys("array", (flat, t[:-2]), lengths, len(items), isnull if isnull.any() else None)


def _array_error(flat: list[Any], et: str, lengths: np.ndarray, seed: int | None) -> None:
    """Raise the first bad element's error, naming its array's position and
    its own (the batch saw the arrays' elements as one flat list)."""
    start = 0
    for i, n in enumerate(lengths.tolist()):
        try:
            _fold31(1, ((v, et) for v in flat[start:start + n]), seed, "array element")
        except (TypeError, ValueError, OverflowError) as e:
            raise type(e)(f"value at position {i}: {e}") from None
        start += n


def _array_combine(keys: _Keys, seed: int | None, threads: int | None) -> np.ndarray:
    """Every array's hash (uint64; the 32-bit ones in the low half)."""
    flat, et = keys.a
    lengths: np.ndarray = keys.b
    eh = np.empty(len(flat), dtype=np.uint64)
    try:
        ek = _to_keys(flat, et, allow_null=True)
        if seed is None:
            h32 = np.empty(len(flat), dtype=np.int32)
            if len(flat):
                _hash32_keys(ek, h32, threads)
            eh[:] = h32.view(np.uint32)
        elif len(flat):
            _extended_keys(ek, seed, eh, threads)
    except (TypeError, ValueError, OverflowError):
        _array_error(flat, et, lengths, seed)  # the error again, naming the array and its element
        raise
    if ek.isnull is not None:
        eh[ek.isnull.astype(bool)] = 0
    ends = np.cumsum(lengths)
    starts = ends - lengths
    pos = np.arange(len(flat), dtype=np.int64) - np.repeat(starts, lengths)
    pw = _pow31(int(lengths.max()) if len(lengths) else 0)
    weighted = eh * pw[np.repeat(lengths, lengths) - 1 - pos]
    cs = np.concatenate(([np.uint64(0)], np.cumsum(weighted, dtype=np.uint64)))
    res: np.ndarray = pw[lengths] + (cs[ends] - cs[starts])
    return res if seed is not None else res & np.uint64(0xFFFFFFFF)


def _int_like_keys(values: Any, t: str, allow_null: bool) -> _Keys:
    """bool, oid and interval values as the integer keys their hashes take
    (int32 for bool/oid, int64 spans for interval), NULLs marked."""
    if _is_arrow(values) or (hasattr(values, "to_arrow") and type(values).__module__.split(".")[0] == "polars"):
        items = (values.to_arrow() if hasattr(values, "to_arrow") else values).to_pylist()
    elif isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"expected a 1-D array, got shape {values.shape}")
        if t == "bool" and values.dtype == np.bool_:
            return _Keys("int", values.astype(np.int32), None, len(values), None)
        if t == "oid" and values.dtype.kind in "iu":
            if values.size and (int(values.min()) < 0 or int(values.max()) > 0xFFFFFFFF):
                bad = int(np.flatnonzero((values < 0) | (values > 0xFFFFFFFF))[0])
                raise ValueError(f"oid value at position {bad} is out of range (0..4294967295)")
            return _Keys("int", values.astype(np.uint32).view(np.int32), None, len(values), None)
        if t == "interval" and values.dtype.kind == "m":
            us = values.astype("timedelta64[us]").astype(np.int64)
            return _Keys("int", us, None, len(values), None)
        items = values.tolist()
    else:
        try:
            items = list(values)
        except TypeError:
            raise TypeError(f"expected a sequence or array of {t} values, not {_describe(values)}") from None
    n = len(items)
    vals = np.zeros(n, dtype=np.int64 if t == "interval" else np.int32)
    isnull = np.zeros(n, dtype=np.uint8)
    conv = _interval_span if t == "interval" else _bool_value if t == "bool" else _oid_value
    for i, v in enumerate(items):
        if _null_at(v, i, t, allow_null):
            isnull[i] = 1
            continue
        try:
            x = conv(v)
        except (TypeError, ValueError) as e:
            raise type(e)(f"value at position {i}: {e}") from None
        vals[i] = x - (1 << 32) if t == "oid" and x >> 31 else x
    return _Keys("int", vals, None, n, isnull if isnull.any() else None)


def _to_keys(values: Any, t: str, allow_null: bool = False) -> _Keys:
    if isinstance(values, (str, bytes, bytearray, memoryview)) or np.isscalar(values):
        raise TypeError(f"expected a sequence or array of {t} values, not {_describe(values)}")
    if t in _INT_LIKE:
        return _int_like_keys(values, t, allow_null)
    if t.endswith("[]"):
        return _array_keys(values, t, allow_null)
    if t in RANGE_TYPES or t == NUMERIC or t in MULTIRANGE_TYPES or t.startswith("("):
        return _range_keys(values, t, allow_null)
    if _is_arrow(values):
        return _arrow_keys(values, t, allow_null)
    if hasattr(values, "to_arrow") and type(values).__module__.split(".")[0] == "polars":
        return _arrow_keys(values.to_arrow(), t, allow_null)
    if isinstance(values, np.ndarray):
        if values.ndim != 1 and not (t == "uuid" and values.ndim == 2):
            raise ValueError(f"expected a 1-D array, got shape {values.shape}")
        return _numpy_keys(values, t, allow_null)
    if hasattr(values, "to_numpy") and type(values).__module__.split(".")[0] == "pandas":
        dtype = getattr(values, "dtype", None)
        if isinstance(dtype, np.dtype) and dtype.kind in "iufM":
            # plain numpy-backed column: NaN in a float column is a value, as in PostgreSQL
            return _numpy_keys(values.to_numpy(), t, allow_null)
        # extension / object / string dtypes: pandas' missing markers are NULLs
        arr = values.to_numpy(dtype=object)
        missing = np.asarray(values.isna(), dtype=bool)
        if missing.any():
            arr = arr.copy()
            arr[missing] = None
        return _list_keys(arr.tolist(), t, allow_null)
    try:
        items = list(values)  # a private copy: a key's own code (__index__, ...) may change the caller's
    except TypeError:
        raise TypeError(f"expected a sequence or array of {t} values, not {_describe(values)}") from None
    kinds = set(map(type, items)) if t in _INT_RANGE or t in ("float8", "float4") else set()
    if t in _INT_RANGE and kinds == {int}:
        try:
            arr = np.asarray(items)
        except (ValueError, OverflowError):      # beyond int64 / uint64: checked per value
            arr = None
        if arr is not None and arr.dtype.kind in "iu" and arr.ndim == 1:
            return _numpy_keys(arr, t, allow_null)
    if t in ("float8", "float4") and kinds == {float}:
        return _numpy_keys(np.asarray(items, dtype=np.float64), t, allow_null)
    return _list_keys(items, t, allow_null)


def _out_array(out: Any, n: int, dtype: type) -> np.ndarray:
    """A new output array, or ``out`` checked as every ``out=`` is (the
    routers' rules and errors: TypeError for what is not an array of the
    dtype in native byte order, ValueError for its shape, layout and
    writability)."""
    res: np.ndarray = prepare_out(out, n, dtype)
    return res


def _check_overlap(out: np.ndarray | None, keys: _Keys) -> None:
    if out is None:
        return
    for part in (keys.a, keys.b):
        if isinstance(part, np.ndarray) and np.may_share_memory(out, part):
            raise ValueError("out must not share memory with the keys")


def _extended_keys(keys: _Keys, seed: int, out: np.ndarray, threads: int | None) -> None:
    if keys.kind == "array":
        out[:] = _array_combine(keys, seed, threads)
    elif keys.kind == "pyvalues":
        out[:] = _pyvalues_hashes(keys, seed)
    elif keys.kind == "native":
        out[:] = keys.a(seed, threads)
    elif keys.kind == "int":
        _native.int_extended(keys.a, seed, out, threads)
    elif keys.kind == "float":
        _native.float8_extended_array(keys.a, seed, out, threads)
    elif keys.kind == "fixed":
        _native.fixed_extended(keys.a, keys.b, seed, out, threads)
    else:
        _native.varlen_extended(keys.a, keys.b, seed, out, threads)


def _hash32_keys(keys: _Keys, out: np.ndarray, threads: int | None) -> None:
    if keys.kind == "array":
        out[:] = _array_combine(keys, None, threads).astype(np.uint32).view(np.int32)
    elif keys.kind == "pyvalues":
        out[:] = _pyvalues_hashes(keys, None).astype(np.uint32).view(np.int32)
    elif keys.kind == "native":
        out[:] = keys.a(None, threads).astype(np.uint32).view(np.int32)
    elif keys.kind == "int":
        _native.int_32(keys.a, out, threads)
    elif keys.kind == "float":
        _native.float8_32_array(keys.a, out, threads)
    elif keys.kind == "fixed":
        _native.fixed_32(keys.a, keys.b, out, threads)
    else:
        _native.varlen_32(keys.a, keys.b, out, threads)


def hash_extended_array(values: Any, type: str, seed: int = HASH_PARTITION_SEED, *,
                        out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
    """:func:`hash_extended` over a whole array, as ``uint64``.

    ``values``: a list, a numpy array (integers, floats, ``datetime64``, str,
    objects), a pandas Series or a pyarrow / polars array.  Kernels release
    the GIL; ``threads=None`` uses every core for large inputs.

    >>> hash_extended_array([42, -1], "int8").tolist() == [hash_extended(42, "int8"), hash_extended(-1, "int8")]
    True
    """
    if out is None and threads is None:  # up to 64 values of the common types: one pass in C
        small = _native.hash_extended_small(values, type, seed)
        if small is not None:
            return small
    t = canonical_type(type)
    s = _check_seed(seed)
    keys = _to_keys(values, t)
    _check_overlap(out, keys)
    res = _out_array(out, keys.n, np.uint64)
    _extended_keys(keys, s, res, threads)
    return res


def hash32_array(values: Any, type: str, *, out: np.ndarray | None = None,
                 threads: int | None = None) -> np.ndarray:
    """:func:`hash32` over a whole array, as ``int32``.

    >>> hash32_array(["hello", ""], "text").tolist()
    [-1870292951, -1477818771]
    """
    t = canonical_type(type)
    keys = _to_keys(values, t)
    _check_overlap(out, keys)
    res = _out_array(out, keys.n, np.int32)
    _hash32_keys(keys, res, threads)
    return res


# --------------------------------------------------------------------- rows

def _check_types(types: Any) -> tuple[str, ...]:
    if isinstance(types, str):
        types = (types,)
    if not isinstance(types, Sequence) or not types:
        raise TypeError(f"types must be a non-empty tuple of type names, not {types!r}")
    return tuple(canonical_type(t) for t in types)


def _check_modulus(modulus: Any) -> int:
    if isinstance(modulus, bool) or not isinstance(modulus, numbers.Integral):
        raise TypeError(f"modulus must be an int, not {_describe(modulus)}")
    m = int(modulus)
    if not 1 <= m <= (1 << 31) - 1:
        raise ValueError(f"modulus must be in [1, 2**31-1] like PostgreSQL's, got {m}")
    return m


def _row_tuple(row: Any, ntypes: int) -> tuple[Any, ...]:
    if ntypes == 1 and not isinstance(row, tuple):
        row = (row,)
    if not isinstance(row, (tuple, list)):
        raise TypeError(f"row must be a tuple of column values, not {_describe(row)}")
    if len(row) != ntypes:
        raise ValueError(f"row has {len(row)} values but the partition key has {ntypes} columns")
    return tuple(row)


def row_hash(row: Any, types: Any) -> int:
    """The partition-key hash of one row (unsigned 64-bit).

    ``row`` is a tuple of column values (None for SQL NULL); ``types`` the
    matching tuple of type names.  A one-column key accepts a bare value.

    >>> hex(row_hash((1, "a"), ("int4", "text")))
    '0x47bb31e3ca45ebc5'
    >>> row_hash((None, "a"), ("int4", "text")) == row_hash(("a",), ("text",))
    True
    """
    ts = _check_types(types)
    vals = _row_tuple(row, len(ts))
    h = 0
    for v, t in zip(vals, ts):
        if v is None:
            continue
        h = _native.hash_combine64(h, hash_extended(v, t))
    return int(h)


def partition_of(row: Any, modulus: int, types: Any) -> int:
    """The remainder of the partition ``(MODULUS modulus, REMAINDER r)`` that holds ``row``.

    >>> partition_of((42,), 4, ("int8",)), partition_of(("hello",), 7, ("text",))
    (2, 3)
    >>> partition_of((None, None), 4, ("int4", "text"))   # all NULL: hash 0
    0
    """
    m = _check_modulus(modulus)
    return row_hash(row, types) % m


def _row_hash_array(columns: Sequence[Any], types: tuple[str, ...], threads: int | None) -> np.ndarray:
    n = -1
    acc: np.ndarray | None = None
    tmp: np.ndarray | None = None
    for col, t in zip(columns, types):
        keys = _to_keys(col, t, allow_null=True)
        if acc is None:
            n = keys.n
            acc = np.zeros(n, dtype=np.uint64)
            tmp = np.empty(n, dtype=np.uint64)
        elif keys.n != n:
            raise ValueError(f"columns have different lengths ({n} and {keys.n})")
        assert tmp is not None
        _extended_keys(keys, HASH_PARTITION_SEED, tmp, threads)
        _native.combine64(acc, tmp, keys.isnull, threads)
    assert acc is not None
    return acc


def _columns(rows_or_columns: Any, ntypes: int) -> list[Any]:
    """Columns from a 1-column array, or a sequence of row tuples."""
    if ntypes == 1:
        # One key column: an array of values, or a sequence of 1-tuples
        # (no supported column type has tuple values).
        if isinstance(rows_or_columns, (list, tuple)) and any(isinstance(r, tuple) for r in rows_or_columns):
            vals = []
            for i, r in enumerate(rows_or_columns):
                if not isinstance(r, tuple) or len(r) != 1:
                    raise ValueError(f"row at position {i} must be a 1-tuple, not {_describe(r)}")
                vals.append(r[0])
            return [vals]
        return [rows_or_columns]
    if isinstance(rows_or_columns, np.ndarray) and rows_or_columns.dtype.kind != "O":
        raise TypeError("a multi-column key needs a sequence of row tuples (or columns=...)")
    rows = list(rows_or_columns)
    fast, isnull, _ = _pgn.composite_columns(rows, ntypes)  # exact tuples and lists, transposed in C
    if fast is not None and isnull is not None and not isnull.any():
        return fast
    cols: list[list[Any]] = [[] for _ in range(ntypes)]
    for i, r in enumerate(rows):
        if not isinstance(r, (tuple, list)) or len(r) != ntypes:
            raise ValueError(f"row at position {i} must be a tuple of {ntypes} values, not {_describe(r)}")
        for c, v in zip(cols, r):
            c.append(v)
    return cols


def partition_of_array(rows: Any = None, modulus: int = 1, types: Any = (), *,
                       columns: Sequence[Any] | None = None, threads: int | None = None) -> np.ndarray:
    """:func:`partition_of` over many rows, as an ``int64`` array of remainders.

    Give either ``rows`` (a sequence of row tuples, or for a one-column key
    an array of values) or ``columns`` (one array per key column, in key
    order; None marks NULL in lists and object arrays, and Arrow nulls are
    NULLs).

    >>> partition_of_array([(1, "a"), (None, "a"), (None, None)], 8, ("int4", "text")).tolist()
    [5, 6, 0]
    """
    ts = _check_types(types)
    m = _check_modulus(modulus)
    if (rows is None) == (columns is None):
        raise TypeError("give exactly one of rows or columns")
    cols = _columns(rows, len(ts)) if columns is None else list(columns)
    if len(cols) != len(ts):
        raise ValueError(f"{len(cols)} columns given but the partition key has {len(ts)}")
    acc = _row_hash_array(cols, ts, threads)
    res = np.empty(len(acc), dtype=np.int64)
    _native.remainder(acc, m, res, threads)
    return res


# ------------------------------------------------------------------- router

_MAX_TABLE = 1 << 26      # largest modulus a router builds its remainder table for


def _check_bounds(bounds: Any, n: int) -> tuple[tuple[int, int], ...]:
    """Validate (modulus, remainder) pairs as PostgreSQL does when partitions are attached."""
    def check(i: int, m: int, r: int) -> None:
        if not 1 <= m <= _MAX_TABLE:
            raise ValueError(f"bounds[{i}]: modulus {m} must be in [1, {_MAX_TABLE}]")
        if not 0 <= r < m:
            raise ValueError(f"bounds[{i}]: remainder {r} must be in [0, {m - 1}] for modulus {m}")

    out = int_pair_seq(bounds, n, "bounds", "modulus, remainder", "partitions", "must hold ints", check)
    moduli = sorted({m for m, _ in out})
    for a, b in zip(moduli, moduli[1:]):
        if b % a:
            raise ValueError(f"every hash partition modulus must be a factor of the next larger "
                             f"modulus (PostgreSQL's rule): {a} does not divide {b}")
    return tuple(out)


@register_router_type("postgres_hash_partition")
class HashPartitionRouter(RawKeyRouter):
    """Route rows to the partitions of a ``PARTITION BY HASH`` table.

    ``partitions[i]`` is the partition ``FOR VALUES WITH (MODULUS
    len(partitions), REMAINDER i)``, or with ``bounds`` the partition ``FOR
    VALUES WITH (MODULUS bounds[i][0], REMAINDER bounds[i][1])`` -- moduli
    may differ (each must divide the next larger one, as PostgreSQL
    requires), which is how a partition is split in place.  ``types`` names
    the partition-key columns in key order.  Keys are rows: a tuple of column
    values (None for NULL), or a bare value for a one-column key.
    ``route_many`` takes a sequence of row tuples (or, for one column, any
    array of values); ``route_columns`` takes one array per key column.  A
    row that no partition accepts is a ValueError, as in PostgreSQL.

    >>> r = HashPartitionRouter([f"orders_p{i}" for i in range(4)], ("bigint",))
    >>> r.route(42), r.route_many([42, 7, 1 << 40]).tolist()
    ('orders_p2', [2, 3, 2])
    >>> r2 = HashPartitionRouter(["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"], ("int4", "text"))
    >>> r2.route((1, "a")), r2.route((None, None))
    ('p5', 'p0')
    >>> split = HashPartitionRouter(["p0", "p1a", "p1b"], ("bigint",), bounds=[(2, 0), (4, 1), (4, 3)])
    >>> split.route(42), split.route(7)
    ('p0', 'p1b')
    """

    _doc_fields = ("types", "bounds")

    _hashes_refused = ("a PostgreSQL hash-partition router hashes rows with PostgreSQL's own "
                        "functions, not a shardhash hasher: use route_many(rows)")
    _hash_refused = "a PostgreSQL hash-partition router does not route shardhash hashes"

    def hashing_description(self) -> str:
        return "PostgreSQL hash partitioning (hash_*_extended, seed 0x7A5B22367996DCFD)"

    cli_options = frozenset({"pg_type"})  # shardhash topology new

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Any, load: Callable[[str], Router]) -> Router:
        return cls(shards, [t.strip() for t in (args.pg_type or "bigint").split(",")])

    def __init__(self, partitions: Sequence[str], types: Any, *,
                 bounds: Sequence[tuple[int, int]] | None = None, version: int = 1) -> None:
        ts = _check_types(types)
        super().__init__(partitions, version=version)
        n = len(self.shards)
        if bounds is None:
            if n > _MAX_TABLE:
                raise ValueError(f"too many partitions (at most {_MAX_TABLE})")
            bs = tuple((n, i) for i in range(n))
        else:
            bs = _check_bounds(bounds, n)
        greatest = max(m for m, _ in bs)
        _limits.reserve(greatest, _MAX_TABLE, "hash partition modulus")  # before the table exists
        table = np.full(greatest, -1, dtype=np.int32)
        for i, (m, r) in enumerate(bs):
            cells = table[r::m]
            clash = np.flatnonzero(cells >= 0)
            if clash.size:
                j = int(cells[clash[0]])
                raise ValueError(f"partition {self.shards[i]!r} (MODULUS {m}, REMAINDER {r}) would overlap "
                                 f"partition {self.shards[j]!r} (MODULUS {bs[j][0]}, REMAINDER {bs[j][1]})")
            cells[...] = i
        table.setflags(write=False)
        self._set("_types", ts)
        self._set("_bounds", bs)
        self._set("_table", table)
        keys = _native.PgPartitionKeys(ts, table)  # route/route_index of rows of common types in C
        self._use_native_keys(keys.capsule(), keys)
        self._finish()

    @property
    def types(self) -> tuple[str, ...]:
        """The partition-key column types (PostgreSQL's names), in key order."""
        return self._types  # type: ignore[no-any-return]

    @property
    def bounds(self) -> list[tuple[int, int]]:
        """``(MODULUS, REMAINDER)`` of each partition, in partition order."""
        return list(self._bounds)

    @property
    def modulus(self) -> int:
        """The greatest MODULUS (rows are placed by ``rowhash % modulus``)."""
        return len(self._table)

    @property
    def bucket_count(self) -> int:
        """Rows go to bucket ``rowhash % bucket_count`` (the greatest modulus)."""
        return len(self._table)

    @property
    def placement(self) -> np.ndarray:
        """Partition index of each remainder of the greatest modulus (-1: no partition)."""
        return self._table  # type: ignore[no-any-return]

    @property
    def complete(self) -> bool:
        """True when every row has a partition (no remainder is left uncovered)."""
        return bool((self._table >= 0).all())

    def _doc_params(self) -> dict[str, Any]:
        return {"types": list(self._types), "bounds": [list(b) for b in self._bounds]}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Any, version: int,
                     key_prefix: int | None) -> HashPartitionRouter:
        shards = raw_doc_shards(shards, key_prefix, "a PostgreSQL hash-partition router")
        types = params["types"]
        if not isinstance(types, list) or not types:
            raise ValueError("params.types must be a non-empty list of type names")
        bounds = params.get("bounds")
        if bounds is not None:
            if not isinstance(bounds, list):
                raise ValueError("params.bounds must be a list of [modulus, remainder] pairs")
            bounds = [tuple(b) if isinstance(b, list) else b for b in bounds]
        with doc_field("types"):
            _check_types(tuple(types))
        with doc_field("bounds"):
            return cls(shards, tuple(types), bounds=bounds, version=version)

    def _owner(self, rem: np.ndarray) -> np.ndarray:
        idx: np.ndarray = np.take(self._table, rem)
        if (idx < 0).any():
            pos = int(np.flatnonzero(idx < 0)[0])
            raise ValueError(f"no partition accepts the row at position {pos} "
                             f"(remainder {int(rem[pos])} of modulus {len(self._table)})")
        return idx

    def _route_index_slow(self, row: Any) -> int:
        # route()/route_index() of the rows the compiled path leaves here
        rem = row_hash(row, self._types) % len(self._table)
        i = int(self._table[rem])
        if i < 0:
            raise ValueError(f"no partition accepts row {row!r} "
                             f"(remainder {rem} of modulus {len(self._table)})")
        return i

    def route_many(self, rows: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Partition indices (int32) of many rows."""
        if out is None and threads is None:  # up to 64 common keys: one pass in C
            small = self._route_small_keys(rows)
            if small is not None:
                return small
        rem = partition_of_array(rows, len(self._table), self._types, threads=threads)
        res = _out_array(out, len(rem), np.int32)
        res[...] = self._owner(rem)
        return res

    def route_columns(self, columns: Sequence[Any], *, out: np.ndarray | None = None,
                      threads: int | None = None) -> np.ndarray:
        """Partition indices (int32) of rows given column by column (None / Arrow nulls = NULL)."""
        rem = partition_of_array(columns=columns, modulus=len(self._table), types=self._types,
                                 threads=threads)
        res = _out_array(out, len(rem), np.int32)
        res[...] = self._owner(rem)
        return res
