"""The numeric batch path (hash_extended_array / hash32_array of "numeric"),
which reads exact ints and Decimals in C, and the numrange batch, which
hashes its bounds through it, against the one-value path, the frozen
PostgreSQL vectors and a live server; values they do not read keep the
one-value path's errors, naming their position."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash.compat import postgres as pg
from tests._support import VECTORS
from tests.compat.test_postgres_numrange import CRAFTED_RANGES, _server, decode
from tests.compat.test_postgres_types import SEEDS, check_hashes, check_live_numerics, range_sql, range_values

_M64 = (1 << 64) - 1


def _one_at_a_time(vals: list[Any], seed: int) -> tuple[list[int], list[int]]:
    return ([pg.hash_extended(v, "numeric", seed) for v in vals], [pg.hash32(v, "numeric") for v in vals])


def _check_batch(vals: list[Any], seed: int = pg.HASH_PARTITION_SEED) -> None:
    ext, h32 = _one_at_a_time(vals, seed)
    assert pg.hash_extended_array(vals, "numeric", seed).tolist() == ext
    assert pg.hash32_array(vals, "numeric").tolist() == h32


EDGES: list[Any] = [
    0, 1, -1, 9999, 10000, 10001, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, -(2**64) - 5, 10**40, -(10**80) + 1,
    Decimal("0"), Decimal("-0"), Decimal("0E-10"), Decimal("-0E+30"), Decimal("0.000"), Decimal("NaN"),
    Decimal("-NaN"), Decimal("NaN123"), Decimal("Infinity"), Decimal("-Infinity"), Decimal("1E+1000"),
    Decimal("1E-1000"), Decimal("-7.5E-1001"), Decimal("123456789E+999"), Decimal("1.50"), Decimal("1.5"),
    Decimal("0001.0000"), Decimal("0.0001"), Decimal("0.00010"), Decimal("1E+4"), Decimal("1E+3"), Decimal("1E-4"),
    Decimal("1E-5"), Decimal("99999999.99999999"), Decimal("-12345678901234567890.0987654321"),
    Decimal("1" * 300 + "." + "9" * 301), Decimal("5" * 1000), Decimal("1e5"), Decimal("-5e-2"),
]


def test_edges_equal_the_one_value_path() -> None:
    for s in SEEDS + (7, _M64):
        _check_batch(EDGES, s)


def test_edges_against_hand_checked_values() -> None:
    # zero (any sign or scale) hashes to seed - 1 (32-bit: -1); NaN and the infinities to the seed (32-bit: 0)
    specials = [Decimal("-0"), Decimal("0E-10"), 0, Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity")]
    assert pg.hash_extended_array(specials, "numeric", 7).tolist() == [6, 6, 6, 7, 7, 7]
    assert pg.hash32_array(specials, "numeric").tolist() == [-1, -1, -1, 0, 0, 0]
    # the sign is not hashed, trailing zeros are not digits, an int equals its Decimal
    got = pg.hash_extended_array([12345, -12345, Decimal("12345.000"), Decimal("1.2345E+4")], "numeric").tolist()
    assert len(set(got)) == 1


_decimals = st.decimals(allow_nan=True, allow_infinity=True, places=None).filter(lambda d: not d.is_snan())
_scaled = st.builds(lambda sign, digits, exp: Decimal(f"{sign}{digits}E{exp}"), st.sampled_from(["", "-"]),
                    st.integers(0, 10**60), st.integers(-1100, 1100))
_values = st.one_of(_decimals, _scaled, st.integers(), st.integers(-(2**70), 2**70),
                    st.integers(-10_000_000, 10_000_000))


@given(st.lists(_values, max_size=40), st.integers(0, _M64))
def test_batch_equals_one_value_path(vals: list[Any], seed: int) -> None:
    _check_batch(vals, seed)


def test_frozen_vectors_through_the_batch() -> None:
    lines = [ln.split("\t") for ln in (VECTORS / "compat" / "postgres_numeric.tsv").read_text().splitlines()
             if ln and not ln.startswith("#")][1:]
    assert len(lines) == 200
    vals = [Decimal(r[1]) for r in lines]
    ints = [int(v) if v.is_finite() and v == v.to_integral_value() else v for v in vals]
    for batch in (vals, ints):
        assert pg.hash32_array(batch, "numeric").tolist() == [int(r[2]) for r in lines]
        for k, s in enumerate(SEEDS):
            assert pg.hash_extended_array(batch, "numeric", s).tolist() == [int(r[3 + k]) & _M64 for r in lines]


def test_values_the_reader_does_not_take_hash_as_one_value() -> None:
    class MyDecimal(Decimal):
        pass

    class MyInt(int):
        pass

    vals: list[Any] = [MyDecimal("1.25"), MyInt(42), np.int64(-7), np.uint64(2**64 - 1), 10**5000, Decimal("3.5")]
    _check_batch(vals)
    _check_batch(vals, 0)


def _refused_by_both(vals: list[Any], pg_type: str, exc: type[Exception], msg: str) -> None:
    """Both batch hashes refuse ``vals`` with ``exc``, its message starting with ``msg``."""
    for f in (pg.hash_extended_array, pg.hash32_array):
        with pytest.raises(exc) as got:
            f(vals, pg_type)
        assert str(got.value).startswith(msg), f.__name__


@pytest.mark.parametrize(("bad", "exc", "msg"), [
    (Decimal("sNaN"), ValueError, "value at position 2: a signalling NaN is not a PostgreSQL numeric"),
    (True, TypeError, "value at position 2: a numeric value must be an int or a decimal.Decimal, not True"),
    (1.5, TypeError, "value at position 2: a numeric value must be an int or a decimal.Decimal, not 1.5"),
    ("1", TypeError, "value at position 2: a numeric value must be an int or a decimal.Decimal, not '1'"),
])
def test_bad_values_keep_their_error_and_position(bad: Any, exc: type[Exception], msg: str) -> None:
    _refused_by_both([Decimal("1"), 2, bad, "later", Decimal("sNaN")], "numeric", exc, msg)


def test_null_is_refused_at_its_position() -> None:
    with pytest.raises((TypeError, ValueError), match="1"):
        pg.hash_extended_array([Decimal("1"), None], "numeric")


def test_composite_numeric_fields_take_the_batch() -> None:
    rows = [(Decimal("1.5"), 3), (10**30, -1), (Decimal("NaN"), 0), (Decimal("-0"), 2**40)]
    want = [pg.hash_extended(r, "(numeric, int8)", 5) for r in rows]
    assert pg.hash_extended_array(rows, "(numeric, int8)", 5).tolist() == want


def _live_values(rng: random.Random, n: int) -> list[Any]:
    out: list[Any] = list(EDGES[:30])
    out = [v for v in out if not (isinstance(v, Decimal) and v.is_nan() and str(v) != "NaN")]  # psql prints NaN only
    while len(out) < n:
        k = rng.random()
        if k < 0.25:
            out.append(rng.randrange(-(10**rng.randint(1, 60)), 10**rng.randint(1, 60)))
        else:
            digits = str(rng.randrange(0, 10**rng.randint(1, 60)))
            digits = "0" * rng.randint(0, 3) + digits + "0" * rng.randint(0, 6)
            out.append(Decimal(f"{rng.choice(['', '-'])}{digits}E{rng.randint(-120, 120)}"))
    return out


@pytest.mark.oracle
def test_live_random_numerics() -> None:
    check_live_numerics(_live_values(random.Random("numeric-batch"), 800))


# ------------------------------------------------------------------- numrange

_bound = st.one_of(st.none(), _scaled, st.integers(-(2**70), 2**70), st.just(Decimal("NaN")),
                   st.sampled_from([Decimal("0"), Decimal("-0"), Decimal("1.50"), Decimal("1.5"), 1, 2]))


@st.composite
def _numranges(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 15)) == 0:
        return "empty"
    a, b = draw(_bound), draw(_bound)
    if a is not None and b is not None and pg._ord(a) > pg._ord(b):
        a, b = b, a
    return pg.Range(a, b, draw(st.sampled_from(["[)", "[]", "(]", "()"])))


@given(st.lists(_numranges(), max_size=30), st.integers(0, _M64))
def test_numrange_batch_equals_one_value_path(vals: list[Any], seed: int) -> None:
    assert pg.hash_extended_array(vals, "numrange", seed).tolist() == [pg.hash_extended(v, "numrange", seed)
                                                                        for v in vals]
    assert pg.hash32_array(vals, "numrange").tolist() == [pg.hash32(v, "numrange") for v in vals]


def test_numrange_frozen_vectors_through_the_batch() -> None:
    lines = [ln.split("\t") for ln in (VECTORS / "compat" / "postgres_numranges.tsv").read_text().splitlines()
             if ln and not ln.startswith("#")][1:]
    rows = [r for r in lines if r[0] == "numrange"]
    assert len(rows) >= 50
    vals = [decode(r[1], "numrange") for r in rows]
    assert pg.hash32_array(vals, "numrange").tolist() == [int(r[2]) for r in rows]
    for k, s in enumerate(SEEDS):
        assert pg.hash_extended_array(vals, "numrange", s).tolist() == [int(r[3 + k]) & _M64 for r in rows]


@pytest.mark.parametrize(("bad", "exc", "msg"), [
    (pg.Range(2, 1), ValueError, "value at position 2: range lower bound must be less than or equal to"),
    (pg.Range(Decimal("sNaN"), 3), ValueError, "value at position 2: a signalling NaN is not a PostgreSQL numeric"),
    (pg.Range(1.5, 3), TypeError, "value at position 2: a numeric value must be an int or a decimal.Decimal"),
    (5, TypeError, "value at position 2: a numrange value must be a Range(lower, upper, bounds) or 'empty'"),
])
def test_numrange_bad_values_keep_their_error_and_position(bad: Any, exc: type[Exception], msg: str) -> None:
    _refused_by_both([pg.Range(1, 2), "empty", bad, pg.Range(3, 1)], "numrange", exc, msg)


def test_numrange_bounds_the_reader_does_not_take() -> None:
    vals = [pg.Range(np.int64(3), 7), pg.Range(None, np.uint64(2**64 - 1), "(]"), pg.Range(10**5000, None)]
    for s in SEEDS:
        assert pg.hash_extended_array(vals, "numrange", s).tolist() == [pg.hash_extended(v, "numrange", s)
                                                                        for v in vals]


@pytest.mark.oracle
def test_live_random_numranges() -> None:
    vals = range_values("numrange", random.Random("numrange-batch"), 400) + CRAFTED_RANGES
    check_hashes(vals, "numrange", _server(vals, "hash_range", lambda v: range_sql("numrange", v)))
