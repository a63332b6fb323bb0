"""Replica (preference) lists, from docs/routers.md 2.17 (test-only oracle).

Each strategy orders the shards for a key; a replica list takes the first ``r``
of that order, or with zones follows Cassandra's NetworkTopologyStrategy rule:
distinct zones first, then the skipped shards in the order they were met.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from shardhash._reference.bounded import successor
from shardhash._reference.memento import GOLDEN, MASK, mix64

__all__ = ["rehash_preference", "rendezvous_preference", "ring_preference", "select"]

REPLICA_SALT = 0x7265706C69636131  # "replica1"
ATTEMPTS = 8


def ring_preference(tokens: Sequence[int], owners: Sequence[int], h: int) -> list[int]:
    """Owners met walking clockwise from the successor of ``h``, each once."""
    j = successor(tokens, h)
    seen: list[int] = []
    for step in range(len(tokens)):
        o = owners[(j + step) % len(tokens)]
        if o not in seen:
            seen.append(o)
    return seen


def rendezvous_preference(seeds: Sequence[int], weights: Sequence[float] | None,
                          h: int) -> list[int]:
    """Shards by descending draw (or weighted score), ties to the smaller index."""
    scores: list[float | int] = []
    for i, seed in enumerate(seeds):
        x = mix64(h ^ seed)
        if weights is None:
            scores.append(x)
        else:
            u = float((x >> 11) | 1) / 9007199254740992.0
            scores.append(-weights[i] / math.log(u))
    return sorted(range(len(seeds)), key=lambda i: (-scores[i], i))


def rehash_preference(route: Callable[[int], int], nshards: int, h: int) -> list[int]:
    """Routes of h, then of mix64((h ^ REPLICA_SALT) + a * GOLDEN) for a = 1, 2, ...
    (ATTEMPTS * nshards attempts in all), each shard once; then the rest in index order."""
    seen: list[int] = []
    for a in range(ATTEMPTS * nshards):
        s = route(h if a == 0 else mix64(((h ^ REPLICA_SALT) + a * GOLDEN) & MASK))
        if s not in seen:
            seen.append(s)
    return seen + [s for s in range(nshards) if s not in seen]


def select(pref: Iterable[int], r: int, zones: Sequence[int] | None = None,
           nzones: int = 0) -> list[int]:
    """The replica list of length ``r`` (padded with -1) from a preference order."""
    out: list[int] = []
    if zones is None:
        out = list(pref)[:r]
    else:
        skipped: list[int] = []
        used: set[int] = set()
        for s in pref:
            if len(out) == r:
                break
            if len(used) == nzones:
                out.append(s)
            elif zones[s] in used:
                skipped.append(s)
            else:
                used.add(zones[s])
                out.append(s)
                if len(used) == nzones:
                    out.extend(skipped[: r - len(out)])
                    skipped = []
        out.extend(skipped[: r - len(out)])
    return out + [-1] * (r - len(out))
