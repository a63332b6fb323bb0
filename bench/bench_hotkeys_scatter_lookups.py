"""Benchmarks of hot keys, scatter-gather and lookup indexes, beside their peers.

* ``HotKeyRouter.route_write`` / ``route_read`` of cold keys against the
  base router's ``route`` of the same keys (target: <= 1.2x route's time).
* scatter-gather, 16 SQLite shards x 10k rows: the first page (LIMIT 100)
  and a deep page (through the cursor) against a naive "fetch every row,
  sort, slice"; and the in-memory k-way merge of 16 sorted lists against
  "concatenate, sort, slice" (target: >= 5x).
* a lookup-index read (lookup row, then the owner row): the connections it
  opens, and its time against one routed read of the owner row (target: one
  extra round trip, no scatter).

Ratios are printed and stored in ``extra_info``.  Single-threaded
comparisons alternate the contenders and keep each one's best CPU time
(``time.process_time``), so a busy machine distorts them less.  With
``--benchmark-disable`` (the default) sizes are small and each benchmark
runs once as a plain test.
"""

from __future__ import annotations

import functools
import heapq
import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench._timing import alternating_best, enabled
from shardhash import JumpRouter
from shardhash.hotkeys import HotKeyRouter
from shardhash.lookups import FactoryStore, LookupIndex
from shardhash.scatter import scatter_gather

# ---------------------------------------------------------------------------
# hot keys


@pytest.mark.parametrize("op", ["route_write", "route_read"])
def test_hot_router_cold_key_vs_route(benchmark: Any, op: str) -> None:
    n = 200_000 if enabled(benchmark) else 2_000
    base = JumpRouter([f"s{i}" for i in range(16)])
    hot = HotKeyRouter(base, {f"star{i}": 8 for i in range(100)})
    keys = [f"user:{i}" for i in range(n)]
    fn = getattr(hot, op)
    route = base.route

    def ours() -> None:
        for k in keys:
            fn(k)

    def peer() -> None:
        for k in keys:
            route(k)

    benchmark.pedantic(ours, rounds=3 if enabled(benchmark) else 1, iterations=1)
    assert fn(keys[0]) in ((route(keys[0]), 0), [(route(keys[0]), 0)])
    if enabled(benchmark):
        t = alternating_best({"ours": ours, "route": peer}, 7)
        ratio = t["ours"] / t["route"]
        benchmark.extra_info.update({"ns_per_key": round(t["ours"] / n * 1e9, 1),
                                     "route_ns_per_key": round(t["route"] / n * 1e9, 1),
                                     "over_route": round(ratio, 3)})
        print(f"\nHotKeyRouter.{op} cold key: {t['ours'] / n * 1e9:.0f} ns/key vs route "
              f"{t['route'] / n * 1e9:.0f} ns/key: {ratio:.2f}x route's time (target <= 1.2x)")


# ---------------------------------------------------------------------------
# scatter-gather


def _fleet(root: Path, shards: int, rows: int) -> dict[str, Any]:
    rng = random.Random(5)
    out = {}
    for s in range(shards):
        p = root / f"s{s}.db"
        c = sqlite3.connect(p)
        c.execute("CREATE TABLE ev (id INTEGER PRIMARY KEY, ts INTEGER NOT NULL, body TEXT)")
        c.executemany("INSERT INTO ev VALUES (?, ?, ?)",
                      ((s + shards * j, rng.randrange(1 << 30), "x" * 20) for j in range(rows)))
        c.execute("CREATE INDEX ev_ts ON ev (ts, id)")
        c.commit()
        c.close()
        out[f"s{s}"] = functools.partial(sqlite3.connect, str(p))
    return out


def _naive(shards: dict[str, Any], limit: int, after: tuple[int, int] | None = None) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for f in shards.values():
        c = f()
        rows += c.execute("SELECT id, ts, body FROM ev").fetchall()
        c.close()
    rows.sort(key=lambda r: (r[1], r[0]))
    if after is not None:
        rows = [r for r in rows if (r[1], r[0]) > after]
    return rows[:limit]


@pytest.mark.parametrize("page", ["first", "deep"])
def test_scatter_gather_vs_fetch_all_sort_slice(benchmark: Any, tmp_path: Path, page: str) -> None:
    nshards, nrows, limit = (16, 10_000, 100) if enabled(benchmark) else (4, 500, 20)
    shards = _fleet(tmp_path, nshards, nrows)
    q = "SELECT id, ts, body FROM ev"
    cursor = None
    after = None
    if page == "deep":  # a page half way through, reached by the cursor
        for _ in range(5):
            res = scatter_gather(q, shards, order_by=["ts", "id"], unique="id", limit=limit * 10, cursor=cursor)
            cursor = res.cursor
        after = (res.rows[-1][1], res.rows[-1][0])

    def ours() -> list[tuple[Any, ...]]:
        return scatter_gather(q, shards, order_by=["ts", "id"], unique="id", limit=limit, cursor=cursor,
                              concurrency=1).rows

    got = benchmark.pedantic(ours, rounds=3 if enabled(benchmark) else 1, iterations=1)
    assert got == _naive(shards, limit, after)
    if enabled(benchmark):
        t = alternating_best({"ours": ours, "naive": lambda: _naive(shards, limit, after)}, repeat=3,
                              timer=time.perf_counter)
        ratio = t["naive"] / t["ours"]
        benchmark.extra_info.update({"ms": round(t["ours"] * 1e3, 2), "naive_ms": round(t["naive"] * 1e3, 2),
                                     "x_naive": round(ratio, 1)})
        print(f"\nscatter_gather {page} page, {nshards} shards x {nrows:,} rows, LIMIT {limit}: "
              f"{t['ours'] * 1e3:.1f} ms vs fetch-all-sort-slice {t['naive'] * 1e3:.1f} ms: "
              f"{ratio:.1f}x (target >= 5x)")


def test_kway_merge_vs_concat_sort_slice(benchmark: Any) -> None:
    nshards, nrows, limit = (16, 10_000, 100) if enabled(benchmark) else (4, 1_000, 20)
    rng = random.Random(3)
    lists = [sorted((rng.randrange(1 << 30), s + nshards * j) for j in range(nrows)) for s in range(nshards)]

    def ours() -> list[tuple[int, int]]:
        out = []
        for x in heapq.merge(*(lst[: limit + 1] for lst in lists)):
            out.append(x)
            if len(out) == limit:
                break
        return out

    def naive() -> list[tuple[int, int]]:
        return sorted(x for lst in lists for x in lst)[:limit]

    got = benchmark.pedantic(ours, rounds=5 if enabled(benchmark) else 1, iterations=1)
    assert got == naive()
    if enabled(benchmark):
        t = alternating_best({"ours": ours, "naive": naive}, 7)
        ratio = t["naive"] / t["ours"]
        benchmark.extra_info["x_naive"] = round(ratio, 1)
        print(f"\nk-way merge of {nshards} sorted lists x {nrows:,} (LIMIT {limit}): {t['ours'] * 1e6:.0f} us vs "
              f"concatenate-sort-slice {t['naive'] * 1e3:.1f} ms: {ratio:.0f}x")


# ---------------------------------------------------------------------------
# lookup index


def test_lookup_is_one_extra_round_trip(benchmark: Any, tmp_path: Path) -> None:
    names = [f"s{i}" for i in range(4)]
    opened: list[str] = []

    def counting(s: str, p: Path) -> Callable[[], sqlite3.Connection]:
        def connect() -> sqlite3.Connection:
            opened.append(s)
            return sqlite3.connect(str(p), timeout=60)
        return connect

    shards: dict[str, Callable[[], sqlite3.Connection]] = {}
    for s in names:
        p = tmp_path / f"{s}.db"
        c = sqlite3.connect(p)
        c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL, name TEXT)")
        c.commit()
        c.close()
        shards[s] = counting(s, p)
    users = FactoryStore(shards, JumpRouter(names))
    idx = LookupIndex("email", lookup=FactoryStore(shards, JumpRouter(names)), owner=users, owner_table="users")
    idx.create_table()
    n = 200 if enabled(benchmark) else 20
    for i in range(n):
        idx.register(i, f"u{i}@example.com", {"name": f"n{i}"})
    opened.clear()
    assert idx.get("u7@example.com") == {"id": 7, "email": "u7@example.com", "name": "n7"}
    trips = len(opened)

    def direct(i: int) -> Any:
        with users.read(i) as tx:
            return tx.execute("SELECT * FROM users WHERE id = ?", (i,)).fetchone()

    def via_lookup() -> None:
        for i in range(n):
            idx.get(f"u{i}@example.com")

    def routed() -> None:
        for i in range(n):
            direct(i)

    benchmark.pedantic(via_lookup, rounds=3 if enabled(benchmark) else 1, iterations=1)
    assert trips == 2  # the lookup row's shard, then the owner's: one extra round trip, no scatter
    if enabled(benchmark):
        t = alternating_best({"lookup": via_lookup, "routed": routed}, repeat=3, timer=time.perf_counter)
        ratio = t["lookup"] / t["routed"]
        benchmark.extra_info.update({"round_trips": trips, "over_routed_read": round(ratio, 2)})
        print(f"\nlookup-index read: {trips} round trips (a routed read: 1); {t['lookup'] / n * 1e6:.0f} us vs "
              f"{t['routed'] / n * 1e6:.0f} us per read: {ratio:.2f}x")
