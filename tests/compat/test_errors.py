"""Bad input to every compatibility mode (PostgreSQL, Citus, Guava, Cassandra,
ketama, Vitess, MongoDB, Redis): a clear TypeError / ValueError /
OverflowError naming the offending value or position, never a crash."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash.compat import _native, cassandra, citus, guava, ketama, mongo, redis, vitess
from shardhash.compat import postgres as pg
from shardhash.routing import load_router
from tests._support import ill_typed


@pytest.mark.parametrize("value, t, exc, match", [
    (1.5, "int4", TypeError, "int4 value must be an int"),
    (1.0, "int8", TypeError, "must be an int"),
    (True, "int4", TypeError, "must be an int"),
    ("42", "int4", TypeError, "must be an int"),
    (1 << 31, "int4", ValueError, "out of range for int4"),
    (-(1 << 31) - 1, "int4", ValueError, "out of range for int4"),
    (1 << 15, "int2", ValueError, "out of range for int2"),
    (1 << 63, "int8", ValueError, "out of range for int8"),
    (None, "int4", TypeError, "NULL"),
    (b"abc", "text", TypeError, "must be a str"),
    ("a\x00b", "text", ValueError, "NUL"),
    ("\ud800", "text", UnicodeEncodeError, "surrogates"),
    ("abc", "bytea", TypeError, "bytes-like"),
    ("not-a-uuid", "uuid", ValueError, "invalid uuid"),
    (12, "uuid", TypeError, "uuid.UUID"),
    (dt.datetime(2020, 1, 1), "date", TypeError, "datetime.date"),
    (dt.date(2020, 1, 1), "timestamp", TypeError, "datetime.datetime"),
    (dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc), "timestamp", ValueError, "naive"),
    (dt.datetime(2020, 1, 1), "timestamptz", ValueError, "timezone-aware"),
    ("1.5", "float8", TypeError, "must be a float"),
    (10 ** 400, "float8", ValueError, "out of range"),
    (1e39, "float4", ValueError, "out of range for float4"),
])
def test_bad_scalars(value: object, t: str, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        pg.hash32(value, t)
    with pytest.raises(exc, match=match):
        pg.hash_extended(value, t)


def test_bad_types_and_seeds() -> None:
    with pytest.raises(ValueError, match="unsupported PostgreSQL type 'money'"):
        pg.hash32(1, "money")
    with pytest.raises(TypeError, match="type must be a str"):
        pg.hash32(1, ill_typed(int))
    with pytest.raises(TypeError, match="seed must be an int"):
        pg.hash_extended(1, "int4", seed=ill_typed(1.0))
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        pg.hash_extended(1, "int4", seed=1 << 64)
    assert pg.hash_extended(1, "int4", seed=-1) == pg.hash_extended(1, "int4", seed=(1 << 64) - 1)


def test_bad_arrays_name_the_position() -> None:
    with pytest.raises(TypeError, match="at position 2"):
        pg.hash32_array([1, 2, 3.5], "int4")
    with pytest.raises(ValueError, match=r"value 2147483648 at position 1 out of range for int4"):
        pg.hash32_array(np.array([0, 1 << 31], dtype=np.int64), "int4")
    with pytest.raises(ValueError, match="at position 1"):
        pg.hash32_array([1, 1 << 40], "int4")
    with pytest.raises(TypeError, match="integers, not an array of float64"):
        pg.hash_extended_array(np.array([1.0, 2.0]), "int8")
    with pytest.raises(TypeError, match="position 1"):
        pg.hash_extended_array([1, None], "int8")
    with pytest.raises(TypeError, match="sequence or array"):
        pg.hash_extended_array("abc", "text")
    with pytest.raises(TypeError, match="sequence or array of uuid values"):
        pg.hash_extended_array(uuid.UUID(int=1), "uuid")
    with pytest.raises(TypeError, match="drops trailing NUL"):
        pg.hash_extended_array(np.array([b"a\x00"]), "bytea")
    with pytest.raises(ValueError, match="NaT"):
        pg.hash_extended_array(np.array(["NaT"], dtype="datetime64[D]"), "date")
    with pytest.raises(ValueError, match="not a whole day"):
        pg.hash_extended_array(np.array(["2020-01-01T12"], dtype="datetime64[h]"), "date")
    with pytest.raises(ValueError, match="sub-microsecond"):
        pg.hash_extended_array(np.array([1], dtype="datetime64[ns]"), "timestamp")
    with pytest.raises(ValueError, match="out of range for float4"):
        pg.hash_extended_array(np.array([1e300]), "float4")
    with pytest.raises(ValueError, match="out has length 2 but there are 3 keys"):
        pg.hash_extended_array([1, 2, 3], "int8", out=np.empty(2, dtype=np.uint64))
    with pytest.raises(TypeError, match="out must have dtype uint64"):
        pg.hash_extended_array([1, 2], "int8", out=np.empty(2, dtype=np.int64))
    with pytest.raises(ValueError, match="threads"):
        pg.hash_extended_array([1, 2], "int8", threads=0)


def test_code_points_beyond_unicode() -> None:
    a = np.array(["ok", "ab"], dtype="U2")
    a.view(np.uint32)[3] = 0x110000            # numpy lets a str array hold it; PostgreSQL cannot
    with pytest.raises(ValueError, match="at position 1: .*beyond U\\+10FFFF"):
        pg.hash_extended_array(a, "text")
    with pytest.raises(ValueError, match="beyond U\\+10FFFF"):
        pg.hash32(a.tolist()[1], "varchar")


def test_out_sharing_memory_with_the_keys() -> None:
    buf = np.arange(20, dtype=np.int64)
    with pytest.raises(ValueError, match="share memory"):
        pg.hash_extended_array(buf[1:], "int8", out=buf[:-1].view(np.uint64))
    words = buf.view(np.int32)
    with pytest.raises(ValueError, match="share memory"):
        pg.hash32_array(words[:20], "int4", out=words[10:30])
    with pytest.raises(ValueError, match="share memory"):
        guava.consistent_hash_array(buf[:10], 10, out=words[:10])


def test_arrow_text_with_nul() -> None:
    pa = pytest.importorskip("pyarrow")
    with pytest.raises(ValueError, match="position 1 contains a NUL"):
        pg.hash32_array(pa.array(["ok", "b\x00d"]), "text")
    # a NUL hidden under a null slot does not count; a later real one does
    arr = pa.Array.from_buffers(pa.string(), 3, [pa.py_buffer(bytes([0b101])),
                                                 pa.py_buffer(np.array([0, 1, 2, 4], np.int32).tobytes()),
                                                 pa.py_buffer(b"a\x00b\x00")], null_count=1)
    assert arr.to_pylist() == ["a", None, "b\x00"]
    with pytest.raises(ValueError, match="position 2 contains a NUL"):
        pg.partition_of_array(columns=[arr], modulus=4, types=("text",))
    with pytest.raises(TypeError, match="null at position 0"):
        pg.hash32_array(pa.array([None, "x"]), "text")
    with pytest.raises(TypeError, match="Arrow binary"):
        pg.hash32_array(pa.array(["x"]), "bytea")


def test_rows_and_moduli() -> None:
    with pytest.raises(ValueError, match="row has 1 values but the partition key has 2"):
        pg.partition_of((1,), 4, ("int4", "text"))
    with pytest.raises(ValueError, match="modulus must be in"):
        pg.partition_of((1,), 0, ("int4",))
    with pytest.raises(TypeError, match="modulus must be an int"):
        pg.partition_of((1,), ill_typed(2.0), ("int4",))
    with pytest.raises(TypeError, match="types must be a non-empty"):
        pg.partition_of((1,), 4, ())
    with pytest.raises(ValueError, match="row at position 1"):
        pg.partition_of_array([(1, "a"), (2,)], 4, ("int4", "text"))
    with pytest.raises(ValueError, match="different lengths"):
        pg.partition_of_array(columns=[[1, 2], ["a"]], modulus=4, types=("int4", "text"))
    with pytest.raises(TypeError, match="exactly one of rows or columns"):
        pg.partition_of_array(None, 4, ("int4",))


def test_routers_reject_bad_input() -> None:
    r = pg.HashPartitionRouter(["a", "b"], ("int8",))
    with pytest.raises(TypeError, match="route_many"):
        r.route_hashes(np.zeros(3, dtype=np.uint64))
    with pytest.raises(TypeError, match="must be an int"):
        r.route(1.5)
    with pytest.raises(ValueError, match="unsupported PostgreSQL type"):
        pg.HashPartitionRouter(["a"], ("money",))
    with pytest.raises(ValueError, match="duplicate shard id"):
        pg.HashPartitionRouter(["a", "a"], ("int8",))
    doc = r.to_dict()
    doc["params"]["types"] = []
    with pytest.raises(ValueError):
        load_router(doc)

    c = citus.CitusRouter(["s0", "s1"], "int4")
    with pytest.raises(ValueError, match="cannot be NULL"):
        c.route(None)
    with pytest.raises(ValueError, match="out of range for int4"):
        c.route(1 << 40)
    with pytest.raises(TypeError, match="route_many"):
        c.route_hashes([1, 2])
    with pytest.raises(ValueError, match="signed 32-bit"):
        c.route_worker_hashes([1 << 31])


@pytest.mark.parametrize("bounds, exc, match", [
    ([(2, 0), (3, 1)], ValueError, "3 does not divide 2|2 does not divide 3"),
    ([(2, 0), (4, 0)], ValueError, "would overlap partition 'a'"),
    ([(2, 2), (2, 1)], ValueError, "remainder 2 must be in"),
    ([(0, 0), (2, 1)], ValueError, "modulus 0 must be in"),
    ([(2, 0)], ValueError, "1 bounds given for 2 partitions"),
    ([(2, 0), (2.0, 1)], TypeError, "must hold ints"),
    ([(2, 0), 2], TypeError, r"bounds\[1\] must be a \(modulus, remainder\) pair"),
    ("2,0", TypeError, "sequence of"),
])
def test_partition_bounds(bounds: object, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        pg.HashPartitionRouter(["a", "b"], ("int8",), bounds=ill_typed(bounds))


def test_rows_without_a_partition() -> None:
    r = pg.HashPartitionRouter(["a", "b"], ("int8",), bounds=[(4, 0), (4, 1)])
    assert not r.complete
    ids = list(range(100))
    rem = pg.partition_of_array(ids, 4, ("int8",)).tolist()
    lost = rem.index(2) if 2 in rem else rem.index(3)
    with pytest.raises(ValueError, match="no partition accepts row"):
        r.route(ids[lost])
    with pytest.raises(ValueError, match=f"no partition accepts the row at position {lost}"):
        r.route_many(ids)
    ok = [i for i, x in zip(ids, rem) if x < 2]
    assert r.route_many(ok).tolist() == [x for x in rem if x < 2]


HALF = [(-(1 << 31), -1), (0, (1 << 31) - 1)]


@pytest.mark.parametrize("ranges, exc, match", [
    ([(-(1 << 31), -2), (0, (1 << 31) - 1)], ValueError, r"hash values -1\.\.-1 belong to no shard"),
    ([(-(1 << 31), 5), (0, (1 << 31) - 1)], ValueError, "overlaps"),
    ([(-(1 << 31), -1), (0, (1 << 31) - 2)], ValueError, "hole at the end"),
    ([(-(1 << 31) + 1, -1), (0, (1 << 31) - 1)], ValueError, "belong to no shard"),
    ([(5, 1), (0, (1 << 31) - 1)], ValueError, "not an inclusive range"),
    ([(-(1 << 31), -1), (0, 1 << 31)], ValueError, "not an inclusive range"),
    ([(-(1 << 31), -1)], ValueError, "1 ranges given for 2 shards"),
    ([(-(1 << 31), -1), (0.0, (1 << 31) - 1)], TypeError, "must be ints"),
    ([(-(1 << 31), -1), (0,)], TypeError, r"ranges\[1\] must be a \(min, max\) pair"),
    ("0-1", TypeError, "sequence of"),
])
def test_citus_bad_ranges(ranges: object, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        citus.CitusRouter(["s0", "s1"], "int8", ill_typed(ranges))


def test_citus_shard_counts() -> None:
    assert citus.CitusRouter(["a", "b"], "int8", HALF).ranges == HALF
    for bad, exc in ((0, ValueError), (citus.MAX_SHARD_COUNT + 1, ValueError), (2.0, TypeError),
                     (True, TypeError)):
        with pytest.raises(exc):
            citus.shard_ranges(ill_typed(bad))


@pytest.mark.parametrize("key, buckets, exc, match", [
    (1, 0, ValueError, "buckets must be in"),
    (1, -5, ValueError, "buckets must be in"),
    (1, 1 << 31, ValueError, "buckets must be in"),
    (1, 2.0, TypeError, "buckets must be an int"),
    (1.0, 10, TypeError, "Java long"),
    (1 << 64, 10, ValueError, "does not fit in 64 bits"),
    (-(1 << 63) - 1, 10, ValueError, "does not fit in 64 bits"),
    (None, 10, TypeError, "Java long"),
])
def test_guava_bad_input(key: object, buckets: object, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        guava.consistent_hash(ill_typed(key), ill_typed(buckets))


def test_guava_bad_arrays() -> None:
    with pytest.raises(TypeError, match="integers"):
        guava.consistent_hash_array(np.array([1.5]), 10)
    with pytest.raises(TypeError, match="Java long"):
        guava.consistent_hash_array([1, "2"], 10)
    with pytest.raises(ValueError, match="1-D"):
        guava.consistent_hash_array(np.zeros((2, 2), dtype=np.int64), 10)
    with pytest.raises(ValueError, match="out has length 1 but there are 2 keys"):
        guava.consistent_hash_array([1, 2], 10, out=np.empty(1, dtype=np.int32))
    with pytest.raises(ValueError, match="buckets"):
        guava.consistent_hash_array([1, 2], 0)


def test_kernels_validate_before_releasing_the_gil() -> None:
    from shardhash.compat import _native
    out = np.empty(2, dtype=np.uint64)
    with pytest.raises(ValueError, match="offsets has 2 elements, expected 3"):
        _native.varlen_extended(np.zeros(4, np.uint8), np.array([0, 4], np.int64), 0, out)
    with pytest.raises(ValueError, match="fall outside"):
        _native.varlen_extended(np.zeros(4, np.uint8), np.array([0, 2, 9], np.int64), 0, out)
    with pytest.raises(ValueError, match="decrease at position 0"):
        _native.varlen_extended(np.zeros(4, np.uint8), np.array([1, 0, 2], np.int64), 0, out)
    with pytest.raises(ValueError, match="expected 2 keys of 16 bytes"):
        _native.fixed_extended(np.zeros(31, np.uint8), 16, 0, out)
    with pytest.raises(ValueError, match="modulus must be positive"):
        _native.remainder(out, 0, np.empty(2, np.int64))
    assert math.isfinite(float(pg.hash32(uuid.UUID(int=0), "uuid")))


# ---------------------------------------------------------------- Cassandra

def test_cassandra_type_errors() -> None:
    with pytest.raises(TypeError, match="CQL int must be an int, not float"):
        cassandra.serialize(1.5, "int")
    with pytest.raises(TypeError, match="CQL bigint"):
        cassandra.serialize(True, "bigint")
    with pytest.raises(OverflowError, match="out of range for CQL int"):
        cassandra.serialize(2**31, "int")
    with pytest.raises(ValueError, match="unsupported CQL type 'decimal'"):
        cassandra.serialize(1, "decimal")
    with pytest.raises(TypeError, match="serialize"):
        cassandra.token(ill_typed("text key"))
    with pytest.raises(TypeError, match="bytes"):
        cassandra.token(ill_typed(12))
    with pytest.raises(ValueError, match="2 values for 3 types"):
        cassandra.serialize((1, 2), ("int", "int", "int"))
    with pytest.raises(ValueError, match="null"):
        cassandra.serialize(None, "int")
    with pytest.raises(ValueError, match="not a UUID"):
        cassandra.serialize("nope", "uuid")
    with pytest.raises(ValueError, match="at most 65535"):
        cassandra.serialize((b"x" * 70000, 1), ("blob", "int"))


def test_cassandra_array_errors() -> None:
    with pytest.raises(TypeError, match="must be integers, not an array of float64"):
        cassandra.token_array(np.array([1.0, 2.0]), "int")
    with pytest.raises(OverflowError, match="position 1"):
        cassandra.token_array(np.array([1, 2**40]), "int")
    with pytest.raises(TypeError, match="position 2"):
        cassandra.token_array([1, 2, 3.5], "bigint")
    with pytest.raises(TypeError, match="position 1"):
        cassandra.token_array([b"a", 5])
    with pytest.raises(TypeError, match="single"):
        cassandra.token_array(b"abc")


def test_cassandra_ring_errors() -> None:
    with pytest.raises(ValueError, match="owned twice"):
        cassandra.TokenRouter({"a": [1], "b": [1]})
    with pytest.raises(ValueError, match="outside the Murmur3 range"):
        cassandra.TokenRouter({"a": [2**63]})
    with pytest.raises(TypeError, match="must be an int"):
        cassandra.TokenRouter({"a": [ill_typed(1.5)]})
    with pytest.raises(ValueError, match="no tokens"):
        cassandra.TokenRouter({"a": []})
    with pytest.raises(ValueError, match="at least one node"):
        cassandra.TokenRouter({})
    with pytest.raises(TypeError, match="mapping"):
        cassandra.TokenRouter(ill_typed([1, 2]))
    with pytest.raises(ValueError, match="rf"):
        cassandra.TokenRouter({"a": [0]}).replicas(b"k", 0)
    doc = cassandra.TokenRouter({"a": [0], "b": [5]}).to_dict()
    doc["params"]["tokens"]["b"] = [0]
    doc.pop("fingerprint")
    with pytest.raises(ValueError, match="owned twice"):
        load_router(doc)


# ------------------------------------------------------------------- Redis

def test_redis_errors() -> None:
    with pytest.raises(TypeError, match="bytes or str, not int"):
        redis.keyslot(ill_typed(5))
    with pytest.raises(TypeError, match="position 1"):
        redis.keyslot_array([b"a", 3])
    with pytest.raises(ValueError, match="slot 100 is assigned twice"):
        redis.ClusterRouter({"a": [(0, 100)], "b": [(100, 16383)]})
    with pytest.raises(ValueError, match="the first is slot 101"):
        redis.ClusterRouter({"a": [(0, 100)], "b": [(102, 16383)]})
    with pytest.raises(ValueError, match="the first is slot 0"):
        redis.ClusterRouter({"a": [(1, 16383)]})
    with pytest.raises(ValueError, match="not within"):
        redis.ClusterRouter({"a": [(0, 16384)]})
    with pytest.raises(ValueError, match="start <= end"):
        redis.ClusterRouter({"a": [(10, 5)]})
    with pytest.raises(TypeError, match="bounds must be ints"):
        redis.ClusterRouter({"a": [ill_typed((0.0, 16383))]})
    with pytest.raises(TypeError, match="single pair"):
        redis.ClusterRouter(ill_typed({"a": (0, 16383)}))
    with pytest.raises(ValueError, match="slots must be in"):
        redis.ClusterRouter({"a": [(0, 16383)]}).route_slots([16384])
    with pytest.raises(ValueError, match="distinct"):
        redis.even_slot_ranges(["a", "a"])


# ------------------------------------------------------------------ ketama

def test_ketama_errors() -> None:
    with pytest.raises(ValueError, match="unknown ketama flavor 'memcache'"):
        ketama.KetamaRouter(["a"], flavor="memcache")
    with pytest.raises(ValueError, match="at least one server"):
        ketama.KetamaRouter([])
    with pytest.raises(ValueError, match="3 weights for 2 nodes"):
        ketama.KetamaRouter(["a", "b"], [1, 2, 3])
    with pytest.raises(ValueError, match="weight of node 'b'"):
        ketama.KetamaRouter(["a", "b"], [1, 0])
    with pytest.raises(TypeError, match="weight of node 'a'"):
        ketama.KetamaRouter(["a", "b"], [ill_typed(1.5), 1])
    with pytest.raises(ValueError, match="unknown node"):
        ketama.KetamaRouter(["a", "b"], {"c": 2})
    with pytest.raises(ValueError, match="duplicate shard id"):
        ketama.KetamaRouter(["a", "a"])
    with pytest.raises(TypeError, match="host:port"):
        ketama.KetamaRouter([3])
    with pytest.raises(ValueError, match="port"):
        ketama.KetamaRouter([("h", 70000)])
    r = ketama.KetamaRouter(["a", "b"])
    with pytest.raises(TypeError, match="bytes, str or int, not float"):
        r.route(1.5)
    with pytest.raises(TypeError, match="position 2"):
        r.route_many(["x", "y", 2.5])
    with pytest.raises(ValueError, match="0..2\\*\\*32-1"):
        r.route_key_hashes([2**32])
    with pytest.raises(TypeError, match="shardhash hashes"):
        r.route_hashes([1])


# ------------------------------------------------------------------ Vitess

@pytest.mark.parametrize("name", ["8g-", "8-", "-8", "80-40", "80-80", "-00", "x", "", "80", "--",
                                  "-" + "11" * 9])
def test_vitess_bad_shard_names(name: str) -> None:
    with pytest.raises(ValueError, match="shard name"):
        vitess.parse_shard_name(name)


def test_vitess_router_errors() -> None:
    with pytest.raises(ValueError, match="overlaps"):
        vitess.VitessRouter(["-80", "40-"])
    with pytest.raises(ValueError, match="gap"):
        vitess.VitessRouter(["-40", "80-"])
    with pytest.raises(ValueError, match="gap"):
        vitess.VitessRouter(["-40", "40-80"])
    with pytest.raises(ValueError, match="gap"):
        vitess.VitessRouter(["40-"])
    with pytest.raises(ValueError, match="overlaps"):
        vitess.VitessRouter(["-", "-80", "80-"])
    with pytest.raises(ValueError, match="duplicate"):
        vitess.VitessRouter(["-80", "80-", "80-"])
    with pytest.raises(ValueError, match="unsupported vindex 'md5'"):
        vitess.VitessRouter(["-"], "md5")
    with pytest.raises(TypeError, match="single str"):
        vitess.VitessRouter("-80")  # a str is a sequence of str: the check is at run time
    with pytest.raises(TypeError, match="integers; value is float"):
        vitess.keyspace_id(1.5)
    with pytest.raises(TypeError, match="integers"):
        vitess.keyspace_id("12")
    with pytest.raises(OverflowError, match="64-bit"):
        vitess.keyspace_id(2**64)
    with pytest.raises(TypeError, match="float64"):
        vitess.keyspace_id_array(np.array([1.5]))
    with pytest.raises(TypeError, match="position 1"):
        vitess.keyspace_id_array([1, 2.5], "xxhash")
    with pytest.raises(ValueError, match="8 bytes"):
        vitess.reverse_hash(b"\x00" * 7)
    with pytest.raises(ValueError, match="power of two"):
        vitess.even_shard_names(3)


# ----------------------------------------------------------------- MongoDB

def test_mongo_errors() -> None:
    with pytest.raises(OverflowError, match="int64"):
        mongo.hashed(2**63)
    with pytest.raises(TypeError, match="cannot hash a value of type set"):
        mongo.hashed({1, 2})
    with pytest.raises(TypeError, match=r"value\.x\[1\]"):
        mongo.hashed({"x": [1, object()]})
    with pytest.raises(ValueError, match="NUL"):
        mongo.hashed("a\x00b")
    with pytest.raises(TypeError, match="position 2"):
        mongo.hashed_array([1, 2, {3}])
    with pytest.raises(OverflowError, match="position 0"):
        mongo.hashed_array(np.array([2**63], dtype=np.uint64))
    with pytest.raises(ValueError, match="n must be >= 1"):
        mongo.initial_split_points(0)


def test_mongo_chunk_errors() -> None:
    M, X = mongo.MIN_KEY, mongo.MAX_KEY
    with pytest.raises(ValueError, match="gap between 0 and 10"):
        mongo.HashedChunkRouter([(M, 0, "a"), (10, X, "b")])
    with pytest.raises(ValueError, match="overlap between 10 and 0"):
        mongo.HashedChunkRouter([(M, 10, "a"), (0, X, "b")])
    with pytest.raises(ValueError, match="not MIN_KEY"):
        mongo.HashedChunkRouter([(0, X, "a")])
    with pytest.raises(ValueError, match="not MAX_KEY"):
        mongo.HashedChunkRouter([(M, 5, "a")])
    with pytest.raises(TypeError, match="chunk 0 min"):
        mongo.HashedChunkRouter([(1.5, X, "a")])
    with pytest.raises(ValueError, match="empty or reversed"):
        mongo.HashedChunkRouter([(M, 5, "a"), (5, 5, "b"), (5, X, "c")])
    with pytest.raises(TypeError, match="triple"):
        mongo.HashedChunkRouter([ill_typed((M, X))])


# -------------------------------------------------------------- the kernels

def test_kernels_validate_offsets() -> None:
    data = np.frombuffer(b"abcdef", dtype=np.uint8)
    with pytest.raises(ValueError, match="decrease"):
        _native.redis_keyslot_offsets(data, np.array([0, 4, 2], dtype=np.int64))
    with pytest.raises(ValueError, match="beyond the data"):
        _native.cassandra_token_offsets(data, np.array([0, 7], dtype=np.int64))
    with pytest.raises(ValueError, match="negative"):
        _native.ketama_hash_offsets(data, np.array([-1, 2], dtype=np.int64))
    with pytest.raises(ValueError, match="sorted"):
        _native.cassandra_ring_index(np.array([5, 1], dtype=np.int64), np.array([0], dtype=np.int64))
    with pytest.raises(ValueError, match="no points"):
        _native.ketama_lookup(np.zeros(0, np.uint32), np.zeros(0, np.int32), False, np.zeros(1, np.uint32))
    with pytest.raises(ValueError, match="null"):
        pa = pytest.importorskip("pyarrow")
        redis.keyslot_array(pa.array(["a", None]))
    with pytest.raises(ValueError, match="one-dimensional"):
        redis.keyslot_array(np.array([["a"]]))


@pytest.mark.parametrize("call", ["pg_extended", "pg_32", "guava"])
def test_compat_out_follows_the_routers_rules(call: str) -> None:
    # every out= is checked alike: TypeError for what is not an array of the
    # dtype in native byte order, ValueError for shape, layout, writability
    dtype = np.uint64 if call == "pg_extended" else np.int32

    def run(out: Any) -> object:
        if call == "pg_extended":
            return pg.hash_extended_array([1, 2, 3, 4], "int8", out=out)
        if call == "pg_32":
            return pg.hash32_array([1, 2, 3, 4], "int8", out=out)
        return guava.consistent_hash_array([1, 2, 3, 4], 10, out=out)

    good = np.zeros(4, dtype=dtype)
    assert run(good) is good
    with pytest.raises(TypeError, match="numpy.ndarray"):
        run([0, 0, 0, 0])
    with pytest.raises(TypeError, match="dtype"):
        run(np.zeros(4, dtype=np.float64))
    with pytest.raises(TypeError, match="native byte order"):
        run(np.zeros(4, dtype=np.dtype(dtype).newbyteorder()))
    with pytest.raises(ValueError, match="C-contiguous"):
        run(np.zeros(8, dtype=dtype)[::2])
    with pytest.raises(ValueError, match="1-dimensional"):
        run(np.zeros((2, 2), dtype=dtype))
    with pytest.raises(ValueError, match="length 3"):
        run(np.zeros(3, dtype=dtype))
    ro = np.zeros(4, dtype=dtype)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        run(ro)


def test_find_byte_refuses_a_value_that_is_not_a_byte() -> None:
    data = np.frombuffer(b"ab\x00c", dtype=np.uint8)
    assert _native.find_byte(data, 0) == 2 and _native.find_byte(data, ord("c")) == 3
    assert _native.find_byte(data, 255) == -1
    for bad in (256, -1):
        with pytest.raises(ValueError, match="0 .. 255"):
            _native.find_byte(data, bad)


# -- compat router documents ------------------------------------------------------

def _compat_routers() -> list[tuple[str, Any]]:
    return [
        ("citus", citus.CitusRouter(["a", "b", "c"], "int4")),
        ("redis", redis.ClusterRouter({"a": [(0, 5000)], "b": [(5001, 10000), (10001, 16383)]})),
        ("cassandra", cassandra.TokenRouter({"a": [0, -100], "b": [100], "c": [2**62]})),
        ("cassandra composite", cassandra.TokenRouter({"a": [0], "b": [100]}, cql_type=("int", "text"))),
        ("ketama", ketama.KetamaRouter(["a", "b"], [1, 2], "libmemcached")),
        ("mongo", mongo.HashedChunkRouter([(mongo.MIN_KEY, 0, "a"), (0, mongo.MAX_KEY, "b")])),
        ("postgres", pg.HashPartitionRouter(["a", "b", "c"], ("int4",))),
        ("postgres bounds", pg.HashPartitionRouter(["a", "b"], ("int8", "text"), bounds=[(2, 0), (2, 1)])),
        ("vitess", vitess.VitessRouter(["-80", "80-"], "hash")),
    ]


def _paths(o: Any, p: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [p] if p else []
    if isinstance(o, dict):
        for k, v in o.items():
            out += _paths(v, p + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            out += _paths(v, p + (i,))
    return out


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from([-2**63 - 1, 2**63, 2**64, 16384, 2**31])
    | st.floats() | st.text(max_size=3),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=2), c, max_size=2), max_leaves=6)


def _check_compat_doc(doc: dict[str, Any], names: tuple[str, ...]) -> None:
    """``doc`` loads, or is refused with a TypeError/ValueError naming one of ``names``."""
    try:
        load_router(doc)
    except (TypeError, ValueError) as e:
        msg = str(e)
        assert any(n in msg or n.rstrip("s") in msg for n in names), f"{type(e).__name__} names no field: {msg}"


@given(which=st.sampled_from([n for n, _ in _compat_routers()]), data=st.data())
def test_mutated_compat_documents_name_the_field(which: str, data: st.DataObject) -> None:
    """Every compat router document with one value replaced (at any depth of its
    params) loads or raises TypeError/ValueError naming the params field: never
    a bare "'bool' object is not iterable"."""
    router = dict(_compat_routers())[which]
    doc = router.to_dict()
    del doc["fingerprint"]
    paths = [("params",) + p for p in _paths(doc["params"])] + [("shards",) + p for p in _paths(doc["shards"])]
    path = data.draw(st.sampled_from(paths + [("shards",)]), label="path")
    value = data.draw(_JSONISH, label="value")
    target: Any = doc
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value
    # a changed shard list may instead be reported by the params field it no
    # longer matches (e.g. "params.bounds: 2 bounds given for 1 partitions")
    _check_compat_doc(doc, (str(path[1]),) if path[0] == "params" else ("shard", "params."))


@pytest.mark.parametrize("which, path, value, exc, match", [
    ("citus", ("ranges",), [True, 1], TypeError, r"params\.ranges\[0\] must be a \[min, max\] pair, not True"),
    ("citus", ("ranges", 1), [1.5, 2], TypeError, r"params\.ranges\[1\]\[0\] must be an int"),
    ("citus", ("ranges",), "x", TypeError, r"params\.ranges must be a list"),
    ("citus", ("ranges", 1, 1), 5, ValueError, r"params\.ranges: hash values 6\.\.715827881 belong to no shard"),
    ("redis", ("slot_ranges", "a"), True, TypeError, r"params\.slot_ranges\['a'\] must be a list"),
    ("redis", ("slot_ranges", "b", 0), [1], TypeError, r"params\.slot_ranges\['b'\]\[0\] must be a \[start, end\]"),
    ("redis", ("slot_ranges",), [], TypeError, r"params\.slot_ranges must be an object"),
    ("redis", ("slot_ranges", "a", 0, 0), -1, ValueError, r"params\.slot_ranges: slot range \(-1, 5000\) of node 'a'"),
    ("cassandra", ("tokens", "a"), True, TypeError, r"params\.tokens\['a'\] must be a list of ints, not True"),
    ("cassandra", ("tokens", "b", 0), None, TypeError, r"params\.tokens\['b'\]\[0\] must be an int"),
    ("cassandra", ("tokens", "c"), [2**63], ValueError, r"params\.tokens: token 9223372036854775808 of node 'c'"),
    ("cassandra composite", ("cql_type", 1), 7, TypeError, r"params\.cql_type\[1\]"),
    ("cassandra composite", ("cql_type", 1), "x", ValueError, r"params\.cql_type: \[1\]: unsupported CQL type 'x'"),
    ("ketama", ("weights",), True, TypeError, r"params\.weights must be a list"),
    ("mongo", ("owners", 1), 0, ValueError, r"params\.owners gives no chunk to shard\(s\) \['b'\]"),
    ("mongo", ("bounds", 0), 1.5, TypeError, r"params\.bounds: chunk 0 max"),
    ("postgres", ("types", 0), 5, TypeError, r"params\.types: type must be a str"),
    ("redis", ("..", "shards", 0), [1], TypeError, r"shards\[0\]: shard ids must be str, got \[1\]"),
    ("cassandra", ("..", "shards", 1), None, TypeError, r"shards\[1\]: shard ids must be str"),
    ("vitess", ("..", "shards", 1), {}, TypeError, r"shards\[1\]: shard ids must be str"),
])
def test_malformed_compat_documents(which: str, path: tuple[Any, ...], value: Any, exc: type[Exception],
                                    match: str) -> None:
    """Malformed ranges, slot ranges, tokens and the other compat fields are
    refused naming the field and the position (these gave bare TypeErrors such
    as "'bool' object is not iterable", or messages naming no field)."""
    doc = dict(_compat_routers())[which].to_dict()
    del doc["fingerprint"]
    target = doc["params"]
    if path[0] == "..":  # a top-level field
        target, path = doc, path[1:]
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value
    with pytest.raises(exc, match=match):
        load_router(doc)
