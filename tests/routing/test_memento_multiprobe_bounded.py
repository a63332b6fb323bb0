"""MementoRouter, MultiProbeRouter and BoundedLoadRouter: reference == native
(hypothesis), scalar == batch, documents, bad input, planners and the command
line.  The kernels' own properties are in tests/strategies."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardhash import Hasher, plan
from shardhash._reference import bounded as rb
from shardhash._reference import memento as rm
from shardhash._reference.routing import ReferenceRouter
from shardhash.routing import (
    BoundedLoadRouter,
    JumpRouter,
    MementoRouter,
    MultiProbeRouter,
    RingRouter,
    Router,
    load_router,
    place_items,
)
from shardhash.routing.base import bounded_assign
from tests._support import examples

U64 = 2**64 - 1
hashes = st.lists(st.integers(0, U64), min_size=1, max_size=40)
hashers = st.sampled_from([Hasher(), Hasher("xxh64", seed=7), Hasher("murmur3_32", seed=1), Hasher("fnv1a_64")])


def _agree(r: Router, hs: list[int]) -> None:
    ref = ReferenceRouter(r.to_dict())
    want = [ref.route_hash(h) for h in hs]
    assert r.route_hashes(hs).tolist() == want
    assert [r.route_hash(h) for h in hs] == want
    keys = [f"k{h}" for h in hs]
    assert r.route_many(keys).tolist() == [r.route_index(k) for k in keys] == \
        [ref.route_key(k) for k in keys]


def _rand_hashes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)


# -- reference == native -------------------------------------------------------------------


@settings(max_examples=examples(60), deadline=None)
@given(n=st.integers(1, 60), data=st.data(), hs=hashes, hasher=hashers)
def test_memento_matches_reference(n: int, data: st.DataObject, hs: list[int], hasher: Hasher) -> None:
    removed = data.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n - 1))
    working = [b for b in range(n) if b not in removed]
    r = MementoRouter([f"b{b}" for b in working], buckets=n, removed=removed, hasher=hasher)
    assert r.shard_buckets == tuple(working)
    _agree(r, hs)


@settings(max_examples=examples(60), deadline=None)
@given(shards=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=30, unique=True),
       probes=st.integers(1, 64), hs=hashes, hasher=hashers)
def test_multiprobe_matches_reference(shards: list[str], probes: int, hs: list[int], hasher: Hasher) -> None:
    try:
        r = MultiProbeRouter(shards, probes=probes, hasher=hasher)
    except ValueError as e:  # two ids on one token (a 32-bit hasher): named
        assert "collide" in str(e)
        return
    _agree(r, hs)


@settings(max_examples=examples(40), deadline=None)
@given(n=st.integers(1, 12), vnodes=st.integers(1, 20), f=st.integers(100, 300), hs=hashes,
       sizes=st.lists(st.integers(0, 50), max_size=40), seed=st.integers(0, 1000))
def test_bounded_matches_reference(n: int, vnodes: int, f: int, hs: list[int], sizes: list[int],
                                   seed: int) -> None:
    r = BoundedLoadRouter([f"s{i}" for i in range(n)], vnodes=vnodes, balance_factor=f)
    _agree(r, hs)  # route() is the ring's
    tokens, owners = [int(t) for t in r.tokens], [int(o) for o in r.token_owners]
    caps = [rb.capacity(len(hs), n, f)] * n
    want = rb.assign(tokens, owners, hs, caps)[0]
    assert r.assign_hashes(hs).tolist() == want
    assert r.assign([f"k{h}" for h in hs]).tolist() == \
        rb.assign(tokens, owners, [int(r.hasher(f"k{h}")) for h in hs], caps)[0]
    sz = (sizes + [1] * len(hs))[: len(hs)]
    caps = [rb.capacity(sum(sz), n, f)] * n
    assert r.assign_hashes(hs, sizes=sz).tolist() == rb.assign(tokens, owners, hs, caps, sizes=sz)[0]


def test_memento_without_removals_is_jump_for_keys() -> None:
    keys = [f"user:{i}" for i in range(20000)] + list(range(20000))
    for n in (1, 3, 10, 100, 1000):
        ids = [f"s{i}" for i in range(n)]
        assert MementoRouter(ids).route_many(keys).tolist() == JumpRouter(ids).route_many(keys).tolist()


def test_scalar_equals_batch_small_and_large() -> None:
    routers = [MementoRouter([f"s{i}" for i in range(50) if i % 7], buckets=50, removed=[0, 7, 14, 21, 28, 35, 42, 49]),
               MultiProbeRouter([f"s{i}" for i in range(30)], probes=5)]
    keys = [f"k{i}" for i in range(300)]
    for r in routers:
        one = [r.route_index(k) for k in keys]
        assert r.route_many(keys).tolist() == one
        assert r.route_many(keys[:10]).tolist() == one[:10]
        assert [r.route(k) for k in keys] == [r.shards[i] for i in one]
        h = _rand_hashes(300_000, 3)
        assert r.route_hashes(h, threads=2).tolist() == r.route_hashes(h, threads=1).tolist()


# -- documents and bad input -----------------------------------------------------------------


def test_documents() -> None:
    m = MementoRouter(["a", "c", "d"], removed=[1])
    assert m.to_dict()["params"] == {"buckets": 4, "removed": [1]}
    assert load_router(m.to_json()) == m
    assert MultiProbeRouter(["a"]).to_dict()["params"] == {"probes": 21}
    b = BoundedLoadRouter(["a", "b"], vnodes=8, balance_factor=110)
    assert b.to_dict()["params"] == {"vnodes": 8, "weights": None, "collisions": "error", "balance_factor": 110}
    assert load_router(b.to_json()) == b and load_router(b.to_json()).balance_factor == 110
    t = BoundedLoadRouter(["a", "b"], tokens={"a": [5], "b": [9]})
    assert load_router(t.to_json()) == t


@pytest.mark.parametrize(("typ", "params", "match"), [
    ("memento", {"buckets": 3}, "'removed'"),
    ("memento", {"buckets": 3, "removed": [1], "x": 1}, "x"),
    ("memento", {"buckets": 4, "removed": [1]}, "buckets=4"),
    ("memento", {"buckets": 3, "removed": 1}, "removed must be a list"),
    ("multiprobe", {}, "'probes'"),
    ("multiprobe", {"probes": 65}, "probes must be <= 64"),
    ("bounded", {"vnodes": 4, "weights": None, "collisions": "error"}, "'balance_factor'"),
    ("bounded", {"vnodes": 4, "weights": None, "collisions": "error", "balance_factor": 99}, ">= 100"),
])
def test_bad_documents(typ: str, params: dict[str, object], match: str) -> None:
    doc = {"format": "shardhash.router/1", "type": typ, "version": 1, "shards": ["a", "b"],
           "hasher": Hasher().to_dict(), "params": params}
    with pytest.raises((ValueError, TypeError), match=match):
        load_router(doc)


_a_float: Any = 1.25  # deliberate misuse


def test_bad_arguments_name_the_position() -> None:
    with pytest.raises(TypeError, match="probes must be an int"):
        MultiProbeRouter(["a"], probes=_a_float)
    with pytest.raises(ValueError, match="probes must be >= 1"):
        MultiProbeRouter(["a"], probes=0)
    with pytest.raises(TypeError, match="balance_factor must be an int"):
        BoundedLoadRouter(["a"], balance_factor=_a_float)
    with pytest.raises(ValueError, match=r"removed\[2\] = 5 is removed twice"):
        MementoRouter(["a"], removed=[5, 1, 5, 3, 4, 2])
    r = BoundedLoadRouter(["a", "b"], vnodes=4)
    with pytest.raises(ValueError, match=r"hashes\[1\] = -3 is negative"):
        r.assign_hashes(np.array([1, -3]))
    with pytest.raises(ValueError, match="sizes has 1 entries for 2 keys"):
        r.assign_hashes([1, 2], sizes=[1])
    with pytest.raises(TypeError, match=r"sizes\[0\]"):
        r.assign_hashes([1], sizes=[1.5])
    t, o = [1, 5, 9], [0, 1, 0]
    with pytest.raises(ValueError, match=r"tokens\[2\] = 4 follows 5"):
        bounded_assign([1, 5, 4], o, [3], [1, 1])
    with pytest.raises(ValueError, match=r"owners\[1\] = 2 is not a shard index"):
        bounded_assign(t, [0, 2, 0], [3], [1, 1])
    with pytest.raises(ValueError, match=r"order\[1\] = 0 repeats"):
        bounded_assign(t, o, [3, 4], [1, 1], order=[0, 0])
    with pytest.raises(ValueError, match=r"prev\[0\] = 7"):
        bounded_assign(t, o, [3], [1, 1], prev=[7])
    with pytest.raises(OverflowError, match="2\\*\\*64"):
        bounded_assign(t, o, [3, 4], [1, 1], sizes=[U64, U64])


# -- bounded loads: caps, weights, the planner -------------------------------------------------


@pytest.mark.parametrize("factor", [105, 125])
def test_assign_caps_every_shard(factor: int) -> None:
    r = BoundedLoadRouter([f"s{i}" for i in range(10)], balance_factor=factor)
    keys = np.arange(100_000, dtype=np.int64)
    load = np.bincount(r.assign(keys), minlength=10)
    assert load.max() <= math.ceil(factor / 100 * 10_000)
    # the plain ring is over the cap at 5%: the walk is what keeps it there
    ring = np.bincount(r.route_many(keys), minlength=10)
    assert ring.max() > load.max() or factor == 125


def test_weighted_caps() -> None:
    r = BoundedLoadRouter(["a", "b", "c"], weights={"a": 2.0}, balance_factor=100)
    assert r.capacities(1000).tolist() == [500, 250, 250]
    load = np.bincount(r.assign(range(1000)), minlength=3)
    assert load.tolist() == [500, 250, 250]


def test_place_items_keeps_what_it_can() -> None:
    rng = np.random.default_rng(5)
    items = {f"tenant-{i}": int(x) for i, x in enumerate(rng.pareto(1.5, 3000) * 100 + 1)}
    r10 = BoundedLoadRouter([f"s{i}" for i in range(10)], balance_factor=110)
    p10 = place_items(r10, items)
    assert p10.overflows == 0 and max(p10.loads.values()) <= min(p10.capacity.values())
    r11 = r10.with_shards([*r10.shards, "s10"])
    assert isinstance(r11, BoundedLoadRouter) and r11.balance_factor == 110
    p11 = place_items(r11, items, previous=p10.assignment)
    assert max(p11.loads.values()) <= min(p11.capacity.values())
    # moves only what the lower cap forces out: at most about 1/11 of the size, and much less than from scratch
    assert p11.moved_share < 0.15
    scratch = place_items(r11, items)
    moved_scratch = sum(items[k] for k in items if scratch.assignment[k] != p10.assignment[k])
    assert p11.moved_size < moved_scratch
    assert p11.moved == [k for k in items if p11.assignment[k] != p10.assignment[k]]


# -- planners ------------------------------------------------------------------------------------


def test_jump_losing_a_middle_shard_becomes_memento_and_moves_only_its_keys() -> None:
    old = JumpRouter([f"s{i}" for i in range(100)])
    new, steps = plan.remove_shards(old, "s50")
    assert isinstance(new, MementoRouter) and new.removed == (50,) and new.version == 2
    assert {s.source for s in steps} == {"s50"}
    moves = plan.moved_ranges(old, new)
    assert {m.source for m in moves} == {"s50"} and len(moves) == 99
    assert abs(sum(m.share for m in moves) - 0.01) < 1e-12
    h = _rand_hashes(1_000_000, 1)
    rep = plan.diff(old, new, h.tolist()[:200_000])
    assert rep.moved_fraction <= 0.0102 * 1.1
    # losing the last shard stays jump; re-adding restores the bucket
    assert type(plan.remove_shards(old, "s99")[0]) is JumpRouter
    back, _ = plan.add_shards(new, "s50b")
    assert type(back) is JumpRouter and back.shards[50] == "s50b"
    moves = plan.moved_ranges(new, back)
    assert {m.destination for m in moves} == {"s50b"} and abs(sum(m.share for m in moves) - 0.01) < 1e-12


def test_memento_chains_of_removals_have_exact_expected_moves() -> None:
    r: Router = JumpRouter([f"s{i}" for i in range(12)])
    for gone in ("s3", "s11", "s0", "s7"):
        new, _ = plan.remove_shards(r, gone)
        moves = plan.moved_ranges(r, new)
        assert {m.source for m in moves} == {gone}
        h = _rand_hashes(200_000, 9)
        a = np.array(r.shards)[r.route_hashes(h)]
        b = np.array(new.shards)[new.route_hashes(h)]
        assert np.array_equal(a != b, a == gone)
        assert abs((a != b).mean() - sum(m.share for m in moves)) < 0.01
        r = new
    # two removals at once: the shard ids kept keep their buckets
    two, _ = plan.remove_shards(JumpRouter(list("abcdef")), ["b", "d"])
    assert isinstance(two, MementoRouter) and two.shards == tuple("acef")


def test_multiprobe_add_and_remove_move_only_what_they_must() -> None:
    ids = [f"node-{i}" for i in range(20)]
    r = MultiProbeRouter(ids)
    h = _rand_hashes(200_000, 4)
    new, _ = plan.add_shards(r, "node-20")
    assert isinstance(new, MultiProbeRouter) and new.probes == 21
    a = np.array(r.shards)[r.route_hashes(h)]
    b = np.array(new.shards)[new.route_hashes(h)]
    assert set(b[a != b].tolist()) == {"node-20"}
    gone, steps = plan.remove_shards(r, "node-7")
    c = np.array(gone.shards)[gone.route_hashes(h)]
    assert np.array_equal(a != c, a == "node-7") and {s.source for s in steps} == {"node-7"}
    with pytest.raises(ValueError, match="no weights"):
        plan.reweight(r, {"node-1": 2.0})


def test_bounded_plans_like_its_ring() -> None:
    r = BoundedLoadRouter(list("abcd"), vnodes=32, balance_factor=105)
    new, steps = plan.add_shards(r, "e")
    ring_new, ring_steps = plan.add_shards(RingRouter(list("abcd"), vnodes=32), "e")
    assert isinstance(new, BoundedLoadRouter) and new.balance_factor == 105
    assert np.array_equal(new.tokens, ring_new.tokens)
    assert [(s.source, s.destination, s.lo, s.hi) for s in steps] == \
        [(s.source, s.destination, s.lo, s.hi) for s in ring_steps]


# -- the command line -----------------------------------------------------------------------


def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shardhash", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_cli_new_add_remove(tmp_path: Path) -> None:
    m = tmp_path / "m.json"
    p = _cli("topology", "new", "multiprobe", "--shards", "a,b,c", "--probes", "9", "-o", m)
    assert p.returncode == 0, p.stderr
    assert load_router(m.read_text(encoding="utf-8")).probes == 9
    b = tmp_path / "b.json"
    p = _cli("topology", "new", "bounded", "--shards", "a,b,c", "--balance-factor", "105", "--vnodes", "50", "-o", b)
    assert p.returncode == 0, p.stderr
    doc = json.loads(b.read_text(encoding="utf-8"))
    assert doc["type"] == "bounded" and doc["params"]["balance_factor"] == 105 and doc["params"]["vnodes"] == 50
    p = _cli("topology", "add", b, "--shards", "d", "-o", tmp_path / "b2.json")
    assert p.returncode == 0, p.stderr
    assert load_router((tmp_path / "b2.json").read_text(encoding="utf-8")).balance_factor == 105
    j = tmp_path / "j.json"
    assert _cli("topology", "new", "memento", "--shards", "a,b,c,d", "-o", j).returncode == 0
    p = _cli("topology", "remove", j, "--shards", "b", "-o", tmp_path / "j2.json")
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr
    assert load_router((tmp_path / "j2.json").read_text(encoding="utf-8")).to_dict()["params"] == \
        {"buckets": 4, "removed": [1]}
    for args, msg in ((("multiprobe", "--probes", "65"), "probes must be <= 64"),
                      (("bounded", "--balance-factor", "99"), "balance_factor must be >= 100"),
                      (("ring", "--probes", "3"), "--probes does not apply to ring"),
                      (("jump", "--balance-factor", "110"), "--balance-factor does not apply to jump")):
        p = _cli("topology", "new", *args, "--shards", "a,b")
        assert p.returncode == 2 and msg in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_memento_equals_reference_after_restore() -> None:
    ref = rm.Memento(8)
    for b in (2, 5, 6):
        ref.remove(b)
    ref.restore()  # 6 works again
    r = MementoRouter([f"b{b}" for b in ref.working()], buckets=8, removed=[2, 5])
    hs = _rand_hashes(5000, 2).tolist()
    assert [r.shards[i] for i in r.route_hashes(hs)] == [f"b{ref.bucket(h)}" for h in hs]
