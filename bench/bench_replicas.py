"""Replica lists (docs/routers.md 2.17) beside plain routing, in the same run.

Run ``python bench/bench_replicas.py`` for the full figures; under pytest
(``--benchmark-disable``, the default) each function runs once on small
sizes as a test.

* scalar: ``route_replicas(key, 3)`` beside ``route(key)`` called once and
  three times (what a client asking three routers, or a naive rehash loop,
  would pay), per key, over a list of str keys;
* batch: ``route_replicas_hashes(h, 3)`` per key beside ``route_hashes(h)``
  (one thread each), and with a three-zone failure-domain map;

for a ring (256 vnodes), rendezvous, jump, Maglev and buckets over 10 and
100 shards.  CPU time, best of alternating rounds (``bench._timing``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from shardhash import BucketRouter, JumpRouter, MaglevRouter, RendezvousRouter, RingRouter, hash_array
from shardhash.routing import Router

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench._timing import alternating_best  # noqa: E402

FACTORIES: dict[str, Callable[[list[str]], Router]] = {
    "ring": lambda s: RingRouter(s),
    "rendezvous": lambda s: RendezvousRouter(s),
    "jump": lambda s: JumpRouter(s),
    "maglev": lambda s: MaglevRouter(s),
    "buckets": lambda s: BucketRouter(s, buckets=4096),
}


def scalar_row(r: Router, keys: list[str], repeat: int) -> dict[str, float]:
    route, reps = r.route, r.route_replicas

    def one() -> None:
        for k in keys:
            route(k)

    def three() -> None:
        for k in keys:
            route(k)
            route(k)
            route(k)

    def replicas() -> None:
        for k in keys:
            reps(k, 3)

    t = alternating_best({"route": one, "3x route": three, "route_replicas(3)": replicas}, repeat)
    return {name: v / len(keys) * 1e9 for name, v in t.items()}


def batch_row(r: Router, hashes: np.ndarray, repeat: int) -> dict[str, float]:
    zones = {s: f"z{i % 3}" for i, s in enumerate(r.shards)}
    out1 = np.empty(len(hashes), np.int32)
    out3 = np.empty((len(hashes), 3), np.int32)
    t = alternating_best({
        "route_hashes": lambda: r.route_hashes(hashes, out=out1, threads=1),
        "replicas(3)": lambda: r.route_replicas_hashes(hashes, 3, out=out3, threads=1),
        "replicas(3), 3 zones": lambda: r.route_replicas_hashes(hashes, 3, zones=zones, out=out3, threads=1),
    }, repeat)
    return {name: v / len(hashes) * 1e9 for name, v in t.items()}


def run(nkeys_scalar: int, nkeys_batch: int, repeat: int, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    keys = [f"user:{i}" for i in range(nkeys_scalar)]
    hashes = hash_array(np.arange(nkeys_batch, dtype=np.int64))
    rows = []
    for n in sizes:
        shards = [f"shard-{i}" for i in range(n)]
        for name, f in FACTORIES.items():
            r = f(shards)
            rows.append({"router": name, "shards": n, **scalar_row(r, keys, repeat),
                         **batch_row(r, hashes, repeat)})
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    cols = ["route", "3x route", "route_replicas(3)", "route_hashes", "replicas(3)", "replicas(3), 3 zones"]
    print("ns per key (CPU time, one thread, best of alternating rounds); load average "
          f"{os.getloadavg()[0]:.1f}")
    print("| router | shards | " + " | ".join(cols) + " | replicas(3) / 3x route | batch replicas(3) / route_hashes |")
    print("|---|---|" + "---|" * (len(cols) + 2))
    for row in rows:
        cells = [f"{row[c]:.1f}" for c in cols]
        scalar = row["route_replicas(3)"] / row["3x route"]
        batch = row["replicas(3)"] / row["route_hashes"]
        print(f"| {row['router']} | {row['shards']} | " + " | ".join(cells) + f" | {scalar:.2f} | {batch:.1f} |")


def test_replica_bench_runs() -> None:
    rows = run(200, 2000, 1, (10,))
    assert {r["router"] for r in rows} == set(FACTORIES)
    assert all(v > 0 for r in rows for k, v in r.items() if isinstance(v, float))


def main() -> None:
    _print(run(100_000, 1_000_000, 5, (10, 100)))


if __name__ == "__main__":
    main()
