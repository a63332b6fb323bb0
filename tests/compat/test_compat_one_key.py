"""The compat routers' one-key paths in C (compat/_native) against their
pure-Python paths and their batch paths.

Every router and one-key function that routes exact bytes / ASCII str / int
keys in C keeps its Python path (``_route_index_slow``, ``_keyslot_py``,
``_token_py``, ``_hash_extended_py``) as the reference: for every key here --
edge lengths around the MD5/murmur/xxhash block sizes, non-ASCII text,
subclasses, ints at the 64-bit edges, wrong types -- the compiled answer
equals the reference's and ``route_many([key])``'s, or both raise the same
exception with the same message.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from shardhash.compat import cassandra, citus, ketama, mongo, postgres, redis, vitess
from shardhash.routing import Router


class StrSub(str):
    pass


class BytesSub(bytes):
    pass


class IntSub(int):
    pass


def _texts() -> list[str]:
    out = [""]
    for n in (1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128,
              129, 239, 240, 241, 300):
        out.append("".join(chr(97 + (i * 7 + n) % 26) for i in range(n)))
    out += ["{user1000}.following", "{}x", "{{a}}", "foo{bar}{zap}", "a b  ", "  ", "x\x00y", "\x7f",
            "é", "ключ", "🙂 emoji", "tag{é}", "hello   "]
    return out


TEXTS = _texts()
INTS = [0, 1, -1, 7, 42, 10**6, -(10**6), 2**31 - 1, -(2**31), 2**31, 2**32, 2**53 + 1, 2**63 - 1, -(2**63),
        2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**30]
ODD = [True, False, None, 1.5, float("nan"), -0.0, bytearray(b"ab"), memoryview(b"cd"), np.int64(5),
       np.uint64(2**64 - 1), np.int32(-3), np.bytes_(b"np"), np.str_("nps"), StrSub("sub"), StrSub("é"),
       BytesSub(b"bsub"), IntSub(77), (1, 2), [1], {"a": 1}, object(), dt.date(2020, 2, 29),
       dt.datetime(1999, 12, 31, 23, 59, 59, 999999), uuid.UUID(int=12345678901234567890)]


def _keys() -> list[object]:
    return TEXTS + [t.encode("utf-8") for t in TEXTS] + INTS + ODD


def _outcome(f: Callable[[Any], Any], key: Any) -> tuple[Any, ...]:
    try:
        return ("ok", f(key))
    except Exception as e:  # noqa: BLE001 -- the exception itself is compared
        return ("raise", type(e), str(e))


def _check_router(r: Router, keys: list[Any], *, batch: bool = True) -> None:
    """route_index (C where it applies) == _route_index_slow (Python) and
    route == shards[route_index]; route_many([k]) agrees when it routes."""
    assert r._keymode_native()  # route/route_index run compat/_native's C function
    handled = 0
    for k in keys:
        got = _outcome(r.route_index, k)
        want = _outcome(r._route_index_slow, k)
        assert got == want, (type(r).__name__, k)
        assert _outcome(r.route, k) == (("ok", r.shards[got[1]]) if got[0] == "ok" else got), k
        if got[0] == "ok":
            handled += 1
            if batch:
                many = _outcome(lambda key: r.route_many([key]).tolist(), k)
                if many[0] == "ok":
                    assert many[1] == [got[1]], (type(r).__name__, k)
    assert handled > 0


NODES = [f"10.0.0.{i}:11211" for i in range(10)] + ["cache:22122", ("host-b", 11211)]


@pytest.mark.parametrize(("flavor", "key_hash"), [(f, None) for f in ketama.FLAVORS] + [("twemproxy", "md5")])
def test_ketama_scalar_paths(flavor: str, key_hash: str | None) -> None:
    r = ketama.KetamaRouter(NODES, weights=[1, 2, 3, 1, 1, 5, 1, 1, 1, 2, 1, 1], flavor=flavor, key_hash=key_hash)
    _check_router(r, _keys())
    # the C path agrees with the continuum lookup of key_hash for the keys it takes
    for k in TEXTS[:10] + [t.encode() for t in TEXTS[:10]] + INTS[:8]:
        if flavor == "uhashring" and isinstance(k, bytes):
            continue
        assert r.route_index(k) == r._hash_to_index(r.key_hash(k))


def test_redis_scalar_paths() -> None:
    for k in _keys():
        assert _outcome(redis.keyslot, k) == _outcome(redis._keyslot_py, k), k
    r = redis.ClusterRouter(redis.even_slot_ranges(["a", "b", "c", "d", "e"]))
    _check_router(r, _keys())
    ks = [k for k in _keys() if isinstance(k, (str, bytes))]
    assert redis.keyslot_array(ks).tolist() == [redis.keyslot(k) for k in ks]


def test_cassandra_scalar_paths() -> None:
    for k in _keys():
        assert _outcome(cassandra.token, k) == _outcome(cassandra._token_py, k), k
    ring = {"n1": cassandra.evenly_spaced_tokens(3)[:1], "n2": [-2, 5], "n3": [2**62, -(2**62)]}
    for ct in ("blob", "text", "ascii", "bigint", "int", "timestamp", "uuid", ("int", "text")):
        r = cassandra.TokenRouter(ring, cql_type=ct)
        keys = _keys() + [(1, "a"), (2**31, "b")]
        if ct in ("text", "ascii", "bigint", "int", "timestamp", "blob"):
            _check_router(r, keys)
        else:  # no C path: the router answers through Python as before
            for k in keys:
                assert _outcome(r.route_index, k) == _outcome(r._route_index_slow, k)


@pytest.mark.parametrize("types", [("int2",), ("int4",), ("int8",), ("bigint",), ("text",), ("varchar",),
                                   ("bpchar",), ("bytea",), ("uuid",), ("date",), ("timestamp",),
                                   ("timestamptz",), ("float8",), ("int4", "text"), ("text", "int8", "date")])
def test_postgres_scalar_paths(types: tuple[str, ...]) -> None:
    r = postgres.HashPartitionRouter([f"p{i}" for i in range(7)], types)
    assert r._keymode_native()
    keys = _keys() + [(1, "a"), (None, "a"), (None, None), (5, "x", dt.date(2001, 1, 1)),
                      ("x", 5, dt.date(2001, 1, 1)), ("y", None, dt.date(1, 1, 1)), (1, 2, None),
                      (dt.datetime(2262, 4, 11), dt.datetime(1, 1, 1)), (uuid.UUID(int=0),)]
    handled = 0
    for k in keys:
        got, want = _outcome(r.route_index, k), _outcome(r._route_index_slow, k)
        assert got == want, (types, k)
        handled += got[0] == "ok"
    assert handled > 0
    for t in set(types):
        for k in _keys():
            for seed in (postgres.HASH_PARTITION_SEED, 0, 7, -1, 2**64 - 1, 2**64, True):
                got = _outcome(lambda v: postgres.hash_extended(v, t, seed), k)  # noqa: B023 (called at once)
                want = _outcome(lambda v: postgres._hash_extended_py(v, t, seed), k)  # noqa: B023 (called at once)
                assert got == want, (t, k, seed)


def test_postgres_incomplete_bounds_raise_like_python() -> None:
    r = postgres.HashPartitionRouter(["p0", "p1"], ("int8",), bounds=[(4, 0), (4, 1)])
    for k in range(40):
        assert _outcome(r.route_index, k) == _outcome(r._route_index_slow, k)


@pytest.mark.parametrize("type_name", ["int4", "int8", "int2", "text", "bytea", "uuid", "date"])
def test_citus_scalar_paths(type_name: str) -> None:
    r = citus.CitusRouter([f"s{i}" for i in range(5)], type_name)
    _check_router(r, _keys())


@pytest.mark.parametrize("vindex", ["hash", "xxhash"])
def test_vitess_scalar_paths(vindex: str) -> None:
    r = vitess.VitessRouter(vitess.even_shard_names(4), vindex)
    _check_router(r, _keys())


def test_mongo_scalar_paths() -> None:
    r = mongo.HashedChunkRouter.from_split_points(mongo.initial_split_points(6), ["a", "b", "c"])
    _check_router(r, _keys() + [float("inf"), -float("inf"), 2.0**63, -(2.0**63), 1e300, 3.0])
    big = mongo.HashedChunkRouter.from_split_points(mongo.initial_split_points(200), ["a", "b"])
    _check_router(big, TEXTS + INTS, batch=False)


# -- small batches ---------------------------------------------------------------


def _routers() -> Iterator[Router]:
    yield ketama.KetamaRouter(NODES, flavor="libketama")
    yield ketama.KetamaRouter(NODES, flavor="uhashring")
    yield ketama.KetamaRouter(NODES, flavor="twemproxy")
    yield redis.ClusterRouter(redis.even_slot_ranges(["a", "b", "c"]))
    for ct in ("blob", "text", "bigint", "int"):
        yield cassandra.TokenRouter({"n1": [-(2**62)], "n2": [-2], "n3": [2**62]}, cql_type=ct)
    for ts in (("int8",), ("text",), ("int4", "text")):
        yield postgres.HashPartitionRouter([f"p{i}" for i in range(5)], ts)
    yield citus.CitusRouter([f"s{i}" for i in range(4)], "int8")
    yield citus.CitusRouter([f"s{i}" for i in range(4)], "text")
    yield vitess.VitessRouter(vitess.even_shard_names(4), "hash")
    yield vitess.VitessRouter(vitess.even_shard_names(4), "xxhash")
    yield mongo.HashedChunkRouter.from_split_points(mongo.initial_split_points(6), ["a", "b", "c"])


def _unaligned(values: list[int], dtype: Any) -> np.ndarray:
    """A read-only array of ``values`` whose items start one byte off alignment."""
    raw = np.array(values, dtype=dtype).tobytes()
    return np.frombuffer(b"\0" + raw, dtype=dtype, offset=1, count=len(values))


def _batches(n: int) -> list[Any]:
    ints = list(range(-n // 2, n - n // 2))
    absv = [abs(i) for i in ints]
    return [ints, [f"user:{i}" for i in range(n)], [f"user:{i}".encode() for i in range(n)],
            [(i, f"t{i}") for i in range(n)], [f"ключ{i}" for i in range(n)],
            [f"k{i}" if i % 3 else i for i in range(n)], np.array(ints, dtype=np.int64),
            np.array(absv, dtype=np.uint64), tuple(ints),
            # numpy arrays of every integer layout: the small paths read native-order
            # ones in place and leave the others to the general path
            np.array(ints, dtype=np.int32), np.array(absv, dtype=np.uint8), np.array(ints, dtype=np.int16),
            np.array(absv, dtype=np.uint32), np.array(ints, dtype=">i8"), np.array(absv, dtype=">u4"),
            np.repeat(np.array(ints, dtype=np.int64), 2)[::2],
            np.array(ints, dtype=np.int64)[::-1], _unaligned(ints, np.int64),
            np.array([i % 2 == 0 for i in ints], dtype=bool), np.array(ints, dtype=np.float64),
            np.array(ints, dtype=object)]


@pytest.mark.parametrize("n", [0, 1, 2, 16, 63, 64, 65, 100])
def test_compat_route_many_small_equals_general(n: int) -> None:
    """route_many on small inputs (one pass in C) == the general path
    (threads=1 skips the small path) == route_index key by key."""
    for r in _routers():
        for keys in _batches(n):
            small = _outcome(lambda k: r.route_many(k).tolist(), keys)  # noqa: B023 (called at once)
            general = _outcome(lambda k: r.route_many(k, threads=1).tolist(), keys)  # noqa: B023 (called at once)
            assert small == general, (type(r).__name__, n, keys[:3])
            one = [_outcome(r.route_index, k) for k in list(keys)]
            if small[0] == "ok" and all(o[0] == "ok" for o in one):  # (blob routers take str only in batches)
                assert small[1] == [o[1] for o in one], (type(r).__name__, n)


@pytest.mark.parametrize("n", [0, 1, 16, 64, 65])
def test_compat_array_functions_small_equal_general(n: int) -> None:
    for keys in _batches(n):
        assert _outcome(lambda k: redis.keyslot_array(k).tolist(), keys) == \
            _outcome(lambda k: redis.keyslot_array(k, threads=1).tolist(), keys)
        small = _outcome(lambda k: redis.keyslot_array(k), keys)
        if small[0] == "ok":
            assert small[1].dtype == redis.keyslot_array(keys, threads=1).dtype
        assert _outcome(lambda k: cassandra.token_array(k).tolist(), keys) == \
            _outcome(lambda k: cassandra.token_array(k, threads=1).tolist(), keys)
        for t in ("int8", "int4", "int2", "text", "bpchar", "bytea", "float8"):
            for seed in (postgres.HASH_PARTITION_SEED, 0, -3, 2**64 - 1):
                a = _outcome(lambda k: postgres.hash_extended_array(k, t, seed).tolist(), keys)  # noqa: B023 (called at once)
                b = _outcome(lambda k: postgres.hash_extended_array(k, t, seed, threads=1).tolist(),  # noqa: B023
                             keys)
                assert a == b, (t, seed, n)


def test_one_key_paths_from_many_threads() -> None:
    """Routers are immutable: their C one-key paths may run on many threads
    at once and give the one-shot answers."""
    import threading

    routers = list(_routers())
    keys = [f"user:{i}" for i in range(300)] + list(range(300)) + [f"k{i}".encode() for i in range(300)]
    want = [[_outcome(r.route_index, k) for k in keys] for r in routers]
    bad: list[object] = []

    def work() -> None:
        for _ in range(3):
            for r, w in zip(routers, want):
                got = [_outcome(r.route_index, k) for k in keys]
                if got != w:
                    bad.append(type(r).__name__)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
