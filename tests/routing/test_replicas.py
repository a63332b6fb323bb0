"""Replica (preference) lists: ``route_replicas`` and its batch forms
(docs/routers.md, section 2.17).

* compiled == the pure-Python reference (``shardhash._reference.replicas``,
  which works from the router's document alone), with and without zones;
* scalar == batch, and the first replica is the route;
* the lists are distinct shards; with zones no two replicas share a zone
  while ``n`` is at most the number of zones;
* bad input names what is wrong; routers without lists refuse;
* documents with zones round trip, documents without them are unchanged.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardhash import Hasher, load_router
from shardhash._reference.replicas import router_replicas
from shardhash.routing import (
    DirectoryRouter,
    JumpRouter,
    ModuloRouter,
    RendezvousRouter,
    RingRouter,
    Router,
)
from tests._router_cases import HASH_ROUTERS, KEY_ROUTERS
from tests._support import examples

U64 = 2**64 - 1
NO_LISTS = {"directory"}  # overrides: no replica rule
LISTED = {name: f() for name, f in HASH_ROUTERS.items() if name not in NO_LISTS}
ZONE_NAMES = ["z-a", "z-b", "z-c", "z-d"]


def _zones_for(r: Router, picks: list[int]) -> dict[str, str]:
    """A zone for every shard of ``r`` from ``picks`` (cycled), every zone used."""
    return {s: ZONE_NAMES[picks[i % len(picks)] % len(ZONE_NAMES)] for i, s in enumerate(r.shards)}


def _hash_routed(r: Router) -> bool:
    return r.key_prefix is None


@pytest.mark.parametrize("name", sorted(LISTED))
@settings(max_examples=examples(40), deadline=None)
@given(hs=st.lists(st.integers(0, U64), min_size=1, max_size=12), data=st.data())
def test_native_equals_reference(name: str, hs: list[int], data: Any) -> None:
    r = LISTED[name]
    n = data.draw(st.integers(1, len(r.shards)), "n")
    zoned = data.draw(st.booleans(), "zoned")
    zones = _zones_for(r, data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=6), "zones")) if zoned else None
    doc = r.to_dict()
    want = [router_replicas(doc, h, n, zones) for h in hs]
    batch = r.route_replicas_hashes(hs, n, zones=zones)
    assert batch.dtype == np.int32 and batch.shape == (len(hs), n)
    assert batch.tolist() == want
    assert [r.route_replicas_hash(h, n, zones=zones) for h in hs] == want
    # threads split rows, never change them
    assert r.route_replicas_hashes(hs, n, zones=zones, threads=2).tolist() == want


@pytest.mark.parametrize("name", sorted(LISTED))
@settings(max_examples=examples(30), deadline=None)
@given(keys=st.lists(st.one_of(st.integers(-(2**63), U64), st.text(max_size=20), st.binary(max_size=20)),
                     min_size=1, max_size=80),
       data=st.data())
def test_scalar_equals_batch_and_first_is_route(name: str, keys: list[Any], data: Any) -> None:
    r = LISTED[name]
    n = data.draw(st.integers(1, len(r.shards)), "n")
    if r.key_prefix is not None:
        keys = [(k, 1) for k in keys]
    many = r.route_replicas_many(keys, n)
    assert many.shape == (len(keys), n)
    assert many[:, 0].tolist() == r.route_many(keys).tolist()
    for k, row in zip(keys, many.tolist()):
        one = r.route_replicas(k, n)
        assert one == [r.shards[i] for i in row]
        assert one[0] == r.route(k)
        assert len(set(row)) == n
    if _hash_routed(r):
        assert r.route_replicas_hashes(r.hasher.hash_array(keys), n).tolist() == many.tolist()


@pytest.mark.parametrize("name", sorted(LISTED))
def test_full_list_is_a_permutation(name: str) -> None:
    r = LISTED[name]
    n = len(r.shards)
    rows = r.route_replicas_many(list(range(500)) if r.key_prefix is None else [(i,) for i in range(500)], n)
    assert (np.sort(rows, axis=1) == np.arange(n)).all()


@pytest.mark.parametrize("name", sorted(LISTED))
@settings(max_examples=examples(30), deadline=None)
@given(hs=st.lists(st.integers(0, U64), min_size=1, max_size=20), picks=st.lists(st.integers(0, 3), min_size=1,
                                                                                 max_size=6), data=st.data())
def test_zone_rule(name: str, hs: list[int], picks: list[int], data: Any) -> None:
    r = LISTED[name]
    zones = _zones_for(r, picks)
    nz = len(set(zones.values()))
    n = data.draw(st.integers(1, len(r.shards)), "n")
    rows = r.route_replicas_hashes(hs, n, zones=zones)
    plain = r.route_replicas_hashes(hs, len(r.shards))
    for row, full in zip(rows.tolist(), plain.tolist()):
        assert len(set(row)) == n
        assert row[0] == full[0]  # the first replica is always the route
        z = [zones[r.shards[i]] for i in row]
        assert len(set(z[: min(n, nz)])) == min(n, nz)  # distinct zones while there are any left
        # the zone-distinct replicas are the first shard of each new zone in P(h)
        firsts: list[int] = []
        seen: set[str] = set()
        for i in full:
            if zones[r.shards[i]] not in seen:
                seen.add(zones[r.shards[i]])
                firsts.append(i)
        assert row[: min(n, nz)] == firsts[: min(n, nz)]


def test_zone_rule_by_hand() -> None:
    # docs/routers.md 2.17: ring A=20, D=40, B=50, C=80; h = 35 gives P = D, B, C, A.
    r = RingRouter(["A", "B", "C", "D"], tokens={"A": [20], "B": [50], "C": [80], "D": [40]})
    assert r.route_replicas_hash(35, 4) == [3, 1, 2, 0]
    z = {"A": "east", "B": "west", "C": "west", "D": "west"}
    assert r.route_replicas_hash(35, 3, zones=z) == [3, 0, 1]  # D, A, B
    assert r.route_replicas_hash(35, 4, zones=z) == [3, 0, 1, 2]
    rz = r.with_zones(z)
    assert rz.route_replicas_hash(35, 3) == [3, 0, 1]
    assert rz.route_replicas_hash(35, 3, zones={s: s for s in "ABCD"}) == [3, 1, 2]  # a call's zones win
    assert rz.route_hashes([35]).tolist() == [3]  # routes do not change


def test_rehash_rule_by_hand() -> None:
    # jump: the routes of h, then of mix64((h ^ "replica1") + a * GOLDEN), a = 1, 2, ...
    from shardhash._reference.jump import jump
    from shardhash._reference.memento import GOLDEN, MASK, mix64
    from shardhash._reference.replicas import REPLICA_SALT

    r = JumpRouter([f"s{i}" for i in range(7)])
    h = 0x0123456789ABCDEF
    seen: list[int] = []
    a = 0
    while len(seen) < 3:
        x = h if a == 0 else mix64(((h ^ REPLICA_SALT) + a * GOLDEN) & MASK)
        b = jump(x, 7)
        if b not in seen:
            seen.append(b)
        a += 1
    assert r.route_replicas_hash(h, 3) == seen


def test_rendezvous_is_top_scores() -> None:
    r = RendezvousRouter(["a", "b", "c", "d", "e"])
    from shardhash._reference.splitmix64 import mix64

    seeds = [mix64(int(r.hasher(s))) for s in r.shards]
    for h in (0, 1, 2**63, U64, 0x50FE4B21CF7B09CD):
        draws = [mix64(h ^ s) for s in seeds]
        assert r.route_replicas_hash(h, 5) == sorted(range(5), key=lambda i: (-draws[i], i))


# -- bad input -----------------------------------------------------------------


def test_bad_counts() -> None:
    r = JumpRouter(["a", "b", "c"])
    for bad in (0, -1):
        with pytest.raises(ValueError, match="n must be >= 1"):
            r.route_replicas("k", bad)
        with pytest.raises(ValueError, match="n must be >= 1"):
            r.route_replicas_many(["k"], bad)
    with pytest.raises(ValueError, match="n = 4 is more than the 3 shard"):
        r.route_replicas("k", 4)
    with pytest.raises(ValueError, match="n = 4 is more than the 3 shard"):
        r.route_replicas_hashes([1, 2], 4)
    wrong: list[Any] = ["2", 2.0, True, None]
    for bad in wrong:
        with pytest.raises(TypeError, match="n must be an int"):
            r.route_replicas("k", bad)
        with pytest.raises(TypeError, match="n must be an int"):
            r.route_replicas_many(["k"], bad)
    with pytest.raises(ValueError, match="n must be < 2"):
        r.route_replicas_hash(1, 2**40)


def test_bad_hashes_and_keys_name_the_position() -> None:
    r = RingRouter(["a", "b", "c"], vnodes=4)
    text: Any = "1"
    with pytest.raises(ValueError, match=r"hashes\[2\] = -5 is negative"):
        r.route_replicas_hashes([1, 2, -5], 2)
    with pytest.raises(TypeError, match=r"hashes\[1\]"):
        r.route_replicas_hashes([1, "x"], 2)
    with pytest.raises(ValueError, match="outside"):
        r.route_replicas_hash(2**64, 2)
    with pytest.raises(TypeError, match="hash must be an int"):
        r.route_replicas_hash(text, 2)
    with pytest.raises(TypeError, match="position 1"):
        r.route_replicas_many(["a", 1.5], 2)


def test_bad_out() -> None:
    r = ModuloRouter(["a", "b", "c"])
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        r.route_replicas_hashes([1, 2], 2, out=np.empty((2, 3), np.int32))
    with pytest.raises(TypeError, match="dtype int32"):
        r.route_replicas_hashes([1, 2], 2, out=np.empty((2, 2), np.int64))
    with pytest.raises(ValueError, match="C-contiguous"):
        r.route_replicas_hashes([1, 2], 2, out=np.empty((2, 4), np.int32)[:, ::2])
    ro = np.empty((2, 2), np.int32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="writable"):
        r.route_replicas_hashes([1, 2], 2, out=ro)
    out = np.full((2, 2), -7, np.int32)
    assert r.route_replicas_hashes([1, 2], 2, out=out) is out
    assert out.tolist() == r.route_replicas_hashes([1, 2], 2).tolist()
    assert r.route_replicas_hashes([], 2).shape == (0, 2)


def test_bad_zones() -> None:
    r = JumpRouter(["a", "b", "c"])
    not_str: Any = {"a": "x", "b": 3, "c": "z"}
    as_list: Any = ["x", "y", "z"]
    with pytest.raises(ValueError, match=r"no zone for shards\[2\] = 'c'"):
        r.route_replicas("k", 2, zones={"a": "x", "b": "y"})
    with pytest.raises(ValueError, match="unknown shard 'q'"):
        r.with_zones({"a": "x", "b": "y", "c": "z", "q": "w"})
    with pytest.raises(TypeError, match="zone of shard 'b' must be a non-empty str"):
        r.with_zones(not_str)
    with pytest.raises(TypeError, match="mapping"):
        r.route_replicas("k", 2, zones=as_list)


def test_ring_with_a_shard_without_tokens() -> None:
    # collisions="first" drops B's only token: the ring's lists hold A and C only
    r = RingRouter(["A", "B", "C"], tokens={"A": [5], "B": [5], "C": [9]}, collisions="first")
    assert r.route_replicas_hash(7, 2) == [2, 0]
    with pytest.raises(ValueError, match="fewer than n = 3 shards own tokens"):
        r.route_replicas_hash(7, 3)
    with pytest.raises(ValueError, match=r"hashes\[0\]"):
        r.route_replicas_hashes([7, 8], 3)
    with pytest.raises(ValueError, match=r"keys\[0\]"):
        r.route_replicas_many(["x"], 3)


@pytest.mark.parametrize("name", sorted(KEY_ROUTERS) + sorted(NO_LISTS))
def test_routers_without_lists_refuse(name: str) -> None:
    r = (KEY_ROUTERS | HASH_ROUTERS)[name]()
    assert r.replica_rule is None
    for call in (lambda: r.route_replicas(1, 1), lambda: r.route_replicas_many([1], 1),
                 lambda: r.route_replicas_hash(1, 1), lambda: r.route_replicas_hashes([1], 1)):
        with pytest.raises(TypeError, match="no replica lists"):
            call()


def test_compat_and_wrapped_routers_refuse() -> None:
    from shardhash.compat.ketama import KetamaRouter
    from shardhash.hotkeys import HotKeyRouter

    with pytest.raises(TypeError, match="no replica lists"):
        KetamaRouter(["a:1", "b:1"]).route_replicas("k", 1)
    with pytest.raises(TypeError, match="no replica lists"):
        HotKeyRouter(JumpRouter(["a", "b"]), {1: 2}).route_replicas("k", 1)
    d = DirectoryRouter(JumpRouter(["a", "b"]), {"t": "a"})
    with pytest.raises(TypeError, match="no replica lists"):
        d.route_replicas_hashes([1], 1)


# -- documents -----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(HASH_ROUTERS) + sorted(KEY_ROUTERS))
def test_documents_without_zones_are_unchanged(name: str) -> None:
    r = (HASH_ROUTERS | KEY_ROUTERS)[name]()
    doc = r.to_dict()
    assert "zones" not in doc and r.zones is None
    assert r.with_zones(None).to_json() == r.to_json()
    assert pickle.dumps(load_router(doc)) == pickle.dumps(r)


@pytest.mark.parametrize("name", sorted(HASH_ROUTERS) + sorted(KEY_ROUTERS))
def test_documents_with_zones_round_trip(name: str) -> None:
    r = (HASH_ROUTERS | KEY_ROUTERS)[name]()
    z = {s: ZONE_NAMES[i % 3] for i, s in enumerate(r.shards)}
    rz = r.with_zones(z)
    assert rz.zones == z and rz != r and rz.fingerprint != r.fingerprint
    doc = rz.to_dict()
    assert doc["zones"] == z
    back = load_router(doc)
    assert back == rz and back.zones == z
    assert pickle.loads(pickle.dumps(rz)) == rz
    assert load_router(rz.to_json()).to_json() == rz.to_json()
    assert rz.with_zones(None) == r
    assert rz.with_version(7).zones == z
    if r.replica_rule is not None:
        hs = list(range(0, 2**64 - 1, 2**58))
        n = min(3, len(r.shards))
        assert back.route_replicas_hashes(hs, n).tolist() == r.route_replicas_hashes(hs, n, zones=z).tolist()
        assert back.route_replicas_hashes(hs, n).tolist() == [router_replicas(doc, h, n) for h in hs]


def test_document_zones_are_checked() -> None:
    doc = JumpRouter(["a", "b"]).to_dict()
    del doc["fingerprint"]
    for zones, msg in (({"a": "x"}, "no zone for shards"), ({"a": "x", "b": ""}, "non-empty str"),
                       (["x", "y"], "mapping"), (None, "not null")):
        with pytest.raises(ValueError, match=msg):
            load_router({**doc, "zones": zones})


def test_zones_do_not_change_routes() -> None:
    r = RingRouter([f"s{i}" for i in range(8)], vnodes=32, hasher=Hasher("xxh64", seed=1))
    rz = r.with_zones({s: f"z{i % 3}" for i, s in enumerate(r.shards)})
    keys = list(range(2000))
    assert rz.route_many(keys).tolist() == r.route_many(keys).tolist()
    assert [rz.route(k) for k in keys[:50]] == [r.route(k) for k in keys[:50]]


def test_large_router_scalar_uses_the_heap() -> None:
    # more shards than the scalar path's stack workspace
    r = RendezvousRouter([f"s{i}" for i in range(700)])
    z = {s: f"z{i % 5}" for i, s in enumerate(r.shards)}
    hs = [3, 2**40 + 7]
    assert [r.route_replicas_hash(h, 6, zones=z) for h in hs] == r.route_replicas_hashes(hs, 6, zones=z).tolist()
    assert [r.route_replicas_hash(h, 6, zones=z) for h in hs] == [router_replicas(r.with_zones(z).to_dict(), h, 6)
                                                                   for h in hs]
