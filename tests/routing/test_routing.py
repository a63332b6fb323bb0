"""Routers: behaviour of each strategy through the public API, and the frozen vectors."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import shardhash
from shardhash import Hasher
from shardhash.routing import (
    BucketRouter,
    DirectoryRouter,
    HashRangeRouter,
    JumpRouter,
    MaglevRouter,
    ModuloRouter,
    RangeRouter,
    RendezvousRouter,
    RingRouter,
    WatermarkRouter,
    jump_hash,
    jump_hash_array,
    load_router,
)
from tests._router_cases import ALL_ROUTERS, HASH_ROUTERS
from tests._support import VECTORS as VECTOR_ROOT

VECTORS = VECTOR_ROOT / "routers"
U64 = 2**64 - 1
# Guava 31.1 Hashing.consistentHash(i, 100) for i = 0..19 (quoted in the routing issue).
GUAVA_100 = [0, 55, 62, 8, 45, 59, 86, 97, 82, 59, 73, 37, 17, 56, 86, 21, 90, 37, 38, 83]


def rand_hashes(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, U64, n, dtype=np.uint64, endpoint=True)


# -- jump ---------------------------------------------------------------------


def test_jump_hash_guava_values() -> None:
    assert [jump_hash(i, 100) for i in range(20)] == GUAVA_100
    assert jump_hash_array(np.arange(20, dtype=np.uint64), 100).tolist() == GUAVA_100


def test_jump_hash_matches_jump_consistent_hash_package() -> None:
    jump = pytest.importorskip("jump")
    keys = rand_hashes(3000, 1)
    for n in (1, 2, 10, 1000, 2**31 - 1):
        got = jump_hash_array(keys, n)
        assert got.tolist() == [jump.hash(int(k), n) for k in keys]
        assert [jump_hash(int(k), n) for k in keys[:50]] == got[:50].tolist()


def test_jump_router_matches_guava() -> None:
    r = JumpRouter([f"s{i}" for i in range(100)])
    assert r.route_hashes(np.arange(20, dtype=np.uint64)).tolist() == GUAVA_100


# -- modulo, bucket, maglev ------------------------------------------------------


def test_modulo_routes_hash_mod_n() -> None:
    r = ModuloRouter(["a", "b", "c"])
    hashes = np.array([0, 1, 2, 3, 4, U64, U64 - 1, 2**63], dtype=np.uint64)
    assert r.route_hashes(hashes).tolist() == [int(h) % 3 for h in hashes.tolist()]
    assert r.bucket_count == 3 and r.placement.tolist() == [0, 1, 2]


@pytest.mark.parametrize("b", [1, 2, 3, 7, 4096, 65537, 1000003])
def test_bucket_router_is_exact_modulo(b: int) -> None:
    placement = [("x", "y", "z")[i % 3] for i in range(b)]
    r = BucketRouter(["x", "y", "z"], placement)
    h = np.concatenate([rand_hashes(20000, b), np.array([0, 1, U64, U64 - 1, 2**63, b, b - 1], dtype=np.uint64)])
    want = np.array([(int(x) % b) % 3 for x in h.tolist()], dtype=np.int32)
    assert np.array_equal(r.route_hashes(h), want)


def test_bucket_from_ranges_floor_entry() -> None:
    r = BucketRouter.from_ranges({0: "db1", 256: "db2", 512: "db3"}, 1024)
    ids = r.placement_ids
    assert ids[0] == ids[255] == "db1" and ids[256] == ids[511] == "db2" and ids[1023] == "db3"
    assert r.shards == ("db1", "db2", "db3") and r.bucket_count == 1024
    assert [r.shards[i] for i in r.route_hashes([255, 256, 1024 + 600])] == ["db1", "db2", "db3"]


def test_maglev_table_and_defaults() -> None:
    r = MaglevRouter(["a", "b", "c", "d"])
    assert r.table_size == 65537  # the default for up to 655 shards
    counts = np.bincount(r.table, minlength=4)
    assert counts.max() - counts.min() <= 1  # Maglev fills round-robin: near-perfect balance
    h = rand_hashes(5000)
    assert np.array_equal(r.route_hashes(h), r.table[(h % np.uint64(65537)).astype(np.int64)])
    assert MaglevRouter(["a", "b"], table_size=401).table_size == 401


def test_maglev_default_table_size_ladder() -> None:
    from shardhash.routing import maglev_default_table_size
    from shardhash.routing.maglev import _is_prime

    ladder = [65537, 262147, 1048583, 4194319, 16777259, 67108879]
    for k, m in enumerate(ladder):
        assert _is_prime(m) and m >= 2**16 * 4**k
        assert not any(_is_prime(x) for x in range(2**16 * 4**k, m))  # the smallest such prime
    assert maglev_default_table_size(1) == maglev_default_table_size(655) == 65537
    assert maglev_default_table_size(656) == 262147
    assert maglev_default_table_size(671_088) == 67108879
    big = maglev_default_table_size(671_089)  # past the ladder: smallest prime >= 100 * n
    assert _is_prime(big) and not any(_is_prime(x) for x in range(67_108_900, big))
    for n in (1, 7, 100, 655, 656, 5000, 671_090):
        assert maglev_default_table_size(n) >= 100 * n


def test_maglev_default_size_is_stable_when_a_shard_is_added() -> None:
    h = rand_hashes(200_000, 7)
    four = MaglevRouter([f"s{i}" for i in range(4)])
    five = MaglevRouter([f"s{i}" for i in range(5)])
    assert four.table_size == five.table_size
    a, b = four.route_hashes(h), five.route_hashes(h)
    moved = a != b
    assert 0.18 <= moved.mean() <= 0.23  # ideal 1/5
    assert (b[moved] == 4).mean() > 0.95  # nearly all moved keys go to the new shard


def test_maglev_stored_documents_keep_their_table_size() -> None:
    old = MaglevRouter(["a", "b", "c", "d"], table_size=401)
    back = load_router(old.to_json())
    assert back.table_size == 401 and back == old


def test_maglev_weights_shift_table_share() -> None:
    r = MaglevRouter(["a", "b", "c"], table_size=1009, weights={"a": 3})
    counts = np.bincount(r.table, minlength=3)
    assert abs(counts[0] / counts.sum() - 0.6) < 0.01


# -- rings ---------------------------------------------------------------------


def test_seed_ring_routes() -> None:
    """The ring A=20, B=50, C=80 plus D=40, from the issue."""
    r = RingRouter(["A", "B", "C", "D"], tokens={"A": [20], "B": [50], "C": [80], "D": [40]})
    hashes = [35, 40, 20, 21, 45, 51, 81, 90, 0]
    assert [r.shards[i] for i in r.route_hashes(hashes)] == ["D", "D", "A", "D", "B", "C", "A", "A", "A"]
    assert [r.shards[r.route_hash(h)] for h in hashes] == ["D", "D", "A", "D", "B", "C", "A", "A", "A"]
    before = RingRouter(["A", "B", "C"], tokens={"A": [20], "B": [50], "C": [80]})
    assert [before.shards[i] for i in before.route_hashes([35, 40, 21])] == ["B", "B", "B"]


def test_ring_owned_ranges_cover_the_space() -> None:
    r = RingRouter(["A", "B", "C", "D"], tokens={"A": [20], "B": [50], "C": [80], "D": [40]})
    assert r.owned_ranges() == [(0, 20, 0), (21, 40, 3), (41, 50, 1), (51, 80, 2), (81, U64, 0)]
    big = RingRouter([f"s{i}" for i in range(8)], vnodes=32)
    ranges = big.owned_ranges()
    assert ranges[0][0] == 0 and ranges[-1][1] == U64
    assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))
    probe = rand_hashes(2000, 5)
    los = [lo for lo, _, _ in ranges]
    import bisect
    want = [ranges[bisect.bisect_right(los, int(h)) - 1][2] for h in probe]
    assert big.route_hashes(probe).tolist() == want


def test_ring_token_identities_are_hasher_of_id_colon_n() -> None:
    h = Hasher("xxh64", seed=1)
    r = RingRouter(["x", "y"], vnodes=3, hasher=h)
    want = sorted(int(h(f"{s}:{i}")) for s in ("x", "y") for i in range(3))
    assert r.tokens.tolist() == want
    w = RingRouter(["x", "y"], vnodes=4, weights={"x": 1.5}, hasher=h)
    assert np.bincount(w.token_owners).tolist() == [6, 4]


def test_ring_adding_a_shard_keeps_existing_tokens() -> None:
    a = RingRouter(["a", "b", "c"], vnodes=50)
    b = RingRouter(["a", "b", "c", "d"], vnodes=50)
    old = set(a.tokens.tolist())
    assert old <= set(b.tokens.tolist())


def test_ring_explicit_tokens_accessor() -> None:
    given = {"B": [50, 10], "A": [20]}
    r = RingRouter(["A", "B"], tokens=given, collisions="first")
    assert r.explicit_tokens == {"A": (20,), "B": (50, 10)}
    assert r.collisions == "first"
    assert r.explicit_tokens == {s: tuple(v) for s, v in r.to_dict()["params"]["tokens"].items()}
    r.explicit_tokens["A"] = (1,)  # a copy: the router does not change
    assert r.explicit_tokens["A"] == (20,)
    assert r.tokens.tolist() == [10, 20, 50]
    assert RingRouter(["A", "B"], vnodes=3).explicit_tokens is None
    assert RingRouter(["A", "B"], vnodes=3).collisions == "error"


def test_ring_collision_rules() -> None:
    with pytest.raises(ValueError, match=r"A:0 and B:0 both sit at position 7"):
        RingRouter(["A", "B"], tokens={"A": [7], "B": [7]})
    r = RingRouter(["B", "A"], tokens={"A": [7, 9], "B": [7]}, collisions="first")
    assert r.tokens.tolist() == [7, 9] and r.shards[r.token_owners[0]] == "A"


def test_ring_with_32_bit_hasher_indexes_low_bits() -> None:
    r = RingRouter([f"s{i}" for i in range(20)], vnodes=64, hasher=Hasher("murmur3_32"))
    assert int(r.tokens.max()) < 2**32
    keys = [f"k{i}" for i in range(3000)]
    got = r.route_many(keys)
    toks, owners = r.tokens.tolist(), r.token_owners.tolist()
    import bisect
    want = []
    for k in keys:
        i = bisect.bisect_left(toks, int(r.hasher(k)))
        want.append(owners[i % len(toks)])
    assert got.tolist() == want


def test_hash_range_router() -> None:
    r = HashRangeRouter([2**63], ["low", "high"])
    assert [r.shards[i] for i in r.route_hashes([0, 2**63 - 1, 2**63, U64])] == ["low", "low", "high", "high"]
    r2 = HashRangeRouter([10, 20, 30], ["a", "b", "a", "c"])
    assert r2.shards == ("a", "b", "c")
    assert r2.route_hashes([9, 10, 19, 20, 29, 30, U64]).tolist() == [0, 1, 1, 0, 0, 2, 2]
    assert r2.owned_ranges() == [(0, 9, 0), (10, 19, 1), (20, 29, 0), (30, U64, 2)]
    # A 32-bit hasher indexes the low 32 bits; splits and hashes beyond still route exactly.
    r3 = HashRangeRouter([2**31, 3 * 2**30, 2**40], ["a", "b", "c", "d"], hasher=Hasher("murmur3_32"))
    probe = [0, 2**31 - 1, 2**31, 3 * 2**30 - 1, 3 * 2**30, 2**32 - 1, 2**40 - 1, 2**40, U64]
    assert r3.route_hashes(probe).tolist() == [0, 0, 1, 1, 2, 2, 2, 3, 3]


# -- rendezvous ------------------------------------------------------------------


def test_rendezvous_is_argmax_of_documented_draws() -> None:
    from shardhash._reference.splitmix64 import mix64

    r = RendezvousRouter(["a", "b", "c", "d"])
    seeds = [mix64(int(r.hasher(s))) for s in r.shards]
    for h in rand_hashes(500, 3).tolist():
        draws = [mix64(h ^ s) for s in seeds]
        assert r.route_hash(h) == draws.index(max(draws))


def test_rendezvous_weights_share() -> None:
    r = RendezvousRouter(["a", "b", "c"], weights={"a": 2})
    c = np.bincount(r.route_hashes(rand_hashes(60000, 9)), minlength=3) / 60000
    assert abs(c[0] - 0.5) < 0.015 and abs(c[1] - 0.25) < 0.015


# -- ranges on raw keys ----------------------------------------------------------------


def test_range_router_issue_example() -> None:
    r = RangeRouter([1_000_000, 2_000_000], ["first", "second", "third"])
    assert [r.route(k) for k in (0, 999_999, 1_000_000, 1_999_999, 2_000_000, 10**12)] == [
        "first", "first", "second", "second", "third", "third"]
    arr = np.array([0, 999_999, 1_000_000, 1_999_999, 2_000_000], dtype=np.int64)
    assert r.route_many(arr).tolist() == [0, 0, 1, 1, 2]
    assert r.route_many(arr.astype(np.uint32)).tolist() == [0, 0, 1, 1, 2]
    assert r.route_many(list(arr.tolist())).tolist() == [0, 0, 1, 1, 2]


def test_range_router_splits_outside_dtype_range() -> None:
    r = RangeRouter([-(2**70), 2**70], ["low", "mid", "high"])
    assert r.route_many(np.array([-5, 0, 5], dtype=np.int8)).tolist() == [1, 1, 1]
    assert r.route(2**70) == "high"


def test_range_router_strings_and_sample() -> None:
    r = RangeRouter(["g", "p"], ["a", "b", "c"])
    keys = ["", "f", "g", "o", "p", "zz"]
    assert [r.route(k) for k in keys] == ["a", "a", "b", "b", "c", "c"]
    assert r.route_many(np.array(keys)).tolist() == [0, 0, 1, 1, 2, 2]
    s = RangeRouter.from_sample(np.arange(10_000), 4)
    assert s.splits == (2500, 5000, 7500)
    counts = np.bincount(s.route_many(np.arange(10_000)))
    assert counts.tolist() == [2500] * 4


# -- directory, watermark, prefixes ---------------------------------------------------------


def test_directory_overrides() -> None:
    base = JumpRouter(["a", "b"])
    r = DirectoryRouter(base, {"giant": "c", "t-1": "a"})
    assert r.shards == ("a", "b", "c")
    assert r.route("giant") == "c" and r.route("t-1") == "a"
    keys = [f"k{i}" for i in range(500)]
    assert r.route_many(keys).tolist() == base.route_many(keys).tolist()
    assert r.route_many(["giant"] + keys).tolist()[0] == 2


def test_watermark_router() -> None:
    old, new = ModuloRouter(["a", "b"]), JumpRouter(["b", "c", "d"])
    r = WatermarkRouter(old, new, 1000)
    assert r.shards == ("a", "b", "c", "d")
    ids = list(range(990, 1010)) + [0, 2**62]
    for k in ids:
        assert r.route(k) == (new if k >= 1000 else old).route(k)
    assert [r.shards[i] for i in r.route_many(ids)] == [r.route(k) for k in ids]
    assert [r.shards[i] for i in r.route_many(np.array(ids, dtype=np.uint64))] == [r.route(k) for k in ids]
    lower = r.lowered(500)
    assert lower.version == r.version + 1 and lower.route(600) == new.route(600)


def test_key_prefix_keeps_tenants_together() -> None:
    r = RingRouter(["a", "b", "c", "d"], vnodes=20, key_prefix=1)
    plain = RingRouter(["a", "b", "c", "d"], vnodes=20)
    for t in ("t1", "t2", 3):
        want = plain.route(t)
        assert {r.route((t, u)) for u in range(30)} == {want}
        assert r.route(t) == want
    keys = [(t, u) for t in ("t1", "t2") for u in range(10)]
    assert r.route_many(keys).tolist() == [r.route_index(k) for k in keys]
    two = JumpRouter(["a", "b", "c"], key_prefix=2)
    assert two.route(("x", 1, 5)) == two.route(("x", 1, 9)) == JumpRouter(["a", "b", "c"]).route(("x", 1))


# -- batch options ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(HASH_ROUTERS))
def test_out_and_threads_do_not_change_results(name: str) -> None:
    r = HASH_ROUTERS[name]()
    h = rand_hashes(300_000, 4)
    one = r.route_hashes(h, threads=1)
    out = np.full(h.shape[0], -1, dtype=np.int32)
    assert r.route_hashes(h, out=out, threads=3) is out
    assert np.array_equal(out, one)


@pytest.mark.parametrize("name", sorted(ALL_ROUTERS))
def test_routes_on_hash_means_route_many_is_route_hashes_of_hash_array(name: str) -> None:
    r = ALL_ROUTERS[name]()
    keys: list[Any] = [f"k{i}" for i in range(400)] + list(range(400))
    if name == "range_str":
        keys = keys[:400]
    elif name in ("range_int", "watermark"):
        keys = keys[400:]
    elif name == "jump_prefix":
        keys = [(k, 1) for k in keys]
    expected = name not in ("range_int", "range_str", "watermark", "jump_prefix")
    assert r.routes_on_hash is expected
    if expected:
        assert r.route_many(keys).tolist() == r.route_hashes(r.hasher.hash_array(keys)).tolist()
    elif name == "jump_prefix":  # routes on the tenant's hash, not the whole key's
        assert r.route_many(keys).tolist() != r.route_hashes(r.hasher.hash_array(keys)).tolist()
    else:
        with pytest.raises(TypeError):
            r.route_hashes([1, 2])


def test_routes_on_hash_is_false_when_route_many_is_overridden() -> None:
    from shardhash.routing import Router, register_router_type

    @register_router_type("test_parity")
    class ParityRouter(Router):
        def __init__(self, shards: list[str], **kw: Any) -> None:
            super().__init__(shards, **kw)
            self._use_jump()
            self._finish()

        def route_many(self, keys: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
            return np.array([int(k) % 2 for k in keys], dtype=np.int32)

    r = ParityRouter(["a", "b"])
    assert not r.routes_on_hash
    assert r.route_many([0, 1, 2]).tolist() == [0, 1, 0]


def test_plan_uses_routes_on_hash() -> None:
    from shardhash import plan
    from shardhash.compat.ketama import KetamaRouter

    assert plan._hash_routed(JumpRouter(["a", "b", "c"]))
    assert not plan._hash_routed(JumpRouter(["a", "b"], key_prefix=1))
    assert not plan._hash_routed(RangeRouter([10], ["a", "b"]))
    assert not plan._hash_routed(KetamaRouter(["a", "b"]))
    assert not plan._hash_routed(object())


def test_public_exports() -> None:
    for name in ("JumpRouter", "RingRouter", "load_router", "jump_hash", "Router", "register_router_type"):
        assert hasattr(shardhash, name)


# -- frozen vectors ----------------------------------------------------------------------


def test_jump_vectors() -> None:
    data = json.loads((VECTORS / "jump_hash.json").read_text(encoding="utf-8"))
    for case in data["cases"]:
        keys = np.array(case["keys"], dtype=np.uint64)
        assert jump_hash_array(keys, case["num_buckets"]).tolist() == case["buckets"]


def _vector_files() -> list[str]:
    return sorted(p.name for p in VECTORS.glob("*.json") if p.name != "jump_hash.json")


def test_every_router_case_has_vectors() -> None:
    assert {f"{n}.json" for n in ALL_ROUTERS} <= set(_vector_files())


@pytest.mark.parametrize("fname", _vector_files())
def test_router_vectors(fname: str) -> None:
    vec = json.loads((VECTORS / fname).read_text(encoding="utf-8"))
    r = load_router(vec["document"])
    assert r.fingerprint == vec["document"]["fingerprint"]
    if "hashes" in vec:
        assert r.route_hashes(vec["hashes"]).tolist() == vec["routes"]
    keys = [tuple(k) if t else k for k, t in zip(vec["keys"], vec["key_is_tuple"])]
    assert [r.route_index(k) for k in keys] == vec["key_routes"]
    assert r.route_many(keys).tolist() == vec["key_routes"]


def test_docstring_examples() -> None:
    import doctest

    import shardhash.routing

    res = doctest.testmod(shardhash.routing)
    assert res.attempted > 20 and res.failed == 0
