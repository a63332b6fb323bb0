"""HotKeyRouter: hot set in the document, write/read routing, topology changes, proposals."""

from __future__ import annotations

import collections
import json
import pickle
from collections.abc import Callable
from typing import Any, cast
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash import DirectoryRouter, Hasher, JumpRouter, RangeRouter, RingRouter, Router, load_router, plan
from shardhash.hotkeys import HotKeyRouter, hot_changes, propose_hot_set, subkey
from tests._support import ill_typed

SHARDS = [f"s{i}" for i in range(8)]


@pytest.fixture(params=["jump", "ring", "directory", "memento", "multiprobe", "bounded"])
def base(request: pytest.FixtureRequest) -> Router:
    from shardhash.routing import BoundedLoadRouter, MementoRouter, MultiProbeRouter

    if request.param == "jump":
        return JumpRouter(SHARDS)
    if request.param == "memento":
        return MementoRouter(SHARDS)
    if request.param == "multiprobe":
        return MultiProbeRouter(SHARDS)
    if request.param == "bounded":
        return BoundedLoadRouter(SHARDS)
    if request.param == "ring":
        return RingRouter(SHARDS, vnodes=16)
    return DirectoryRouter(JumpRouter(SHARDS), {"vip": "s9"})


def test_cold_keys_route_like_the_base(base: Router) -> None:
    r = HotKeyRouter(base, {"celebrity": 4, 42: 3})
    keys = [f"user:{i}" for i in range(500)] + list(range(500))
    assert [r.route(k) for k in keys] == [base.route(k) for k in keys]
    assert r.route_many(keys).tolist() == base.route_many(keys).tolist()
    for k in keys[:100] + keys[-100:]:
        if k in (42,):
            continue
        assert r.route_write(k) == (base.route(k), 0)
        assert r.route_read(k) == [(base.route(k), 0)]


def test_hot_key_sub_keys(base: Router) -> None:
    r = HotKeyRouter(base, {"celebrity": 5, 42: 3})
    reads = r.route_read("celebrity")
    assert [i for _, i in reads] == [0, 1, 2, 3, 4]
    # sub-key 0 is the key itself: existing rows never move when a key becomes hot
    assert reads[0] == (base.route("celebrity"), 0)
    # sub-key i is the routing key "celebrity#i" through the base
    assert all(s == base.route(f"celebrity#{i}") for s, i in reads[1:])
    assert r.route_read(42) == [(base.route(subkey(42, i)), i) for i in range(3)]
    seen = collections.Counter(r.route_write("celebrity") for _ in range(2000))
    assert set(seen) == set(reads)  # every write lands on a sub-key that reads see
    assert min(seen.values()) > 2000 / 5 * 0.6
    assert r.fan_out("celebrity") == 5 and r.fan_out("nobody") == 1
    assert sum(len(v) for v in r.read_shards("celebrity").values()) == 5


def test_write_policies() -> None:
    b = JumpRouter(SHARDS)
    rr = HotKeyRouter(b, {"k": 3}, write="round_robin")
    assert [rr.route_write("k")[1] for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    t = HotKeyRouter(b, {"k": 4}, write="time", bucket_seconds=3600)
    assert len({t.route_write("k") for _ in range(50)}) == 1
    assert rr.route_write("k", sub_key=2) == (rr.route_read("k")[2][0], 2)
    with pytest.raises(ValueError, match="sub_key"):
        rr.route_write("k", sub_key=3)
    with pytest.raises(ValueError, match="not hot"):
        rr.route_write("cold", sub_key=1)
    assert rr.route_write("cold", sub_key=0) == (b.route("cold"), 0)


def test_document_round_trip_and_fingerprint() -> None:
    b = JumpRouter(SHARDS)
    r = HotKeyRouter(b, {"a": 2, 7: 3}, write="time", bucket_seconds=60, version=4)
    doc = json.loads(r.to_json())
    assert doc["type"] == "hot" and doc["params"]["hot"] == [[7, 3], ["a", 2]]
    back = load_router(doc)
    assert isinstance(back, HotKeyRouter) and back == r and back.hot == {7: 3, "a": 2}
    assert back.route_read("a") == r.route_read("a") and back.write_policy == "time"
    assert pickle.loads(pickle.dumps(r)) == r
    # the fingerprint covers the hot set, not its order
    assert HotKeyRouter(b, [(7, 3), ("a", 2)], write="time", bucket_seconds=60, version=4).fingerprint == r.fingerprint
    assert r.with_hot({"a": 2, 7: 4}, version=4).fingerprint != r.fingerprint
    assert r.with_hot({"a": 2}).version == 5
    doc["params"]["hot"][0][1] = 9
    with pytest.raises(ValueError, match="fingerprint"):
        load_router(doc)
    doc["params"]["surprise"] = 1
    with pytest.raises(ValueError, match="unknown field"):
        load_router(doc)


def test_bad_input() -> None:
    b = JumpRouter(SHARDS)
    with pytest.raises(ValueError, match="fan_out of hot key 'x' must be >= 2"):
        HotKeyRouter(b, {"x": 1})
    with pytest.raises(ValueError, match="<= 1024"):
        HotKeyRouter(b, {"x": 5000})
    with pytest.raises(TypeError, match=r"hot\[0\].*int or str"):
        HotKeyRouter(b, [(b"raw", 2)])
    with pytest.raises(TypeError, match=r"hot\[1\]"):
        HotKeyRouter(b, [("a", 2), ill_typed(("b",))])
    with pytest.raises(ValueError, match="twice"):
        HotKeyRouter(b, [("a", 2), ("a", 3)])
    with pytest.raises(ValueError, match="write"):
        HotKeyRouter(b, {}, write="sometimes")
    with pytest.raises(ValueError, match="bucket_seconds"):
        HotKeyRouter(b, {}, write="time")
    with pytest.raises(TypeError, match="str keys"):
        HotKeyRouter(RangeRouter([10], ["a", "b"]), {})
    with pytest.raises(TypeError, match="another HotKeyRouter"):
        HotKeyRouter(HotKeyRouter(b, {}), {})
    r = HotKeyRouter(b, {1: 2})
    with pytest.raises(TypeError, match="bool"):
        r.route_write(True)
    with pytest.raises(TypeError):
        r.route_read([1])
    with pytest.raises(TypeError):
        r.route_write(1.0)
    assert r.route_read(np.int64(1)) == r.route_read(1)


def test_hot_changes_and_plan_diff() -> None:
    b = JumpRouter(SHARDS)
    cold = HotKeyRouter(b, {})
    hot = cold.with_hot({"star": 4, 5: 2})
    ch = hot_changes(cold, hot)
    assert [(c.key, c.kind, c.before, c.after) for c in ch] == [(5, "made hot", 1, 2), ("star", "made hot", 1, 4)]
    assert ch[1].added == hot.route_read("star")[1:] and not ch[1].removed
    back = hot_changes(hot, b)
    assert [c.kind for c in back] == ["made cold", "made cold"] and back[1].removed == hot.route_read("star")[1:]
    # a new base moves sub-keys like any keys
    grown = HotKeyRouter(JumpRouter(SHARDS + ["s8", "s9"]), {"star": 4, 5: 2})
    moved = hot_changes(hot, grown)
    for c in moved:
        assert c.kind == "sub-keys moved" and c.moved
        for i, s_old, s_new in c.moved:
            assert s_old == b.route(subkey(c.key, i)) and s_new == grown.base.route(subkey(c.key, i))
    rep = plan.diff(cold, hot, np.arange(1000))
    assert rep.moved == 0 and [c.key for c in rep.hot_changes] == [5, "star"]
    assert "hot key 'star': made hot" in rep.summary()
    assert rep.to_dict()["hot_changes"][1]["after"] == 4
    assert "hot_changes" not in plan.diff(b, b, np.arange(10)).to_dict()


def test_propose_hot_set() -> None:
    r = JumpRouter(SHARDS)
    rng = np.random.default_rng(1)
    traffic = np.concatenate([np.full(20000, 7), np.full(8000, 8), rng.integers(100, 10**6, 72000)])
    hot = propose_hot_set(traffic, r)
    assert set(hot) == {7, 8}
    total = len(traffic)
    cap = 0.5 * total / len(SHARDS)
    router = HotKeyRouter(r, hot)
    for k, n in hot.items():
        weight = float((traffic == k).sum())
        per = collections.Counter(s for s, _ in router.route_read(k))
        assert max(per.values()) * weight / n <= cap * 1.01  # the heavy-hitter bound is an upper bound
    # a target load that is already met proposes nothing
    assert propose_hot_set(traffic, r, target_load=total) == {}
    assert propose_hot_set([], r) == {}
    with pytest.raises(ValueError, match="headroom"):
        propose_hot_set(traffic, r, headroom=0)


def test_compiled_paths_agree_with_the_reference() -> None:
    b = JumpRouter(SHARDS)
    r = HotKeyRouter(b, {"star": 4, 9: 3}, write="round_robin")
    keys: list[object] = [f"k{i}" for i in range(300)] + list(range(300)) + ["star", 9, b"raw", (1, "a"),
                                                                             np.int64(9), np.int64(10)]
    for k in keys:
        assert r.route_read(k) == HotKeyRouter.route_read(r, k)
        if r.fan_out(k) == 1:
            assert r.route_write(k) == HotKeyRouter.route_write(r, k)
        for sub in range(r.fan_out(k)):
            assert r.route_write(k, sub_key=sub) == HotKeyRouter.route_write(r, k, sub_key=sub)
    assert cast(object, r.route_write) is not HotKeyRouter.route_write  # the compiled path, not a wrapper
    for bad in (True, 1.5, [1], None):
        fns: tuple[Callable[[Any], object], ...] = (r.route_write, lambda k: HotKeyRouter.route_write(r, k))
        for fn in fns:
            with pytest.raises(TypeError):
                fn(bad)
        with pytest.raises(TypeError):
            r.route_read(bad)


def test_a_fresh_process_loads_the_document() -> None:
    import subprocess
    import sys

    from tests._support import child_env

    r = HotKeyRouter(JumpRouter(SHARDS), {"star": 3, 5: 2})
    code = ("import sys, json\nfrom shardhash.routing import load_router\n"
            "r = load_router(sys.stdin.read())\nprint(json.dumps([r.route_read('star'), r.route_read(5)]))")
    out = subprocess.run([sys.executable, "-c", code], input=r.to_json(), capture_output=True, text=True,
                         env=child_env(), timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [[list(p) for p in r.route_read("star")], [list(p) for p in r.route_read(5)]]


@pytest.mark.parametrize("hasher", [None, Hasher(seed=7), Hasher("murmur3_128", seed=3)])
def test_compiled_cold_paths_on_many_keys_and_a_large_hot_set(hasher: Hasher | None) -> None:
    # The compiled path finds hot keys by their 64-bit hash in a table: with
    # 3000 hot keys (int and str, ASCII or not) the table and its filter are
    # full, and every answer must still be the reference's.
    b = JumpRouter(SHARDS) if hasher is None else JumpRouter(SHARDS, hasher=hasher)
    hot: dict[Any, int] = {f"hot{i}": 2 + i % 3 for i in range(1500)}
    hot.update({i * 7919 - 10**6: 2 for i in range(1000)})
    hot.update({f"héß{i}": 3 for i in range(300)} | {2**64 - 1 - i: 2 for i in range(200)})
    r = HotKeyRouter(b, hot)
    keys: list[Any] = list(hot) + [f"user:{i}" for i in range(2000)] + [f"ünï{i}" for i in range(200)]
    keys += list(range(-1000, 1000)) + [2**63 + i for i in range(50)] + [-(2**63), "", "\U0001f600"]
    for k in keys:
        expect = HotKeyRouter.route_read(r, k)
        assert r.route_read(k) == expect
        if k in hot:
            assert len(expect) == hot[k]
            assert r.route_write(k) in expect
        else:
            assert expect == [(b.route(k), 0)]
            assert r.route_write(k) == (b.route(k), 0)
    for bad in (2**64, -(2**63) - 1):
        with pytest.raises(OverflowError):
            r.route_read(bad)
        with pytest.raises(OverflowError):
            r.route_write(bad)


def test_route_read_results_stay_the_callers() -> None:
    # route_read refills its last list only when nobody else holds it.
    r = HotKeyRouter(JumpRouter(SHARDS), {"star": 2})
    keys = [f"k{i}" for i in range(50)]
    kept = [r.route_read(k) for k in keys]
    assert kept == [[(r.route(k), 0)] for k in keys]
    first = r.route_read("a")
    first.append(("mine", 99))
    second = r.route_read("b")
    assert first == [(r.route("a"), 0), ("mine", 99)] and second == [(r.route("b"), 0)]
    third = r.route_read("c")
    third.clear()
    assert r.route_read("d") == [(r.route("d"), 0)] and third == []

    # (a list its caller dropped is refilled: the path the callback below takes)
    before = id(r.route_read("p"))
    assert id(r.route_read("q")) == before

    class CallsBack:
        seen: list[list[tuple[str, int]]] = []

        def __del__(self) -> None:  # runs when route_read releases the item below
            CallsBack.seen.append(r.route_read("e"))

    got: list[Any] = r.route_read("f")
    got[0] = CallsBack()
    del got
    again = r.route_read("g")
    assert again == [(r.route("g"), 0)]
    assert CallsBack.seen == [[(r.route("e"), 0)]] and CallsBack.seen[0] is not again


def _outcome(fn: Callable[[Any], object], key: Any) -> object:
    try:
        return fn(key)
    except (TypeError, ValueError, OverflowError) as e:
        return type(e), str(e)


def test_compiled_paths_defer_to_an_overridden_route_and_key_prefix() -> None:
    class Pinned(JumpRouter):
        def route(self, key: Any, /) -> str:
            return "s0"

    p = Pinned(SHARDS)
    r = HotKeyRouter(p, {"star": 2})
    assert r.route_read("x") == HotKeyRouter.route_read(r, "x")
    assert r.route_write("x") == HotKeyRouter.route_write(r, "x")
    t = JumpRouter(SHARDS, key_prefix=1)
    rt = HotKeyRouter(t, {})
    for k in ("x", 5, ("x", 1), ("x",)):
        assert _outcome(rt.route_read, k) == _outcome(lambda k: HotKeyRouter.route_read(rt, k), k)
        assert _outcome(rt.route_write, k) == _outcome(lambda k: HotKeyRouter.route_write(rt, k), k)
    assert rt.route_read(("x", 1)) == [(t.route(("x", 1)), 0)]


_NUMBERS = (st.floats() | st.integers() | st.sampled_from([1e-300, 5e-324, 1e-6, 9.99e-7, 1e308, 2**1024, -0.0, True]))


@given(bucket=_NUMBERS, fan=_NUMBERS)
def test_hot_document_numbers_load_only_if_they_route(bucket: Any, fan: Any) -> None:
    """A hot document's numeric fields (bucket_seconds, a fan_out) either are
    refused at load with a ValueError/TypeError naming the field, or every
    route_write/route_read works at any unix time up to the year 9999."""
    import time as time_mod

    doc = HotKeyRouter(JumpRouter(SHARDS), {"k": 3, 7: 2}, write="time", bucket_seconds=60).to_dict()
    del doc["fingerprint"]
    doc["params"]["bucket_seconds"] = bucket
    doc["params"]["hot"] = [[7, 2], ["k", fan]]
    try:
        r = load_router(json.loads(json.dumps(doc)))
    except (ValueError, TypeError) as e:
        assert "bucket_seconds" in str(e) or "fan_out" in str(e), e
        return
    assert isinstance(r, HotKeyRouter)
    for now in (0.0, time_mod.time(), 253402300799.0):
        with mock.patch("time.time", return_value=now):
            for key in ("k", 7):
                shard, sub = r.route_write(key)
                assert (shard, sub) in r.route_read(key)


def test_tiny_bucket_seconds_refused_at_load() -> None:
    """bucket_seconds = 1e-300 used to load, then every route_write raised OverflowError."""
    doc = HotKeyRouter(JumpRouter(SHARDS), {"k": 3}, write="time", bucket_seconds=60).to_dict()
    del doc["fingerprint"]
    for bad in (1e-300, 5e-324, 1e-7, 10**400):
        doc["params"]["bucket_seconds"] = bad
        with pytest.raises(ValueError, match="bucket_seconds"):
            load_router(doc)
        with pytest.raises(ValueError, match="bucket_seconds"):
            HotKeyRouter(JumpRouter(SHARDS), {"k": 3}, write="time", bucket_seconds=bad)
    doc["params"]["bucket_seconds"] = 1e-6
    r = load_router(doc)
    assert isinstance(r, HotKeyRouter) and r.route_write("k")[1] in (0, 1, 2)


@pytest.mark.parametrize("kw", [
    {"headroom": 1e-300, "target_load": 1e-300},  # cap 0.0: hi / cap divided by zero
    {"headroom": 5e-324},  # hi / cap = inf: math.ceil raised OverflowError
    {"target_load": 1e-320},
    {"target_load": 10**400},
    {"headroom": True},
    {"target_load": float("nan")},
    {"candidates": 0},
    {"capacity": 0},
])
def test_propose_hot_set_numbers(kw: dict[str, Any]) -> None:
    """Every numeric argument of propose_hot_set is refused with a ValueError
    or TypeError naming it, or gives a valid hot set: never ZeroDivisionError
    or OverflowError from the arithmetic done with it."""
    r = JumpRouter(SHARDS)
    traffic = ["star"] * 3000 + [f"u{i}" for i in range(700)]
    try:
        hot = propose_hot_set(traffic, r, **kw)
    except (ValueError, TypeError) as e:
        assert any(name in str(e) for name in kw), e
        return
    assert hot and all(2 <= n <= 64 for n in hot.values())
    HotKeyRouter(r, hot)


def test_propose_hot_set_refuses_an_overflowing_total() -> None:
    """Weights whose sum overflows to inf used to give an empty hot set silently."""
    with pytest.raises(ValueError, match="total weight"):
        propose_hot_set(["star"] * 10 + ["x", "y"], JumpRouter(SHARDS), weights=[1e308] * 12)


def _param_paths(o: Any, p: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [p] if p else []
    if isinstance(o, dict):
        for k, v in o.items():
            if k != "base":  # the base document has its own fuzz (tests/test_fuzz.py)
                out += _param_paths(v, p + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            out += _param_paths(v, p + (i,))
    return out


_JSONISH = st.recursive(
    _NUMBERS | st.none() | st.sampled_from(["time", "random", "round_robin", "k", ""]),
    lambda c: st.lists(c, max_size=3), max_leaves=5)


@given(write=st.sampled_from(["time", "random", "round_robin"]), data=st.data())
def test_mutated_hot_documents_load_only_if_they_route(write: str, data: st.DataObject) -> None:
    """Any one value of a hot document's params replaced: the load is refused
    with a TypeError/ValueError naming the field, or every hot key routes
    (write and read) at unix times 0, now and the end of year 9999."""
    import time as time_mod

    doc = HotKeyRouter(JumpRouter(SHARDS), {"k": 3, 7: 2}, write=write,
                       bucket_seconds=60 if write == "time" else None).to_dict()
    del doc["fingerprint"]
    path = data.draw(st.sampled_from(_param_paths(doc["params"])), label="path")
    target = doc["params"]
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = data.draw(_JSONISH, label="value")
    try:
        r = load_router(doc)
    except (TypeError, ValueError) as e:
        assert any(w in str(e) for w in (str(path[0]), "fan_out", "hot")), e
        return
    assert isinstance(r, HotKeyRouter)
    for now in (0.0, time_mod.time(), 253402300799.0):
        with mock.patch("time.time", return_value=now):
            for key in r.hot:
                assert r.route_write(key) in r.route_read(key)
