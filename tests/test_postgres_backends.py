"""Scatter-gather, lookup indexes and the Cluster integration on a real PostgreSQL server
(tests/_postgres.py finds or starts one; without one these skip, and in CI fail)."""

from __future__ import annotations

import functools
import json
import random
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter, RingRouter
from shardhash.lookups import DuplicateValue, FactoryStore, LookupIndex
from shardhash.scatter import ScatterError, scatter_aggregate, scatter_gather
from tests._postgres import need_postgres
from tests._support import present

pytestmark = pytest.mark.oracle

NAMES = ["s0", "s1", "s2"]


@pytest.fixture
def pg() -> Iterator[tuple[str, dict[str, str]]]:
    """(dsn, {shard: schema}): one fresh schema per shard, dropped afterwards."""
    import psycopg

    dsn = need_postgres()
    tag = uuid.uuid4().hex[:10]
    schemas = {s: f"b{tag}_{s}" for s in NAMES}
    with psycopg.connect(dsn, autocommit=True) as c:
        for sch in schemas.values():
            c.execute(f"CREATE SCHEMA {sch}")
    try:
        yield dsn, schemas
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            for sch in schemas.values():
                c.execute(f"DROP SCHEMA IF EXISTS {sch} CASCADE")


def _factories(dsn: str, schemas: dict[str, str]) -> dict[str, Any]:
    import psycopg

    return {s: functools.partial(psycopg.connect, dsn, options=f"-csearch_path={sch}") for s, sch in schemas.items()}


def _exec(f: Any, sql: str, rows: list[tuple[Any, ...]] | None = None) -> None:
    c = f()
    with c.cursor() as cur:
        if rows is None:
            cur.execute(sql)
        elif rows:
            cur.executemany(sql, rows)
    c.commit()
    c.close()


def test_scatter_gather_on_postgres(pg: tuple[str, dict[str, str]]) -> None:
    dsn, schemas = pg
    shards = _factories(dsn, schemas)
    router = JumpRouter(NAMES)
    rng = random.Random(2)
    rows = [(i, rng.randrange(4), rng.choice(["a", "B", "c", "é"]), rng.randrange(-100, 100)) for i in range(400)]
    for s, f in shards.items():
        _exec(f, "CREATE TABLE t (id BIGINT PRIMARY KEY, grp INT NOT NULL, name TEXT NOT NULL, v BIGINT)")
        _exec(f, "INSERT INTO t VALUES (%s, %s, %s, %s)", [r for r in rows if router.route(r[0]) == s])
    for order, key in ((["grp DESC", "name", "id"], lambda r: (-r[1], r[2].encode(), r[0])),
                       (["name DESC", "id DESC"], lambda r: (tuple(-b for b in r[2].encode()), -r[0]))):
        expect = sorted(rows, key=key)
        got: list[tuple[Any, ...]] = []
        cursor = None
        while True:
            page = scatter_gather("SELECT id, grp, name, v FROM t", shards, order_by=order, unique="id", limit=37,
                                  cursor=cursor, placeholder="%s")
            got += page.rows
            cursor = page.cursor
            if cursor is None:
                break
        assert got == expect
    agg = scatter_aggregate("SELECT grp, v FROM t", shards, {"n": "count(*)", "s": "sum(v)", "m": "avg(v)",
                                                            "lo": "min(v)"}, group_by="grp")
    for r in agg.rows:
        vs = [x[3] for x in rows if x[1] == r["grp"]]
        assert (r["n"], r["s"], r["lo"]) == (len(vs), sum(vs), min(vs))
        assert float(r["m"]) == pytest.approx(sum(vs) / len(vs))
    # stray copies on shards that do not own them: the ownership filter counts each row once
    strays = [r for r in rows if r[0] % 9 == 0]
    for s, f in shards.items():
        _exec(f, "INSERT INTO t VALUES (%s, %s, %s, %s)", [r for r in strays if router.route(r[0]) != s])
    owned = scatter_aggregate("SELECT id, grp, v FROM t", shards, {"n": "count(*)", "s": "sum(v)", "m": "avg(v)",
                                                                   "hi": "max(v)"}, group_by="grp", key_column="id",
                              owns=lambda shard, key: router.route(key) == shard)
    for r in owned.rows:
        vs = [x[3] for x in rows if x[1] == r["grp"]]
        assert (r["n"], r["s"], r["hi"]) == (len(vs), sum(vs), max(vs))
        assert float(r["m"]) == pytest.approx(sum(vs) / len(vs))
    every = scatter_aggregate("SELECT id FROM t", shards, {"n": "count(*)"})
    assert every.rows[0]["n"] == len(rows) + (len(NAMES) - 1) * len(strays)

    def down() -> Any:
        raise ConnectionRefusedError("down")

    with pytest.raises(ScatterError, match="s1"):
        scatter_gather("SELECT id FROM t", {**shards, "s1": down}, order_by=["id"], unique="id", placeholder="%s")
    # a timeout cancels the running statement on the server
    page = scatter_gather("SELECT id FROM t, pg_sleep(5) AS z", shards, order_by=["id"], unique="id", limit=3,
                          timeout=0.5, on_partial="partial", placeholder="%s")
    assert set(page.failed) == set(NAMES)


def test_lookup_index_on_postgres(pg: tuple[str, dict[str, str]]) -> None:
    dsn, schemas = pg
    shards = _factories(dsn, schemas)
    for f in shards.values():
        _exec(f, "CREATE TABLE users (id BIGINT PRIMARY KEY, email TEXT NOT NULL, name TEXT)")
    idx = LookupIndex("email", lookup=FactoryStore(shards, RingRouter(NAMES, vnodes=16), placeholder="%s"),
                      owner=FactoryStore(shards, JumpRouter(NAMES), placeholder="%s"), owner_table="users")
    idx.create_table()
    won: list[int] = []
    barrier = threading.Barrier(8)

    def writer(w: int) -> None:
        barrier.wait()
        for e in range(4):
            try:
                idx.register(100 * e + w, f"race{e}@example.com", {"name": f"w{w}"})
                won.append(e)
            except DuplicateValue:
                pass

    ts = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert sorted(won) == [0, 1, 2, 3]
    for e in range(4):
        oid = idx.lookup(f"race{e}@example.com")
        assert oid is not None and oid // 100 == e
        assert present(idx.get(f"race{e}@example.com"))["id"] == oid
    idx.change(idx.lookup("race0@example.com"), "race0@example.com", "zero@example.com")
    assert idx.lookup("race0@example.com") is None and idx.lookup("zero@example.com") is not None


def test_cluster_extras_on_postgres(pg: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    from shardhash.migrate import Cluster

    dsn, schemas = pg
    shards = _factories(dsn, schemas)
    for f in shards.values():
        _exec(f, "CREATE TABLE users (id BIGINT PRIMARY KEY, email TEXT NOT NULL, name TEXT)")
    doc = {
        "metadata": "sqlite:meta.db",
        "shards": {s: {"primary": f"postgresql:{dsn} options='-csearch_path={sch}'"} for s, sch in schemas.items()},
        "groups": {
            "users": {"router": JumpRouter(NAMES).to_dict(), "tables": [{"name": "users", "key": "id"}]},
            "email_lookup": {"router": RingRouter(NAMES, vnodes=16).to_dict(),
                             "tables": [{"name": "email_lookup", "key": "value"}]},
        },
    }
    (tmp_path / "cluster.json").write_text(json.dumps(doc))
    cl = Cluster.load(tmp_path / "cluster.json")
    try:
        cl.add_lookup("email", group="email_lookup", owner_group="users", owner_table="users")
        cl.init()
        idx = cl.lookup_index("email")
        for i in range(12):
            idx.register(i, f"u{i}@example.com", {"name": f"n{i}"})
        with pytest.raises(DuplicateValue):
            idx.register(50, "u1@example.com")
        assert cl.lookup("email", "u5@example.com") == 5
        assert present(cl.lookup_row("email", "u5@example.com"))["name"] == "n5"
        page = cl.scatter_gather("SELECT id, email FROM users", group="users", order_by=["id"], unique="id", limit=5)
        assert [r[0] for r in page.rows] == [0, 1, 2, 3, 4]
        page = cl.scatter_gather("SELECT id, email FROM users", group="users", order_by=["id"], unique="id",
                                 limit=100, cursor=page.cursor)
        assert [r[0] for r in page.rows] == list(range(5, 12))
    finally:
        cl.close()
