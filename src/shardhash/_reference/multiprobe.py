"""Multi-probe consistent hashing, from docs/routers.md 2.15 (test-only oracle).

One token per shard on the 64-bit circle, ``k`` probes per key (Appleton &
O'Reilly, arXiv 1505.00062): a key goes to the token closest clockwise to any
of its probes; equal distances go to the smaller shard index.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from shardhash._reference.memento import GOLDEN, MASK, mix64

__all__ = ["lookup", "preference", "probes"]


def probes(h: int, k: int) -> list[int]:
    """The first ``k`` outputs of SplitMix64 seeded with ``h``."""
    return [mix64((h + (i + 1) * GOLDEN) & MASK) for i in range(k)]


def lookup(tokens: Sequence[int], owners: Sequence[int], h: int, k: int) -> int:
    """Owner of the token with the smallest clockwise distance from a probe.

    ``tokens`` sorted strictly increasing; each probe's best token is its
    successor (first token >= probe, else the first token).
    """
    best: tuple[int, int] | None = None
    for p in probes(h, k):
        j = bisect_left(tokens, p)
        if j == len(tokens):
            j = 0
        cand = ((tokens[j] - p) & MASK, owners[j])
        if best is None or cand < best:
            best = cand
    assert best is not None
    return best[1]


def preference(tokens: Sequence[int], owners: Sequence[int], h: int, k: int) -> list[int]:
    """Every shard owning a token, by (min distance from any probe, index)."""
    score: dict[int, int] = {}
    for p in probes(h, k):
        for t, o in zip(tokens, owners):
            d = (t - p) & MASK
            if o not in score or d < score[o]:
                score[o] = d
    return sorted(score, key=lambda o: (score[o], o))


def expected_shares(tokens: Sequence[int], k: int) -> list[float]:
    """Share of the key space each token wins when the ``k`` probes are
    independent and uniform (the model behind the paper's peak/mean figures).

    Token ``j`` owns the arc ``a_j`` ending at it; a probe at distance ``x`` before
    its successor beats every other probe with probability ``(1 - L(x))^(k-1)``,
    ``L(x) = sum_i min(x, a_i)``, so ``share_j = k * integral_0^{a_j} (1 - L(x))^(k-1) dx``,
    integrated exactly piece by piece (``L`` is linear between sorted arc lengths).
    """
    n = len(tokens)
    arcs = [((tokens[j] - tokens[j - 1]) & MASK or (1 << 64)) / 2.0**64 for j in range(n)]
    if n == 1:
        return [1.0]
    order = sorted(range(n), key=lambda j: arcs[j])
    out = [0.0] * n
    acc = below = prev = 0.0
    for m, j in enumerate(order):
        c = n - m                       # arcs still longer than x on this piece
        lo = 1.0 - below - c * prev
        hi = max(1.0 - below - c * arcs[j], 0.0)
        acc += (lo**k - hi**k) / c
        out[j] = acc
        below += arcs[j]
        prev = arcs[j]
    return out
