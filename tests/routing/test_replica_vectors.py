"""The compiled replica lists against the frozen vectors in
tests/vectors/replicas/ (written by tools/make_replica_vectors.py from the
pure-Python reference)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shardhash import load_router
from tests._support import VECTORS

FILES = sorted((VECTORS / "replicas").glob("*.json"))


def test_there_are_vectors() -> None:
    names = {p.stem for p in FILES}
    assert {"jump", "ring", "rendezvous", "maglev", "bucket", "modulo", "hash_range",
            "ring_zoned_document"} <= names


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_replica_vectors(path: Path) -> None:
    vec: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    router = load_router(vec["document"])
    assert router.to_dict() == vec["document"]  # the document round-trips, zones included
    hashes = vec["hashes"]
    for case in vec["cases"]:
        n, zones, want = case["n"], case["zones"], case["lists"]
        assert router.route_replicas_hashes(hashes, n, zones=zones).tolist() == want
        assert [router.route_replicas_hash(h, n, zones=zones) for h in hashes] == want
