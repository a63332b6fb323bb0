"""Pure-Python reference implementations of every placement algorithm.

Test oracles only: slow, obviously correct, written from docs/routers.md and
working from a router's *document* alone (its hashing spec through
:class:`shardhash._reference.hasher.ReferenceHasher`, which imports none of
shardhash's compiled modules), so that they check the compiled routers and
the documentation at the same time.  The library never imports this module.
"""

from __future__ import annotations

import bisect
from typing import Any

from shardhash._reference.hasher import ReferenceHasher
from shardhash._reference.jump import jump
from shardhash._reference.maglev import maglev_table
from shardhash._reference.memento import Memento
from shardhash._reference.multiprobe import lookup as multiprobe_lookup
from shardhash._reference.rendezvous import rendezvous_route
from shardhash._reference.ring import ring_route, ring_tokens
from shardhash._reference.splitmix64 import mix64


class ReferenceRouter:
    """Routes hashes (or raw keys, for range/watermark) from a router document."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.type = doc["type"]
        self.shards = list(doc["shards"])
        self.hasher = ReferenceHasher.from_dict(doc["hasher"])
        self.prefix = doc.get("key_prefix")
        p = doc["params"]
        n = len(self.shards)
        if self.type in ("ring", "bounded"):  # bounded: route() is the ring's answer
            self.tokens, self.owners = ring_tokens(doc, self.hasher)
        elif self.type == "memento":
            self.memento = Memento(p["buckets"])
            for b in p["removed"]:
                self.memento.replacer[b] = p["buckets"] - len(self.memento.replacer) - 1
            self.bucket_shard = {b: i for i, b in enumerate(self.memento.working())}
        elif self.type == "multiprobe":
            toks = sorted((mix64(self.hasher(s)), i) for i, s in enumerate(self.shards))
            self.tokens = [t for t, _ in toks]
            self.owners = [i for _, i in toks]
            self.probes = p["probes"]
        elif self.type == "rendezvous":
            self.seeds = [mix64(self.hasher(s)) for s in self.shards]
            w = p.get("weights") or {}
            full = [float(w.get(s, 1.0)) for s in self.shards]
            self.weights = full if len(set(full)) > 1 else None
        elif self.type == "maglev":
            w = p.get("weights") or {}
            full = [float(w.get(s, 1.0)) for s in self.shards]
            rel = [x / max(full) for x in full] if len(set(full)) > 1 else None
            self.table = maglev_table([self.hasher(s) for s in self.shards], rel, p["table_size"])
        elif self.type == "bucket":
            self.table = list(p["placement"])
        elif self.type == "modulo":
            self.table = list(range(n))
        elif self.type in ("hash_range", "range"):
            self.splits = list(p["splits"])
            self.range_owners = [self.shards.index(s) for s in p["owners"]]
        elif self.type == "directory":
            self.base = ReferenceRouter(p["base"])
            self.over = {self.hasher(k): self.shards.index(s) for k, s in p["overrides"]}
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
        if t in ("ring", "bounded"):
            return ring_route(self.tokens, self.owners, h)
        if t == "memento":
            return self.bucket_shard[self.memento.bucket(h)]
        if t == "multiprobe":
            return multiprobe_lookup(self.tokens, self.owners, h, self.probes)
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
        return self.route_hash(self.hasher(key))
