"""Vitess key ranges, written plainly (test oracle): whether a keyspace id
falls in a shard's range; use :mod:`shardhash.compat.vitess`.
"""

from __future__ import annotations

__all__ = ["vitess_in_shard"]


def vitess_in_shard(ksid: bytes, start: bytes, end: bytes) -> bool:
    """Vitess KeyRangeContains: byte-wise comparison after stripping
    trailing zero bytes; empty start/end are unbounded."""

    def norm(b: bytes) -> bytes:
        return b.rstrip(b"\x00")

    k = norm(ksid)
    return (not start or k >= norm(start)) and (not end or k < norm(end))
