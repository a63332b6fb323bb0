"""Scatter-gather against a single-database oracle (property tests).

Random schemas and rows are placed on 1-5 shards by a router; the same rows
sit in one SQLite database.  Every page of a keyset pagination (random
ORDER BY over several columns, ties, DESC, values of several storage
classes; rows inserted and deleted between pages), every aggregate with
GROUP BY, partial failure and recovery, and named parameters must give the
oracle's answer, or a documented refusal (a NULL in an ordering column).

Expected pages are computed by the oracle's own ORDER BY: the last row
returned is put back into the oracle's result as a marker row, and the page
after a position is the rows SQLite sorts after the marker.  With a
PostgreSQL server (tests/_postgres.py), a variant places some shards in PostgreSQL.
"""

from __future__ import annotations

import functools
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardhash import JumpRouter
from shardhash.scatter import scatter_aggregate, scatter_gather

Row = tuple[Any, ...]

# the profile's budget, shared by the tests of this file (each example
# builds several databases and pages through them)
_BUDGET = settings(max_examples=max(5, settings().max_examples // 5), deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

KINDS = {
    "int": ("INTEGER NOT NULL", st.integers(-3, 3)),
    "text": ("TEXT NOT NULL", st.sampled_from(["", "a", "B", "ab", "é", "a b", "\u4e2d"])),
    "real": ("REAL NOT NULL", st.sampled_from([-1.5, 0.0, -0.0, 2.25, 1e300, 3.0])),
    # no declared type: every value keeps its storage class (SQLite's cross-type order)
    "mixed": ("NOT NULL", st.one_of(st.integers(-2, 2), st.sampled_from([0.5, -2.0, 2.0]),
                                    st.sampled_from(["", "1", "a", "Z"]), st.sampled_from([b"", b"\x00", b"a"]))),
    "nint": ("INTEGER", st.one_of(st.none(), st.integers(-3, 3))),
    "wide": ("INTEGER NOT NULL", st.integers(0, 12)),  # ties rarer
}


@dataclass
class Schema:
    kinds: list[str]

    @property
    def cols(self) -> list[str]:
        return ["id"] + [f"c{i}" for i in range(len(self.kinds))]

    @property
    def ddl(self) -> str:
        return "id INTEGER PRIMARY KEY, " + ", ".join(f"c{i} {KINDS[k][0]}" for i, k in enumerate(self.kinds))



class World:
    """Shards (SQLite files, optionally PostgreSQL schemas) and the oracle."""

    def __init__(self, root: Path, schema: Schema, nshards: int, pg: list[Any] | None = None) -> None:
        self.schema = schema
        self.names = [f"s{i}" for i in range(nshards)]
        self.router = JumpRouter(self.names)
        self.pg = {n: pg[i] for i, n in enumerate(self.names) if pg and i < len(pg) and i % 2 == 1}
        self.paths = {n: root / f"{n}.db" for n in self.names}
        self.oracle_path = root / "oracle.db"
        for n in self.names:
            if n in self.pg:
                self._pg_exec(n, "DROP TABLE IF EXISTS t")
                self._pg_exec(n, f"CREATE TABLE t ({self._pg_ddl()})")
            else:
                self._lite(self.paths[n], f"CREATE TABLE t ({schema.ddl})")
        self._lite(self.oracle_path, f"CREATE TABLE t ({schema.ddl})")

    def _pg_ddl(self) -> str:
        pgt = {"int": "BIGINT NOT NULL", "text": 'TEXT COLLATE "C" NOT NULL', "real": "DOUBLE PRECISION NOT NULL",
               "nint": "BIGINT"}
        return "id BIGINT PRIMARY KEY, " + ", ".join(f"c{i} {pgt[k]}" for i, k in enumerate(self.schema.kinds))

    def _pg_exec(self, n: str, sql: str, rows: list[Row] | None = None) -> None:
        import psycopg

        dsn, sch = self.pg[n]
        with psycopg.connect(dsn, options=f"-csearch_path={sch}", autocommit=True) as c:
            if rows is None:
                c.execute(sql)
            elif rows:
                c.cursor().executemany(sql, rows)

    @staticmethod
    def _lite(path: Path, sql: str, rows: list[Row] | None = None) -> None:
        c = sqlite3.connect(path)
        try:
            if rows is None:
                c.execute(sql)
            elif rows:
                c.executemany(sql, rows)
            c.commit()
        finally:
            c.close()

    def insert(self, rows: list[Row]) -> None:
        if not rows:
            return
        w = len(rows[0])
        by: dict[str, list[Row]] = {}
        for r in rows:
            by.setdefault(self.router.route(r[0]), []).append(r)
        for n, rs in by.items():
            if n in self.pg:
                self._pg_exec(n, f"INSERT INTO t VALUES ({', '.join(['%s'] * w)})", rs)
            else:
                self._lite(self.paths[n], f"INSERT INTO t VALUES ({', '.join('?' * w)})", rs)
        self._lite(self.oracle_path, f"INSERT INTO t VALUES ({', '.join('?' * w)})", rows)

    def delete(self, ids: list[int]) -> None:
        for i in ids:
            n = self.router.route(i)
            if n in self.pg:
                self._pg_exec(n, "DELETE FROM t WHERE id = %s", [(i,)])
            else:
                self._lite(self.paths[n], "DELETE FROM t WHERE id = ?", [(i,)])
        self._lite(self.oracle_path, "DELETE FROM t WHERE id = ?", [(i,) for i in ids])

    def shards(self, down: frozenset[str] = frozenset()) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for n in self.names:
            if n in down:
                out[n] = _down
            elif n in self.pg:
                import psycopg

                dsn, sch = self.pg[n]
                out[n] = functools.partial(psycopg.connect, dsn, options=f"-csearch_path={sch}")
            else:
                out[n] = functools.partial(sqlite3.connect, str(self.paths[n]))
        return out

    @property
    def placeholder(self) -> str | dict[str, str]:
        if not self.pg:
            return "?"
        return {n: "%s" if n in self.pg else "?" for n in self.names}

    def oracle(self, sql: str, params: Any = ()) -> list[Row]:
        c = sqlite3.connect(self.oracle_path)
        try:
            return [tuple(r) for r in c.execute(sql, params)]
        finally:
            c.close()

    def after(self, order_sql: str, last: Row | None, where: str = "", params: dict[str, Any] | None = None
              ) -> list[Row]:
        """The oracle's rows that SQLite sorts after ``last`` (all when None)."""
        cols = ", ".join(self.schema.cols)
        prm: dict[str, Any] = dict(params or {})
        cond = [where] if where else []
        if last is None:
            w = f" WHERE {' AND '.join(cond)}" if cond else ""
            return self.oracle(f"SELECT {cols} FROM t{w} ORDER BY {order_sql}", prm)
        cond.append("id <> :_o_last")
        prm["_o_last"] = last[0]
        marks = ", ".join(f":_o_m{i}" for i in range(len(last)))
        prm.update({f"_o_m{i}": v for i, v in enumerate(last)})
        rows = self.oracle(f"SELECT {cols}, 0 AS _m FROM t WHERE {' AND '.join(cond)} UNION ALL "
                           f"SELECT {marks}, 1 ORDER BY {order_sql}", prm)
        at = [i for i, r in enumerate(rows) if r[-1] == 1]
        assert len(at) == 1
        return [r[:-1] for r in rows[at[0] + 1:]]


def _down() -> Any:
    raise ConnectionRefusedError("shard down")


@st.composite
def worlds(draw: st.DrawFn, kinds: list[str] | None = None, max_rows: int = 30) -> tuple[Schema, list[Row], int]:
    schema = Schema(kinds if kinds is not None else draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1,
                                                                  max_size=3)))
    ids = draw(st.lists(st.integers(0, 10**6), unique=True, max_size=max_rows))
    rows = [(i, *(draw(KINDS[k][1]) for k in schema.kinds)) for i in ids]
    return schema, rows, draw(st.integers(1, 5))


@st.composite
def orderings(draw: st.DrawFn, schema: Schema) -> list[tuple[str, bool]]:
    cols = [f"c{i}" for i in range(len(schema.kinds))]
    picked = draw(st.lists(st.sampled_from(cols), unique=True, max_size=len(cols)))
    order = [(c, draw(st.booleans())) for c in picked]
    if draw(st.booleans()):
        order.append(("id", draw(st.booleans())))
    return order


def _order_sql(order: list[tuple[str, bool]]) -> str:
    parts = [f"{c} {'DESC' if d else 'ASC'}" for c, d in order]
    if not any(c == "id" for c, _ in order):
        parts.append("id ASC")
    return ", ".join(parts)


def _spec(order: list[tuple[str, bool]]) -> list[str]:
    return [f"{c} {'DESC' if d else 'ASC'}" for c, d in order]


def _has_null(rows: list[Row], schema: Schema, order: list[tuple[str, bool]]) -> bool:
    pos = {c: i for i, c in enumerate(schema.cols)}
    return any(r[pos[c]] is None for r in rows for c, _ in order)


def _paginate(w: World, rows: list[Row], order: list[tuple[str, bool]], limit: int | None, data: st.DataObject,
              mutate: bool, where: str = "", params: dict[str, Any] | None = None) -> None:
    query = "SELECT " + ", ".join(w.schema.cols) + " FROM t" + (f" WHERE {where}" if where else "")
    osql = _order_sql(order)
    cursor = None
    last: Row | None = None
    next_id = 2 * 10**6
    live = {r[0] for r in rows}
    for _ in range(200):
        page = scatter_gather(query, w.shards(), params=params if params is not None else (),
                              order_by=_spec(order), unique="id", limit=limit, cursor=cursor,
                              placeholder=w.placeholder)
        got = [tuple(r) for r in page.rows]
        expect = w.after(osql, last, where, params)
        assert got == expect[: len(got)] and len(got) == (len(expect) if limit is None else min(limit, len(expect)))
        if page.cursor is None:
            assert len(expect) == len(got)  # nothing left at the time of the last page
            return
        if got:
            last = got[-1]
        cursor = page.cursor
        if mutate:  # rows inserted and deleted between pages, before and after the position
            new = [(next_id + j, *(data.draw(KINDS[k][1]) for k in w.schema.kinds))
                   for j in range(data.draw(st.integers(0, 3)))]
            next_id += len(new)
            gone = data.draw(st.lists(st.sampled_from(sorted(live)), max_size=3, unique=True)) if live else []
            w.insert(new)
            w.delete(gone)
            live = (live | {r[0] for r in new}) - set(gone)
    raise AssertionError("pagination did not end")


def _mixed_or_pg_ok(schema: Schema, pg: bool) -> bool:
    return not pg or "mixed" not in schema.kinds


@_BUDGET
@given(world=worlds(), data=st.data())
def test_pages_equal_the_oracle_with_writes_between_pages(world: tuple[Schema, list[Row], int],
                                                          data: st.DataObject) -> None:
    schema, rows, nshards = world
    order = data.draw(orderings(schema))
    limit = data.draw(st.one_of(st.none(), st.integers(1, 8)))
    with tempfile.TemporaryDirectory() as d:
        w = World(Path(d), schema, nshards)
        w.insert(rows)
        if _has_null(rows, schema, order):
            # documented refusal: keyset pagination needs NOT NULL ordering columns
            with pytest.raises(ValueError, match="is NULL"):
                scatter_gather("SELECT * FROM t", w.shards(), order_by=_spec(order), unique="id", limit=limit)
            return
        nullable = {f"c{i}" for i, k in enumerate(schema.kinds) if k == "nint"}
        mutate = not (nullable & {c for c, _ in order})  # writes could bring a NULL into the ordering
        _paginate(w, rows, order, limit, data, mutate)


@_BUDGET
@given(world=worlds(kinds=["int", "mixed"]), data=st.data())
def test_named_params_equal_the_oracle(world: tuple[Schema, list[Row], int], data: st.DataObject) -> None:
    schema, rows, nshards = world
    order = data.draw(orderings(schema))
    limit = data.draw(st.integers(1, 6))
    params = {"lo": data.draw(st.integers(-3, 3)), "v": data.draw(KINDS["mixed"][1])}
    with tempfile.TemporaryDirectory() as d:
        w = World(Path(d), schema, nshards)
        w.insert(rows)
        _paginate(w, rows, order, limit, data, False, where="c0 >= :lo AND c1 <> :v", params=params)
        agg = scatter_aggregate("SELECT * FROM t WHERE c0 >= :lo AND c1 <> :v", w.shards(),
                                {"n": "count(*)", "hi": "max(c1)"}, params=params)
        exp = w.oracle("SELECT count(*), max(c1) FROM t WHERE c0 >= :lo AND c1 <> :v", params)
        assert [(r["n"], r["hi"]) for r in agg.rows] == exp


AGG_FUNCS = {"int": ["sum", "avg", "min", "max", "count"], "wide": ["sum", "min"], "real": ["sum", "avg", "min", "max"],
             "text": ["min", "max", "count"], "mixed": ["min", "max", "count"],
             "nint": ["sum", "avg", "min", "max", "count"]}


def _close(a: Any, b: Any) -> bool:
    """Equal values of one storage class; numbers equal (floats within
    rounding: sums may be added in another order)."""
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return type(a) is type(b) and bool(a == b)


@_BUDGET
@given(world=worlds(), data=st.data())
def test_aggregates_equal_the_oracle(world: tuple[Schema, list[Row], int], data: st.DataObject) -> None:
    schema, rows, nshards = world
    cols = [f"c{i}" for i in range(len(schema.kinds))]
    group = data.draw(st.lists(st.sampled_from(cols), unique=True, max_size=2))
    aggs: dict[str, str] = {"n": "count(*)"}
    for i, (c, k) in enumerate(zip(cols, schema.kinds)):
        for fn in data.draw(st.lists(st.sampled_from(AGG_FUNCS[k]), unique=True, max_size=3)):
            aggs[f"a{i}_{fn}"] = f"{fn}({c})"
    with tempfile.TemporaryDirectory() as d:
        w = World(Path(d), schema, nshards)
        w.insert(rows)
        down = data.draw(st.sets(st.sampled_from(w.names), max_size=1))
        clash: bool = data.draw(st.booleans())
        if group and clash:  # documented refusal: an aggregate named like a group column
            with pytest.raises(ValueError, match="also group_by"):
                scatter_aggregate("SELECT * FROM t", w.shards(), {**aggs, group[0]: "count(*)"}, group_by=group)
        res = scatter_aggregate("SELECT * FROM t", w.shards(frozenset(down)), aggs, group_by=group,
                                on_partial="partial")
        assert set(res.failed) == down
        if down:  # the oracle without the failed shard's rows
            w.delete([r[0] for r in rows if w.router.route(r[0]) in down])
        sel = ", ".join([*group, *(v for v in aggs.values())])
        gb = f" GROUP BY {', '.join(group)} ORDER BY {', '.join(group)}" if group else ""
        exp = w.oracle(f"SELECT {sel} FROM t{gb}")
        got = [tuple(r[k] for k in [*group, *aggs]) for r in res.rows]
        assert len(got) == len(exp), (got, exp)
        for g, e in zip(got, exp):
            assert all(_close(a, b) for a, b in zip(g, e)), (g, e, aggs)


@_BUDGET
@given(world=worlds(kinds=["int", "text"]), data=st.data())
def test_partial_failure_and_recovery_return_every_row_once(world: tuple[Schema, list[Row], int],
                                                             data: st.DataObject) -> None:
    schema, rows, nshards = world
    order = data.draw(orderings(schema))
    limit = data.draw(st.integers(1, 6))
    osql = _order_sql(order)
    with tempfile.TemporaryDirectory() as d:
        w = World(Path(d), schema, nshards)
        w.insert(rows)
        got: list[Row] = []
        cursor = None
        ever_down: set[str] = set()
        for n_page in range(500):
            down = (frozenset(data.draw(st.sets(st.sampled_from(w.names), max_size=nshards)))
                    if n_page < 6 else frozenset())
            ever_down |= down
            page = scatter_gather("SELECT * FROM t", w.shards(down), order_by=_spec(order), unique="id",
                                  limit=limit, cursor=cursor, on_partial="partial")
            assert set(page.failed) == set(down) and len(page.rows) <= limit
            got += [tuple(r) for r in page.rows]
            cursor = page.cursor
            if cursor is None:
                break
        assert cursor is None
        everything = w.after(osql, None)
        assert sorted(got) == sorted(everything) and len(got) == len(everything)  # each row once
        rank = {r[0]: i for i, r in enumerate(everything)}
        for n in w.names:  # each shard's rows in order; those of shards never down in global order
            mine = [rank[r[0]] for r in got if w.router.route(r[0]) == n]
            assert mine == sorted(mine)
        steady = [rank[r[0]] for r in got if w.router.route(r[0]) not in ever_down]
        assert steady == sorted(steady)


# -- PostgreSQL shards next to SQLite ones ---------------------------------------------


@pytest.fixture(scope="module")
def pg_schemas() -> Iterator[list[Any]]:
    """Five PostgreSQL schemas (a skip without a server; in CI a failure)."""
    from tests._postgres import need_postgres

    dsn = need_postgres()
    import psycopg

    tag = uuid.uuid4().hex[:8]
    schemas = [(dsn, f"o{tag}_{i}") for i in range(5)]
    with psycopg.connect(dsn, autocommit=True) as c:
        for _, sch in schemas:
            c.execute(f"CREATE SCHEMA {sch}")
    try:
        yield schemas
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            for _, sch in schemas:
                c.execute(f"DROP SCHEMA IF EXISTS {sch} CASCADE")


@pytest.mark.oracle
@_BUDGET
@given(world=worlds(kinds=["int", "text", "real"], max_rows=20), data=st.data())
def test_pages_with_postgresql_shards_equal_the_oracle(pg_schemas: list[Any], world: tuple[Schema, list[Row], int],
                                                       data: st.DataObject) -> None:
    schema, rows, nshards = world
    nshards = max(nshards, 2)
    order = data.draw(orderings(schema))
    limit = data.draw(st.one_of(st.none(), st.integers(1, 6)))
    with tempfile.TemporaryDirectory() as d:
        w = World(Path(d), schema, nshards, pg=pg_schemas)
        assert w.pg
        w.insert(rows)
        _paginate(w, rows, order, limit, data, True)


@_BUDGET
@given(world=worlds(kinds=["wide", "int", "text"], max_rows=12), data=st.data())
def test_a_tie_breaker_that_is_not_unique_is_refused_and_a_unique_one_pages_exactly(
        world: tuple[Schema, list[Row], int], data: st.DataObject) -> None:
    # c0 (few values) named as the tie-breaker: unique in some examples, not
    # in most; wherever the two copies fall (also across a page boundary),
    # pagination must raise rather than drop one
    schema, rows, nshards = world
    order = [o for o in data.draw(orderings(schema)) if o[0] not in ("c0", "id")] + [("c0", data.draw(st.booleans()))]
    limit = data.draw(st.one_of(st.none(), st.integers(1, 4)))
    pos = {c: i for i, c in enumerate(schema.cols)}
    keys = [tuple(r[pos[c]] for c, _ in order) for r in rows]
    dup = len(set(keys)) < len(keys)
    with tempfile.TemporaryDirectory() as d:
        w = World(Path(d), schema, nshards)
        w.insert(rows)
        got: list[Row] = []
        cursor = None
        try:
            for _ in range(100):
                page = scatter_gather("SELECT * FROM t", w.shards(), order_by=_spec(order), unique="c0",
                                      limit=limit, cursor=cursor)
                got += [tuple(r) for r in page.rows]
                cursor = page.cursor
                if cursor is None:
                    break
        except ValueError as e:
            assert dup and "not unique" in str(e)
            return
        assert not dup, "a duplicate tie-breaker went unnoticed"
        assert got == w.after(", ".join(f"{c} {'DESC' if d_ else 'ASC'}" for c, d_ in order), None)
