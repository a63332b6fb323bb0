"""shardhash.compat.cassandra: Murmur3Partitioner tokens, CQL key bytes, rings.

Golden vectors (tests/vectors/compat/cassandra.tsv) come from
cassandra-driver's Murmur3Token.from_key; the live test compares >= 10,000
binary keys with high tail bytes against the installed driver.
"""

from __future__ import annotations

import bisect
import random
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash import plan
from shardhash._reference import cassandra as ref
from shardhash.compat import _native, cassandra
from shardhash.routing import load_router
from tests._support import VECTORS as VECTOR_ROOT
from tests._support import oracle_missing

VECTORS = VECTOR_ROOT / "compat"
MIN, MAX = -(1 << 63), (1 << 63) - 1


def _driver() -> tuple[Any, Any]:  # cassandra-driver is unannotated
    try:
        from cassandra.cmurmur3 import murmur3
        from cassandra.metadata import Murmur3Token
    except ImportError as e:
        oracle_missing("cassandra-driver", str(e))
    return murmur3, Murmur3Token


def _rows() -> list[tuple[bytes, int]]:
    out = []
    for line in (VECTORS / "cassandra.tsv").read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#") or line.startswith("key_hex"):
            continue
        k, t, _src = line.split("\t")
        out.append((bytes.fromhex(k), int(t)))
    return out


ROWS = _rows()


def test_golden_vectors() -> None:
    assert len(ROWS) > 200
    assert any(len(k) % 16 and k[-1] >= 0x80 for k, _ in ROWS)  # the sign quirk is exercised
    for k, t in ROWS:
        assert cassandra.token(k) == t, k.hex()
    assert cassandra.token_array([k for k, _ in ROWS]).tolist() == [t for _, t in ROWS]


def test_published_values() -> None:
    # compat-facts / driver unit tests (tests/unit/test_metadata.py) / gocql issue 1033
    assert cassandra.token(cassandra.serialize(1, "int")) == -4069959284402364209
    assert cassandra.token(cassandra.serialize(1, "bigint")) == 6292367497774912474
    assert cassandra.token(cassandra.serialize("hello", "text")) == -3758069500696749310
    assert cassandra.token(cassandra.serialize((1, "a"), ("int", "text"))) == 6516349416904725244
    assert cassandra.token(b"\xfe" * 8) == -8927430733708461935
    assert cassandra.token(b"") == MIN


def test_differs_from_standard_murmur3_on_high_tail_bytes() -> None:
    mmh3 = pytest.importorskip("mmh3")
    key = b"abc\xff"
    standard = mmh3.hash64(key, signed=True)[0]
    assert cassandra.token(key) != standard
    assert cassandra.token(b"abcd") == mmh3.hash64(b"abcd", signed=True)[0]


@given(st.binary(max_size=80))
def test_matches_reference(key: bytes) -> None:
    assert cassandra.token(key) == ref.cassandra_token(key)


@given(st.lists(st.binary(max_size=40), max_size=60))
def test_array_matches_scalar(keys: list[bytes]) -> None:
    got = cassandra.token_array(keys)
    assert got.dtype == np.int64
    assert got.tolist() == [cassandra.token(k) for k in keys]


def test_typed_arrays_match_serialize() -> None:
    v = np.array([0, 1, -1, 2**31 - 1, -(2**31), 123456789], dtype=np.int64)
    assert cassandra.token_array(v, "int").tolist() == [cassandra.token(cassandra.serialize(int(x), "int")) for x in v]
    big = np.array([0, 1, -1, 2**63 - 1, -(2**63)], dtype=np.int64)
    assert cassandra.token_array(big, "bigint").tolist() == \
        [cassandra.token(cassandra.serialize(int(x), "bigint")) for x in big]
    words = ["a", "héllo", ""]
    assert cassandra.token_array(words, "text").tolist() == [cassandra.token(w.encode()) for w in words]
    comp = [(1, "a"), (2, "b")]
    assert cassandra.token_array(comp, ("int", "text")).tolist() == \
        [cassandra.token(cassandra.serialize(c, ("int", "text"))) for c in comp]
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert cassandra.token_array([u], "uuid").tolist() == [cassandra.token(u.bytes)]
    assert (cassandra.token_array(list(range(100)), "bigint", threads=2) ==
            cassandra.token_array(np.arange(100), "bigint")).all()
    # strided, reversed and byte-swapped arrays: the same tokens as their contiguous copies
    # (a strided int64 array once failed with "ndarray is not C-contiguous")
    for t in ("bigint", "int"):
        for a in (np.arange(200, dtype=np.int64)[::2], np.arange(100, dtype=np.int64)[::-1],
                  np.arange(100, dtype=">i8"), np.arange(100, dtype=np.int32)[::3]):
            assert cassandra.token_array(a, t).tolist() == cassandra.token_array(a.tolist(), t).tolist()


def test_arrow_input() -> None:
    pa = pytest.importorskip("pyarrow")
    keys = [bytes([i % 256, 0xFF, i // 256]) for i in range(2000)]
    assert (cassandra.token_array(pa.array(keys)) == cassandra.token_array(keys)).all()


# ------------------------------------------------------------------ the oracle


@pytest.mark.oracle
def test_live_driver_tokens() -> None:
    murmur3, Murmur3Token = _driver()
    rng = random.Random(99)
    keys = []
    for i in range(12_000):
        n = 1 + i % 64
        keys.append(bytes(rng.randrange(0x70, 0x100) if rng.random() < 0.7 else rng.randrange(256)
                          for _ in range(n)))
    assert sum(1 for k in keys if len(k) % 16 and k[-1] >= 0x80) > 5000
    got = cassandra.token_array(keys)
    expect = [Murmur3Token.from_key(k).value for k in keys]
    bad = [(k.hex(), int(g), e) for k, g, e in zip(keys, got, expect) if g != e]
    assert not bad, bad[:5]
    raw = [murmur3(k) for k in keys[:2000]]
    assert [MAX if h == MIN else h for h in raw] == [cassandra.token(k) for k in keys[:2000]]


@pytest.mark.oracle
def test_live_driver_serialization() -> None:
    _driver()
    from cassandra.cqltypes import Int32Type, LongType, UTF8Type, UUIDType
    from cassandra.query import SimpleStatement

    rng = random.Random(5)
    stmt = SimpleStatement("SELECT 1")
    for _ in range(300):
        i, b = rng.randrange(-(2**31), 2**31), rng.randrange(-(2**63), 2**63)
        s = "".join(chr(rng.randrange(32, 0x3000)) for _ in range(rng.randrange(0, 12)))
        u = uuid.UUID(int=rng.getrandbits(128))
        assert cassandra.serialize(i, "int") == Int32Type.serialize(i, 4)
        assert cassandra.serialize(b, "bigint") == LongType.serialize(b, 4)
        assert cassandra.serialize(s, "text") == UTF8Type.serialize(s, 4)
        assert cassandra.serialize(u, "uuid") == UUIDType.serialize(u, 4)
        parts = [Int32Type.serialize(i, 4), UTF8Type.serialize(s, 4), UUIDType.serialize(u, 4)]
        packed = b"".join(stmt._key_parts_packed(parts))
        assert cassandra.serialize((i, s, u), ("int", "text", "uuid")) == packed


# ------------------------------------------------------------------ the ring


def _ref_owner(tokens: dict[str, list[int]], t: int) -> str:
    ring = sorted((tok, node) for node, ts in tokens.items() for tok in ts)
    i = bisect.bisect_left([x for x, _ in ring], t)
    return ring[0 if i == len(ring) else i][1]


def test_ring_matches_reference_with_vnodes() -> None:
    rng = random.Random(3)
    tokens = {f"node{n}": [rng.randrange(MIN, MAX) for _ in range(16)] for n in range(6)}
    r = cassandra.TokenRouter(tokens)
    keys = [rng.randbytes(rng.randrange(1, 30)) for _ in range(3000)] + [b""]
    got = r.route_many(keys)
    expect = [_ref_owner(tokens, cassandra.token(k)) for k in keys]
    assert [r.shards[i] for i in got] == expect
    assert [r.route(k) for k in keys[:300]] == expect[:300]
    # tokens on ring boundaries belong to the node holding that token
    some = tokens["node2"][0]
    assert r.shards[int(r.route_tokens([some])[0])] == "node2"
    assert r.shards[int(r.route_tokens([MAX])[0])] == _ref_owner(tokens, MAX)


def test_owned_ranges_agree_with_routing() -> None:
    rng = random.Random(4)
    tokens = {f"n{n}": [rng.randrange(MIN, MAX) for _ in range(4)] for n in range(3)}
    r = cassandra.TokenRouter(tokens)
    ranges = r.owned_ranges()
    assert ranges[0][0] == 0 and ranges[-1][1] == 2**64 - 1
    assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))
    probe = [rng.randrange(MIN, MAX) for _ in range(500)] + [MIN, MAX] + [t for ts in tokens.values() for t in ts]
    los = [lo for lo, _, _ in ranges]
    for t in probe:
        lo, hi, s = ranges[bisect.bisect_right(los, t + 2**63) - 1]
        assert lo <= t + 2**63 <= hi
        assert s == int(r.route_tokens([t])[0])


def test_document_round_trip_and_replicas() -> None:
    r = cassandra.TokenRouter({"b": [10, -10], "a": [0]}, cql_type=("int", "text"), version=7)
    again = load_router(r.to_json())
    assert again == r and again.shards == ("b", "a") and again.cql_type == ("int", "text")
    assert again.route((1, "x")) == r.route((1, "x"))
    assert r.tokens == {"b": [-10, 10], "a": [0]}
    reps = r.replicas((1, "x"), 2)
    assert len(reps) == 2 and reps[0] == r.route((1, "x")) and set(reps) == {"a", "b"}
    assert r.replicas((1, "x"), 5) == reps


def test_plan_ring_gains_two_nodes() -> None:
    old = cassandra.TokenRouter({f"n{i}": [t] for i, t in enumerate(cassandra.evenly_spaced_tokens(4))},
                                cql_type="bigint")
    # two new nodes bisect the ranges of n0 and n2
    grown = dict(old.tokens)
    grown["n4"] = [old.tokens["n0"][0] + 2**61]
    grown["n5"] = [old.tokens["n2"][0] + 2**61]
    new = cassandra.TokenRouter(grown, cql_type="bigint")
    rep = plan.diff(old, new, np.arange(200_000, dtype=np.int64))
    assert 0.2 < rep.moved_fraction < 0.3  # two eighths of the ring
    moved = plan.moved_ranges(old, new)
    assert {(m.source, m.destination) for m in moved} == {("n1", "n4"), ("n3", "n5")}
    assert abs(sum(m.share for m in moved) - 0.25) < 1e-12


def test_random_tokens_and_a_vnode_ring_growing() -> None:
    ring = {f"n{i}": cassandra.random_tokens(16, seed=i) for i in range(6)}
    assert all(len(v) == 16 and v == sorted(v) for v in ring.values())
    assert cassandra.random_tokens(16, seed=3) == ring["n3"]
    taken = [t for ts in ring.values() for t in ts]
    extra = cassandra.random_tokens(16, seed=0, exclude=taken)
    assert not set(extra) & set(taken)
    old = cassandra.TokenRouter(ring, cql_type="text")
    new = cassandra.TokenRouter({**ring, "n6": extra}, cql_type="text")
    keys = [f"user{i}" for i in range(30_000)]
    rep = plan.diff(old, new, keys)
    assert rep.matrix[:, :6].trace() + rep.matrix[:, 6].sum() == rep.total  # keys only move to n6
    assert 0.05 < rep.moved_fraction < 0.3
    with pytest.raises(ValueError, match="num_tokens"):
        cassandra.random_tokens(0)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 256, 1001])
def test_ring_lookups_match_searchsorted(m: int) -> None:
    # the branch-free lower bound, four tokens at a time, against numpy's
    # search: repeated ring tokens, tokens on, next to and beyond them, and
    # batches whose length is not a multiple of four
    rng = np.random.default_rng(m)
    ring = np.sort(rng.integers(-(2**63), 2**63 - 1, m, dtype=np.int64))
    if m > 4:
        ring[1:4] = ring[1]
    owners = rng.integers(0, 9, m).astype(np.int32)
    edge = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max], dtype=np.int64)
    tokens = np.concatenate([ring, ring - 1, ring + 1, edge, rng.integers(-(2**63), 2**63 - 1, 4099, dtype=np.int64)])
    want = np.searchsorted(ring, tokens, side="left")
    want[want == m] = 0
    for n in (len(tokens), len(tokens) - 1, 3, 0):
        assert _native.cassandra_ring_index(ring, tokens[:n]).tolist() == want[:n].tolist()
        assert _native.cassandra_ring_owner(ring, owners, tokens[:n]).tolist() == owners[want[:n]].tolist()
    assert _native.cassandra_ring_owner(ring, owners, tokens, threads=2).tolist() == owners[want].tolist()


def test_ring_owner_checks_its_tables() -> None:
    ring = np.array([1, 5, 9], dtype=np.int64)
    with pytest.raises(ValueError, match="2 owners for 3 ring tokens"):
        _native.cassandra_ring_owner(ring, np.zeros(2, np.int32), np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="sorted"):
        _native.cassandra_ring_owner(ring[::-1].copy(), np.zeros(3, np.int32), np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="no tokens"):
        _native.cassandra_ring_owner(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(1, np.int64))


class _B(bytes):
    pass


class _BA(bytearray):
    pass


def test_first_not_bytes_like_finds_the_first_other_key() -> None:
    ok: list[object] = [b"a", _B(b"b"), bytearray(b"c"), _BA(b"d"), memoryview(b"e")] * 300
    assert _native.first_not_bytes_like(ok) == -1
    assert _native.first_not_bytes_like(tuple(ok)) == -1
    assert _native.first_not_bytes_like([]) == -1
    for bad in ("text", 1, None, np.frombuffer(b"ab", np.uint8), np.int64(3)):
        assert _native.first_not_bytes_like([*ok, bad, "later"]) == len(ok)
    with pytest.raises(TypeError, match="list or tuple"):
        _native.first_not_bytes_like(iter(ok))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["a str key", 7, None])
def test_blob_route_many_names_the_first_key_that_is_not_bytes(bad: object) -> None:
    r = cassandra.TokenRouter({"a": [-(2**62)], "b": [0], "c": [2**62]})
    keys: list[object] = [b"k%d" % i for i in range(5000)]
    keys[3210] = bad
    with pytest.raises(TypeError, match="position 3210"):
        r.route_many(keys)
    keys[3210] = b"k3210"
    assert r.route_many(keys).tolist() == [r.route_index(k) for k in keys]
