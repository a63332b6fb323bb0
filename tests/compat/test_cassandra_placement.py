"""shardhash.compat.cassandra: NetworkTopologyStrategy replicas and RandomPartitioner.

Golden vectors: tests/vectors/compat/cassandra_nts.tsv (the Python driver's
``make_token_replica_map`` over ten random rings, rings in its ``# config``
lines) and cassandra_random.tsv (the driver's ``MD5Token``).  The live tests
compare with the installed cassandra-driver over random rings (datacenters,
racks, replication factors, vnodes), one key at a time and in batches.

Where the driver lists a node twice (a node with two vnodes held back before
every rack of its datacenter had a replica), shardhash lists it once and fills
the datacenter's replicas as the server does: those rows are checked to hold
every node the driver names, no node twice, and the datacenter's count.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from shardhash import plan
from shardhash.compat import cassandra
from shardhash.routing import load_router
from tests._support import VECTORS, ill_typed, oracle_missing


def _driver() -> Any:
    try:
        import cassandra as driver
        from cassandra import metadata  # noqa: F401
    except ImportError as e:
        oracle_missing("cassandra-driver", str(e))
    return driver


def _check_replicas(want: list[str], got: list[str], topo: dict[str, Any], rf: dict[str, int]) -> None:
    if len(set(want)) == len(want):
        assert got == want
        return
    assert set(want) <= set(got) and len(set(got)) == len(got)
    per_dc = Counter(dc for dc, _ in topo.values())
    assert Counter(topo[n][0] for n in got) == Counter({dc: min(k, per_dc[dc]) for dc, k in rf.items()
                                                       if k and per_dc[dc]})


def test_nts_golden_vectors() -> None:
    configs: dict[str, Any] = {}
    rows: list[tuple[str, int, list[str]]] = []
    header = True
    for line in (VECTORS / "compat" / "cassandra_nts.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith("# config\t"):
            _, cid, conf = line[2:].split("\t")
            configs[cid] = json.loads(conf)
        elif line and not line.startswith("#"):
            if header:
                header = False
                continue
            cid, tok, reps = line.split("\t")
            rows.append((cid, int(tok), reps.split(",") if reps else []))
    assert len(configs) == 10 and len(rows) > 500
    for cid, conf in configs.items():
        topo = {n: tuple(v) for n, v in conf["topology"].items()}
        nts = cassandra.NetworkTopologyStrategy(cassandra.TokenRouter(conf["tokens"]), conf["replication"], topo)
        mine = [(t, names) for c, t, names in rows if c == cid]
        for t, names in mine:
            _check_replicas(names, nts.replicas_of_token(t), conf["topology"], conf["replication"])
        table = nts.replicas_of_tokens([t for t, _ in mine])
        assert [[nts.router.shards[i] for i in row if i >= 0] for row in table.tolist()] == \
            [nts.replicas_of_token(t) for t, _ in mine]


def _random_topology(rng: random.Random) -> tuple[dict[str, tuple[str, str]], dict[str, int]]:
    ndc = rng.randint(1, 3)
    topo = {f"n{i}": (f"dc{rng.randrange(ndc)}", f"r{rng.randrange(rng.randint(1, 4))}")
            for i in range(rng.randint(1, 14))}
    rf = {f"dc{d}": rng.randint(0, 4) for d in range(ndc)}
    return topo, rf


def _driver_map(topo: dict[str, tuple[str, str]], ring: dict[str, list[int]], rf: dict[str, int],
                token_cls: Any) -> tuple[dict[int, list[str]], list[int]]:
    from cassandra.connection import DefaultEndPoint
    from cassandra.metadata import NetworkTopologyStrategy
    from cassandra.policies import SimpleConvictionPolicy
    from cassandra.pool import Host

    hosts = {n: Host(DefaultEndPoint(f"10.1.{i // 250}.{i % 250 + 1}"), SimpleConvictionPolicy,
                     datacenter=dc, rack=rack) for i, (n, (dc, rack)) in enumerate(topo.items())}
    name = {id(h): n for n, h in hosts.items()}
    owner = {token_cls(t): hosts[n] for n, ts in ring.items() for t in ts}
    tokens = sorted(owner)
    rmap = NetworkTopologyStrategy(rf).make_token_replica_map(owner, tokens)
    return {t.value: [name[id(h)] for h in rmap[t]] for t in tokens}, [t.value for t in tokens]


@pytest.mark.parametrize("partitioner", ["murmur3", "random"])
def test_live_nts_matches_the_driver(partitioner: str) -> None:
    _driver()
    from cassandra.metadata import MD5Token, Murmur3Token

    rng = random.Random(partitioner)
    checked = 0
    for _ in range(40):
        topo, rf = _random_topology(rng)
        vn = rng.choice([1, 2, 8, 16])
        ring: dict[str, list[int]] = {}
        taken: list[int] = []
        for n in topo:
            if partitioner == "murmur3":
                ring[n] = cassandra.random_tokens(vn, seed=rng.randrange(2**32), exclude=taken)
            else:
                ring[n] = [rng.randrange(0, 2**127) for _ in range(vn)]
            taken += ring[n]
        router: cassandra.TokenRouter | cassandra.RandomTokenRouter
        if partitioner == "murmur3":
            router = cassandra.TokenRouter(ring, cql_type="text")
        else:
            router = cassandra.RandomTokenRouter(ring, cql_type="text")
        want, tokens = _driver_map(topo, ring, rf, Murmur3Token if partitioner == "murmur3" else MD5Token)
        nts = cassandra.NetworkTopologyStrategy(router, rf, topo)
        got = nts.token_replica_map()
        for t in tokens:
            _check_replicas(want[t], got[t], topo, rf)
        # keys: the driver's replicas of the ring token at or after the key's token
        keys = [f"user:{rng.randrange(10**9)}" for _ in range(150)]
        table = nts.replicas_many(keys)
        for k, row in zip(keys, table.tolist()):
            kt = (Murmur3Token if partitioner == "murmur3" else MD5Token).hash_fn(k.encode())
            at = next((t for t in tokens if t >= kt), tokens[0])
            one = nts.replicas(k)
            assert [router.shards[i] for i in row if i >= 0] == one
            _check_replicas(want[at], one, topo, rf)
            assert router.replicas(k, rf, topology=topo) == one
            checked += 1
    assert checked == 6000


def test_random_partitioner_golden_vectors() -> None:
    lines = [ln.split("\t") for ln in (VECTORS / "compat" / "cassandra_random.tsv").read_text().splitlines()
             if ln and not ln.startswith("#")][1:]
    assert len(lines) > 400
    keys = [bytes.fromhex(k) for k, _ in lines]
    assert [cassandra.random_partitioner_token(k) for k in keys] == [int(t) for _, t in lines]


def test_live_random_partitioner_routing() -> None:
    _driver()
    from cassandra.metadata import MD5Token

    rng = random.Random(127)
    keys = [rng.randbytes(rng.randrange(0, 40)) for _ in range(4000)]
    toks = [MD5Token.hash_fn(k) for k in keys]
    assert [cassandra.random_partitioner_token(k) for k in keys] == toks
    ring = {f"n{i}": [rng.randrange(0, 2**127) for _ in range(8)] for i in range(5)}
    # ring tokens equal to keys' tokens, and sharing a key token's top 32 bits
    ring["n5"] = sorted(set(toks[:20]))
    ring["n6"] = sorted({(t >> 96 << 96) + 3 for t in toks[20:40]} - set(toks))
    r = cassandra.RandomTokenRouter(ring)
    flat = sorted((t, n) for n, ts in ring.items() for t in ts)
    want = [next((n for t, n in flat if t >= kt), flat[0][1]) for kt in toks]
    assert [r.route(k) for k in keys] == want
    assert [r.shards[i] for i in r.route_many(keys).tolist()] == want
    assert [r.shards[i] for i in r.route_tokens(toks).tolist()] == want
    ids = np.arange(-3000, 3000, dtype=np.int64)
    rb = cassandra.RandomTokenRouter(ring, cql_type="bigint")
    assert rb.route_many(ids).tolist() == [rb.route_index(int(i)) for i in ids]
    assert [rb.route_index(int(i)) for i in ids[:200]] == \
        [rb.shards.index(next((n for t, n in flat if t >= MD5Token.hash_fn(int(i).to_bytes(8, "big", signed=True))),
                              flat[0][1])) for i in ids[:200]]
    comp = cassandra.RandomTokenRouter(ring, cql_type=("int", "text"))
    rows = [(i, f"t{i}") for i in range(300)]
    assert comp.route_many(rows).tolist() == [comp.route_index(x) for x in rows]
    assert load_router(r.to_json()) == r and load_router(comp.to_json()) == comp


def test_random_router_owned_ranges_and_plan() -> None:
    r = cassandra.RandomTokenRouter({"a": [2**125], "b": [2**126], "c": [2**126 + 2**125]}, cql_type="text")
    own = r.owned_ranges()
    assert own[0][0] == 0 and own[-1][1] == 2**64 - 1
    assert all(own[i][1] + 1 == own[i + 1][0] for i in range(len(own) - 1))
    grown = cassandra.RandomTokenRouter({"a": [2**125], "b": [2**126], "c": [2**126 + 2**125], "d": [2**127]},
                                        cql_type="text")
    keys = [f"k{i}" for i in range(20_000)]
    rep = plan.diff(r, grown, keys)
    assert 0.2 < rep.moved_fraction < 0.3  # d takes (c, 2**127]: a quarter of the tokens
    assert {m.destination for m in plan.moved_ranges(r, grown)} == {"d"}


def test_bad_input_is_refused() -> None:
    ring = cassandra.TokenRouter({"a": [0], "b": [100]})
    topo = {"a": ("dc1", "r1"), "b": ("dc1", "r2")}
    with pytest.raises(ValueError, match="no \\(datacenter, rack\\) for node 'b'"):
        cassandra.NetworkTopologyStrategy(ring, {"dc1": 2}, {"a": ("dc1", "r1")})
    with pytest.raises(ValueError, match="not on the ring"):
        cassandra.NetworkTopologyStrategy(ring, {"dc1": 2}, {**topo, "z": ("dc1", "r1")})
    with pytest.raises(ValueError, match="rack must be a non-empty str"):
        cassandra.NetworkTopologyStrategy(ring, {"dc1": 2}, {"a": ("dc1", ""), "b": ("dc1", "r2")})
    with pytest.raises(ValueError, match="non-negative int"):
        cassandra.NetworkTopologyStrategy(ring, {"dc1": -1}, topo)
    with pytest.raises(ValueError, match="need topology"):
        ring.replicas(b"k", {"dc1": 2})
    with pytest.raises(ValueError, match="topology is for NetworkTopologyStrategy"):
        ring.replicas(b"k", 2, topology=topo)
    with pytest.raises(TypeError, match="TokenRouter or RandomTokenRouter"):
        cassandra.NetworkTopologyStrategy(ill_typed("ring"), {"dc1": 1}, topo)
    with pytest.raises(ValueError, match="outside the RandomPartitioner range"):
        cassandra.RandomTokenRouter({"a": [-1]})
    with pytest.raises(ValueError, match="owned twice"):
        cassandra.RandomTokenRouter({"a": [5], "b": [5]})
    with pytest.raises(OverflowError, match="position 1"):
        cassandra.RandomTokenRouter({"a": [5]}, cql_type="int").route_many([1, 2**40])


def test_nts_example_and_absent_dc() -> None:
    # a datacenter with fewer nodes than its replication factor gives all it has;
    # a datacenter with no replication gives none
    ring = cassandra.TokenRouter({"a": [0], "b": [100], "c": [200], "d": [300]})
    topo = {"a": ("east", "r1"), "b": ("west", "r1"), "c": ("east", "r2"), "d": ("west", "r1")}
    nts = cassandra.NetworkTopologyStrategy(ring, {"east": 5, "west": 0}, topo)
    assert nts.replicas_of_token(50) == ["c", "a"]
    assert nts.replicas_of_tokens([50, 250]).tolist() == [[2, 0], [0, 2]]


def test_docstring_examples() -> None:
    import doctest

    res = doctest.testmod(cassandra)
    assert res.attempted > 0 and res.failed == 0
