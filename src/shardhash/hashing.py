"""Stable, seeded hashing of keys: one key or millions.

Every function here gives the same value in every process, on every
platform and in every release: the algorithms are frozen by the golden
vectors in ``tests/vectors/`` and the key encoding is the routing protocol's
(``docs/protocol.md``).

>>> from shardhash import hash_key, hash_array, hash_bytes, Hasher
>>> hash_bytes(b"abc", "xxh64")
4952883123889572249
>>> hash_key("user-42") == int(hash_array(["user-42"])[0])
True
>>> h = Hasher("murmur3_32", seed=1)
>>> h(12345) < 2**32
True

Accepted by :func:`hash_array` / :meth:`Hasher.hash_array`: lists and tuples
of keys; numpy integer arrays of any width and byte order, contiguous or
strided (an integer hashes by its value); numpy ``S`` (trailing NULs
stripped), ``U`` and ``StringDType`` arrays; object arrays of str / bytes /
int / UUID / tuples; pandas Series; and any object exposing the Arrow
PyCapsule interface (``__arrow_c_array__`` / ``__arrow_c_stream__``) holding
int8-64, uint8-64, string, large_string, binary, large_binary, string_view or
binary_view data — pyarrow and polars objects are read zero-copy.

In arrays (and from :func:`hash_key` / ``Hasher.__call__``), 32-bit
algorithms give their value zero-extended to 64 bits and ``murmur3_128``
gives its first 64-bit word h1 (the word Cassandra uses).  Only
:func:`hash_bytes` returns the full 128-bit ``murmur3_128`` value.
"""

from __future__ import annotations

from shardhash._codec import KeyCodec
from shardhash._hashing import ALGORITHMS, Hasher, hash_array, hash_bytes, hash_key

__all__ = ["ALGORITHMS", "Hasher", "KeyCodec", "hash_array", "hash_bytes", "hash_key"]
