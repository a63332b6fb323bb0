"""Cassandra's Murmur3Partitioner token, written plainly (test oracle).

MurmurHash3_x64_128 (seed 0) with Cassandra's one quirk, the sign-extended
tail bytes, and the partitioner's rules for the empty key and the minimum
token.  Follows the system's description (docs/compat.md), not the compiled
kernel; use :mod:`shardhash.compat.cassandra`.
"""

from __future__ import annotations

import struct

__all__ = ["cassandra_murmur_h1", "cassandra_token"]

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


def _mix_k(k: int, ca: int, r: int, cb: int) -> int:
    """A block (or tail) word scrambled: ``k *= ca; k = rotl(k, r); k *= cb``."""
    return (_rotl64((k * ca) & _M64, r) * cb) & _M64


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
        h1 ^= _mix_k(k1, c1, 31, c2)
        h1 = _rotl64(h1, 27)
        h1 = (h1 + h2) & _M64
        h1 = (h1 * 5 + 0x52DCE729) & _M64
        h2 ^= _mix_k(k2, c2, 33, c1)
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
        h2 ^= _mix_k(k2, c2, 33, c1)
    if len(tail) > 0:
        h1 ^= _mix_k(k1, c1, 31, c2)
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
