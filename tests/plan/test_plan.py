"""Migration planning (shardhash.plan)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash import Hasher, plan, routing
from shardhash.routing.bucket import _balanced_placement
from tests._support import ill_typed, present

U64 = (1 << 64) - 1
FOUR = ["s0", "s1", "s2", "s3"]
FIVE = FOUR + ["s4"]


def _rand_keys(n: int, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1 << 62, size=n, dtype=np.int64)


def _reference_matrix(
    old: routing.Router, new: routing.Router, keys: Any, weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    oi = old.route_many(keys).astype(np.int64)
    ni = new.route_many(keys).astype(np.int64)
    m = np.bincount(oi * len(new.shards) + ni, minlength=len(old.shards) * len(new.shards))
    wm = None
    if weights is not None:
        wm = np.bincount(oi * len(new.shards) + ni, weights=weights,
                         minlength=len(old.shards) * len(new.shards)).reshape(len(old.shards), -1)
    return m.reshape(len(old.shards), -1), wm, oi, ni


def _routers_4_to_5() -> list[tuple[routing.Router, routing.Router]]:
    old = routing.BucketRouter(FOUR, [FOUR[i % 4] for i in range(256)])
    return [(routing.ModuloRouter(FOUR), routing.ModuloRouter(FIVE)),
            (routing.JumpRouter(FOUR), routing.JumpRouter(FIVE)),
            (routing.RingRouter(FOUR, vnodes=64), routing.RingRouter(FIVE, vnodes=64)),
            (routing.RendezvousRouter(FOUR), routing.RendezvousRouter(FIVE)),
            (routing.MaglevRouter(FOUR, table_size=1009), routing.MaglevRouter(FIVE, table_size=1009)),
            (old, plan.add_shards(old, "s4")[0])]


# ------------------------------------------------------------------- diff


@pytest.mark.parametrize("pair", range(6))
def test_diff_matches_route_many_reference(pair: int) -> None:
    routers = _routers_4_to_5()
    assert len(routers) == 6
    old, new = routers[pair]
    keys = _rand_keys(50_000)
    w = (keys % 1000).astype(np.float64)
    ref, wref, oi, ni = _reference_matrix(old, new, keys, w)
    rep = plan.diff(old, new, keys, weights=w, chunk_size=7_777, per_key=True)
    np.testing.assert_array_equal(rep.matrix, ref)
    np.testing.assert_allclose(present(rep.weighted_matrix), present(wref))
    np.testing.assert_array_equal(rep.sources, oi)
    np.testing.assert_array_equal(rep.destinations, ni)
    moved = int(sum(ref[i, j] for i in range(4) for j in range(5) if old.shards[i] != new.shards[j]))
    assert rep.moved == moved
    assert rep.total == len(keys)
    np.testing.assert_array_equal(rep.before, np.bincount(oi, minlength=4))
    np.testing.assert_array_equal(rep.after, np.bincount(ni, minlength=5))
    assert rep.ideal_fraction == pytest.approx(0.2, abs=1e-3)


@given(st.lists(st.one_of(st.integers(-(2**63), 2**64 - 1), st.text(max_size=8)), max_size=60),
       st.integers(1, 17))
def test_diff_any_keys_any_chunking(keys: list[int | str], chunk: int) -> None:
    old, new = routing.JumpRouter(["a", "b", "c"]), routing.ModuloRouter(["a", "b", "c", "d"])
    rep = plan.diff(old, new, keys, chunk_size=chunk)
    if keys:
        ref, _, _, _ = _reference_matrix(old, new, keys)
        np.testing.assert_array_equal(rep.matrix, ref)
    else:
        assert rep.total == 0 and rep.moved_fraction == 0.0


def test_modulo_3_to_4_moves_three_quarters() -> None:
    old, new = routing.ModuloRouter(["a", "b", "c"]), routing.ModuloRouter(["a", "b", "c", "d"])
    ranges = plan.moved_ranges(old, new)
    # Exactly 9 of the 12 residues mod lcm(3, 4) change owner.
    assert len(ranges) == 9
    assert sorted(present(r.bucket) for r in ranges) == [r for r in range(12) if r % 3 != r % 4]
    assert all(r.modulus == 12 for r in ranges)
    assert sum(r.share for r in ranges) == pytest.approx(0.75, abs=1e-15)
    rep = plan.diff(old, new, _rand_keys(200_000))
    assert rep.moved_fraction == pytest.approx(0.75, abs=0.005)
    assert rep.ideal_fraction == 0.25


def test_modulo_residue_ranges_are_exact() -> None:
    old, new = routing.ModuloRouter(["a", "b", "c"]), routing.ModuloRouter(["a", "b", "c", "d"])
    ranges = {r.bucket: r for r in plan.moved_ranges(old, new)}
    h = np.concatenate([np.arange(0, 1000, dtype=np.uint64), np.arange(U64 - 999, U64, dtype=np.uint64)])
    o = np.asarray(old.shards)[old.route_hashes(h)]
    n = np.asarray(new.shards)[new.route_hashes(h)]
    for hv, a, b in zip(h.tolist(), o, n):
        r = ranges.get(hv % 12)
        assert (a != b) == (r is not None)
        if r is not None:
            assert (r.source, r.destination) == (a, b) and r.lo <= hv <= r.hi


def test_jump_4_to_5_moves_only_to_new_shard() -> None:
    old, new = routing.JumpRouter(FOUR), routing.JumpRouter(FIVE)
    rep = plan.diff(old, new, _rand_keys(200_000))
    assert rep.moved == int(rep.matrix[:, 4].sum())
    assert rep.moved_fraction == pytest.approx(0.2, abs=0.01)
    ranges = plan.moved_ranges(old, new)
    assert {(r.source, r.destination) for r in ranges} == {(s, "s4") for s in FOUR}
    assert sum(r.share for r in ranges) == pytest.approx(0.2)
    assert not any(r.exact for r in ranges)


def test_diff_streams_chunks_from_a_reader(tmp_path: Path) -> None:
    from shardhash.io import open_ids

    keys = _rand_keys(30_000)
    p = tmp_path / "ids.npy"
    np.save(p, keys)
    old, new = routing.ModuloRouter(FOUR), routing.JumpRouter(FIVE)
    a = plan.diff(old, new, open_ids(p, chunk_size=4096))
    b = plan.diff(old, new, keys)
    np.testing.assert_array_equal(a.matrix, b.matrix)


def test_diff_on_chunk_and_progress_see_every_key() -> None:
    keys = _rand_keys(10_000)
    old, new = routing.ModuloRouter(FOUR), routing.ModuloRouter(FIVE)
    seen = []
    sizes: list[int] = []
    plan.diff(old, new, keys, chunk_size=3000,
              on_chunk=lambda k, o, n, w: seen.append((np.array(k), o.copy(), n.copy())),
              progress=sizes.append)
    assert sizes == [3000, 3000, 3000, 1000]
    np.testing.assert_array_equal(np.concatenate([s[0] for s in seen]), keys)
    np.testing.assert_array_equal(np.concatenate([s[2] for s in seen]), new.route_many(keys))


def test_diff_shard_identity_not_index() -> None:
    # The same shard at another index is not a move.
    old = routing.ModuloRouter(["a", "b"])
    new = routing.ModuloRouter(["b", "a"])
    rep = plan.diff(old, new, _rand_keys(1000))
    assert rep.moved == rep.total  # every key changes shard: h%2==0 goes a -> b
    same = routing.ModuloRouter(["a", "b"], version=5)
    assert plan.diff(old, same, _rand_keys(1000)).moved == 0


def test_diff_with_different_hashers_routes_each_its_own_way() -> None:
    old = routing.ModuloRouter(FOUR)
    new = routing.ModuloRouter(FOUR, hasher=Hasher("murmur3_32"))
    keys = _rand_keys(20_000)
    ref, _, _, _ = _reference_matrix(old, new, keys)
    np.testing.assert_array_equal(plan.diff(old, new, keys).matrix, ref)
    with pytest.raises(ValueError, match="hash keys differently"):
        plan.moved_ranges(old, new)


def test_report_serialises() -> None:
    rep = plan.diff(routing.ModuloRouter(FOUR), routing.ModuloRouter(FIVE), _rand_keys(5000), weights=np.ones(5000))
    d = rep.to_dict()
    import json

    json.dumps(d)
    assert d["moved"] == rep.moved and len(d["matrix"]) == 4
    assert sum(m["keys"] for m in d["moves"]) == rep.moved
    assert d["moved_weight"] == pytest.approx(rep.moved)
    assert "moved" in rep.summary()


def test_diff_errors() -> None:
    r = routing.ModuloRouter(FOUR)
    with pytest.raises(TypeError, match="old must be a shardhash router"):
        plan.diff("x", r, [1])
    with pytest.raises(ValueError, match="weights has 2 values"):
        plan.diff(r, r, [1, 2, 3], weights=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"weights\[0\] = -1.0"):
        plan.diff(r, r, [1], weights=[-1.0])
    with pytest.raises(ValueError, match="weights are missing for some chunks"):
        plan.diff(r, r, iter([(np.arange(3), np.ones(3)), np.arange(3)]))


# ------------------------------------------------------------ ideal share


def test_ideal_fraction() -> None:
    assert plan.ideal_fraction(routing.JumpRouter(FOUR), routing.JumpRouter(FIVE)) == 0.2
    assert plan.ideal_fraction(routing.JumpRouter(FIVE), routing.JumpRouter(FOUR)) == 0.2
    assert plan.ideal_fraction(routing.JumpRouter(FOUR), routing.ModuloRouter(FOUR)) == 0.0
    assert plan.ideal_fraction(routing.JumpRouter(["a"]), routing.JumpRouter(["b"])) == 1.0


# ----------------------------------------------------------------- rings


def test_seed_ring_moved_range() -> None:
    old = routing.RingRouter(["A", "B", "C"], tokens={"A": [20], "B": [50], "C": [80]})
    new = routing.RingRouter(["A", "B", "C", "D"], tokens={"A": [20], "B": [50], "C": [80], "D": [40]})
    ranges = plan.moved_ranges(old, new)
    assert [(r.lo, r.hi, r.source, r.destination) for r in ranges] == [(21, 40, "B", "D")]
    assert ranges[0].share == 20 / 2**64
    new2, steps = plan.add_shards(old, "D", tokens={"D": [40]})
    assert new2.version == old.version + 1
    assert [(s.lo, s.hi, s.source, s.destination) for s in steps] == [(21, 40, "B", "D")]


def _check_ranges_exact(old: routing.Router, new: routing.Router, n: int = 100_000) -> list[plan.MovedRange]:
    """Every random hash moves iff it falls in a reported range, with that source/destination."""
    ranges = plan.moved_ranges(old, new)
    h = np.random.default_rng(3).integers(0, 2**64, size=n, dtype=np.uint64)
    o = np.asarray(old.shards, dtype=object)[old.route_hashes(h)]
    d = np.asarray(new.shards, dtype=object)[new.route_hashes(h)]
    moved = o != d
    got = np.zeros(n, dtype=bool)
    for r in ranges:
        if r.kind == "range":
            sel = (h >= np.uint64(present(r.lo))) & (h <= np.uint64(present(r.hi)))
        else:
            sel = (h % np.uint64(present(r.modulus))) == np.uint64(present(r.bucket))
        assert (o[sel] == r.source).all() and (d[sel] == r.destination).all()
        assert not got[sel].any()
        got |= sel
    np.testing.assert_array_equal(got, moved)
    return ranges


def test_ring_add_moves_only_to_new_shard_exactly() -> None:
    old = routing.RingRouter(FOUR, vnodes=64)
    new, steps = plan.add_shards(old, "s4")
    ranges = _check_ranges_exact(old, new)
    assert {r.destination for r in ranges} == {"s4"}
    assert 0.12 < sum(r.share for r in ranges) < 0.28
    assert new.version == old.version + 1


def test_ring_remove_moves_only_removed_shard() -> None:
    old = routing.RingRouter(FIVE, vnodes=32)
    new, steps = plan.remove_shards(old, "s2")
    ranges = _check_ranges_exact(old, new)
    assert {r.source for r in ranges} == {"s2"}
    assert {s.source for s in steps} == {"s2"}


# --------------------------------------------------------------- buckets


def _counts(router: routing.BucketRouter) -> Counter[str]:
    return Counter(router.shards[i] for i in np.asarray(router.placement).tolist())


@pytest.mark.parametrize("buckets", [4096, 1024, 17])
def test_bucket_add_is_balanced_and_minimal(buckets: int) -> None:
    old = routing.BucketRouter(FOUR, [FOUR[i * 4 // buckets] for i in range(buckets)])
    new, steps = plan.add_shards(old, ["s4"])
    c_old, c_new = _counts(old), _counts(new)
    assert max(c_new.values()) - min(c_new.values()) <= 1
    assert sum(c_new.values()) == buckets
    pl_old = np.asarray(old.placement)
    pl_new = np.asarray(new.placement)
    changed = np.flatnonzero(np.asarray(old.shards)[pl_old] != np.asarray(new.shards)[pl_new])
    # Only buckets that must move do (the new shard's share), and only onto it.
    assert len(changed) == c_new["s4"]
    assert all(new.shards[pl_new[b]] == "s4" for b in changed)
    # Every old shard gives only its surplus.
    for s in FOUR:
        assert c_old[s] - c_new[s] >= 0
    ranges = _check_ranges_exact(old, new)
    assert sorted(present(r.bucket) for r in ranges) == changed.tolist()
    assert all(r.kind == "bucket" for r in ranges)
    assert new.version == old.version + 1


def test_bucket_remove_and_reweight() -> None:
    old = routing.BucketRouter(FIVE, [FIVE[i % 5] for i in range(1000)])
    new, steps = plan.remove_shards(old, "s1")
    c = _counts(new)
    assert set(c) == {"s0", "s2", "s3", "s4"} and set(c.values()) == {250}
    assert {s.source for s in steps} == {"s1"}
    new2, steps2 = plan.reweight(old, {"s0": 3.0})
    c2 = _counts(new2)
    # s0 target 3/7 of 1000 (428 or 429); others 1/7 each.
    assert c2["s0"] in (428, 429)
    assert max(c2[s] for s in FIVE[1:]) - min(c2[s] for s in FIVE[1:]) <= 1
    assert {s.destination for s in steps2} == {"s0"}


def test_balanced_placement_minimal_property() -> None:
    @given(st.lists(st.sampled_from("abcd"), min_size=1, max_size=200), st.sampled_from(["ab", "abc", "abcde", "e"]))
    def check(placement: list[str], shards_text: str) -> None:
        shards = list(shards_text)
        new = _balanced_placement(placement, shards, None)
        c = Counter(new)
        assert set(c) <= set(shards)
        assert max(c.get(s, 0) for s in shards) - min(c.get(s, 0) for s in shards) <= 1
        cur = Counter(p for p in placement if p in shards)
        moved = sum(1 for a, b in zip(placement, new) if a != b)
        # Minimal: the number of moves is the total surplus over the targets.
        surplus = sum(max(0, Counter(placement)[s] - c.get(s, 0)) for s in set(placement))
        assert moved == surplus
        for a, b in zip(placement, new):
            if a != b:
                assert c[b] > cur.get(b, 0)  # only gaining shards receive

    check()


# ----------------------------------------------------------------- steps


def test_steps_are_capped_ordered_and_cover_the_move() -> None:
    old = routing.RingRouter(FOUR, vnodes=16)
    new, steps = plan.add_shards(old, "s4", max_step_share=0.01, total_keys=1_000_000)
    assert [s.order for s in steps] == list(range(1, len(steps) + 1))
    assert all(s.share <= 0.01 + 1e-12 for s in steps)
    total = sum(r.share for r in plan.moved_ranges(old, new))
    assert sum(s.share for s in steps) == pytest.approx(total)
    assert sum(present(s.est_keys) for s in steps) == pytest.approx(total * 1_000_000)
    # Round-robin: the first steps take different sources.
    first = [s.source for s in steps[:4]]
    assert len(set(first)) == len(first)


def test_steps_with_keys_estimate_exact_pair_totals() -> None:
    old = routing.JumpRouter(FOUR)
    keys = _rand_keys(40_000)
    w = np.full(len(keys), 3.0)
    new, steps = plan.add_shards(old, "s4", keys=keys, key_weights=w, max_step_share=0.02)
    rep = plan.diff(old, new, keys)
    assert sum(present(s.est_keys) for s in steps) == pytest.approx(rep.moved)
    assert sum(present(s.est_bytes) for s in steps) == pytest.approx(3.0 * rep.moved)
    assert all(s.kind == "filter" for s in steps)


def test_bucket_steps_group_whole_buckets() -> None:
    old = routing.BucketRouter(FOUR, [FOUR[i * 4 // 4096] for i in range(4096)])
    new, steps = plan.add_shards(old, "s4", max_step_share=0.01)
    assert all(s.kind == "buckets" for s in steps)
    assert all(s.share <= 0.01 + 1e-12 for s in steps)
    moved = sorted(b for s in steps for b in present(s.buckets))
    assert moved == sorted(present(r.bucket) for r in plan.moved_ranges(old, new))


def test_planner_errors() -> None:
    r = routing.JumpRouter(FOUR)
    with pytest.raises(ValueError, match="'s0' is already in the topology"):
        plan.add_shards(r, "s0")
    with pytest.raises(ValueError, match="not in the topology"):
        plan.remove_shards(r, "zz")
    with pytest.raises(ValueError, match="cannot remove every shard"):
        plan.remove_shards(r, FOUR)
    with pytest.raises(ValueError, match="given twice"):
        plan.add_shards(r, ["x", "x"])
    with pytest.raises(TypeError, match="non-empty strings"):
        plan.add_shards(r, [ill_typed(1)])
    with pytest.raises(ValueError, match="JumpRouter has no weights"):
        plan.reweight(r, {"s0": 2})
    with pytest.raises(ValueError, match=r"weights\['s0'\] = -1"):
        plan.reweight(r, {"s0": -1})
    with pytest.raises(ValueError, match="max_step_share"):
        plan.add_shards(r, "x", max_step_share=0)
    with pytest.raises(ValueError, match="weights given for shards that are not being added"):
        plan.add_shards(r, "x", weights={"s0": 2.0})


def test_moved_ranges_unsupported_pairs() -> None:
    with pytest.raises(ValueError, match="use plan.diff"):
        plan.moved_ranges(routing.JumpRouter(FOUR), routing.ModuloRouter(FOUR))
    with pytest.raises(ValueError, match="use plan.diff"):
        plan.moved_ranges(routing.RendezvousRouter(FOUR), routing.RendezvousRouter(FIVE))


def test_rendezvous_steps_by_sampling() -> None:
    old = routing.RendezvousRouter(FOUR)
    new, steps = plan.add_shards(old, "s4", max_step_share=0.05)
    assert {s.destination for s in steps} == {"s4"}
    assert sum(s.share for s in steps) == pytest.approx(0.2, abs=0.01)
    assert all(s.share <= 0.05 + 1e-12 for s in steps)
    per_source: defaultdict[str, float] = defaultdict(float)
    for s in steps:
        per_source[s.source] += s.share
    assert all(math.isclose(v, 0.05, rel_tol=0.1) for v in per_source.values())
    # The steps' hash filters of one pair tile the hash space.
    lo_hi = sorted((present(s.lo), present(s.hi)) for s in steps if s.source == "s0")
    assert lo_hi[0][0] == 0 and lo_hi[-1][1] == U64
    assert all(a[1] + 1 == b[0] for a, b in zip(lo_hi, lo_hi[1:]))


# ------------------------------------------------------- more strategies


def test_diff_writes_moved_keys(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    old, new = routing.JumpRouter(FOUR), routing.JumpRouter(FIVE)
    keys = [f"user:{i}" for i in range(5000)]
    w = np.arange(5000, dtype=float)
    rep = plan.diff(old, new, keys, weights=w, moves=tmp_path / "m.parquet", chunk_size=999)
    t = pq.read_table(tmp_path / "m.parquet")
    assert t.num_rows == rep.moved
    o = old.route_many(keys)
    n = new.route_many(keys)
    moved = [i for i in range(5000) if old.shards[o[i]] != new.shards[n[i]]]
    assert t.column("id").to_pylist() == [keys[i] for i in moved]
    assert t.column("source").to_pylist() == [old.shards[o[i]] for i in moved]
    assert t.column("destination").to_pylist() == [new.shards[n[i]] for i in moved]
    assert t.column("weight").to_pylist() == [float(i) for i in moved]
    # Nothing moves: a valid file with the columns and no rows.
    plan.diff(old, old, keys, moves=tmp_path / "none.csv")
    assert (tmp_path / "none.csv").read_text().splitlines() == ["id,source,destination"]


def test_diff_over_raw_key_routers() -> None:
    old = routing.RangeRouter([1000, 2000], ["a", "b", "c"])
    new = routing.RangeRouter([1500], ["a", "c"])
    keys = np.arange(0, 3000, dtype=np.int64)
    rep = plan.diff(old, new, keys, chunk_size=700)
    ref, _, _, _ = _reference_matrix(old, new, keys)
    np.testing.assert_array_equal(rep.matrix, ref)
    # b's keys below 1500 go to a, the rest of b to c.
    assert rep.moved == 1000
    with pytest.raises(ValueError, match="use plan.diff"):
        plan.moved_ranges(old, new)
    d = routing.DirectoryRouter(routing.JumpRouter(FOUR), {7: "s3", 8: "s0"})
    rep2 = plan.diff(routing.JumpRouter(FOUR), d, keys)
    assert rep2.moved <= 2


def test_hash_range_add_split_and_remove_merge() -> None:
    old = routing.HashRangeRouter([2**62, 2**63, 3 * 2**62], FOUR)
    new, steps = plan.add_shards(old, ["s4", "s5"])
    assert new.version == old.version + 1
    ranges = _check_ranges_exact(old, new)
    # The two widest ranges (all equal: the first two) are split in half.
    assert [(r.lo, r.hi, r.source, r.destination) for r in ranges] == [
        (2**61, 2**62 - 1, "s0", "s4"), (2**62 + 2**61, 2**63 - 1, "s1", "s5")]
    back, steps2 = plan.remove_shards(new, ["s4", "s5"])
    assert back.owned_ranges() == old.owned_ranges()
    assert {(s.source, s.destination) for s in steps2} == {("s4", "s0"), ("s5", "s1")}
    assert plan.ideal_fraction(old, new) == pytest.approx(0.25)


def test_ring_reweight_keeps_every_token() -> None:
    old = routing.RingRouter(FOUR, vnodes=32)
    new, steps = plan.reweight(old, {"s2": 2.0})
    assert set(old.tokens.tolist()) <= set(new.tokens.tolist())
    ranges = _check_ranges_exact(old, new)
    assert {r.destination for r in ranges} == {"s2"}
    assert new.weights == {"s2": 2.0}
    assert plan.ideal_fraction(old, new) == pytest.approx(0.4 - 0.25)  # s2: 1/4 -> 2/5


def test_maglev_keeps_its_table_size_and_moves_little() -> None:
    old = routing.MaglevRouter(FOUR, table_size=4099)
    new, steps = plan.add_shards(old, "s4")
    assert new.table_size == 4099
    ranges = _check_ranges_exact(old, new)
    share = sum(r.share for r in ranges)
    assert 0.2 <= share < 0.26
    assert all(r.kind == "bucket" for r in ranges)
    new2, _ = plan.reweight(old, {"s0": 2.0})
    assert new2.weights == {"s0": 2.0}


def test_planner_rejects_raw_key_routers() -> None:
    with pytest.raises(ValueError, match="no planner for RangeRouter"):
        plan.add_shards(routing.RangeRouter([10], ["a", "b"]), "c")


def test_directory_router_plans_through_its_base() -> None:
    base = routing.RingRouter(FOUR, vnodes=16)
    old = routing.DirectoryRouter(base, {"giant-tenant": "big", "t2": "s1"})
    new, steps = plan.add_shards(old, "s4", max_step_share=1.0)
    assert isinstance(new, routing.DirectoryRouter) and new.version == old.version + 1
    assert new.overrides == old.overrides
    assert new.route("giant-tenant") == "big"
    # Steps are the base ring's exact ranges, all onto the new shard.
    base_ranges = plan.moved_ranges(base, new.base)
    # (grouped into steps of at most the cap: here one step holds them all).
    pieces = sorted(r for s in steps for r in (s.ranges or [(s.lo, s.hi)]))
    assert pieces == [(r.lo, r.hi) for r in base_ranges]
    keys = [f"k{i}" for i in range(20_000)] + ["giant-tenant", "t2"]
    rep = plan.diff(old, new, keys)
    assert {new.shards[j] for i, j in zip(*np.nonzero(rep.matrix)) if old.shards[i] != new.shards[j]} == {"s4"}
    with pytest.raises(ValueError, match="names a shard being removed"):
        plan.remove_shards(old, "s1")
    with pytest.raises(ValueError, match="only named by overrides"):
        plan.remove_shards(old, "big")


def test_small_ring_pieces_grouped_into_steps_and_step_count_bounded() -> None:
    old = routing.RingRouter(FOUR, vnodes=160)
    new, steps = plan.add_shards(old, "s4")
    moved = plan.moved_ranges(old, new)
    assert len(moved) > 100  # many small vnode arcs...
    assert len(steps) <= 20  # ...moved in few steps, none above the cap
    assert all(s.share <= 0.02 + 1e-12 for s in steps)
    pieces = sorted(r for s in steps for r in (s.ranges or [(s.lo, s.hi)]))
    assert pieces == sorted((m.lo, m.hi) for m in moved)
    assert abs(sum(s.share for s in steps) - sum(m.share for m in moved)) < 1e-12
    with pytest.raises(plan.TooManySteps, match="give a cap of at least"):
        plan.plan_steps(old, new, max_step_share=1e-9)


def test_the_planners_take_their_step_options_and_refuse_others() -> None:
    r = routing.RingRouter(["a", "b", "c"])
    _, wide = plan.remove_shards(r, "c")
    _, narrow = plan.remove_shards(r, "c", max_step_share=0.01)
    assert len(narrow) > len(wide)  # the cap reaches plan_steps
    _, counted = plan.add_shards(r, "d", total_keys=1000, total_bytes=8000.0)
    assert sum(s.est_keys or 0 for s in counted) == pytest.approx(1000 * sum(s.share for s in counted))
    wrong = ill_typed({"max_step": 0.1})
    for name, arg in (("add_shards", "d"), ("remove_shards", "c"), ("reweight", {"a": 2.0})):
        with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'max_step'$"):
            getattr(plan, name)(r, arg, **wrong)
