"""shardhash.compat.postgres: the compiled batch paths of range, multirange
and composite types (and arrays of composites).

``hash_extended_array``, ``hash32_array``, ``partition_of_array`` and
``HashPartitionRouter.route_many`` read ranges of int4/int8/date/timestamp/
timestamptz, their multiranges and composites into columns and hash them in
C.  Checked here against the one-value functions (the reference: the same
values one at a time, errors included), against the live server (over edge
values: extreme and unbounded bounds, every bound kind, empty ranges, large
multiranges, NULL fields and elements, non-UTC offsets) and against the
frozen vectors of tests/vectors/compat/ run through the batch path.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash.compat import postgres as pg
from tests._support import VECTORS, ill_typed
from tests.compat.test_postgres_composite import OUTER, _decode
from tests.compat.test_postgres_multirange import CRAFTED, _bound
from tests.compat.test_postgres_types import _M64, SEEDS, _psql, check_hashes, range_sql

R = pg.Range
M = pg.Multirange
UTC = dt.timezone.utc
NATIVE_RANGES = ("int4range", "int8range", "daterange", "tsrange", "tstzrange")
NATIVE_MULTIRANGES = tuple(m for m, r in pg.MULTIRANGE_TYPES.items() if r in NATIVE_RANGES)
ZONES = (UTC, dt.timezone(dt.timedelta(hours=5, minutes=30)), dt.timezone(dt.timedelta(hours=-8)),
         dt.timezone(dt.timedelta(hours=13, seconds=1)))


def _one(v: Any, t: str, seed: int | None) -> int | BaseException:
    """The one-value hash (seed None: the 32-bit one), or the exception it raises."""
    try:
        return pg.hash32(v, t) if seed is None else pg.hash_extended(v, t, seed)
    except (TypeError, ValueError, OverflowError) as e:
        return e


def agree(vals: list[Any], t: str) -> None:
    """The batch hashes of ``vals`` (valid values) equal the one-value ones,
    for every seed, 32-bit too, with and without threads."""
    for s in SEEDS:
        want = [pg.hash_extended(v, t, s) for v in vals]
        assert pg.hash_extended_array(vals, t, s).tolist() == want, (t, s)
        assert pg.hash_extended_array(vals, t, s, threads=2).tolist() == want, (t, s)
    want32 = [pg.hash32(v, t) for v in vals]
    assert pg.hash32_array(vals, t).tolist() == want32
    assert pg.hash32_array(vals, t, threads=2).tolist() == want32


def same_errors(vals: list[Any], t: str) -> int:
    """Every value alone in a batch behind a valid one: the batch raises what
    the one-value path raises, naming position 1, or hashes as it does.
    Returns how many values were refused."""
    refused = 0
    first = vals[0]
    for v in vals:
        for seed in (None, pg.HASH_PARTITION_SEED):
            one = _one(v, t, seed)
            batch = [first, v]
            if isinstance(one, BaseException):
                with pytest.raises(type(one)) as got:
                    if seed is None:
                        pg.hash32_array(batch, t)
                    else:
                        pg.hash_extended_array(batch, t, seed)
                assert str(got.value) == f"value at position 1: {one}"
                refused += seed is None
            elif seed is None:
                assert pg.hash32_array(batch, t).tolist()[1] == one
            else:
                assert pg.hash_extended_array(batch, t, seed).tolist()[1] == one
    return refused


# ------------------------------------------------------------------ values

def edge_bounds(et: str, rng: random.Random) -> list[Any]:
    """Extreme, near-extreme, repeated and random bounds of an element type."""
    if et in ("int4", "int8"):
        lo, hi = (-2**31, 2**31 - 1) if et == "int4" else (-2**63, 2**63 - 1)
        return [lo, lo + 1, hi - 1, hi, 0, -1, 1, 7, 8] + [rng.randrange(lo, hi) for _ in range(6)] + \
            [rng.randrange(-20, 20) for _ in range(6)]
    if et == "date":
        base = dt.date(2000, 1, 1)
        return [dt.date.min, dt.date.min + dt.timedelta(days=1), dt.date.max, dt.date.max - dt.timedelta(days=1),
                base, base - dt.timedelta(days=1), dt.date(1970, 1, 1)] + \
            [base + dt.timedelta(days=rng.randrange(-700000, 2900000)) for _ in range(6)] + \
            [base + dt.timedelta(days=rng.randrange(-5, 5)) for _ in range(6)]
    base_ts = dt.datetime(2000, 1, 1)
    out = [dt.datetime.min, dt.datetime.max, base_ts, base_ts - dt.timedelta(microseconds=1),
           dt.datetime(1999, 12, 31, 23, 59, 59)] + \
        [base_ts + dt.timedelta(microseconds=rng.randrange(-6 * 10**16, 25 * 10**16)) for _ in range(6)] + \
        [base_ts + dt.timedelta(microseconds=rng.randrange(-5, 5)) for _ in range(6)]
    if et == "timestamp":
        return out
    return [x.replace(tzinfo=rng.choice(ZONES)) for x in out]


def ranges_of(t: str, rng: random.Random, n: int) -> list[Any]:
    """Range values of every shape: each bound kind, unbounded sides, 'empty'
    in both spellings, equal bounds, and lower > upper (refused)."""
    pool = edge_bounds(pg.RANGE_TYPES[t], rng)
    out: list[Any] = ["empty", R(empty=True), R(None, None), R(None, None, "()"), R(empty=True, bounds="[]")]
    while len(out) < n:
        a, b = rng.choice(pool), rng.choice(pool)
        r = rng.random()
        if r < 0.1:
            b = a
        elif r < 0.85:
            a, b = min(a, b), max(a, b)   # else: in any order, the server refuses lower > upper
        out.append(R(None if rng.random() < 0.15 else a, None if rng.random() < 0.15 else b,
                     rng.choice(["[)", "[]", "(]", "()"])))
    return out


def _accepted(vals: list[Any], t: str) -> list[Any]:
    return [v for v in vals if not isinstance(_one(v, t, None), BaseException)]


def multiranges_of(t: str, rng: random.Random, n: int) -> list[Any]:
    """Multiranges of 0-6 ranges from a small pool (they touch, overlap and
    repeat), and large ones (over 16 ranges: the kernel's other sort)."""
    rt = pg.MULTIRANGE_TYPES[t]
    pool = _accepted(ranges_of(rt, rng, 80), rt)
    out: list[Any] = [M(), M(["empty"]), M([R(None, None)]), M([R(empty=True), R(None, None, "()")])]
    while len(out) < n:
        k = rng.randrange(17, 60) if rng.random() < 0.1 else rng.randrange(0, 7)
        out.append(M([rng.choice(pool) for _ in range(k)]))
    if t in ("int4multirange", "int8multirange"):
        out += CRAFTED
    return out


def _text(rng: random.Random) -> str:
    return "".join(rng.choice("abcé'ü \\,()\"") for _ in range(rng.randrange(0, 14)))


# A composite of the compiled path's field types, a range and a multirange,
# and a composite nested in it.
COMP = "(int4,text,date,timestamp,timestamptz,int8,int4range,datemultirange,(int8,text),bool,int8[])"
COMP_DDL = ("CREATE TYPE sh_bin AS (x int8, y text);\n"
            "CREATE TYPE sh_bc AS (a int4, b text, c date, d timestamp, e timestamptz, f int8, g int4range, "
            "h datemultirange, i sh_bin, j bool, k int8[]);\n")
COMP_DROP = "DROP TABLE IF EXISTS sh_bt; DROP TYPE IF EXISTS sh_bc; DROP TYPE IF EXISTS sh_bin;\n"


def composites_of(rng: random.Random, n: int) -> list[Any]:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.2 else v

    i4, i8 = edge_bounds("int4", rng), edge_bounds("int8", rng)
    ds, ts = edge_bounds("date", rng), edge_bounds("timestamp", rng)
    tz = _accepted(edge_bounds("timestamptz", rng), "timestamptz")  # (not datetime.min east of UTC)
    r4 = _accepted(ranges_of("int4range", rng, 40), "int4range")
    mr = multiranges_of("datemultirange", rng, 20)
    out: list[Any] = [(None,) * 11, [0, "", ds[4], ts[2], tz[2], 0, "empty", M(), (None, None), False, []]]
    while len(out) < n:
        v = [maybe(rng.choice(i4)), maybe(_text(rng)), maybe(rng.choice(ds)), maybe(rng.choice(ts)),
             maybe(rng.choice(tz)), maybe(rng.choice(i8)), maybe(rng.choice(r4)), maybe(rng.choice(mr)),
             maybe((maybe(rng.choice(i8)), maybe(_text(rng)))), maybe(rng.random() < 0.5),
             maybe([maybe(rng.choice(i8)) for _ in range(rng.randrange(0, 4))])]
        out.append(tuple(v) if rng.random() < 0.8 else v)  # a list is a composite value too
    return out


def composite_arrays_of(rng: random.Random, n: int) -> list[Any]:
    """(int4,text)[] values: NULL elements, NULL fields, two dimensions, empty arrays."""
    def elem() -> Any:
        if rng.random() < 0.1:
            return None
        return (None if rng.random() < 0.2 else rng.randrange(-2**31, 2**31),
                None if rng.random() < 0.2 else _text(rng))
    out: list[Any] = [[], [None], [(None, None)]]
    while len(out) < n:
        if rng.random() < 0.15:
            w = rng.randint(1, 3)
            out.append([[elem() for _ in range(w)] for _ in range(rng.randint(1, 3))])
        else:
            out.append([elem() for _ in range(rng.randint(1, 8))])
    return out


# ------------------------------------------------------------ the compiled path

@pytest.mark.parametrize("t", NATIVE_RANGES + NATIVE_MULTIRANGES + ("(int4,text)", COMP, "(int4,text)[]"))
def test_batch_goes_the_compiled_way(t: str) -> None:
    # the batch of these types is read and hashed in C, not one value at a time
    rng = random.Random(t)
    if t.endswith("[]"):
        vals: list[Any] = composite_arrays_of(rng, 20)
        keys = pg._to_keys([e for v in vals for e in (v if v and isinstance(v[0], tuple) else [])] or [(1, "a")],
                           t[:-2], allow_null=True)
    else:
        vals = composites_of(rng, 20) if t == COMP else [(1, "a"), (None, "b")] if t.startswith("(") else \
            _accepted(ranges_of(t, rng, 20), t) if t in pg.RANGE_TYPES else multiranges_of(t, rng, 20)
        keys = pg._to_keys(vals, t)
    assert keys.kind == "native"
    agree(vals, t)
    # numranges: bounds through the numeric batch; numeric multiranges stay one value at a time
    assert pg._to_keys([R(1, 2)], "numrange").kind == "native"
    assert pg._to_keys([M([R(1, 2)])], "nummultirange").kind == "pyvalues"


@pytest.mark.parametrize("t", NATIVE_RANGES)
def test_ranges_match_the_one_value_path(t: str) -> None:
    vals = ranges_of(t, random.Random(t), 400)
    assert same_errors(vals, t) > 0  # some lower > upper, or lower + 1 past the type's end
    agree(_accepted(vals, t), t)


@pytest.mark.parametrize("t", NATIVE_MULTIRANGES)
def test_multiranges_match_the_one_value_path(t: str) -> None:
    vals = multiranges_of(t, random.Random(t), 300)
    assert max(len(v.ranges) for v in vals) > 16
    agree(vals, t)


def test_composites_match_the_one_value_path() -> None:
    rng = random.Random(21)
    vals = composites_of(rng, 400)
    agree(vals, COMP)
    agree([(rng.randrange(-2**31, 2**31), _text(rng)) for _ in range(300)], "(int4,text)")
    agree(composite_arrays_of(rng, 300), "(int4,text)[]")
    agree([[None, (None, "x")], [(1, None), None]], "(int4,text)[]")
    # NULL composites and NULL arrays in rows: the column is skipped
    rows = [(v, rng.choice([None, rng.randrange(9)])) for v in vals] + [(None, 5), (None, None)]
    types = (COMP, "int4")
    want = [pg.partition_of(r, 8, types) for r in rows]
    assert pg.partition_of_array(rows, 8, types).tolist() == want
    router = pg.HashPartitionRouter([f"p{i}" for i in range(8)], types)
    assert router.route_many(rows).tolist() == want
    assert router.route_many(rows, threads=2).tolist() == want


_BOUND = st.one_of(st.none(), st.integers(-6, 6), st.sampled_from([-2**31, 2**31 - 1]))
_RANGE = st.one_of(st.just("empty"), st.builds(R, _BOUND, _BOUND, st.sampled_from(["[)", "[]", "(]", "()"])))


@given(st.lists(st.one_of(st.none(), st.lists(_RANGE, max_size=20).map(M)), max_size=12))
def test_property_int4_multiranges(vals: list[Any]) -> None:
    # small bounds that touch, overlap and repeat; the extremes; NULLs in rows; bad ranges refused alike
    ok = [v for v in vals if v is not None and not isinstance(_one(v, "int4multirange", 0), BaseException)]
    agree(ok, "int4multirange")
    rows = [(v, 1) for v in vals if v is None or v in ok]
    types = ("int4multirange", "int4")
    assert pg.partition_of_array(rows, 7, types).tolist() == [pg.partition_of(r, 7, types) for r in rows]
    if len(ok) < len([v for v in vals if v is not None]):
        same_errors([M()] + [v for v in vals if v is not None], "int4multirange")


@given(st.lists(st.tuples(st.one_of(st.none(), _RANGE), st.one_of(st.none(), st.text(max_size=4)),
                          st.one_of(st.none(), st.integers(-2**63, 2**63 - 1))), max_size=12))
def test_property_composites(vals: list[Any]) -> None:
    ok = [v for v in vals if not isinstance(_one(v, "(int4range,text,int8)", 0), BaseException)]
    agree(ok, "(int4range,text,int8)")
    agree([ok], "(int4range,text,int8)[]")


def test_values_the_compiled_path_leaves_to_python() -> None:
    # numpy scalars, subclasses and a Range subclass are hashed one at a time, in place, in a compiled batch
    class Int(int):
        pass

    class Sub(R):
        pass

    vals: list[Any] = [R(1, 5), R(np.int64(1), 5), R(Int(3), Int(9), "[]"), Sub(2, 4), R(1, 5), "empty"]
    for t in ("int4range", "int8range"):
        agree(vals, t)
    mrs = [M([R(1, 2)]), M([R(np.int32(1), 2), R(5, 7)]), M([Sub(1, 3), R(3, 4)]), M([R(1, 2)])]
    agree(mrs, "int8multirange")
    comps: list[Any] = [(1, "a"), (np.int32(2), "b"), (Int(3), "c"), (4, "d")]
    agree(comps, "(int4,text)")
    # a timestamptz whose tzinfo is not a fixed offset, and dates near the ends of datetime's range
    agree([R(dt.datetime(2024, 3, 31, 1, 30, tzinfo=UTC), None)], "tstzrange")
    agree([R(dt.date.max - dt.timedelta(days=1), dt.date.max, "[)")], "daterange")


def test_rows_of_many_columns() -> None:
    # rows as tuples, lists and named tuples (read one at a time), and a bad row named by its position
    from collections import namedtuple

    Row = namedtuple("Row", "r c")
    types = ("int8range", "(int4,text)")
    rows: list[Any] = [(R(1, 5), (1, "a")), [R(None, 3), None], Row(R(2, 2), (None, "b")), (None, [7, "c"])]
    want = [pg.partition_of(tuple(r), 8, types) for r in rows]
    assert pg.partition_of_array(rows, 8, types).tolist() == want
    assert pg.HashPartitionRouter([f"p{i}" for i in range(8)], types).route_many(rows).tolist() == want
    for bad in (None, (R(1, 2),), ill_typed(5)):
        with pytest.raises(ValueError, match=r"^row at position 1 must be a tuple of 2 values"):
            pg.partition_of_array([rows[0], bad], 8, types)


@pytest.mark.parametrize("threads", [None, 2])
def test_large_batches(threads: int | None) -> None:
    # more keys than one chunk: the kernels split over threads
    rng = random.Random(4)
    base = _accepted(ranges_of("int8range", rng, 300), "int8range")
    want = [pg.hash_extended(v, "int8range") for v in base] * 40
    assert pg.hash_extended_array(base * 40, "int8range", threads=threads).tolist() == want
    mrs = multiranges_of("int4multirange", rng, 200)
    want_m = [pg.hash32(v, "int4multirange") for v in mrs] * 40
    assert pg.hash32_array(mrs * 40, "int4multirange", threads=threads).tolist() == want_m


def test_daterange_to_the_last_python_date() -> None:
    # '[d, 9999-12-31]' is '[d, 10000-01-01)' in the server (its dates go on to 5874897 AD): hashed, not
    # refused; a date hashes as the int4 of its days since 2000-01-01, so the int4range of the days agrees
    last, d = dt.date.max, dt.date(2020, 1, 1)
    days = (last - dt.date(2000, 1, 1)).days
    vals = [R(d, last, "[]"), R(last, None, "()"), R(last, last, "[]"), M([R(d, last, "[]"), R(last, None)])]
    ints = [R(7305, days + 1), R(days + 1, None), R(days, days + 1), M([R(7305, None)])]
    for s in SEEDS:
        want = [pg.hash_extended(v, "int4range" if isinstance(v, R) else "int4multirange", s) for v in ints]
        assert [pg.hash_extended(v, "daterange" if isinstance(v, R) else "datemultirange", s) for v in vals] == want
        assert pg.hash_extended_array(vals[:3], "daterange", s).tolist() == want[:3]
        assert pg.hash_extended_array(vals[3:], "datemultirange", s).tolist() == want[3:]
    assert pg.hash32_array(vals[:3], "daterange").tolist() == [pg.hash32(v, "int4range") for v in ints[:3]]


# ------------------------------------------------------------------ errors

def test_range_errors_name_the_position() -> None:
    t = "int4range"
    with pytest.raises(ValueError, match=r"^value at position 2: range lower bound must be less"):
        pg.hash_extended_array([R(1, 2), "empty", R(5, 1)], t)
    with pytest.raises(ValueError, match=r"^value at position 1: value 2147483648 out of range for int4"):
        pg.hash32_array([R(1, 2), R(1, 2**31 - 1, "[]")], t)
    with pytest.raises(TypeError, match=r"^value at position 1: a int8range value must be a Range"):
        pg.hash_extended_array([R(1, 2), ill_typed((1, 2))], "int8range")
    with pytest.raises(ValueError, match=r"^value at position 0: range bounds must be one of"):
        pg.hash_extended_array([R(1, 2, "[[")], "int8range")
    with pytest.raises(TypeError, match=r"^value at position 1: date value must be a datetime.date"):
        pg.hash_extended_array([R(None, dt.date(2020, 1, 1)), R(dt.datetime(2020, 1, 1), None)], "daterange")
    with pytest.raises(ValueError, match=r"^value at position 1: timestamptz value must be timezone-aware"):
        pg.hash_extended_array([R(None, None), R(dt.datetime(2020, 1, 1), None)], "tstzrange")
    with pytest.raises(TypeError, match=r"^value at position 1 is NULL"):
        pg.hash_extended_array([R(1, 2), None], t)


def test_multirange_errors_name_the_position() -> None:
    with pytest.raises(ValueError, match=r"^value at position 1: range lower bound must be less"):
        pg.hash_extended_array([M([R(1, 2)]), M([R(1, 2), R(9, 3)])], "int8multirange")
    with pytest.raises(TypeError, match=r"^value at position 0: a datemultirange value must be a Multirange"):
        pg.hash32_array([[R(dt.date(2020, 1, 1), None)]], "datemultirange")
    with pytest.raises(TypeError, match=r"^value at position 2: a tsrange value must be a Range"):
        pg.hash_extended_array([M(), M(), M([ill_typed(5)])], "tsmultirange")


def test_composite_errors_name_the_position() -> None:
    t = "(int4,text)"
    with pytest.raises(ValueError, match=r"^value at position 1: a \(int4,text\) value has 2 fields, got 3"):
        pg.hash_extended_array([(1, "a"), (1, "a", 2)], t)
    with pytest.raises(ValueError, match=r"^value at position 2: field 0: value 2147483648 out of range"):
        pg.hash_extended_array([(1, "a"), (None, "b"), (2**31, "c")], t)
    with pytest.raises(TypeError, match=r"^value at position 1: field 1: text value must be a str"):
        pg.hash32_array([(1, "a"), (2, b"b")], t)
    with pytest.raises(ValueError, match=r"^value at position 1: field 1: range lower bound must be less"):
        pg.hash_extended_array([(1, R(1, 2)), (2, R(3, 1))], "(int4,int4range)")
    with pytest.raises(TypeError, match=r"^value at position 0: a \(int4,text\) value must be a tuple"):
        pg.hash_extended_array([ill_typed("x")], t)
    # arrays of composites: the array's position, then the element's and the field's
    with pytest.raises(ValueError, match=r"^value at position 1: array element 2: field 0: value 2147483648 out"):
        pg.hash_extended_array([[(1, "a")], [(1, "a"), None, (2**31, "b")]], "(int4,text)[]")


# ------------------------------------------------------------ live server

def _lit(v: Any, t: str) -> str:
    """An SQL literal of a value of type t (the types of COMP and the ranges)."""
    if v is None:
        return "NULL"
    if t in pg.RANGE_TYPES:
        return f"'empty'::{t}" if isinstance(v, pg.Range) and v.empty else range_sql(t, v)
    if t in pg.MULTIRANGE_TYPES:
        rt = pg.MULTIRANGE_TYPES[t]
        return f"{t}(" + ", ".join(_lit(r, rt) for r in v.ranges) + ")"
    if t in ("int4", "int8"):
        return f"'{v}'::{t}"
    if t == "text":
        return "'" + str(v).replace("'", "''") + "'::text"
    if t == "bool":
        return "true" if v else "false"
    if t in ("date", "timestamp", "timestamptz"):
        return f"'{v.isoformat()}'::{t}"
    if t == "int8[]":
        return "ARRAY[" + ", ".join("NULL" if x is None else str(x) for x in v) + "]::int8[]"
    raise AssertionError(t)


def composite_sql(v: Any) -> str:
    if v is None:
        return "NULL::sh_bc"
    ts = ("int4", "text", "date", "timestamp", "timestamptz", "int8", "int4range", "datemultirange", None, "bool",
          "int8[]")
    parts = [("NULL::sh_bin" if x is None else f"ROW({_lit(x[0], 'int8')}, {_lit(x[1], 'text')})::sh_bin")
             if ft is None else _lit(x, ft) for x, ft in zip(v, ts)]
    return "ROW(" + ", ".join(parts) + ")::sh_bc"


def _seeds_sql(fn: str) -> str:
    return ", ".join(f"{fn}_extended(v, {s - (1 << 64) if s >> 63 else s})" for s in SEEDS)


@pytest.mark.oracle
def test_live_edge_ranges_and_multiranges() -> None:
    rng = random.Random(77)
    parts = []
    cases: list[tuple[str, list[Any]]] = []
    for t in NATIVE_RANGES:
        vals = _accepted(ranges_of(t, rng, 150), t)
        cases.append((t, vals))
        parts.append(f"SELECT '{t}', i, hash_range(v), {_seeds_sql('hash_range')} FROM (VALUES " +
                     ", ".join(f"({i}, {_lit(v, t)})" for i, v in enumerate(vals)) + ") AS x(i, v)")
    for t in NATIVE_MULTIRANGES:
        vals = multiranges_of(t, rng, 60)
        cases.append((t, vals))
        parts.append(f"SELECT '{t}', i, hash_multirange(v), {_seeds_sql('hash_multirange')} FROM (VALUES " +
                     ", ".join(f"({i}, {_lit(v, t)})" for i, v in enumerate(vals)) + ") AS x(i, v)")
    rows = _psql(" UNION ALL ".join(parts) + " ORDER BY 1, 2;")
    for t, vals in cases:
        check_hashes(vals, t, [r[2:] for r in rows if r[0] == t])


@pytest.mark.oracle
def test_live_composites_and_their_arrays() -> None:
    rng = random.Random(78)
    vals = composites_of(rng, 300)
    elems = [None if v is None else tuple(v) for v in vals]  # (in an array, a list is a dimension)
    arrays: list[list[Any]] = [[rng.choice(elems) if rng.random() < 0.9 else None
                                for _ in range(rng.randrange(0, 5))] for _ in range(150)]
    arrays += [[], [None], [[elems[3], elems[4]], [None, elems[5]]]]

    def arr_sql(a: list[Any]) -> str:
        def inner(x: Any) -> str:
            return "[" + ", ".join(inner(y) for y in x) + "]" if isinstance(x, list) else composite_sql(x)
        return "'{}'::sh_bc[]" if not a else f"ARRAY{inner(a)}::sh_bc[]"

    script = (COMP_DROP + COMP_DDL +
              f"SELECT 'r', i, hash_record(v), {_seeds_sql('hash_record')} FROM (VALUES " +
              ", ".join(f"({i}, {composite_sql(v)})" for i, v in enumerate(vals)) + ") AS x(i, v) UNION ALL " +
              f"SELECT 'a', i, hash_array(v), {_seeds_sql('hash_array')} FROM (VALUES " +
              ", ".join(f"({i}, {arr_sql(a)})" for i, a in enumerate(arrays)) + ") AS x(i, v) ORDER BY 1, 2;\n" +
              COMP_DROP)
    rows = _psql(script)
    check_hashes(vals, COMP, [r[2:] for r in rows if r[0] == "r"])
    check_hashes(arrays, COMP + "[]", [r[2:] for r in rows if r[0] == "a"])


@pytest.mark.oracle
def test_live_partitioned_insert_of_ranges_and_composites() -> None:
    rng = random.Random(79)
    r8 = _accepted(ranges_of("int8range", rng, 200), "int8range")
    tz = multiranges_of("tstzmultirange", rng, 200)
    cs = composites_of(rng, 200)
    rows = [(rng.choice(r8 + [None]), rng.choice(tz + [None]), rng.choice(cs + [None])) for _ in range(500)]
    script = (COMP_DROP + COMP_DDL +
              "CREATE TABLE sh_bt (n int, r int8range, m tstzmultirange, c sh_bc) PARTITION BY HASH (r, m, c);\n" +
              "".join(f"CREATE TABLE sh_bt_{k} PARTITION OF sh_bt FOR VALUES WITH (MODULUS 6, REMAINDER {k});\n"
                      for k in range(6)) +
              "INSERT INTO sh_bt VALUES " + ", ".join(
                  f"({n}, {_lit(r, 'int8range')}, {_lit(m, 'tstzmultirange')}, {composite_sql(c)})"
                  for n, (r, m, c) in enumerate(rows)) +
              " RETURNING n, tableoid::regclass::text;\n" + COMP_DROP)
    got = {int(n): name for n, name in _psql(script)}
    types = ("int8range", "tstzmultirange", COMP)
    want = [int(got[n].rsplit("_", 1)[1]) for n in range(len(rows))]
    assert pg.partition_of_array(rows, 6, types).tolist() == want
    assert pg.partition_of_array(columns=[list(c) for c in zip(*rows)], modulus=6, types=types).tolist() == want
    router = pg.HashPartitionRouter([f"sh_bt_{k}" for k in range(6)], types)
    assert router.route_many(rows).tolist() == want


# ------------------------------------------------------------ frozen vectors

def _vectors(name: str) -> list[list[str]]:
    return [ln.split("\t") for ln in (VECTORS / "compat" / name).read_text().splitlines()
            if ln and not ln.startswith("#")][1:]


def _check_batch(vals: list[Any], t: str, rows: list[list[str]]) -> None:
    assert pg.hash32_array(vals, t).tolist() == [int(r[0]) for r in rows]
    for k, s in enumerate(SEEDS):
        assert pg.hash_extended_array(vals, t, s).tolist() == [int(r[1 + k]) & _M64 for r in rows]


def test_range_vectors_in_batch() -> None:
    lines = _vectors("postgres_ranges.tsv")
    assert len(lines) == 200

    def bound(t: str, x: Any) -> Any:
        if x is None or isinstance(x, int):
            return x
        v = dt.date.fromisoformat(x) if t == "daterange" else dt.datetime.fromisoformat(x)
        return v.replace(tzinfo=UTC) if t == "tstzrange" and isinstance(v, dt.datetime) and v.tzinfo is None else v

    for t in NATIVE_RANGES:
        mine = [ln for ln in lines if ln[0] == t]
        vals = []
        for ln in mine:
            raw = json.loads(ln[1])
            vals.append(raw if raw == "empty" else R(bound(t, raw[0]), bound(t, raw[1]), raw[2]))
        assert mine and pg._to_keys(vals, t).kind == "native"
        _check_batch(vals, t, [ln[2:] for ln in mine])


def test_multirange_vectors_in_batch() -> None:
    lines = _vectors("postgres_multiranges.tsv")
    assert len(lines) == 200
    for t in NATIVE_MULTIRANGES:
        mine = [ln for ln in lines if ln[0] == t]
        vals = [M(["empty" if r == "empty" else R(_bound(t, r[0]), _bound(t, r[1]), r[2]) for r in json.loads(ln[1])])
                for ln in mine]
        assert mine
        _check_batch(vals, t, [ln[2:] for ln in mine])


def test_composite_vectors_in_batch() -> None:
    lines = _vectors("postgres_composites.tsv")
    assert len(lines) == 120
    vals = [_decode(json.loads(ln[1])) for ln in lines]
    assert pg._to_keys(vals, OUTER).kind == "native"
    _check_batch(vals, OUTER, [ln[2:] for ln in lines])
    # as the elements of arrays: each vector value alone, and all of them in one array
    arrays = [[v] for v in vals]
    for s in SEEDS:
        want = [(31 + int(ln[3 + SEEDS.index(s)])) & _M64 for ln in lines]  # hash_array: 1 * 31 + element
        assert pg.hash_extended_array(arrays, OUTER + "[]", s).tolist() == want
