"""shardhash.compat.postgres: PostgreSQL hash partitioning, to the bit.

Three layers of evidence:
* frozen golden vectors (tests/vectors/compat/postgres_*.tsv, produced by
  tools/make_compat_vectors.py from a real PostgreSQL 15 server);
* the pure-Python reference (shardhash._reference.postgres) against the compiled kernels,
  with Hypothesis;
* a live PostgreSQL server (tests/_postgres.py finds or starts one):
  >= 10,000 values per type through the
  server's own hash functions in one query per type, and real
  INSERT ... RETURNING tableoid routing into hash-partitioned tables.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import random
import shutil
import struct
import subprocess
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardhash._reference import postgres as ref
from shardhash.compat import postgres as pg
from tests._postgres import missing as pg_missing
from tests._postgres import need_postgres
from tests._support import VECTORS as VECTOR_ROOT
from tests._support import examples, oracle_missing

VECTORS = VECTOR_ROOT / "compat"
M64 = (1 << 64) - 1
SEEDS = (pg.HASH_PARTITION_SEED, 0, -1234567890123456789 & M64)


# ---------------------------------------------------------------- encoding
# Golden-vector value encoding (shared with tools/make_compat_vectors.py):
# JSON for text, hex for bytea, ISO 8601 for dates and times, float.hex()
# for floats ("nan" for NaN), decimal for integers.

def decode_value(t: str, s: str) -> Any:
    if s == "NULL":
        return None
    if t in ("int2", "int4", "int8"):
        return int(s)
    if t == "date":
        return dt.date.fromisoformat(s)
    if t in ("timestamp", "timestamptz"):
        return dt.datetime.fromisoformat(s)
    if t in ("text", "varchar", "bpchar"):
        return json.loads(s)
    if t == "bytea":
        return bytes.fromhex(s)
    if t == "uuid":
        return uuid.UUID(s)
    return float("nan") if s == "nan" else float.fromhex(s)


def load_tsv(name: str) -> list[dict[str, str]]:
    lines = (VECTORS / name).read_text(encoding="utf-8").splitlines()
    rows = [ln for ln in lines if ln and not ln.startswith("#")]
    header = rows[0].split("\t")
    return [dict(zip(header, r.split("\t"))) for r in rows[1:]]


# ------------------------------------------------------------ golden vectors

@functools.cache
def hash_vectors() -> list[dict[str, str]]:
    return load_tsv("postgres_hash.tsv")


def test_vector_files_cover_every_type() -> None:
    assert {r["type"] for r in hash_vectors()} == set(pg.TYPES)
    assert len(load_tsv("postgres_partition.tsv")) >= 100


@pytest.mark.parametrize("t", pg.TYPES)
def test_hash_vectors(t: str) -> None:
    rows = [r for r in hash_vectors() if r["type"] == t]
    assert len(rows) >= 20
    values = [decode_value(t, r["value"]) for r in rows]
    for seed_col, seed in (("ext_partition_seed", pg.HASH_PARTITION_SEED), ("ext_seed0", 0)):
        want = [int(r[seed_col]) for r in rows]
        assert [pg.hash_extended(v, t, seed) for v in values] == want
        assert pg.hash_extended_array(values, t, seed).tolist() == want
    want32 = [int(r["hash32"]) for r in rows]
    assert [pg.hash32(v, t) for v in values] == want32
    assert pg.hash32_array(values, t).tolist() == want32


def _row(r: dict[str, str]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    types = tuple(r["types"].split(","))
    vals = tuple(decode_value(t, s) for t, s in zip(types, json.loads(r["row"])))
    return types, vals


def test_partition_vectors() -> None:
    by_key: dict[tuple[tuple[str, ...], int], list[tuple[tuple[Any, ...], int]]] = {}
    for r in load_tsv("postgres_partition.tsv"):
        types, vals = _row(r)
        m, rem = int(r["modulus"]), int(r["remainder"])
        assert pg.partition_of(vals, m, types) == rem, (types, vals, m)
        by_key.setdefault((types, m), []).append((vals, rem))
    for (types, m), rows in by_key.items():
        got = pg.partition_of_array([v for v, _ in rows], m, types)
        assert got.tolist() == [rem for _, rem in rows]


def test_published_examples() -> None:
    # Worked examples verified on PostgreSQL 15 (see docs/compat.md).
    assert pg.hash_extended(42, "int8") == 7363975540656877951
    assert pg.row_hash((42,), ("int8",)) == 0xAFD30D9A116A5A62
    assert pg.row_hash(("hello",), ("text",)) == 0x250E9012D8862B94
    assert pg.row_hash((1, "a"), ("int4", "text")) == 0x47BB31E3CA45EBC5
    assert (pg.hash32(42, "int4"), pg.hash32(42, "int8"), pg.hash32("hello", "text")) == \
        (1509752520, 1509752520, -1870292951)


# ------------------------------------------------- reference vs compiled

ints = {"int2": st.integers(-(1 << 15), (1 << 15) - 1), "int4": st.integers(-(1 << 31), (1 << 31) - 1),
        "int8": st.integers(-(1 << 63), (1 << 63) - 1)}
text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=40)
strategies = {
    **ints,
    "date": st.dates(),
    "timestamp": st.datetimes(),
    "timestamptz": st.datetimes(timezones=st.just(dt.timezone(dt.timedelta(hours=5, minutes=30)))),
    "text": text, "varchar": text, "bpchar": text,
    "bytea": st.binary(max_size=40),
    "uuid": st.uuids(),
    "float8": st.floats(allow_nan=True, allow_infinity=True),
    "float4": st.floats(width=32),
}


@pytest.mark.parametrize("t", pg.TYPES)
def test_reference_matches_compiled(t: str) -> None:
    @settings(max_examples=examples(30))
    @given(st.lists(strategies[t], min_size=1, max_size=20), st.integers(0, M64))
    def check(values: list[Any], seed: int) -> None:
        want = [ref.hash_extended(v, t, seed) for v in values]
        assert [pg.hash_extended(v, t, seed) for v in values] == want
        assert pg.hash_extended_array(values, t, seed).tolist() == want
        want32 = [ref.hash32(v, t) for v in values]
        assert pg.hash32_array(values, t).tolist() == want32
        assert [pg.hash32(v, t) for v in values] == want32

    check()


@given(st.binary(max_size=64), st.integers(0, M64))
def test_lookup3_every_length(data: bytes, seed: int) -> None:
    from shardhash.compat import _native
    assert _native.hash_bytes_extended(data, seed) == ref.hash_bytes_extended(data, seed)
    assert _native.hash_bytes(data) & 0xFFFFFFFF == ref.hash_bytes(data)


@given(st.lists(st.tuples(st.none() | ints["int4"], st.none() | text, st.none() | st.uuids()), max_size=40),
       st.integers(1, 1000))
def test_rows_reference(rows: list[tuple[Any, ...]], modulus: int) -> None:
    types = ("int4", "text", "uuid")
    want = [ref.partition_of(r, modulus, types) for r in rows]
    assert [pg.partition_of(r, modulus, types) for r in rows] == want
    if rows:
        assert pg.partition_of_array(rows, modulus, types).tolist() == want
        cols = [list(c) for c in zip(*rows)]
        assert pg.partition_of_array(columns=cols, modulus=modulus, types=types).tolist() == want


def test_int_types_agree_where_values_fit() -> None:
    # PostgreSQL's cross-type hash joins rely on this.
    vals = [0, 1, -1, 42, -32768, 32767, 12345]
    for seed in SEEDS:
        a = pg.hash_extended_array(vals, "int2", seed)
        assert (a == pg.hash_extended_array(vals, "int4", seed)).all()
        assert (a == pg.hash_extended_array(vals, "int8", seed)).all()


def test_array_inputs_agree() -> None:
    rng = np.random.default_rng(1)
    v = rng.integers(-(1 << 63), (1 << 63) - 1, size=1000, dtype=np.int64)
    base = pg.hash_extended_array(v, "int8")
    assert (pg.hash_extended_array(v.tolist(), "int8") == base).all()
    assert (pg.hash_extended_array(v, "int8", threads=3) == base).all()
    out = np.empty(1000, dtype=np.uint64)
    assert pg.hash_extended_array(v, "int8", out=out) is out
    pa = pytest.importorskip("pyarrow")
    assert (pg.hash_extended_array(pa.array(v), "int8") == base).all()
    words = ["", "a", "héllo", "x" * 13, "🙂" * 5]
    wb = pg.hash_extended_array(words, "text")
    assert (pg.hash_extended_array(np.array(words), "text") == wb).all()
    assert (pg.hash_extended_array(pa.array(words), "text") == wb).all()
    assert (pg.hash_extended_array(pa.array(words, type=pa.large_string()).slice(1), "text") == wb[1:]).all()
    days = np.array(["1999-12-31", "2000-01-01", "2024-02-29"], dtype="datetime64[D]")
    pyd = [dt.date(1999, 12, 31), dt.date(2000, 1, 1), dt.date(2024, 2, 29)]
    assert (pg.hash_extended_array(days, "date") == pg.hash_extended_array(pyd, "date")).all()
    ts = np.array(["1969-07-20T20:17:40.123456", "2000-01-01T00:00:00"], dtype="datetime64[us]")
    pyt = [dt.datetime(1969, 7, 20, 20, 17, 40, 123456), dt.datetime(2000, 1, 1)]
    assert (pg.hash_extended_array(ts, "timestamp") == pg.hash_extended_array(pyt, "timestamp")).all()


def test_float_rules() -> None:
    for seed in SEEDS:
        assert pg.hash_extended(0.0, "float8", seed) == seed
        assert pg.hash_extended(-0.0, "float8", seed) == seed
        nan2 = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0]
        assert pg.hash_extended(nan2, "float8", seed) == pg.hash_extended(math.nan, "float8", seed)
    assert pg.hash32(-0.0, "float8") == 0
    assert pg.hash_extended(1.5, "float4") == pg.hash_extended(1.5, "float8")
    assert pg.hash_extended(0.1, "float4") != pg.hash_extended(0.1, "float8")


# ----------------------------------------------------------- live oracle

class Psql:
    def __init__(self, exe: str, dsn: str) -> None:
        self.exe, self.dsn = exe, dsn

    def run(self, script: str) -> list[list[str]]:
        proc = subprocess.run(
            [self.exe, "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d", self.dsn, "-f", "-"],
            input="SET client_encoding = 'UTF8'; SET TimeZone = 'UTC';\n" + script,
            capture_output=True, text=True, encoding="utf-8", timeout=120)
        if proc.returncode != 0:
            raise AssertionError(f"psql failed: {proc.stderr.strip()}")
        return [ln.split("\t") for ln in proc.stdout.splitlines() if ln]


@pytest.fixture(scope="module")
def psql() -> Psql:
    exe = shutil.which("psql")
    if not exe:
        oracle_missing("PostgreSQL oracle", "psql is not installed")
    dsn = need_postgres(psycopg=False)
    p = Psql(exe, dsn)
    try:
        new_enough = p.run("SELECT current_setting('server_version_num')::int >= 110000;") == [["t"]]
    except (AssertionError, OSError, subprocess.TimeoutExpired) as exc:
        pg_missing(f"cannot connect to {dsn}: {exc}")
    if not new_enough:
        oracle_missing("PostgreSQL oracle", "PostgreSQL 11 or later is needed")
    return p


def copy_literal(t: str, v: Any) -> str:
    """A value in COPY text format."""
    if v is None:
        return "\\N"
    if t in ("text", "varchar", "bpchar"):
        return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    if t == "bytea":
        return "\\\\x" + bytes(v).hex()
    if t in ("float4", "float8"):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    return str(v)


def random_values(t: str, n: int, seed: int) -> list[Any]:
    rnd = random.Random(f"{t}/{seed}")
    edge: dict[str, list[Any]] = {
        "int2": [0, 1, -1, -32768, 32767],
        "int4": [0, 1, -1, -(1 << 31), (1 << 31) - 1, 42],
        "int8": [0, 1, -1, -(1 << 63), (1 << 63) - 1, 1 << 32, -(1 << 32), (1 << 31), -(1 << 31) - 1],
        "date": [dt.date(2000, 1, 1), dt.date(1999, 12, 31), dt.date(1970, 1, 1), dt.date(1, 1, 1),
                 dt.date(9999, 12, 31)],
        "timestamp": [dt.datetime(2000, 1, 1), dt.datetime(1999, 12, 31, 23, 59, 59, 999999),
                      dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)],
        "text": ["", "a", "hello", "x" * 11, "x" * 12, "x" * 13, "é", "tab\there", "back\\slash", "🙂"],
        "bytea": [b"", b"\x00", b"\xff" * 12, bytes(range(13))],
        "uuid": [uuid.UUID(int=0), uuid.UUID(int=M64 << 64 | M64)],
        "float8": [0.0, -0.0, math.nan, math.inf, -math.inf, 5e-324, 1.5, -2.25, 1e308],
        "float4": [0.0, -0.0, math.nan, math.inf, 1.5, 0.10000000149011612, 3.4028234663852886e38],
    }
    edge["varchar"] = edge["text"]
    edge["bpchar"] = edge["text"] + ["", " ", "ab  ", "a b", "   x", "x\t", "é  "]
    edge["timestamptz"] = [d.replace(tzinfo=dt.timezone.utc) for d in edge["timestamp"][:2]]
    out = list(edge[t])
    alphabet = "abcxyzABC019 \t\n\\éßЖ中文🙂\u200b"
    while len(out) < n:
        if t in ("int2", "int4", "int8"):
            bits = {"int2": 16, "int4": 32, "int8": 64}[t]
            b = rnd.choice([bits, bits, 8, 20, 33]) if t == "int8" else bits
            b = min(b, bits)
            out.append(rnd.randrange(-(1 << (b - 1)), 1 << (b - 1)))
        elif t == "date":
            out.append(dt.date.fromordinal(rnd.randrange(1, dt.date.max.toordinal() + 1)))
        elif t in ("timestamp", "timestamptz"):
            us = rnd.randrange(0, (dt.datetime.max - dt.datetime.min) // dt.timedelta(microseconds=1))
            d = dt.datetime.min + dt.timedelta(microseconds=us)
            if t == "timestamptz":
                off = dt.timedelta(minutes=rnd.randrange(-14 * 60, 14 * 60 + 1))
                d = d.replace(tzinfo=dt.timezone.utc)
                if dt.datetime.min.replace(tzinfo=dt.timezone.utc) + dt.timedelta(days=2) < d < \
                        dt.datetime.max.replace(tzinfo=dt.timezone.utc) - dt.timedelta(days=2):
                    d = d.astimezone(dt.timezone(off))
            out.append(d)
        elif t in ("text", "varchar", "bpchar"):
            w = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 41)))
            out.append(w + " " * rnd.randrange(0, 4) if t == "bpchar" else w)
        elif t == "bytea":
            out.append(rnd.randbytes(rnd.randrange(0, 41)))
        elif t == "uuid":
            out.append(uuid.UUID(int=rnd.getrandbits(128)))
        else:
            if t == "float8":
                f = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
            else:
                f = struct.unpack("<f", struct.pack("<I", rnd.getrandbits(32)))[0]
            if not math.isnan(f):
                out.append(f)
    return out[:n]


HASH_SQL = {
    "int2": ("hashint2extended(v, {s})", "hashint2(v)"),
    "int4": ("hashint4extended(v, {s})", "hashint4(v)"),
    "int8": ("hashint8extended(v, {s})", "hashint8(v)"),
    # date_ops uses hashint4(extended) on the date's int4 day number since 2000-01-01
    "date": ("hashint4extended(v - date '2000-01-01', {s})", "hashint4(v - date '2000-01-01')"),
    "timestamp": ("timestamp_hash_extended(v, {s})", "timestamp_hash(v)"),
    # timestamptz_ops uses timestamp_hash(_extended) on the same int64 (session TimeZone is UTC)
    "timestamptz": ("timestamp_hash_extended(v::timestamp, {s})", "timestamp_hash(v::timestamp)"),
    "text": ("hashtextextended(v, {s})", "hashtext(v)"),
    "varchar": ("hashtextextended(v, {s})", "hashtext(v)"),
    "bpchar": ("hashbpcharextended(v, {s})", "hashbpchar(v)"),
    # hashvarlena(extended) takes `internal`, so not callable from SQL; hash_array of a
    # one-element array is 31 + the element's hash (mod 2**32 / 2**64) -- undone below.
    "bytea": ("hash_array_extended(ARRAY[v], {s})", "hash_array(ARRAY[v])"),
    "uuid": ("uuid_hash_extended(v, {s})", "uuid_hash(v)"),
    "float8": ("hashfloat8extended(v, {s})", "hashfloat8(v)"),
    "float4": ("hashfloat4extended(v, {s})", "hashfloat4(v)"),
}


def signed32(u: int) -> int:
    return u - (1 << 32) if u >= 1 << 31 else u


def signed64(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


def oracle_hashes(psql: Psql, t: str, values: list[Any]) -> list[list[int]]:
    """[hash32, ext(seed) for seed in SEEDS] per value, from the server in one query."""
    ext, h32 = HASH_SQL[t]
    cols = ", ".join([h32] + [ext.format(s=signed64(s)) for s in SEEDS])
    data = "\n".join(f"{i}\t{copy_literal(t, v)}" for i, v in enumerate(values))
    script = (f"CREATE TEMP TABLE h (i int, v {t});\nCOPY h FROM STDIN;\n{data}\n\\.\n"
              f"SELECT {cols} FROM h ORDER BY i;\n")
    rows = [[int(x) for x in r] for r in psql.run(script)]
    if t == "bytea":
        rows = [[signed32((r[0] - 31) & 0xFFFFFFFF)] + [signed64((x - 31) & M64) for x in r[1:]] for r in rows]
    return rows


@pytest.mark.oracle
@pytest.mark.parametrize("t", pg.TYPES)
def test_live_hash_functions(psql: Psql, t: str) -> None:
    values = random_values(t, 10_000, seed=2026)
    got = oracle_hashes(psql, t, values)
    assert len(got) == len(values)
    want32 = [r[0] for r in got]
    assert pg.hash32_array(values, t).tolist() == want32
    for j, seed in enumerate(SEEDS, start=1):
        want = [r[j] & M64 for r in got]
        ours = pg.hash_extended_array(values, t, seed).tolist()
        if ours != want:
            bad = next(i for i in range(len(want)) if ours[i] != want[i])
            raise AssertionError(f"{t} seed {seed}: first mismatch at {values[bad]!r}: "
                                 f"ours {ours[bad]}, PostgreSQL {want[bad]}")
    # The scalar path on a sample.
    for i in range(0, len(values), 97):
        assert pg.hash_extended(values[i], t) == got[i][1] & M64
        assert pg.hash32(values[i], t) == got[i][0]


def routed_rows(psql: Psql, types: tuple[str, ...], bounds: list[tuple[int, int]],
                rows: list[tuple[Any, ...]]) -> list[tuple[int, int]]:
    """Insert rows into a real hash-partitioned table; return (modulus, remainder) per row."""
    cols = ", ".join(f"c{j} {t}" for j, t in enumerate(types))
    keys = ", ".join(f"c{j}" for j in range(len(types)))
    parts = "\n".join(f"CREATE TEMP TABLE p_{m}_{r} PARTITION OF p FOR VALUES WITH (MODULUS {m}, REMAINDER {r});"
                      for m, r in bounds)
    data = "\n".join("\t".join([str(i)] + [copy_literal(t, v) for t, v in zip(types, row)])
                     for i, row in enumerate(rows))
    script = (f"CREATE TEMP TABLE p (i int, {cols}) PARTITION BY HASH ({keys});\n{parts}\n"
              f"CREATE TEMP TABLE src (i int, {cols});\nCOPY src FROM STDIN;\n{data}\n\\.\n"
              f"WITH ins AS (INSERT INTO p SELECT * FROM src RETURNING i, tableoid::regclass::text AS part)\n"
              f"SELECT i, part FROM ins ORDER BY i;\n")
    out = []
    for _i, part in psql.run(script):
        _, m, r = part.rsplit(".", 1)[-1].split("_")
        out.append((int(m), int(r)))
    assert len(out) == len(rows)
    return out


def _with_nulls(rnd: random.Random, values: list[Any], rate: float) -> list[Any]:
    return [None if rnd.random() < rate else v for v in values]


@pytest.mark.oracle
@pytest.mark.parametrize("types, bounds", [
    (("int8",), [(8, r) for r in range(8)]),
    (("text",), [(5, r) for r in range(5)]),
    (("int4", "text"), [(2, 0), (4, 1), (8, 3), (8, 7)]),          # mixed moduli
    (("uuid", "date", "float8"), [(6, r) for r in range(6)]),
    (("timestamp", "bytea", "int2", "varchar"), [(3, r) for r in range(3)]),
    (("bpchar", "timestamptz", "float4"), [(4, r) for r in range(4)]),
])
def test_live_insert_routing(psql: Psql, types: tuple[str, ...], bounds: list[tuple[int, int]]) -> None:
    n = 10_000 if len(types) <= 2 else 3_000
    rnd = random.Random(str(types))
    cols = [_with_nulls(rnd, random_values(t, n, seed=7 + j), 0.1 if len(types) > 1 else 0.02)
            for j, t in enumerate(types)]
    rows = list(zip(*cols))
    rows[:3] = [tuple(None for _ in types)] * 3                      # all-NULL keys: remainder 0
    got = routed_rows(psql, types, bounds, rows)
    moduli = sorted({m for m, _ in bounds})
    remainders = {m: pg.partition_of_array(rows, m, types).tolist() for m in moduli}
    owners = {(m, r) for m, r in bounds}
    for i, (m, r) in enumerate(got):
        # PostgreSQL picks the partition whose (m, r) matches rowhash % m.
        assert remainders[m][i] == r, (rows[i], m, r)
        assert [(mm, remainders[mm][i]) for mm in moduli if (mm, remainders[mm][i]) in owners] == [(m, r)]
    for i in range(0, n, 211):
        assert pg.partition_of(rows[i], moduli[-1], types) == remainders[moduli[-1]][i]
    # The router with the table's (modulus, remainder) bounds picks the same partitions.
    router = pg.HashPartitionRouter([f"p_{m}_{r}" for m, r in bounds], types, bounds=bounds)
    assert router.complete
    assert [bounds[i] for i in router.route_many(rows).tolist()] == got


@pytest.mark.oracle
def test_live_satisfies_hash_partition(psql: Psql) -> None:
    # The server's own predicate agrees with partition_of for arbitrary moduli.
    values = random_values("int8", 2000, seed=3)
    data = "\n".join(f"{i}\t{v}" for i, v in enumerate(values))
    script = ("CREATE TEMP TABLE q (k int8) PARTITION BY HASH (k);\n"
              "CREATE TEMP TABLE q0 PARTITION OF q FOR VALUES WITH (MODULUS 1, REMAINDER 0);\n"
              f"CREATE TEMP TABLE s (i int, k int8);\nCOPY s FROM STDIN;\n{data}\n\\.\n"
              "SELECT i, r FROM s, generate_series(0, 36) AS r "
              "WHERE satisfies_hash_partition('q'::regclass, 37, r, k) ORDER BY i;\n")
    got = [int(r) for _, r in psql.run(script)]
    assert got == pg.partition_of_array(values, 37, ("int8",)).tolist()


def test_threads_hammer_the_same_routers() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from shardhash.compat import citus, guava

    rng = np.random.default_rng(9)
    ids = rng.integers(-(1 << 63), (1 << 63) - 1, 200_000, dtype=np.int64)
    words = [f"k{i}" for i in range(20_000)]
    hp = pg.HashPartitionRouter([f"p{i}" for i in range(13)], ("int8",))
    cr = citus.CitusRouter([f"s{i}" for i in range(32)], "text")
    want = (hp.route_many(ids, threads=1), cr.route_many(words, threads=1),
            guava.consistent_hash_array(ids, 977, threads=1), pg.hash_extended_array(ids, "int8", threads=1))

    def work(i: int) -> bool:
        got = (hp.route_many(ids, threads=2), cr.route_many(words, threads=2),
               guava.consistent_hash_array(ids, 977, threads=2), pg.hash_extended_array(ids, "int8", threads=3))
        return all(np.array_equal(a, b) for a, b in zip(got, want))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(16)))


def test_arrow_polars_and_pandas_columns_with_nulls() -> None:
    pa = pytest.importorskip("pyarrow")
    rnd = random.Random(4)
    n = 3000
    ints = [None if rnd.random() < 0.1 else rnd.randrange(-(1 << 31), 1 << 31) for _ in range(n)]
    texts = [None if rnd.random() < 0.1 else "".join(rnd.choice("aé🙂z") for _ in range(rnd.randrange(15)))
             for _ in range(n)]
    types = ("int4", "text")
    want = [ref.partition_of(r, 16, types) for r in zip(ints, texts)]
    arrow_cols = [pa.array(ints, type=pa.int32()), pa.chunked_array([texts[:1000], texts[1000:]])]
    assert pg.partition_of_array(columns=arrow_cols, modulus=16, types=types).tolist() == want
    assert pg.partition_of_array(columns=[ints, np.array(texts, dtype=object)], modulus=16,
                                 types=types).tolist() == want
    pd = pytest.importorskip("pandas")
    assert pg.partition_of_array(columns=[pd.Series(ints, dtype=object), pd.Series(texts)], modulus=16,
                                 types=types).tolist() == want
    pl = pytest.importorskip("polars")
    assert pg.partition_of_array(columns=[pl.Series(ints), pl.Series(texts)], modulus=16,
                                 types=types).tolist() == want


def test_router_documents_and_plan() -> None:
    import pickle

    from shardhash import plan
    from shardhash.routing import load_router

    r = pg.HashPartitionRouter([f"p{i}" for i in range(8)], ("integer", "text"), version=4)
    assert r.types == ("int4", "text") and r.modulus == 8
    back = load_router(r.to_json())
    assert isinstance(back, pg.HashPartitionRouter) and back == r and back.version == 4
    assert pickle.loads(pickle.dumps(r)) == r
    assert pg.HashPartitionRouter([f"p{i}" for i in range(8)], ("int8", "text")) != r
    rows = [(i, f"k{i}") for i in range(5000)]
    assert back.route_many(rows).tolist() == [r.route_index(x) for x in rows]
    assert r.route_columns([[x for x, _ in rows], [y for _, y in rows]]).tolist() == r.route_many(rows).tolist()
    # 8 -> 16 partitions with the same names for the first 8: exactly the rows
    # with rowhash % 16 >= 8 move, to partition (rowhash % 16).
    p8 = pg.HashPartitionRouter([f"p{i}" for i in range(8)], ("int8",))
    p16 = pg.HashPartitionRouter([f"p{i}" for i in range(16)], ("int8",))
    ids = np.arange(100_000, dtype=np.int64)
    rep = plan.diff(p8, p16, ids)
    rem16 = pg.partition_of_array(ids, 16, ("int8",))
    assert rep.moved == int((rem16 >= 8).sum())
    assert 0.48 < rep.moved_fraction < 0.52
