"""Vitess vindexes and keyrange shards, reproduced to the bit.

Vitess maps a row's sharding-column value to an 8-byte *keyspace id* with a
vindex, and a keyspace id to the shard whose key range contains it.

* ``hash`` vindex: DES encryption with an all-zero key of the value as 8
  big-endian bytes (signed ids in two's complement).  Reversible.
* ``xxhash`` vindex: xxh64 (seed 0) of the value's SQL bytes -- integers as
  their decimal text, strings as UTF-8, NULL as no bytes -- written
  little-endian.
* ``numeric`` vindex: the unsigned value itself, 8 bytes big-endian;
  ``reverse_bits``: the value with its 64 bits reversed, 8 bytes
  big-endian.  Both map a negative number or NULL to no keyspace id.
* ``binary_md5`` vindex: MD5 of the value's SQL bytes (as ``xxhash``), a
  16-byte keyspace id; shards are chosen by its first 8 bytes (every key
  range bound has at most 8 bytes).
* ``unicode_loose_md5`` / ``unicode_loose_xxhash`` vindexes (the usual
  choice for VARCHAR keys): the value's SQL bytes must be UTF-8; trailing
  spaces are dropped and the text is folded to its primary collation key
  (``golang.org/x/text/collate``, English, ``Loose``: case, accents and
  width ignored, so ``"Tést"`` and ``"TEST"`` share a keyspace id), which is
  hashed with MD5 (16 bytes, shards chosen by the first 8) or xxh64 (8 bytes,
  little-endian).  The folding and hashing run in C, one key or a whole
  batch (without the GIL, on ``threads``), by the rules of the pure-Python
  implementation (``compat/_unicode_loose.py``), which the tests hold them to
  and which still reports invalid input.
* Shard names are hex key ranges ``start-end``: ``-80`` (up to 0x80),
  ``80-`` (from 0x80), ``40-80``, ``c0-``; ``-`` or ``0`` is the whole
  range.  A keyspace id belongs to the shard with ``start <= id < end``,
  comparing bytes (so ``80`` equals ``8000``).

What is exact: these vindexes (checked against the vectors of Vitess's own
``hash_test.go``, ``xxhash_test.go``, ``numeric_test.go``,
``reverse_bits_test.go``, ``binarymd5_test.go``, ``unicodeloosemd5_test.go``,
``unicodeloosexxhash_test.go`` and two texts of ``unicode_hash_golden.json``;
the folding also against ``x/text`` itself on random text in many scripts),
shard selection for
bounds of up to 8 bytes, and :func:`generate_shard_ranges` (Vitess's
``key.GenerateShardRanges``, up to 65,536 shards).  Not modelled: the other
vindex types (lookup, ``unicode_loose_*`` collations, region-based) and key
range bounds longer than 8 bytes.  ``unicode_loose_*`` follow Vitess built with
Go 1.21 or newer (Unicode 15 ideographs); the ``x/text`` normalisation data
they use for combining classes is Python's (Unicode 14 on Python 3.11), so
marks added in Unicode 15 may fold differently.

>>> keyspace_id(1).hex(), keyspace_id(1, "xxhash").hex()
('166b40b44aba4bd6', 'd46405367612b4b7')
>>> r = VitessRouter(["-40", "40-80", "80-c0", "c0-"], "hash")
>>> [r.route(i) for i in (1, 2, 3, 4, 5, 6)]
['-40', '-40', '40-80', 'c0-', '40-80', 'c0-']
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from shardhash._parallel import kernel_array

from ..routing.base import RawKeyRouter, Router, as_hashes, fill_out, register_router_type
from . import _native, _native_vitess
from ._common import one_of
from ._doc import raw_doc_shards

__all__ = ["VINDEXES", "keyspace_id", "keyspace_id_array", "collation_key", "reverse_hash", "parse_shard_name",
           "even_shard_names", "generate_shard_ranges", "VitessRouter"]

VINDEXES = ("hash", "xxhash", "numeric", "reverse_bits", "binary_md5", "unicode_loose_md5", "unicode_loose_xxhash")
_NATIVE_VINDEXES = ("hash", "xxhash")  # routed one key at a time in C
_UNSIGNED_VINDEXES = ("numeric", "reverse_bits")
_LOOSE_VINDEXES = ("unicode_loose_md5", "unicode_loose_xxhash")
_M64 = (1 << 64) - 1
_INT_MIN = -(1 << 63)
_NAME_RE = re.compile(r"^([0-9a-fA-F]*)-([0-9a-fA-F]*)$")


def _check_vindex(vindex: Any) -> str:
    return one_of(vindex, "vindex", VINDEXES, "unsupported vindex")


def _int_value(value: Any, what: str = "value") -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"the Vitess hash vindex maps integers; {what} is {type(value).__name__} ({value!r:.60})")
    v = int(value)
    if not _INT_MIN <= v <= _M64:
        raise OverflowError(f"{what} {v} does not fit a 64-bit integer")
    return v


def _sql_bytes(value: Any, what: str = "value") -> bytes:
    if value is None:
        return b""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what}: booleans have no SQL byte form here; pass 0/1")
    if isinstance(value, (int, np.integer)):
        return str(_int_value(value, what)).encode()
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"the Vitess xxhash vindex maps ints, str, bytes or None; {what} is "
                    f"{type(value).__name__} ({value!r:.60})")


def _sql_keys(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """The SQL byte forms of many values as Arrow-style ``(data, offsets)``.

    Arrow binary/string arrays without nulls are used as they are, and a
    sequence of bytes-like and ``str`` values is packed in C (the same bytes
    as :func:`_sql_bytes`); anything else goes value by value through
    :func:`_sql_bytes`, which also reports errors."""
    arrow = hasattr(values, "to_pylist") and not isinstance(values, (list, tuple, np.ndarray))
    vals = values if arrow else values.tolist() if isinstance(values, np.ndarray) else list(values)
    try:
        keys: tuple[np.ndarray, np.ndarray] = _native.pack_keys(vals)
        return keys
    except (TypeError, ValueError):  # other types, NULLs (b""), unencodable str: value by value
        pass
    if arrow:
        vals = values.to_pylist()
    parts = [_sql_bytes(v, f"value at position {i}") for i, v in enumerate(vals)]
    keys = _native.pack_keys(parts)
    return keys


def _unsigned_value(value: Any, vindex: str, what: str = "value") -> int:
    """The uint64 of a ``numeric`` / ``reverse_bits`` id (Vitess's ToUint64)."""
    if value is None:
        raise ValueError(f"{what}: NULL maps to no keyspace id under the {vindex} vindex")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"the Vitess {vindex} vindex maps integers; {what} is {type(value).__name__} "
                        f"({value!r:.60})")
    v = int(value)
    if v < 0:
        raise ValueError(f"{what} {v} is negative: it maps to no keyspace id under the {vindex} vindex")
    if v > _M64:
        raise OverflowError(f"{what} {v} does not fit an unsigned 64-bit integer")
    return v


def _reverse64(v: int) -> int:
    return int(f"{v:064b}"[::-1], 2)


def _ksid_u64(value: Any, vindex: str) -> int:
    """The keyspace id's first 8 bytes as a big-endian uint64 (compared as a number)."""
    if vindex == "hash":
        if value is None:
            raise ValueError("NULL maps to no keyspace id under the hash vindex")
        return int(_native.des_encrypt_zero_key(_int_value(value) & _M64))
    if vindex == "numeric":
        return _unsigned_value(value, vindex)
    if vindex == "reverse_bits":
        return _reverse64(_unsigned_value(value, vindex))
    if vindex == "binary_md5":
        return int.from_bytes(hashlib.md5(_sql_bytes(value)).digest()[:8], "big")
    if vindex in _LOOSE_VINDEXES:
        if type(value) is str or type(value) is bytes:  # folded and hashed in C
            k = _native_vitess.unicode_loose_ksid(value, vindex == "unicode_loose_md5")
            if k is not None:
                return k
        return int.from_bytes(_loose_ksid(value, vindex)[:8], "big")
    h = int(_native.xxh64(_sql_bytes(value)))
    return int.from_bytes(h.to_bytes(8, "little"), "big")


def keyspace_id(value: Any, vindex: str = "hash") -> bytes:
    """The keyspace id of one sharding-column value: 8 bytes, or 16 for ``binary_md5``.

    >>> keyspace_id(2).hex(), keyspace_id("test1", "xxhash").hex(), keyspace_id(None, "xxhash").hex()
    ('06e7ea22ce92708f', 'd01ab7e4d6978f0b', '99e9d85137db46ef')
    >>> keyspace_id(1, "reverse_bits").hex(), keyspace_id("Test", "binary_md5").hex()
    ('8000000000000000', '0cbc6611f5540bd0809a388dc95a615b')
    """
    vindex = _check_vindex(vindex)
    if vindex == "binary_md5":
        return hashlib.md5(_sql_bytes(value)).digest()
    if vindex in _LOOSE_VINDEXES:
        return _loose_ksid(value, vindex)
    return _ksid_u64(value, vindex).to_bytes(8, "big")


def loose_key(data: bytes | str) -> bytes:
    """The collation key of UTF-8 bytes or of a str, folded in C (the weight
    tables load on first use); what the C kernel refuses (invalid UTF-8, a
    lone surrogate) goes to the Python rules, which raise."""
    if type(data) is bytes or type(data) is str:
        key = _native_vitess.unicode_loose_key(data)
        if key is not None:
            return key
    from ._unicode_loose import loose_key as fold
    return fold(data.encode("utf-8") if isinstance(data, str) else data)


def _loose_ksid(value: Any, vindex: str, what: str = "value") -> bytes:
    """The ``unicode_loose_md5`` (16 bytes) or ``unicode_loose_xxhash`` (8 bytes) keyspace id."""
    try:
        key = loose_key(value if type(value) is str else _sql_bytes(value, what))
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None
    if vindex == "unicode_loose_md5":
        return hashlib.md5(key).digest()
    return int(_native.xxh64(key)).to_bytes(8, "little")


def collation_key(value: Any) -> bytes:
    """The folded form of a value that the ``unicode_loose_*`` vindexes hash:
    trailing spaces dropped, then 2 bytes (3 above 0x7FFF) per primary
    collation weight.

    >>> collation_key("Tést").hex() == collation_key("TEST ").hex()
    True
    >>> collation_key("T").hex()
    '1816'
    """
    return loose_key(_sql_bytes(value))


def reverse_hash(ksid: bytes) -> int:
    """The id (as an unsigned 64-bit int) whose ``hash`` keyspace id is ``ksid``.

    >>> reverse_hash(bytes.fromhex("166b40b44aba4bd6"))
    1
    """
    if not isinstance(ksid, (bytes, bytearray)) or len(ksid) != 8:
        raise ValueError(f"a hash-vindex keyspace id is 8 bytes, got {ksid!r:.60}")
    return int(_native.des_decrypt_zero_key(int.from_bytes(ksid, "big")))


def _ints_u64(values: Any) -> np.ndarray | None:
    """uint64 bit patterns of an integer array/list, or None if not all ints."""
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"values must be one-dimensional, got shape {values.shape}")
        if values.dtype.kind == "i":
            return values.astype(np.int64, copy=False).view(np.uint64)
        if values.dtype.kind == "u":
            return values.astype(np.uint64, copy=False)
        if values.dtype.kind in "fcb":
            raise TypeError(f"the Vitess vindexes do not map {values.dtype} values")
        return None
    return None


def keyspace_id_array(values: Any, vindex: str = "hash", threads: int | None = None) -> np.ndarray:
    """Keyspace ids of many values, as ``uint64`` numbers whose big-endian
    bytes are the keyspace ids (so they sort like the ids).

    >>> [f"{k:016x}" for k in keyspace_id_array(np.array([1, 2]))]
    ['166b40b44aba4bd6', '06e7ea22ce92708f']
    """
    vindex = _check_vindex(vindex)
    if vindex in _UNSIGNED_VINDEXES:
        return _unsigned_array(values, vindex)
    if vindex == "binary_md5":
        return _md5_prefix_array(values)
    if vindex in _LOOSE_VINDEXES:
        return _loose_array(values, vindex, threads)
    u = _ints_u64(values)
    if vindex == "hash":
        if u is None:
            vals = values.tolist() if isinstance(values, np.ndarray) else list(values)
            u = np.empty(len(vals), dtype=np.uint64)
            for i, v in enumerate(vals):
                if v is None:
                    raise ValueError(f"value at position {i} is NULL: it maps to no keyspace id")
                u[i] = _int_value(v, f"value at position {i}") & _M64
        return _native.des_encrypt_zero_key_array(kernel_array(u), threads)
    # the hashes byte-swapped in the kernel, chunk by chunk (a keyspace id is the big-endian bytes)
    if u is not None and isinstance(values, np.ndarray) and values.dtype.kind == "i":
        ksids: np.ndarray = _native.xxh64_decimal_int64(kernel_array(values, dtype=np.int64), threads, swap=True)
        return ksids
    # a list, tuple or numpy array: each key read in place (ints, None: their SQL bytes)
    seq = _native.vitess_xxhash_seq(values, _sql_bytes, threads)  # threads > 1: the helper-thread pipeline
    if seq is not None:
        return seq
    data, offsets = _sql_keys(values)
    ksids = _native.xxh64_offsets(data, offsets, threads, swap=True)
    return ksids


_REV8 = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.uint8)


def _reverse_bits_array(u: np.ndarray) -> np.ndarray:
    """Each uint64 with its 64 bits reversed: every byte's bits reversed, then the byte order."""
    out: np.ndarray = _REV8[np.ascontiguousarray(u, dtype=np.uint64).view(np.uint8)].view(np.uint64)
    swapped: np.ndarray = out.byteswap()
    return swapped


def _unsigned_array(values: Any, vindex: str) -> np.ndarray:
    """``numeric`` / ``reverse_bits`` keyspace ids of many integers (uint64)."""
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iu":
        if values.dtype.kind == "i" and values.size and int(values.min()) < 0:
            i = int(np.argmax(values < 0))
            raise ValueError(f"value at position {i} ({int(values[i])}) is negative: it maps to no keyspace id "
                             f"under the {vindex} vindex")
        u = values.astype(np.uint64)
    else:
        vals = values.tolist() if isinstance(values, np.ndarray) else list(values)
        u = np.array([_unsigned_value(v, vindex, f"value at position {i}") for i, v in enumerate(vals)],
                     dtype=np.uint64)
    return _reverse_bits_array(u) if vindex == "reverse_bits" else u


def _md5_prefix_array(values: Any) -> np.ndarray:
    """The first 8 bytes of each ``binary_md5`` keyspace id (uint64, big-endian)."""
    data, offsets = _sql_keys(values)
    buf = data.tobytes()
    off = offsets.tolist()
    return np.array([int.from_bytes(hashlib.md5(buf[off[i]:off[i + 1]]).digest()[:8], "big")
                     for i in range(len(off) - 1)], dtype=np.uint64)


def _loose_sql_bytes(value: Any, i: int) -> bytes:
    """The SQL bytes of the value at position ``i`` of a batch, errors as :func:`_loose_ksid` words them."""
    what = f"value at position {i}"
    try:
        return _sql_bytes(value, what)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None


def _loose_array(values: Any, vindex: str, threads: int | None) -> np.ndarray:
    """``unicode_loose_*`` keyspace ids of many values (the first 8 bytes, uint64),
    folded and hashed in C; a value the kernel refuses goes through
    :func:`_loose_ksid`, which raises naming its position."""
    vals = values.to_pylist() if hasattr(values, "to_pylist") and not isinstance(values, (list, tuple, np.ndarray)) \
        else values.tolist() if isinstance(values, np.ndarray) else values if isinstance(values, (list, tuple)) \
        else list(values)

    def fallback(value: Any, i: int) -> int:
        return int.from_bytes(_loose_ksid(value, vindex, f"value at position {i}")[:8], "big")

    ksids: np.ndarray = _native_vitess.unicode_loose_ksids(vals, vindex == "unicode_loose_md5", _loose_sql_bytes,
                                                           fallback, threads)
    return ksids


def generate_shard_ranges(n: int) -> list[str]:
    """The names of ``n`` shards as Vitess's ``key.GenerateShardRanges(n)``
    makes them: bounds of 2 hex digits up to 256 shards, 4 up to 65,536;
    shard ``i`` ends at ``int((i + 1) * (M / n))`` in float64 (``M`` = 256 or
    65,536), so the rounding spreads over the shards when ``n`` does not
    divide ``M``, and the last shard is open-ended (``int(49 * (256 / 49))``
    is 255, yet the 49th shard is ``fa-``).

    >>> generate_shard_ranges(7)
    ['-24', '24-49', '49-6d', '6d-92', '92-b6', 'b6-db', 'db-']
    >>> generate_shard_ranges(512)[:2], generate_shard_ranges(512)[-1]
    (['-0080', '0080-0100'], 'ff80-')
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, not {type(n).__name__}")
    if n <= 0:
        raise ValueError(f"n must be at least 1, got {n}")
    if n > 65536:
        raise ValueError(f"Vitess generates at most 65536 shard ranges, got {n}")
    width, top = (2, 256) if n <= 256 else (4, 65536)
    size = float(top) / float(n)
    names = []
    start = 0
    for i in range(1, n + 1):
        end = top if i == n else int(float(i) * size)  # the last shard is open-ended even when i*size < top
        names.append((f"{start:0{width}x}" if start else "") + "-" + (f"{end:0{width}x}" if end != top else ""))
        start = end
    return names


def _parse_bound(text: str, name: str) -> int | None:
    if len(text) % 2:
        raise ValueError(f"shard name {name!r}: {text!r} is not a whole number of hex bytes")
    b = bytes.fromhex(text).rstrip(b"\x00")
    if not b:
        return None if text == "" else 0
    if len(b) > 8:
        raise ValueError(f"shard name {name!r}: key-range bounds longer than 8 bytes are not supported")
    return int.from_bytes(b.ljust(8, b"\x00"), "big")


def parse_shard_name(name: str) -> tuple[int, int]:
    """``(start, end)`` of a shard's key range as big-endian uint64 numbers,
    ``end`` exclusive, with ``2**64`` for an open end.

    >>> parse_shard_name("40-80")
    (4611686018427387904, 9223372036854775808)
    >>> parse_shard_name("-80"), parse_shard_name("c0-")[1] == 2**64
    ((0, 9223372036854775808), True)
    """
    if not isinstance(name, str):
        raise TypeError(f"a shard name must be a str, not {type(name).__name__}")
    if name in ("0", "-"):
        return 0, 1 << 64
    m = _NAME_RE.match(name)
    if m is None:
        raise ValueError(f"{name!r} is not a Vitess key-range shard name (hex 'start-end', e.g. '-80', '40-80', 'c0-')")
    s, e = m.group(1), m.group(2)
    start = _parse_bound(s, name) if s else None
    end = _parse_bound(e, name) if e else None
    lo = 0 if start is None else start
    hi = (1 << 64) if end is None else end
    if e and end == 0:
        raise ValueError(f"shard name {name!r}: the end bound is zero, the range is empty")
    if lo >= hi:
        raise ValueError(f"shard name {name!r}: start is not below end")
    return lo, hi


def even_shard_names(n: int) -> list[str]:
    """Names of ``n`` equal key-range shards (``n`` a power of two, up to 256),
    as ``vtctl`` names them.

    >>> even_shard_names(4)
    ['-40', '40-80', '80-c0', 'c0-']
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, not {type(n).__name__}")
    if n < 1 or n > 256 or n & (n - 1):
        raise ValueError(f"n must be a power of two from 1 to 256, got {n}")
    if n == 1:
        return ["-"]
    step = 256 // n
    bounds = [f"{i * step:02x}" for i in range(1, n)]
    return [("" if i == 0 else bounds[i - 1]) + "-" + (bounds[i] if i < n - 1 else "") for i in range(n)]


@register_router_type("vitess")
class VitessRouter(RawKeyRouter):
    """Route sharding-column values to Vitess shards.

    ``shard_names`` are key-range names that must tile the whole keyspace
    (a gap or an overlap is a ValueError); ``vindex`` is ``"hash"`` or
    ``"xxhash"``.

    >>> r = VitessRouter(["-80", "80-"], "hash")
    >>> r.route_many([1, 2, 3, 4, 5, 6]).tolist()
    [0, 0, 0, 1, 0, 1]
    >>> from shardhash import plan
    >>> split = VitessRouter(["-40", "40-80", "80-"], "hash")     # split -80 in two
    >>> [(m.source, m.destination, m.share) for m in plan.moved_ranges(r, split)]
    [('-80', '-40', 0.25), ('-80', '40-80', 0.25)]
    """

    _doc_fields = ("vindex",)

    _routes_instead = ("a Vitess router routes keyspace ids", "use route_many(values) or route_keyspace_ids(ksids)")

    def hashing_description(self) -> str:
        return f"Vitess {self.vindex} vindex keyspace id"

    cli_options = frozenset({"vindex"})  # shardhash topology new

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Any, load: Callable[[str], Router]) -> Router:
        return cls(shards, vindex=args.vindex or "hash")

    def __init__(self, shard_names: Iterable[str], vindex: str = "hash", *, version: int = 1) -> None:
        if isinstance(shard_names, str):
            raise TypeError("shard_names must be a list of names, not a single str")
        names = list(shard_names)
        vindex = _check_vindex(vindex)
        if not names:
            raise ValueError("need at least one shard")
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"duplicate shard name {dup!r}")
        ranges = [parse_shard_name(n) for n in names]
        order = sorted(range(len(names)), key=lambda i: ranges[i])
        expect = 0
        for i in order:
            lo, hi = ranges[i]
            if lo > expect:
                raise ValueError(f"the shards leave a gap: no shard covers keyspace ids from {expect:016x} "
                                 f"up to {lo:016x} (next shard {names[i]!r})")
            if lo < expect:
                raise ValueError(f"shard {names[i]!r} overlaps another shard's key range")
            expect = hi
        if expect != 1 << 64:
            raise ValueError(f"the shards leave a gap: no shard covers keyspace ids from {expect:016x} to the end")
        super().__init__(names, version=version)
        starts = np.array([ranges[i][0] for i in order], dtype=np.uint64)
        owners = np.array(order, dtype=np.int32)
        starts.setflags(write=False)
        owners.setflags(write=False)
        self._set("_starts", starts)
        self._set("_owners", owners)
        self._set("_vindex", vindex)
        if vindex in _LOOSE_VINDEXES:  # one key: bisect over Python ints (a numpy scalar search takes microseconds)
            self._set("_start_list", starts.tolist())
            self._set("_owner_list", owners.tolist())
        if vindex in _NATIVE_VINDEXES:
            keys = _native.VitessKeys(starts, owners, vindex == "xxhash")  # route/route_index of common keys in C
            self._use_native_keys(keys.capsule(), keys)
        self._finish()

    def route_index(self, key: Any) -> int:
        """The index of the shard that holds ``key``."""
        if self._vindex in _NATIVE_VINDEXES:
            return super().route_index(key)  # in C for the common key types
        return self._route_index_slow(key)

    def route(self, key: Any) -> str:
        """The shard that holds ``key``."""
        if self._vindex in _NATIVE_VINDEXES:
            return super().route(key)
        return self.shards[self._route_index_slow(key)]

    @property
    def vindex(self) -> str:
        return self._vindex  # type: ignore[no-any-return]

    def _doc_params(self) -> dict[str, Any]:
        return {"vindex": self._vindex}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Any, version: int,
                     key_prefix: int | None) -> VitessRouter:
        shards = raw_doc_shards(shards, key_prefix, "a Vitess router")
        return cls(shards, params["vindex"], version=version)

    def route_keyspace_ids(self, ksids: Any, *, out: np.ndarray | None = None) -> np.ndarray:
        """Shard indices (int32) for keyspace ids given as big-endian uint64 numbers."""
        # Checked, not cast: a cast would wrap a negative id (or, under NumPy
        # 1.x, a list mixing negative ids with ids beyond 2**63) into another id.
        k = as_hashes(ksids, "ksids")
        res: np.ndarray = self._owners[np.searchsorted(self._starts, k, side="right") - 1]
        return fill_out(out, res)

    def _route_index_slow(self, key: Any) -> int:
        # route()/route_index() of the keys the compiled path leaves here
        k = _ksid_u64(key, self._vindex)
        if self._vindex in _LOOSE_VINDEXES:
            return int(self._owner_list[bisect.bisect_right(self._start_list, k) - 1])
        return int(self._owners[int(np.searchsorted(self._starts, np.uint64(k), side="right")) - 1])

    def route_many(self, keys: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Shard indices (int32 array) for many values, via :func:`keyspace_id_array`."""
        if self._vindex == "binary_md5":
            return fill_out(out, self._route_md5(keys, threads))
        if out is None and threads is None and self._vindex in _NATIVE_VINDEXES:  # up to 64 keys: one pass in C
            small = self._route_small_keys(keys)
            if small is not None:
                return small
        return self.route_keyspace_ids(keyspace_id_array(keys, self._vindex, threads=threads), out=out)

    def _route_md5(self, keys: Any, threads: int | None) -> np.ndarray:
        """``binary_md5`` shards of many values: the first 4 bytes of each MD5
        (in C, without the GIL) decide the shard unless they equal those of a
        shard start whose bytes 5-8 are not zero; such values are decided on
        8 bytes."""
        data, offsets = _sql_keys(keys)
        top = _native.ketama_hash_offsets(data, offsets, threads).byteswap().astype(np.uint64)
        starts = self._starts
        res: np.ndarray = self._owners[np.searchsorted(starts, top << np.uint64(32), side="right") - 1]
        uneven = starts[(starts & np.uint64(0xFFFFFFFF)) != 0] >> np.uint64(32)
        if uneven.size:
            near = np.flatnonzero(np.isin(top, uneven))
            if near.size:
                buf = data.tobytes()
                off = offsets.tolist()
                for i in near.tolist():
                    k = int.from_bytes(hashlib.md5(buf[off[i]:off[i + 1]]).digest()[:8], "big")
                    res[i] = self._owners[int(np.searchsorted(starts, np.uint64(k), side="right")) - 1]
        return res

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """Inclusive ``(lo, hi, shard index)`` ranges of keyspace ids (as
        big-endian uint64 numbers) covering ``[0, 2**64-1]``, for
        ``shardhash.plan.moved_ranges``."""
        st = [int(s) for s in self._starts.tolist()]
        own = self._owners.tolist()
        return [(st[i], (st[i + 1] - 1) if i + 1 < len(st) else (1 << 64) - 1, own[i]) for i in range(len(st))]
