"""The compat batch kernels on keys of mixed lengths (4-40 bytes, as real
partition keys, e-mails and composite keys are) against the same kernels on
keys of one length (22 bytes, the same mean), from Arrow and from Python
lists, beside the peers' per-key loops in the same run.

For every kernel and layout one benchmark times the mixed keys (the
pytest-benchmark statistics) and, when timing is enabled, also measures in
alternation (best of several, mixed and fixed taking turns so that a slow
spell of the shared machine hurts both alike):

* the same call on fixed-length keys (target: mixed <= 1.5x fixed);
* the peer loop on a sample, scaled per key: ``cassandra.cmurmur3.murmur3``
  with the MIN -> MAX rule for ``cassandra.token_array``, ``binascii.crc_hqx``
  with the hash-tag rules for ``redis.keyslot_array`` (targets: >= 20x from
  Arrow, >= 10x from lists), ``uhashring.HashRing.get_node`` for ketama,
  and for composite Cassandra keys the Python driver's routing-key loop
  (``cassandra.cqltypes`` serialization, the ``_key_parts_packed`` join,
  ``cmurmur3.murmur3``; target >= 10x);
* from lists, the list-walk floor: the C walk the list kernels use, reading
  each key's pointer and length and nothing else (and, beside it, a walk
  that takes each key as a Python object, as earlier versions did);
* for ``cassandra.token_array`` (from Arrow and from lists) and
  ``redis.keyslot_array`` from Arrow, the mixed keys with default threads
  too, in wall-clock time (the one-thread figures are CPU time).

With ``--benchmark-disable`` (the default in pytest's addopts) the sizes are
small and every benchmark runs once as a plain test that checks the results
against the one-key functions.
"""

from __future__ import annotations

import random
import string
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from bench._peers import composite_tokens, crc_keyslots, murmur_tokens
from bench._timing import alternating_best, best, enabled
from shardhash.compat import _native, cassandra, ketama, redis, vitess
from shardhash.compat import postgres as pg

MIN_LEN, MAX_LEN, FIXED_LEN = 4, 40, 22  # uniform 4..40 has mean 22


def _size(benchmark: Any) -> int:
    return 1_000_000 if enabled(benchmark) else 5_000



def _lengths(n: int, mixed: bool, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(MIN_LEN, MAX_LEN) if mixed else FIXED_LEN for _ in range(n)]


def _binary_keys(n: int, mixed: bool) -> list[bytes]:
    rng = random.Random(7)
    return [rng.randbytes(m) for m in _lengths(n, mixed, 1)]


_ALNUM = string.ascii_letters + string.digits + ":._-@"


def _text_keys(n: int, mixed: bool) -> list[str]:
    """ASCII keys; two in three carry a hash tag of 1..8 characters."""
    rng = random.Random(11)
    out = []
    for i, m in enumerate(_lengths(n, mixed, 2)):
        body = "".join(rng.choices(_ALNUM, k=m))
        if i % 3 and m >= 6:
            t = rng.randint(1, min(8, m - 3))
            at = rng.randint(0, m - t - 2)
            body = body[:at] + "{" + body[at + 1: at + t + 1] + "}" + body[at + t + 2:]
        out.append(body[:m])
    return out


def _layout(keys: list[Any], layout: str, binary: bool) -> Any:
    if layout == "list":
        return keys
    pa = pytest.importorskip("pyarrow")
    return pa.array(keys, pa.binary() if binary else pa.string())


def _report(benchmark: Any, name: str, n: int, times: dict[str, float], peer: str | None,
            target: float | None) -> None:
    if not enabled(benchmark):
        return
    ns = {k: v / n * 1e9 for k, v in times.items()}
    ratio = ns["mixed"] / ns["fixed"]
    info: dict[str, Any] = {"mixed_ns_per_key": round(ns["mixed"], 2), "fixed_ns_per_key": round(ns["fixed"], 2),
                            "mixed_over_fixed": round(ratio, 2)}
    parts = [f"{name}: one thread (CPU time) mixed {ns['mixed']:.1f} ns/key, fixed {ns['fixed']:.1f} ns/key "
             f"(mixed/fixed {ratio:.2f}{'' if ratio <= 1.5 else ', above the 1.5 target'})"]
    if "wall" in ns:
        info["default_threads_wall_ns_per_key"] = round(ns["wall"], 2)
        parts.append(f"default threads (wall) {ns['wall']:.1f} ns/key")
    if peer is not None and "peer" in ns:
        x = ns["peer"] / ns["mixed"]
        info[f"x_{peer}"] = round(x, 1)
        info[f"{peer}_ns_per_key"] = round(ns["peer"], 1)
        flag = "" if target is None or x >= target else f", below the {target:.0f}x target"
        parts.append(f"{peer} {ns['peer']:.0f} ns/key: {x:.1f}x on mixed keys, one thread{flag}")
        if "wall" in ns:
            xw = ns["peer"] / ns["wall"]
            info[f"x_{peer}_default_threads"] = round(xw, 1)
            parts.append(f"{xw:.1f}x with default threads")
    if "floor" in ns:
        info["list_walk_floor_ns_per_key"] = round(ns["floor"], 2)
        info["refcounted_walk_ns_per_key"] = round(ns["rfloor"], 2)
        parts.append(f"list-walk floor {ns['floor']:.1f} ns/key (a walk that takes each key as a Python "
                     f"object: {ns['rfloor']:.1f})")
    benchmark.extra_info.update(info)
    print("\n" + "; ".join(parts))


def _run(benchmark: Any, name: str, call: Callable[[Any, int | None], Any], mixed: Any, fixed: Any, n: int,
         peer: tuple[str, Callable[[list[Any]], Any], list[Any]] | None = None,
         floor_keys: list[Any] | None = None, target: float | None = None, wall: bool = False) -> Any:
    """Times call(keys, threads): the pytest-benchmark statistics on the
    mixed keys with default threads; when timing is enabled, also mixed and
    fixed keys on one thread in CPU time (alternating), the peer loop, the
    list-walk floors and (``wall``) mixed keys with default threads in
    wall-clock time."""
    out = benchmark(call, mixed, None)
    if enabled(benchmark):
        fns: dict[str, Callable[[], Any]] = {"mixed": lambda: call(mixed, 1), "fixed": lambda: call(fixed, 1)}
        if floor_keys is not None:
            fns["floor"] = lambda: _native.list_walk_floor(floor_keys)
            fns["rfloor"] = lambda: _native.list_walk_floor_refcounted(floor_keys)
        times = alternating_best(fns, 5)
        if wall:
            times["wall"] = alternating_best({"wall": lambda: call(mixed, None)}, 5, time.perf_counter)["wall"]
        if peer is not None:
            pname, loop, pkeys = peer
            sample = pkeys[: max(1000, n // 10)]
            times["peer"] = min(best(lambda: loop(sample), 1, time.process_time) for _ in range(3)) \
                * n / len(sample)
        _report(benchmark, name, n, times, peer[0] if peer else None, target)
    return out


# ------------------------------------------------------------------ the peers


# ------------------------------------------------------------- the benchmarks


@pytest.mark.parametrize("layout", ["arrow", "list"])
def test_bench_mixed_cassandra_token_array(benchmark: Any, layout: str) -> None:
    pytest.importorskip("cassandra.cmurmur3")
    n = _size(benchmark)
    mk, fk = _binary_keys(n, True), _binary_keys(n, False)
    out = _run(benchmark, f"cassandra.token_array ({layout})", lambda v, t: cassandra.token_array(v, threads=t),
               _layout(mk, layout, True), _layout(fk, layout, True), n,
               peer=("cmurmur3_loop", murmur_tokens, mk), floor_keys=mk if layout == "list" else None,
               target=20 if layout == "arrow" else 10, wall=True)
    assert out.tolist()[:300] == [cassandra.token(k) for k in mk[:300]]


@pytest.mark.parametrize("kernel", ["scalar", "avx2", "avx512"])
def test_bench_mixed_cassandra_kernels(benchmark: Any, kernel: str) -> None:
    """Each Cassandra kernel this CPU can run on the same Arrow-style keys
    (``token_array`` runs the fastest: AVX-512, else AVX2, else scalar), so
    that the figures of the CPUs without AVX-512 are measured too."""
    pytest.importorskip("cassandra.cmurmur3")
    if kernel not in _native.cassandra_kernels():
        pytest.skip(f"this CPU cannot run the {kernel} kernel")
    n = _size(benchmark)
    mk, fk = _binary_keys(n, True), _binary_keys(n, False)
    out = _run(benchmark, f"Cassandra {kernel} kernel (Arrow-style keys)",
               lambda v, t: _native._cassandra_token_offsets_with(kernel, v[0], v[1], threads=t),
               _native.pack_keys(mk), _native.pack_keys(fk), n, peer=("cmurmur3_loop", murmur_tokens, mk),
               target=20)
    assert out.tolist()[:300] == [cassandra.token(k) for k in mk[:300]]


@pytest.mark.parametrize("layout", ["arrow", "list"])
def test_bench_mixed_redis_keyslot_array(benchmark: Any, layout: str) -> None:
    n = _size(benchmark)
    mk, fk = _text_keys(n, True), _text_keys(n, False)
    out = _run(benchmark, f"redis.keyslot_array ({layout})", lambda v, t: redis.keyslot_array(v, threads=t),
               _layout(mk, layout, False), _layout(fk, layout, False), n,
               peer=("crc_hqx_loop", crc_keyslots, mk), floor_keys=mk if layout == "list" else None,
               target=20 if layout == "arrow" else 10, wall=layout == "arrow")
    assert out.tolist()[:300] == [redis.keyslot(k) for k in mk[:300]]
    assert out.tolist()[:300] == crc_keyslots(mk[:300])


@pytest.mark.parametrize("layout", ["arrow", "list"])
def test_bench_mixed_ketama_route_many(benchmark: Any, layout: str) -> None:
    uhashring = pytest.importorskip("uhashring")
    n = _size(benchmark)
    nodes = [f"10.0.0.{i}:11211" for i in range(1, 11)]
    ring = uhashring.HashRing(nodes, hash_fn="ketama")
    router = ketama.KetamaRouter(nodes, flavor="uhashring")
    mk, fk = _text_keys(n, True), _text_keys(n, False)
    out = _run(benchmark, f"KetamaRouter.route_many ({layout})", lambda v, t: router.route_many(v, threads=t),
               _layout(mk, layout, False), _layout(fk, layout, False), n,
               peer=("uhashring_get_node", lambda ks: [ring.get_node(k) for k in ks], mk),
               floor_keys=mk if layout == "list" else None)
    assert [router.shards[i] for i in out[:200]] == [ring.get_node(k) for k in mk[:200]]


@pytest.mark.parametrize("layout", ["arrow", "list"])
def test_bench_mixed_postgres_hashtext(benchmark: Any, layout: str) -> None:
    n = _size(benchmark)
    mk, fk = _text_keys(n, True), _text_keys(n, False)
    out = _run(benchmark, f"postgres.hash_extended_array text ({layout})",
               lambda v, t: pg.hash_extended_array(v, "text", threads=t),
               _layout(mk, layout, False), _layout(fk, layout, False), n,
               floor_keys=mk if layout == "list" else None)
    assert out.tolist()[:100] == [pg.hash_extended(k, "text") for k in mk[:100]]


@pytest.mark.parametrize("layout", ["arrow", "list"])
def test_bench_mixed_postgres_hashbytea(benchmark: Any, layout: str) -> None:
    n = _size(benchmark)
    mk, fk = _binary_keys(n, True), _binary_keys(n, False)
    out = _run(benchmark, f"postgres.hash32_array bytea ({layout})",
               lambda v, t: pg.hash32_array(v, "bytea", threads=t),
               _layout(mk, layout, True), _layout(fk, layout, True), n,
               floor_keys=mk if layout == "list" else None)
    assert out.tolist()[:100] == [pg.hash32(k, "bytea") for k in mk[:100]]


@pytest.mark.parametrize("layout", ["arrow", "list"])
def test_bench_mixed_vitess_xxhash(benchmark: Any, layout: str) -> None:
    xxhash = pytest.importorskip("xxhash")
    n = _size(benchmark)
    mk, fk = _binary_keys(n, True), _binary_keys(n, False)

    def ksids(ks: list[bytes]) -> list[int]:
        # the peer: the xxhash package's xxh64, one key at a time, read as
        # Vitess's keyspace id (the digest's little-endian bytes, big-endian)
        return [int.from_bytes(xxhash.xxh64_digest(k)[::-1], "big") for k in ks]

    out = _run(benchmark, f"vitess.keyspace_id_array xxhash ({layout})",
               lambda v, t: vitess.keyspace_id_array(v, "xxhash", threads=t),
               _layout(mk, layout, True), _layout(fk, layout, True), n,
               peer=("xxhash_xxh64_loop", ksids, mk), floor_keys=mk if layout == "list" else None)
    assert out.tolist()[:300] == ksids(mk[:300])


def _composite_keys(n: int, mixed: bool, case: str) -> list[tuple[Any, ...]]:
    """Composite keys whose text column has the mixed (4-40) or fixed (22)
    lengths of :func:`_text_keys`: ``(text, int)`` or ``(uuid, text, bigint)``."""
    text = _text_keys(n, mixed)
    if case == "text_int":
        return [(k, i - n // 2) for i, k in enumerate(text)]
    rng = random.Random(5)
    return [(uuid.UUID(int=rng.getrandbits(128)), k, i * 1_000_003) for i, k in enumerate(text)]


_COMPOSITE = {"text_int": (("text", "int"), ("UTF8Type", "Int32Type")),
              "uuid_text_bigint": (("uuid", "text", "bigint"), ("UUIDType", "UTF8Type", "LongType"))}


@pytest.mark.parametrize("api", ["token_array", "route_many"])
@pytest.mark.parametrize("case", list(_COMPOSITE))
def test_bench_mixed_cassandra_composite(benchmark: Any, case: str, api: str) -> None:
    """Composite partition keys from a list of tuples, serialized and hashed
    in C (``token_array``, or ``TokenRouter.route_many`` on a 16-node ring
    with 16 vnodes each), against the Python driver's routing-key loop
    (``cassandra.cqltypes`` serialization, ``_key_parts_packed`` join,
    ``cmurmur3.murmur3``); the list-walk floor is that of a list of the
    keys' text column alone."""
    cqltypes = pytest.importorskip("cassandra.cqltypes")
    pytest.importorskip("cassandra.cmurmur3")
    types, driver_types = _COMPOSITE[case]
    n = _size(benchmark)
    mk, fk = _composite_keys(n, True, case), _composite_keys(n, False, case)
    router = cassandra.TokenRouter(
        {f"n{i}": t for i, t in enumerate(np.array_split(cassandra.evenly_spaced_tokens(256, 1), 16))},
        cql_type=types)
    if api == "token_array":
        def call(v: Any, t: int | None) -> Any:
            return cassandra.token_array(v, types, threads=t)
    else:
        def call(v: Any, t: int | None) -> Any:
            return router.route_many(v, threads=t)
    dtypes = tuple(getattr(cqltypes, name) for name in driver_types)
    out = _run(benchmark, f"cassandra {api} {types} composite (list)", call, mk, fk, n,
               peer=("driver_loop", lambda ks: composite_tokens(ks, dtypes), mk),
               floor_keys=[k[1] if case != "text_int" else k[0] for k in mk], target=10)
    want = [cassandra.token(cassandra.serialize(k, types)) for k in mk[:300]]
    assert composite_tokens(mk[:300], dtypes) == want
    if api == "token_array":
        assert out.tolist()[:300] == want
    else:
        assert out.tolist()[:300] == [router.route_index(k) for k in mk[:300]]


def test_bench_mixed_keys_have_the_advertised_lengths(benchmark: Any) -> None:
    benchmark(lambda: None)
    mk, fk = _binary_keys(20_000, True), _binary_keys(100, False)
    lens = np.array([len(k) for k in mk])
    assert lens.min() == MIN_LEN and lens.max() == MAX_LEN and abs(lens.mean() - FIXED_LEN) < 0.3
    assert {len(k) for k in fk} == {FIXED_LEN}
    tk = _text_keys(3000, True)
    assert [len(k) for k in tk] == _lengths(3000, True, 2)
    assert sum("{" in k for k in tk) > 1500
