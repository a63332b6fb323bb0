"""Benchmarks of the second round of compatibility placements, each beside
the system's own per-key path in the same run (CPU time, one thread, best of
alternating rounds; the peer's loop runs on a sample and is scaled per key):

* uhashring's default ring: ``HashRingRouter.route_many`` against
  ``uhashring.HashRing.get_node`` in a loop;
* Cassandra: ``NetworkTopologyStrategy.replicas_many`` (3 DCs, racks, 16
  vnodes) against the driver's token -> replicas map looked up per key
  (``bisect`` + dict, the driver's ``TokenMap.get_replicas`` work), and
  ``RandomTokenRouter.route_many`` against ``MD5Token.hash_fn`` + ``bisect``;
* Vitess ``binary_md5``: ``VitessRouter.route_many`` (512 shards) against a
  ``hashlib.md5`` + ``bisect`` loop;
* Vitess ``unicode_loose_md5`` / ``unicode_loose_xxhash``:
  ``keyspace_id_array`` on a list of str (ASCII, or a third each ASCII,
  accented Latin and CJK) against the pure-Python folding
  (``compat/_unicode_loose.py``) + hash in a loop;
* twemproxy's other hashes (``murmur``, ``one_at_a_time``): ``KetamaRouter.route_many``
  against the same flavour's one-key ``route`` in a loop;
* PostgreSQL ``interval`` and ``bool`` columns: ``hash_extended_array``
  against ``hash_extended`` in a loop;
* PostgreSQL ``numeric`` columns (lists of ``decimal.Decimal``, of ``int``)
  and ``numrange`` columns: ``hash_extended_array`` against ``hash_extended``
  in a loop;
* PostgreSQL range, multirange (1-4 ranges each) and composite ``(int4,
  text)`` columns and arrays of composites (1-4 elements):
  ``hash_extended_array`` against ``hash_extended`` in a loop, and
  ``HashPartitionRouter.route_many`` of ``(daterange, int4)`` rows against
  ``partition_of`` in a loop.

With ``--benchmark-disable`` (the default) the sizes are small and every
benchmark runs once as a plain test.
"""

from __future__ import annotations

import bisect
import datetime as dt
import decimal
import hashlib
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from bench._timing import alternating_best, enabled
from shardhash.compat import _native, _unicode_loose, cassandra, ketama, vitess
from shardhash.compat import postgres as pg
from shardhash.compat.uhashring import HashRingRouter


def _n(benchmark: Any) -> int:
    return 1_000_000 if enabled(benchmark) else 3_000


def _compare(benchmark: Any, name: str, ours: Callable[[], Any], n: int, peer: Callable[[], Any],
             n_peer: int) -> None:
    t = alternating_best({"ours": ours, "peer": peer}, repeat=3 if enabled(benchmark) else 1)
    ns, peer_ns = t["ours"] * 1e9 / n, t["peer"] * 1e9 / n_peer
    benchmark.extra_info.update({"ns_per_key": ns, "peer_ns_per_key": peer_ns, "ratio": peer_ns / ns})
    print(f"\n{name}: {ns:.1f} ns/key, peer {peer_ns:.0f} ns/key, {peer_ns / ns:.1f}x")
    benchmark.pedantic(ours, rounds=1, iterations=1)


def test_uhashring_default(benchmark: Any) -> None:
    uhashring = pytest.importorskip("uhashring")
    nodes = [f"10.0.0.{i}:11211" for i in range(16)]
    n = _n(benchmark)
    keys = [f"session:{i}" for i in range(n)]
    ring = uhashring.HashRing(nodes)
    r = HashRingRouter(nodes)
    sample = keys[: min(n, 50_000)]
    _compare(benchmark, "uhashring default ring, list of str", lambda: r.route_many(keys), n,
             lambda: [ring.get_node(k) for k in sample], len(sample))


def test_cassandra_nts_replicas(benchmark: Any) -> None:
    pytest.importorskip("cassandra")
    rng = random.Random(1)
    topo = {f"n{i}": (f"dc{i % 3}", f"r{i % 4}") for i in range(24)}
    ring = cassandra.TokenRouter({n: cassandra.random_tokens(16, seed=i) for i, n in enumerate(topo)},
                                 cql_type="bigint")
    nts = cassandra.NetworkTopologyStrategy(ring, {"dc0": 3, "dc1": 3, "dc2": 2}, topo)
    n = _n(benchmark)
    ids = np.array([rng.randrange(-2**63, 2**63) for _ in range(n)], dtype=np.int64)
    tmap = nts.token_replica_map()
    toks = sorted(tmap)
    sample = ids[: min(n, 50_000)].tolist()
    from cassandra.metadata import Murmur3Token

    def peer() -> None:
        for v in sample:
            t = Murmur3Token.hash_fn(int(v).to_bytes(8, "big", signed=True))
            i = bisect.bisect_left(toks, t)
            tmap[toks[0 if i == len(toks) else i]]

    nts.replicas_many(ids[:10])  # the replica table, built once
    _compare(benchmark, "NetworkTopologyStrategy.replicas_many, bigint (numpy)", lambda: nts.replicas_many(ids), n,
             peer, len(sample))


def test_cassandra_random_partitioner(benchmark: Any) -> None:
    pytest.importorskip("cassandra")
    from cassandra.metadata import MD5Token

    rng = random.Random(2)
    ring = {f"n{i}": [rng.randrange(0, 2**127) for _ in range(16)] for i in range(12)}
    r = cassandra.RandomTokenRouter(ring, cql_type="text")
    n = _n(benchmark)
    keys = [f"user:{i}" for i in range(n)]
    flat = sorted(t for ts in ring.values() for t in ts)
    sample = keys[: min(n, 50_000)]

    def peer() -> None:
        for k in sample:
            bisect.bisect_left(flat, MD5Token.hash_fn(k.encode()))

    _compare(benchmark, "RandomTokenRouter.route_many, list of str", lambda: r.route_many(keys), n, peer,
             len(sample))


def test_vitess_binary_md5(benchmark: Any) -> None:
    r = vitess.VitessRouter(vitess.generate_shard_ranges(512), "binary_md5")
    starts = sorted(vitess.parse_shard_name(s)[0] for s in r.shards)
    n = _n(benchmark)
    keys = [f"user-{i}@example.com" for i in range(n)]
    sample = keys[: min(n, 50_000)]

    def peer() -> None:
        for k in sample:
            bisect.bisect_right(starts, int.from_bytes(hashlib.md5(k.encode()).digest()[:8], "big"))

    _compare(benchmark, "VitessRouter(binary_md5, 512 shards).route_many, list of str", lambda: r.route_many(keys),
             n, peer, len(sample))


def _loose_keys(n: int, mix: str) -> list[str]:
    rng = random.Random(11)
    latin = "abcdefghijklmnopqrstuvwxyzéèêëàâäçñøåæœßüöABCDEÉÀÇÜ"
    keys = []
    for i in range(n):
        kind = 0 if mix == "ascii" else i % 3
        if kind == 0:
            keys.append(f"user-{i}@example.com")
        elif kind == 1:
            keys.append("".join(rng.choice(latin) for _ in range(rng.randrange(6, 20))))
        else:
            keys.append("".join(chr(rng.randrange(0x4E00, 0x9F00)) for _ in range(rng.randrange(2, 8))))
    return keys


@pytest.mark.parametrize("mix", ["ascii", "mixed"])
@pytest.mark.parametrize("vindex", ["unicode_loose_xxhash", "unicode_loose_md5"])
def test_vitess_unicode_loose(benchmark: Any, vindex: str, mix: str) -> None:
    n = _n(benchmark)
    keys = _loose_keys(n, mix)
    sample = keys[: min(n, 20_000)]
    vitess.keyspace_id_array(keys[:10], vindex)  # the C tables are built on first use,
    _unicode_loose.loose_key(b"x")  # the Python rules' translate table too

    def peer() -> None:
        for k in sample:
            key = _unicode_loose.loose_key(k.encode())
            if vindex == "unicode_loose_md5":
                int.from_bytes(hashlib.md5(key).digest()[:8], "big")
            else:
                int.from_bytes(int(_native.xxh64(key)).to_bytes(8, "little"), "big")

    _compare(benchmark, f"vitess.keyspace_id_array(..., {vindex!r}), list of str, {mix}",
             lambda: vitess.keyspace_id_array(keys, vindex, threads=1), n, peer, len(sample))


@pytest.mark.parametrize("key_hash", ["murmur", "one_at_a_time"])
def test_twemproxy_other_hashes(benchmark: Any, key_hash: str) -> None:
    r = ketama.KetamaRouter([f"10.0.0.{i}:6379" for i in range(8)], flavor="twemproxy", key_hash=key_hash)
    n = _n(benchmark)
    keys = [f"session:{i}" for i in range(n)]
    sample = keys[: min(n, 20_000)]
    _compare(benchmark, f"twemproxy {key_hash}: route_many, list of str", lambda: r.route_many(keys), n,
             lambda: [r.route_index(k) for k in sample], len(sample))


@pytest.mark.parametrize("t", ["interval", "bool"])
def test_postgres_more_types(benchmark: Any, t: str) -> None:
    n = _n(benchmark)
    rng = np.random.default_rng(3)
    items: list[Any]
    if t == "interval":
        values: Any = rng.integers(-10**12, 10**12, n).astype("timedelta64[us]")
        items = [dt.timedelta(microseconds=int(x)) for x in values[: min(n, 50_000)].astype(np.int64)]
    else:
        values = rng.integers(0, 2, n).astype(bool)
        items = [bool(x) for x in values[: min(n, 50_000)]]
    _compare(benchmark, f"postgres.hash_extended_array({t}), numpy", lambda: pg.hash_extended_array(values, t), n,
             lambda: [pg.hash_extended(v, t) for v in items], len(items))


@pytest.mark.parametrize("kind", ["Decimal", "int"])
def test_postgres_numeric(benchmark: Any, kind: str) -> None:
    n = _n(benchmark)
    rng = random.Random(kind)
    values: list[Any]
    if kind == "Decimal":  # up to 18 digits, 0-6 of them after the point
        values = [decimal.Decimal(rng.randrange(-10**rng.randint(1, 18), 10**18)).scaleb(-rng.randint(0, 6))
                  for _ in range(n)]
    else:
        values = [rng.randrange(-10**rng.randint(1, 25), 10**rng.randint(1, 25)) for _ in range(n)]
    sample = values[: min(n, 20_000)]
    assert pg.hash_extended_array(sample, "numeric").tolist() == [pg.hash_extended(v, "numeric") for v in sample]
    _compare(benchmark, f"postgres.hash_extended_array(numeric), list of {kind}",
             lambda: pg.hash_extended_array(values, "numeric"), n,
             lambda: [pg.hash_extended(v, "numeric") for v in sample], len(sample))


def _pg_values(t: str, n: int) -> list[Any]:
    """n random values of a PostgreSQL range, multirange, composite or composite-array type."""
    rng = random.Random(t)
    bounds = ["[)", "[]", "(]", "()"]
    day0, ts0 = dt.date(2000, 1, 1), dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)

    def rng_value(kind: str) -> pg.Range:
        if kind == "int4":
            lo = rng.randrange(-2**30, 2**30)
            return pg.Range(lo, lo + rng.randrange(1, 10_000), rng.choice(bounds))
        if kind == "int8":
            lo = rng.randrange(-2**62, 2**62)
            return pg.Range(lo, lo + rng.randrange(1, 10**9), rng.choice(bounds))
        if kind == "numeric":
            a = decimal.Decimal(rng.randrange(-10**9, 10**9)).scaleb(-2)
            return pg.Range(a, a + decimal.Decimal(rng.randrange(1, 10**6)).scaleb(-2), rng.choice(bounds))
        if kind == "date":
            d = day0 + dt.timedelta(days=rng.randrange(-20_000, 20_000))
            return pg.Range(d, d + dt.timedelta(days=rng.randrange(1, 365)))
        ts = ts0 + dt.timedelta(microseconds=rng.randrange(10**15))
        return pg.Range(ts, ts + dt.timedelta(seconds=rng.randrange(1, 10**6)))

    if t.endswith("multirange"):
        kind = pg.RANGE_TYPES[pg.MULTIRANGE_TYPES[t]]
        return [pg.Multirange([rng_value(kind) for _ in range(rng.randrange(1, 5))]) for _ in range(n)]
    if t.endswith("range"):
        return [rng_value(pg.RANGE_TYPES[t]) for _ in range(n)]

    def comp() -> tuple[int, str]:
        return (rng.randrange(-2**31, 2**31), f"customer-{rng.randrange(10**9)}")
    if t.endswith("[]"):
        return [[comp() for _ in range(rng.randrange(1, 5))] for _ in range(n)]
    return [comp() for _ in range(n)]


@pytest.mark.parametrize("t", ["int4range", "int8range", "daterange", "tstzrange", "numrange", "int8multirange",
                               "datemultirange", "(int4,text)", "(int4,text)[]"])
def test_postgres_ranges_composites(benchmark: Any, t: str) -> None:
    n = _n(benchmark)
    values = _pg_values(t, n)
    sample = values[: min(n, 20_000)]
    assert pg.hash_extended_array(sample, t).tolist() == [pg.hash_extended(v, t) for v in sample]
    _compare(benchmark, f"postgres.hash_extended_array({t}), list", lambda: pg.hash_extended_array(values, t), n,
             lambda: [pg.hash_extended(v, t) for v in sample], len(sample))


def test_postgres_route_many_daterange(benchmark: Any) -> None:
    n = _n(benchmark)
    rng = random.Random(8)
    rows = [(r, rng.randrange(1000)) for r in _pg_values("daterange", n)]
    types = ("daterange", "int4")
    router = pg.HashPartitionRouter([f"p{i}" for i in range(16)], types)
    sample = rows[: min(n, 20_000)]
    assert router.route_many(sample).tolist() == [pg.partition_of(r, 16, types) for r in sample]
    _compare(benchmark, "HashPartitionRouter.route_many((daterange, int4)), list of rows",
             lambda: router.route_many(rows), n, lambda: [pg.partition_of(r, 16, types) for r in sample], len(sample))
