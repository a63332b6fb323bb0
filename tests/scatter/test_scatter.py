"""scatter_gather / scatter_aggregate against one SQLite database holding every row (the oracle)."""

from __future__ import annotations

import asyncio
import functools
import random
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardhash import JumpRouter
from shardhash.scatter import (
    ScatterError,
    scatter_aggregate,
    scatter_aggregate_async,
    scatter_gather,
    scatter_gather_async,
)
from tests._support import examples, ill_typed

NSHARDS = 4
SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, grp INTEGER NOT NULL, name TEXT NOT NULL, amount REAL)"
QUERY = "SELECT id, grp, name, amount FROM t"


def _rows(n: int, seed: int = 7) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    names = ["ann", "bob", "Cy", "dé", "eve", ""]
    out = []
    for i in range(n):
        amount = None if i % 11 == 0 else round(rng.uniform(-50, 100), 2)
        # few distinct grp/name values: plenty of ties on the leading columns
        out.append((i * 3 + 1, rng.randrange(5), rng.choice(names), amount))
    return out


class Fleet:
    def __init__(self, root: Path, rows: list[tuple[Any, ...]]) -> None:
        self.names = [f"s{i}" for i in range(NSHARDS)]
        self.router = JumpRouter(self.names)
        self.paths = {n: root / f"{n}.db" for n in self.names}
        self.oracle_path = root / "all.db"
        for p in [*self.paths.values(), self.oracle_path]:
            with sqlite3.connect(p) as c:
                c.execute(SCHEMA)
            c.close()
        self.insert(rows)

    def insert(self, rows: list[tuple[Any, ...]]) -> None:
        by: dict[str, list[tuple[Any, ...]]] = {}
        for r in rows:
            by.setdefault(self.router.route(r[0]), []).append(r)
        for n, rs in [*by.items(), ("", rows)]:
            with self.conn(n) as c:
                c.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rs)
            c.close()

    def delete(self, ids: list[int]) -> None:
        for n in [*self.names, ""]:
            with self.conn(n) as c:
                c.executemany("DELETE FROM t WHERE id = ?", [(i,) for i in ids])
            c.close()

    def conn(self, name: str) -> sqlite3.Connection:
        return sqlite3.connect(self.paths[name] if name else self.oracle_path)

    @property
    def shards(self) -> dict[str, Any]:
        return {n: functools.partial(sqlite3.connect, str(p)) for n, p in self.paths.items()}

    def oracle(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        c = self.conn("")
        try:
            return [tuple(r) for r in c.execute(sql, params)]
        finally:
            c.close()


@pytest.fixture
def fleet(tmp_path: Path) -> Fleet:
    return Fleet(tmp_path, _rows(300))


ORDERINGS = [
    (["id"], "id"),
    (["grp", "id"], "id"),
    (["grp DESC", "id"], "id"),
    (["name", "grp DESC", "id DESC"], "id"),
    ([("name", "desc"), ("id", "asc")], "id"),
    (["grp"], "id"),  # the tie-breaker is appended
]


def _sql_order(order_by: list[Any], unique: str) -> str:
    parts = []
    names = []
    for o in order_by:
        c, d = (o if isinstance(o, tuple) else (o.split() + ["asc"])[:2])
        parts.append(f"{c} {d.upper()}")
        names.append(c)
    if unique not in names:
        parts.append(f"{unique} ASC")
    return ", ".join(parts)


def _pages(fleet: Fleet, order_by: Any, limit: int, **kw: Any) -> list[list[tuple[Any, ...]]]:
    pages = []
    cursor = None
    while True:
        page = scatter_gather(QUERY, fleet.shards, order_by=order_by, unique="id", limit=limit,
                              cursor=cursor, **kw)
        pages.append(page.rows)
        assert len(page.rows) <= limit
        cursor = page.cursor
        if cursor is None:
            return pages
        assert len(pages) < 1000


@pytest.mark.parametrize("order_by,unique", ORDERINGS)
@pytest.mark.parametrize("limit", [1, 7, 64, 1000])
def test_every_page_of_every_ordering(fleet: Fleet, order_by: Any, unique: str, limit: int) -> None:
    expect = fleet.oracle(f"{QUERY} ORDER BY {_sql_order(order_by, unique)}")
    if limit == 1 and order_by != ["grp DESC", "id"]:
        expect = expect[:40]  # one-row pages: a prefix is enough (and quick)
        got: list[tuple[Any, ...]] = []
        cursor = None
        while len(got) < 40:
            page = scatter_gather(QUERY, fleet.shards, order_by=order_by, unique=unique, limit=1, cursor=cursor)
            got += page.rows
            cursor = page.cursor
        assert got == expect
        return
    pages = _pages(fleet, order_by, limit)
    flat = [r for p in pages for r in p]
    assert flat == expect
    # every page but the last is full; and each page is exactly the oracle's window
    assert all(len(p) == limit for p in pages[:-1])
    assert len(pages) == max(1, -(-len(expect) // limit)) or (len(expect) % limit == 0 and
                                                              len(pages) == len(expect) // limit + 1)


def test_no_limit_returns_everything_sorted(fleet: Fleet) -> None:
    page = scatter_gather(QUERY, fleet.shards, order_by=["grp DESC", "name", "id"], unique="id")
    assert page.rows == fleet.oracle(f"{QUERY} ORDER BY grp DESC, name, id") and page.cursor is None
    # NULLs in an ordering column cannot be keyset-ordered: refused, naming the shard
    with pytest.raises(ValueError, match="ordering column 'amount' is NULL"):
        scatter_gather(QUERY, fleet.shards, order_by=["amount", "id"], unique="id", limit=5)


def test_params_and_where(fleet: Fleet) -> None:
    q = "SELECT id, grp FROM t WHERE grp = ?"
    pages = []
    cursor = None
    while True:
        page = scatter_gather(q, fleet.shards, params=(3,), order_by=["id DESC"], unique="id", limit=9,
                              cursor=cursor)
        pages += page.rows
        cursor = page.cursor
        if cursor is None:
            break
    assert pages == fleet.oracle("SELECT id, grp FROM t WHERE grp = 3 ORDER BY id DESC")


def test_deletes_and_inserts_between_pages(fleet: Fleet) -> None:
    order = "grp, id"
    got = []
    page = scatter_gather(QUERY, fleet.shards, order_by=["grp", "id"], unique="id", limit=25)
    got += page.rows
    page = scatter_gather(QUERY, fleet.shards, order_by=["grp", "id"], unique="id", limit=25, cursor=page.cursor)
    got += page.rows
    last = (got[-1][1], got[-1][0])
    # delete rows already read, rows just after the position, and rows far ahead
    after = fleet.oracle(f"{QUERY} WHERE (grp, id) > (?, ?) ORDER BY {order}", last)
    doomed = [got[3][0], got[-1][0], after[0][0], after[1][0], after[30][0], after[-1][0]]
    fleet.delete(doomed)
    # and insert rows before and after the position
    fleet.insert([(100001, -1, "new", 1.0), (100002, 4, "new", 2.0), (100003, last[0], "new", 3.0)])
    rest = []
    cursor = page.cursor
    while cursor is not None:
        page = scatter_gather(QUERY, fleet.shards, order_by=["grp", "id"], unique="id", limit=25, cursor=cursor)
        rest += page.rows
        cursor = page.cursor
    expect = fleet.oracle(f"{QUERY} WHERE (grp, id) > (?, ?) ORDER BY {order}", last)
    assert rest == expect
    assert not {r[0] for r in rest} & set(doomed)
    assert any(r[0] == 100002 for r in rest) and not any(r[0] == 100001 for r in rest)


def test_tie_breaker_required_and_checked(fleet: Fleet, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tie-breaker is required"):
        scatter_gather(QUERY, fleet.shards, order_by=["grp"], unique=ill_typed(None), limit=5)
    with pytest.raises(ValueError, match="must come last"):
        scatter_gather(QUERY, fleet.shards, order_by=["id", "grp"], unique="id", limit=5)
    with pytest.raises(ValueError, match="not a plain column"):
        scatter_gather(QUERY, fleet.shards, order_by=["grp-1"], unique="id", limit=5)
    # a "unique" column that is not unique across shards is caught in the merge
    with pytest.raises(ValueError, match="not unique"):
        scatter_gather(QUERY, fleet.shards, order_by=["grp"], unique="grp", limit=50)
    with pytest.raises(ValueError, match="must be columns"):
        scatter_gather("SELECT grp FROM t", fleet.shards, order_by=["grp"], unique="id", limit=5)


def test_one_shard_down(fleet: Fleet) -> None:
    def down() -> Any:
        raise ConnectionRefusedError("connection refused")

    shards = fleet.shards
    shards["s2"] = down
    with pytest.raises(ScatterError) as ei:
        scatter_gather(QUERY, shards, order_by=["id"], unique="id", limit=10)
    assert set(ei.value.failed) == {"s2"}
    assert "s2" in str(ei.value) and "refused" in str(ei.value)
    # partial: the other shards' rows, in order, and the failed shard named
    s2_ids = {r[0] for r in fleet.oracle(QUERY) if fleet.router.route(r[0]) == "s2"}
    expect = [r for r in fleet.oracle(f"{QUERY} ORDER BY id") if r[0] not in s2_ids]
    got = []
    cursor = None
    while True:
        page = scatter_gather(QUERY, shards, order_by=["id"], unique="id", limit=40, cursor=cursor,
                              on_partial="partial")
        assert page.partial and set(page.failed) == {"s2"}
        got += page.rows
        if not page.rows:
            break
        cursor = page.cursor
    assert got == expect
    # the cursor kept s2's position: once s2 is back, its rows are read from the start
    page = scatter_gather(QUERY, fleet.shards, order_by=["id"], unique="id", limit=1000, cursor=cursor)
    assert [r[0] for r in page.rows] == sorted(s2_ids)


def test_timeout_names_the_slow_shard(fleet: Fleet) -> None:
    # The slow shard blocks until the test releases it: the call must come
    # back while it is still blocked (the timeout fired), whatever the clock
    # and the machine's load say.
    import threading

    shards = fleet.shards
    path = str(fleet.paths["s1"])
    started = threading.Event()
    release = threading.Event()

    def slow() -> sqlite3.Connection:
        started.set()
        release.wait(20)
        return sqlite3.connect(path)

    shards["s1"] = slow
    try:
        page = scatter_gather(QUERY, shards, order_by=["id"], unique="id", limit=5, timeout=0.3,
                              on_partial="partial")
        assert started.is_set() and not release.is_set()
        assert list(page.failed) == ["s1"] and "timed out" in page.failed["s1"]
        assert len(page.rows) == 5  # the other shards' rows
        with pytest.raises(ScatterError, match="s1"):
            scatter_gather(QUERY, shards, order_by=["id"], unique="id", limit=5, timeout=0.3)
        assert not release.is_set()
    finally:
        release.set()


def test_timeout_interrupts_a_running_sqlite_query(fleet: Fleet) -> None:
    # a query that would run for a long time: interrupt() stops it
    q = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000000) "
         "SELECT x AS id FROM c WHERE x < 0")
    t0 = time.perf_counter()
    page = scatter_gather(q, fleet.shards, order_by=["id"], unique="id", limit=5, timeout=0.3,
                          on_partial="partial")
    assert set(page.failed) == set(fleet.names)
    assert time.perf_counter() - t0 < 5
    # the interrupted queries end: no worker thread keeps running them
    import threading

    deadline = time.perf_counter() + 10
    while any(t.name.startswith("shardhash-scatter") for t in threading.enumerate()):
        assert time.perf_counter() < deadline, "a timed-out shard query was not interrupted"
        time.sleep(0.05)


def test_concurrency_and_async_agree(fleet: Fleet) -> None:
    kw: dict[str, Any] = dict(order_by=["name DESC", "id"], unique="id", limit=33)
    a = scatter_gather(QUERY, fleet.shards, concurrency=1, **kw)
    b = asyncio.run(scatter_gather_async(QUERY, fleet.shards, concurrency=2, **kw))
    assert a.rows == b.rows and a.cursor == b.cursor
    a2 = scatter_gather(QUERY, fleet.shards, cursor=a.cursor, **kw)
    b2 = asyncio.run(scatter_gather_async(QUERY, fleet.shards, cursor=b.cursor, **kw))
    assert a2.rows == b2.rows
    assert set(a.latencies) == set(fleet.names) and a.latency == max(a.latencies.values())


def test_async_partial(fleet: Fleet) -> None:
    shards = fleet.shards

    def down() -> Any:
        raise OSError("no route to shard")

    shards["s0"] = down
    page = asyncio.run(scatter_gather_async(QUERY, shards, order_by=["id"], unique="id", limit=5,
                                            on_partial="partial"))
    assert list(page.failed) == ["s0"]
    with pytest.raises(ScatterError):
        asyncio.run(scatter_gather_async(QUERY, shards, order_by=["id"], unique="id", limit=5))


def test_cursor_checks(fleet: Fleet) -> None:
    page = scatter_gather(QUERY, fleet.shards, order_by=["id"], unique="id", limit=5)
    with pytest.raises(ValueError, match="not a cursor of this query: it belongs to another query"):
        scatter_gather(QUERY, fleet.shards, order_by=["grp", "id"], unique="id", limit=5, cursor=page.cursor)
    with pytest.raises(ValueError, match="not a cursor of this query"):
        scatter_gather(QUERY, fleet.shards, order_by=["id"], unique="id", limit=5, cursor="garbage!")
    with pytest.raises(ValueError, match="on_partial"):
        scatter_gather(QUERY, fleet.shards, order_by=["id"], unique="id", on_partial="maybe")
    with pytest.raises(ValueError, match="limit"):
        scatter_gather(QUERY, fleet.shards, order_by=["id"], unique="id", limit=0)
    with pytest.raises(TypeError, match="mapping"):
        scatter_gather(QUERY, ill_typed([sqlite3.connect]), order_by=["id"], unique="id")


AGGS = {"n": "count(*)", "n_amount": "count(amount)", "total": "sum(amount)", "lo": "min(amount)",
        "hi": "max(name)", "mean": "avg(amount)"}
ORACLE_AGGS = "COUNT(*), COUNT(amount), SUM(amount), MIN(amount), MAX(name), AVG(amount)"


def test_aggregates_match_the_oracle(fleet: Fleet) -> None:
    res = scatter_aggregate(QUERY, fleet.shards, AGGS)
    (exp,) = fleet.oracle(f"SELECT {ORACLE_AGGS} FROM t")
    got = res.rows[0]
    assert [got[k] for k in ["n", "n_amount", "lo", "hi"]] == [exp[0], exp[1], exp[3], exp[4]]
    assert got["total"] == pytest.approx(exp[2]) and got["mean"] == pytest.approx(exp[5])
    grouped = scatter_aggregate(QUERY, fleet.shards, AGGS, group_by=["grp"])
    exp_g = fleet.oracle(f"SELECT grp, {ORACLE_AGGS} FROM t GROUP BY grp ORDER BY grp")
    assert [r["grp"] for r in grouped.rows] == [e[0] for e in exp_g]
    for r, e in zip(grouped.rows, exp_g):
        assert (r["n"], r["n_amount"], r["lo"], r["hi"]) == (e[1], e[2], e[4], e[5])
        assert r["total"] == pytest.approx(e[3]) and r["mean"] == pytest.approx(e[6])
    a = asyncio.run(scatter_aggregate_async(QUERY, fleet.shards, AGGS, group_by="grp"))
    assert a.rows == grouped.rows


def test_aggregates_of_nothing(fleet: Fleet) -> None:
    res = scatter_aggregate("SELECT * FROM t WHERE id < 0", fleet.shards, AGGS)
    assert res.rows == [{"n": 0, "n_amount": 0, "total": None, "lo": None, "hi": None, "mean": None}]


def test_count_distinct_refused(fleet: Fleet) -> None:
    with pytest.raises(ValueError, match="refused"):
        scatter_aggregate(QUERY, fleet.shards, {"d": "count(distinct name)"})
    with pytest.raises(ValueError, match="not one of"):
        scatter_aggregate(QUERY, fleet.shards, {"m": "median(amount)"})


def test_aggregate_partial(fleet: Fleet) -> None:
    shards = fleet.shards

    def down() -> Any:
        raise OSError("down")

    shards["s3"] = down
    res = scatter_aggregate(QUERY, shards, {"n": "count(*)"}, on_partial="partial")
    s3 = sum(1 for r in fleet.oracle(QUERY) if fleet.router.route(r[0]) == "s3")
    assert res.rows == [{"n": 300 - s3}] and list(res.failed) == ["s3"]
    with pytest.raises(ScatterError, match="s3"):
        scatter_aggregate(QUERY, shards, {"n": "count(*)"})


@pytest.mark.parametrize("limit", [1, 3, 10])
def test_row_filter_keeps_the_order_exact(fleet: Fleet, limit: int) -> None:
    # drop most rows of one shard (as if it held copies it does not own): the
    # pages stay in global order and end with exactly the kept rows
    def keep(shard: str, cols: list[str], row: tuple[Any, ...]) -> bool:
        return shard != "s1" or row[0] % 7 == 0

    expect = [r for r in fleet.oracle(f"{QUERY} ORDER BY grp, id")
              if fleet.router.route(r[0]) != "s1" or r[0] % 7 == 0]
    got: list[tuple[Any, ...]] = []
    cursor = None
    for _ in range(2000):
        page = scatter_gather(QUERY, fleet.shards, order_by=["grp", "id"], unique="id", limit=limit,
                              cursor=cursor, row_filter=keep)
        assert len(page.rows) <= limit
        got += page.rows
        cursor = page.cursor
        if cursor is None:
            break
    assert got == expect


def test_blob_and_float_positions_round_trip_through_the_cursor(tmp_path: Path) -> None:
    rng = random.Random(4)
    shards = {}
    rows = [(i, bytes(rng.randrange(256) for _ in range(rng.randrange(4))), rng.choice([0.5, -1.25, 3.0]))
            for i in range(200)]
    for s in range(3):
        p = tmp_path / f"b{s}.db"
        c = sqlite3.connect(p)
        c.execute("CREATE TABLE b (id INTEGER PRIMARY KEY, k BLOB NOT NULL, f REAL NOT NULL)")
        c.executemany("INSERT INTO b VALUES (?, ?, ?)", [r for r in rows if r[0] % 3 == s])
        c.commit()
        c.close()
        shards[f"b{s}"] = functools.partial(sqlite3.connect, str(p))
    got: list[tuple[Any, ...]] = []
    cursor = None
    while True:
        page = scatter_gather("SELECT id, k, f FROM b", shards, order_by=["f DESC", "k", "id"], unique="id",
                              limit=13, cursor=cursor)
        got += page.rows
        cursor = page.cursor
        if cursor is None:
            break
    assert got == sorted(rows, key=lambda r: (-r[2], r[1], r[0]))


@settings(max_examples=examples(25), deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["", "a", "b", "ab", "é"]),
                            st.integers(0, 5)), max_size=60),
    ordering=st.permutations([("a", False), ("b", False), ("c", False)]),
    descs=st.lists(st.booleans(), min_size=3, max_size=3),
    ncols=st.integers(0, 3),
    limit=st.integers(1, 9),
    nshards=st.integers(1, 4),
)
def test_pages_match_the_oracle_property(rows: list[tuple[Any, ...]], ordering: list[tuple[str, bool]],
                                         descs: list[bool], ncols: int, limit: int, nshards: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        shards = {}
        for s in range(nshards):
            p = Path(d) / f"p{s}.db"
            c = sqlite3.connect(p)
            c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER NOT NULL, b TEXT NOT NULL, "
                      "c INTEGER NOT NULL)")
            c.executemany("INSERT INTO t VALUES (?, ?, ?, ?)",
                          [(i, *r) for i, r in enumerate(rows) if (i * 7 + r[0]) % nshards == s])
            c.commit()
            c.close()
            shards[f"p{s}"] = functools.partial(sqlite3.connect, str(p))
        order = [(col, d_) for (col, _), d_ in zip(ordering, descs)][:ncols]
        spec = [f"{col} {'DESC' if d_ else 'ASC'}" for col, d_ in order]
        full = [(i, *r) for i, r in enumerate(rows)]
        pos = {"a": 1, "b": 2, "c": 3}

        def key(r: tuple[Any, ...]) -> tuple[Any, ...]:
            parts: list[Any] = []
            for col, d_ in order:
                v = r[pos[col]]
                if isinstance(v, str):
                    v = tuple(ord(ch) for ch in v) + (-1,) if not d_ else tuple(-ord(ch) for ch in v) + (1,)
                elif d_:
                    v = -v
                parts.append(v)
            return (*parts, r[0])

        expect = sorted(full, key=key)
        got: list[tuple[Any, ...]] = []
        cursor = None
        for _ in range(200):
            page = scatter_gather("SELECT id, a, b, c FROM t", shards, order_by=spec, unique="id", limit=limit,
                                  cursor=cursor)
            got += page.rows
            cursor = page.cursor
            if cursor is None:
                break
        assert got == expect


def test_a_duplicate_tie_breaker_at_a_page_boundary_is_caught(tmp_path: Path) -> None:
    # Two rows with the same (grp, id) on one shard, the first the last row of
    # a page: keyset pagination would skip the second, so it is an error.
    paths = [tmp_path / f"d{i}.db" for i in range(2)]
    for i, p in enumerate(paths):
        c = sqlite3.connect(p)
        c.execute("CREATE TABLE t (id INTEGER NOT NULL, grp INTEGER NOT NULL)")
        c.executemany("INSERT INTO t VALUES (?, ?)", [(10 * j + i, 0) for j in range(5)])
        c.commit()
        c.close()
    c = sqlite3.connect(paths[0])
    c.execute("INSERT INTO t VALUES (20, 0)")  # 20 twice on d0
    c.commit()
    c.close()
    shards = {f"d{i}": functools.partial(sqlite3.connect, str(p)) for i, p in enumerate(paths)}
    # page of 5: 0, 1, 10, 11, 20 -- the other 20 is d0's next row
    with pytest.raises(ValueError, match="not unique: shard 'd0'"):
        scatter_gather("SELECT id, grp FROM t", shards, order_by=["grp", "id"], unique="id", limit=5)
    # pages short of the duplicate are returned; the page whose rows reach it
    # raises, wherever in the page (or just past it) the two copies fall
    page = scatter_gather("SELECT id, grp FROM t", shards, order_by=["grp", "id"], unique="id", limit=2)
    assert [r[0] for r in page.rows] == [0, 1]
    page = scatter_gather("SELECT id, grp FROM t", shards, order_by=["grp", "id"], unique="id", limit=1,
                          cursor=page.cursor)
    assert [r[0] for r in page.rows] == [10]
    with pytest.raises(ValueError, match="not unique"):
        scatter_gather("SELECT id, grp FROM t", shards, order_by=["grp", "id"], unique="id", limit=1,
                       cursor=page.cursor)
