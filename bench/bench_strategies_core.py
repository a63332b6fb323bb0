"""MementoHash, multi-probe and bounded loads (their routers), measured beside jump and the ring.

Run ``python bench/bench_strategies_core.py`` for the full figures (10M keys);
under pytest (``--benchmark-disable``, the default) each function runs once on
small sizes as a test.

* balance: multi-probe, 21 probes, one token per shard (token = mix64(H(id)))
  at 10 / 100 / 1000 shards, beside a 256-vnode RingRouter on the same ids:
  max/mean counted over the keys, the exact share of the layout (ring: owned
  arcs; multi-probe: the paper's model, ``expected_shares``), and the model's
  average over 100 random layouts;
* bounded loads, eps = 0.05 and 0.25 (balance factor 105 / 125), ring of
  256 vnodes per shard: max/mean of a batch, moved share when a shard is added
  to 10 (ideal 1/11) and when a middle shard of 10 is removed (ideal 1/10),
  beside the plain ring; the weighted planner (items with sizes, previous
  placement kept where it fits) on the same add;
* MementoHash: moved share when a middle shard of 100 is removed (ideal 1/100),
  no removal == ``JumpRouter`` on every key (10M keys at 10, 100 and 1000
  shards), ``route_many`` and ``route_hashes`` with 10% of the shards removed
  beside ``JumpRouter``'s (one thread each, alternating), and scalar
  ``route`` beside ``dict.get``.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shardhash import BoundedLoadRouter, JumpRouter, MementoRouter, MultiProbeRouter, RingRouter, hash_array
from shardhash._reference import multiprobe as rp
from shardhash.routing import place_items

BIG = 10_000_000


def _keys(n: int) -> np.ndarray:
    """The hashes of the integer keys 0 .. n-1 (default hasher)."""
    return hash_array(np.arange(n, dtype=np.int64))


def _ids(n: int) -> list[str]:
    return [f"shard-{i}" for i in range(n)]


def _best(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _peak(counts: np.ndarray) -> float:
    return float(counts.max() / counts.mean())


# -- balance -------------------------------------------------------------------

def balance(ns: int, nkeys: int, probes: int = 21, layouts: int = 100) -> dict[str, float]:
    ring = RingRouter(_ids(ns), vnodes=256)
    mp = MultiProbeRouter(_ids(ns), probes=probes)
    tokens, owners = [int(t) for t in mp.tokens], [int(o) for o in mp.token_owners]
    hs = _keys(nkeys)
    out = np.empty(nkeys, np.int32)
    t_mp = _best(lambda: mp.route_hashes(hs, out=out, threads=1), 2)
    mp_counts = np.bincount(out, minlength=ns)
    t_ring = _best(lambda: ring.route_hashes(hs, out=out, threads=1), 2)
    ring_counts = np.bincount(out, minlength=ns)
    share = np.zeros(ns)
    for lo, hi, o in ring.owned_ranges():
        share[o] += (hi - lo + 1) / 2.0**64
    model = np.zeros(ns)
    for j, sh in enumerate(rp.expected_shares(tokens, probes)):
        model[owners[j]] += sh
    rng = random.Random(ns)
    avg = sum(max(rp.expected_shares(sorted(rng.getrandbits(64) for _ in range(ns)), probes)) * ns
              for _ in range(layouts)) / layouts
    return {"mp_sampled": _peak(mp_counts), "mp_model": float(model.max() * ns), "mp_model_avg": avg,
            "ring_sampled": _peak(ring_counts), "ring_exact": float(share.max() * ns),
            "mp_ns": t_mp / nkeys * 1e9, "ring_ns": t_ring / nkeys * 1e9,
            "noise": 3 / np.sqrt(nkeys / ns)}


def balance_counted(ns: int, nkeys: int, chunk: int = 10_000_000, probes: int = 21) -> dict[str, float]:
    """Multi-probe and the 256-vnode ring counted over ``nkeys`` keys in chunks
    (the keys ``chunk * c + i``): less counting noise than one 10M batch."""
    mp = MultiProbeRouter(_ids(ns), probes=probes)
    ring = RingRouter(_ids(ns), vnodes=256)
    c_mp = np.zeros(ns, np.int64)
    c_ring = np.zeros(ns, np.int64)
    for start in range(0, nkeys, chunk):
        hs = hash_array(np.arange(start, min(start + chunk, nkeys), dtype=np.int64))
        c_mp += np.bincount(mp.route_hashes(hs), minlength=ns)
        c_ring += np.bincount(ring.route_hashes(hs), minlength=ns)
    return {"mp_sampled": _peak(c_mp), "ring_sampled": _peak(c_ring), "noise": 3 / np.sqrt(nkeys / ns)}


# -- bounded loads ---------------------------------------------------------------

def bounded(nkeys: int, factor: int, items: int = 5000) -> dict[str, float]:
    all_ids = _ids(11)
    hs = _keys(nkeys)
    res: dict[str, float] = {}

    def batch(ids: list[str]) -> np.ndarray:
        r = BoundedLoadRouter(ids, balance_factor=factor)
        pos = np.array([all_ids.index(s) for s in r.shards], np.int32)
        out = r.assign_hashes(hs)
        load = np.bincount(out, minlength=len(ids))
        assert int(load.max()) <= int(r.capacities(nkeys).max())
        res[f"max_mean_{len(ids)}{'r' if 'shard-5' not in ids else ''}"] = float(load.max() / load.mean())
        mapped: np.ndarray = pos[out]
        return mapped

    def plain(ids: list[str]) -> np.ndarray:
        r = RingRouter(ids, vnodes=256)
        pos = np.array([all_ids.index(s) for s in r.shards], np.int32)
        return pos[r.route_hashes(hs, threads=1)]

    ten, eleven = all_ids[:10], all_ids
    nine = [s for s in ten if s != "shard-5"]
    b10, b11, b9 = batch(ten), batch(eleven), batch(nine)
    p10, p11, p9 = plain(ten), plain(eleven), plain(nine)
    res["moved_add"] = float(np.mean(b10 != b11))
    res["moved_remove"] = float(np.mean(b10 != b9))
    res["ring_moved_add"] = float(np.mean(p10 != p11))
    res["ring_moved_remove"] = float(np.mean(p10 != p9))
    res["ring_max_mean_10"] = _peak(np.bincount(p10, minlength=10)[:10])
    # weighted planner: items with sizes (Pareto-like), largest first, then re-placed on 11 shards
    rng = np.random.default_rng(factor)
    sizes = np.minimum((rng.pareto(1.5, items) + 1) * 1000, 200_000).astype(np.int64)
    weighted = {i: int(x) for i, x in enumerate(sizes)}
    r10 = BoundedLoadRouter(ten, balance_factor=factor)
    first = place_items(r10, weighted)
    second = place_items(r10.with_shards(eleven), weighted, previous=first.assignment)
    l10, l11 = np.array(list(first.loads.values())), np.array(list(second.loads.values()))
    res["w_max_mean_10"] = float(l10.max() / l10.mean())
    res["w_max_mean_11"] = float(l11.max() / l11.mean())
    res["w_moved_add"] = second.moved_share
    res["w_overflows"] = float(first.overflows + second.overflows)
    return res


# -- MementoHash -----------------------------------------------------------------

def memento(nkeys: int) -> dict[str, float]:
    hs = _keys(nkeys)
    jump = JumpRouter(_ids(100))
    before = jump.route_hashes(hs, threads=1)
    mismatch = 0
    for ns in (10, 100, 1000):
        mismatch += int(np.sum(MementoRouter(_ids(ns)).route_hashes(hs, threads=1)
                               != JumpRouter(_ids(ns)).route_hashes(hs, threads=1)))
    after_r = jump.with_shards([s for s in jump.shards if s != "shard-50"])
    assert isinstance(after_r, MementoRouter)
    after = np.array([int(s[6:]) for s in after_r.shards])[after_r.route_hashes(hs, threads=1)]
    moved = before != after
    res = {"mismatch_no_removal": float(mismatch),
           "moved_share": float(moved.mean()),
           "moved_vs_ideal": float(moved.mean() * 100),
           "moved_vs_its_keys": float(moved.sum() / np.sum(before == 50))}
    # 10% of the shards removed (10 middle ones)
    gone = {f"shard-{b}" for b in random.Random(1).sample(range(1, 99), 10)}
    mem = jump.with_shards([s for s in jump.shards if s not in gone])
    assert isinstance(mem, MementoRouter) and len(mem.removed) == 10
    out = np.empty(nkeys, np.int32)
    ints = np.arange(nkeys, dtype=np.int64)
    t = alternating({
        "jump": lambda: jump.route_hashes(hs, out=out, threads=1),
        "memento": lambda: mem.route_hashes(hs, out=out, threads=1),
        "jump_many": lambda: jump.route_many(ints, out=out, threads=1),
        "memento_many": lambda: mem.route_many(ints, out=out, threads=1),
    }, 7)
    res["route_hashes_ratio"] = t["memento"] / t["jump"]
    res["route_many_ratio"] = t["memento_many"] / t["jump_many"]
    res["jump_ns"] = t["jump"] / nkeys * 1e9
    res["memento_ns"] = t["memento"] / nkeys * 1e9
    res["jump_many_ns"] = t["jump_many"] / nkeys * 1e9
    res["memento_many_ns"] = t["memento_many"] / nkeys * 1e9
    res.update(scalar(mem, jump))
    return res


def alternating(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Best CPU time of each function over ``rounds`` rounds that run them in turn."""
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t0 = time.process_time()
            fn()
            best[k] = min(best[k], time.process_time() - t0)
    return best


def scalar(mem: MementoRouter, jump: JumpRouter, n: int = 1_000_000) -> dict[str, float]:
    """Scalar ``route`` of memento (10% removed), multi-probe and jump beside a
    ``dict.get`` loop over the same keys (10K distinct keys, so the dict stays
    in cache: bench_routing.py's method), for str and int keys."""
    mp = MultiProbeRouter(_ids(100))
    res: dict[str, float] = {}
    for kind in ("str", "int"):
        distinct: list[Any] = [f"user:{i}" for i in range(10_000)] if kind == "str" else list(range(10_000))
        keys = (distinct * (n // len(distinct) + 1))[:n]
        table = {k: "shard-1" for k in distinct}

        def loop(f: Callable[[Any], Any], keys: list[Any] = keys) -> Callable[[], None]:
            def run() -> None:
                for k in keys:
                    f(k)
            return run

        t = alternating({"dict": loop(table.get), "memento": loop(mem.route), "jump": loop(jump.route),
                         "multiprobe": loop(mp.route)}, 5)
        res[f"scalar_{kind}_memento_vs_dict"] = t["memento"] / t["dict"]
        res[f"scalar_{kind}_jump_vs_dict"] = t["jump"] / t["dict"]
        res[f"scalar_{kind}_multiprobe_vs_dict"] = t["multiprobe"] / t["dict"]
        res[f"scalar_{kind}_dict_get_ns"] = t["dict"] / n * 1e9
    return res


# -- as tests (small sizes) and as a script (full sizes) ------------------------------

def _n(benchmark: Any, big: int, small: int) -> int:
    return big if not getattr(benchmark, "disabled", True) else small


@pytest.mark.parametrize("ns", [10, 100, 1000])
def test_balance(benchmark: Any, ns: int) -> None:
    r = benchmark.pedantic(balance, (ns, _n(benchmark, BIG, 200_000)),
                           {"layouts": 3 if ns == 1000 else 10}, rounds=1, iterations=1)
    assert r["ring_exact"] >= 1.0 and r["mp_model"] >= 1.0
    print(f"\n{ns} shards: {r}")


@pytest.mark.parametrize("factor", [105, 125])
def test_bounded(benchmark: Any, factor: int) -> None:
    r = benchmark.pedantic(bounded, (_n(benchmark, 1_000_000, 20_000), factor), {"items": 2000},
                           rounds=1, iterations=1)
    assert r["max_mean_10"] <= factor / 100 + 1e-9 and r["w_overflows"] == 0
    print(f"\nfactor {factor}: {r}")


def test_memento(benchmark: Any) -> None:
    r = benchmark.pedantic(memento, (_n(benchmark, BIG, 100_000),), rounds=1, iterations=1)
    assert r["mismatch_no_removal"] == 0 and r["moved_vs_its_keys"] == 1.0
    print(f"\n{r}")


def main() -> None:
    nkeys = int(sys.argv[1]) if len(sys.argv) > 1 else BIG
    print(f"keys: hash_array(arange({nkeys})), default hasher; one thread; load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| shards | multi-probe 21 sampled | model, this layout | model, avg of 100 layouts | "
          "ring 256 vnodes sampled | ring exact | ns/key mp / ring | sampling noise (3 sigma) |")
    print("|---|---|---|---|---|---|---|---|")
    for ns in (10, 100, 1000):
        r = balance(ns, nkeys, layouts=100 if ns < 1000 else 20)
        print(f"| {ns} | {r['mp_sampled']:.4f} | {r['mp_model']:.4f} | {r['mp_model_avg']:.4f} | "
              f"{r['ring_sampled']:.4f} | {r['ring_exact']:.4f} | {r['mp_ns']:.1f} / {r['ring_ns']:.1f} | "
              f"+{r['noise']:.4f} |", flush=True)
    if nkeys >= BIG:
        r = balance_counted(1000, 10 * nkeys)
        print(f"\n1000 shards counted over {10 * nkeys} keys: multi-probe {r['mp_sampled']:.4f}, "
              f"ring {r['ring_sampled']:.4f} (sampling noise +{r['noise']:.4f})", flush=True)
    print()
    for factor in (105, 125):
        r = bounded(min(nkeys, 1_000_000), factor)
        print(f"bounded, factor {factor} (eps {factor / 100 - 1:.2f}), {min(nkeys, 1_000_000)} keys: "
              + ", ".join(f"{key} {v:.4f}" for key, v in r.items()), flush=True)
    print()
    r = memento(nkeys)
    print("memento: " + ", ".join(f"{key} {v:.4f}" for key, v in r.items()))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
