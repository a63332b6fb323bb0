"""Cluster.import_from / ``shardhash migrate import``: an unsharded database's
rows land on their owners exactly once, resumably, idempotently, with
conflicts reported and every value kept exactly across backends."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter
from shardhash.migrate import Cluster, MigrationError, importer
from shardhash.migrate.importer import ImportConflict, ImportMismatch

from ._harness import _tag, connect, drop_cluster, make_cluster, shard_rows

SHARDS = ["s0", "s1", "s2", "s3"]
N = 10_000


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path / "c"
    drop_cluster(tmp_path / "c", backend)


def _source(path: Path, n: int = N) -> str:
    """An unsharded SQLite database with the group's two tables; its URL."""
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE users (id BIGINT PRIMARY KEY, name TEXT NOT NULL, n BIGINT NOT NULL)")
    c.execute("CREATE TABLE events (eid BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, payload TEXT)")
    c.executemany("INSERT INTO users VALUES (?, ?, ?)", [(i, f"u{i}", i * 3) for i in range(1, n + 1)])
    c.executemany("INSERT INTO events VALUES (?, ?, ?)", [(i * 7, i, f"e{i}") for i in range(1, n + 1)])
    c.commit()
    c.close()
    return f"sqlite:{path}"


def _all(root: Path, table: str) -> dict[str, dict[Any, tuple[Any, ...]]]:
    return {s: shard_rows(root, s, table) for s in SHARDS}


def _check_placed(root: Path, n: int = N) -> None:
    router = JumpRouter(SHARDS)
    users, events = _all(root, "users"), _all(root, "events")
    for i in range(1, n + 1):
        where = [s for s in SHARDS if i in users[s]]
        assert where == [router.route(i)], (i, where)
        assert users[where[0]][i] == (i, f"u{i}", i * 3)
        ew = [s for s in SHARDS if i * 7 in events[s]]
        assert ew == [router.route(i)], (i, ew)
    assert sum(map(len, users.values())) == n
    assert sum(map(len, events.values())) == n


def test_import_places_every_row_on_its_owner_once(root: Path, backend: str, tmp_path: Path) -> None:
    cfg = make_cluster(root, SHARDS, events=True, backend=backend)
    url = _source(tmp_path / "src.db")
    cl = Cluster.load(cfg)
    try:
        rep = cl.import_from(url, chunk=3000)
        assert rep.rows_read == 2 * N and rep.rows_written == 2 * N and rep.rows_present == 0 and rep.verified
        assert sum(t["users"] for t in rep.per_shard.values()) == N
        _check_placed(root)
        for k in (1, 77, 9999):
            with cl.read(k) as tx:
                assert tx.execute("SELECT name FROM users WHERE id = ?", (k,)).fetchone()[0] == f"u{k}"
        again = cl.import_from(url, chunk=3000)  # a finished import: nothing read or written, verified again
        assert again.rows_read == 0 and again.rows_written == 0 and again.verified
    finally:
        cl.close()
    _check_placed(root)


def test_import_resumes_after_a_crash(root: Path, backend: str, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = make_cluster(root, SHARDS, events=True, backend=backend)
    url = _source(tmp_path / "src.db")
    real = importer._commit_cursor
    calls = [0]

    def crash_before_third(*a: Any) -> None:
        calls[0] += 1
        if calls[0] == 3:  # the third chunk is on its owners, its cursor not recorded
            raise RuntimeError("injected crash")
        real(*a)

    monkeypatch.setattr(importer, "_commit_cursor", crash_before_third)
    cl = Cluster.load(cfg)
    try:
        with pytest.raises(RuntimeError, match="injected crash"):
            cl.import_from(url, chunk=1000)
        written = sum(len(v) for v in _all(root, "users").values())
        assert written == 3000  # two recorded chunks and the unrecorded third
        monkeypatch.setattr(importer, "_commit_cursor", real)
        rep = cl.import_from(url, chunk=1000)
        assert rep.rows_read == 2 * N - 2000  # resumed after the second chunk
        assert rep.rows_present == 1000 and rep.verified  # the third chunk again: found there, same values
    finally:
        cl.close()
    _check_placed(root)


def test_import_reports_a_conflicting_row(root: Path, backend: str, tmp_path: Path) -> None:
    cfg = make_cluster(root, SHARDS, events=True, backend=backend)
    url = _source(tmp_path / "src.db", 2000)
    owner = JumpRouter(SHARDS).route(1234)
    c = connect(root, owner)
    c.execute("INSERT INTO users VALUES (?, ?, ?)", (1234, "someone else", 0))
    c.close()
    cl = Cluster.load(cfg)
    try:
        with pytest.raises(ImportConflict, match="1234") as ei:
            cl.import_from(url, chunk=500)
        assert ei.value.conflicts[0]["shard"] == owner
        assert ei.value.conflicts[0]["shard_row"] == (1234, "someone else", 0)
        with pytest.raises(ImportConflict):  # reported again: its chunk was not recorded
            cl.import_from(url, chunk=500)
    finally:
        cl.close()
    assert shard_rows(root, owner)[1234] == (1234, "someone else", 0)  # left untouched


def test_import_verify_finds_a_stray_row(root: Path, backend: str, tmp_path: Path) -> None:
    cfg = make_cluster(root, SHARDS, events=True, backend=backend)
    url = _source(tmp_path / "src.db", 500)
    cl = Cluster.load(cfg)
    try:
        cl.import_from(url)
        wrong = next(s for s in SHARDS if s != JumpRouter(SHARDS).route(10**6))
        c = connect(root, wrong)
        c.execute("INSERT INTO users VALUES (?, ?, ?)", (10**6, "stray", 0))
        c.close()
        with pytest.raises(ImportMismatch, match=wrong):
            cl.import_from(url)
    finally:
        cl.close()


def test_import_refuses_during_a_migration(root: Path, backend: str, tmp_path: Path) -> None:
    cfg = make_cluster(root, SHARDS, events=True, backend=backend)
    url = _source(tmp_path / "src.db", 100)
    cl = Cluster.load(cfg)
    try:
        c = cl.metadata.db.conn()
        c.execute("INSERT INTO migrations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  ("m1", "users", "copying", "move", 1, 2, "{}", "{}", "[]", "{}", None, 0.0, 0.0))
        with pytest.raises(MigrationError, match="in flight"):
            cl.import_from(url)
    finally:
        cl.close()
    assert sum(len(v) for v in _all(root, "users").values()) == 0


@pytest.fixture
def pg_root(tmp_path: Path) -> Iterator[Path]:
    from tests._postgres import need_postgres

    pg = need_postgres()
    yield tmp_path / "c"
    drop_cluster(tmp_path / "c", pg)


def test_sqlite_source_to_postgres_shards_keeps_values_exactly(pg_root: Path, tmp_path: Path) -> None:
    from tests._postgres import need_postgres

    pg = need_postgres()
    cfg = make_cluster(pg_root, SHARDS, backend=pg)
    # the shards lack table 'vals': the import creates it from the SQLite source's types
    src = tmp_path / "vals.db"
    c = sqlite3.connect(src)
    c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER NOT NULL)")
    rows = [(i, f"ü{i}\u2603", 2**31 + i * 2**40 if i % 2 else -(2**62) - i) for i in range(1, 400)]
    c.executemany("INSERT INTO users VALUES (?, ?, ?)", rows)
    c.execute("CREATE TABLE vals (k INTEGER PRIMARY KEY, f REAL, b BLOB)")
    vals = [(i, [0.1, -0.0, 1e308, 5e-324, float("inf"), 1 / 3][i % 6], bytes([i % 256, 0, 255]))
            for i in range(1, 300)]
    c.executemany("INSERT INTO vals VALUES (?, ?, ?)", vals)
    c.commit()
    vals = c.execute("SELECT * FROM vals").fetchall()  # (as SQLite holds them: its REAL column keeps -0.0 as 0.0)
    c.close()
    import json

    d = json.loads(cfg.read_text())
    d["groups"]["users"]["tables"].append({"name": "vals", "key": "k"})
    cfg.write_text(json.dumps(d))
    cl = Cluster.load(cfg)
    try:
        rep = cl.import_from(f"sqlite:{src}")
        assert rep.verified and rep.rows_written == len(rows) + len(vals)
    finally:
        cl.close()
    got = {k: v for s in SHARDS for k, v in shard_rows(pg_root, s).items()}
    assert got == {r[0]: r for r in rows}
    gv = {k: v for s in SHARDS for k, v in shard_rows(pg_root, s, "vals").items()}
    assert len(gv) == len(vals)
    for k, f, b in vals:
        assert gv[k][1].hex() == f.hex() and bytes(gv[k][2]) == b  # (float.hex: the exact bits)


def test_cli_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    root = tmp_path / "c"
    cfg = make_cluster(root, SHARDS, events=True)
    url = _source(tmp_path / "src.db", 1000)
    assert main(["migrate", "import", "--config", str(cfg), "--from", url]) == 0
    out = capsys.readouterr().out
    assert "1,000 written" in out or "2,000 written" in out
    assert "verified" in out
    _check_placed(root, 1000)


def test_import_needs_init(tmp_path: Path) -> None:
    import json

    root = tmp_path / "c"
    cfg = make_cluster(root, SHARDS)
    d = json.loads(cfg.read_text())
    d["metadata"] = "sqlite:fresh-meta.db"
    cfg.write_text(json.dumps(d))
    url = _source(tmp_path / "src.db", 10)
    cl = Cluster.load(cfg)
    try:
        with pytest.raises(MigrationError, match="migrate init"):
            cl.import_from(url)
    finally:
        cl.close()


def test_import_from_a_postgres_source(root: Path, backend: str, tmp_path: Path) -> None:
    """A PostgreSQL source onto SQLite shards (types mapped) or PostgreSQL shards."""
    import psycopg

    from tests._postgres import need_postgres

    pg = need_postgres()
    cfg = make_cluster(root, SHARDS, events=True, backend=backend)
    schema = f"t{_tag(root)}_src"
    with psycopg.connect(pg, autocommit=True) as c:
        c.execute(f"CREATE SCHEMA {schema}")
        c.execute(f"CREATE TABLE {schema}.users (id BIGINT PRIMARY KEY, name TEXT NOT NULL, n BIGINT NOT NULL)")
        c.execute(f"CREATE TABLE {schema}.events (eid BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, payload TEXT)")
        with c.cursor() as cur:
            cur.executemany(f"INSERT INTO {schema}.users VALUES (%s, %s, %s)",
                            [(i, f"u{i}", i * 3) for i in range(1, 2001)])
            cur.executemany(f"INSERT INTO {schema}.events VALUES (%s, %s, %s)",
                            [(i * 7, i, f"e{i}") for i in range(1, 2001)])
    cl = Cluster.load(cfg)
    try:
        rep = cl.import_from(f"postgresql:{pg} options='-csearch_path={schema}'", chunk=700)
        assert rep.rows_written == 4000 and rep.verified
    finally:
        cl.close()
        with psycopg.connect(pg, autocommit=True) as c:
            c.execute(f"DROP SCHEMA {schema} CASCADE")
    _check_placed(root, 2000)


def test_import_leaves_an_sqlite_source_unchanged(tmp_path: Path) -> None:
    root = tmp_path / "c"
    cfg = make_cluster(root, SHARDS, events=True)
    src = tmp_path / "src.db"
    url = _source(src, 300)
    before = src.read_bytes()
    cl = Cluster.load(cfg)
    try:
        assert cl.import_from(url).rows_written == 600
        with pytest.raises(ValueError, match="no such SQLite file"):
            cl.import_from(f"sqlite:{tmp_path / 'missing.db'}")
    finally:
        cl.close()
    assert src.read_bytes() == before  # (not even switched to WAL)
    assert not (tmp_path / "missing.db").exists()
