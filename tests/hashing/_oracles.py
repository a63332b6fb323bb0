"""The reference hash functions the hashing tests compare shardhash against:
the reference packages (``xxhash`` for the xxHash family, ``mmh3`` for
murmur3) and a few-line FNV-1a written from the FNV specification."""

from __future__ import annotations

from collections.abc import Callable

import mmh3
import xxhash

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1


def fnv1a(data: bytes, basis: int, prime: int, mask: int) -> int:
    """FNV-1a as in the FNV specification (draft-eastlake-fnv)."""
    h = basis
    for b in data:
        h = ((h ^ b) * prime) & mask
    return h


# algorithm -> reference (data, seed) -> the algorithm's full value (murmur3_128: all 128 bits)
FULL: dict[str, Callable[[bytes, int], int]] = {
    "xxh3_64": lambda d, s: xxhash.xxh3_64_intdigest(d, seed=s),
    "xxh64": lambda d, s: xxhash.xxh64_intdigest(d, seed=s),
    "xxh32": lambda d, s: xxhash.xxh32_intdigest(d, seed=s),
    "murmur3_32": lambda d, s: mmh3.hash(d, s, signed=False),
    "murmur3_128": lambda d, s: mmh3.hash128(d, s, x64arch=True, signed=False),
    "fnv1a_32": lambda d, s: fnv1a(d, 0x811C9DC5, 0x01000193, M32),
    "fnv1a_64": lambda d, s: fnv1a(d, 0xCBF29CE484222325, 0x100000001B3, M64),
}

# algorithm -> the value the array API gives (<= 64 bits: murmur3_128's low word h1)
def _low_word(f: Callable[[bytes, int], int]) -> Callable[[bytes, int], int]:
    return lambda d, s: f(d, s) & M64


WORD: dict[str, Callable[[bytes, int], int]] = {name: _low_word(f) for name, f in FULL.items()}

# algorithm -> its largest seed (FNV-1a has none)
SEED_TOP = {"xxh3_64": M64, "xxh64": M64, "xxh32": M32, "murmur3_32": M32, "murmur3_128": M32,
            "fnv1a_32": 0, "fnv1a_64": 0}
