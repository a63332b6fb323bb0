"""Router documents: to_dict/to_json/load_router, fingerprints, versions, registry."""

from __future__ import annotations

import copy
import hashlib
import json
import pickle
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shardhash import Hasher
from shardhash.routing import (
    ROUTER_FORMAT,
    JumpRouter,
    RingRouter,
    Router,
    load_router,
    register_router_type,
    router_types,
)
from tests._router_cases import ALL_ROUTERS, HASH_ROUTERS, KEY_ROUTERS
from tests._support import child_env, ill_typed

KEYS = [f"k{i}" for i in range(300)] + list(range(-50, 250))
INT_KEYS = list(range(-50, 250)) + [999, 1000, 10**6, 2 * 10**6]


def _keys_for(name: str) -> list[Any]:
    if name == "range_str":
        return [f"k{i}" for i in range(300)]
    if name in KEY_ROUTERS:
        return INT_KEYS
    if name == "jump_prefix":
        return [(k, 1) for k in KEYS]
    return KEYS


@pytest.mark.parametrize("name", sorted(ALL_ROUTERS))
def test_roundtrip_dict_json_path(name: str, tmp_path: Path) -> None:
    r = ALL_ROUTERS[name]()
    keys = _keys_for(name)
    want = r.route_many(keys).tolist()
    path = tmp_path / "router.json"
    path.write_text(r.to_json(indent=2), encoding="utf-8")
    for src in (r.to_dict(), r.to_json(), path, str(path), r.to_json().encode()):
        back = load_router(src)
        assert type(back) is type(r)
        assert back == r and hash(back) == hash(r)
        assert back.fingerprint == r.fingerprint and back.version == r.version
        assert back.shards == r.shards and back.hasher == r.hasher
        assert back.route_many(keys).tolist() == want
    assert pickle.loads(pickle.dumps(r)) == r


@pytest.mark.parametrize("name", sorted(ALL_ROUTERS))
def test_document_shape_and_fingerprint_definition(name: str) -> None:
    r = ALL_ROUTERS[name]()
    doc = r.to_dict()
    assert doc["format"] == ROUTER_FORMAT == "shardhash.router/1"
    assert doc["type"] == r.type_name and router_types()[doc["type"]] is type(r)
    assert doc["shards"] == list(r.shards)
    assert doc["hasher"] == r.hasher.to_dict()
    body = {k: v for k, v in doc.items() if k != "fingerprint"}
    canon = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert doc["fingerprint"] == hashlib.sha256(canon).hexdigest()
    json.dumps(doc, allow_nan=False)  # strictly JSON


def test_fingerprint_depends_on_every_part() -> None:
    base = RingRouter(["a", "b", "c"], vnodes=8)
    variants = [
        RingRouter(["a", "b", "c"], vnodes=9),
        RingRouter(["a", "b", "d"], vnodes=8),
        RingRouter(["a", "b", "c"], vnodes=8, version=2),
        RingRouter(["a", "b", "c"], vnodes=8, hasher=Hasher(seed=1)),
        RingRouter(["a", "b", "c"], vnodes=8, weights={"a": 2}),
        RingRouter(["a", "b", "c"], vnodes=8, key_prefix=1),
        JumpRouter(["a", "b", "c"]),
    ]
    fps = {base.fingerprint} | {v.fingerprint for v in variants}
    assert len(fps) == len(variants) + 1
    assert RingRouter(["a", "b", "c"], vnodes=8).fingerprint == base.fingerprint
    assert base != variants[2] and base.with_version(2) == variants[2]


def test_versions() -> None:
    r = JumpRouter(["a", "b"], version=7)
    assert r.version == 7 and load_router(r.to_dict()).version == 7
    assert r.with_version(8).version == 8 and r.with_version(8).route("x") == r.route("x")
    assert JumpRouter(["a"]).version == 1


def test_routers_are_immutable() -> None:
    r = RingRouter(["a", "b"], vnodes=4)
    with pytest.raises(AttributeError):
        ill_typed(r).version = 3  # (read-only: the runtime refuses)
    with pytest.raises(AttributeError):
        r._tokens = ill_typed(None)
    with pytest.raises(AttributeError):
        del r._tokens
    with pytest.raises(ValueError):
        r.tokens[0] = 1  # read-only array
    with pytest.raises(AttributeError):
        r._use_jump()  # sealed cores cannot be reconfigured


def test_replica_zones_are_immutable() -> None:
    """A router's zones are part of its document: set once while it is
    loaded, never on a sealed router afterwards (a batch reading them in C
    would see them change under it)."""
    from shardhash.routing._kernels import ReplicaZones

    zoned = RingRouter(["a", "b", "c"], vnodes=8).with_zones({"a": "z1", "b": "z1", "c": "z2"})
    plain = RingRouter(["a", "b", "c"], vnodes=8)
    want = zoned.route_replicas_many(list(range(200)), 2)
    fp = zoned.fingerprint
    for r in (zoned, plain):
        before = (r.route_replicas_many(list(range(200)), 2), r.to_dict())
        for z in (None, ReplicaZones([0, 1, 2])):
            with pytest.raises(AttributeError, match="RingRouter is immutable: its zones are part of its document"):
                r._set_replica_zones(z)
        with pytest.raises(AttributeError, match="immutable"):
            r._set_zones(None)
        assert np.array_equal(r.route_replicas_many(list(range(200)), 2), before[0])
        assert r.to_dict() == before[1]
    zmap = zoned._zone_map
    assert zmap is not None
    with pytest.raises(AttributeError, match="ReplicaZones is immutable"):
        ReplicaZones.__init__(zmap, [0, 0, 0])
    assert np.array_equal(zoned.route_replicas_many(list(range(200)), 2), want)
    assert zoned.fingerprint == fp
    # Loading still sets them, on the router it builds, before sealing it.
    loaded = load_router(zoned.to_dict())
    assert loaded == zoned
    with pytest.raises(AttributeError, match="immutable"):
        loaded._set_replica_zones(None)
    assert np.array_equal(loaded.route_replicas_many(list(range(200)), 2), want)
    assert np.array_equal(pickle.loads(pickle.dumps(zoned)).route_replicas_many(list(range(200)), 2), want)


def test_nested_documents_are_checked() -> None:
    from shardhash.routing import DirectoryRouter

    d = DirectoryRouter(JumpRouter(["a", "b"]), {"t": "c"})
    doc = d.to_dict()
    bad = copy.deepcopy(doc)
    bad["params"]["base"]["fingerprint"] = "0" * 64
    bad.pop("fingerprint")
    with pytest.raises(ValueError, match="directory base: fingerprint mismatch"):
        load_router(bad)


def test_missing_fingerprint_is_computed() -> None:
    r = JumpRouter(["a", "b"])
    doc = r.to_dict()
    del doc["fingerprint"]
    assert load_router(doc) == r


def test_registry_for_subclasses() -> None:
    @register_router_type("test-first-shard")
    class FirstShardRouter(Router):
        """A toy router written the way compat routers are: Python kernel."""

        _doc_fields = ("which",)

        def __init__(self, shards: Iterable[str], *, which: int = 0, hasher: Hasher | None = None, version: int = 1,
                     key_prefix: int | None = None) -> None:
            super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
            self._set("_which", which)
            self._use_python()
            self._finish()

        def _route_hashes_kernel(self, hashes: np.ndarray, out: np.ndarray) -> None:
            out[:] = (hashes % np.uint64(2)).astype(np.int32) * 0 + self._which

        def _doc_params(self) -> dict[str, Any]:
            return {"which": self._which}

        @classmethod
        def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher, version: int,
                         key_prefix: int | None) -> Router:
            return cls(shards, which=params["which"], hasher=hasher, version=version, key_prefix=key_prefix)

    r = FirstShardRouter(["a", "b"], which=1)
    assert r.route("x") == "b" and r.route_index(5) == 1
    assert r.route_many(["x", "y"]).tolist() == [1, 1]
    assert r.route_hashes([1, 2, 3]).tolist() == [1, 1, 1]
    back = load_router(r.to_json())
    assert isinstance(back, FirstShardRouter) and back == r
    with pytest.raises(ValueError, match="already registered"):
        register_router_type("ring", FirstShardRouter)


def test_subclass_with_c_kernel_and_pre_transform() -> None:
    class ShiftedModulo(Router):
        def __init__(self, shards: Iterable[str], *, hasher: Hasher | None = None, version: int = 1) -> None:
            super().__init__(shards, hasher=hasher, version=version)
            self._use_pre_transform(add=5)
            self._use_bucket(np.arange(len(self.shards)))
            self._finish()

    r = ShiftedModulo(["a", "b", "c"])
    h = [0, 1, 2, 2**64 - 1, 2**64 - 5]
    want = [((x + 5) % 2**64) % 3 for x in h]
    assert r.route_hashes(h).tolist() == want
    assert [r.route_hash(x) for x in h] == want
    many = np.random.default_rng(5).integers(0, 2**64 - 1, 300_000, dtype=np.uint64, endpoint=True)
    want_many = ((many + np.uint64(5)) % np.uint64(3)).astype(np.int32)  # numpy wraps mod 2**64
    assert np.array_equal(r.route_hashes(many, threads=3), want_many)


def test_unfinished_subclass_is_an_error() -> None:
    class NoKernel(Router):
        def __init__(self, shards: Iterable[str]) -> None:
            super().__init__(shards)
            self._finish()

    with pytest.raises(TypeError, match="configured no placement kernel"):
        NoKernel(["a"])


def test_repr_names_the_router() -> None:
    r = RingRouter(["a", "b"], vnodes=4, version=3)
    s = repr(r)
    assert s.startswith("RingRouter(['a', 'b']") and "version=3" in s and r.fingerprint[:12] in s


def test_hash_routers_share_identity_hashing() -> None:
    """Ring tokens, rendezvous seeds and Maglev offsets hash shard ids with the router's hasher."""
    for name in sorted(HASH_ROUTERS):
        r = HASH_ROUTERS[name]()
        assert load_router(r.to_dict()).route_hashes(list(range(100))).tolist() == \
            r.route_hashes(list(range(100))).tolist()


# -- compat router types in a fresh process ----------------------------------------------


def _compat_routers() -> dict[str, tuple[Router, list[Any]]]:
    from shardhash.compat import cassandra, citus, ketama, mongo, postgres, redis, uhashring, vitess

    return {
        "uhashring": (uhashring.HashRingRouter({"a": 1, "b": 2}), ["foo", "bar", "baz"]),
        "cassandra_random": (cassandra.RandomTokenRouter({"n1": [0], "n2": [2**126]}, cql_type="bigint"), [1, 2, 3]),
        "postgres_hash_partition": (postgres.HashPartitionRouter([f"p{i}" for i in range(4)], ("bigint",)),
                                    [42, 7, 1 << 40]),
        "citus": (citus.CitusRouter(["s0", "s1", "s2", "s3"], "int4"), [1, 2, 3, 42]),
        "cassandra_token": (cassandra.TokenRouter({"n1": [-6148914691236517206], "n2": [-2],
                                                   "n3": [6148914691236517202]}, cql_type="bigint"), [1, 2, 3, 4]),
        "ketama": (ketama.KetamaRouter(["a:11211", "b:11211", "c:11211"], flavor="libmemcached"),
                   ["foo", "bar", "baz"]),
        "vitess": (vitess.VitessRouter(["-80", "80-"], "hash"), [1, 2, 3, 4, 5, 6]),
        "mongo_hashed": (mongo.HashedChunkRouter.from_split_points(mongo.initial_split_points(4), ["s0", "s1"]),
                         [42, -1, 7]),
        "redis_cluster": (redis.ClusterRouter(redis.even_slot_ranges(["a", "b", "c"])), ["foo", "{foo}bar", "baz"]),
    }


_FRESH_LOADER = """
import json, sys
from shardhash.routing import load_router
for path in sys.argv[1:]:
    case = json.load(open(path, encoding="utf-8"))
    assert not any(m.startswith("shardhash.compat.") for m in sys.modules), "compat imported too early"
    r = load_router(case["document"])
    print(json.dumps([r.type_name, r.fingerprint, r.route_many(case["keys"]).tolist()]))
"""


def test_load_router_imports_compat_modules_in_a_fresh_process(tmp_path: Path) -> None:
    import subprocess
    import sys


    cases = _compat_routers()
    assert sorted(cases) == sorted(t for t, c in router_types().items() if c.__module__.startswith("shardhash.compat."))
    env = child_env()
    for typ, (r, keys) in cases.items():
        assert r.type_name == typ
        path = tmp_path / f"{typ}.json"
        path.write_text(json.dumps({"document": r.to_dict(), "keys": keys}), encoding="utf-8")
        # One process per document: each starts with no compat module imported.
        res = subprocess.run([sys.executable, "-c", _FRESH_LOADER, str(path)], capture_output=True,
                             text=True, env=env, timeout=120)
        assert res.returncode == 0, res.stderr
        got = json.loads(res.stdout)
        assert got == [typ, r.fingerprint, r.route_many(keys).tolist()]


def test_unknown_type_names_the_compat_types() -> None:
    doc = JumpRouter(["a"]).to_dict()
    doc["type"] = "no_such_type"
    with pytest.raises(ValueError, match="unknown router type 'no_such_type'.*redis_cluster"):
        load_router(doc)


def test_every_router_loads_zones_then_seals() -> None:
    """Every router type (the compat ones too) loads a document's zones and
    is sealed afterwards: its zones cannot be replaced."""
    routers = {name: f() for name, f in ALL_ROUTERS.items()}
    routers.update({name: case[0] for name, case in _compat_routers().items()})
    for name, r in routers.items():
        zones = {s: f"z{i % 2}" for i, s in enumerate(r.shards)}
        zoned = r.with_zones(zones)
        for x in (zoned, load_router(zoned.to_dict()), pickle.loads(pickle.dumps(zoned))):
            assert x == zoned and x.zones == zones, name
            with pytest.raises(AttributeError, match="immutable"):
                x._set_replica_zones(None)
            assert x.zones == zones, name
