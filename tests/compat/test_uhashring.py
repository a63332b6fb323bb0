"""shardhash.compat.uhashring: uhashring's HashRing, default ring and ketama ring.

Golden vectors: tests/vectors/compat/uhashring_hashring.tsv (uhashring's own
``get_node`` answers, configurations in its ``# config`` lines).  The live
test builds random rings with the installed uhashring (weights, vnodes,
replicas, nodes removed and added) and compares every key, one at a time and
in batches.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest

from shardhash import plan
from shardhash.compat.uhashring import HashRingRouter, key_hash
from shardhash.routing import load_router
from tests._support import VECTORS, ill_typed, oracle_missing


def _uhashring() -> Any:
    try:
        import uhashring
    except ImportError as e:
        oracle_missing("uhashring", str(e))
    return uhashring


def _vectors() -> tuple[dict[str, Any], list[tuple[str, Any, str]]]:
    configs: dict[str, Any] = {}
    rows: list[tuple[str, Any, str]] = []
    header = True
    for line in (VECTORS / "compat" / "uhashring_hashring.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith("# config\t"):
            _, cid, conf = line[2:].split("\t")
            configs[cid] = json.loads(conf)
        elif not line or line.startswith("#"):
            continue
        elif header:
            header = False
        else:
            cid, key, node = line.split("\t")
            kind, value = json.loads(key)
            rows.append((cid, bytes.fromhex(value) if kind == "bytes" else value, node))
    return configs, rows


def _router(conf: dict[str, Any]) -> HashRingRouter:
    """The nodes the ring has after its operations: removed ones gone, added ones last."""
    nodes = conf["nodes"]
    ring: dict[str, Any] = dict(nodes) if isinstance(nodes, dict) else {n: 1 for n in nodes}
    for op in conf["ops"]:
        if op[0] == "remove":
            del ring[op[1]]
        else:
            ring[op[1]] = op[2]
    return HashRingRouter(ring, **conf["kwargs"])


def test_golden_vectors() -> None:
    configs, rows = _vectors()
    assert len(configs) >= 10 and len(rows) > 4000
    routers = {cid: _router(conf) for cid, conf in configs.items()}
    for cid, r in routers.items():
        mine = [(k, node) for c, k, node in rows if c == cid]
        keys = [k for k, _ in mine]
        want = [node for _, node in mine]
        assert [r.route(k) for k in keys] == want, cid
        assert [r.shards[i] for i in r.route_many(keys).tolist()] == want, cid
        assert [r.shards[i] for i in r.route_many(np.array(keys, dtype=object)).tolist()] == want, cid


def _random_ring(rng: random.Random, ketama: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    n = rng.randint(1, 9)
    nodes: dict[str, Any] = {}
    for i in range(n):
        name = rng.choice([f"10.0.{rng.randrange(256)}.{i}:11211", f"cache-{i}", f"n{i}"])
        conf: dict[str, Any] = {"weight": rng.randint(1, 6)}
        if rng.random() < 0.4:
            conf["vnodes"] = rng.randint(1, 200)
        nodes[name] = conf if len(conf) > 1 or rng.random() < 0.5 else conf["weight"]
    kwargs: dict[str, Any] = {}
    if ketama:
        kwargs["hash_fn"] = "ketama"
        if rng.random() < 0.5:
            kwargs["replicas"] = rng.randint(1, 4)
    if rng.random() < 0.5:
        kwargs["vnodes"] = rng.randint(1, 200)
    return nodes, kwargs


def _keys(rng: random.Random, ring_nodes: list[str]) -> list[Any]:
    keys: list[Any] = [f"user:{rng.randrange(10**9)}" for _ in range(1500)]
    keys += [rng.randbytes(rng.randrange(0, 30)) for _ in range(200)]
    keys += [rng.randrange(-2**70, 2**70) for _ in range(200)]
    keys += ["é" * rng.randrange(1, 5) for _ in range(20)]
    keys += [f"{n}-{i}" for n in ring_nodes for i in range(3)]  # exactly on a point
    return keys


@pytest.mark.parametrize("ketama", [False, True], ids=["default", "ketama"])
def test_live_uhashring(ketama: bool) -> None:
    uhashring = _uhashring()
    rng = random.Random(7 + ketama)
    checked = 0
    for _ in range(6):
        nodes, kwargs = _random_ring(rng, ketama)
        ring = uhashring.HashRing(nodes, **kwargs)
        for step in range(3):
            r = HashRingRouter.from_hashring(ring)
            assert r.points_per_node == dict(ring.distribution)
            keys = _keys(rng, list(ring.get_nodes()))
            want = [ring.get_node(k) for k in keys]
            assert [r.route(k) for k in keys] == want
            assert [r.shards[i] for i in r.route_many(keys).tolist()] == want
            assert [r.shards[i] for i in r.route_many(keys, threads=2).tolist()] == want
            assert load_router(r.to_json()) == r
            checked += len(keys)
            # then the ring changes: a node goes, or a new one comes
            names = list(ring.get_nodes())
            if step == 0 and len(names) > 1:
                ring.remove_node(rng.choice(names))
            else:
                ring.add_node(f"new{step}", {"weight": rng.randint(1, 3)})
    assert checked > 30_000


def test_live_arrow_keys() -> None:
    uhashring = _uhashring()
    pa = pytest.importorskip("pyarrow")
    for kwargs in ({}, {"hash_fn": "ketama"}):
        ring = uhashring.HashRing(["a", "b", "c", "d"], **kwargs)
        r = HashRingRouter.from_hashring(ring)
        keys = [f"k{i}" for i in range(3000)] + ["a-0", "b-1", "c-2"]
        want = [ring.get_node(k) for k in keys]
        assert [r.shards[i] for i in r.route_many(pa.array(keys)).tolist()] == want
        assert [r.shards[i] for i in r.route_many(pa.array(keys, pa.large_string())).tolist()] == want


def test_key_on_a_point_goes_to_the_next_point() -> None:
    # the key "a-0" hashes to a's first point: bisect_right takes the next point
    r = HashRingRouter(["a", "b", "c"])
    h = key_hash("a-0")
    i = r.points.index(h)
    nxt = r.shards[int(r.point_owners[(i + 1) % len(r.points)])]
    assert r.route("a-0") == nxt
    assert r.shards[int(r.route_many(["a-0"])[0])] == nxt


@pytest.mark.parametrize(("key", "node", "below"), [("key2491", "node97105", True),
                                                   ("key140679", "node2221", True),
                                                   ("key105381", "node121379", False)])
def test_batch_decides_near_keys_on_all_128_bits(key: str, node: str, below: bool) -> None:
    # md5(key) and md5(f"{node}-0") share their top 32 bits (pairs found by a
    # birthday search): the batch, which looks keys up by those 32 bits, must
    # decide on all 128 -- the key belongs to the node when its hash is lower
    h, p = key_hash(key), key_hash(f"{node}-0")
    assert h >> 96 == p >> 96 and (h < p) == below
    r = HashRingRouter(["a", node, "b"], vnodes=1)
    want = r.route(key)
    assert (want == node) == below
    assert r.shards[int(r.route_many([key, "x", key])[0])] == want
    uhashring = _uhashring()
    assert uhashring.HashRing(["a", node, "b"], vnodes=1).get_node(key) == want


def test_owned_ranges_agree_with_routing() -> None:
    for r in (HashRingRouter(["a", "b", "c"], vnodes=20),
              HashRingRouter({"a": 1, "b": 2}, hash_fn="ketama", replicas=2)):
        ranges = r.owned_ranges()
        assert ranges[0][0] == 0 and ranges[-1][1] == 2**64 - 1
        assert all(ranges[i][1] + 1 == ranges[i + 1][0] for i in range(len(ranges) - 1))
        keys = [f"k{i}" for i in range(3000)]
        los = [lo for lo, _, _ in ranges]
        for k in keys:
            h = r.key_hash(k)
            pos = h >> 64 if r.hash_fn is None else h << 32
            j = int(np.searchsorted(np.array(los, dtype=np.uint64), np.uint64(pos), side="right")) - 1
            assert ranges[j][2] == r.route_index(k)


def test_plan_one_more_node() -> None:
    keys = [f"session:{i}" for i in range(30_000)]
    old = HashRingRouter(["m1", "m2", "m3"])
    new = HashRingRouter(["m1", "m2", "m3", "m4"])
    rep = plan.diff(old, new, keys)
    assert 0.2 < rep.moved_fraction < 0.3
    assert {m.destination for m in plan.moved_ranges(old, new)} == {"m4"}


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="hash_fn"):
        HashRingRouter(["a"], hash_fn="md5")
    with pytest.raises(TypeError, match="callable is not modelled"):
        HashRingRouter(["a"], hash_fn=ill_typed(lambda k: 1))
    with pytest.raises(ValueError, match="replicas is a parameter of the ketama ring"):
        HashRingRouter(["a"], replicas=2)
    with pytest.raises(ValueError, match="replicas must be in 1..4"):
        HashRingRouter(["a"], hash_fn="ketama", replicas=5)
    with pytest.raises(TypeError, match="weight of node 'a'"):
        HashRingRouter({"a": 1.5})
    with pytest.raises(ValueError, match="vnodes of node 'b'"):
        HashRingRouter({"a": 1, "b": {"vnodes": 0}})
    with pytest.raises(ValueError, match="unknown configuration key"):
        HashRingRouter({"a": {"wieght": 2}})
    with pytest.raises(ValueError, match="at least one node"):
        HashRingRouter([])
    with pytest.raises(TypeError, match="non-empty str"):
        HashRingRouter([ill_typed(1)])
    with pytest.raises(TypeError, match="MD5 key hashes"):
        HashRingRouter(["a"]).route_hashes(np.zeros(2, dtype=np.uint64))


def test_from_hashring_refuses_a_custom_hash_fn() -> None:
    uhashring = _uhashring()
    ring = uhashring.HashRing(["a", "b"], hash_fn=lambda k: hash(k))
    with pytest.raises(ValueError, match="not modelled"):
        HashRingRouter.from_hashring(ring)


def test_documents_round_trip() -> None:
    for r in (HashRingRouter({"a": {"weight": 2, "vnodes": 10}, "b": 1}),
              HashRingRouter(["x", "y"], hash_fn="ketama", replicas=3, vnodes=9)):
        again = load_router(r.to_json())
        assert again == r and isinstance(again, HashRingRouter)
        assert again.route_many(["k1", "k2"]).tolist() == r.route_many(["k1", "k2"]).tolist()
    assert HashRingRouter(["a", "b"]) != HashRingRouter(["a", "b"], vnodes=100)


def test_docstring_examples() -> None:
    import doctest

    import shardhash.compat.uhashring as mod

    res = doctest.testmod(mod)
    assert res.attempted > 0 and res.failed == 0
