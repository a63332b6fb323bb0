"""Replica (preference) lists, from docs/strategies-draft.md (test-only oracle).

Each strategy orders the shards for a key; a replica list takes the first ``r``
of that order, or with zones follows Cassandra's NetworkTopologyStrategy rule:
distinct zones first, then the skipped shards in the order they were met.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from shardhash._reference.bounded import successor
from shardhash._reference.memento import mix64

__all__ = ["rendezvous_preference", "ring_preference", "select"]


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
