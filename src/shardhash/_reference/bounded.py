"""Consistent hashing with bounded loads, from docs/routers.md 2.16 (test-only oracle).

Mirrokni, Thorup & Zadimoghaddam (arXiv 1608.01350): items walk a ring from
their successor token to the first shard whose load plus the item's size stays
within its capacity ``ceil(total * f / (100 * N))``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

__all__ = ["assign", "capacity", "successor"]


def capacity(total: int, nshards: int, factor_percent: int) -> int:
    """``ceil(total * factor_percent / (100 * nshards))``, exactly."""
    return -(-(total * factor_percent) // (100 * nshards))


def successor(tokens: Sequence[int], h: int) -> int:
    """Position of the first token >= ``h``; 0 past the last token."""
    j = bisect_left(tokens, h)
    return 0 if j == len(tokens) else j


def assign(tokens: Sequence[int], owners: Sequence[int], hashes: Sequence[int],
           caps: Sequence[int], *, sizes: Sequence[int] | None = None,
           order: Sequence[int] | None = None, prev: Sequence[int] | None = None,
           load: list[int] | None = None) -> tuple[list[int], list[int], int]:
    """(shard of each item, final loads, number of overflows)."""
    n, nshards = len(hashes), len(caps)
    load = [0] * nshards if load is None else list(load)
    size = [1] * n if sizes is None else list(sizes)
    seq = list(range(n)) if order is None else list(order)
    out = [-1] * n
    overflows = 0
    if prev is not None:
        for i in seq:
            p = prev[i]
            if p >= 0 and load[p] + size[i] <= caps[p]:
                load[p] += size[i]
                out[i] = p
    for i in seq:
        if out[i] >= 0:
            continue
        j = successor(tokens, hashes[i])
        for step in range(len(tokens)):
            o = owners[(j + step) % len(tokens)]
            if load[o] + size[i] <= caps[o]:
                out[i] = o
                break
        else:
            o = min(range(nshards), key=lambda s: (load[s], s))
            out[i] = o
            overflows += 1
        load[out[i]] += size[i]
    return out, load, overflows
