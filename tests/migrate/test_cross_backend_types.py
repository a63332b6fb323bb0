"""Migrations between SQLite and PostgreSQL shards: each column type maps to
its exact counterpart, every value is read back exactly (by its bits), a
value or type without an exact counterpart is refused at prepare naming its
table, column and key, and faults are told apart by their codes."""

from __future__ import annotations

import json
import math
import sqlite3
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter
from shardhash.migrate import Cluster, Migration, MigrationError
from shardhash.migrate.cluster import open_backend
from shardhash.migrate.coltypes import ColumnTypeError, canonical_row, float4_exact, sqlite_affinity, translate_ddl
from shardhash.migrate.executor import describe_fault
from tests._postgres import need_postgres

from ._harness import create_schemas, drop_cluster, shard_url


@pytest.fixture
def pg() -> str:
    return need_postgres()


@pytest.fixture
def root(tmp_path: Path, pg: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, pg)


def _cluster(root: Path, pg: str, kinds: dict[str, str], ddl: Sequence[str], table: str = "vals",
             rows: Sequence[Sequence[Any]] = (), precreate: dict[str, Sequence[str]] | None = None) -> Cluster:
    """Shards named like ``kinds`` ('sqlite' or 'postgresql'), the group's
    router on the first shard only; ``ddl`` and ``rows`` on the first shard,
    ``precreate`` statements on the others."""

    urls = {}
    for s, k in kinds.items():
        if k == "sqlite":
            urls[s] = f"sqlite:{s}.db"
        else:
            create_schemas(pg, root, [s])
            urls[s] = shard_url(pg, root, s)
    first = next(iter(kinds))
    for s, stmts in {first: ddl, **(precreate or {})}.items():
        c: Any = open_backend(urls[s], root).connect()
        for q in stmts:
            c.execute(q)
        if s == first and rows:
            c.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in rows[0])})", rows)
        c.close()
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": u} for s, u in urls.items()},
           "groups": {"g": {"router": JumpRouter([first]).to_dict(), "tables": [{"name": table, "key": "id"}]}},
           "options": {"synchronous": "NORMAL"}}
    (root / "cluster.json").write_text(json.dumps(doc))
    cl = Cluster.load(root / "cluster.json")
    cl.init()
    return cl


def _move_all(cl: Cluster, to: str) -> Migration:
    """A migration of every key of group g to shard ``to``."""
    old = cl.refresh("g")
    new = JumpRouter([to], version=old.version + 1)
    return Migration.create(cl, "g", new)


def _rows(cl: Cluster, shard: str, table: str = "vals") -> dict[int, tuple[Any, ...]]:
    b = cl.backend(shard)
    c = b.connect()
    try:
        return {r[0]: tuple(r) for r in c.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()}
    finally:
        c.close()


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types (floats by their bits: -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)


SQLITE_DDL = ["CREATE TABLE vals (id INTEGER PRIMARY KEY, i INTEGER, r REAL, t TEXT, b BLOB, u, "
              "v VARCHAR(20), d DOUBLE, n BIGINT NOT NULL)",
              "CREATE UNIQUE INDEX vals_n ON vals(n)", "CREATE INDEX vals_it ON vals(i, t)",
              'CREATE INDEX "odd.idx ""q""" ON vals(d)']

INTS = [0, 1, -1, 2**31, -2**31 - 1, 2**53 + 1, 2**63 - 1, -2**63]
FLOATS = [0.0, 3.1, 1234567.89, 0.1, 1e308, -1e308, 5e-324, -5e-324, 2.225073858507201e-308,
          2.2250738585072014e-308, math.inf, -math.inf, 1.7976931348623157e308, 2.0**-1074 * 3]
TEXTS = ["", "a", "ünïcødé ✓ 𝄞", "'quote\" and \\ back", "x" * 5000, "tab\tnew\nline"]
BLOBS = [b"", b"\x00", b"\x00\xff\x00", bytes(range(256)), b"\\x41"]


def _sqlite_edge_rows() -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    n = max(len(INTS), len(FLOATS), len(TEXTS), len(BLOBS))
    for j in range(n + 1):
        if j == n:  # a row of NULLs
            rows.append((1000, None, None, None, None, None, None, None, 1000))
            continue
        rows.append((j + 1, INTS[j % len(INTS)], FLOATS[j % len(FLOATS)], TEXTS[j % len(TEXTS)],
                     BLOBS[j % len(BLOBS)], BLOBS[(j + 1) % len(BLOBS)], TEXTS[(j + 2) % len(TEXTS)][:20],
                     -FLOATS[(j + 3) % len(FLOATS)], INTS[(j + 4) % len(INTS)] if j < 4 else j))
    return rows


def test_sqlite_to_postgres_and_back_reads_every_value_back_exactly(root: Path, pg: str) -> None:
    rows = _sqlite_edge_rows()
    cl = _cluster(root, pg, {"a": "sqlite", "b": "postgresql", "c": "sqlite"}, SQLITE_DDL, rows=rows)
    before = _rows(cl, "a")
    assert len(before) == len(rows)
    m = _move_all(cl, "b")
    assert m.run() == "retained"
    assert m.status()["verify"]["mismatches"] == 0
    # Each column has its exact counterpart (not the source's DDL text: no
    # 32-bit integer, no 4-byte real, no type "blob").
    c = cl.backend("b").conn()
    types = dict(c.execute("SELECT column_name, data_type FROM information_schema.columns "
                           "WHERE table_name = 'vals' AND table_schema = current_schema()").fetchall())
    assert types == {"id": "bigint", "i": "bigint", "r": "double precision", "t": "text", "b": "bytea",
                     "u": "bytea", "v": "text", "d": "double precision", "n": "bigint"}
    idx = {r[0]: r[1] for r in c.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'vals' "
                                         "AND schemaname = current_schema()").fetchall()}
    assert "UNIQUE" in idx["vals_n"] and "(i, t)" in idx["vals_it"] and "(d)" in idx['odd.idx "q"']
    on_pg = _rows(cl, "b")
    assert set(on_pg) == set(before)
    for k, row in before.items():
        assert all(_same(x, y) for x, y in zip(row, on_pg[k])), (k, row, on_pg[k])
    assert m.cleanup() == len(rows)
    # And back, to a new SQLite shard created from PostgreSQL's types.
    m2 = _move_all(cl, "c")
    assert m2.run() == "retained"
    assert m2.status()["verify"]["mismatches"] == 0
    back = _rows(cl, "c")
    assert set(back) == set(before)
    for k, row in before.items():
        assert all(_same(x, y) for x, y in zip(row, back[k])), (k, row, back[k])
    cs = sqlite3.connect(root / "c.db")
    decl = {r[1]: r[2] for r in cs.execute("PRAGMA table_info(vals)").fetchall()}
    cs.close()
    assert decl == {"id": "INTEGER", "i": "INTEGER", "r": "REAL", "t": "TEXT", "b": "BLOB", "u": "BLOB",
                    "v": "TEXT", "d": "REAL", "n": "INTEGER"}
    cs = sqlite3.connect(root / "c.db")
    idx_back = {r[1]: bool(r[2]) for r in cs.execute("PRAGMA index_list(vals)").fetchall()}
    cs.close()
    assert idx_back == {"vals_n": True, "vals_it": False, 'odd.idx "q"': False}
    cl.close()


@pytest.mark.parametrize("ddl, row, column, why", [
    (["CREATE TABLE vals (id INTEGER PRIMARY KEY, t TEXT)"], (7, "a\x00b"), "t",
     r"'a\\x00b' \(str\) .*PostgreSQL text cannot hold NUL"),
    (["CREATE TABLE vals (id INTEGER PRIMARY KEY, i INTEGER)"], (7, "abc"), "i", "'abc'"),
    (["CREATE TABLE vals (id INTEGER PRIMARY KEY, r REAL)"], (7, b"\x01"), "r", r"b'\\x01'"),
    (["CREATE TABLE vals (id INTEGER PRIMARY KEY, u)"], (7, 12), "u", "12"),
    (["CREATE TABLE vals (id INTEGER PRIMARY KEY, b BLOB)"], (7, "text"), "b", "'text'"),
    (["CREATE TABLE vals (id INTEGER PRIMARY KEY, t TEXT)"], (7, b"\x00"), "t", r"b'\\x00'"),
])
def test_sqlite_value_without_exact_counterpart_is_refused_at_prepare(
        root: Path, pg: str, ddl: list[str], row: tuple[Any, ...], column: str, why: str) -> None:
    rows = [(i, row[1] if i == 7 else None) for i in range(1, 20)]
    cl = _cluster(root, pg, {"a": "sqlite", "b": "postgresql"}, ddl, rows=rows)
    m = _move_all(cl, "b")
    with pytest.raises(MigrationError, match=rf"table 'vals', column '{column}', primary key \(7,\): "
                                             rf"value {why}"):
        m.run()
    assert m.state == "preparing" and "column" in str(m.status()["error"])
    assert _rows(cl, "b") == {}  # nothing copied
    # Once the value is fixed, resume continues.
    a = cl.backend("a")
    with a.writing() as c:
        c.execute("UPDATE vals SET " + column + " = NULL WHERE id = 7")
    assert m.run() == "retained"
    assert len(_rows(cl, "b")) == 19
    cl.close()


def test_a_bad_value_written_after_prepare_is_refused_at_copy(root: Path, pg: str) -> None:
    cl = _cluster(root, pg, {"a": "sqlite", "b": "postgresql"},
                  ["CREATE TABLE vals (id INTEGER PRIMARY KEY, u BLOB)"], rows=[(i, b"x") for i in range(1, 50)])
    m = _move_all(cl, "b")
    m._prepare()
    m._set("copying")
    a = cl.backend("a")
    with a.writing() as c:
        c.execute("UPDATE vals SET u = 5 WHERE id = 30")  # (an int in a BLOB column: bytea would get b'5')
    with pytest.raises(MigrationError, match=r"table 'vals', column 'u', primary key \(30,\): value 5 \(int\)"):
        m.run()
    cl.close()


def test_a_bad_value_written_during_catch_up_is_refused(root: Path, pg: str) -> None:
    cl = _cluster(root, pg, {"a": "sqlite", "b": "postgresql"},
                  ["CREATE TABLE vals (id INTEGER PRIMARY KEY, t TEXT)"], rows=[(i, "x") for i in range(1, 50)])
    m = _move_all(cl, "b")
    assert m.run(cutover=False) == "catching-up"
    with cl.transaction(12, group="g") as tx:  # (a client write: captured)
        tx.execute("UPDATE vals SET t = ? WHERE id = ?", ("a\x00b", 12))
    with pytest.raises(MigrationError, match=r"column 't', primary key \(12,\): .*text cannot hold NUL"):
        m.catch_up()
    assert _rows(cl, "b")[12] == (12, "x")  # (nothing of the batch was written)
    cl.close()


@pytest.mark.parametrize("index", ["CREATE INDEX vals_p ON vals(i) WHERE i > 0",
                                   "CREATE INDEX vals_e ON vals((i + 1))"])
@pytest.mark.parametrize("src", ["sqlite", "postgresql"])
def test_partial_or_expression_index_is_refused(root: Path, pg: str, index: str, src: str) -> None:
    kinds = {"a": src, "b": "postgresql" if src == "sqlite" else "sqlite"}
    cl = _cluster(root, pg, kinds, ["CREATE TABLE vals (id bigint PRIMARY KEY, i bigint)", index])
    m = _move_all(cl, "b")
    with pytest.raises(ColumnTypeError, match=r"table 'vals': index .* is partial or on an expression"):
        m.run()
    cl.close()


def test_numeric_affinity_column_is_refused_at_prepare(root: Path, pg: str) -> None:
    cl = _cluster(root, pg, {"a": "sqlite", "b": "postgresql"},
                  ["CREATE TABLE vals (id INTEGER PRIMARY KEY, price DECIMAL(10, 2))"], rows=[(1, 1.5)])
    m = _move_all(cl, "b")
    with pytest.raises(ColumnTypeError, match=r"table 'vals', column 'price': SQLite type 'DECIMAL\(10, 2\)' "
                                              r"has NUMERIC affinity"):
        m.run()
    assert m.state == "preparing"
    cl.close()


def test_precreated_destination_columns_must_hold_the_values_exactly(root: Path, pg: str) -> None:
    """A destination table created by hand with a 4-byte ``real`` (which
    would store 3.1 as 3.0999999046325684) or a 32-bit ``integer`` too small
    for a value is refused before anything is copied."""
    cl = _cluster(root, pg, {"a": "sqlite", "b": "postgresql"},
                  ["CREATE TABLE vals (id INTEGER PRIMARY KEY, r REAL)"], rows=[(1, 3.1), (2, 1234567.89)],
                  precreate={"b": ["CREATE TABLE vals (id bigint PRIMARY KEY, r real)"]})
    m = _move_all(cl, "b")
    with pytest.raises(MigrationError, match=r"column 'r': source type 'REAL' \(sqlite\) and destination type "
                                             r"'real' \(postgresql\) do not hold the same values"):
        m.run()
    assert _rows(cl, "b") == {}
    cl.close()


def test_precreated_integer_column_takes_values_that_fit(root: Path, pg: str) -> None:
    cl = _cluster(root, pg, {"a": "sqlite", "b": "postgresql"},
                  ["CREATE TABLE vals (id INTEGER PRIMARY KEY, i INTEGER)"], rows=[(1, 2**31 - 1), (2, 2**31)],
                  precreate={"b": ["CREATE TABLE vals (id bigint PRIMARY KEY, i integer)"]})
    m = _move_all(cl, "b")
    with pytest.raises(MigrationError, match=r"column 'i', primary key \(2,\): value 2147483648"):
        m.run()
    with cl.backend("a").writing() as c:
        c.execute("DELETE FROM vals WHERE id = 2")
    assert m.run() == "retained"
    assert _rows(cl, "b") == {1: (1, 2**31 - 1)}
    cl.close()


PG_DDL = ["CREATE TABLE vals (id bigint PRIMARY KEY, s smallint, i integer, f4 real, f8 double precision, "
          "ok boolean, t text, v varchar, b bytea)"]


def test_postgres_to_sqlite_maps_types_and_reads_values_exactly(root: Path, pg: str) -> None:
    rows = [(1, -32768, 2**31 - 1, 3.1, 3.1, True, "", "v", b""),
            (2, 32767, -2**31, 1234567.89, 5e-324, False, "ü\n", "", b"\x00\xff"),
            (3, None, None, 1e-45, math.inf, None, None, None, None),
            (4, 0, 0, -math.inf, -1e308, True, "x" * 3000, "y", bytes(range(256)))]
    cl = _cluster(root, pg, {"a": "postgresql", "b": "sqlite"}, PG_DDL, rows=rows)
    m = _move_all(cl, "b")
    assert m.run() == "retained"
    assert m.status()["verify"]["mismatches"] == 0
    got = _rows(cl, "b")
    for r in rows:
        g = got[r[0]]
        # a real is its exact float4 value; a boolean is 0/1
        want: list[Any] = list(r)
        if isinstance(want[3], float) and math.isfinite(want[3]):
            want[3] = struct.unpack("<f", struct.pack("<f", want[3]))[0]
        want[5] = None if want[5] is None else int(want[5])
        assert all(_same(x, y) for x, y in zip(want, g)), (want, g)
    assert got[1][3] == 3.0999999046325684 and got[2][3] == 1234567.875
    cs = sqlite3.connect(root / "b.db")
    decl = {r[1]: r[2] for r in cs.execute("PRAGMA table_info(vals)").fetchall()}
    cs.close()
    assert decl == {"id": "INTEGER", "s": "INTEGER", "i": "INTEGER", "f4": "REAL", "f8": "REAL", "ok": "INTEGER",
                    "t": "TEXT", "v": "TEXT", "b": "BLOB"}
    cl.close()


@pytest.mark.parametrize("value, why", [(math.nan, "nan"), (-0.0, r"-0\.0")])
def test_postgres_float_sqlite_cannot_hold_is_refused(root: Path, pg: str, value: float, why: str) -> None:
    rows = [(i, value if i == 4 else 1.5) for i in range(1, 9)]
    cl = _cluster(root, pg, {"a": "postgresql", "b": "sqlite"},
                  ["CREATE TABLE vals (id bigint PRIMARY KEY, f double precision)"], rows=rows)
    m = _move_all(cl, "b")
    with pytest.raises(MigrationError, match=rf"column 'f', primary key \(4,\): value {why} .*SQLite stores"):
        m.run()
    assert _rows(cl, "b") == {}
    cl.close()


@pytest.mark.parametrize("decl", ["numeric", "numeric(10,2)", "timestamp without time zone", "json",
                                  "character varying(5)", "integer[]", "uuid"])
def test_postgres_type_without_exact_sqlite_counterpart_is_refused(root: Path, pg: str, decl: str) -> None:
    cl = _cluster(root, pg, {"a": "postgresql", "b": "sqlite"},
                  [f"CREATE TABLE vals (id bigint PRIMARY KEY, x {decl})"])
    m = _move_all(cl, "b")
    with pytest.raises(ColumnTypeError, match=r"table 'vals', column 'x': PostgreSQL type .* has no exact SQLite"):
        m.run()
    assert not (root / "b.db").exists() or "vals" not in str(_tables(root / "b.db"))
    cl.close()


def _tables(path: Path) -> list[str]:
    c = sqlite3.connect(path)
    try:
        return [str(r[0]) for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
    finally:
        c.close()


def test_translate_ddl_of_the_same_backend_is_the_sources_own(tmp_path: Path) -> None:
    b = open_backend(f"sqlite:{tmp_path / 'x.db'}")
    c = b.connect()
    c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, price DECIMAL(10,2))")
    assert translate_ddl(b, c, "t", "sqlite") == ["CREATE TABLE t (id INTEGER PRIMARY KEY, price DECIMAL(10,2))"]
    with pytest.raises(ColumnTypeError, match="column 'price'"):
        translate_ddl(b, c, "t", "postgresql")
    c.close()


@pytest.mark.parametrize("declared, affinity", [
    ("INT", "INTEGER"), ("INTEGER", "INTEGER"), ("TINYINT", "INTEGER"), ("UNSIGNED BIG INT", "INTEGER"),
    ("CHARACTER(20)", "TEXT"), ("VARCHAR(255)", "TEXT"), ("NCHAR(55)", "TEXT"), ("CLOB", "TEXT"),
    ("TEXT", "TEXT"), ("BLOB", "BLOB"), ("", "BLOB"), ("REAL", "REAL"), ("DOUBLE", "REAL"),
    ("DOUBLE PRECISION", "REAL"), ("FLOAT", "REAL"), ("NUMERIC", "NUMERIC"), ("DECIMAL(10,5)", "NUMERIC"),
    ("BOOLEAN", "NUMERIC"), ("DATE", "NUMERIC"), ("DATETIME", "NUMERIC"),
    ("FLOATING POINT", "INTEGER"), ("STRING", "NUMERIC"), ("CHARINT", "INTEGER"), ("BLOBTEXT", "TEXT"),
])
def test_sqlite_affinity_follows_the_documented_rules(declared: str, affinity: str) -> None:
    # (the examples of the SQLite documentation, section 3.1.1, and its order of the rules)
    assert sqlite_affinity(declared) == affinity
    c = sqlite3.connect(":memory:")
    c.execute(f"CREATE TABLE t (x {declared})")
    c.execute("INSERT INTO t VALUES ('12')")
    stored = c.execute("SELECT typeof(x) FROM t").fetchone()[0]
    c.close()
    # what SQLite itself does with the text '12' in such a column
    assert stored == {"INTEGER": "integer", "NUMERIC": "integer", "REAL": "real", "TEXT": "text",
                      "BLOB": "text"}[affinity]


def test_canonical_rows_compare_values_not_renderings() -> None:
    assert canonical_row((1, True, None)) == canonical_row((1, 1, None))
    assert canonical_row((0.0,)) != canonical_row((-0.0,))
    assert canonical_row((1,)) != canonical_row((1.0,))
    assert canonical_row(("a",)) != canonical_row((b"a",))
    assert canonical_row((memoryview(b"ab"),)) == canonical_row((b"ab",))
    assert canonical_row((3.1,)) != canonical_row((float4_exact("3.1"),))
    assert canonical_row((2.0**-1074,)) != canonical_row((0.0,))


def test_float4_text_is_read_as_its_exact_value() -> None:
    import random

    rng = random.Random(5)
    for _ in range(3000):
        x = struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0]
        if not math.isfinite(x):
            continue
        for text in (repr(x), f"{x:.9g}", f"{x:.8e}"):
            assert struct.pack("<f", float4_exact(text)) == struct.pack("<f", x), (text, x)
    assert float4_exact("3.1") == 3.0999999046325684
    assert math.copysign(1.0, float4_exact("-0")) < 0
    assert math.isnan(float4_exact("NaN")) and float4_exact("-Infinity") == -math.inf


def test_faults_are_classified_by_code_not_by_words(tmp_path: Path) -> None:
    import psycopg.errors as pe

    # Words that used to mean "unreachable" in errors that are not.
    for e in (pe.UndefinedObject('type "blob" does not exist'),
              sqlite3.IntegrityError("UNIQUE constraint failed: connection.id"),
              sqlite3.OperationalError("no such column: terminated")):
        assert "unreachable" not in describe_fault(e), e
    assert "unreachable" in describe_fault(pe.AdminShutdown("terminating connection due to administrator command"))
    assert "unreachable" in describe_fault(pe.ConnectionFailure("x"))
    assert "unreachable" in describe_fault(psycopg_lost())
    assert "prepared tables are gone" in describe_fault(pe.UndefinedTable('relation "users" does not exist'))
    assert "disk is full" in describe_fault(pe.DiskFull("could not extend file"))
    assert "cannot be written" in describe_fault(pe.ReadOnlySqlTransaction("read-only"))
    import errno

    assert "disk is full" in describe_fault(OSError(errno.ENOSPC, "No space left on device"))
    assert "unreachable" in describe_fault(FileNotFoundError(errno.ENOENT, "gone"))
    assert "unreachable" not in describe_fault(PermissionError(errno.EACCES, "connection refused by policy"))
    # Real SQLite errors, by their result codes.
    p = tmp_path / "x.db"
    c = sqlite3.connect(p)
    c.execute("CREATE TABLE t (x BLOB)")
    c.commit()
    pages = int(c.execute("PRAGMA page_count").fetchone()[0])
    c.execute(f"PRAGMA max_page_count = {pages + 1}")
    with pytest.raises(sqlite3.Error) as full:
        c.execute("INSERT INTO t VALUES (zeroblob(100000))")
    c.close()
    assert "disk is full" in describe_fault(full.value)
    ro = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
    with pytest.raises(sqlite3.Error) as readonly:
        ro.execute("INSERT INTO t VALUES (1)")
    ro.close()
    assert "cannot be written" in describe_fault(readonly.value)
    with pytest.raises(sqlite3.Error) as cantopen:
        sqlite3.connect(tmp_path / "missing" / "x.db").execute("SELECT 1")
    assert "unreachable" in describe_fault(cantopen.value)


def psycopg_lost() -> Exception:
    import psycopg

    return psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly")
