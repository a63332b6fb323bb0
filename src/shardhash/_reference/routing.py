"""Pure-Python reference implementations of every placement algorithm.

Test oracles only: slow, obviously correct, written from docs/routers.md and
working from a router's *document* alone (plus the hasher, for identity
strings), so that they check the compiled routers and the documentation at
the same time.  Nothing in the package imports this module.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from shardhash import Hasher

M64 = (1 << 64) - 1


def mix64(z: int) -> int:
    """SplitMix64 finaliser."""
    z &= M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def jump(key: int, n: int) -> int:
    """Lamping & Veach, transcribed from the paper."""
    b, j = -1, 0
    while j < n:
        b = j
        key = (key * 2862933555777941757 + 1) & M64
        j = int((b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b


def ring_route(tokens: list[int], owners: list[int], h: int) -> int:
    """First token >= h, wrapping to the first token."""
    i = bisect.bisect_left(tokens, h)
    return owners[i if i < len(tokens) else 0]


def ring_tokens(doc: dict[str, Any], hasher: Hasher) -> tuple[list[int], list[int]]:
    shards = doc["shards"]
    p = doc["params"]
    entries = []
    if p.get("tokens") is not None:
        for s, plist in p["tokens"].items():
            entries += [(pos, s, i) for i, pos in enumerate(plist)]
    else:
        weights = p.get("weights") or {}
        for s in shards:
            count = max(1, math.floor(p["vnodes"] * weights.get(s, 1.0) + 0.5))
            entries += [(int(hasher(f"{s}:{i}")), s, i) for i in range(count)]
    entries.sort()
    tokens: list[int] = []
    owners: list[int] = []
    for pos, s, _ in entries:
        if tokens and tokens[-1] == pos:
            if p.get("collisions", "error") == "error":
                raise ValueError("collision")
            continue
        tokens.append(pos)
        owners.append(shards.index(s))
    return tokens, owners


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


def maglev_table(ids: list[int], rel_weights: list[float] | None, m: int) -> list[int]:
    """Eisenbud et al. 2016, Pseudocode 1, with credit-based weights."""
    n = len(ids)
    offset = [mix64(x ^ 0x6F66667365743A31) % m for x in ids]
    skip = [mix64(x ^ 0x736B69703A312121) % (m - 1) + 1 for x in ids]
    nxt = [0] * n
    credit = [0.0] * n
    table = [-1] * m
    filled = 0
    while True:
        for i in range(n):
            if rel_weights is not None:
                credit[i] += rel_weights[i]
                if credit[i] < 1.0:
                    continue
                credit[i] -= 1.0
            c = (offset[i] + nxt[i] * skip[i]) % m
            while table[c] >= 0:
                nxt[i] += 1
                c = (offset[i] + nxt[i] * skip[i]) % m
            table[c] = i
            nxt[i] += 1
            filled += 1
            if filled == m:
                return table


class ReferenceRouter:
    """Routes hashes (or raw keys, for range/watermark) from a router document."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.type = doc["type"]
        self.shards = list(doc["shards"])
        self.hasher = Hasher.from_dict(doc["hasher"])
        self.prefix = doc.get("key_prefix")
        p = doc["params"]
        n = len(self.shards)
        if self.type == "ring":
            self.tokens, self.owners = ring_tokens(doc, self.hasher)
        elif self.type == "rendezvous":
            self.seeds = [mix64(int(self.hasher(s))) for s in self.shards]
            w = p.get("weights") or {}
            full = [float(w.get(s, 1.0)) for s in self.shards]
            self.weights = full if len(set(full)) > 1 else None
        elif self.type == "maglev":
            w = p.get("weights") or {}
            full = [float(w.get(s, 1.0)) for s in self.shards]
            rel = [x / max(full) for x in full] if len(set(full)) > 1 else None
            self.table = maglev_table([int(self.hasher(s)) for s in self.shards], rel, p["table_size"])
        elif self.type == "bucket":
            self.table = list(p["placement"])
        elif self.type == "modulo":
            self.table = list(range(n))
        elif self.type in ("hash_range", "range"):
            self.splits = list(p["splits"])
            self.range_owners = [self.shards.index(s) for s in p["owners"]]
        elif self.type == "directory":
            self.base = ReferenceRouter(p["base"])
            self.over = {int(self.hasher(k)): self.shards.index(s) for k, s in p["overrides"]}
        elif self.type == "watermark":
            self.old = ReferenceRouter(p["old"])
            self.new = ReferenceRouter(p["new"])
            self.wm = p["watermark"]

    def route_hash(self, h: int) -> int:
        t = self.type
        if t == "jump":
            return jump(h, len(self.shards))
        if t in ("bucket", "modulo", "maglev"):
            return self.table[h % len(self.table)]
        if t == "ring":
            return ring_route(self.tokens, self.owners, h)
        if t == "rendezvous":
            return rendezvous_route(h, self.seeds, self.weights)
        if t == "hash_range":
            return self.range_owners[bisect.bisect_right(self.splits, h)]
        if t == "directory":
            return self.over.get(h, self.base.route_hash(h))
        raise TypeError(f"{t} routers do not route hashes")

    def route_key(self, key: Any) -> int:
        if self.prefix is not None and isinstance(key, tuple):
            key = key[0] if self.prefix == 1 else key[: self.prefix]
        if self.type == "range":
            return self.range_owners[bisect.bisect_right(self.splits, key)]
        if self.type == "watermark":
            if key >= self.wm:
                return self.shards.index(self.new.shards[self.new.route_key(key)])
            return self.old.route_key(key)
        return self.route_hash(int(self.hasher(key)))
