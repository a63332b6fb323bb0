"""Issue 15's strategy kernels (``_core/place``), measured beside jump and the ring.

The kernels are not bound yet: they are compiled with the system C compiler
and called through ctypes batch calls (``shardhash._reference.ckernels``).
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
  no removal == ``JumpRouter`` on every key, and the batch time with 10% of
  the shards removed beside ``JumpRouter.route_hashes`` (one thread each).
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shardhash import JumpRouter, RingRouter, hash_array
from shardhash._reference import multiprobe as rp
from shardhash._reference.ckernels import CompilerMissing, Kernels, SourcesMissing, load
from shardhash._reference.memento import mix64

BIG = 10_000_000

_KERNELS: list[Kernels] = []


def _kern() -> Kernels:
    if not _KERNELS:
        src = Path(__file__).resolve().parents[1] / "src" / "shardhash" / "_core"
        _KERNELS.append(load(Path(tempfile.mkdtemp(prefix="shardhash-strategies-")), [src]))
    return _KERNELS[0]


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
    k = _kern()
    ring = RingRouter(_ids(ns), vnodes=256)
    toks = sorted((mix64(ring.hasher(s)), i) for i, s in enumerate(ring.shards))
    tokens, owners = [t for t, _ in toks], [o for _, o in toks]
    table = k.mprobe(tokens, owners, probes)
    hs = _keys(nkeys)
    out = np.empty(nkeys, np.int32)
    t_mp = _best(lambda: k.mprobe_batch(table, hs, out), 2)
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


# -- bounded loads ---------------------------------------------------------------

def _ring_arrays(ids: list[str], all_ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """A 256-vnode ring over ``ids``, owners as indices into ``all_ids``."""
    r = RingRouter(ids, vnodes=256)
    pos = {s: all_ids.index(s) for s in r.shards}
    owners = np.array([pos[r.shards[o]] for o in r.token_owners], np.int32)
    return np.ascontiguousarray(r.tokens, dtype=np.uint64), owners


def bounded(nkeys: int, factor: int, items: int = 5000) -> dict[str, float]:
    k = _kern()
    all_ids = _ids(11)
    hs = _keys(nkeys)
    res: dict[str, float] = {}

    def batch(ids: list[str]) -> np.ndarray:
        tokens, owners = _ring_arrays(ids, all_ids)
        caps = np.zeros(11, np.uint64)
        for s in ids:
            caps[all_ids.index(s)] = k.capacity(nkeys, len(ids), factor)
        out, load, ov = k.bounded_assign(tokens, owners, hs, caps)
        assert ov == 0
        live = load[[all_ids.index(s) for s in ids]]
        res[f"max_mean_{len(ids)}{'r' if 'shard-5' not in ids else ''}"] = float(live.max() / live.mean())
        return out

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
    sizes = np.ascontiguousarray(np.minimum((rng.pareto(1.5, items) + 1) * 1000, 200_000), dtype=np.uint64)
    ih = _keys(items)
    order = np.ascontiguousarray(np.lexsort((np.arange(items), -sizes.astype(np.int64))), dtype=np.uintp)
    total = int(sizes.sum())
    t10, o10 = _ring_arrays(ten, all_ids)
    caps = np.array([k.capacity(total, 10, factor)] * 10 + [0], np.uint64)
    first, load10, ov1 = k.bounded_assign(t10, o10, ih, caps, sizes=sizes, order=order)
    t11, o11 = _ring_arrays(eleven, all_ids)
    caps11 = np.full(11, k.capacity(total, 11, factor), np.uint64)
    second, load11, ov2 = k.bounded_assign(t11, o11, ih, caps11, sizes=sizes, order=order, prev=first)
    res["w_max_mean_10"] = float(load10[:10].max() / load10[:10].mean())
    res["w_max_mean_11"] = float(load11.max() / load11.mean())
    res["w_moved_add"] = float(sizes[first != second].sum() / total)
    res["w_overflows"] = float(ov1 + ov2)
    return res


# -- MementoHash -----------------------------------------------------------------

def memento(nkeys: int) -> dict[str, float]:
    k = _kern()
    hs = _keys(nkeys)
    jump = JumpRouter(_ids(100))
    before = jump.route_hashes(hs, threads=1)
    same = k.memento_batch(np.full(100, -1, np.int32), 100, 0, hs)
    st = k.memento_state(100, 100)
    assert k.memento_remove(st, 50) == 0
    after = k.memento_batch(st.rep, st.n, st.nremoved, hs)
    moved = before != after
    res = {"mismatch_no_removal": float(np.sum(same != before)),
           "moved_share": float(moved.mean()),
           "moved_vs_ideal": float(moved.mean() * 100),
           "moved_vs_its_keys": float(moved.sum() / np.sum(before == 50))}
    # 10% of the shards removed (10 middle ones), with the bucket -> shard map
    st = k.memento_state(100, 100)
    for b in random.Random(1).sample(range(1, 99), 10):
        assert k.memento_remove(st, b) == 0
    working = [b for b in range(100) if st.rep[b] < 0]
    bucket_map = np.full(100, -1, np.int32)
    bucket_map[working] = np.arange(len(working), dtype=np.int32)
    out = np.empty(nkeys, np.int32)
    ints = np.arange(nkeys, dtype=np.int64)
    hashed = np.empty(nkeys, np.uint64)
    rounds: dict[str, float] = {"jump": float("inf"), "memento": float("inf"), "hash": float("inf")}
    for _ in range(7):  # in alternation, so that all three meet the same machine load
        rounds["jump"] = min(rounds["jump"], _best(lambda: jump.route_hashes(hs, out=out, threads=1), 1))
        rounds["memento"] = min(rounds["memento"], _best(
            lambda: k.memento_batch(st.rep, st.n, st.nremoved, hs, bucket_map, out), 1))
        rounds["hash"] = min(rounds["hash"], _best(lambda: jump.hasher.hash_array(ints, out=hashed, threads=1), 1))
    res["time_ratio"] = rounds["memento"] / rounds["jump"]
    # route_many = hash the keys, then route the hashes
    res["route_many_ratio"] = (rounds["hash"] + rounds["memento"]) / (rounds["hash"] + rounds["jump"])
    res["jump_ns"] = rounds["jump"] / nkeys * 1e9
    res["memento_ns"] = rounds["memento"] / nkeys * 1e9
    res["hash_ns"] = rounds["hash"] / nkeys * 1e9
    return res


# -- as tests (small sizes) and as a script (full sizes) ------------------------------

@pytest.fixture(scope="module")
def kern() -> Kernels:
    try:
        return _kern()
    except (CompilerMissing, SourcesMissing) as exc:
        pytest.skip(str(exc))


def _n(benchmark: Any, big: int, small: int) -> int:
    return big if not getattr(benchmark, "disabled", True) else small


@pytest.mark.parametrize("ns", [10, 100, 1000])
def test_balance(benchmark: Any, kern: Kernels, ns: int) -> None:
    r = benchmark.pedantic(balance, (ns, _n(benchmark, BIG, 200_000)),
                           {"layouts": 3 if ns == 1000 else 10}, rounds=1, iterations=1)
    assert r["ring_exact"] >= 1.0 and r["mp_model"] >= 1.0
    print(f"\n{ns} shards: {r}")


@pytest.mark.parametrize("factor", [105, 125])
def test_bounded(benchmark: Any, kern: Kernels, factor: int) -> None:
    r = benchmark.pedantic(bounded, (_n(benchmark, 1_000_000, 20_000), factor), {"items": 2000},
                           rounds=1, iterations=1)
    assert r["max_mean_10"] <= factor / 100 + 1e-9 and r["w_overflows"] == 0
    print(f"\nfactor {factor}: {r}")


def test_memento(benchmark: Any, kern: Kernels) -> None:
    r = benchmark.pedantic(memento, (_n(benchmark, BIG, 100_000),), rounds=1, iterations=1)
    assert r["mismatch_no_removal"] == 0 and r["moved_vs_its_keys"] == 1.0
    print(f"\n{r}")


def main() -> None:
    nkeys = int(sys.argv[1]) if len(sys.argv) > 1 else BIG
    print(f"keys: hash_array(arange({nkeys})), default hasher; kernels via ctypes, one thread\n")
    print("| shards | multi-probe 21 sampled | model, this layout | model, avg of 100 layouts | "
          "ring 256 vnodes sampled | ring exact | ns/key mp / ring | sampling noise (3 sigma) |")
    print("|---|---|---|---|---|---|---|---|")
    for ns in (10, 100, 1000):
        r = balance(ns, nkeys, layouts=100 if ns < 1000 else 20)
        print(f"| {ns} | {r['mp_sampled']:.4f} | {r['mp_model']:.4f} | {r['mp_model_avg']:.4f} | "
              f"{r['ring_sampled']:.4f} | {r['ring_exact']:.4f} | {r['mp_ns']:.1f} / {r['ring_ns']:.1f} | "
              f"+{r['noise']:.4f} |", flush=True)
    print()
    for factor in (105, 125):
        r = bounded(min(nkeys, 1_000_000), factor)
        print(f"bounded, factor {factor} (eps {factor / 100 - 1:.2f}), {min(nkeys, 1_000_000)} keys: "
              + ", ".join(f"{key} {v:.4f}" for key, v in r.items()), flush=True)
    print()
    r = memento(nkeys)
    print("memento: " + ", ".join(f"{key} {v:.4f}" for key, v in r.items()))


if __name__ == "__main__":
    main()
