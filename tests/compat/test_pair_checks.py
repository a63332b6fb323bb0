"""Citus's ranges and PostgreSQL's partition bounds share one pair check
(compat._common.int_pair_seq): each pair is refused with its position, in
order, with each system's own words."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from shardhash.compat.citus import CitusRouter
from shardhash.compat.postgres import HashPartitionRouter

_FULL = [(-2**31, -1), (0, 2**31 - 1)]


@pytest.mark.parametrize("ranges, exc, msg", [
    ("x", TypeError, r"^ranges must be a sequence of \(min, max\) pairs, not str$"),
    ([_FULL[0]], ValueError, r"^1 ranges given for 2 shards$"),
    ([_FULL[0], (0,)], TypeError, r"^ranges\[1\] must be a \(min, max\) pair, not \(0,\)$"),
    ([_FULL[0], (0, True)], TypeError, r"^ranges\[1\] bounds must be ints, not True$"),
    ([_FULL[0], (0, np.bool_(True))], TypeError, r"^ranges\[1\] bounds must be ints, not "),
    # the first bad pair is the one reported, whatever is wrong with it
    ([(5, 1), (0, 0.5)], ValueError, r"^ranges\[0\] = \(5, 1\) is not an inclusive range"),
    ([(0, 0.5), (5, 1)], TypeError, r"^ranges\[0\] bounds must be ints, not 0\.5$"),
])
def test_citus_ranges(ranges: Any, exc: type[Exception], msg: str) -> None:
    with pytest.raises(exc, match=msg):
        CitusRouter(["a", "b"], "int4", ranges=ranges)


def test_citus_ranges_accept_numpy_ints() -> None:
    r = CitusRouter(["a", "b"], "int4", ranges=[(np.int64(-2**31), np.int32(-1)), (0, 2**31 - 1)])
    assert r.ranges == _FULL and all(type(v) is int for p in r.ranges for v in p)


@pytest.mark.parametrize("bounds, exc, msg", [
    (b"x", TypeError, r"^bounds must be a sequence of \(modulus, remainder\) pairs, not bytes$"),
    ([(2, 0)], ValueError, r"^1 bounds given for 2 partitions$"),
    ([(2, 0), "ab"], TypeError, r"^bounds\[1\] must be a \(modulus, remainder\) pair, not 'ab'$"),
    ([(2, 0), (2, np.bool_(True))], TypeError, r"^bounds\[1\] must hold ints, not "),
    ([(2, 2), (2, 0.5)], ValueError, r"^bounds\[0\]: remainder 2 must be in \[0, 1\] for modulus 2$"),
    ([(0, 0), (2, 1)], ValueError, r"^bounds\[0\]: modulus 0 must be in \[1, "),
])
def test_postgres_bounds(bounds: Any, exc: type[Exception], msg: str) -> None:
    with pytest.raises(exc, match=msg):
        HashPartitionRouter(["p0", "p1"], ("bigint",), bounds=bounds)
