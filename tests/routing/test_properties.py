"""Property tests of the routers (Hypothesis).

* scalar == batch for every router and every input kind;
* compiled == the pure-Python references (shardhash._reference), which
  work from the router's document alone;
* the same routes in another process with another PYTHONHASHSEED;
* consistency: adding a shard to jump / ring / rendezvous moves keys only
  onto it (about 1/(N+1) of them), removing one moves only its keys;
* balance; modulo 3 -> 4 keeps exactly 3 of every 12 consecutive residues.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardhash import Hasher
from shardhash._reference.routing import ReferenceRouter
from shardhash.routing import (
    BucketRouter,
    HashRangeRouter,
    JumpRouter,
    MaglevRouter,
    ModuloRouter,
    RendezvousRouter,
    RingRouter,
    Router,
    load_router,
)
from tests._router_cases import ALL_ROUTERS, HASH_ROUTERS, KEY_ROUTERS
from tests._support import child_env, examples

U64 = 2**64 - 1
ROUTERS = {name: f() for name, f in ALL_ROUTERS.items()}

int_keys = st.integers(-(2**63), U64)
text_keys = st.text(max_size=40)
byte_keys = st.binary(max_size=40)
hashes = st.lists(st.integers(0, U64), max_size=60)
ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8)
shard_lists = st.lists(ids, min_size=1, max_size=12, unique=True)
ALGOS = ["xxh3_64", "xxh64", "xxh32", "murmur3_32", "murmur3_128", "fnv1a_32", "fnv1a_64"]
hashers = st.sampled_from(ALGOS).flatmap(
    lambda a: st.builds(Hasher, st.just(a), st.just(0) if a.startswith("fnv") else st.integers(0, 2**32 - 1)))


def _check_scalar_batch(r: Router, keys: list[Any]) -> None:
    many = r.route_many(keys)
    assert many.dtype == np.int32
    assert many.tolist() == [r.route_index(k) for k in keys]
    assert [r.shards[i] for i in many] == [r.route(k) for k in keys]


# -- scalar == batch --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(HASH_ROUTERS))
@settings(max_examples=examples(40))  # x 15 routers
@given(keys=st.lists(st.one_of(int_keys, text_keys, byte_keys), max_size=30))
def test_scalar_equals_batch_mixed_keys(name: str, keys: list[int | str | bytes]) -> None:
    r = ROUTERS[name]
    _check_scalar_batch(r, [(k, 0) for k in keys] if r.key_prefix else keys)


@pytest.mark.parametrize("name", sorted(n for n in HASH_ROUTERS if not ROUTERS[n].key_prefix))
@settings(max_examples=examples(30))  # x 14 routers
@given(data=st.data())
def test_scalar_equals_batch_array_kinds(name: str, data: st.DataObject) -> None:
    r = ROUTERS[name]
    ints = data.draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=30))
    uints = data.draw(st.lists(st.integers(0, U64), max_size=30))
    texts = data.draw(st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"),
                                       max_size=12), max_size=30))
    for keys, arr in ((ints, np.array(ints, dtype=np.int64)),
                      (uints, np.array(uints, dtype=np.uint64)),
                      (texts, np.array(texts, dtype=object)),
                      (texts, np.array(texts, dtype=str) if texts else np.array([], dtype="U1"))):
        want = [r.route_index(k) for k in keys]
        assert r.route_many(arr).tolist() == want
        assert r.route_hashes(r.hasher.hash_array(arr)).tolist() == want
        assert [r.route_hash(int(h)) for h in r.hasher.hash_array(arr)] == want


@pytest.mark.parametrize("name", sorted(KEY_ROUTERS))
@given(data=st.data())
def test_scalar_equals_batch_key_routers(name: str, data: st.DataObject) -> None:
    r = ROUTERS[name]
    keys: list[Any]
    if name == "range_str":
        keys = data.draw(st.lists(text_keys, max_size=30))
        arrs = [np.array(keys, dtype=str)] if keys else []
    else:
        keys = data.draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=30))
        arrs = [np.array(keys, dtype=np.int64)]
        if all(k >= 0 for k in keys):
            arrs.append(np.array(keys, dtype=np.uint64))
    _check_scalar_batch(r, keys)
    ref = ReferenceRouter(r.to_dict())
    assert [ref.route_key(k) for k in keys] == [r.route_index(k) for k in keys]
    for a in arrs:
        assert r.route_many(a).tolist() == [r.route_index(k) for k in keys]


# -- compiled == reference ------------------------------------------------------------


def _agree(r: Router, hs: list[int]) -> None:
    ref = ReferenceRouter(r.to_dict())
    want = [ref.route_hash(h) for h in hs]
    assert r.route_hashes(hs).tolist() == want
    assert [r.route_hash(h) for h in hs] == want


@given(shards=shard_lists, hs=hashes, hasher=hashers)
def test_jump_and_modulo_match_reference(shards: list[str], hs: list[int], hasher: Hasher) -> None:
    _agree(JumpRouter(shards, hasher=hasher), hs)
    _agree(ModuloRouter(shards, hasher=hasher), hs)


@given(shards=shard_lists, hs=hashes, hasher=hashers, vnodes=st.integers(1, 40),
       w=st.lists(st.floats(0.05, 5), max_size=12))
def test_ring_matches_reference(shards: list[str], hs: list[int], hasher: Hasher, vnodes: int, w: list[float]) -> None:
    weights = dict(zip(shards, w)) or None
    try:
        r = RingRouter(shards, vnodes=vnodes, weights=weights, hasher=hasher)
    except ValueError as e:  # a real collision (32-bit hashers): must name both tokens
        assert "collide" in str(e)
        r = RingRouter(shards, vnodes=vnodes, weights=weights, hasher=hasher, collisions="first")
    ref = ReferenceRouter(r.to_dict())
    # probe each token, its neighbours and random hashes
    probe = list(hs)
    for t in ref.tokens[:30]:
        probe += [t, max(t - 1, 0), min(t + 1, U64)]
    _agree(r, probe)


@given(tokens=st.dictionaries(ids, st.lists(st.integers(0, U64), min_size=1, max_size=5, unique=True),
                              min_size=1, max_size=6), hs=hashes)
def test_explicit_ring_matches_reference(tokens: dict[str, list[int]], hs: list[int]) -> None:
    r = RingRouter(list(tokens), tokens=tokens, collisions="first")
    flat = [t for ts in tokens.values() for t in ts]
    _agree(r, hs + flat + [t + 1 for t in flat if t < U64])


@given(shards=shard_lists, hs=hashes, hasher=hashers, w=st.lists(st.floats(0.01, 100), max_size=12))
def test_rendezvous_matches_reference(shards: list[str], hs: list[int], hasher: Hasher, w: list[float]) -> None:
    _agree(RendezvousRouter(shards, hasher=hasher), hs)
    _agree(RendezvousRouter(shards, hasher=hasher, weights=dict(zip(shards, w))), hs)


@given(shards=shard_lists, hs=hashes, hasher=hashers, w=st.lists(st.floats(0.1, 10), max_size=12),
       extra=st.integers(0, 300))
def test_maglev_matches_reference(shards: list[str], hs: list[int], hasher: Hasher, w: list[float], extra: int) -> None:
    from shardhash.routing.maglev import _next_prime

    m = _next_prime(len(shards) + extra)
    r = MaglevRouter(shards, table_size=m, weights=dict(zip(shards, w)), hasher=hasher)
    ref = ReferenceRouter(r.to_dict())
    assert r.table.tolist() == ref.table
    _agree(r, hs)


@given(shards=shard_lists, hs=hashes, b=st.integers(1, 5000), seed=st.integers(0, 1000))
def test_bucket_matches_reference(shards: list[str], hs: list[int], b: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    placement = [shards[i] for i in rng.integers(0, len(shards), b)]
    _agree(BucketRouter(shards, placement), hs + [b - 1, b, 2 * b - 1, U64])


@given(splits=st.lists(st.integers(1, U64), min_size=0, max_size=20, unique=True), hs=hashes,
       data=st.data())
def test_hash_range_matches_reference(splits: list[int], hs: list[int], data: st.DataObject) -> None:
    splits.sort()
    owners = data.draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=len(splits) + 1,
                                max_size=len(splits) + 1))
    r = HashRangeRouter(splits, owners)
    _agree(r, hs + splits + [s - 1 for s in splits])
    ranges = r.owned_ranges()
    assert ranges[0][0] == 0 and ranges[-1][1] == U64
    assert all(a[1] + 1 == b[0] and a[2] != b[2] for a, b in zip(ranges, ranges[1:]))


# -- other processes -------------------------------------------------------------------

_CHILD = """
import json, sys
from shardhash import load_router
docs = json.loads(sys.stdin.read())
keys = ["k%d" % i for i in range(300)] + list(range(300))
out = {}
for name, doc in docs.items():
    r = load_router(doc)
    ks = [(k, 1) for k in keys] if r.key_prefix else keys
    if doc["type"] == "range" and isinstance(doc["params"]["splits"][0], str):
        ks = keys[:300]
    elif doc["type"] in ("range", "watermark"):
        ks = keys[300:]
    out[name] = [r.route(k) for k in ks]
print(json.dumps(out))
"""


@pytest.mark.parametrize("hashseed", ["1", "4242"])
def test_same_routes_in_another_process(hashseed: str) -> None:
    docs = {name: r.to_dict() for name, r in ROUTERS.items()}
    res = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(docs), env=child_env(PYTHONHASHSEED=hashseed),
                         capture_output=True, text=True, timeout=120, check=True)
    theirs = json.loads(res.stdout)
    keys = [f"k{i}" for i in range(300)] + list(range(300))
    for name, r in ROUTERS.items():
        ks = [(k, 1) for k in keys] if r.key_prefix else keys
        if name == "range_str":
            ks = keys[:300]
        elif name in KEY_ROUTERS:
            ks = keys[300:]
        assert theirs[name] == [r.route(k) for k in ks], name


# -- consistency when the shard set changes --------------------------------------------

N_KEYS = 40_000


def _rand_hashes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, U64, n, dtype=np.uint64, endpoint=True)


def _grow(kind: str, n: int) -> tuple[Router, Router]:
    names = [f"node-{i}" for i in range(n + 1)]
    make: Callable[[list[str]], Router] = {
        "jump": lambda s: JumpRouter(s),
        "ring": lambda s: RingRouter(s, vnodes=128),
        "rendezvous": lambda s: RendezvousRouter(s),
        "rendezvous_weighted": lambda s: RendezvousRouter(s, weights={s[0]: 2.0}),
    }[kind]
    return make(names[:n]), make(names)


@pytest.mark.parametrize("kind", ["jump", "ring", "rendezvous", "rendezvous_weighted"])
@settings(max_examples=examples(10))
@given(n=st.integers(1, 30), seed=st.integers(0, 2**32))
def test_adding_a_shard_moves_keys_only_onto_it(kind: str, n: int, seed: int) -> None:
    before, after = _grow(kind, n)
    h = _rand_hashes(N_KEYS, seed)
    a = np.array(before.shards)[before.route_hashes(h)]
    b = np.array(after.shards)[after.route_hashes(h)]
    moved = a != b
    assert set(b[moved].tolist()) <= {after.shards[-1]}
    frac = moved.mean()
    if kind == "rendezvous_weighted":
        expect = 1 / (n + 1 + 1)  # the first shard weighs 2
    else:
        expect = 1 / (n + 1)
    tol = 6 * math.sqrt(expect / N_KEYS) + (0.5 * expect if kind == "ring" else 0.0)
    assert abs(frac - expect) <= tol


@pytest.mark.parametrize("kind", ["ring", "rendezvous"])
@settings(max_examples=examples(10))
@given(n=st.integers(2, 30), seed=st.integers(0, 2**32), data=st.data())
def test_removing_a_shard_moves_only_its_keys(kind: str, n: int, seed: int, data: st.DataObject) -> None:
    names = [f"node-{i}" for i in range(n)]
    gone = data.draw(st.sampled_from(names))
    rest = [s for s in names if s != gone]
    make = (lambda s: RingRouter(s, vnodes=64)) if kind == "ring" else RendezvousRouter
    before, after = make(names), make(rest)
    h = _rand_hashes(20_000, seed)
    a = np.array(before.shards)[before.route_hashes(h)]
    b = np.array(after.shards)[after.route_hashes(h)]
    assert np.array_equal(a != b, a == gone)


def test_jump_removing_the_last_shard_moves_only_its_keys() -> None:
    h = _rand_hashes(50_000, 7)
    for n in (2, 5, 17, 100):
        a = JumpRouter([f"s{i}" for i in range(n)]).route_hashes(h)
        b = JumpRouter([f"s{i}" for i in range(n - 1)]).route_hashes(h)
        assert np.array_equal(a != b, a == n - 1)


@given(start=st.integers(0, U64 - 11))
def test_modulo_3_to_4_keeps_3_of_every_12(start: int) -> None:
    h = np.arange(12, dtype=np.uint64) + np.uint64(start)
    three = ModuloRouter(["a", "b", "c"]).route_hashes(h)
    four = ModuloRouter(["a", "b", "c", "d"]).route_hashes(h)
    assert int((three == four).sum()) == 3


def test_seed_ring_adding_d() -> None:
    abc = RingRouter(["A", "B", "C"], tokens={"A": [20], "B": [50], "C": [80]})
    abcd = RingRouter(["A", "B", "C", "D"], tokens={"A": [20], "B": [50], "C": [80], "D": [40]})
    hs = [35, 40, 20, 21, 45, 51, 81, 90, 0]
    assert [abcd.shards[i] for i in abcd.route_hashes(hs)] == ["D", "D", "A", "D", "B", "C", "A", "A", "A"]
    before = [abc.shards[i] for i in abc.route_hashes(hs)]
    after = [abcd.shards[i] for i in abcd.route_hashes(hs)]
    assert all(x == y or y == "D" for x, y in zip(before, after))


# -- balance ---------------------------------------------------------------------------


def _max_over_mean(r: Router, n: int = 200_000, seed: int = 11) -> float:
    c = np.bincount(r.route_hashes(_rand_hashes(n, seed)), minlength=len(r.shards))
    return float(c.max() / c.mean())


@pytest.mark.parametrize("n_shards", [3, 10, 50])
def test_balance_near_perfect(n_shards: int) -> None:
    names = [f"node-{i}" for i in range(n_shards)]
    keys = 200_000
    # multinomial noise: max/mean of counts stays within a few standard deviations
    slack = 1 + 5 * math.sqrt(n_shards / keys)
    for r in (JumpRouter(names), RendezvousRouter(names), MaglevRouter(names),
              BucketRouter(names, [names[i % n_shards] for i in range(4096)])):
        assert _max_over_mean(r, keys) <= slack + (1 / 4096 * n_shards if isinstance(r, BucketRouter) else 0)
    t = MaglevRouter(names).table
    assert np.bincount(t).max() - np.bincount(t).min() <= 1


@pytest.mark.parametrize(("n_shards", "vnodes"), [(10, 256), (50, 160), (100, 256)])
def test_ring_balance_bound(n_shards: int, vnodes: int) -> None:
    r = RingRouter([f"node-{i}" for i in range(n_shards)], vnodes=vnodes)
    # The exact share of each shard is the total length of its arcs.
    t = [0, *r.tokens.tolist()]
    arcs = np.diff(np.array(t, dtype=object)).astype(float)
    share = np.bincount(r.token_owners, weights=arcs, minlength=n_shards)
    share[r.token_owners[0]] += 2**64 - 1 - r.tokens[-1].item()
    bound = 1 + math.sqrt(2 * math.log(n_shards) / vnodes)
    assert share.max() / share.mean() <= bound * 1.05
    assert _max_over_mean(r) <= bound * 1.05 + 5 * math.sqrt(n_shards / 200_000)
    # and a fresh document routes the same
    assert load_router(r.to_dict()).route_hashes(list(range(50))).tolist() == r.route_hashes(list(range(50))).tolist()


@pytest.mark.parametrize("name", ["jump", "ring", "bucket", "directory", "maglev_weighted"])
def test_scalar_equals_batch_dataframe_and_arrow_inputs(name: str) -> None:
    r = ROUTERS[name]
    texts = [f"user:{i}" for i in range(500)] + ["", "é", "日本語"]
    ints = list(range(-250, 250)) + [2**63 - 1, -(2**63)]
    want_t = [r.route_index(k) for k in texts]
    want_i = [r.route_index(k) for k in ints]
    pd = pytest.importorskip("pandas")
    assert r.route_many(pd.Series(texts)).tolist() == want_t
    assert r.route_many(pd.Series(ints, dtype="int64")).tolist() == want_i
    pa = pytest.importorskip("pyarrow")
    assert r.route_many(pa.array(texts)).tolist() == want_t
    assert r.route_many(pa.array(texts, type=pa.large_string())).tolist() == want_t
    assert r.route_many(pa.array(ints, type=pa.int64())).tolist() == want_i
    pl = pytest.importorskip("polars")
    assert r.route_many(pl.Series(texts)).tolist() == want_t
