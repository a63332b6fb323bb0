"""Units of a migration without a database: ring plans become hash-interval
units (``range`` / ``ranges``, not one ``all`` unit per pair), membership is
exact, and the overlap test between two migrations of one group is sound."""

from __future__ import annotations

import random

import numpy as np
import pytest

from shardhash import JumpRouter, RingRouter, Router, plan
from shardhash.migrate.executor import _overlap
from shardhash.migrate.units import Membership, Unit, units_for

FOUR = ["s0", "s1", "s2", "s3"]


def _keys(n: int, seed: int = 7) -> list[int]:
    rnd = random.Random(seed)
    return [rnd.randrange(-(1 << 63), 1 << 63) for _ in range(n)] + list(range(-500, 500))


def _exact(old: Router, new: Router, units: list[Unit], keys: list[int]) -> None:
    """Every key whose owner changes is in exactly the unit of its (source,
    destination) pair; every other key is in none."""
    got = Membership(old, new, units).assign(keys)
    o = [old.shards[i] for i in np.asarray(old.route_many(keys)).tolist()]
    n = [new.shards[i] for i in np.asarray(new.route_many(keys)).tolist()]
    for k, u, a, b in zip(keys, got.tolist(), o, n):
        if a == b:
            assert u == -1, (k, u)
        else:
            assert u >= 0, (k, a, b)
            assert (units[u].source, units[u].destination) == (a, b), (k, units[u], a, b)


@pytest.mark.parametrize("change", ["add", "remove"])
def test_ring_plans_give_interval_units_with_exact_membership(change: str) -> None:
    old = RingRouter(FOUR, vnodes=32)
    new = plan.add_shards(old, "s4")[0] if change == "add" else plan.remove_shards(old, "s1")[0]
    units = units_for(old, new, max_step_share=0.01)
    kinds = {u.kind for u in units}
    assert kinds <= {"range", "ranges"} and "ranges" in kinds, kinds
    _exact(old, new, units, _keys(100_000))
    # The record round-trips (the shards' ownership records and the metadata store hold it).
    assert [Unit.from_dict(u.to_dict()) for u in units] == units


def test_overlap_of_ring_migrations_is_sound() -> None:
    """A pair of units judged disjoint shares no key (checked on sampled
    keys); a unit that takes back keys the held migration moves is refused."""
    r0 = RingRouter(FOUR, vnodes=32)
    r1 = plan.remove_shards(r0, "s0")[0]          # held: s0's arcs go to s1..s3
    r2 = plan.add_shards(r1, "s4")[0]             # new: s4 takes arcs from s1..s3
    held = units_for(r0, r1, max_step_share=0.005)
    new = units_for(r1, r2, max_step_share=0.005)
    keys = _keys(60_000, seed=3)
    a_of = Membership(r0, r1, held).assign(keys).tolist()
    b_of = Membership(r1, r2, new).assign(keys).tolist()
    shared = {(a, b) for a, b in zip(a_of, b_of) if a >= 0 and b >= 0}
    judged_disjoint = 0
    for a in held:
        for b in new:
            if b.source != a.destination:
                continue
            clash = _overlap([a], [b])
            if clash is None:
                judged_disjoint += 1
                assert (a.index, b.index) not in shared, (a, b)
    assert judged_disjoint > 0  # (intervals make some crossing pairs provably disjoint)
    assert shared, "the sample should hold keys moved twice"
    a_idx, b_idx = next(iter(shared))
    assert _overlap([held[a_idx]], [new[b_idx]]) is not None
    # Different hashers: hash intervals cannot be compared, anything crossing overlaps.
    pair = next((a, b) for a in held for b in new if b.source == a.destination and _overlap([a], [b]) is None)
    assert _overlap([pair[0]], [pair[1]], same_hash=False) is not None


def test_interval_overlap_cases() -> None:
    def u(kind: str, lo: int, hi: int, ranges: tuple[tuple[int, int], ...] = ()) -> Unit:
        return Unit(0, "a", "b", kind, lo, hi, ranges=ranges)

    b_side = Unit(0, "b", "c", "ranges", 10, 90, ranges=((10, 19), (50, 59), (80, 90)))
    assert _overlap([u("range", 20, 49)], [b_side]) is None
    assert _overlap([u("range", 59, 60)], [b_side]) is not None
    assert _overlap([u("ranges", 0, 100, ((0, 9), (20, 49), (91, 100)))], [b_side]) is None
    assert _overlap([u("ranges", 0, 100, ((0, 9), (90, 100)))], [b_side]) is not None
    assert _overlap([u("all", 0, 0)], [b_side]) is not None
    # Jump plans stay single-interval units.
    assert {x.kind for x in units_for(JumpRouter(FOUR), JumpRouter(FOUR + ["s4"], version=2))} == {"range"}
