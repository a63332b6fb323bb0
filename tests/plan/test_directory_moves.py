"""Plans between routers with explicit keys (DirectoryRouter overrides, and
wrappers such as HotKeyRouter): the planned steps and the migration units
move exactly the keys whose owner changes -- the overridden keys too, which
no sample of random hashes ever hits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash import plan
from shardhash.hotkeys import HotKeyRouter
from shardhash.migrate.units import Membership, Unit, units_for, units_from_steps
from shardhash.routing import (
    DirectoryRouter,
    HashRangeRouter,
    JumpRouter,
    MaglevRouter,
    ModuloRouter,
    RendezvousRouter,
    RingRouter,
    Router,
)

INTS = list(range(200))
STRS = [f"k{i}" for i in range(60)]


def _moved(old: Router, new: Router, units: Sequence[Unit], keys: Sequence[Any]) -> set[Any]:
    """The keys the units move, each checked to go from its old owner to its new one."""
    mem = Membership(old, new, units)
    out = set()
    for k, u in zip(keys, mem.assign(list(keys)).tolist()):
        if u >= 0:
            unit = mem.units[u]
            assert (unit.source, unit.destination) == (old.route(k), new.route(k)), k
            out.add(k)
    return out


def _changed(old: Router, new: Router, keys: Sequence[Any]) -> set[Any]:
    return {k for k in keys if old.route(k) != new.route(k)}


def _check_exact(old: Router, new: Router, extra: Sequence[Any] = ()) -> None:
    """units_for and plan_steps' units move exactly the keys whose owner changes."""
    ints = sorted(set(INTS) | {k for k in extra if isinstance(k, int)})
    strs = sorted(set(STRS) | {k for k in extra if isinstance(k, str)})
    steps = plan.plan_steps(old, new)
    for units in (units_for(old, new), units_from_steps(steps)):
        for keys in (ints, strs):
            assert _moved(old, new, units, keys) == _changed(old, new, keys)


def test_changing_an_override_plans_its_move() -> None:
    old = DirectoryRouter(JumpRouter(["a", "b"]), {"x": "a"})
    new = DirectoryRouter(JumpRouter(["a", "b"]), {"x": "b"}, version=2)
    steps = plan.plan_steps(old, new)
    assert [(s.source, s.destination) for s in steps] == [("a", "b")]
    units = units_for(old, new)
    assert len(units) == 1 and Membership(old, new, units).unit_of("x") == 0
    _check_exact(old, new, ["x"])


@pytest.mark.parametrize("case", ["added", "removed", "changed", "new_shard", "base_change", "both_change",
                                  "to_plain", "from_plain"])
def test_each_kind_of_override_change(case: str) -> None:
    b3 = RingRouter(["a", "b", "c"], vnodes=8)
    b4 = b3.with_shards(["a", "b", "c", "d"])
    ov = {5: "c", "t1": "a", "t2": "b"}
    old: Router = DirectoryRouter(b3, ov)
    new: Router
    if case == "added":
        new = DirectoryRouter(b3, {**ov, 17: "b" if b3.route(17) != "b" else "a"})
    elif case == "removed":
        new = DirectoryRouter(b3, {k: v for k, v in ov.items() if k != 5})
    elif case == "changed":
        new = DirectoryRouter(b3, {**ov, "t1": "c"})
    elif case == "new_shard":  # a shard only an override names
        new = DirectoryRouter(b3, {**ov, "t2": "solo"})
    elif case == "base_change":
        new = DirectoryRouter(b4, ov)
    elif case == "both_change":
        new = DirectoryRouter(b4, {5: "d", "t1": "a"})
    elif case == "to_plain":
        new = b4
    else:
        old, new = b3, DirectoryRouter(b3, {**ov, 17: "b" if b3.route(17) != "b" else "a"})
    keys = [5, 17, "t1", "t2"]
    if case not in ("base_change",):
        assert _changed(old, new, keys), case  # (the case really changes an explicit key)
    _check_exact(old, new, keys)


def test_hot_key_router_is_planned_as_its_base() -> None:
    # a ring arc too small for any sample of random hashes to hit
    o = RingRouter(["a", "b", "c"], tokens={"a": [10], "b": [2**63], "c": [2**64 - 100]})
    n = RingRouter(["a", "b", "c", "d"], tokens={"a": [10], "b": [2**63], "c": [2**64 - 100], "d": [5]})
    want = plan.plan_steps(o, n)
    assert want
    got = plan.plan_steps(HotKeyRouter(o, {"x": 2}), HotKeyRouter(n, {"y": 3}))
    assert [s.to_dict() for s in got] == [s.to_dict() for s in want]


def test_overrides_over_a_hot_key_router() -> None:
    base = HotKeyRouter(JumpRouter(["a", "b", "c"]), {"hot": 2})
    old = DirectoryRouter(base, {"x": "a", 3: "b"})
    new = DirectoryRouter(base, {"x": "c", 3: "b"}, version=2)
    assert _moved(old, new, units_for(old, new), ["x", "hot", "y"]) == {"x"}
    _check_exact(old, new, ["x", 3])


def test_units_that_leave_an_override_key_behind_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # units_for checks the planned units against every explicit key
    old = DirectoryRouter(JumpRouter(["a", "b"]), {"x": "a"})
    new = DirectoryRouter(JumpRouter(["a", "b"]), {"x": "b"}, version=2)
    monkeypatch.setattr(plan, "plan_steps", lambda *a, **k: [])
    with pytest.raises(ValueError, match="override key 'x' from shard 'a' to 'b'"):
        units_for(old, new)


# ---------------------------------------------------------- differential test

SHARDS = ["a", "b", "c", "d"]
BASES: dict[str, Callable[[list[str]], Router]] = {
    "jump": lambda s: JumpRouter(s),
    "modulo": lambda s: ModuloRouter(s),
    "ring": lambda s: RingRouter(s, vnodes=4),
    "rendezvous": lambda s: RendezvousRouter(s),
    "maglev": lambda s: MaglevRouter(s, table_size=13),
    "hash_range": lambda s: HashRangeRouter([(i + 1) * (2**64 // len(s)) for i in range(len(s) - 1)], s),
}
OVERRIDE_KEYS = st.one_of(st.integers(0, 260), st.sampled_from(STRS + ["z1", "z2", "z3"]))


@st.composite
def directories(draw: st.DrawFn) -> Router:
    shards = draw(st.lists(st.sampled_from(SHARDS), min_size=1, max_size=4, unique=True))
    base = BASES[draw(st.sampled_from(sorted(BASES)))](shards)
    if draw(st.booleans()) and not draw(st.booleans()):
        return base  # (now and then a plain router: every override removed / added)
    ov = draw(st.dictionaries(OVERRIDE_KEYS, st.sampled_from(SHARDS + ["solo"]), max_size=6))
    return DirectoryRouter(base, ov, version=draw(st.integers(1, 3)))


def _override_keys(r: Router) -> list[Any]:
    return list(r.overrides) if isinstance(r, DirectoryRouter) else []


@given(directories(), directories())
def test_planned_units_move_exactly_the_keys_whose_owner_changes(old: Router, new: Router) -> None:
    _check_exact(old, new, _override_keys(old) + _override_keys(new))
