"""Routers: behaviour of each strategy through the public API."""

from __future__ import annotations

import numpy as np
import pytest

from shardhash import Hasher
from shardhash.routing import JumpRouter, ModuloRouter, load_router

GUAVA_100 = [0, 55, 62, 8, 45, 59, 86, 97, 82, 59, 73, 37, 17, 56, 86, 21, 90, 37, 38, 83]


def test_modulo_routes_hash_mod_n():
    r = ModuloRouter(["a", "b", "c"])
    hashes = np.array([0, 1, 2, 3, 4, 2**64 - 1], dtype=np.uint64)
    assert r.route_hashes(hashes).tolist() == [int(h) % 3 for h in hashes.tolist()]


def test_jump_router_matches_guava():
    # Guava consistentHash(i, 100) for i = 0..19 (the values quoted in the issue).
    r = JumpRouter([f"s{i}" for i in range(100)])
    assert r.route_hashes(np.arange(20, dtype=np.uint64)).tolist() == GUAVA_100


@pytest.mark.parametrize("cls", [ModuloRouter, JumpRouter])
def test_scalar_equals_batch_and_document_roundtrip(cls):
    r = cls(["a", "b", "c", "d"], hasher=Hasher("xxh64", seed=7), version=3)
    keys = ["k%d" % i for i in range(200)] + list(range(200))
    many = r.route_many(keys)
    assert [r.route_index(k) for k in keys] == many.tolist()
    assert [r.route(k) for k in keys] == [r.shards[i] for i in many]
    back = load_router(r.to_json())
    assert back == r and back.fingerprint == r.fingerprint and back.version == 3
    assert back.route_many(keys).tolist() == many.tolist()
