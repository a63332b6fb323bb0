"""shardhash.compat.postgres: multirange column types (int4multirange,
int8multirange, datemultirange, tsmultirange, tstzmultirange).

Live oracle: the PostgreSQL server -- ``hash_multirange`` and
``hash_multirange_extended`` under three seeds over random multiranges whose
ranges overlap, touch, repeat, are empty or unbounded, and real INSERTs into a
table hash-partitioned on a multirange.  Enums: ``hashenum`` /
``hashenumextended`` of every label against the ``oid`` hash of its pg_enum
OID, and INSERTs into a table partitioned on an enum.  Golden vectors:
tests/vectors/compat/postgres_multiranges.tsv (from the server).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any

import pytest

from shardhash.compat import postgres as pg
from tests._support import VECTORS
from tests.compat.test_postgres_types import _M64, SEEDS, _psql, check_hashes, range_sql, range_values

R = pg.Range
M = pg.Multirange


def multirange_values(t: str, rng: random.Random, n: int) -> list[Any]:
    """Random multiranges of type ``t``: 0-6 ranges drawn from a small pool, so they overlap and repeat."""
    rt = pg.MULTIRANGE_TYPES[t]
    pool = range_values(rt, rng, 60)
    out: list[Any] = [M(), M(["empty"]), M([R(None, None)])]
    while len(out) < n:
        out.append(M([rng.choice(pool) for _ in range(rng.randrange(0, 7))]))
    return out


def multirange_sql(t: str, v: Any) -> str:
    rt = pg.MULTIRANGE_TYPES[t]
    return f"{t}(" + ", ".join(range_sql(rt, r) for r in v.ranges) + ")"


# ranges that touch or overlap in every way the merge distinguishes
CRAFTED = [
    M([R(1, 3), R(3, 5)]), M([R(3, 5), R(1, 3)]), M([R(1, 5)]), M([R(1, 3, "[]"), R(3, 5, "()")]),
    M([R(1, 3, "()"), R(3, 5, "()")]), M([R(1, 3, "(]"), R(4, 5, "[)")]), M([R(1, 10), R(2, 3)]),
    M([R(None, 3), R(2, None)]), M([R(None, 3), R(5, None)]), M([R(1, 2), R(1, 2), "empty", R(7, 7)]),
    M([R(5, 9, "[]"), R(1, 5, "[)"), R(9, 12, "(]")]), M([R(-2**31, 2**31 - 1)]),
]


@pytest.mark.oracle
@pytest.mark.parametrize("t", sorted(pg.MULTIRANGE_TYPES))
def test_live_multirange_hashes(t: str) -> None:
    vals = multirange_values(t, random.Random(t), 300)
    if t in ("int4multirange", "int8multirange"):
        vals += CRAFTED
    seeds = ", ".join(f"hash_multirange_extended(v, {s - (1 << 64) if s >> 63 else s})" for s in SEEDS)
    rows = _psql(f"SELECT hash_multirange(v), {seeds} FROM (VALUES " +
                 ", ".join(f"({i}, {multirange_sql(t, v)})" for i, v in enumerate(vals)) +
                 ") AS x(i, v) ORDER BY i;")
    check_hashes(vals, t, rows)


@pytest.mark.oracle
def test_live_multirange_partitioned_insert() -> None:
    rng = random.Random(9)
    vals = multirange_values("int4multirange", rng, 600) + CRAFTED
    rows = [(rng.choice([None, rng.randrange(100)]), v) for v in vals]
    ddl = ["DROP TABLE IF EXISTS sh_mr;",
           "CREATE TABLE sh_mr (n int, a int4, m int4multirange) PARTITION BY HASH (a, m);"]
    ddl += [f"CREATE TABLE sh_mr_{r} PARTITION OF sh_mr FOR VALUES WITH (MODULUS 4, REMAINDER {r});"
            for r in range(4)]
    ins = ("INSERT INTO sh_mr VALUES " + ", ".join(
        f"({n}, {'NULL' if a is None else a}, {multirange_sql('int4multirange', m)})"
        for n, (a, m) in enumerate(rows)) + " RETURNING n, tableoid::regclass::text;")
    got = {int(n): name for n, name in _psql("\n".join(ddl) + "\n" + ins + "\nDROP TABLE sh_mr;")}
    types = ("int4", "int4multirange")
    want = [f"sh_mr_{pg.partition_of(r, 4, types)}" for r in rows]
    assert [got[n] for n in range(len(rows))] == want
    router = pg.HashPartitionRouter([f"sh_mr_{r}" for r in range(4)], types)
    assert [router.shards[i] for i in router.route_many(rows).tolist()] == want


def test_multirange_rules() -> None:
    h = pg.hash_extended
    t = "int4multirange"
    # the canonical multirange: sorted, touching and overlapping ranges merged, empty ones dropped
    assert h(M([R(3, 5), R(1, 3)]), t) == h(M([R(1, 5)]), t) == h(M([R(1, 3, "[]"), R(3, 5, "()")]), t)
    assert h(M([R(1, 10), R(2, 3), "empty"]), t) == h(M([R(1, 10)]), t)
    assert h(M([R(1, 3), R(4, 5)]), t) != h(M([R(1, 5)]), t)
    assert h(M(), t) == h(M(["empty", R(2, 2)]), t) == 1            # no ranges: the initial 1
    assert pg.hash32(M(), t) == 1
    # continuous ranges touch only where one bound is inclusive and the other not
    ts = dt.datetime(2024, 1, 1)
    a, b, c = ts, ts + dt.timedelta(hours=1), ts + dt.timedelta(hours=2)
    assert h(M([R(a, b, "[)"), R(b, c, "[)")]), "tsmultirange") == h(M([R(a, c)]), "tsmultirange")
    assert h(M([R(a, b, "()"), R(b, c, "()")]), "tsmultirange") != h(M([R(a, c, "()")]), "tsmultirange")
    assert pg.canonical_type("INT8MULTIRANGE") == "int8multirange"


def test_multirange_errors() -> None:
    with pytest.raises(TypeError, match="Multirange"):
        pg.hash_extended([R(1, 2)], "int4multirange")
    with pytest.raises(TypeError, match="sequence of ranges"):
        M(R(1, 2))
    with pytest.raises(ValueError, match="lower bound"):
        pg.hash_extended(M([R(5, 1)]), "int4multirange")
    with pytest.raises(ValueError, match="position 1"):
        pg.hash_extended_array([M([R(1, 2)]), M([R(1, 2**31, "[]")])], "int4multirange")
    with pytest.raises(TypeError, match="NULL"):
        pg.hash_extended_array([M(), None], "int4multirange")
    # a NULL multirange column is skipped in a row, as every NULL column
    assert pg.partition_of((None, 5), 4, ("int4multirange", "int4")) == pg.partition_of((None, 5), 4, ("int4", "int4"))


def _bound(t: str, x: Any) -> Any:
    if x is None or isinstance(x, int):
        return x
    return dt.date.fromisoformat(x) if t == "datemultirange" else dt.datetime.fromisoformat(x)


def test_multirange_golden_vectors() -> None:
    lines = [ln.split("\t") for ln in (VECTORS / "compat" / "postgres_multiranges.tsv").read_text().splitlines()
             if ln and not ln.startswith("#")][1:]
    assert len(lines) == 200 and {r[0] for r in lines} == set(pg.MULTIRANGE_TYPES) - {"nummultirange"}
    for t, value, h32, *ext in lines:
        v = M(["empty" if r == "empty" else R(_bound(t, r[0]), _bound(t, r[1]), r[2]) for r in json.loads(value)])
        assert pg.hash32(v, t) == int(h32)
        for s, e in zip(SEEDS, ext):
            assert pg.hash_extended(v, t, s) == int(e) & _M64


@pytest.mark.oracle
def test_live_enum_hashes_as_its_oid() -> None:
    """An enum value hashes as its pg_enum OID (hashenum / hashenumextended are
    hashoid's): route enum columns as ``oid`` with the database's OIDs."""
    labels = ["sad", "ok", "happy", "ecstatic", "a label with spaces", "ünïcode"]
    lits = ", ".join("'" + lb.replace("'", "''") + "'" for lb in labels)
    seeds = ", ".join(f"hashenumextended(e, {s - (1 << 64) if s >> 63 else s})" for s in SEEDS)
    rng = random.Random(3)
    rows = [(rng.choice(labels + [None]), rng.randrange(1000)) for _ in range(400)]
    script = (
        "DROP TABLE IF EXISTS sh_enum; DROP TYPE IF EXISTS sh_mood;\n"
        f"CREATE TYPE sh_mood AS ENUM ({lits});\n"
        "CREATE TABLE sh_enum (n int, m sh_mood, k int8) PARTITION BY HASH (m, k);\n"
        + "".join(f"CREATE TABLE sh_enum_{r} PARTITION OF sh_enum FOR VALUES WITH (MODULUS 4, REMAINDER {r});\n"
                  for r in range(4))
        + f"SELECT 'h', enumlabel, oid::bigint, hashenum(e), {seeds} FROM pg_enum, "
          "LATERAL (SELECT enumlabel::sh_mood AS e) AS x WHERE enumtypid = 'sh_mood'::regtype;\n"
        + "INSERT INTO sh_enum VALUES " + ", ".join(
            f"({n}, {'NULL' if m is None else repr(m)}, {k})" for n, (m, k) in enumerate(rows))
        + " RETURNING 'i', n, tableoid::regclass::text;\n"
        + "DROP TABLE sh_enum; DROP TYPE sh_mood;")
    out = _psql(script)
    oids: dict[str, int] = {}
    for r in out:
        if r[0] != "h":
            continue
        label, oid = r[1], int(r[2])
        oids[label] = oid
        assert pg.hash32(oid, "oid") == int(r[3])
        for k, s in enumerate(SEEDS):
            assert pg.hash_extended(oid, "oid", s) == int(r[4 + k]) & _M64
    assert set(oids) == set(labels)
    got = {int(r[1]): r[2] for r in out if r[0] == "i"}
    types = ("oid", "int8")
    want = [f"sh_enum_{pg.partition_of((None if m is None else oids[m], k), 4, types)}" for m, k in rows]
    assert [got[n] for n in range(len(rows))] == want
