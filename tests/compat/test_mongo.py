"""shardhash.compat.mongo: hashed shard keys and chunk routing.

No mongod runs here: tests/vectors/compat/mongo.tsv holds the vectors of
MongoDB's own src/mongo/db/hasher_test.cpp (BSONElementHasher::hash64).
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import math
import random
import struct

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from shardhash import plan
from shardhash._reference import mongo as ref
from shardhash.compat import mongo
from shardhash.routing import load_router
from tests._support import VECTORS as VECTOR_ROOT

VECTORS = VECTOR_ROOT / "compat"


def _value(kind: str, text: str) -> object:
    if kind in ("int", "long"):
        return int(text)
    if kind == "double":
        return float(text)
    if kind == "string":
        return text
    if kind == "minkey":
        return mongo.MIN_KEY
    if kind == "maxkey":
        return mongo.MAX_KEY
    if kind in ("object_json", "array_json"):
        return json.loads(text)
    if kind == "bindata":
        sub, data = text.split(":")
        return mongo.BinData(bytes.fromhex(data), int(sub))
    if kind == "oid":
        return mongo.ObjectId.from_hex(text)
    if kind == "bool":
        return text == "true"
    if kind == "date_ms":
        return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=int(text))
    raise AssertionError(kind)


def _rows() -> list[tuple[str, str, int]]:
    out = []
    for line in (VECTORS / "mongo.tsv").read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#") or line.startswith("kind"):
            continue
        k, v, h = line.split("\t")
        out.append((k, v, int(h)))
    return out


def test_published_vectors() -> None:
    rows = _rows()
    assert len(rows) >= 30
    for kind, text, h in rows:
        assert mongo.hashed(_value(kind, text)) == h, (kind, text)
    nums = [(k, t, h) for k, t, h in rows if k in ("int", "long", "double")]
    assert mongo.hashed_array([_value(k, t) for k, t, _ in nums]).tolist() == [h for _, _, h in nums]
    floats = np.array([float(t) for k, t, _ in nums if k == "double"])
    assert mongo.hashed_array(floats).tolist() == [h for k, _, h in nums if k == "double"]


def test_uuid_and_bytes_forms() -> None:
    import uuid

    u = uuid.UUID(bytes=bytes(range(16)))
    assert mongo.hashed(u) == mongo.hashed(mongo.BinData(u.bytes, 4)) == 6084661258071355978
    assert mongo.hashed(bytes([0, 1, 2, 3, 4, 6])) == 7252465090394235301


@given(st.one_of(st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True, allow_infinity=True)))
def test_numbers_match_reference(x: float | int) -> None:
    assert mongo.hashed(x) == ref.mongo_hash_number(x)


def test_number_edge_rules() -> None:
    assert mongo.hashed(2.0**63) == mongo.hashed(-(2**63))  # the legacy 2**63 quirk
    assert mongo.hashed(2.0**64) == mongo.hashed(2**63 - 1)
    assert mongo.hashed(-(2.0**70)) == mongo.hashed(-(2**63))
    assert mongo.hashed(float("nan")) == mongo.hashed(0) == mongo.hashed(-0.0)
    assert mongo.hashed(float("inf")) == mongo.hashed(2**63 - 1)
    assert mongo.hashed(-2.9) == mongo.hashed(-2)
    vals = np.array([2.0**63, 2.0**64, -(2.0**70), math.nan, -0.0, 1e300, -2.5])
    assert mongo.hashed_array(vals).tolist() == [mongo.hashed(float(v)) for v in vals]


def test_arrays_match_scalars() -> None:
    rng = random.Random(3)
    ints = np.array([rng.randrange(-(2**63), 2**63) for _ in range(2000)], dtype=np.int64)
    assert mongo.hashed_array(ints).tolist() == [ref.mongo_hash_number(int(v)) for v in ints]
    assert (mongo.hashed_array(ints, threads=2) == mongo.hashed_array(ints)).all()
    assert mongo.hashed_array(np.arange(10, dtype=np.uint32)).tolist() == [mongo.hashed(i) for i in range(10)]
    mixed = ["a", 1, None, True, {"x": [1, 2]}, 2.5]
    assert mongo.hashed_array(mixed).tolist() == [mongo.hashed(v) for v in mixed]


def test_document_field_order_matters() -> None:
    assert mongo.hashed({"a": 1, "b": 2}) != mongo.hashed({"b": 2, "a": 1})
    # field names are hashed: an array is not the document {"0": ..., "1": ...} (different type)
    assert mongo.hashed(["x"]) != mongo.hashed({"0": "x"})
    msg = struct.pack("<ii", 0, 20) + struct.pack("<i", 15) + b"0\x00" + struct.pack("<i", 2) + b"x\x00" \
        + struct.pack("<i", 0)
    import hashlib

    assert mongo.hashed({"0": "x"}) == struct.unpack("<q", hashlib.md5(msg).digest()[:8])[0]


def test_initial_split_points() -> None:
    assert mongo.initial_split_points(4) == [-4611686018427387902, 0, 4611686018427387902]
    assert mongo.initial_split_points(1) == []
    for n in range(1, 40):
        pts = mongo.initial_split_points(n)
        assert len(pts) == n - 1 and pts == sorted(pts) and pts == [-p for p in reversed(pts)]
        if n > 1:
            gaps = np.diff(np.array([-(2**63)] + pts + [2**63], dtype=object)).astype(float)
            assert gaps.max() / gaps.min() < 1.01 if n > 2 else True


def test_chunk_router_matches_reference() -> None:
    rng = random.Random(9)
    bounds = sorted({rng.randrange(-(2**63) + 1, 2**63) for _ in range(30)})
    shards = ["s0", "s1", "s2"]
    chunks = [(mongo.MIN_KEY if i == 0 else bounds[i - 1], mongo.MAX_KEY if i == len(bounds) else bounds[i],
               shards[rng.randrange(3)]) for i in range(len(bounds) + 1)]
    r = mongo.HashedChunkRouter(chunks)
    values = [rng.randrange(-(10**12), 10**12) for _ in range(3000)] + ["x", "y", None]
    got = r.route_many(values)
    for v, s in zip(values, got.tolist()):
        h = mongo.hashed(v)
        i = bisect.bisect_right(bounds, h)
        assert r.shards[s] == chunks[i][2]
    assert [r.route_index(v) for v in values[:200]] == got[:200].tolist()
    assert r.chunks[0][0] is mongo.MIN_KEY and r.chunks[-1][1] is mongo.MAX_KEY
    # a hashed value equal to a bound belongs to the chunk starting there ([min, max))
    assert r.route_hashed([bounds[5]]).tolist() == [r.shards.index(chunks[6][2])]


def test_document_round_trip() -> None:
    r = mongo.HashedChunkRouter.from_split_points(mongo.initial_split_points(6), ["b", "a"], version=5)
    again = load_router(r.to_json())
    assert again == r and again.shards == ("b", "a") and again.chunks == r.chunks


def test_plan_two_to_three_shards() -> None:
    old = mongo.HashedChunkRouter.from_split_points(mongo.initial_split_points(4), ["s0", "s1"])
    new = mongo.HashedChunkRouter.from_split_points(mongo.initial_split_points(6), ["s0", "s1", "s2"])
    rep = plan.diff(old, new, np.arange(60_000, dtype=np.int64))
    mr = plan.moved_ranges(old, new)
    assert abs(sum(m.share for m in mr) - rep.moved_fraction) < 0.02
    assert {m.destination for m in mr} >= {"s2"}
