"""Benchmarks of the compatibility modes, one section per system.

Each benchmark runs beside peers measured in the same process (the system's
own per-key path, a numpy version, or the pure-Python reference), and prints
ns/key and the ratios (also stored in the benchmark's ``extra_info``):

* PostgreSQL: ``postgres.hash_extended_array`` over 10M int8 values, one
  thread and all cores (target: <= 3 ns/key), against the same hash written
  with numpy array operations, and the pure-Python reference on a sample
  (scaled)
  ``hash_extended_array`` over short text (from a list of str and
  from an Arrow string array), against the pure-Python reference;
* Guava: ``guava.consistent_hash_array`` against a loop over ``jump.hash``
  (PyPI jump-consistent-hash, the closest packaged peer) and the pure-Python
  reference;
* Cassandra: ``cassandra.token_array`` over 1M 16-byte keys (an Arrow binary
  array, and a Python list) against a loop over ``cassandra.cmurmur3.murmur3``
  with the MIN -> MAX rule (target: >= 20x), and over 1M bigint keys (numpy)
  against the same loop with ``struct`` serialization;
* Redis Cluster: ``redis.keyslot_array`` over 1M string keys with hash tags
  (Arrow and list) against a loop over ``binascii.crc_hqx`` with the tag
  rules (target: >= 20x);
* ketama: ``KetamaRouter.route_many`` (uhashring flavour, 10 servers) over 1M
  keys against ``uhashring.HashRing.get_node`` in a loop (target: >= 50x).

The peers' loops run on a sample and are scaled per key; both sides are
best-of-several timings.  With ``--benchmark-disable`` (the default in
pytest's addopts) the sizes are small and every benchmark runs once as a
plain test.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from bench._peers import crc_keyslots, murmur_tokens
from bench._timing import best, enabled
from shardhash._reference import guava as guava_ref
from shardhash._reference import postgres as pg_ref
from shardhash.compat import cassandra, guava, ketama, redis
from shardhash.compat import postgres as pg


def _size(benchmark: Any) -> int:
    return 1_000_000 if enabled(benchmark) else 5_000


def _report(benchmark: Any, name: str, n: int, peer: str, peer_s_per_key: float,
            target: float) -> None:
    stats = getattr(benchmark, "stats", None)
    if stats is None:
        return
    # best-of on both sides: the peer's loop is timed with best(), ours by the
    # fastest benchmark round (the machine may be shared; medians drift)
    med = float(stats.stats.min)
    ns = med / n * 1e9
    ratio = peer_s_per_key * n / med
    benchmark.extra_info.update({"ns_per_key": round(ns, 2), f"x_{peer}": round(ratio, 1),
                                 f"{peer}_ns_per_key": round(peer_s_per_key * 1e9, 1)})
    flag = "" if ratio >= target else f"  (below the {target:.0f}x target on this machine)"
    print(f"\n{name}: {ns:.1f} ns/key; {peer}: {peer_s_per_key * 1e9:.0f} ns/key; "
          f"{ratio:.1f}x{flag}")


# ------------------------------------------------------------------- Cassandra


def _cassandra_keys(n: int) -> list[bytes]:
    rng = random.Random(1)
    return [rng.randbytes(16) for _ in range(n)]


def _murmur_loop_per_key(keys: list[bytes]) -> float:
    sample = keys[: max(1000, len(keys) // 5)]
    murmur_tokens(sample[:1])  # (skips without cassandra-driver)
    return best(lambda: murmur_tokens(sample), 5) / len(sample)


@pytest.mark.parametrize("layout", ["arrow", "list"])
def test_bench_cassandra_token_array(benchmark: Any, layout: str) -> None:
    n = _size(benchmark)
    keys = _cassandra_keys(n)
    if layout == "arrow":
        pa = pytest.importorskip("pyarrow")
        data: Any = pa.array(keys, pa.binary())
    else:
        data = keys
    peer = _murmur_loop_per_key(keys) if enabled(benchmark) else 0.0
    out = benchmark(cassandra.token_array, data)
    assert out[:50].tolist() == [cassandra.token(k) for k in keys[:50]]
    _report(benchmark, f"cassandra.token_array ({layout}, {n:,} keys)", n, "cmurmur3_loop", peer, 20)


def test_bench_cassandra_token_array_bigint(benchmark: Any) -> None:
    # bigint partition keys: the kernel serializes them itself; the driver
    # path packs each one (struct) before hashing it.
    import struct

    murmur3 = pytest.importorskip("cassandra.cmurmur3").murmur3
    n = _size(benchmark)
    ids = np.arange(n, dtype=np.int64) * 7919 - n
    peer = 0.0
    if enabled(benchmark):
        sample = ids[: max(1000, n // 5)].tolist()
        lo, hi = -(1 << 63), (1 << 63) - 1
        pack = struct.Struct(">q").pack

        def loop() -> list[int]:
            out = []
            for v in sample:
                h = murmur3(pack(v))
                out.append(hi if h == lo else h)
            return out

        peer = best(loop, 5) / len(sample)
    out = benchmark(cassandra.token_array, ids, "bigint")
    assert out[:20].tolist() == [cassandra.token(cassandra.serialize(int(v), "bigint")) for v in ids[:20]]
    _report(benchmark, f"cassandra.token_array (bigint, {n:,} keys)", n, "cmurmur3_pack_loop", peer, 20)


# ----------------------------------------------------------------------- Redis


def _redis_keys(n: int) -> list[str]:
    return [f"{{user{i % 10_000}}}:session:{i}" if i % 3 else f"plain:key:{i}" for i in range(n)]


def _crc_loop_per_key(keys: list[str]) -> float:
    sample = keys[: max(1000, len(keys) // 5)]
    return best(lambda: crc_keyslots(sample), 5) / len(sample)


@pytest.mark.parametrize("layout", ["arrow", "list"])
def test_bench_redis_keyslot_array(benchmark: Any, layout: str) -> None:
    n = _size(benchmark)
    keys = _redis_keys(n)
    if layout == "arrow":
        pa = pytest.importorskip("pyarrow")
        data: Any = pa.array(keys)
    else:
        data = keys
    peer = _crc_loop_per_key(keys) if enabled(benchmark) else 0.0
    out = benchmark(redis.keyslot_array, data)
    assert out[:50].tolist() == [redis.keyslot(k) for k in keys[:50]]
    _report(benchmark, f"redis.keyslot_array ({layout}, {n:,} keys)", n, "crc_hqx_loop", peer, 20)


# ---------------------------------------------------------------------- ketama


@pytest.mark.parametrize("layout", ["arrow", "list"])
def test_bench_ketama_route_many(benchmark: Any, layout: str) -> None:
    uhashring = pytest.importorskip("uhashring")
    n = _size(benchmark)
    nodes = [f"10.0.0.{i}:11211" for i in range(1, 11)]
    ring = uhashring.HashRing(nodes, hash_fn="ketama")
    router = ketama.KetamaRouter(nodes, flavor="uhashring")
    keys = [f"user:{i}" for i in range(n)]
    if layout == "arrow":
        pa = pytest.importorskip("pyarrow")
        data: Any = pa.array(keys)
    else:
        data = keys
    peer = 0.0
    if enabled(benchmark):
        sample = keys[: max(1000, n // 20)]
        peer = best(lambda: [ring.get_node(k) for k in sample], 5) / len(sample)
    out = benchmark(router.route_many, data)
    assert [router.shards[i] for i in out[:200]] == [ring.get_node(k) for k in keys[:200]]
    _report(benchmark, f"KetamaRouter.route_many ({layout}, {n:,} keys)", n, "uhashring_get_node", peer, 50)


def test_bench_sizes_are_small_when_disabled(benchmark: Any) -> None:
    """A plain test run (benchmarks disabled, the default) routes 5,000 keys per
    case, a timed run 1,000,000; a fixture without the flag counts as disabled."""
    benchmark(lambda: None)
    assert _size(SimpleNamespace(disabled=True)) == 5_000
    assert _size(SimpleNamespace(disabled=False)) == 1_000_000
    assert _size(SimpleNamespace()) == 5_000
    assert _size(benchmark) == (1_000_000 if not benchmark.disabled else 5_000)


# ---------------------------------------------------------------- PostgreSQL and Guava


def _median(benchmark: Any) -> float | None:
    stats = getattr(benchmark, "stats", None)
    if stats is None:
        return None
    return float(stats.stats.median)


def _min(benchmark: Any) -> float:
    return float(benchmark.stats.stats.min)


def _report_peers(benchmark: Any, name: str, n: int, peers: dict[str, float]) -> None:
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
    r: np.ndarray = (x << np.uint32(k)) | (x >> np.uint32(32 - k))
    return r


def numpy_hashint8extended(v: np.ndarray, seed: int) -> np.ndarray:
    """hashint8extended written with numpy uint32 array arithmetic (the peer)."""
    a0 = b0 = c0 = (0x9E3779B9 + 4 + 3923095) & 0xFFFFFFFF
    if seed:
        a0 = (a0 + (seed >> 32)) & 0xFFFFFFFF
        b0 = (b0 + (seed & 0xFFFFFFFF)) & 0xFFFFFFFF
        a0, b0, c0 = pg_ref._mix(a0, b0, c0)
    u = v.view(np.uint64)
    lo = u.astype(np.uint32)
    hi = (u >> np.uint64(32)).astype(np.uint32)
    lo ^= np.where(v >= 0, hi, ~hi)
    a = lo + np.uint32(a0)
    b = np.full_like(a, b0)
    c = np.full_like(a, c0)
    c ^= b
    c -= _np_rot(b, 14)
    a ^= c
    a -= _np_rot(c, 11)
    b ^= a
    b -= _np_rot(a, 25)
    c ^= b
    c -= _np_rot(b, 16)
    a ^= c
    a -= _np_rot(c, 4)
    b ^= a
    b -= _np_rot(a, 14)
    c ^= b
    c -= _np_rot(b, 24)
    out: np.ndarray = (b.astype(np.uint64) << np.uint64(32)) | c.astype(np.uint64)
    return out


def test_numpy_peer_is_the_same_hash() -> None:
    v = np.random.default_rng(0).integers(-(1 << 63), (1 << 63) - 1, 1000, dtype=np.int64)
    assert (numpy_hashint8extended(v, pg.HASH_PARTITION_SEED) == pg.hash_extended_array(v, "int8")).all()


# ------------------------------------------------------------------ postgres

@pytest.mark.parametrize("threads", [1, None], ids=["1thread", "allcores"])
def test_pg_int8_extended(benchmark: Any, threads: int | None) -> None:
    n = 10_000_000 if enabled(benchmark) else 20_000
    v = np.random.default_rng(1).integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64)
    out = np.empty(n, dtype=np.uint64)
    res = benchmark(pg.hash_extended_array, v, "int8", out=out, threads=threads)
    assert res is out
    peers: dict[str, float] = {}
    if enabled(benchmark):
        m = 1_000_000
        peers["numpy"] = best(lambda: numpy_hashint8extended(v[:m], pg.HASH_PARTITION_SEED)) / m
        sample = v[:20_000].tolist()
        peers["pure-Python"] = best(lambda: [pg_ref.hash_extended(x, "int8") for x in sample], 1) / len(sample)
    assert out[:100].tolist() == [pg_ref.hash_extended(int(x), "int8") for x in v[:100]]
    _report_peers(benchmark, f"postgres.hash_extended_array int8 (threads={threads})", n, peers)


@pytest.mark.parametrize("source", ["list", "arrow"])
def test_pg_text_extended(benchmark: Any, source: str) -> None:
    n = 1_000_000 if enabled(benchmark) else 5_000
    words = [f"user-{i:08d}@example.com" for i in range(n)]
    keys: Any = words
    if source == "arrow":
        pa = pytest.importorskip("pyarrow")
        keys = pa.array(words)
    res = benchmark(pg.hash_extended_array, keys, "text", threads=1)
    assert len(res) == n
    peers: dict[str, float] = {}
    if enabled(benchmark):
        sample = words[:20_000]
        peers["pure-Python"] = best(lambda: [pg_ref.hash_extended(w, "text") for w in sample], 1) / len(sample)
    _report_peers(benchmark, f"postgres.hash_extended_array text ({source}, threads=1)", n, peers)


def test_pg_partition_rows(benchmark: Any) -> None:
    n = 1_000_000 if enabled(benchmark) else 5_000
    rng = np.random.default_rng(2)
    cols = [rng.integers(0, 1 << 31, n, dtype=np.int64).astype(np.int32),
            rng.integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64)]
    res = benchmark(pg.partition_of_array, columns=cols, modulus=64, types=("int4", "int8"))
    assert res.max() < 64
    _report_peers(benchmark, "postgres.partition_of_array (int4, int8) columns", n, {})


# --------------------------------------------------------------------- guava

def test_guava_array(benchmark: Any) -> None:
    n = 1_000_000 if enabled(benchmark) else 5_000
    keys = np.random.default_rng(3).integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64)
    res = benchmark(guava.consistent_hash_array, keys, 1000, threads=1)
    assert res.max() < 1000
    peers: dict[str, float] = {}
    if enabled(benchmark):
        sample = keys[:50_000].view(np.uint64).tolist()
        try:
            import jump

            peers["jump.hash loop"] = best(lambda: [jump.hash(k, 1000) for k in sample]) / len(sample)
        except ImportError:
            pass
        ssample = keys[:20_000].tolist()
        peers["pure-Python"] = best(lambda: [guava_ref.consistent_hash(k, 1000) for k in ssample], 1) / len(ssample)
    _report_peers(benchmark, "guava.consistent_hash_array (1000 buckets, threads=1)", n, peers)
