"""Vitess xxhash lists and tuples on the helper-thread pipeline: ``threads=``
reaches it (it was ignored for lists), and one thread and several agree."""

from __future__ import annotations

import random

import numpy as np
import pytest

from shardhash.compat import vitess


def _keys(n: int) -> list[object]:
    rng = random.Random(11)
    out: list[object] = []
    for i in range(n):
        k = i % 5
        if k == 0:
            out.append(f"user-{rng.randrange(10**9)}@example.com")
        elif k == 1:
            out.append(rng.randbytes(rng.randrange(0, 80)))
        elif k == 2:
            out.append(rng.randrange(-2**63, 2**63))
        elif k == 3:
            out.append(None)
        else:
            out.append("é" * rng.randrange(0, 40))
    return out


@pytest.mark.parametrize("container", [list, tuple])
def test_threads_agree(container: type) -> None:
    keys = container(_keys(20_000))
    one = vitess.keyspace_id_array(keys, "xxhash", threads=1)
    want = np.array([int.from_bytes(vitess.keyspace_id(k, "xxhash"), "big") for k in keys[:500]], dtype=np.uint64)
    assert np.array_equal(one[:500], want)
    for t in (2, 3, 8):
        assert np.array_equal(vitess.keyspace_id_array(keys, "xxhash", threads=t), one)
    r = vitess.VitessRouter(vitess.generate_shard_ranges(512), "xxhash")
    base = r.route_many(keys, threads=1)
    assert np.array_equal(r.route_many(keys, threads=4), base)
    assert np.array_equal(r.route_many(keys), base)


def test_threads_is_validated_on_the_list_path() -> None:
    keys = ["a", "b", b"c", None, 7]
    for bad in (0, -1):
        with pytest.raises(ValueError, match="threads"):
            vitess.keyspace_id_array(keys, "xxhash", threads=bad)
        with pytest.raises(ValueError, match="threads"):
            vitess.VitessRouter(["-80", "80-"], "xxhash").route_many(keys, threads=bad)
    with pytest.raises(TypeError, match="threads"):
        vitess.keyspace_id_array(keys, "xxhash", threads=2.0)  # type: ignore[arg-type]


def test_threads_with_a_failing_key_reports_its_position() -> None:
    keys: list[object] = _keys(10_000)
    keys[7_777] = 1.5
    for t in (1, 4):
        with pytest.raises(TypeError, match="7777"):
            vitess.keyspace_id_array(keys, "xxhash", threads=t)
