"""The peers' own per-key paths that the compat benchmarks time beside ours.

The batch loops are written out inline rather than calling the one-key
functions: a Python call per key would slow the peer and flatter our ratios.
"""

from __future__ import annotations

import binascii
import struct
from typing import Any

import pytest


def crc_keyslot(key: str) -> int:
    """Redis Cluster's slot of one key: ``binascii.crc_hqx`` with the hash-tag rule."""
    b = key.encode()
    s = b.find(b"{")
    if s != -1:
        e = b.find(b"}", s + 1)
        if e != -1 and e != s + 1:
            b = b[s + 1:e]
    return binascii.crc_hqx(b, 0) & 16383


def crc_keyslots(keys: list[str]) -> list[int]:
    """:func:`crc_keyslot` over a list, as one loop."""
    out = []
    for k in keys:
        b = k.encode()
        s = b.find(b"{")
        if s != -1:
            e = b.find(b"}", s + 1)
            if e != -1 and e != s + 1:
                b = b[s + 1:e]
        out.append(binascii.crc_hqx(b, 0) & 16383)
    return out


def murmur_tokens(keys: list[bytes]) -> list[int]:
    """Cassandra tokens from the driver's ``cmurmur3.murmur3`` (with the MIN ->
    MAX rule), as one loop; skips without cassandra-driver."""
    murmur3 = pytest.importorskip("cassandra.cmurmur3").murmur3
    lo, hi = -(1 << 63), (1 << 63) - 1
    out = []
    for k in keys:
        h = murmur3(k)
        out.append(hi if h == lo else h)
    return out


def composite_tokens(keys: list[tuple[Any, ...]], types: tuple[Any, ...]) -> list[int]:
    """Cassandra tokens of composite partition keys as the Python driver makes
    them, as one loop: each column serialized by its ``cassandra.cqltypes``
    type (``types``: the driver's type classes), the parts joined as
    ``Statement._key_parts_packed`` does (2-byte length, bytes, 0 byte;
    one column alone when there is one), hashed by ``cmurmur3.murmur3``
    with the MIN -> MAX rule; skips without cassandra-driver."""
    murmur3 = pytest.importorskip("cassandra.cmurmur3").murmur3
    lo, hi = -(1 << 63), (1 << 63) - 1
    pack = struct.pack
    sers = [t.serialize for t in types]
    out = []
    for k in keys:
        parts = [ser(v, 4) for ser, v in zip(sers, k)]
        rk = parts[0] if len(parts) == 1 else b"".join(pack(f">H{len(p)}sB", len(p), p, 0) for p in parts)
        h = murmur3(rk)
        out.append(hi if h == lo else h)
    return out
