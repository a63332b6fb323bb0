"""A router document's hashing spec, from docs/protocol.md alone (test oracle).

The key codec (section 2) is written out here in plain Python and the hash
functions (section 1) come from the independent ``xxhash`` and ``mmh3``
packages, and a few-line FNV-1a; shardhash's compiled modules are never
imported, so that the reference routers built on this hasher check the
compiled hashing as well as the placement.
"""

from __future__ import annotations

import numbers
import unicodedata
import uuid
from collections.abc import Callable
from typing import Any

import mmh3
import xxhash

__all__ = ["ALGORITHMS", "ReferenceHasher", "encode_key"]

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1
INT_MIN = -(1 << 63)


def _fnv1a_32(data: bytes, seed: int) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & M32
    return h


def _fnv1a_64(data: bytes, seed: int) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


# name -> (widest seed, the value used for routing: docs/protocol.md section 1)
ALGORITHMS: dict[str, tuple[int, Callable[[bytes, int], int]]] = {
    "xxh3_64": (M64, lambda d, s: xxhash.xxh3_64_intdigest(d, seed=s)),
    "xxh64": (M64, lambda d, s: xxhash.xxh64_intdigest(d, seed=s)),
    "xxh32": (M32, lambda d, s: xxhash.xxh32_intdigest(d, seed=s)),
    "murmur3_32": (M32, lambda d, s: mmh3.hash(d, s, signed=False)),
    # h1, the low 64 bits of h1 | h2 << 64
    "murmur3_128": (M32, lambda d, s: mmh3.hash128(d, s, x64arch=True, signed=False) & M64),
    "fnv1a_32": (0, _fnv1a_32),
    "fnv1a_64": (0, _fnv1a_64),
}


def encode_key(key: Any, codec: dict[str, Any]) -> bytes:
    """The bytes hashed for ``key`` under a codec document (docs/protocol.md 2)."""
    if isinstance(key, str):
        s = str.__str__(key)
        form = codec["normalization"]
        if codec["strip"]:
            s = s.strip()
        if form is not None:
            s = unicodedata.normalize(form, s)
        if codec["casefold"]:
            s = s.casefold()
            if form is not None:
                s = unicodedata.normalize(form, s)
        try:
            return s.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"string key {key!r} is not valid UTF-8") from None
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    if isinstance(key, bool) or type(key).__name__ in ("bool", "bool_"):
        raise TypeError(f"booleans are not keys: {key!r}")
    if isinstance(key, numbers.Integral):
        v = int(key)
        if not INT_MIN <= v <= M64:
            raise OverflowError(f"integer key {v} is outside [-2**63, 2**64-1]")
        if codec["int_encoding"] == "decimal":
            return str(v).encode("ascii")
        return (v & M64).to_bytes(8, "little")
    if isinstance(key, tuple):
        if not key:
            raise ValueError("the empty tuple is not a key")
        out = b""
        for part in key:
            b = encode_key(part, codec)
            out += len(b).to_bytes(4, "little") + b
        return out
    if isinstance(key, uuid.UUID):
        return key.bytes
    raise TypeError(f"not a key: {key!r}")


class ReferenceHasher:
    """``hasher(key)``: the 64-bit routing value of a key under a hashing spec."""

    def __init__(self, algorithm: str, seed: int, codec: dict[str, Any]) -> None:
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {algorithm!r}")
        widest, fn = ALGORITHMS[algorithm]
        if not 0 <= seed <= widest:
            raise ValueError(f"seed {seed} out of range for {algorithm}")
        self.algorithm = algorithm
        self.seed = seed
        self.codec = dict(codec)
        self._fn = fn

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> ReferenceHasher:
        """From a ``shardhash.hasher/1`` document (its ``codec`` included)."""
        return cls(doc["algorithm"], doc["seed"], doc["codec"])

    def hash_bytes(self, data: bytes) -> int:
        return self._fn(data, self.seed)

    def __call__(self, key: Any) -> int:
        return self._fn(encode_key(key, self.codec), self.seed)
