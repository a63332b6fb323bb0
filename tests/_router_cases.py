"""Router instances shared by the routing tests: one or more per strategy."""

from __future__ import annotations

from collections.abc import Callable

from shardhash import Hasher
from shardhash.routing import (
    BoundedLoadRouter,
    BucketRouter,
    DirectoryRouter,
    HashRangeRouter,
    JumpRouter,
    MaglevRouter,
    MementoRouter,
    ModuloRouter,
    MultiProbeRouter,
    RangeRouter,
    RendezvousRouter,
    RingRouter,
    Router,
    WatermarkRouter,
)

SHARDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


def _bucket() -> Router:
    placement = [SHARDS[(i * 7 + i // 3) % 5] for i in range(97)]
    return BucketRouter(SHARDS[:5], placement, hasher=Hasher("xxh64", seed=11))


# Routers over hashes (route_hashes works); name -> factory.
HASH_ROUTERS: dict[str, Callable[[], Router]] = {
    "modulo": lambda: ModuloRouter(SHARDS[:5]),
    "jump": lambda: JumpRouter(SHARDS, hasher=Hasher("xxh64", seed=3)),
    "ring": lambda: RingRouter(SHARDS, vnodes=16),
    "ring_weighted": lambda: RingRouter(SHARDS[:4], vnodes=10, weights={"alpha": 2.5, "beta": 0.5}),
    "ring_32bit": lambda: RingRouter(SHARDS[:3], vnodes=8, hasher=Hasher("murmur3_32", seed=5)),
    "ring_tokens": lambda: RingRouter(["A", "B", "C", "D"],
                                      tokens={"A": [20, 2**63], "B": [50], "C": [80, 2**64 - 1], "D": [40]}),
    "rendezvous": lambda: RendezvousRouter(SHARDS[:5], hasher=Hasher("fnv1a_64")),
    "rendezvous_weighted": lambda: RendezvousRouter(SHARDS[:4], weights={"gamma": 3, "delta": 0.25}),
    "maglev": lambda: MaglevRouter(SHARDS[:4]),
    "maglev_weighted": lambda: MaglevRouter(SHARDS[:3], table_size=211, weights={"alpha": 1, "beta": 2.5}),
    "bucket": _bucket,
    "bucket_ranges": lambda: BucketRouter.from_ranges({0: "db1", 300: "db2", 700: "db3"}, 1024),
    "hash_range": lambda: HashRangeRouter([2**62, 2**63, 3 * 2**62], ["a", "b", "a", "c"],
                                          hasher=Hasher("xxh3_64", seed=9)),
    "directory": lambda: DirectoryRouter(RingRouter(SHARDS[:3], vnodes=12),
                                         {"tenant-huge": "solo", "tenant-7": "alpha", 42: "solo"}),
    "jump_prefix": lambda: JumpRouter(SHARDS[:4], key_prefix=1),
    "memento": lambda: MementoRouter(["alpha", "gamma", "epsilon", "zeta"], buckets=9, removed=[3, 1, 7, 8, 6],
                                     hasher=Hasher("xxh64", seed=5)),
    "memento_none": lambda: MementoRouter(SHARDS),
    "multiprobe": lambda: MultiProbeRouter(SHARDS),
    "multiprobe_3probes_32bit": lambda: MultiProbeRouter(SHARDS[:4], probes=3, hasher=Hasher("murmur3_32", seed=2)),
    "bounded": lambda: BoundedLoadRouter(SHARDS[:5], vnodes=16, balance_factor=105),
    "bounded_tokens": lambda: BoundedLoadRouter(["A", "B", "C"], tokens={"A": [20, 2**63], "B": [50], "C": [80]},
                                                balance_factor=150),
}

# Routers over raw keys (route_hashes raises).
KEY_ROUTERS: dict[str, Callable[[], Router]] = {
    "range_int": lambda: RangeRouter([-5, 1_000_000, 2_000_000], ["a", "b", "c", "d"]),
    "range_str": lambda: RangeRouter(["g", "p", "x"], ["a", "b", "a", "c"]),
    "watermark": lambda: WatermarkRouter(ModuloRouter(["a", "b"]), JumpRouter(["a", "b", "c"]), 1000),
}

ALL_ROUTERS = {**HASH_ROUTERS, **KEY_ROUTERS}
