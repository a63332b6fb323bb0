"""Arrays in every memory layout NumPy allows reach the compiled kernels safely.

A caller's array may start its items off their alignment (``np.frombuffer``
at an odd offset), be a strided view, hold its items in big-endian byte
order, or be read-only.  Every entry point that hands a caller's array to a
C kernel gives the same answer for each of these as for the plain array
(the kernels' typed loads from an unaligned array are undefined behaviour in
C: the sanitizer run flags them), and every ``out=`` refuses what a kernel
cannot write with a clear TypeError or ValueError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shardhash import Hasher, analysis, hash_array, hotkeys, plan
from shardhash.compat import cassandra, citus, guava, ketama, mongo, postgres, redis, vitess
from shardhash.io import iter_chunks
from shardhash.routing import JumpRouter, RingRouter, Router
from shardhash.routing._kernels import jump_hash_array
from tests._router_cases import ALL_ROUTERS, HASH_ROUTERS

INTS = np.arange(-50, 50, dtype=np.int64) * 7919
HASHES = hash_array(np.arange(100, dtype=np.int64))
WEIGHTS = np.linspace(0.0, 5.0, 100)


def unaligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` whose items start one byte off their alignment."""
    u = np.frombuffer(b"\0" + np.ascontiguousarray(a).tobytes(), dtype=a.dtype, offset=1, count=len(a))
    if a.dtype.alignment > 1:
        assert not u.flags.aligned
    return u


def layouts(a: np.ndarray) -> dict[str, np.ndarray]:
    """``a`` unaligned, as a strided view, big-endian (and big-endian
    unaligned) when its items have a byte order, and read-only."""
    ro = a.copy()
    ro.setflags(write=False)
    out = {"unaligned": unaligned(a), "strided": np.repeat(a, 2)[::2], "readonly": ro}
    if a.dtype.byteorder not in ("|",) and a.dtype.itemsize > 1:
        big = a.astype(a.dtype.newbyteorder(">"))
        out["big-endian"] = big
        out["big-endian unaligned"] = unaligned(big)
    return out


def same_for_layouts(fn: Callable[[np.ndarray], Any], a: np.ndarray) -> None:
    want = fn(a)
    for name, v in layouts(a).items():
        got = fn(v)
        if isinstance(want, np.ndarray):
            assert np.array_equal(np.asarray(got), want), name
        else:
            assert got == want, name


def bad_outs(shape: int | tuple[int, ...], dtype: Any) -> dict[str, np.ndarray]:
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    ro = np.zeros(shape, dt)
    ro.setflags(write=False)
    return {
        "unaligned": np.frombuffer(bytearray(n * dt.itemsize + 1), dtype=dt, offset=1, count=n).reshape(shape),
        "strided": np.zeros(2 * n, dt)[::2].reshape(shape),
        "big-endian": np.zeros(shape, dt.newbyteorder(">")),
        "readonly": ro,
    }


def refuses_bad_outs(fn: Callable[[np.ndarray | None], Any], shape: int | tuple[int, ...], dtype: Any) -> None:
    """``fn(out)`` refuses each unusable ``out`` with a message naming the
    problem, and a good ``out`` gets the answer."""
    want = np.asarray(fn(None))
    words = {"unaligned": "align", "strided": "contiguous", "big-endian": "dtype|array of", "readonly": "read|writ"}
    for name, out in bad_outs(shape, dtype).items():
        before = out.copy()
        with pytest.raises((TypeError, ValueError), match=words[name]):
            fn(out)
        assert np.array_equal(out, before), name  # nothing written
    good = np.zeros(shape, dtype)
    assert fn(good) is good
    assert np.array_equal(good, want)


# ----------------------------------------------------------------- hashing


@pytest.mark.parametrize("dtype", ["i8", "u8", "i4", "u4", "i2", "u1"])
def test_hash_array_layouts(dtype: str) -> None:
    a = (INTS if dtype[0] == "i" else np.abs(INTS)).astype(dtype)
    same_for_layouts(lambda k: hash_array(k, threads=1), a)
    same_for_layouts(lambda k: Hasher("xxh64", seed=3).hash_array(k, threads=2), a)


def test_hash_array_string_layouts() -> None:
    a = np.array([f"key-{i}" for i in range(60)] + ["é", ""])
    same_for_layouts(lambda k: hash_array(k, threads=1), a)


def test_hash_array_out() -> None:
    refuses_bad_outs(lambda o: hash_array(INTS, out=o), 100, np.uint64)
    refuses_bad_outs(lambda o: Hasher("fnv1a_64").hash_array(INTS, out=o), 100, np.uint64)


def test_jump_hash_array() -> None:
    same_for_layouts(lambda h: jump_hash_array(h, 7), HASHES)
    refuses_bad_outs(lambda o: jump_hash_array(HASHES, 7, out=o), 100, np.int32)


# ----------------------------------------------------------------- routers

INT_ROUTERS = {k: v for k, v in ALL_ROUTERS.items() if k not in ("jump_prefix", "range_str")}


@pytest.mark.parametrize("name", sorted(INT_ROUTERS))
def test_route_many_layouts(name: str) -> None:
    r = INT_ROUTERS[name]()
    same_for_layouts(lambda k: r.route_many(k, threads=1), INTS)
    same_for_layouts(lambda k: r.route_many(k), INTS[:10])  # the small-batch path
    same_for_layouts(lambda k: r.route_many(k, threads=1), INTS.astype(np.int32))
    same_for_layouts(lambda k: r.route_many(k, threads=2), HASHES)
    refuses_bad_outs(lambda o: r.route_many(INTS, out=o), 100, np.int32)


@pytest.mark.parametrize("name", ["range_str", "ring"])
def test_route_many_string_layouts(name: str) -> None:
    keys = np.array([f"k{i}" for i in range(80)] + ["a", "zz", "p"])
    r = ALL_ROUTERS[name]()
    same_for_layouts(lambda k: r.route_many(k, threads=1), keys)


@pytest.mark.parametrize("name", sorted(HASH_ROUTERS))
def test_route_hashes_layouts(name: str) -> None:
    r = HASH_ROUTERS[name]()
    same_for_layouts(lambda h: r.route_hashes(h, threads=1), HASHES)
    same_for_layouts(lambda h: r.route_hashes(h, threads=1), np.abs(INTS))  # int64 hashes
    refuses_bad_outs(lambda o: r.route_hashes(HASHES, out=o), 100, np.int32)


REPLICA_ROUTERS = sorted(k for k, f in HASH_ROUTERS.items()
                         if getattr(f(), "replica_rule", None) is not None and k != "jump_prefix")


def test_replica_routers_are_found() -> None:
    assert len(REPLICA_ROUTERS) > 5


@pytest.mark.parametrize("name", REPLICA_ROUTERS)
def test_replica_lists_layouts(name: str) -> None:
    r: Router = HASH_ROUTERS[name]()
    same_for_layouts(lambda k: r.route_replicas_many(k, 2, threads=1), INTS)
    same_for_layouts(lambda h: r.route_replicas_hashes(h, 2, threads=1), HASHES)
    refuses_bad_outs(lambda o: r.route_replicas_many(INTS, 2, out=o), (100, 2), np.int32)
    refuses_bad_outs(lambda o: r.route_replicas_hashes(HASHES, 2, out=o), (100, 2), np.int32)


# ------------------------------------------------------- planning, analysis


def test_plan_diff_layouts() -> None:
    old, new = JumpRouter(list("abcd")), JumpRouter(list("abcde"))
    ring = RingRouter(list("abc"), vnodes=16)

    def matrices(rep: plan.PlanReport) -> tuple[Any, Any]:
        wm = rep.weighted_matrix
        return rep.matrix.tolist(), None if wm is None else wm.tolist()

    same_for_layouts(lambda k: matrices(plan.diff(old, new, k, threads=1)), INTS)
    same_for_layouts(lambda k: matrices(plan.diff(ring, new, k, chunk_size=30)), INTS)
    same_for_layouts(lambda w: matrices(plan.diff(old, new, INTS, weights=w)), WEIGHTS)
    same_for_layouts(lambda k: plan.diff(ring, RingRouter(list("abcd"), vnodes=16), k, replicas=2).replica_moved,
                     INTS)


def test_analysis_layouts() -> None:
    r = JumpRouter(list("abcd"))
    same_for_layouts(lambda k: analysis.shard_load(r, k).to_dict(), INTS)
    same_for_layouts(lambda w: analysis.shard_load(r, INTS, bytes=w, requests=w).to_dict(), WEIGHTS)
    same_for_layouts(lambda k: analysis.top_k(k, 5), INTS % 7)
    same_for_layouts(lambda w: analysis.top_k(INTS % 7, 5, weights=w), WEIGHTS)
    same_for_layouts(lambda k: analysis.hot_keys(k, 3, capacity=10), INTS % 7)
    same_for_layouts(lambda w: analysis.imbalance(w), WEIGHTS)
    same_for_layouts(lambda w: hotkeys.propose_hot_set(INTS % 7, r, weights=w), WEIGHTS)
    same_for_layouts(lambda w: [c[1].tolist() for c in iter_chunks(INTS, w, chunk_size=40)
                                if c[1] is not None], WEIGHTS)


# ------------------------------------------------------------------ compat


def test_compat_hash_layouts() -> None:
    same_for_layouts(lambda k: cassandra.token_array(k, "bigint"), INTS)
    same_for_layouts(lambda k: cassandra.token_array(k, "int"), INTS.astype(np.int32))
    same_for_layouts(lambda k: guava.consistent_hash_array(k, 7), INTS)
    same_for_layouts(lambda k: guava.consistent_hash_array(k, 7), HASHES)
    refuses_bad_outs(lambda o: guava.consistent_hash_array(INTS, 7, out=o), 100, np.int32)
    same_for_layouts(lambda k: mongo.hashed_array(k), INTS)
    same_for_layouts(lambda k: mongo.hashed_array(k), INTS.astype(np.int32))
    same_for_layouts(lambda k: mongo.hashed_array(k), INTS.astype(np.float64) / 4)
    same_for_layouts(lambda k: vitess.keyspace_id_array(k), INTS)
    same_for_layouts(lambda k: vitess.keyspace_id_array(k), HASHES)
    same_for_layouts(lambda k: vitess.keyspace_id_array(k, "xxhash"), INTS)


@pytest.mark.parametrize("pg_type", ["int8", "int4", "int2", "float8", "float4", "timestamp"])
def test_postgres_layouts(pg_type: str) -> None:
    all_values: dict[str, np.ndarray] = {
        "int8": INTS, "int4": INTS.astype(np.int32), "int2": INTS.astype(np.int16),
        "float8": INTS / 8, "float4": (INTS / 8).astype(np.float32), "timestamp": INTS.astype("datetime64[us]"),
    }
    values = all_values[pg_type]
    same_for_layouts(lambda v: postgres.hash_extended_array(v, pg_type, threads=1), values)
    same_for_layouts(lambda v: postgres.hash32_array(v, pg_type, threads=2), values)
    refuses_bad_outs(lambda o: postgres.hash_extended_array(values, pg_type, out=o, threads=1), 100, np.uint64)
    refuses_bad_outs(lambda o: postgres.hash32_array(values, pg_type, out=o), 100, np.int32)


def test_compat_router_layouts() -> None:
    hp = postgres.HashPartitionRouter(["p0", "p1", "p2"], ["int8"])
    same_for_layouts(lambda v: hp.route_columns([v]), INTS)
    refuses_bad_outs(lambda o: hp.route_columns([INTS], out=o), 100, np.int32)
    c = citus.CitusRouter(["s1", "s2", "s3"], "bigint")
    same_for_layouts(lambda v: c.route_many(v), INTS)
    same_for_layouts(lambda h: c.route_worker_hashes(h), INTS.astype(np.int32))
    refuses_bad_outs(lambda o: c.route_worker_hashes(INTS.astype(np.int32), out=o), 100, np.int32)
    k = ketama.KetamaRouter(["a", "b", "c"])
    u32 = (HASHES >> np.uint64(32)).astype(np.uint32)
    same_for_layouts(lambda h: k.route_key_hashes(h, threads=1), u32)
    same_for_layouts(lambda h: k.route_key_hashes(h, threads=1), u32.astype(np.int64))
    refuses_bad_outs(lambda o: k.route_key_hashes(u32, out=o), 100, np.int32)
    rc = redis.ClusterRouter(redis.even_slot_ranges(["n1", "n2", "n3"]))
    same_for_layouts(lambda s: rc.route_slots(s), INTS % 16384)
    refuses_bad_outs(lambda o: rc.route_slots(INTS % 16384, out=o), 100, np.int32)
    v = vitess.VitessRouter(vitess.even_shard_names(4))
    same_for_layouts(lambda h: v.route_keyspace_ids(h), HASHES)
    same_for_layouts(lambda x: v.route_many(x), INTS)
    refuses_bad_outs(lambda o: v.route_keyspace_ids(HASHES, out=o), 100, np.int32)
    t = cassandra.TokenRouter({"a": [0], "b": [2**62], "c": [-(2**62)]}, cql_type="bigint")
    same_for_layouts(lambda x: t.route_tokens(x), INTS * 10**12)
    same_for_layouts(lambda x: t.route_many(x), INTS)
    refuses_bad_outs(lambda o: t.route_tokens(INTS, out=o), 100, np.int32)
    m = mongo.HashedChunkRouter([(mongo.MIN_KEY, 0, "a"), (0, mongo.MAX_KEY, "b")])
    same_for_layouts(lambda h: m.route_hashed(h), INTS * 10**14)
    refuses_bad_outs(lambda o: m.route_hashed(INTS, out=o), 100, np.int32)


# ------------------------------------------- values a cast would silently wrap


def test_keyspace_ids_are_checked_not_cast() -> None:
    v = vitess.VitessRouter(vitess.even_shard_names(4))
    assert v.route_keyspace_ids([2**64 - 1, 0]).tolist() == [3, 0]
    # An int64 -1 cast to uint64 is 2**64 - 1, the last shard's keyspace id.
    with pytest.raises(ValueError, match=r"ksids\[1\] = -1 is negative"):
        v.route_keyspace_ids(np.array([5, -1], dtype=np.int64))
    # NumPy 1.x wraps -1 into uint64 when a list also holds values beyond int64.
    with pytest.raises(ValueError, match=r"ksids\[0\] = -1 is outside"):
        v.route_keyspace_ids([-1, 2**63])
    with pytest.raises(TypeError, match="float64"):
        v.route_keyspace_ids(np.array([1.5]))


def test_mongo_hashed_values_are_checked_not_cast() -> None:
    m = mongo.HashedChunkRouter([(mongo.MIN_KEY, 0, "a"), (0, mongo.MAX_KEY, "b")])
    assert m.route_hashed([-(2**63), 2**63 - 1, -1, 0]).tolist() == [0, 1, 0, 1]
    assert m.route_hashed(np.array([5, 2**63 - 1], dtype=np.uint64)).tolist() == [1, 1]
    # uint64 2**64 - 1 cast to int64 is -1: the other chunk.
    with pytest.raises(ValueError, match=r"values\[1\] = 18446744073709551615 is outside the int64 range"):
        m.route_hashed(np.array([5, 2**64 - 1], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"values\[1\] = 9223372036854775808 is outside the int64 range"):
        m.route_hashed([-1, 2**63])
    with pytest.raises(TypeError, match="float64"):
        m.route_hashed(np.array([-0.5]))  # a cast truncates it to 0: the other chunk
    with pytest.raises(TypeError, match=r"values\[1\] = 'x' is not an integer"):
        m.route_hashed([1, "x"])
    with pytest.raises(TypeError, match=r"values\[0\] = True is not an integer"):
        m.route_hashed([True])
    assert m.route_hashed([]).tolist() == []


def test_cassandra_tokens_are_checked_not_cast() -> None:
    t = cassandra.TokenRouter({"a": [0], "b": [2**62], "c": [-(2**62)]}, cql_type="bigint")
    assert t.route_tokens([-(2**63), -1, 1, 2**63 - 1]).tolist() == t.route_tokens(
        np.array([-(2**63), -1, 1, 2**63 - 1], dtype=np.int64)).tolist()
    assert t.route_tokens(np.array([1, 2**62 + 1], dtype=np.uint64)).tolist() == t.route_tokens([1, 2**62 + 1]).tolist()
    # uint64 2**64 - 1 cast to int64 is token -1.
    with pytest.raises(ValueError, match=r"tokens\[0\] = 18446744073709551615 is outside the int64 range"):
        t.route_tokens(np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"tokens\[1\] = 9223372036854775808 is outside the int64 range"):
        t.route_tokens([-1, 2**63])
    with pytest.raises(TypeError, match="float64"):
        t.route_tokens(np.array([0.5]))


def test_arrow_buffers_off_their_alignment() -> None:
    """Arrow allows a buffer at any address (``from_buffers`` over a sliced
    buffer): offsets and view-buffer sizes off their alignment are copied
    before a kernel reads them."""
    pa = pytest.importorskip("pyarrow")

    def shifted(buf: Any) -> Any:
        return pa.py_buffer(b"\0" + buf.to_pybytes()).slice(1)

    words = ["ab", "cde", "", "f" * 40, "é"] * 13
    for typ in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        a = pa.array([w.encode() for w in words] if typ in (pa.binary(), pa.large_binary()) else words, type=typ)
        _, offsets, data = a.buffers()
        odd = pa.Array.from_buffers(typ, len(a), [None, shifted(offsets), data])
        assert shifted(offsets).address % 4 != 0
        assert odd.to_pylist() == a.to_pylist()
        assert hash_array(odd, threads=1).tolist() == hash_array(a, threads=1).tolist()
        sliced = pa.Array.from_buffers(typ, len(a) - 3, [None, shifted(offsets), data], offset=3)
        assert hash_array(sliced).tolist() == hash_array(a.slice(3)).tolist()
    ints = pa.array(INTS)
    odd_ints = pa.Array.from_buffers(pa.int64(), len(ints), [None, shifted(ints.buffers()[1])])
    assert hash_array(odd_ints).tolist() == hash_array(INTS).tolist()
    assert JumpRouter(list("abc")).route_many(odd_ints).tolist() == JumpRouter(list("abc")).route_many(INTS).tolist()
