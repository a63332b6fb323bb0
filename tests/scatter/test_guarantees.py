"""The promises of scatter-gather at their edges: partial failure and recovery,
duplicate tie-breakers at page boundaries, named parameters, aggregate names,
cursors that were altered, values of several storage classes, placeholder
styles per shard."""

from __future__ import annotations

import base64
import functools
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shardhash import _events
from shardhash.scatter import scatter_aggregate, scatter_gather

Row = tuple[Any, ...]


def _fleet(root: Path, parts: list[list[Row]], schema: str = "id INTEGER PRIMARY KEY, grp INTEGER NOT NULL",
           table: str = "t") -> dict[str, Any]:
    shards = {}
    for i, rows in enumerate(parts):
        p = root / f"g{i}.db"
        c = sqlite3.connect(p)
        c.execute(f"CREATE TABLE {table} ({schema})")
        if rows:
            c.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
        c.commit()
        c.close()
        shards[f"g{i}"] = functools.partial(sqlite3.connect, str(p))
    return shards


def _oracle(root: Path, rows: list[Row], schema: str, sql: str, params: Any = ()) -> list[Row]:
    c = sqlite3.connect(root / "oracle.db")
    try:
        c.execute(f"CREATE TABLE IF NOT EXISTS t ({schema})")
        c.execute("DELETE FROM t")
        if rows:
            c.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(rows[0]))})", rows)
        return [tuple(r) for r in c.execute(sql, params)]
    finally:
        c.close()


def _down() -> Any:
    raise ConnectionRefusedError("down")


# -- item: partial failure, then recovery ---------------------------------------------


@pytest.mark.parametrize("limit", [1, 4, 7])
@pytest.mark.parametrize("down_pages", [3, 6])
def test_a_recovered_shard_resumes_from_its_own_position_and_no_row_repeats(tmp_path: Path, limit: int,
                                                                              down_pages: int) -> None:
    rows = [(i, i % 3) for i in range(60)]
    parts = [[r for r in rows if r[0] % 3 == s] for s in range(3)]
    shards = _fleet(tmp_path, parts)
    got: list[Row] = []
    cursor = None
    pages = 0
    while True:
        avail = {**shards, "g1": _down} if pages < down_pages else shards
        page = scatter_gather("SELECT id, grp FROM t", avail, order_by=["grp", "id"], unique="id", limit=limit,
                              cursor=cursor, on_partial="partial")
        assert bool(page.failed) == (pages < down_pages)
        assert len(page.rows) <= limit
        got += page.rows
        cursor = page.cursor
        pages += 1
        if cursor is None:
            break
        assert pages < 500
    # every row exactly once
    assert sorted(got) == sorted(rows) and len(got) == len(rows)
    # each shard's rows in order; once g1 is back its missed rows come in order too
    key = {r: (r[1], r[0]) for r in rows}
    for s in range(3):
        mine = [key[r] for r in got if r[0] % 3 == s]
        assert mine == sorted(mine)
    # the rows of the healthy shards never went backwards
    healthy = [key[r] for r in got if r[0] % 3 != 1]
    assert healthy == sorted(healthy)


def test_a_partial_page_with_no_limit_keeps_a_cursor_for_the_failed_shard(tmp_path: Path) -> None:
    rows = [(i, 0) for i in range(12)]
    shards = _fleet(tmp_path, [[r for r in rows if r[0] % 2 == s] for s in range(2)])
    page = scatter_gather("SELECT id, grp FROM t", {**shards, "g0": _down}, order_by=["id"], unique="id",
                          on_partial="partial")
    assert [r[0] for r in page.rows] == list(range(1, 12, 2)) and page.cursor is not None
    rest = scatter_gather("SELECT id, grp FROM t", shards, order_by=["id"], unique="id", cursor=page.cursor)
    assert [r[0] for r in rest.rows] == list(range(0, 12, 2)) and rest.cursor is None


# -- item: a duplicate tie-breaker wherever it falls ---------------------------------


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 6, None])
def test_a_duplicate_across_shards_is_refused_at_every_position(tmp_path: Path, limit: int | None) -> None:
    # id 3 on both shards: whether the two copies fall inside a page, at its
    # end or at the start of the next one, paging never silently drops one
    shards = _fleet(tmp_path, [[(1, 0), (2, 0), (3, 0), (5, 0)], [(3, 0), (4, 0), (6, 0)]])
    cursor = None
    with pytest.raises(ValueError, match="not unique"):
        for _ in range(20):
            page = scatter_gather("SELECT id, grp FROM t", shards, order_by=["id"], unique="id", limit=limit,
                                  cursor=cursor)
            cursor = page.cursor
            if cursor is None:
                break


def test_copies_that_the_filter_drops_are_not_duplicates(tmp_path: Path) -> None:
    # during a migration a shard holds copies it does not own: same key on two
    # shards, one filtered out -- at every page size the owned copy comes once
    shards = _fleet(tmp_path, [[(i, 0) for i in range(10)], [(i, 0) for i in range(0, 10, 3)]])

    def keep(shard: str, cols: list[str], row: Row) -> bool:
        return bool((shard == "g1") == (row[0] % 3 == 0))

    for limit in (1, 2, 3, 5):
        got: list[int] = []
        cursor = None
        while True:
            page = scatter_gather("SELECT id, grp FROM t", shards, order_by=["id"], unique="id", limit=limit,
                                  cursor=cursor, row_filter=keep)
            got += [r[0] for r in page.rows]
            cursor = page.cursor
            if cursor is None:
                break
        assert got == list(range(10)), limit


# -- item: params as a mapping ------------------------------------------------------


def test_mapping_params_are_bound_by_name_as_sqlite3_does(tmp_path: Path) -> None:
    rows = [(i, i % 4) for i in range(40)]
    schema = "id INTEGER PRIMARY KEY, grp INTEGER NOT NULL"
    shards = _fleet(tmp_path, [rows[0::2], rows[1::2]])
    q = "SELECT id, grp FROM t WHERE grp = :g AND id >= :lo"
    prm = {"g": 1, "lo": 5}
    got: list[Row] = []
    cursor = None
    while True:
        page = scatter_gather(q, shards, params=prm, order_by=["id DESC"], unique="id", limit=3, cursor=cursor)
        got += page.rows
        cursor = page.cursor
        if cursor is None:
            break
    expect = _oracle(tmp_path, rows, schema, q + " ORDER BY id DESC", prm)
    assert got == expect and expect
    agg = scatter_aggregate(q, shards, {"n": "count(*)"}, params=prm)
    assert agg.rows == [{"n": len(expect)}]
    # the cursor belongs to these values
    with pytest.raises(ValueError, match="not a cursor of this query"):
        page = scatter_gather(q, shards, params=prm, order_by=["id DESC"], unique="id", limit=3)
        scatter_gather(q, shards, params={"g": 2, "lo": 5}, order_by=["id DESC"], unique="id", limit=3,
                       cursor=page.cursor)
    with pytest.raises(ValueError, match="reserved"):
        scatter_gather(q, shards, params={"_sg_0": 1}, order_by=["id"], unique="id")
    with pytest.raises(TypeError, match="params must be"):
        scatter_gather(q, shards, params="gl", order_by=["id"], unique="id")


# -- item: aggregate names ----------------------------------------------------------


def test_an_aggregate_named_like_a_group_column_is_refused(tmp_path: Path) -> None:
    shards = _fleet(tmp_path, [[(1, 1), (2, 1)], [(3, 2)]])
    with pytest.raises(ValueError, match=r"\['grp'\] are also group_by"):
        scatter_aggregate("SELECT id, grp FROM t", shards, {"grp": "count(*)"}, group_by="grp")
    with pytest.raises(ValueError, match="twice"):
        scatter_aggregate("SELECT id, grp FROM t", shards, {"n": "count(*)"}, group_by=["grp", "grp"])
    res = scatter_aggregate("SELECT id, grp FROM t", shards, {"n": "count(*)"}, group_by="grp")
    assert res.rows == [{"grp": 1, "n": 2}, {"grp": 2, "n": 1}]


# -- item: altered cursors ----------------------------------------------------------


def _rewrite(cursor: str, change: Callable[[list[Any]], list[Any]]) -> str:
    """The cursor with every position list replaced by ``change(list)``; the
    outer structure (and its digest, if it has one) kept well-formed."""
    doc = json.loads(base64.urlsafe_b64decode(cursor))

    def walk(x: Any) -> Any:
        if isinstance(x, list):
            return change(x)
        if isinstance(x, dict):
            return {k: walk(v) if k not in ("q", "e", "v", "d") else v for k, v in x.items()}
        return x

    if isinstance(doc, dict) and "b" in doc and "d" in doc:
        import shardhash.scatter as sc

        body = json.dumps(walk(json.loads(doc["b"])), separators=(",", ":"), sort_keys=True)
        doc = {**doc, "b": body, "d": sc._digest(body)}
    else:
        doc = walk(doc)
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode()


TAMPER: dict[str, Callable[[list[Any]], list[Any]]] = {
    "bad hex": lambda p: [{"b": "zz"}] * len(p),
    "other dict": lambda p: [{"x": 1}] * len(p),
    "boolean": lambda p: [True] * len(p),
    "huge int": lambda p: [2**70] * len(p),
    "nested list": lambda p: [[1]] * len(p),
    "too short": lambda p: p[:-1],
    "surrogate": lambda p: ["\ud800"] * len(p),
}


@pytest.mark.parametrize("how", sorted(TAMPER))
@pytest.mark.parametrize("on_partial", ["fail", "partial"])
def test_an_altered_cursor_is_a_value_error_and_fails_no_shard(tmp_path: Path, how: str, on_partial: str) -> None:
    shards = _fleet(tmp_path, [[(i, 0) for i in range(0, 20, 2)], [(i, 0) for i in range(1, 20, 2)]])
    page = scatter_gather("SELECT id, grp FROM t", shards, order_by=["grp", "id"], unique="id", limit=3)
    bad = _rewrite(page.cursor or "", TAMPER[how])
    seen: list[dict[str, Any]] = []

    def listen(event: str, fields: dict[str, Any]) -> None:
        if event == "error":
            seen.append(fields)

    _events.subscribe(listen)
    try:
        with pytest.raises(ValueError, match="not a cursor of this query"):
            scatter_gather("SELECT id, grp FROM t", shards, order_by=["grp", "id"], unique="id", limit=3,
                           cursor=bad, on_partial=on_partial)
    finally:
        _events.unsubscribe(listen)
    assert seen == []  # no shard was queried, none reported failed


def test_a_cursor_altered_without_its_digest_is_refused(tmp_path: Path) -> None:
    shards = _fleet(tmp_path, [[(i, 0) for i in range(10)]])
    page = scatter_gather("SELECT id, grp FROM t", shards, order_by=["id"], unique="id", limit=3)
    doc = json.loads(base64.urlsafe_b64decode(page.cursor or ""))
    body = doc["b"].replace('"g":[2]', '"g":[5]')
    assert body != doc["b"]
    bad = base64.urlsafe_b64encode(json.dumps({**doc, "b": body}).encode()).decode()
    with pytest.raises(ValueError, match="not a cursor of this query"):
        scatter_gather("SELECT id, grp FROM t", shards, order_by=["id"], unique="id", limit=3, cursor=bad)
    with pytest.raises(TypeError, match="cursor must be"):
        scatter_gather("SELECT id, grp FROM t", shards, order_by=["id"], unique="id", limit=3,
                       cursor=b"x")  # type: ignore[arg-type]


# -- item: values of several storage classes -----------------------------------------

MIXED = [(1, 3), (2, "b"), (3, 2.5), (4, b"\x00"), (5, "a"), (6, -7), (7, b""), (8, "B"), (9, 2.5),
         (10, 10), (11, "10"), (12, 3.0), (13, b"\xff"), (14, "é"), (15, -0.5)]


@pytest.mark.parametrize("limit", [1, 2, 5, None])
@pytest.mark.parametrize("desc", [False, True])
def test_mixed_storage_classes_order_as_sqlite_orders_them(tmp_path: Path, limit: int | None, desc: bool) -> None:
    schema = "id INTEGER PRIMARY KEY, v NOT NULL"  # no type: values keep their storage class
    shards = _fleet(tmp_path, [MIXED[0::3], MIXED[1::3], MIXED[2::3]], schema=schema)
    d = "DESC" if desc else "ASC"
    got: list[Row] = []
    cursor = None
    while True:
        page = scatter_gather("SELECT id, v FROM t", shards, order_by=[f"v {d}", "id"], unique="id", limit=limit,
                              cursor=cursor)
        got += page.rows
        cursor = page.cursor
        if cursor is None:
            break
    assert got == _oracle(tmp_path, MIXED, schema, f"SELECT id, v FROM t ORDER BY v {d}, id")


def test_min_max_and_groups_over_mixed_storage_classes_match_sqlite(tmp_path: Path) -> None:
    schema = "id INTEGER PRIMARY KEY, v NOT NULL"
    rows = [(i, v, g) for i, (g, v) in enumerate([(r[0] % 3, r[1]) for r in MIXED])]
    schema3 = "id INTEGER PRIMARY KEY, v NOT NULL, g"
    mixed_groups = [(i, v, [1, "1", b"1", 1.5, None][i % 5]) for i, v, _g in rows]
    shards = _fleet(tmp_path, [mixed_groups[0::2], mixed_groups[1::2]], schema=schema3)
    res = scatter_aggregate("SELECT v, g FROM t", shards, {"lo": "min(v)", "hi": "max(v)", "n": "count(*)"},
                            group_by="g")
    exp = _oracle(tmp_path, mixed_groups, schema3,
                  "SELECT g, min(v), max(v), count(*) FROM t GROUP BY g ORDER BY g")
    assert [(r["g"], r["lo"], r["hi"], r["n"]) for r in res.rows] == exp
    whole = scatter_aggregate("SELECT v FROM t", shards, {"lo": "min(v)", "hi": "max(v)"})
    assert whole.rows == [dict(zip(["lo", "hi"], _oracle(tmp_path, mixed_groups, schema3,
                                                          "SELECT min(v), max(v) FROM t")[0]))]
    assert schema  # (the two-column schema is the ordering test's)


# -- item: a placeholder style per shard ---------------------------------------------


class _FormatStyle:
    """A sqlite3 connection that accepts only psycopg's placeholders (%s,
    %(name)s): a stand-in for a PostgreSQL shard next to SQLite ones."""

    def __init__(self, path: str) -> None:
        self.c = sqlite3.connect(path)

    def cursor(self) -> Any:
        outer = self

        class Cur:
            description: Any = None

            def execute(self, sql: str, params: Any = None) -> None:
                assert "?" not in sql and ":_sg" not in sql, sql
                import re

                sql = re.sub(r"%\((\w+)\)s", r":\1", sql).replace("%s", "?")
                self.cur = outer.c.execute(sql, params if params is not None else ())
                self.description = self.cur.description

            def fetchall(self) -> list[Any]:
                return self.cur.fetchall()

            def close(self) -> None:
                pass

        return Cur()

    def rollback(self) -> None:
        self.c.rollback()

    def close(self) -> None:
        self.c.close()


def test_each_shard_gets_its_own_placeholder_style_on_every_page(tmp_path: Path) -> None:
    rows = [(i, i % 3) for i in range(30)]
    shards = _fleet(tmp_path, [rows[0::2], rows[1::2]])
    shards["g1"] = functools.partial(_FormatStyle, str(tmp_path / "g1.db"))
    got: list[Row] = []
    cursor = None
    while True:
        page = scatter_gather("SELECT id, grp FROM t", shards, order_by=["grp", "id"], unique="id", limit=4,
                              cursor=cursor, placeholder={"g0": "?", "g1": "%s"})
        got += page.rows
        cursor = page.cursor
        if cursor is None:
            break
    assert got == sorted(rows, key=lambda r: (r[1], r[0]))
    with pytest.raises(ValueError, match="no style for shard"):
        scatter_gather("SELECT id FROM t", shards, order_by=["id"], unique="id", placeholder={"g0": "?"})
    with pytest.raises(ValueError, match="expected '\\?'"):
        scatter_gather("SELECT id FROM t", shards, order_by=["id"], unique="id", placeholder="$1")


def test_a_cursor_with_a_failed_shards_position_needs_that_shard(tmp_path: Path) -> None:
    shards = _fleet(tmp_path, [[(i, 0) for i in range(0, 20, 2)], [(i, 0) for i in range(1, 20, 2)]])
    page = scatter_gather("SELECT id, grp FROM t", {**shards, "g1": _down}, order_by=["id"], unique="id", limit=3,
                          on_partial="partial")
    assert list(page.failed) == ["g1"]
    with pytest.raises(ValueError, match=r"not yet read from shard\(s\) \['g1'\].*does not name"):
        scatter_gather("SELECT id, grp FROM t", {"g0": shards["g0"]}, order_by=["id"], unique="id", limit=3,
                       cursor=page.cursor)
    # under another epoch (who owns which rows changed) it is refused too
    with pytest.raises(ValueError, match="ownership of rows changed"):
        scatter_gather("SELECT id, grp FROM t", shards, order_by=["id"], unique="id", limit=3,
                       cursor=page.cursor, epoch="v2")
    # a cursor without lagging shards pages on over any set of shards
    full = scatter_gather("SELECT id, grp FROM t", shards, order_by=["id"], unique="id", limit=3)
    rest = scatter_gather("SELECT id, grp FROM t", {"g0": shards["g0"]}, order_by=["id"], unique="id",
                          cursor=full.cursor, epoch="v2")
    assert [r[0] for r in rest.rows] == list(range(4, 20, 2))


class _Reversed:
    """A sqlite3 connection whose results come back in reverse order."""

    def __init__(self, path: str) -> None:
        self.c = sqlite3.connect(path)

    def cursor(self) -> Any:
        outer = self

        class Cur:
            description: Any = None

            def execute(self, sql: str, params: Any = ()) -> None:
                self.cur = outer.c.execute(sql, params)
                self.description = self.cur.description

            def fetchall(self) -> list[Any]:
                return self.cur.fetchall()[::-1]

            def close(self) -> None:
                pass

        return Cur()

    def rollback(self) -> None:
        self.c.rollback()

    def close(self) -> None:
        self.c.close()


def test_a_shard_that_sorts_otherwise_is_refused(tmp_path: Path) -> None:
    shards = _fleet(tmp_path, [[(i, 0) for i in range(0, 20, 2)], [(i, 0) for i in range(1, 20, 2)]])
    shards["g1"] = functools.partial(_Reversed, str(tmp_path / "g1.db"))
    with pytest.raises(ValueError, match="shard 'g1' returned rows out of the merge's order"):
        scatter_gather("SELECT id, grp FROM t", shards, order_by=["id"], unique="id", limit=5)


class _Fixed:
    """A connection whose every query returns the given rows (columns id, v)."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows

    def cursor(self) -> Any:
        rows = self.rows

        class Cur:
            description = [("id",), ("v",)]

            def execute(self, sql: str, params: Any = ()) -> None:
                pass

            def fetchall(self) -> list[Row]:
                return rows

            def close(self) -> None:
                pass

        return Cur()

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_values_python_cannot_order_are_a_value_error() -> None:
    import datetime

    shards = {"a": functools.partial(_Fixed, [(1, datetime.date(2024, 1, 1))]),
              "b": functools.partial(_Fixed, [(2, datetime.time(1, 2))])}
    with pytest.raises(ValueError, match="cannot be compared"):
        scatter_gather("SELECT id, v FROM t", shards, order_by=["v", "id"], unique="id")
