"""Rendezvous (highest random weight) hashing of docs/routers.md, plain and
weighted (test oracle).
"""

from __future__ import annotations

import math

from shardhash._reference.splitmix64 import mix64


def rendezvous_route(h: int, seeds: list[int], weights: list[float] | None) -> int:
    best, best_score = 0, None
    for i, seed in enumerate(seeds):
        x = mix64(h ^ seed)
        if weights is None:
            score: float = x
        else:
            u = ((x >> 11) | 1) / float(1 << 53)
            score = -weights[i] / math.log(u)
        if best_score is None or score > best_score:
            best, best_score = i, score
    return best
