"""Replica (preference) lists, from docs/routers.md 2.17 (test-only oracle).

Each strategy orders the shards for a key; a replica list takes the first ``r``
of that order, or with zones follows Cassandra's NetworkTopologyStrategy rule:
distinct zones first, then the skipped shards in the order they were met.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from shardhash._reference.bounded import successor
from shardhash._reference.memento import GOLDEN, MASK, mix64

__all__ = ["preference_of", "rehash_preference", "rendezvous_preference", "replica_lists", "ring_preference",
           "router_preference", "router_replicas", "select", "zone_numbers"]

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


def zone_numbers(shards: Sequence[str], zones: dict[str, str]) -> tuple[list[int], int]:
    """Zone names -> numbers by first appearance in shard order, and the zone count."""
    num: dict[str, int] = {}
    out = [num.setdefault(zones[s], len(num)) for s in shards]
    return out, len(num)


def preference_of(doc: dict[str, Any]) -> Callable[[int], list[int]]:
    """``P``: hash -> preference order of a router document (docs/routers.md
    2.17), from the document alone; the document is read once."""
    from shardhash._reference.routing import ReferenceRouter

    ref = ReferenceRouter(doc)
    n = len(ref.shards)
    t = ref.type
    if t in ("ring", "bounded"):
        return lambda h: ring_preference(ref.tokens, ref.owners, h)
    if t == "multiprobe":
        from shardhash._reference.multiprobe import preference

        return lambda h: preference(ref.tokens, ref.owners, h, ref.probes)
    if t == "hash_range":
        tokens = [s - 1 for s in ref.splits] + [MASK]
        return lambda h: ring_preference(tokens, ref.range_owners, h)
    if t == "rendezvous":
        return lambda h: rendezvous_preference(ref.seeds, ref.weights, h)
    if t in ("jump", "modulo", "bucket", "maglev", "memento"):
        return lambda h: rehash_preference(ref.route_hash, n, h)
    raise TypeError(f"{t} routers have no replica lists")


def router_preference(doc: dict[str, Any], h: int) -> list[int]:
    """P(h) of a router document (docs/routers.md 2.17), from the document alone."""
    return preference_of(doc)(h)


def replica_lists(doc: dict[str, Any], hashes: Iterable[int], r: int,
                  zones: dict[str, str] | None = None) -> list[list[int]]:
    """:func:`router_replicas` of each hash, reading the document once."""
    if zones is None:
        zones = doc.get("zones")
    pref = preference_of(doc)
    if zones is None:
        return [select(pref(h), r) for h in hashes]
    znum, nz = zone_numbers(doc["shards"], zones)
    return [select(pref(h), r, znum, nz) for h in hashes]


def router_replicas(doc: dict[str, Any], h: int, r: int,
                    zones: dict[str, str] | None = None) -> list[int]:
    """The replica list of hash ``h`` under a router document: its own
    ``zones`` field unless ``zones`` is given."""
    return replica_lists(doc, [h], r, zones)[0]
