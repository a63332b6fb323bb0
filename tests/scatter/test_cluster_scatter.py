"""Cluster.scatter_gather across a cutover that adds a shard, and on a cluster
that mixes SQLite and PostgreSQL shards."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter
from shardhash.migrate import Cluster, Migration
from tests._postgres import need_postgres


def _cluster(root: Path, all_shards: list[str], group_shards: list[str]) -> Cluster:
    for s in all_shards:
        c = sqlite3.connect(root / f"{s}.db")
        c.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, grp INTEGER NOT NULL)")
        c.commit()
        c.close()
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": f"sqlite:{s}.db"} for s in all_shards},
           "groups": {"orders": {"router": JumpRouter(group_shards).to_dict(),
                                 "tables": [{"name": "orders", "key": "id"}]}}}
    cl = Cluster.from_dict(doc, base_dir=root)
    cl.init()
    return cl


def _write(cl: Cluster, rows: list[tuple[int, int]]) -> None:
    for r in rows:
        with cl.transaction(r[0], group="orders") as tx:
            tx.execute("INSERT INTO orders VALUES (?, ?)", r)


@pytest.mark.parametrize("shrink", [False, True])
def test_a_cursor_pages_on_across_a_cutover_that_adds_or_removes_a_shard(tmp_path: Path, shrink: bool) -> None:
    four = ["s0", "s1", "s2", "s3"]
    before, after = (four, four[:3]) if shrink else (four[:3], four)
    cl = _cluster(tmp_path, four, before)
    try:
        rows = [(i, (i * 7919) % 5) for i in range(1, 401)]
        _write(cl, rows)
        expected = [r for r in sorted(rows, key=lambda r: (r[1], r[0]))]
        got: list[tuple[Any, ...]] = []
        cursor = None
        pages = 0
        while True:
            page = cl.scatter_gather("SELECT id, grp FROM orders", group="orders", order_by=["grp", "id"],
                                     unique="id", limit=30, cursor=cursor)
            got += page.rows
            cursor = page.cursor
            pages += 1
            if pages == 4:  # between two pages: the shard set changes
                m = Migration.create(cl, "orders", JumpRouter(after, version=2))
                assert m.run() == "retained"
            if pages == 8:
                m.cleanup()
            if cursor is None:
                break
        assert pages > 8
        assert got == expected
    finally:
        cl.close()


def test_a_cursor_with_a_failed_shards_position_is_refused_after_a_cutover(tmp_path: Path) -> None:
    four = ["s0", "s1", "s2", "s3"]
    cl = _cluster(tmp_path, four, four[:3])
    try:
        _write(cl, [(i, i % 3) for i in range(1, 61)])
        real = cl.backend

        def broken(shard: str) -> Any:
            b = real(shard)
            if shard != "s1":
                return b

            class Down:
                kind = "sqlite"

                def connect(self) -> Any:
                    raise ConnectionRefusedError("s1 is down")

            return Down()

        cl.backend = broken  # type: ignore[method-assign]
        page = cl.scatter_gather("SELECT id, grp FROM orders", group="orders", order_by=["id"], unique="id",
                                 limit=5, on_partial="partial")
        cl.backend = real  # type: ignore[method-assign]
        assert list(page.failed) == ["s1"] and page.cursor is not None
        m = Migration.create(cl, "orders", JumpRouter(four, version=2))
        assert m.run() == "retained"
        # s1's unread rows may have moved: the cursor cannot be continued exactly
        with pytest.raises(ValueError, match="ownership of rows changed"):
            cl.scatter_gather("SELECT id, grp FROM orders", group="orders", order_by=["id"], unique="id",
                              limit=5, cursor=page.cursor)
    finally:
        cl.close()


@pytest.fixture
def pg_schema() -> Iterator[tuple[str, str]]:
    import psycopg

    dsn = need_postgres()
    sch = f"m{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f"CREATE SCHEMA {sch}")
        c.execute(f"CREATE TABLE {sch}.orders (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL)")
    try:
        yield dsn, sch
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f"DROP SCHEMA IF EXISTS {sch} CASCADE")


@pytest.mark.oracle
def test_a_cluster_mixing_sqlite_and_postgresql_pages_on_every_page(tmp_path: Path,
                                                                     pg_schema: tuple[str, str]) -> None:
    dsn, sch = pg_schema
    for s in ("s0", "s2"):
        c = sqlite3.connect(tmp_path / f"{s}.db")
        c.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, grp INTEGER NOT NULL)")
        c.commit()
        c.close()
    names = ["s0", "s1", "s2"]
    doc = {"metadata": "sqlite:meta.db",
           "shards": {"s0": {"primary": "sqlite:s0.db"},
                      "s1": {"primary": f"postgresql:{dsn} options='-csearch_path={sch}'"},
                      "s2": {"primary": "sqlite:s2.db"}},
           "groups": {"orders": {"router": JumpRouter(names).to_dict(),
                                 "tables": [{"name": "orders", "key": "id"}]}}}
    (tmp_path / "cluster.json").write_text(json.dumps(doc))
    cl = Cluster.load(tmp_path / "cluster.json")
    try:
        cl.init()
        rows = [(i, i % 4) for i in range(1, 91)]
        _write(cl, rows)
        assert {cl.router("orders").route(r[0]) for r in rows} == set(names)
        got: list[tuple[Any, ...]] = []
        cursor = None
        pages = 0
        while True:
            page = cl.scatter_gather("SELECT id, grp FROM orders", group="orders", order_by=["grp DESC", "id"],
                                     unique="id", limit=7, cursor=cursor)
            got += [tuple(r) for r in page.rows]
            cursor = page.cursor
            pages += 1
            if cursor is None:
                break
        assert pages > 2
        assert got == sorted(rows, key=lambda r: (-r[1], r[0]))
        # a literal % in a query without params means the same on every page and backend
        pct: list[tuple[Any, ...]] = []
        cursor = None
        while True:
            page = cl.scatter_gather("SELECT id, grp, 'a%' AS pct FROM orders WHERE 'x%y' LIKE 'x%'",
                                     group="orders", order_by=["id"], unique="id", limit=40, cursor=cursor)
            pct += [tuple(r) for r in page.rows]
            cursor = page.cursor
            if cursor is None:
                break
        assert pct == [(*r, "a%") for r in rows]
        # the query's own params need one style: refused on a mixed group
        with pytest.raises(ValueError, match="mix SQLite"):
            cl.scatter_gather("SELECT id, grp FROM orders WHERE grp = ?", group="orders", order_by=["id"],
                              unique="id", params=(1,))
    finally:
        cl.close()
