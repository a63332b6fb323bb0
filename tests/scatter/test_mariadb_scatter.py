"""scatter_gather and scatter_aggregate over plain mysqlclient connections to a real MariaDB
server (tests/_mariadb.py finds or starts one; without one these skip, and in CI fail): pages in
every order equal the sorted rows, named parameters, aggregates with and without the ownership
filter, and a shard that is down."""

from __future__ import annotations

import functools
import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from shardhash import JumpRouter
from shardhash.scatter import ScatterError, scatter_aggregate, scatter_gather
from tests._mariadb import drop_databases, need_mysql, with_database

pytestmark = pytest.mark.oracle

NAMES = ["s0", "s1", "s2"]


@pytest.fixture
def shards() -> Iterator[dict[str, Any]]:
    """{shard: factory of a mysqlclient connection to a fresh database}, dropped afterwards."""
    from shardhash.migrate.mysql import open_raw

    url = need_mysql()
    tag = f"sg{uuid.uuid4().hex[:10]}_"
    try:
        # (open_raw: ANSI_QUOTES, as scatter quotes names with double quotes)
        yield {s: functools.partial(open_raw, with_database(url, tag + s)) for s in NAMES}
    finally:
        drop_databases(url, tag)


def _exec(f: Any, sql: str, rows: list[tuple[Any, ...]] | None = None) -> None:
    c = f()
    cur = c.cursor()
    if rows is None:
        cur.execute(sql)
    elif rows:
        cur.executemany(sql, rows)
    c.commit()
    c.close()


def test_scatter_gather_and_aggregate_on_mariadb(shards: dict[str, Any]) -> None:
    router = JumpRouter(NAMES)
    rng = random.Random(3)
    rows = [(i, rng.randrange(4), rng.choice(["a", "B", "c", "é", "a%"]), rng.randrange(-100, 100))
            for i in range(400)]
    for s, f in shards.items():
        _exec(f, "CREATE TABLE t (id BIGINT PRIMARY KEY, grp INT NOT NULL, "
                 "name VARCHAR(16) COLLATE utf8mb4_nopad_bin NOT NULL, v BIGINT)")
        _exec(f, "INSERT INTO t VALUES (%s, %s, %s, %s)", [r for r in rows if router.route(r[0]) == s])
    for order, expect in ((["grp DESC", "name", "id"], sorted(rows, key=lambda r: (-r[1], r[2].encode(), r[0]))),
                          (["name DESC", "id DESC"], sorted(rows, key=lambda r: (r[2].encode(), r[0]), reverse=True))):
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
    # named parameters (the driver's %(name)s) beside scatter's own
    page = scatter_gather("SELECT id, name FROM t WHERE grp = %(g)s AND name LIKE 'a%%'", shards,
                          params={"g": 2}, order_by=["id"], unique="id", limit=500, placeholder="%s")
    assert page.rows == [(r[0], r[2]) for r in rows if r[1] == 2 and r[2].startswith("a")]
    agg = scatter_aggregate("SELECT grp, v FROM t", shards, {"n": "count(*)", "s": "sum(v)", "m": "avg(v)",
                                                            "lo": "min(v)"}, group_by="grp")
    assert len(agg.rows) == 4
    for r in agg.rows:
        vs = [x[3] for x in rows if x[1] == r["grp"]]
        assert (r["n"], r["s"], r["lo"]) == (len(vs), sum(vs), min(vs))
        assert float(r["m"]) == pytest.approx(sum(vs) / len(vs))
    # stray copies on shards that do not own them: the ownership filter counts each row once
    strays = [r for r in rows if r[0] % 9 == 0]
    for s, f in shards.items():
        _exec(f, "INSERT INTO t VALUES (%s, %s, %s, %s)", [r for r in strays if router.route(r[0]) != s])
    owned = scatter_aggregate("SELECT id, grp, v FROM t", shards, {"n": "count(*)", "hi": "max(v)"},
                              group_by="grp", key_column="id", owns=lambda shard, key: router.route(key) == shard)
    for r in owned.rows:
        vs = [x[3] for x in rows if x[1] == r["grp"]]
        assert (r["n"], r["hi"]) == (len(vs), max(vs))
    every = scatter_aggregate("SELECT id FROM t", shards, {"n": "count(*)"})
    assert every.rows[0]["n"] == len(rows) + (len(NAMES) - 1) * len(strays)

    def down() -> Any:
        raise ConnectionRefusedError("down")

    with pytest.raises(ScatterError, match="s1"):
        scatter_gather("SELECT id FROM t", {**shards, "s1": down}, order_by=["id"], unique="id", placeholder="%s")
