"""shardhash.compat.vitess: hash / xxhash vindexes and keyrange shards.

No Vitess server runs here: tests/vectors/compat/vitess.tsv holds the
vectors of Vitess's own hash_test.go and xxhash_test.go, plus DES values
from pycryptodome and xxh64 values from the xxhash package.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash import plan
from shardhash._reference import vitess as ref
from shardhash.compat import vitess
from shardhash.routing import load_router
from tests._support import VECTORS as VECTOR_ROOT

VECTORS = VECTOR_ROOT / "compat"


def _rows() -> list[tuple[str, str, str, str, str]]:
    out = []
    for line in (VECTORS / "vitess.tsv").read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#") or line.startswith("vindex"):
            continue
        vindex, kind, value, ksid, source = line.split("\t")
        out.append((vindex, kind, value, ksid, source))
    return out


ROWS = _rows()


def _value(kind: str, text: str) -> object:
    parse: dict[str, Callable[[str], object]] = {"int": int, "str": str, "null": lambda t: None}
    return parse[kind](text)


def test_golden_vectors() -> None:
    assert sum(1 for r in ROWS if r[4].startswith("vitess")) == 15
    for vindex, kind, text, ksid, _src in ROWS:
        v = _value(kind, text)
        assert vitess.keyspace_id(v, vindex).hex() == ksid, (vindex, text)
    for vindex in vitess.VINDEXES:
        sub = [r for r in ROWS if r[0] == vindex and r[1] == "int"]
        ints = [int(r[2]) for r in sub]
        got = vitess.keyspace_id_array(ints, vindex)
        assert [f"{k:016x}" for k in got.tolist()] == [r[3] for r in sub]
        signed = [x for x in ints if x < 2**63]
        got = vitess.keyspace_id_array(np.array(signed, dtype=np.int64), vindex)
        assert [f"{k:016x}" for k in got.tolist()] == [vitess.keyspace_id(x, vindex).hex() for x in signed]


def test_hash_vindex_is_reversible() -> None:
    rng = random.Random(1)
    for _ in range(200):
        i = rng.randrange(2**64)
        assert vitess.reverse_hash(vitess.keyspace_id(i)) == i
    assert vitess.reverse_hash(vitess.keyspace_id(-1)) == 2**64 - 1


@given(st.lists(st.one_of(st.integers(-(2**63), 2**64 - 1), st.text(max_size=10), st.binary(max_size=10),
                          st.none()), max_size=40))
def test_xxhash_array_matches_scalar(values: list[object]) -> None:
    got = vitess.keyspace_id_array(values, "xxhash")
    assert [k.to_bytes(8, "big") for k in map(int, got)] == [vitess.keyspace_id(v, "xxhash") for v in values]


def test_shard_names() -> None:
    assert vitess.parse_shard_name("-") == (0, 2**64) == vitess.parse_shard_name("0")
    assert vitess.parse_shard_name("80-") == (2**63, 2**64)
    assert vitess.parse_shard_name("-8000") == vitess.parse_shard_name("-80")
    assert vitess.parse_shard_name("40-80") == (2**62, 2**63)
    assert vitess.parse_shard_name("C0-") == (0xC0 << 56, 2**64)
    assert vitess.even_shard_names(2) == ["-80", "80-"]
    assert vitess.even_shard_names(8)[3] == "60-80"


def test_routing_matches_keyrange_rule() -> None:
    rng = random.Random(2)
    names = ["-20", "20-2080", "2080-40", "40-a0", "a0-a1", "a1-"]
    r = vitess.VitessRouter(names, "hash")
    ids = [rng.randrange(-(2**63), 2**63) for _ in range(3000)]
    got = r.route_many(ids)
    for i, s in zip(ids, got.tolist()):
        ksid = vitess.keyspace_id(i)
        bounds = [n.split("-") for n in names]
        hits = [k for k, (a, b) in enumerate(bounds)
                if ref.vitess_in_shard(ksid, bytes.fromhex(a), bytes.fromhex(b))]
        assert hits == [s]
    assert [r.route_index(i) for i in ids[:200]] == got[:200].tolist()


def test_uniform_shards_are_the_top_bits() -> None:
    for k in (1, 2, 3, 4, 6):
        r = vitess.VitessRouter(vitess.even_shard_names(2**k), "xxhash")
        vals = list(range(2000))
        ks = vitess.keyspace_id_array(vals, "xxhash")
        assert r.route_many(vals).tolist() == (ks >> np.uint64(64 - k)).astype(np.int32).tolist()


def test_published_shard_examples() -> None:
    four = vitess.VitessRouter(["-40", "40-80", "80-c0", "c0-"], "hash")
    assert [four.route(i) for i in (1, 2, 3, 5, 4, 6)] == ["-40", "-40", "40-80", "40-80", "c0-", "c0-"]
    two = vitess.VitessRouter(["-80", "80-"], "hash")
    assert [two.route(i) for i in (1, 2, 3, 5, 4, 6)] == ["-80"] * 4 + ["80-"] * 2


def test_document_round_trip() -> None:
    r = vitess.VitessRouter(["80-", "-80"], "xxhash", version=4)
    again = load_router(r.to_json())
    assert again == r and again.shards == ("80-", "-80") and again.vindex == "xxhash"
    assert again.route("abc") == r.route("abc")


def test_plan_split_every_shard() -> None:
    old = vitess.VitessRouter(vitess.even_shard_names(2), "hash")
    new = vitess.VitessRouter(vitess.even_shard_names(4), "hash")
    ids = np.arange(100_000, dtype=np.int64)
    rep = plan.diff(old, new, ids)
    # every key changes shard name; half of each old shard goes to each child
    assert rep.moved == rep.total
    assert rep.matrix[0, 0] + rep.matrix[0, 1] == rep.before[0]
    mr = plan.moved_ranges(old, new)
    assert [(m.source, m.destination, m.share) for m in mr] == [
        ("-80", "-40", 0.25), ("-80", "40-80", 0.25), ("80-", "80-c0", 0.25), ("80-", "c0-", 0.25)]
    assert vitess.VitessRouter(["-"], "hash").route(12345) == "-"


def test_null_under_hash_vindex() -> None:
    with pytest.raises(ValueError, match="NULL"):
        vitess.keyspace_id(None, "hash")
    with pytest.raises(ValueError, match="position 1"):
        vitess.keyspace_id_array([1, None], "hash")
