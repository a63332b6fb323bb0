"""Benchmarks of the routers, each beside its peers in the same run.

Ratios are printed and stored in ``extra_info`` (``x_<peer>`` = peer time /
our time, so > 1 means faster than the peer):

* BucketRouter (4096 buckets) vs numpy ``table[h % B]`` on the same hashes;
* RingRouter 100 shards x 256 vnodes vs ``np.searchsorted`` over the same tokens;
* JumpRouter 1000 shards vs a Python loop over ``jump.hash`` (ns/key);
* ``threads=2`` vs ``threads=1`` (wall-clock time);
* scalar ``route(key)`` in a Python loop (bucket, Maglev, ring, jump and
  key-range routers) vs a ``dict.get`` loop and vs ``uhashring.HashRing.get_node``.

Single-threaded ratios use CPU time (``time.process_time``) for both sides,
so that a busy machine distorts them less; the jump and scalar comparisons
also run ours and the peer in alternation (best of 5 rounds each).  10M keys
with ``--benchmark-enable``; with ``--benchmark-disable`` (the default) the sizes
are small and each benchmark runs once as a plain test.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from bench._timing import alternating_best, best, enabled
from shardhash import BucketRouter, JumpRouter, MaglevRouter, RangeRouter, RingRouter, Router

BIG = 10_000_000


def _size(benchmark: Any, big: int = BIG, small: int = 20_000) -> int:
    return big if enabled(benchmark) else small


def _best(fn: Callable[[], Any], repeat: int = 3, timer: Callable[[], float] = time.process_time) -> float:
    """Best of ``repeat`` runs.  Single-threaded comparisons use CPU time, so
    that other processes on a busy machine do not distort the ratios."""
    return best(fn, repeat, timer)



def _report(benchmark: Any, name: str, n: int, peers: dict[str, float],
            ours_fn: Callable[[], Any] | float | None = None,
            timer: Callable[[], float] = time.process_time) -> None:
    """peers: peer name -> seconds for the same n keys.  Our time is re-measured
    with the peers' timer (``ours_fn``) when given, else taken from the fixture."""
    stats = getattr(benchmark, "stats", None)
    if stats is None:
        return
    ours = _best(ours_fn, 3, timer) if callable(ours_fn) else (
        float(ours_fn) if ours_fn is not None else float(stats.stats.min))
    parts = [f"{name}: {ours / n * 1e9:.2f} ns/key"]
    benchmark.extra_info["ns_per_key"] = round(ours / n * 1e9, 3)
    for peer, s in peers.items():
        benchmark.extra_info[f"x_{peer}"] = round(s / ours, 2)
        parts.append(f"{s / ours:.2f}x {peer} ({s / n * 1e9:.2f} ns/key)")
    print("\n" + "; ".join(parts))


def _hashes(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)


def test_bucket_vs_numpy_modulo(benchmark: Any) -> None:
    n = _size(benchmark)
    b = 4096
    shards = [f"s{i}" for i in range(64)]
    r = BucketRouter(shards, [shards[i % 64] for i in range(b)])
    table = r.placement.copy()
    h = _hashes(n)
    out = np.empty(n, dtype=np.int32)
    benchmark(r.route_hashes, h, out=out, threads=1)
    want = table[h % np.uint64(b)]
    assert np.array_equal(out, want)
    if enabled(benchmark):
        _report(benchmark, "BucketRouter 4096", n, {"numpy_table_mod": _best(lambda: table[h % np.uint64(b)])},
                lambda: r.route_hashes(h, out=out, threads=1))


def _ring_peer(tokens: np.ndarray, owners: np.ndarray, h: np.ndarray) -> np.ndarray:
    i = np.searchsorted(tokens, h, side="left")
    i[i == tokens.shape[0]] = 0
    return owners[i]


def test_ring_vs_searchsorted(benchmark: Any) -> None:
    n = _size(benchmark)
    r = RingRouter([f"shard-{i}" for i in range(100)], vnodes=256)
    tokens, owners = r.tokens.copy(), r.token_owners.copy()
    h = _hashes(n, 1)
    out = np.empty(n, dtype=np.int32)
    benchmark(r.route_hashes, h, out=out, threads=1)
    assert np.array_equal(out, _ring_peer(tokens, owners, h))
    if enabled(benchmark):
        _report(benchmark, "RingRouter 100x256", n,
                {"np_searchsorted": _best(lambda: _ring_peer(tokens, owners, h), 2)},
                lambda: r.route_hashes(h, out=out, threads=1))


def test_jump_vs_jump_package(benchmark: Any) -> None:
    jump = pytest.importorskip("jump")
    n = _size(benchmark)
    r = JumpRouter([f"s{i}" for i in range(1000)])
    h = _hashes(n, 2)
    out = np.empty(n, dtype=np.int32)
    benchmark(r.route_hashes, h, out=out, threads=1)
    m = min(n, 300_000)
    sample = h[:m].tolist()
    jh = jump.hash
    assert out[:1000].tolist() == [jh(k, 1000) for k in sample[:1000]]
    if enabled(benchmark):
        hs = h[:m]
        o = out[:m]
        t = alternating_best({"ours": lambda: r.route_hashes(hs, out=o, threads=1),
                               "loop": lambda: [jh(k, 1000) for k in sample]}, 5)
        _report(benchmark, "JumpRouter 1000", m, {"jump_hash_loop": t["loop"]}, t["ours"])


@pytest.mark.parametrize("strategy", ["ring", "jump"])
def test_threads_2_vs_1(benchmark: Any, strategy: str) -> None:
    n = _size(benchmark)
    r: Router
    if strategy == "ring":
        r = RingRouter([f"shard-{i}" for i in range(100)], vnodes=256)
    else:
        r = JumpRouter([f"s{i}" for i in range(1000)])
    h = _hashes(n, 3)
    out = np.empty(n, dtype=np.int32)
    benchmark(r.route_hashes, h, out=out, threads=2)
    one = r.route_hashes(h, threads=1)
    assert np.array_equal(out, one)
    if enabled(benchmark):
        # wall-clock time, both settings in alternation (best of 5 each), so
        # that a moment of load on the other core hits both alike
        t = alternating_best({"two": lambda: r.route_hashes(h, out=out, threads=2),
                               "one": lambda: r.route_hashes(h, out=out, threads=1)}, 5, time.perf_counter)
        _report(benchmark, f"{strategy} threads=2", n, {"threads_1": t["one"]}, t["two"])


def _scalar_router(strategy: str, shards: list[str], kind: str = "int") -> Any:
    if strategy == "range":  # 100 ranges over the benchmark's keys (0..9999 or "user:0".."user:9999")
        if kind == "str":
            names = sorted(f"user:{i}" for i in range(10_000))
            return RangeRouter([names[100 * i] for i in range(1, 100)], shards)
        return RangeRouter([100 * i for i in range(1, 100)], shards)
    if strategy == "bucket":
        return BucketRouter(shards, [shards[i % len(shards)] for i in range(4096)])
    if strategy == "ring":
        return RingRouter(shards, vnodes=160)
    if strategy == "maglev":  # default table: 65537 slots, not a power of two (fast modulo)
        return MaglevRouter(shards)
    return JumpRouter(shards)


@pytest.mark.parametrize("kind", ["str", "int"])
@pytest.mark.parametrize("strategy", ["bucket", "maglev", "ring", "jump", "range"])
def test_scalar_route_vs_dict_and_uhashring(benchmark: Any, strategy: str, kind: str) -> None:
    """A Python loop of ``route(key)`` beside a ``dict.get`` loop over the same
    keys (10K distinct keys, so the dict stays in cache: the hardest peer)
    and beside ``uhashring.HashRing.get_node`` (100 nodes)."""
    n = _size(benchmark, 1_000_000, 5_000)
    shards = [f"shard-{i}" for i in range(100)]
    r = _scalar_router(strategy, shards, kind)
    distinct: list[Any] = [f"user:{i}" for i in range(10_000)] if kind == "str" else list(range(10_000))
    keys = (distinct * (n // len(distinct) + 1))[:n]
    d = {k: shards[i % 100] for i, k in enumerate(distinct)}
    route = r.route

    def ours() -> None:
        for k in keys:
            route(k)

    benchmark(ours)
    assert [route(k) for k in keys[:100]] == [shards[i] for i in r.route_many(keys[:100])]
    if enabled(benchmark):
        get = d.get

        def dict_loop() -> None:
            for k in keys:
                get(k)

        t = alternating_best({"ours": ours, "dict": dict_loop}, 5)
        peers = {"dict_get": t["dict"]}
        uh = pytest.importorskip("uhashring")
        ring = uh.HashRing(nodes=shards)
        m = min(n, 20_000)
        sample = keys[:m]
        gn = ring.get_node

        def uh_loop() -> None:
            for k in sample:
                gn(k)

        peers["uhashring_get_node"] = _best(uh_loop, 3) * (n / m)
        _report(benchmark, f"{type(r).__name__}.route loop ({kind} keys)", n, peers, t["ours"])
