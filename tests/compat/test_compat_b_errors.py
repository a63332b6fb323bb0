"""Bad input to the Cassandra, ketama, Vitess, MongoDB and Redis modes: a
clear TypeError / ValueError / OverflowError naming the offending value or
position, never a crash."""

from __future__ import annotations

import numpy as np
import pytest

from shardhash.compat import _native, cassandra, ketama, mongo, redis, vitess
from shardhash.routing import load_router


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
        cassandra.token("text key")
    with pytest.raises(TypeError, match="bytes"):
        cassandra.token(12)
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
        cassandra.TokenRouter({"a": [1.5]})
    with pytest.raises(ValueError, match="no tokens"):
        cassandra.TokenRouter({"a": []})
    with pytest.raises(ValueError, match="at least one node"):
        cassandra.TokenRouter({})
    with pytest.raises(TypeError, match="mapping"):
        cassandra.TokenRouter([1, 2])  # type: ignore[arg-type]
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
        redis.keyslot(5)  # type: ignore[arg-type]
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
        redis.ClusterRouter({"a": [(0.0, 16383)]})
    with pytest.raises(TypeError, match="single pair"):
        redis.ClusterRouter({"a": (0, 16383)})  # type: ignore[dict-item]
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
        ketama.KetamaRouter(["a", "b"], [1.5, 1])
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
        vitess.VitessRouter("-80")  # type: ignore[arg-type]
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
        mongo.HashedChunkRouter([(M, X)])


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
