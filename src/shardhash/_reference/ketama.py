"""The ketama continuum of libmemcached, libketama, twemproxy and uhashring,
written plainly (test oracle).

Point counts in each flavour's own arithmetic (float32 where the C code uses
``float``), four points per MD5 digest, and each flavour's tie and search
rule; use :mod:`shardhash.compat.ketama`.
"""

from __future__ import annotations

import hashlib
import math
import struct

__all__ = ["ketama_points", "ketama_route"]


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
