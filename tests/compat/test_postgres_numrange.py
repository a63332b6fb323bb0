"""shardhash.compat.postgres: numrange / nummultirange keys, composite types
with numeric range fields, and arrays of composite types.

Live oracle: the PostgreSQL server -- ``hash_range`` / ``hash_multirange``
(the random numranges and nummultiranges of the range and multirange tests,
plus crafted ones here), ``hash_record`` and ``hash_array`` (and their
extended forms under three seeds) of a composite type with numrange and
nummultirange fields and of arrays of it, and real INSERTs into tables
hash-partitioned on (numrange, nummultirange) and on (composite array, int4).
Golden vectors: tests/vectors/compat/postgres_numranges.tsv and
postgres_composite_arrays.tsv (from the server).
"""

from __future__ import annotations

import decimal
import json
import random
from typing import Any

import pytest

from shardhash.compat import postgres as pg
from tests._support import VECTORS
from tests.compat.test_postgres_multirange import multirange_sql, multirange_values
from tests.compat.test_postgres_types import _M64, SEEDS, _psql, check_hashes, range_sql, range_values

D = decimal.Decimal
R = pg.Range
M = pg.Multirange
NAN, INF = D("NaN"), D("Infinity")

COMP = "(int4,numrange,nummultirange,text)"
DDL = "CREATE TYPE sh_nc AS (a int4, r numrange, m nummultirange, t text);\n"
DROP = "DROP TYPE IF EXISTS sh_nc;\n"

# numeric ranges that test the order (NaN above everything, -Infinity below),
# equal values at other scales, and touching / overlapping in a multirange
CRAFTED_RANGES = [
    R(D("1.5"), D("2.25")), R(D("1.50"), D("2.250")), R(D("1.5"), D("1.5"), "(]"), R(D("1.5"), D("1.50"), "[]"),
    R(1, NAN), R(NAN, NAN, "[]"), R(NAN, NAN), R(D("-Infinity"), INF, "()"), R(INF, NAN, "[]"), R(None, NAN),
    R(D("-0"), D("0"), "[]"), R(0, D("1E-40")), R(D("-123456789012345678901234567890.123456789"), None, "(]"),
]
CRAFTED_MULTIRANGES = [
    M([R(1, NAN), R(NAN, NAN, "[]")]), M([R(D("1.5"), 2), R(2, D("2.5"))]), M([R(D("1.5"), 2, "()"), R(2, 3, "()")]),
    M([R(D("1.50"), D("2.0")), R(D("2.00"), 3)]), M([R(None, 0), R(D("-0"), None)]), M([R(INF, NAN), R(1, INF)]),
    M([R(D("3.1"), D("3.10"), "[]"), R(D("3.1"), D("3.2"), "()")]),
]


def _num_sql(v: Any) -> str:
    return "NULL" if v is None else f"'{v}'::numeric"


def composite_nr_values(rng: random.Random, n: int) -> list[Any]:
    """Values of COMP: NULL fields, empty / NaN / unbounded ranges, multiranges that merge."""
    ranges = range_values("numrange", rng, 60) + CRAFTED_RANGES
    mranges = multirange_values("nummultirange", rng, 40) + CRAFTED_MULTIRANGES

    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.2 else v

    out: list[Any] = [(None,) * 4, (0, "empty", M(), "")]
    while len(out) < n:
        out.append((maybe(rng.randrange(-2**31, 2**31)), maybe(rng.choice(ranges)), maybe(rng.choice(mranges)),
                    maybe("".join(rng.choice("ab é'(),\"\\") for _ in range(rng.randrange(0, 6))))))
    return out


def composite_nr_sql(v: Any) -> str:
    if v is None:
        return "NULL::sh_nc"
    a, r, m, t = v
    return (f"ROW({'NULL' if a is None else a}, {'NULL' if r is None else range_sql('numrange', r)}, "
            f"{'NULL' if m is None else multirange_sql('nummultirange', m)}, "
            f"{'NULL' if t is None else chr(39) + t.replace(chr(39), chr(39) * 2) + chr(39)})::sh_nc")


def composite_array_values(rng: random.Random, n: int) -> list[Any]:
    """Arrays of COMP: empty, with NULL elements, and two-dimensional ones."""
    pool = composite_nr_values(rng, 120)
    out: list[Any] = [[], [None], [pool[0]]]
    while len(out) < n:
        if rng.random() < 0.2:
            k = rng.randrange(1, 3)
            out.append([[rng.choice(pool + [None]) for _ in range(k)] for _ in range(rng.randrange(1, 3))])
        else:
            out.append([rng.choice(pool + [None]) for _ in range(rng.randrange(0, 5))])
    return out


def composite_array_sql(v: Any) -> str:
    if not v:
        return "'{}'::sh_nc[]"

    def items(x: Any) -> str:
        if isinstance(x, list):
            return "[" + ", ".join(items(y) for y in x) + "]"
        return composite_nr_sql(x)

    return f"ARRAY{items(v)}::sh_nc[]"


def _server(vals: list[Any], fn: str, sql: Any) -> list[list[str]]:
    seeds = ", ".join(f"{fn}_extended(v, {s - (1 << 64) if s >> 63 else s})" for s in SEEDS)
    return _psql(DROP + DDL + f"SELECT {fn}(v), {seeds} FROM (VALUES " +
                 ", ".join(f"({i}, {sql(v)})" for i, v in enumerate(vals)) + ") AS x(i, v) ORDER BY i;\n" + DROP)


@pytest.mark.oracle
def test_live_crafted_numranges() -> None:
    check_hashes(CRAFTED_RANGES, "numrange", _server(CRAFTED_RANGES, "hash_range", lambda v: range_sql("numrange", v)))
    check_hashes(CRAFTED_MULTIRANGES, "nummultirange",
           _server(CRAFTED_MULTIRANGES, "hash_multirange", lambda v: multirange_sql("nummultirange", v)))


@pytest.mark.oracle
def test_live_composite_with_numranges() -> None:
    vals = composite_nr_values(random.Random(21), 300)
    check_hashes(vals, COMP, _server(vals, "hash_record", composite_nr_sql))


@pytest.mark.oracle
def test_live_arrays_of_composites() -> None:
    vals = composite_array_values(random.Random(22), 300)
    check_hashes(vals, COMP + "[]", _server(vals, "hash_array", composite_array_sql))
    # an array of a plain composite type too
    rows = _psql("DROP TYPE IF EXISTS sh_p; CREATE TYPE sh_p AS (a int4, b text);\n"
                 "SELECT hash_array(ARRAY[ROW(1, 'a')::sh_p, NULL, ROW(NULL, 'b')::sh_p]), "
                 "hash_array_extended(ARRAY[ROW(1, 'a')::sh_p, NULL, ROW(NULL, 'b')::sh_p], 0); DROP TYPE sh_p;")
    v = [(1, "a"), None, (None, "b")]
    assert pg.hash32(v, "(int4, text)[]") == int(rows[0][0])
    assert pg.hash_extended(v, "(integer, text)[]", 0) == int(rows[0][1]) & _M64


@pytest.mark.oracle
def test_live_numrange_partitioned_insert() -> None:
    rng = random.Random(23)
    ranges = range_values("numrange", rng, 300) + CRAFTED_RANGES
    mranges = multirange_values("nummultirange", rng, 300) + CRAFTED_MULTIRANGES
    rows = [(rng.choice(ranges + [None]), rng.choice(mranges + [None])) for _ in range(500)]
    script = ("DROP TABLE IF EXISTS sh_nr;\n"
              "CREATE TABLE sh_nr (n int, r numrange, m nummultirange) PARTITION BY HASH (r, m);\n" +
              "".join(f"CREATE TABLE sh_nr_{k} PARTITION OF sh_nr FOR VALUES WITH (MODULUS 4, REMAINDER {k});\n"
                      for k in range(4)) +
              "INSERT INTO sh_nr VALUES " + ", ".join(
                  f"({n}, {'NULL' if r is None else range_sql('numrange', r)}, "
                  f"{'NULL' if m is None else multirange_sql('nummultirange', m)})" for n, (r, m) in enumerate(rows)) +
              " RETURNING n, tableoid::regclass::text;\nDROP TABLE sh_nr;")
    got = {int(n): name for n, name in _psql(script)}
    types = ("numrange", "nummultirange")
    want = [f"sh_nr_{pg.partition_of(r, 4, types)}" for r in rows]
    assert [got[n] for n in range(len(rows))] == want
    router = pg.HashPartitionRouter([f"sh_nr_{k}" for k in range(4)], types)
    assert [router.shards[i] for i in router.route_many(rows).tolist()] == want


@pytest.mark.oracle
def test_live_composite_array_partitioned_insert() -> None:
    rng = random.Random(24)
    rows = [(v, rng.choice([None, rng.randrange(1000)])) for v in composite_array_values(rng, 400)]
    rows.append((None, 5))
    script = ("DROP TABLE IF EXISTS sh_nca;\n" + DROP + DDL +
              "CREATE TABLE sh_nca (n int, k sh_nc[], m int4) PARTITION BY HASH (k, m);\n" +
              "".join(f"CREATE TABLE sh_nca_{r} PARTITION OF sh_nca FOR VALUES WITH (MODULUS 4, REMAINDER {r});\n"
                      for r in range(4)) +
              "INSERT INTO sh_nca VALUES " + ", ".join(
                  f"({n}, {'NULL' if v is None else composite_array_sql(v)}, {'NULL' if m is None else m})"
                  for n, (v, m) in enumerate(rows)) +
              " RETURNING n, tableoid::regclass::text;\nDROP TABLE sh_nca;\n" + DROP)
    got = {int(n): name for n, name in _psql(script)}
    types = (COMP + "[]", "int4")
    want = [f"sh_nca_{pg.partition_of(r, 4, types)}" for r in rows]
    assert [got[n] for n in range(len(rows))] == want
    router = pg.HashPartitionRouter([f"sh_nca_{r}" for r in range(4)], types)
    assert [router.shards[i] for i in router.route_many(rows).tolist()] == want


def test_numrange_rules() -> None:
    h = pg.hash_extended
    # equal numerics hash alike whatever their scale; ints and Decimals alike
    assert h(R(D("1.5"), D("2.25")), "numrange") == h(R(D("1.500"), D("2.2500")), "numrange")
    assert h(R(1, 2), "numrange") == h(R(D("1.0"), D("2")), "numrange")
    # equal bounds not both inclusive: empty (1.5 and 1.50 are equal)
    assert h(R(D("1.5"), D("1.50"), "(]"), "numrange") == h("empty", "numrange")
    # not discrete: (1,2] is not [2,3)
    assert h(R(1, 2, "(]"), "numrange") != h(R(2, 3), "numrange")
    # NaN sorts above every numeric and equals itself
    assert h(R(NAN, NAN), "numrange") == h("empty", "numrange")
    # infinite bounds are values, not unbounded sides
    assert h(R(1, INF), "numrange") != h(R(1, None), "numrange")
    assert h(M([R(1, NAN), R(NAN, NAN, "[]")]), "nummultirange") == h(M([R(1, NAN, "[]")]), "nummultirange")
    assert pg.canonical_type("NUMRANGE") == "numrange"
    assert pg.canonical_type("(int4, numrange)[]") == "(int4,numrange)[]"
    # the array's hash folds its composite elements' hashes: 1, then * 31 + element (NULL: 0)
    e = h((1, R(1, 2)), "(int4,numrange)", 0)
    assert h([(1, R(1, 2)), None], "(int4,numrange)[]", 0) == ((31 + e) * 31) & _M64


def test_numrange_errors() -> None:
    with pytest.raises(ValueError, match="lower bound must be less"):
        pg.hash_extended(R(NAN, 1), "numrange")
    with pytest.raises(ValueError, match="lower bound must be less"):
        pg.hash_extended(R(INF, 1), "numrange")
    with pytest.raises(TypeError, match="int or a decimal.Decimal"):
        pg.hash_extended(R(1.5, 2), "numrange")
    with pytest.raises(ValueError, match="signalling NaN"):
        pg.hash_extended(R(1, D("sNaN")), "numrange")
    with pytest.raises(ValueError, match="position 1"):
        pg.hash_extended_array([R(1, 2), R(3, 2)], "numrange")
    with pytest.raises(TypeError, match="position 0: array element 1: field 1: a numeric value must be"):
        pg.hash_extended_array([[(1, R(1, 2)), (2, R(1.5, 2))]], "(int4,numrange)[]")


def _json_range(r: Any) -> Any:
    return "empty" if r == "empty" else [None if r.lower is None else str(r.lower),
                                         None if r.upper is None else str(r.upper), r.bounds]


def _unjson_range(x: Any) -> Any:
    return "empty" if x == "empty" else R(None if x[0] is None else D(x[0]), None if x[1] is None else D(x[1]), x[2])


def encode(v: Any, t: str) -> str:
    """A JSON form of a numrange, nummultirange or COMP[] value (numerics as text)."""
    if t == "numrange":
        return json.dumps(_json_range(v))
    if t == "nummultirange":
        return json.dumps([_json_range(r) for r in v.ranges])

    def elem(x: Any) -> Any:
        if isinstance(x, list):
            return [elem(y) for y in x]
        if x is None:
            return None
        a, r, m, s = x  # an element: an object, so that lists are always the array's dimensions
        return {"a": a, "r": None if r is None else _json_range(r),
                "m": None if m is None else [_json_range(y) for y in m.ranges], "t": s}

    return json.dumps(elem(v))


def decode(s: str, t: str) -> Any:
    x = json.loads(s)
    if t == "numrange":
        return _unjson_range(x)
    if t == "nummultirange":
        return M([_unjson_range(y) for y in x])

    def elem(y: Any) -> Any:
        if y is None:
            return None
        if isinstance(y, list):
            return [elem(z) for z in y]
        return (y["a"], None if y["r"] is None else _unjson_range(y["r"]),
                None if y["m"] is None else M([_unjson_range(z) for z in y["m"]]), y["t"])

    return [elem(y) for y in x]


def _golden(name: str, n: int) -> None:
    lines = [ln.split("\t") for ln in (VECTORS / "compat" / name).read_text().splitlines()
             if ln and not ln.startswith("#")][1:]
    assert len(lines) == n
    for t, value, h32, *ext in lines:
        v = decode(value, t)
        assert encode(v, t) == value
        assert pg.hash32(v, t) == int(h32)
        for s, e in zip(SEEDS, ext):
            assert pg.hash_extended(v, t, s) == int(e) & _M64


def test_numrange_golden_vectors() -> None:
    _golden("postgres_numranges.tsv", 120)


def test_composite_array_golden_vectors() -> None:
    _golden("postgres_composite_arrays.tsv", 80)
