"""A cluster whose shards are SQLite, PostgreSQL and MariaDB at once (its
metadata store on MariaDB): writes through the client, migrations that copy
rows between the three backends under live writes (adding a MariaDB shard,
then removing the SQLite one), and scatter-gather / scatter-aggregate pages
that return every row exactly once, from its owner."""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter, plan
from shardhash.migrate import Cluster, Migration
from tests._mariadb import drop_databases, need_mysql, with_database
from tests._postgres import need_postgres

pytestmark = pytest.mark.oracle


def _pages(cl: Cluster, **kw: Any) -> list[tuple[Any, ...]]:
    got: list[tuple[Any, ...]] = []
    cursor = None
    while True:
        page = cl.scatter_gather("SELECT id, grp, note FROM orders", group="orders", cursor=cursor, **kw)
        got += [tuple(r) for r in page.rows]
        cursor = page.cursor
        if cursor is None:
            return got


def test_a_cluster_of_sqlite_postgresql_and_mariadb_shards_migrates_and_scatters(tmp_path: Path) -> None:
    import psycopg
    from psycopg import sql

    dsn, url = need_postgres(), need_mysql()
    tag = f"mx{uuid.uuid4().hex[:10]}_"
    sch = tag + "s1"
    with psycopg.connect(dsn, autocommit=True) as pg:
        pg.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(sch)))
        pg.execute(sql.SQL("CREATE TABLE {}.orders (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL, note TEXT)")
                   .format(sql.Identifier(sch)))
    c = sqlite3.connect(tmp_path / "s0.db")
    c.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, grp INTEGER NOT NULL, note TEXT)")
    c.commit()
    c.close()
    from shardhash.migrate.mysql import open_raw

    my = open_raw(with_database(url, tag + "s2"))  # (created by the backend: a new database)
    my.cursor().execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL, note TEXT)")
    my.close()
    doc = {"metadata": with_database(url, tag + "meta"),
           "shards": {"s0": {"primary": "sqlite:s0.db"},
                      "s1": {"primary": f"postgresql:{dsn} options='-csearch_path={sch}'"},
                      "s2": {"primary": with_database(url, tag + "s2")},
                      "s3": {"primary": with_database(url, tag + "s3")}},  # (no table yet: created by the move)
           "groups": {"orders": {"router": JumpRouter(["s0", "s1", "s2"]).to_dict(),
                                 "tables": [{"name": "orders", "key": "id"}]}}}
    (tmp_path / "cluster.json").write_text(json.dumps(doc))
    cl = Cluster.load(tmp_path / "cluster.json")
    try:
        cl.init()
        rows = {i: (i, i % 5, f"n{i} 100% é") for i in range(1, 241)}
        for r in rows.values():
            with cl.transaction(r[0], group="orders") as tx:
                tx.execute("INSERT INTO orders VALUES (?, ?, ?)", r)
        assert {cl.router("orders").route(i) for i in rows} == {"s0", "s1", "s2"}
        assert _pages(cl, order_by=["id"], unique="id", limit=17) == sorted(rows.values())

        stop = threading.Event()
        errors: list[BaseException] = []
        lock = threading.Lock()

        def writer(w: int) -> None:
            n = 0
            try:
                while not stop.is_set():
                    k = 1 + (n * 7 + w) % 240
                    with cl.transaction(k, group="orders") as tx:
                        tx.execute("UPDATE orders SET note = ? WHERE id = ?", (f"w{w}-{n}", k))
                    with lock:
                        rows[k] = (k, k % 5, f"w{w}-{n}")
                    n += 1
            except BaseException as e:  # noqa: BLE001 - asserted below
                errors.append(e)

        for target in ("add s3", "remove s0"):
            cur = cl.refresh("orders")
            if target == "add s3":
                new, _ = plan.add_shards(cur, "s3")
            else:
                new, _ = plan.remove_shards(cur, "s0")
            threads = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
            for t in threads:
                t.start()
            try:
                m = Migration.create(cl, "orders", new)
                assert m.run(chunk=40) == "retained", target
            finally:
                stop.set()
                for t in threads:
                    t.join(60)
                stop.clear()
            assert not errors, errors
            m.cleanup()
            now = cl.refresh("orders")
            # every row once, on its owner, with its last acknowledged value
            owners: dict[int, str] = {}
            for s in now.shards:
                b = cl.backend(s)
                with b.writing() as bc:
                    for got in bc.execute("SELECT id, grp, note FROM orders").fetchall():
                        assert int(got[0]) not in owners, (target, got, s, owners.get(int(got[0])))
                        owners[int(got[0])] = s
                        assert tuple(got) == rows[int(got[0])], (target, s)
                        assert now.route(int(got[0])) == s
            assert set(owners) == set(rows)
            assert _pages(cl, order_by=["grp DESC", "id"], unique="id", limit=23) == \
                sorted(rows.values(), key=lambda x: (-x[1], x[0]))
        assert set(cl.router("orders").shards) == {"s1", "s2", "s3"}
        agg = cl.scatter_aggregate("SELECT id, grp FROM orders", {"n": "count(*)", "s": "sum(id)"},
                                   group="orders", group_by="grp")
        assert sorted((x["grp"], x["n"], x["s"]) for x in agg.rows) == \
            sorted((g, sum(1 for i in rows if i % 5 == g), sum(i for i in rows if i % 5 == g)) for g in range(5))
        # a literal % in a query without params reads the same on every backend
        page = cl.scatter_gather("SELECT id, 'a%' AS pct FROM orders WHERE 'x%y' LIKE 'x%'", group="orders",
                                 order_by=["id"], unique="id", limit=500)
        assert [tuple(x) for x in page.rows] == [(i, "a%") for i in sorted(rows)]
    finally:
        cl.close()
        drop_databases(url, tag)
        with psycopg.connect(dsn, autocommit=True) as pg:
            pg.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(sch)))
