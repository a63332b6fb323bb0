"""Pure-Python reference of PostgreSQL's hashing (test oracle).

Jenkins' lookup3 as PostgreSQL has it (``hash_bytes``,
``hash_bytes_extended``, ``hash_bytes_uint32(_extended)``,
``hash_combine64``) and the per-type rules of hash partitioning, written
plainly for checking the compiled kernels.  Word loads are little-endian, as
on x86-64 and arm64 servers.  Use :mod:`shardhash.compat.postgres` instead.
"""

from __future__ import annotations

import datetime as _dt
import math
import struct
import uuid as _uuid
from typing import SupportsFloat, SupportsInt

M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1
HASH_PARTITION_SEED = 0x7A5B22367996DCFD


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & M32


def _mix_step(x: int, y: int, z: int, r: int) -> tuple[int, int]:
    """One line of lookup3's ``mix``: ``x -= z; x ^= rot(z, r); z += y``."""
    x = ((x - z) & M32) ^ _rot(z, r)
    return x, (z + y) & M32


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    a, c = _mix_step(a, b, c, 4)
    b, a = _mix_step(b, c, a, 6)
    c, b = _mix_step(c, a, b, 8)
    a, c = _mix_step(a, b, c, 16)
    b, a = _mix_step(b, c, a, 19)
    c, b = _mix_step(c, a, b, 4)
    return a, b, c


def _final_step(x: int, y: int, r: int) -> int:
    """One line of lookup3's ``final``: ``x ^= y; x -= rot(y, r)``."""
    return ((x ^ y) - _rot(y, r)) & M32


def _final(a: int, b: int, c: int) -> tuple[int, int, int]:
    c = _final_step(c, b, 14)
    a = _final_step(a, c, 11)
    b = _final_step(b, a, 25)
    c = _final_step(c, b, 16)
    a = _final_step(a, c, 4)
    b = _final_step(b, a, 14)
    c = _final_step(c, b, 24)
    return a, b, c


def _start(n: int, seed: int | None) -> tuple[int, int, int]:
    """lookup3's initial state for ``n`` bytes, the 64-bit ``seed`` mixed in."""
    a = b = c = (0x9E3779B9 + n + 3923095) & M32
    if seed:
        a = (a + (seed >> 32)) & M32
        b = (b + (seed & M32)) & M32
        a, b, c = _mix(a, b, c)
    return a, b, c


def _lookup3(k: bytes, seed: int | None) -> tuple[int, int, int]:
    n = len(k)
    a, b, c = _start(n, seed)
    pos = 0
    while n - pos >= 12:
        a = (a + int.from_bytes(k[pos:pos + 4], "little")) & M32
        b = (b + int.from_bytes(k[pos + 4:pos + 8], "little")) & M32
        c = (c + int.from_bytes(k[pos + 8:pos + 12], "little")) & M32
        a, b, c = _mix(a, b, c)
        pos += 12
    tail = k[pos:]
    a = (a + int.from_bytes(tail[0:4], "little")) & M32
    b = (b + int.from_bytes(tail[4:8], "little")) & M32
    c = (c + (int.from_bytes(tail[8:11], "little") << 8)) & M32   # c's low byte is reserved
    return _final(a, b, c)


def hash_bytes_extended(k: bytes, seed: int) -> int:
    _, b, c = _lookup3(bytes(k), seed & M64)
    return (b << 32) | c


def hash_bytes(k: bytes) -> int:
    return _lookup3(bytes(k), None)[2]


def hash_uint32_extended(k: int, seed: int) -> int:
    a, b, c = _start(4, seed)
    _, b, c = _final((a + (k & M32)) & M32, b, c)
    return (b << 32) | c


def hash_uint32(k: int) -> int:
    a, b, c = _start(4, None)
    return _final((a + (k & M32)) & M32, b, c)[2]


def hash_combine64(a: int, b: int) -> int:
    return (a ^ ((b + 0x49A0F4DD15E5A8E3 + (a << 54) + (a >> 7)) & M64)) & M64


def fold_int8(v: int) -> int:
    u = v & M64
    lo, hi = u & M32, u >> 32
    return lo ^ (hi if v >= 0 else (~hi & M32))


def _signed32(x: int) -> int:
    return x - (1 << 32) if x >= 1 << 31 else x


_EPOCH_DATE = _dt.date(2000, 1, 1)
_EPOCH_TS = _dt.datetime(2000, 1, 1)
_ALIAS = {"smallint": "int2", "integer": "int4", "int": "int4", "bigint": "int8",
          "double precision": "float8", "real": "float4", "character varying": "varchar"}


def _int(value: object) -> int:
    if isinstance(value, (SupportsInt, str, bytes, bytearray)):
        return int(value)
    raise TypeError(f"not an integer: {value!r}")


def _float(value: object) -> float:
    if isinstance(value, (SupportsFloat, str, bytes, bytearray)):
        return float(value)
    raise TypeError(f"not a number: {value!r}")


def _key(value: object, type_: str) -> int | bytes | float:
    """What the type's hash function hashes: the uint32 it folds the value to
    (an int), the value's bytes, or (float4/float8) the float itself."""
    t = _ALIAS.get(type_, type_)
    if t in ("int2", "int4", "int8"):
        return _int(value) & M32 if t != "int8" else fold_int8(_int(value))
    if t == "date":
        assert isinstance(value, _dt.date)
        return (value.toordinal() - _EPOCH_DATE.toordinal()) & M32
    if t in ("timestamp", "timestamptz"):
        assert isinstance(value, _dt.datetime)
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return fold_int8((value - _EPOCH_TS) // _dt.timedelta(microseconds=1))
    if t in ("text", "varchar"):
        return str(value).encode("utf-8")
    if t == "bpchar":
        return str(value).rstrip(" ").encode("utf-8")
    if t == "bytea":
        assert isinstance(value, (bytes, bytearray, memoryview))
        return bytes(value)
    if t == "uuid":
        return (value if isinstance(value, _uuid.UUID) else _uuid.UUID(str(value))).bytes
    if t in ("float4", "float8"):
        v = _float(value)
        return struct.unpack("<f", struct.pack("<f", v))[0] if t == "float4" else v
    raise ValueError(f"unsupported type {type_!r}")


def _float_bytes(v: float) -> bytes:
    if math.isnan(v):
        return struct.pack("<Q", 0x7FF8000000000000)
    return struct.pack("<d", v)


def hash_extended(value: object, type_: str, seed: int = HASH_PARTITION_SEED) -> int:
    k = _key(value, type_)
    if isinstance(k, int):
        return hash_uint32_extended(k, seed)
    if isinstance(k, float):
        if k == 0.0:
            return seed & M64
        return hash_bytes_extended(_float_bytes(k), seed)
    return hash_bytes_extended(k, seed)


def hash32(value: object, type_: str) -> int:
    k = _key(value, type_)
    if isinstance(k, int):
        return _signed32(hash_uint32(k))
    if isinstance(k, float):
        if k == 0.0:
            return 0
        return _signed32(hash_bytes(_float_bytes(k)))
    return _signed32(hash_bytes(k))


def row_hash(row: tuple[object, ...], types: tuple[str, ...]) -> int:
    h = 0
    for v, t in zip(row, types):
        if v is not None:
            h = hash_combine64(h, hash_extended(v, t))
    return h


def partition_of(row: tuple[object, ...], modulus: int, types: tuple[str, ...]) -> int:
    return row_hash(row, types) % modulus
