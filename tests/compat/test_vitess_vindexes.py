"""shardhash.compat.vitess: the numeric, reverse_bits and binary_md5 vindexes,
and Vitess's own shard names for any shard count (key.GenerateShardRanges).

Golden vectors: tests/vectors/compat/vitess_vindexes.tsv (the Map() vectors
of Vitess's vindex tests, plus hashlib MD5 for binary_md5) and
vitess_shard_ranges.tsv (the lists of Vitess's key_test.go).  No Vitess runs
here; the scalar and batch paths are checked against each other and against
a plain key-range scan.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest

from shardhash import plan
from shardhash.compat import vitess
from shardhash.routing import load_router
from tests._support import VECTORS, ill_typed


def _rows(name: str) -> list[list[str]]:
    lines = [ln for ln in (VECTORS / "compat" / name).read_text(encoding="utf-8").splitlines()
             if ln and not ln.startswith("#")]
    return [ln.split("\t") for ln in lines[1:]]


def _value(tagged: str) -> Any:
    kind, v = json.loads(tagged)
    return bytes.fromhex(v) if kind == "bytes" else v


def test_vindex_golden_vectors() -> None:
    rows = _rows("vitess_vindexes.tsv")
    assert {r[0] for r in rows} == {"numeric", "reverse_bits", "binary_md5"} and len(rows) > 100
    for vindex, tagged, want, _src in rows:
        value = _value(tagged)
        if want == "none":  # Vitess maps it to no keyspace id: refused here
            with pytest.raises((TypeError, ValueError)):
                vitess.keyspace_id(value, vindex)
            continue
        assert vitess.keyspace_id(value, vindex).hex() == want, (vindex, value)
        prefix = int(want[:16], 16)
        assert int(vitess.keyspace_id_array([value], vindex)[0]) == prefix


def test_shard_range_golden_vectors() -> None:
    rows = _rows("vitess_shard_ranges.tsv")
    assert {int(r[0]) for r in rows} >= {1, 2, 7, 49, 103, 107, 256, 512}
    for n, which, names, _src in rows:
        got = vitess.generate_shard_ranges(int(n))
        if which == "all":
            assert ",".join(got) == names, n
        else:
            assert got[-1] == names
        vitess.VitessRouter(got, "hash")  # they tile the keyspace


def test_generate_shard_ranges_tiles_for_every_count() -> None:
    for n in list(range(1, 300)) + [511, 512, 1000, 1024, 4096, 65535, 65536]:
        names = vitess.generate_shard_ranges(n)
        assert len(names) == n and len(set(names)) == n
        r = vitess.VitessRouter(names, "numeric")
        own = r.owned_ranges()
        assert own[0][0] == 0 and own[-1][1] == 2**64 - 1
    assert vitess.generate_shard_ranges(4) == vitess.even_shard_names(4)
    with pytest.raises(ValueError, match="at most 65536"):
        vitess.generate_shard_ranges(65537)
    with pytest.raises(ValueError, match="at least 1"):
        vitess.generate_shard_ranges(0)
    with pytest.raises(TypeError, match="must be an int"):
        vitess.generate_shard_ranges(ill_typed(2.0))


def _scan(ranges: list[tuple[int, int]], ksid: int) -> int:
    for i, (lo, hi) in enumerate(ranges):
        if lo <= ksid < hi:
            return i
    raise AssertionError("no shard")


@pytest.mark.parametrize("vindex", ["numeric", "reverse_bits", "binary_md5"])
def test_scalar_and_batch_agree_with_a_range_scan(vindex: str) -> None:
    rng = random.Random(vindex)
    layouts = [vitess.generate_shard_ranges(7), vitess.generate_shard_ranges(512),
               vitess.generate_shard_ranges(1000),
               ["-8000000000000001", "8000000000000001-c0", "c0-"]]  # a bound with 8 bytes
    for names in layouts:
        r = vitess.VitessRouter(names, vindex)
        if vindex == "binary_md5":
            keys: list[Any] = [rng.choice([rng.randbytes(rng.randrange(0, 24)), f"user-{rng.random()}",
                                           rng.randrange(-2**63, 2**64), None]) for _ in range(800)]
        else:
            keys = [rng.randrange(0, 2**64) for _ in range(800)] + list(range(50))
        one = [r.route_index(k) for k in keys]
        ranges = [vitess.parse_shard_name(n) for n in names]
        assert one == [_scan(ranges, int.from_bytes(vitess.keyspace_id(k, vindex)[:8], "big")) for k in keys]
        assert r.route_many(keys).tolist() == one
        assert [r.shards[i] for i in one] == [r.route(k) for k in keys]
        if vindex != "binary_md5":
            assert r.route_many(np.array(keys, dtype=np.uint64)).tolist() == one
        assert load_router(r.to_json()) == r


def test_binary_md5_batch_decides_on_eight_bytes_near_a_long_bound() -> None:
    # a shard start whose bytes 5-8 are not zero: values whose MD5 starts
    # with the same four bytes are decided on eight
    value = "user-42"
    k = int.from_bytes(vitess.keyspace_id(value, "binary_md5")[:8], "big")
    for bound in (k, k + 1):  # the value at the bound (upper shard), just below it (lower shard)
        names = [f"-{bound:016x}", f"{bound:016x}-"]
        r = vitess.VitessRouter(names, "binary_md5")
        want = 1 if bound == k else 0
        assert r.route_index(value) == want
        assert r.route_many([value, "other", value]).tolist()[::2] == [want, want]


def test_reverse_bits_and_numeric_arrays() -> None:
    ids = np.array([0, 1, 2, 3, 6, 2**62, 2**63 - 1], dtype=np.int64)
    rb = vitess.keyspace_id_array(ids, "reverse_bits")
    assert [f"{int(x):064b}" for x in rb] == [f"{int(i):064b}"[::-1] for i in ids]
    assert vitess.keyspace_id_array(ids, "numeric").tolist() == ids.tolist()
    u = np.array([2**64 - 1, 2**63], dtype=np.uint64)
    assert vitess.keyspace_id_array(u, "reverse_bits").tolist() == [2**64 - 1, 1]


def test_values_mapped_nowhere_are_refused() -> None:
    for vindex in ("numeric", "reverse_bits"):
        r = vitess.VitessRouter(["-80", "80-"], vindex)
        with pytest.raises(ValueError, match="negative"):
            r.route(-1)
        with pytest.raises(ValueError, match="position 1 .* negative"):
            r.route_many(np.array([1, -5]))
        with pytest.raises(ValueError, match="NULL"):
            vitess.keyspace_id(None, vindex)
        with pytest.raises(TypeError, match="maps integers"):
            r.route(1.5)
        with pytest.raises(OverflowError):
            r.route(2**64)
        with pytest.raises(TypeError, match="position 2"):
            r.route_many([1, 2, "x"])


def test_plan_resharding_to_512_shards() -> None:
    ids = np.arange(1, 200_001, dtype=np.int64)
    old = vitess.VitessRouter(vitess.generate_shard_ranges(256), "reverse_bits")
    new = vitess.VitessRouter(vitess.generate_shard_ranges(512), "reverse_bits")
    rep = plan.diff(old, new, ids)
    assert rep.moved_fraction == 1.0  # every shard gets a new name
    pairs = {(m.source, m.destination) for m in plan.moved_ranges(old, new)}
    assert ("-01", "-0080") in pairs and ("-01", "0080-0100") in pairs and len(pairs) == 512


def test_docstring_examples() -> None:
    import doctest

    res = doctest.testmod(vitess)
    assert res.attempted > 0 and res.failed == 0
