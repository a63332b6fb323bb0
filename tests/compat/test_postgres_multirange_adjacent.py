"""shardhash.compat.postgres: the merge step of multirange canonicalisation
(multirange_canonicalize) against PostgreSQL's own answers.

Golden vectors: tests/vectors/compat/postgres_multiranges_adjacent.tsv (from
the server, by tools/make_fidelity_vectors.py): int4, int8, date, timestamp
and timestamptz multiranges whose ranges touch under every pair of bound
kinds, lie one step apart, overlap, contain or repeat one another, come out
of order, have unbounded ends, empty ranges and single points among them, sit
at the types' edges, or form long shuffled chains -- with the server's
hash_multirange, hash_multirange_extended under three seeds and canonical
text (``v::text``).  Every row is checked through the one-value functions
(the pure-Python canonicalisation), the batch functions (the compiled
kernel, sh_pg_multirange_canonical) and the canonical ranges each of them
builds, written out as the server writes them.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import pytest

from shardhash.compat import _native_postgres as pgn
from shardhash.compat import postgres as pg
from tests._support import VECTORS
from tests.compat.test_postgres_multirange import _bound
from tests.compat.test_postgres_types import _M64, SEEDS

R = pg.Range
M = pg.Multirange
UTC = dt.timezone.utc
FILE = VECTORS / "compat" / "postgres_multiranges_adjacent.tsv"
TYPES = ("int4multirange", "int8multirange", "datemultirange", "tsmultirange", "tstzmultirange")
COLUMNS = ["type", "value", "hash32", "ext_seed0", "ext_seed1", "ext_partition_seed", "canonical"]
PER_TYPE = 120
_EPOCH = dt.datetime(2000, 1, 1)
_EPOCH_ORD = dt.date(2000, 1, 1).toordinal()
_US = dt.timedelta(microseconds=1)
_DAYS_400Y = 146097  # the Gregorian calendar repeats every 400 years


def _lines() -> list[list[str]]:
    lines = [ln.split("\t") for ln in FILE.read_text(encoding="utf-8").splitlines()
             if ln and not ln.startswith("#")]
    assert lines[0] == COLUMNS
    return lines[1:]


ROWS = _lines()


def _decode(t: str, value: str) -> Any:
    return M(["empty" if r == "empty" else R(_bound(t, r[0]), _bound(t, r[1]), r[2]) for r in json.loads(value)])


def _values(t: str) -> tuple[list[Any], list[list[str]]]:
    mine = [r for r in ROWS if r[0] == t]
    return [_decode(t, r[1]) for r in mine], mine


# ------------------------------------------------- the server's text of a range

def _date_text(days: int) -> str:
    """A date (days since 2000-01-01) as PostgreSQL writes it, years past 9999 too."""
    o, years = days + _EPOCH_ORD, 0
    while o > dt.date.max.toordinal():
        o, years = o - _DAYS_400Y, years + 400
    assert o >= 1, days  # (no BC dates in the file)
    d = dt.date.fromordinal(o)
    return f"{d.year + years:04d}-{d.month:02d}-{d.day:02d}"


def _elem_text(t: str, x: int) -> str:
    """A canonical bound as an integer (the value; days or microseconds since
    2000-01-01, timestamptz in UTC) as PostgreSQL writes it in a range."""
    if t in ("int4multirange", "int8multirange"):
        return str(x)
    if t == "datemultirange":
        return _date_text(x)
    ts = _EPOCH + x * _US
    text = f"{ts.year:04d}-{ts.month:02d}-{ts.day:02d} {ts.hour:02d}:{ts.minute:02d}:{ts.second:02d}"
    if ts.microsecond:
        text += f".{ts.microsecond:06d}".rstrip("0")
    if t == "tstzmultirange":
        text += "+00"
    return f'"{text}"'  # (a space inside: range_out quotes it)


def _range_text(t: str, flags: int, lo: int, hi: int) -> str:
    assert not flags & pg._R_EMPTY
    return ("[" if flags & pg._R_LB_INC else "(") + ("" if flags & pg._R_LB_INF else _elem_text(t, lo)) + "," + \
        ("" if flags & pg._R_UB_INF else _elem_text(t, hi)) + ("]" if flags & pg._R_UB_INC else ")")


def _as_int(t: str, x: Any) -> int:
    """A bound of pg._canonical_ranges as the integer the compiled path keeps."""
    if x is None or isinstance(x, int):
        return 0 if x is None else x  # (ints; dates are days there already)
    assert isinstance(x, dt.datetime)
    if t == "tstzmultirange":
        assert x.tzinfo is not None
        return (x - _EPOCH.replace(tzinfo=UTC)) // _US
    assert x.tzinfo is None
    return (x - _EPOCH) // _US


def reference_text(v: Any, t: str) -> str:
    """The canonical text of the pure-Python canonicalisation."""
    return "{" + ",".join(_range_text(t, f, _as_int(t, lo), _as_int(t, hi))
                          for f, lo, hi in pg._canonical_ranges(v, t)) + "}"


def kernel_texts(vals: list[Any], t: str) -> list[str]:
    """The canonical text of each value as the compiled path reads and merges it."""
    code = pgn.RANGE_ELEMENT_CODES[pg.RANGE_TYPES[pg.MULTIRANGE_TYPES[t]]]
    flags, lo, hi, offsets, isnull, slow = pgn.multirange_columns(vals, R, M, code)
    assert slow == [] and not isnull.any()  # every row through the kernel, none left to Python
    return ["{" + ",".join(_range_text(t, int(flags[k]), int(lo[k]), int(hi[k]))
                           for k in range(int(offsets[i]), int(offsets[i + 1]))) + "}" for i in range(len(vals))]


# ------------------------------------------------------------------- the tests

def test_file_shape() -> None:
    assert len(ROWS) == PER_TYPE * len(TYPES)
    for t in TYPES:
        assert sum(r[0] == t for r in ROWS) == PER_TYPE
    assert all(len(r) == len(COLUMNS) for r in ROWS)


@pytest.mark.parametrize("t", TYPES)
def test_one_value_hashes(t: str) -> None:
    vals, rows = _values(t)
    for v, r in zip(vals, rows):
        assert pg.hash32(v, t) == int(r[2]), (t, r[1])
        for k, s in enumerate(SEEDS):
            assert pg.hash_extended(v, t, s) == int(r[3 + k]) & _M64, (t, s, r[1])


@pytest.mark.parametrize("t", TYPES)
def test_batch_hashes(t: str) -> None:
    vals, rows = _values(t)
    want32 = [int(r[2]) for r in rows]
    assert pg.hash32_array(vals, t).tolist() == want32
    assert pg.hash32_array(vals, t, threads=2).tolist() == want32
    for k, s in enumerate(SEEDS):
        want = [int(r[3 + k]) & _M64 for r in rows]
        assert pg.hash_extended_array(vals, t, s).tolist() == want, (t, s)
        assert pg.hash_extended_array(vals, t, s, threads=2).tolist() == want, (t, s)


@pytest.mark.parametrize("t", TYPES)
def test_canonical_text(t: str) -> None:
    vals, rows = _values(t)
    want = [r[6] for r in rows]
    assert [reference_text(v, t) for v in vals] == want
    assert kernel_texts(vals, t) == want


_RANGE_TEXT = re.compile(r'([\[(])("[^"]*"|[^,]*),("[^"]*"|[^\])]*)([\])])')


def test_the_file_tells_merges_apart() -> None:
    """The rows hold what they are for, by the server's own text: on every
    type, ranges that merged and multiranges of several ranges; on the
    continuous types, canonical ranges that meet at one value (both sides
    exclusive) and stayed apart."""
    for t in TYPES:
        vals, rows = _values(t)
        given = [sum(1 for r in v.ranges if r != "empty" and not
                     pg._range_parts(r, pg.MULTIRANGE_TYPES[t])[0] & pg._R_EMPTY) for v in vals]
        out = [_RANGE_TEXT.findall(r[6]) for r in rows]
        assert sum(len(o) < g for o, g in zip(out, given)) >= 40, t
        assert sum(len(o) > 1 for o in out) >= 20, t
        meet = sum(1 for o in out for a, b in zip(o, o[1:]) if a[2] and a[2] == b[1])
        if t in ("tsmultirange", "tstzmultirange"):
            assert meet >= 10, t
        else:  # discrete: such ranges are always merged
            assert meet == 0, t
