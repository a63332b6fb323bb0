"""shardhash.compat.postgres: composite (row) types as partition keys,
named by their field types, e.g. ``"(int4,text)"``.

Live oracle: the PostgreSQL server -- ``hash_record`` and
``hash_record_extended`` under three seeds over random values of composite
types (integers, text, dates, numeric, arrays, ranges and a nested composite,
with NULL fields and NULL nested values), and real INSERTs into a table
hash-partitioned on (composite, int4).  Golden vectors:
tests/vectors/compat/postgres_composites.tsv (from the server).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
from typing import Any

import pytest

from shardhash.compat import postgres as pg
from tests._support import VECTORS
from tests.compat.test_postgres_types import _M64, SEEDS, _psql, check_hashes

INNER = "(int8,text)"
OUTER = "(int4,text,date,numeric,int8[],int4range,(int8,text))"
DDL = ("CREATE TYPE sh_inner AS (x int8, y text);\n"
       "CREATE TYPE sh_outer AS (a int4, b text, c date, d numeric, e int8[], f int4range, g sh_inner);\n")


def _text(rng: random.Random) -> str:
    return "".join(rng.choice("abcé'ü \\,()\"") for _ in range(rng.randrange(0, 10)))


def composite_values(rng: random.Random, n: int) -> list[Any]:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.2 else v

    out: list[Any] = [(None,) * 7, (0, "", dt.date(2000, 1, 1), decimal.Decimal(0), [], "empty", (None, None))]
    while len(out) < n:
        lo = rng.randrange(-100, 100)
        out.append((
            maybe(rng.choice([rng.randrange(-2**31, 2**31), rng.randrange(-5, 5)])),
            maybe(_text(rng)),
            maybe(dt.date(2000, 1, 1) + dt.timedelta(days=rng.randrange(-20000, 20000))),
            maybe(decimal.Decimal(rng.randrange(-10**12, 10**12)).scaleb(-rng.randrange(0, 8))),
            maybe([maybe(rng.randrange(-2**63, 2**63)) for _ in range(rng.randrange(0, 4))]),
            maybe(pg.Range(lo, lo + rng.randrange(0, 9), rng.choice(["[)", "[]", "(]", "()"]))),
            maybe((maybe(rng.randrange(-2**63, 2**63)), maybe(_text(rng)))),
        ))
    return out


def _lit(v: Any, t: str) -> str:
    if v is None:
        return "NULL"
    if t.startswith("int") and not t.endswith(("[]", "range")):
        return f"{v}::{t}"
    if t == "text":
        return "'" + str(v).replace("'", "''") + "'::text"
    if t == "date":
        return f"'{v.isoformat()}'::date"
    if t == "numeric":
        return f"'{v}'::numeric"
    if t == "int8[]":
        return "ARRAY[" + ", ".join("NULL" if x is None else str(x) for x in v) + "]::int8[]"
    if t == "int4range":
        return "'empty'::int4range" if v == "empty" else f"int4range({v.lower}, {v.upper}, '{v.bounds}')"
    raise AssertionError(t)


def composite_sql(v: Any) -> str:
    if v is None:
        return "NULL::sh_outer"
    a, b, c, d, e, f, g = v
    inner = "NULL::sh_inner" if g is None else f"ROW({_lit(g[0], 'int8')}, {_lit(g[1], 'text')})::sh_inner"
    return (f"ROW({_lit(a, 'int4')}, {_lit(b, 'text')}, {_lit(c, 'date')}, {_lit(d, 'numeric')}, "
            f"{_lit(e, 'int8[]')}, {_lit(f, 'int4range')}, {inner})::sh_outer")


def _server_hashes(vals: list[Any]) -> list[list[str]]:
    seeds = ", ".join(f"hash_record_extended(v, {s - (1 << 64) if s >> 63 else s})" for s in SEEDS)
    return _psql("DROP TYPE IF EXISTS sh_outer; DROP TYPE IF EXISTS sh_inner;\n" + DDL +
                 f"SELECT hash_record(v), {seeds} FROM (VALUES " +
                 ", ".join(f"({i}, {composite_sql(v)})" for i, v in enumerate(vals)) +
                 ") AS x(i, v) ORDER BY i;\nDROP TYPE sh_outer; DROP TYPE sh_inner;")


@pytest.mark.oracle
def test_live_record_hashes() -> None:
    vals = composite_values(random.Random(12), 500)
    rows = _server_hashes(vals)
    check_hashes(vals, OUTER, rows)


@pytest.mark.oracle
def test_live_composite_partitioned_insert() -> None:
    rng = random.Random(13)
    rows = [(v, rng.choice([None, rng.randrange(1000)])) for v in composite_values(rng, 500)]
    rows.append((None, 5))
    script = ("DROP TABLE IF EXISTS sh_comp; DROP TYPE IF EXISTS sh_outer; DROP TYPE IF EXISTS sh_inner;\n" + DDL +
              "CREATE TABLE sh_comp (n int, k sh_outer, m int4) PARTITION BY HASH (k, m);\n" +
              "".join(f"CREATE TABLE sh_comp_{r} PARTITION OF sh_comp FOR VALUES WITH (MODULUS 4, REMAINDER {r});\n"
                      for r in range(4)) +
              "INSERT INTO sh_comp VALUES " + ", ".join(
                  f"({n}, {composite_sql(v)}, {'NULL' if m is None else m})" for n, (v, m) in enumerate(rows)) +
              " RETURNING n, tableoid::regclass::text;\nDROP TABLE sh_comp; DROP TYPE sh_outer; DROP TYPE sh_inner;")
    got = {int(n): name for n, name in _psql(script)}
    types = (OUTER, "int4")
    want = [f"sh_comp_{pg.partition_of(r, 4, types)}" for r in rows]
    assert [got[n] for n in range(len(rows))] == want
    router = pg.HashPartitionRouter([f"sh_comp_{r}" for r in range(4)], types)
    assert [router.shards[i] for i in router.route_many(rows).tolist()] == want
    assert [router.route(r) for r in rows[:100]] == want[:100]


def test_composite_rules() -> None:
    t = "(int4,text)"
    assert pg.canonical_type("( Integer , text )") == t
    assert pg.canonical_type("(int4, character varying(20))") == "(int4,varchar)"
    assert pg.canonical_type("(int8, (int4, text)[], numeric(10, 2))") == "(int8,(int4,text)[],numeric)"
    # r = 0, then r * 31 + field hash (NULL: 0)
    a, b = pg.hash_extended(1, "int4", 0), pg.hash_extended("a", "text", 0)
    assert pg.hash_extended((1, "a"), t, 0) == (a * 31 + b) & _M64
    assert pg.hash_extended((None, "a"), t, 0) == b
    assert pg.hash_extended((None, None), t, 0) == 0 == pg.hash32((None, None), t)
    assert pg.hash_extended([1, "a"], t, 0) == pg.hash_extended((1, "a"), t, 0)
    # a one-column key of a composite type: the row is a 1-tuple holding the value
    assert pg.partition_of(((1, "a"),), 4, (t,)) == pg.partition_of(([1, "a"],), 4, (t,))
    with pytest.raises(ValueError, match="row has 2 values"):
        pg.partition_of((1, "a"), 4, (t,))


def test_composite_errors() -> None:
    t = "(int4,text)"
    with pytest.raises(ValueError, match="2 fields, got 3"):
        pg.hash_extended((1, "a", 2), t)
    with pytest.raises(TypeError, match="tuple of its 2 fields"):
        pg.hash_extended("x", t)
    with pytest.raises(ValueError, match="field 0.*out of range"):
        pg.hash_extended((2**31, "a"), t)
    with pytest.raises(TypeError, match="position 1: field 1"):
        pg.hash_extended_array([(1, 2), (1, 2.5)], "(int4,int4)")
    with pytest.raises(ValueError, match="unsupported PostgreSQL type"):
        pg.canonical_type("(int4, nosuchtype)")
    with pytest.raises(ValueError, match="composite type"):
        pg.canonical_type("(int4,,text)")


def _decode(v: Any) -> Any:
    a, b, c, d, e, f, g = v
    return (a, b, None if c is None else dt.date.fromisoformat(c), None if d is None else decimal.Decimal(d), e,
            None if f is None else "empty" if f == "empty" else pg.Range(*f), None if g is None else tuple(g))


def _encode(v: Any) -> str:
    a, b, c, d, e, f, g = v
    return json.dumps([a, b, None if c is None else c.isoformat(), None if d is None else str(d), e,
                       None if f is None else "empty" if f == "empty" else [f.lower, f.upper, f.bounds], g])


def test_composite_golden_vectors() -> None:
    lines = [ln.split("\t") for ln in (VECTORS / "compat" / "postgres_composites.tsv").read_text().splitlines()
             if ln and not ln.startswith("#")][1:]
    assert len(lines) == 120
    for t, value, h32, *ext in lines:
        assert t == OUTER
        v = _decode(json.loads(value))
        assert pg.hash32(v, t) == int(h32)
        for s, e in zip(SEEDS, ext):
            assert pg.hash_extended(v, t, s) == int(e) & _M64
