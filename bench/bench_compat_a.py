"""Benchmarks of the PostgreSQL, Citus and Guava compatibility modes.

Each benchmark runs beside peers measured in the same process, and prints
ns/key and ratios (also stored in the benchmark's ``extra_info``):

* ``postgres.hash_extended_array`` over 10M int8 values, one thread and all
  cores (target: <= 3 ns/key), against the same hash written with numpy
  array operations, and the pure-Python reference on a sample (scaled);
* ``hash_extended_array`` over short text (from a list of str and from an
  Arrow string array), against the pure-Python reference;
* ``guava.consistent_hash_array`` against a loop over ``jump.hash`` (PyPI
  jump-consistent-hash, the closest packaged peer) and the pure-Python
  reference.

With ``--benchmark-disable`` (the default in pytest's addopts) the sizes are
small and every benchmark runs once as a plain test.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shardhash.compat import _guava_py, _pg_py, guava
from shardhash.compat import postgres as pg


def _enabled(benchmark: Any) -> bool:
    return not getattr(benchmark, "disabled", True)


def _best(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _median(benchmark: Any) -> float | None:
    stats = getattr(benchmark, "stats", None)
    if stats is None:
        return None
    return float(stats.stats.median)


def _min(benchmark: Any) -> float:
    return float(benchmark.stats.stats.min)


def _report(benchmark: Any, name: str, n: int, peers: dict[str, float]) -> None:
    """peers: name -> seconds per key."""
    med = _median(benchmark)
    if med is None:
        return
    ns = med / n * 1e9
    ns_min = _min(benchmark) / n * 1e9
    info = {"ns_per_key": round(ns, 3), "ns_per_key_min": round(ns_min, 3)}
    parts = [f"{name}: {ns:.2f} ns/key (median; best round {ns_min:.2f})"]
    for peer, s in peers.items():
        ratio = s * n / med
        info[f"x_{peer}"] = round(ratio, 1)
        parts.append(f"{ratio:.1f}x {peer} ({s * 1e9:.1f} ns/key)")
    benchmark.extra_info.update(info)
    print("\n" + "; ".join(parts))


# ---------------------------------------------------------------- numpy peer

def _np_rot(x: np.ndarray, k: int) -> np.ndarray:
    return (x << np.uint32(k)) | (x >> np.uint32(32 - k))


def numpy_hashint8extended(v: np.ndarray, seed: int) -> np.ndarray:
    """hashint8extended written with numpy uint32 array arithmetic (the peer)."""
    a0 = b0 = c0 = (0x9E3779B9 + 4 + 3923095) & 0xFFFFFFFF
    if seed:
        a0 = (a0 + (seed >> 32)) & 0xFFFFFFFF
        b0 = (b0 + (seed & 0xFFFFFFFF)) & 0xFFFFFFFF
        a0, b0, c0 = _pg_py._mix(a0, b0, c0)
    u = v.view(np.uint64)
    lo = u.astype(np.uint32)
    hi = (u >> np.uint64(32)).astype(np.uint32)
    lo ^= np.where(v >= 0, hi, ~hi)
    a = lo + np.uint32(a0)
    b = np.full_like(a, b0)
    c = np.full_like(a, c0)
    c ^= b; c -= _np_rot(b, 14)
    a ^= c; a -= _np_rot(c, 11)
    b ^= a; b -= _np_rot(a, 25)
    c ^= b; c -= _np_rot(b, 16)
    a ^= c; a -= _np_rot(c, 4)
    b ^= a; b -= _np_rot(a, 14)
    c ^= b; c -= _np_rot(b, 24)
    return (b.astype(np.uint64) << np.uint64(32)) | c.astype(np.uint64)


def test_numpy_peer_is_the_same_hash() -> None:
    v = np.random.default_rng(0).integers(-(1 << 63), (1 << 63) - 1, 1000, dtype=np.int64)
    assert (numpy_hashint8extended(v, pg.HASH_PARTITION_SEED) == pg.hash_extended_array(v, "int8")).all()


# ------------------------------------------------------------------ postgres

@pytest.mark.parametrize("threads", [1, None], ids=["1thread", "allcores"])
def test_pg_int8_extended(benchmark: Any, threads: int | None) -> None:
    n = 10_000_000 if _enabled(benchmark) else 20_000
    v = np.random.default_rng(1).integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64)
    out = np.empty(n, dtype=np.uint64)
    res = benchmark(pg.hash_extended_array, v, "int8", out=out, threads=threads)
    assert res is out
    peers: dict[str, float] = {}
    if _enabled(benchmark):
        m = 1_000_000
        peers["numpy"] = _best(lambda: numpy_hashint8extended(v[:m], pg.HASH_PARTITION_SEED)) / m
        sample = v[:20_000].tolist()
        peers["pure-Python"] = _best(lambda: [_pg_py.hash_extended(x, "int8") for x in sample], 1) / len(sample)
    assert out[:100].tolist() == [_pg_py.hash_extended(int(x), "int8") for x in v[:100]]
    _report(benchmark, f"postgres.hash_extended_array int8 (threads={threads})", n, peers)


@pytest.mark.parametrize("source", ["list", "arrow"])
def test_pg_text_extended(benchmark: Any, source: str) -> None:
    n = 1_000_000 if _enabled(benchmark) else 5_000
    words = [f"user-{i:08d}@example.com" for i in range(n)]
    keys: Any = words
    if source == "arrow":
        pa = pytest.importorskip("pyarrow")
        keys = pa.array(words)
    res = benchmark(pg.hash_extended_array, keys, "text", threads=1)
    assert len(res) == n
    peers: dict[str, float] = {}
    if _enabled(benchmark):
        sample = words[:20_000]
        peers["pure-Python"] = _best(lambda: [_pg_py.hash_extended(w, "text") for w in sample], 1) / len(sample)
    _report(benchmark, f"postgres.hash_extended_array text ({source}, threads=1)", n, peers)


def test_pg_partition_rows(benchmark: Any) -> None:
    n = 1_000_000 if _enabled(benchmark) else 5_000
    rng = np.random.default_rng(2)
    cols = [rng.integers(0, 1 << 31, n, dtype=np.int64).astype(np.int32),
            rng.integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64)]
    res = benchmark(pg.partition_of_array, columns=cols, modulus=64, types=("int4", "int8"))
    assert res.max() < 64
    _report(benchmark, "postgres.partition_of_array (int4, int8) columns", n, {})


# --------------------------------------------------------------------- guava

def test_guava_array(benchmark: Any) -> None:
    n = 1_000_000 if _enabled(benchmark) else 5_000
    keys = np.random.default_rng(3).integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64)
    res = benchmark(guava.consistent_hash_array, keys, 1000, threads=1)
    assert res.max() < 1000
    peers: dict[str, float] = {}
    if _enabled(benchmark):
        sample = keys[:50_000].view(np.uint64).tolist()
        try:
            import jump

            peers["jump.hash loop"] = _best(lambda: [jump.hash(k, 1000) for k in sample]) / len(sample)
        except ImportError:
            pass
        ssample = keys[:20_000].tolist()
        peers["pure-Python"] = _best(lambda: [_guava_py.consistent_hash(k, 1000) for k in ssample], 1) / len(ssample)
    _report(benchmark, "guava.consistent_hash_array (1000 buckets, threads=1)", n, peers)
