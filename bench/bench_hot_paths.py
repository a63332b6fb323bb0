"""Hot paths of a high-QPS service, each beside its peers in the same run.

* one key: the compat routers' ``route`` (ketama in every flavour, Redis
  Cluster, Cassandra, PostgreSQL, Citus, Vitess, MongoDB) against a
  ``dict.get`` loop over the same keys (target: <= 2x its time), ketama also
  against ``uhashring.HashRing.get_node`` (target: >= 20x); ``redis.keyslot``
  against ``binascii.crc_hqx`` with the hash-tag rules (target: >= 5x);
  ``cassandra.token`` against the module's pure-Python path (the previous
  implementation, kept as the fallback; target: >= 3x);
* micro-batches: ``route_many`` (JumpRouter and MaglevRouter; a numpy int64
  array, a list of int, a list of str) / ``hash_array`` / the compat
  ``*_array`` calls on 1, 8, 16 and 64 keys, per call, against a loop of
  ``route()`` / ``Hasher.__call__`` over the same keys (target: 16 keys in
  <= 1.5 us; ``route_many`` faster than the loop from 8 keys up).

Keys are ``user:{i}`` (ints for the integer routers); every comparison runs
ours and the peers in alternation, best of many short rounds each
(``time.perf_counter``), because the machine may be shared: a round of a few
thousand calls fits between two interruptions of a loaded machine, so the
best round measures the code rather than the load.  With
``--benchmark-disable`` (the default in pytest's addopts) the loops are
short and each benchmark runs once as a plain test.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from bench._peers import crc_keyslot
from bench._timing import alternating_best, enabled
from shardhash import Hasher, JumpRouter, MaglevRouter, hash_key
from shardhash.compat import cassandra, citus, ketama, mongo, postgres, redis, vitess


def _loop(f: Callable[[Any], Any], keys: list[Any]) -> Callable[[], None]:
    def run() -> None:
        for k in keys:
            f(k)

    return run


def _print(benchmark: Any, line: str, **info: float) -> None:
    benchmark.extra_info.update({k: round(v, 3) for k, v in info.items()})
    print("\n" + line)


# ----------------------------------------------------------------- one key

NODES = [f"10.0.0.{i}:11211" for i in range(10)]


def _compat_router(name: str) -> tuple[Any, list[Any]]:
    strs = [f"user:{i}" for i in range(10_000)]
    ints = list(range(10_000))
    if name.startswith("ketama-"):
        return ketama.KetamaRouter(NODES, flavor=name[len("ketama-"):]), strs
    if name == "redis":
        return redis.ClusterRouter(redis.even_slot_ranges(["a", "b", "c"])), strs
    if name == "cassandra-text":
        return cassandra.TokenRouter({"n1": cassandra.evenly_spaced_tokens(3)[:1], "n2": [-2],
                                      "n3": [6148914691236517202]}, cql_type="text"), strs
    if name == "postgres-int8":
        return postgres.HashPartitionRouter([f"p{i}" for i in range(8)], ("bigint",)), ints
    if name == "postgres-text":
        return postgres.HashPartitionRouter([f"p{i}" for i in range(8)], ("text",)), strs
    if name == "citus-int8":
        return citus.CitusRouter([f"s{i}" for i in range(32)], "int8"), ints
    if name == "vitess-hash":
        return vitess.VitessRouter(vitess.even_shard_names(8), "hash"), ints
    if name == "vitess-xxhash":
        return vitess.VitessRouter(vitess.even_shard_names(8), "xxhash"), strs
    assert name == "mongo"
    return mongo.HashedChunkRouter.from_split_points(mongo.initial_split_points(16), ["a", "b", "c"]), ints


COMPAT = ["ketama-libketama", "ketama-libmemcached", "ketama-twemproxy", "ketama-uhashring", "redis",
          "cassandra-text", "postgres-int8", "postgres-text", "citus-int8", "vitess-hash", "vitess-xxhash",
          "mongo"]


@pytest.mark.parametrize("name", COMPAT)
def test_compat_route_vs_dict_get(benchmark: Any, name: str) -> None:
    r, distinct = _compat_router(name)
    n = 3_000 if enabled(benchmark) else 500
    keys = distinct[:n]
    route = r.route
    ours = _loop(route, keys)
    benchmark(ours)
    assert [route(k) for k in keys[:50]] == [r.shards[i] for i in r.route_many(keys[:50])]
    if not enabled(benchmark):
        return
    d = {k: i for i, k in enumerate(distinct)}
    slow = r._route_index_slow  # the Python path (the router's previous one-key path)
    fns = {"ours": ours, "dict": _loop(d.get, keys), "python_path": _loop(slow, keys[: n // 10])}
    peers = {}
    if name.startswith("ketama-"):
        uh = pytest.importorskip("uhashring")
        ring = uh.HashRing(nodes=NODES, hash_fn="ketama")
        fns["uhashring"] = _loop(ring.get_node, keys[: n // 10])
    t = alternating_best(fns, 40, time.perf_counter)
    per = {k: v / (n if k in ("ours", "dict") else n // 10) * 1e9 for k, v in t.items()}
    ratio = per["ours"] / per["dict"]
    line = (f"{type(r).__name__}.route [{name}]: {per['ours']:.0f} ns/key; dict.get {per['dict']:.0f} ns "
            f"({ratio:.2f}x its time, target <= 2x{'' if ratio <= 2 else ': NOT met'}); "
            f"Python path {per['python_path']:.0f} ns ({per['python_path'] / per['ours']:.1f}x slower)")
    if "uhashring" in per:
        x = per["uhashring"] / per["ours"]
        peers["x_uhashring"] = x
        line += f"; uhashring get_node {per['uhashring']:.0f} ns ({x:.1f}x, target >= 20x" \
                f"{'' if x >= 20 else ': NOT met'})"
    _print(benchmark, line, ns_per_key=per["ours"], times_dict_get=ratio,
           x_python_path=per["python_path"] / per["ours"], **peers)


@pytest.mark.parametrize("fn", ["keyslot", "token"])
def test_one_key_functions(benchmark: Any, fn: str) -> None:
    n = 5_000 if enabled(benchmark) else 500
    keys: list[Any]
    ours: Callable[[Any], int]
    peer: Callable[[Any], int]
    if fn == "keyslot":
        keys = [f"user:{i}" if i % 4 else f"{{user{i}}}.following" for i in range(n)]
        ours, peer, peer_name, target = redis.keyslot, crc_keyslot, "crc_hqx loop", 5.0
        assert [ours(k) for k in keys[:100]] == [peer(k) for k in keys[:100]]
    else:
        keys = [f"user:{i}".encode() for i in range(n)]
        ours, peer, peer_name, target = cassandra.token, cassandra._token_py, "the Python path", 3.0
        assert [ours(k) for k in keys[:100]] == [peer(k) for k in keys[:100]]
    run = _loop(ours, keys)
    benchmark(run)
    if not enabled(benchmark):
        return
    t = alternating_best({"ours": run, "peer": _loop(peer, keys)}, 40, time.perf_counter)
    x = t["peer"] / t["ours"]
    _print(benchmark, f"{fn}: {t['ours'] / n * 1e9:.0f} ns/key; {peer_name} {t['peer'] / n * 1e9:.0f} ns/key; "
           f"{x:.1f}x (target >= {target:.0f}x{'' if x >= target else ': NOT met'})",
           ns_per_key=t["ours"] / n * 1e9, x_peer=x)


# ------------------------------------------------------------ micro-batches

SMALL = [1, 8, 16, 64]


def _small_router(name: str) -> Any:
    shards = [f"shard-{i}" for i in range(100)]
    return JumpRouter(shards) if name == "jump" else MaglevRouter(shards)


@pytest.mark.parametrize("layout", ["numpy", "list-int", "list-str"])
@pytest.mark.parametrize("size", SMALL)
@pytest.mark.parametrize("router", ["jump", "maglev"])
def test_route_many_small(benchmark: Any, router: str, size: int, layout: str) -> None:
    r = _small_router(router)
    ints = list(range(size))
    keys: Any = {"numpy": np.arange(size, dtype=np.int64), "list-int": ints,
                 "list-str": [f"user:{i}" for i in range(size)]}[layout]
    loop_keys = ints if layout == "numpy" else keys   # the same keys, as route() takes them
    calls = 300 if enabled(benchmark) else 5

    def ours() -> None:
        for _ in range(calls):
            r.route_many(keys)

    route = r.route

    def loop() -> None:
        for _ in range(calls):
            for k in loop_keys:
                route(k)

    benchmark(ours)
    assert r.route_many(keys).tolist() == [r.route_index(k) for k in loop_keys]
    if not enabled(benchmark):
        return
    t = alternating_best({"ours": ours, "loop": loop}, 40, time.perf_counter)
    us, loop_us = t["ours"] / calls * 1e6, t["loop"] / calls * 1e6
    verdict = ("faster" if us < loop_us else "SLOWER") + (" (target from 8 keys: faster)" if size >= 8 else "")
    _print(benchmark, f"{type(r).__name__}.route_many({size} keys, {layout}): {us:.2f} us/call; "
           f"loop of route() {loop_us:.2f} us ({loop_us / us:.2f}x its time: {verdict})"
           f"{'; target <= 1.5 us ' + ('met' if us <= 1.5 else 'NOT met') if size == 16 else ''}",
           us_per_call=us, loop_us=loop_us)


@pytest.mark.parametrize("layout", ["numpy", "list"])
@pytest.mark.parametrize("size", SMALL)
def test_hash_array_small(benchmark: Any, size: int, layout: str) -> None:
    h = Hasher()
    keys: Any = np.arange(size, dtype=np.int64) if layout == "numpy" else [f"user:{i}" for i in range(size)]
    loop_keys = list(range(size)) if layout == "numpy" else keys
    calls = 300 if enabled(benchmark) else 5

    def ours() -> None:
        for _ in range(calls):
            h.hash_array(keys)

    one = h.__call__  # the Hasher's one-key call (hash_key also builds a Hasher per call)

    def loop() -> None:
        for _ in range(calls):
            for k in loop_keys:
                one(k)

    benchmark(ours)
    assert h.hash_array(keys).tolist() == [hash_key(k) for k in loop_keys]
    if not enabled(benchmark):
        return
    t = alternating_best({"ours": ours, "loop": loop}, 40, time.perf_counter)
    us, loop_us = t["ours"] / calls * 1e6, t["loop"] / calls * 1e6
    _print(benchmark, f"hash_array({size} keys, {layout}): {us:.2f} us/call; loop of Hasher() calls {loop_us:.2f} us"
           f"{'; target <= 1.5 us ' + ('met' if us <= 1.5 else 'NOT met') if size == 16 else ''}",
           us_per_call=us, loop_us=loop_us)


def _compat_small(name: str, size: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    strs = [f"user:{i}" for i in range(size)]
    if name == "keyslot_array":
        return lambda: redis.keyslot_array(strs), _loop(redis.keyslot, strs)
    if name == "token_array":
        bs = [s.encode() for s in strs]
        return lambda: cassandra.token_array(bs), _loop(cassandra.token, bs)
    if name == "hash_extended_array":
        a = np.arange(size, dtype=np.int64)
        ints = a.tolist()
        return (lambda: postgres.hash_extended_array(a, "int8"),
                _loop(lambda v: postgres.hash_extended(v, "int8"), ints))
    r, _ = _compat_router(name)
    keys: Any = list(range(size)) if name in ("postgres-int8", "citus-int8", "vitess-hash", "mongo") else strs
    return lambda: r.route_many(keys), _loop(r.route, keys)


@pytest.mark.parametrize("size", [1, 16, 64])
@pytest.mark.parametrize("name", ["keyslot_array", "token_array", "hash_extended_array", "ketama-libketama",
                                  "redis", "cassandra-text", "postgres-int8", "citus-int8", "vitess-hash",
                                  "mongo"])
def test_compat_arrays_small(benchmark: Any, name: str, size: int) -> None:
    ours_one, loop_one = _compat_small(name, size)
    calls = 200 if enabled(benchmark) else 3

    def ours() -> None:
        for _ in range(calls):
            ours_one()

    def loop() -> None:
        for _ in range(calls):
            loop_one()

    benchmark(ours)
    if not enabled(benchmark):
        return
    t = alternating_best({"ours": ours, "loop": loop}, 25, time.perf_counter)
    us, loop_us = t["ours"] / calls * 1e6, t["loop"] / calls * 1e6
    _print(benchmark, f"{name} batch of {size}: {us:.2f} us/call; one-key loop {loop_us:.2f} us",
           us_per_call=us, loop_us=loop_us)
