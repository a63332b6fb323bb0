"""shardhash.compat.redis: Redis Cluster key slots and slot-range routing.

Golden vectors (tests/vectors/compat/redis.tsv) come from CLUSTER KEYSLOT
of a real redis-server; the live test pipelines >= 10,000 keys (binary
keys and hash-tag edge cases) to the redis-server that .ci/run starts
(SHARDHASH_REDIS_SOCKET, or SHARDHASH_REDIS_HOST/PORT), or to a private one
started here when redis-server is installed.
"""

from __future__ import annotations

import binascii
import contextlib
import os
import random
import shutil
import socket
from collections.abc import Iterator
from typing import NoReturn

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash import plan
from shardhash._reference import redis as ref
from shardhash.compat import redis
from shardhash.routing import load_router
from tests._support import VECTORS as VECTOR_ROOT
from tests._support import oracle_missing
from tests.compat._live import cluster_redis, keyslots

VECTORS = VECTOR_ROOT / "compat"


def _missing(why: str) -> NoReturn:
    oracle_missing("Redis oracle", why)


def _rows() -> list[tuple[bytes, int]]:
    out = []
    for line in (VECTORS / "redis.tsv").read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#") or line.startswith("key_hex"):
            continue
        k, s = line.split("\t")
        out.append((bytes.fromhex(k), int(s)))
    return out


ROWS = _rows()


def test_vectors_cover_the_edge_cases() -> None:
    keys = {k for k, _ in ROWS}
    assert {b"", b"{}", b"a{}b{c}", b"{{a}}", b"{{}}", b"foo{bar}{zap}", b"{a"} <= keys
    assert len(ROWS) >= 300


def test_golden_vectors_scalar_and_array() -> None:
    for k, s in ROWS:
        assert redis.keyslot(k) == s, k
    assert redis.keyslot_array([k for k, _ in ROWS]).tolist() == [s for _, s in ROWS]


def test_documented_values() -> None:
    assert redis.keyslot(b"foo") == 12182
    assert redis.keyslot(b"123456789") == 12739
    assert redis.keyslot("{user1000}.following") == 3443
    assert redis.keyslot(b"{{}}") == 4092
    assert redis.keyslot(b"") == 0
    # the first tag is empty: the whole key is hashed, not "c"
    assert redis.keyslot(b"a{}b{c}") == ref.redis_keyslot(b"a{}b{c}") != redis.keyslot(b"c")
    assert redis.keyslot(b"foo{bar}{zap}") == redis.keyslot(b"bar")
    assert redis.hash_tag(b"{{a}}") == b"{a"


@given(st.binary(max_size=40))
def test_matches_reference(key: bytes) -> None:
    assert redis.keyslot(key) == ref.redis_keyslot(key)
    assert ref.crc16_xmodem(key) == binascii.crc_hqx(key, 0)


@given(st.lists(st.text(alphabet="{}ab\x00é", max_size=8), max_size=50))
def test_array_matches_scalar(keys: list[str]) -> None:
    got = redis.keyslot_array(keys)
    assert got.dtype == np.uint16
    assert got.tolist() == [redis.keyslot(k) for k in keys]


def test_arrow_and_numpy_inputs() -> None:
    pa = pytest.importorskip("pyarrow")
    keys = [f"{{u{i % 7}}}:{i}" for i in range(1000)]
    expect = redis.keyslot_array(keys)
    for arr in (pa.array(keys), pa.array(keys, pa.large_string()), pa.array([k.encode() for k in keys]),
                pa.chunked_array([keys[:300], keys[300:]]), pa.array(keys).slice(0)):
        assert (redis.keyslot_array(arr) == expect).all()
    assert (redis.keyslot_array(np.array(keys)) == expect).all()
    assert (redis.keyslot_array(np.array(keys, dtype=object)) == expect).all()
    assert (redis.keyslot_array(pa.array(keys).slice(100, 50)) == expect[100:150]).all()
    assert (redis.keyslot_array(keys, threads=2) == expect).all()


# ------------------------------------------------------------------ the oracle


@pytest.fixture(scope="module")
def redis_conn() -> Iterator[socket.socket]:
    path = os.environ.get("SHARDHASH_REDIS_SOCKET")
    port = os.environ.get("SHARDHASH_REDIS_PORT")
    with contextlib.ExitStack() as stack:
        if not path and not port:
            server = shutil.which("redis-server")
            if server is None:
                _missing("no SHARDHASH_REDIS_SOCKET / SHARDHASH_REDIS_PORT and no redis-server on PATH")
            path = stack.enter_context(cluster_redis(server))
        try:
            if path:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
            else:
                s = socket.create_connection((os.environ.get("SHARDHASH_REDIS_HOST", "127.0.0.1"), int(port or 0)))
        except OSError as e:
            _missing(f"cannot connect to redis-server: {e}")
        s.settimeout(30)
        with s:
            yield s


@pytest.mark.oracle
def test_live_cluster_keyslot(redis_conn: socket.socket) -> None:
    rng = random.Random(12)
    keys = [b"", b"{}", b"{}x", b"a{}b{c}", b"{{a}}", b"{{}}", b"foo{bar}{zap}", b"{a", b"}{a}", b"{\x00}"]
    alphabet = b"{}x\x00\xff\x80"
    keys += [bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 10))) for _ in range(5000)]
    keys += [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 64))) for _ in range(5000)]
    keys += [f"{{user{rng.randrange(1000)}}}:{i}".encode() for i in range(1000)]
    expect = keyslots(redis_conn, keys)
    assert len(expect) >= 10_000
    got = redis.keyslot_array(keys)
    bad = [(k, int(g), e) for k, g, e in zip(keys, got, expect) if g != e]
    assert not bad, bad[:5]
    assert [redis.keyslot(k) for k in keys[:2000]] == expect[:2000]


# ------------------------------------------------------------------ the router


def test_cluster_router_routes_by_slot_table() -> None:
    ranges = {"a": [(0, 100), (8000, 16383)], "b": [(101, 7999)]}
    r = redis.ClusterRouter(ranges)
    keys = [f"k{i}".encode() for i in range(3000)]
    slots = redis.keyslot_array(keys)
    expect = [0 if (s <= 100 or s >= 8000) else 1 for s in slots.tolist()]
    assert r.route_many(keys).tolist() == expect
    assert [r.route_index(k) for k in keys[:300]] == expect[:300]
    assert r.route(keys[0]) == r.shards[expect[0]]
    assert r.route_slots(slots).tolist() == expect
    assert r.slot_ranges == {"a": [(0, 100), (8000, 16383)], "b": [(101, 7999)]}
    out = np.empty(len(keys), dtype=np.int32)
    assert r.route_many(keys, out=out) is out


def test_cluster_router_document_round_trip() -> None:
    r = redis.ClusterRouter({"n2": [(5000, 16383)], "n1": [(0, 4999)]}, version=3)
    again = load_router(r.to_json())
    assert again == r and again.shards == ("n2", "n1") and again.version == 3
    assert again.slot_ranges == r.slot_ranges
    assert load_router(r.to_dict()).route(b"foo") == r.route(b"foo")


def test_even_slot_ranges_cover_everything() -> None:
    for n in (1, 2, 3, 5, 7, 16, 100):
        r = redis.ClusterRouter(redis.even_slot_ranges([f"n{i}" for i in range(n)]))
        counts = np.bincount(r.slot_table, minlength=n)
        assert counts.sum() == redis.SLOTS and counts.max() - counts.min() <= 1


def test_plan_resize_three_to_four_masters() -> None:
    old = redis.ClusterRouter(redis.even_slot_ranges(["a", "b", "c"]))
    new = redis.ClusterRouter(redis.even_slot_ranges(["a", "b", "c", "d"]))
    keys = [f"user:{i}" for i in range(30_000)]
    rep = plan.diff(old, new, keys)
    moved_slots = int((old.slot_table != new.slot_table).sum())
    assert abs(rep.moved_fraction - moved_slots / redis.SLOTS) < 0.02
    mr = plan.moved_ranges(old, new)
    assert sum(((m.hi + 1) >> 50) - (m.lo >> 50) for m in mr) == moved_slots
    assert all(m.lo % (1 << 50) == 0 for m in mr)


def test_route_hashes_is_refused() -> None:
    r = redis.ClusterRouter(redis.even_slot_ranges(["a"]))
    with pytest.raises(TypeError, match="slots"):
        r.route_hashes([1, 2])
