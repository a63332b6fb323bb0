"""Obviously-correct pure-Python references for the compatibility modes of
Cassandra, ketama, Vitess, MongoDB and Redis Cluster.

Test oracles only: slow, written for clarity, used to check the compiled
kernels in ``_native_b`` on random inputs.  Each follows the system's own
description (see docs/compat.md), not the compiled code.
"""

from __future__ import annotations

import hashlib
import math
import struct

__all__ = [
    "cassandra_murmur_h1",
    "cassandra_token",
    "crc16_xmodem",
    "redis_keyslot",
    "ketama_points",
    "ketama_route",
    "mongo_number_to_long",
    "mongo_hash_number",
    "vitess_in_shard",
]

_M64 = (1 << 64) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _fmix64(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _M64
    k ^= k >> 33
    return k


def _signed64(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


def cassandra_murmur_h1(key: bytes) -> int:
    """h1 of Cassandra's MurmurHash3_x64_128 (seed 0), signed.

    Differs from the reference algorithm only in the tail: each tail byte is
    a Java ``byte`` (signed) widened to ``long`` before shifting.
    """
    c1, c2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
    n = len(key)
    h1 = h2 = 0
    nblocks = n // 16
    for i in range(nblocks):
        k1, k2 = struct.unpack_from("<QQ", key, 16 * i)
        k1 = (k1 * c1) & _M64
        k1 = _rotl64(k1, 31)
        k1 = (k1 * c2) & _M64
        h1 ^= k1
        h1 = _rotl64(h1, 27)
        h1 = (h1 + h2) & _M64
        h1 = (h1 * 5 + 0x52DCE729) & _M64
        k2 = (k2 * c2) & _M64
        k2 = _rotl64(k2, 33)
        k2 = (k2 * c1) & _M64
        h2 ^= k2
        h2 = _rotl64(h2, 31)
        h2 = (h2 + h1) & _M64
        h2 = (h2 * 5 + 0x38495AB5) & _M64
    tail = key[16 * nblocks:]
    k1 = k2 = 0
    for i, b in enumerate(tail):
        signed = b - 256 if b >= 128 else b  # Java byte
        widened = (signed << (8 * (i % 8))) & _M64
        if i < 8:
            k1 ^= widened
        else:
            k2 ^= widened
    if len(tail) > 8:
        k2 = (k2 * c2) & _M64
        k2 = _rotl64(k2, 33)
        k2 = (k2 * c1) & _M64
        h2 ^= k2
    if len(tail) > 0:
        k1 = (k1 * c1) & _M64
        k1 = _rotl64(k1, 31)
        k1 = (k1 * c2) & _M64
        h1 ^= k1
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    h1 = _fmix64(h1)
    h2 = _fmix64(h2)
    h1 = (h1 + h2) & _M64
    return _signed64(h1)


def cassandra_token(key: bytes) -> int:
    """Murmur3Partitioner token: empty key -> MIN, and MIN -> MAX."""
    if len(key) == 0:
        return _INT64_MIN
    h = cassandra_murmur_h1(key)
    return _INT64_MAX if h == _INT64_MIN else h


def crc16_xmodem(data: bytes) -> int:
    """Bit-by-bit CRC16: poly 0x1021, init 0, MSB first, no final xor."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def redis_keyslot(key: bytes) -> int:
    """Redis Cluster slot: hash the first non-empty {tag}, else the key."""
    s = key.find(b"{")
    if s != -1:
        e = key.find(b"}", s + 1)
        if e != -1 and e != s + 1:
            key = key[s + 1:e]
    return crc16_xmodem(key) & 16383


def _md5_words(s: bytes) -> list[int]:
    d = hashlib.md5(s).digest()
    return [int.from_bytes(d[4 * i:4 * i + 4], "little") for i in range(4)]


def _f32(x: float) -> float:
    """Round a double to the nearest float32 (what a C float assignment does)."""
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def ketama_points(names: list[bytes], weights: list[int], flavor: str) -> list[tuple[int, int]]:
    """The continuum as (point, server index) pairs, unsorted, before ties
    are resolved.  ``names`` are the per-flavour point-name prefixes."""
    n = len(names)
    total = sum(weights)
    out = []
    for idx, (name, w) in enumerate(zip(names, weights)):
        if flavor == "uhashring":
            count = (40 * n * w) // total
        elif flavor == "libketama":
            pct = _f32(_f32(float(w)) / _f32(float(total)))
            count = int(math.floor(_f32(pct * 40.0 * n)))
        else:  # libmemcached, twemproxy: float32 arithmetic throughout
            pct = _f32(_f32(float(w)) / _f32(float(total)))
            prod = _f32(_f32(_f32(pct * 160.0) / 4.0) * _f32(float(n)))
            count = int(math.floor(_f32(prod + _f32(1e-10))))
        for k in range(count):
            for p in _md5_words(name + b"-" + str(k).encode()):
                out.append((p, idx))
    return out


def ketama_route(points: list[tuple[int, int]], flavor: str, key_hash: int) -> int:
    """Server index for a key hash: sort, resolve ties, search, wrap."""
    if flavor == "uhashring":
        owner: dict[int, int] = {}
        for p, idx in points:  # insertion order: the last inserted wins
            owner[p] = idx
        ring = sorted(owner)
        for p in ring:  # bisect_right: first point > h
            if p > key_hash:
                return owner[p]
        return owner[ring[0]]
    ring2 = sorted(points)  # ties: lowest server index first
    for p, idx in ring2:  # lower_bound: first point >= h
        if p >= key_hash:
            return idx
    return ring2[0][1]


def mongo_number_to_long(x: float | int) -> int:
    """safeNumberLongForHash: NaN -> 0, 2**63 -> MIN, clamp, truncate."""
    if isinstance(x, int):
        return max(_INT64_MIN, min(_INT64_MAX, x))
    if math.isnan(x):
        return 0
    if x == 2.0 ** 63:
        return _INT64_MIN
    if x > 2.0 ** 63:
        return _INT64_MAX
    if x < -(2.0 ** 63):
        return _INT64_MIN
    return int(x)


def mongo_hash_number(x: float | int) -> int:
    """md5(seed 0 || type 10 || int64 LE), first 8 digest bytes LE, signed."""
    msg = struct.pack("<iiq", 0, 10, mongo_number_to_long(x))
    return int(struct.unpack("<q", hashlib.md5(msg).digest()[:8])[0])


def vitess_in_shard(ksid: bytes, start: bytes, end: bytes) -> bool:
    """Vitess KeyRangeContains: byte-wise comparison after stripping
    trailing zero bytes; empty start/end are unbounded."""

    def norm(b: bytes) -> bytes:
        return b.rstrip(b"\x00")

    k = norm(ksid)
    return (not start or k >= norm(start)) and (not end or k < norm(end))
