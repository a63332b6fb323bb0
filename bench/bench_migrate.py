"""Benchmarks of shardhash.migrate: copy rate (SQLite; PostgreSQL with COPY;
MariaDB with multi-row INSERTs),
catch-up rate, and the write pause with 8 writers against a stop-the-world
baseline (lock the units, copy, switch) run beside it.

Unit sizes come from ``SHARDHASH_BENCH_MIGRATE_SIZES`` (default
``10000,100000``; ``1000000`` is a local setting: it takes minutes).
PostgreSQL runs on the server tests/_postgres.py finds (``SHARDHASH_PG_DSN``,
``PGHOST``) or starts (a throwaway one, when initdb and pg_ctl are on PATH);
MariaDB on the one tests/_mariadb.py finds (``SHARDHASH_MYSQL_URL``) or starts.
With ``--benchmark-disable`` (the test run) each benchmark runs once on a
small unit, as a test.  Figures: bench/README.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter
from shardhash.migrate import Cluster, Migration
from shardhash.migrate.cluster import open_backend
from tests._mariadb import drop_databases, need_mysql, with_database
from tests._postgres import need_postgres

UPSERT = ("INSERT INTO users VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, "
          "n = excluded.n")
UPSERT_MYSQL = "INSERT INTO users VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), n = VALUES(n)"


def _upsert(tx: Any) -> str:
    return UPSERT_MYSQL if tx.backend.kind == "mysql" else UPSERT


def _enabled(benchmark: Any) -> bool:
    return not getattr(benchmark, "disabled", False)


def _sizes(benchmark: Any) -> list[int]:
    if not _enabled(benchmark):
        return [1000]
    return [int(x) for x in os.environ.get("SHARDHASH_BENCH_MIGRATE_SIZES", "10000,100000").split(",")]


def _shard_urls(backend: str, shards: list[str]) -> dict[str, str]:
    """A URL per shard: ``sqlite:<id>.db``, or on PostgreSQL (``backend`` is a
    DSN) a fresh schema each, created here (the name quoted by psycopg)."""
    if backend == "sqlite":
        return {s: f"sqlite:{s}.db" for s in shards}
    if backend.startswith("mysql://"):  # (MariaDB: a database each, created by the backend)
        tag = uuid.uuid4().hex[:8]
        return {s: with_database(backend, f"bench{tag}_{s}") for s in shards}
    import psycopg
    from psycopg import sql

    tag = uuid.uuid4().hex[:8]
    with psycopg.connect(backend, autocommit=True) as pg:
        for s in shards:
            pg.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(f"bench{tag}_{s}")))
    return {s: f"postgresql:{backend} options='-csearch_path=bench{tag}_{s}'" for s in shards}


def _cluster(root: Path, unit_rows: int, backend: str) -> tuple[Path, Any, Any]:
    """Shard a (2 * unit_rows users) and an empty shard b; jump a -> a, b moves ~unit_rows."""
    old = JumpRouter(["a"])
    new = JumpRouter(["a", "b"], version=2)
    urls = _shard_urls(backend, ["a", "b"])
    for s in ("a", "b"):
        c: Any = open_backend(urls[s], root).connect()
        c.execute("CREATE TABLE users (id BIGINT PRIMARY KEY, name TEXT NOT NULL, n BIGINT NOT NULL)")
        if s == "a":
            c.execute("BEGIN")
            step = 50_000
            for lo in range(1, 2 * unit_rows + 1, step):
                c.executemany("INSERT INTO users VALUES (?, ?, 0)",
                              [(k, f"user{k}") for k in range(lo, min(lo + step, 2 * unit_rows + 1))])
            c.execute("COMMIT")
        c.close()
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": u} for s, u in urls.items()},
           "groups": {"users": {"router": old.to_dict(), "tables": [{"name": "users", "key": "id"}]}},
           "options": {"synchronous": "NORMAL", "wait_timeout": 600}}
    (root / "cluster.json").write_text(json.dumps(doc))
    cl = Cluster.load(root / "cluster.json")
    cl.init()
    cl.close()
    return root / "cluster.json", old, new


def _drop(backend: str, path: Path) -> None:
    if backend == "sqlite":
        return
    doc = json.loads(path.read_text())
    if backend.startswith("mysql://"):
        for u in doc["shards"].values():
            drop_databases(backend, u["primary"].split("?")[0].rsplit("/", 1)[1])
        return
    import psycopg

    with psycopg.connect(backend, autocommit=True) as c:
        for u in doc["shards"].values():
            schema = u["primary"].rsplit("search_path=", 1)[1].rstrip("'")
            c.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _backends() -> list[Any]:
    return ["sqlite", pytest.param("postgres", marks=pytest.mark.oracle),
            pytest.param("mariadb", marks=[pytest.mark.oracle, pytest.mark.mariadb_full])]


def _resolve(name: str) -> str:
    if name == "sqlite":
        return name
    return need_mysql() if name == "mariadb" else need_postgres()


@pytest.mark.parametrize("backend_name", _backends())
def test_copy_and_catchup_rate(benchmark: Any, backend_name: str) -> None:
    """Snapshot copy (rows written per second) and catch-up (changes per second)."""
    backend = _resolve(backend_name)
    out = []
    for n in _sizes(benchmark):
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as d:
            path, old, new = _cluster(Path(d), n, backend)
            try:
                cl = Cluster.load(path)
                m = Migration.create(cl, "users", new)
                m._prepare()
                t0 = time.perf_counter()
                m._copy()  # (the default: adaptive chunks)
                t_copy = time.perf_counter() - t0
                copied = int(cl.metadata.get(m.id, "copied"))
                assert abs(copied - n) < n * 0.1 + 50
                # changes to half the rows (at most 100,000: the rate, not the
                # count, is the figure), then catch up
                sb = cl.backend("a")
                c = sb.conn()
                c.execute("BEGIN")
                c.execute("UPDATE users SET n = n + 1 WHERE id % 2 = 0 AND id <= 200000")
                c.execute("COMMIT")
                pending = sb.pending_count(c, m._cid("a"))
                t0 = time.perf_counter()
                while m.catch_up(limit=5000)[1]:
                    pass
                t_cu = time.perf_counter() - t0
                m.verify()
                cl.close()
                out.append((n, copied / t_copy, pending / t_cu))
            finally:
                _drop(backend, path)
    for n, cr, cu in out:
        benchmark.extra_info[f"copy_rows_per_s_{n}"] = round(cr)
        benchmark.extra_info[f"catchup_changes_per_s_{n}"] = round(cu)
        print(f"\n{backend_name}: unit of {n:,} rows: copy {cr:,.0f} rows/s, catch-up {cu:,.0f} changes/s "
              f"(targets: copy >= {'50k' if backend_name == 'sqlite' else '100k'} rows/s)")
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


EXECUTOR = r"""
import sys
from shardhash.migrate import Cluster, Migration
cl = Cluster.load(sys.argv[1])
m = Migration(cl, sys.argv[2])
if sys.argv[3] == "live":
    m.run()
else:  # stop the world: freeze the units, copy, switch
    m._prepare()
    for s in m.mem.sources:
        m._set_units(s, "source", ("copying",), "frozen")
    m._set("copying")
    m._copy()
    m._set("catching-up")
    m._freeze_and_commit()
    m._reconcile()
    m._set("retained")
"""


def _pause_run(n: int, backend: str, mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as d:
        path, old, new = _cluster(Path(d), n, backend)
        try:
            cl = Cluster.load(path, retries=5)
            moving = [k for k in range(1, 2 * n + 1, max(1, n // 2000)) if new.route(k) == "b"]
            stop = threading.Event()
            acks = [0]

            def writer(w: int) -> None:
                i = w
                while not stop.is_set():
                    k = moving[i % len(moving)]
                    i += 8
                    with cl.transaction(k) as tx:
                        tx.execute(_upsert(tx), (k, f"w{w}", i))
                    acks[0] += 1
                    time.sleep(0.002)
                cl.close()

            ts = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
            for t in ts:
                t.start()
            time.sleep(0.3)
            m = Migration.create(cl, "users", new)
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-c", EXECUTOR, str(path), m.id, mode], capture_output=True,
                               text=True)
            dt = time.perf_counter() - t0
            time.sleep(0.3)
            stop.set()
            for t in ts:
                t.join()
            assert p.returncode == 0, p.stderr[-3000:]
            q = cl.metrics.pause_quantiles()
            q.update({"seconds": dt, "acks": acks[0], "fence": cl.metadata.get(m.id, "fence_timings")})
            cl.close()
            return q
        finally:
            _drop(backend, path)


@pytest.mark.parametrize("backend_name", _backends())
def test_write_pause_vs_stop_the_world(benchmark: Any, backend_name: str) -> None:
    """p99 of the time writers to the moving unit waited, live migration vs
    stop the world, per unit size (target: <= 100 ms and flat in the size)."""
    backend = _resolve(backend_name)
    for n in _sizes(benchmark):
        live = _pause_run(n, backend, "live")
        if not _enabled(benchmark) and backend_name != "sqlite":
            assert live["count"] > 0  # (as a test, PostgreSQL runs the live migration only)
            continue
        stw = _pause_run(n, backend, "stw")

        def ms(v: float | None) -> float:
            return float("nan") if v is None else v * 1000

        benchmark.extra_info[f"pause_p99_ms_live_{n}"] = ms(live["p99"])
        benchmark.extra_info[f"pause_p99_ms_stw_{n}"] = ms(stw["p99"])
        print(f"\n{backend_name}: unit of {n:,} rows, 8 writers: write pause p50/p99/max live "
              f"{ms(live['p50']):.1f}/{ms(live['p99']):.1f}/{ms(live['max']):.1f} ms ({live['count']} waits), "
              f"stop-the-world {ms(stw['p50']):.1f}/{ms(stw['p99']):.1f}/{ms(stw['max']):.1f} ms "
              f"({stw['count']} waits); stop-the-world p99 / live p99 = {ms(stw['p99']) / ms(live['p99']):.1f}x; "
              f"live fence phases (s since the freeze): {live['fence']}")
        assert live["count"] > 0 and stw["count"] > 0
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def _overhead_run(n_writes: int, backend: str) -> dict[str, Any]:
    """Single-key write transactions (one writer, keys spread over the whole
    table, ~half of them in the moving unit) with no migration, then with a
    migration prepared (its change capture active): time per write and the
    changes logged."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as d:
        path, old, new = _cluster(Path(d), 20_000, backend)
        try:
            cl = Cluster.load(path)
            keys = [1 + (i * 7919) % 40_000 for i in range(n_writes)]
            moving = sum(1 for k in keys if new.route(k) == "b")

            def writes(tag: int) -> float:
                t0 = time.perf_counter()
                for i, k in enumerate(keys):
                    with cl.transaction(k) as tx:
                        tx.execute(_upsert(tx), (k, "w", tag + i))
                return (time.perf_counter() - t0) / len(keys)

            writes(0)  # warm up
            base = writes(1)
            m = Migration.create(cl, "users", new)
            m._prepare()  # the capture is active from here on
            b = cl.backend("a")
            cid = b.capture_id(b.conn(), m.capture)
            assert cid is not None
            before = b.pending_count(b.conn(), cid)
            cap = writes(2)
            logged = b.pending_count(b.conn(), cid) - before
            m.rollback()
            cl.close()
            return {"base_us": base * 1e6, "capture_us": cap * 1e6, "writes": len(keys), "moving": moving,
                    "logged": logged}
        finally:
            _drop(backend, path)


@pytest.mark.parametrize("backend_name", _backends())
def test_capture_write_overhead(benchmark: Any, backend_name: str) -> None:
    """What an active change capture costs a write, and how many changes it
    logs: only writes to keys of the moving units are logged."""
    backend = _resolve(backend_name)
    r = _overhead_run(2000 if _enabled(benchmark) else 200, backend)
    for k, v in r.items():
        benchmark.extra_info[k] = v
    print(f"\n{backend_name}: write transaction {r['base_us']:.0f} us without capture, {r['capture_us']:.0f} us "
          f"with it (+{r['capture_us'] - r['base_us']:.0f} us); {r['logged']} changes logged for "
          f"{r['writes']} writes, {r['moving']} of them to moving keys")
    assert r["moving"] <= r["logged"] <= r["writes"] * 2
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def _guard_run(n_writes: int, rounds: int, backend: str) -> dict[str, Any]:
    """Single-key write transactions (one UPSERT each) with the client's
    shard-key guard and with it switched off (its begin/end calls made
    no-ops; the triggers stay and find the guard off), in alternating rounds:
    the median time per transaction of each."""
    import statistics

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as d:
        path, _old, _new = _cluster(Path(d), 5_000, backend)
        try:
            cl = Cluster.load(path)
            keys = [1 + (i * 7919) % 10_000 for i in range(n_writes)]
            b = cl.backend("a")

            def writes(tag: int) -> float:
                t0 = time.perf_counter()
                for i, k in enumerate(keys):
                    with cl.transaction(k) as tx:
                        tx.execute(_upsert(tx), (k, "w", tag + i))
                return (time.perf_counter() - t0) / len(keys)

            def off() -> float:
                begin = type(b).begin_client_write
                b.begin_client_write = lambda c, guard=None: begin(b, c)  # type: ignore[method-assign]
                b.end_guard = lambda c: []  # type: ignore[method-assign]
                try:
                    return writes(2)
                finally:
                    del b.begin_client_write, b.end_guard

            writes(0)  # warm up
            on_t, off_t = [], []
            for _ in range(rounds):
                on_t.append(writes(1))
                off_t.append(off())
            cl.close()
            on_us, off_us = statistics.median(on_t) * 1e6, statistics.median(off_t) * 1e6
            return {"guard_us": on_us, "no_guard_us": off_us, "cost_us": on_us - off_us, "writes": len(keys),
                    "rounds": rounds}
        finally:
            _drop(backend, path)


@pytest.mark.parametrize("backend_name", _backends())
def test_guard_cost_per_transaction(benchmark: Any, backend_name: str) -> None:
    """What the shard-key guard of client transactions costs a write
    transaction (SQLite: a function call in a statement after the BEGIN, the
    TEMP triggers' call of a function per row written; PostgreSQL:
    two set_config calls on the transaction's first statement and the
    triggers' check of each statement's rows)."""
    backend = _resolve(backend_name)
    r = _guard_run(1000 if _enabled(benchmark) else 100, 5 if _enabled(benchmark) else 1, backend)
    for k, v in r.items():
        benchmark.extra_info[k] = v
    print(f"\n{backend_name}: write transaction {r['guard_us']:.0f} us with the guard, {r['no_guard_us']:.0f} us "
          f"without (+{r['cost_us']:.0f} us per transaction; median of {r['rounds']} rounds of {r['writes']})")
    assert r["guard_us"] > 0 and r["no_guard_us"] > 0
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def _import_run(n: int, backend: str, root: Path) -> dict[str, float]:
    """1 unsharded SQLite file of ``n`` users -> 4 empty shards (tables created by the import)."""
    import sqlite3

    src = root / "src.db"
    c = sqlite3.connect(src)
    c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER NOT NULL)")
    step = 100_000
    for lo in range(1, n + 1, step):
        c.executemany("INSERT INTO users VALUES (?, ?, 0)", [(k, f"user{k}") for k in range(lo, min(lo + step, n + 1))])
    c.commit()
    c.close()
    shards = ["s0", "s1", "s2", "s3"]
    urls = _shard_urls(backend, shards)
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": u} for s, u in urls.items()},
           "groups": {"users": {"router": JumpRouter(shards).to_dict(), "tables": [{"name": "users", "key": "id"}]}},
           "options": {"synchronous": "NORMAL"}}
    path = root / "cluster.json"
    path.write_text(json.dumps(doc))
    try:
        cl = Cluster.load(path)
        cl.init()
        t0 = time.perf_counter()
        rep = cl.import_from(f"sqlite:{src}", verify=False)
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = cl.import_from(f"sqlite:{src}")  # (a finished import: only the verify runs)
        t_verify = time.perf_counter() - t0
        cl.close()
        assert rep.rows_written == n and again.rows_written == 0 and again.verified
        return {"load_rows_per_s": n / t_load, "verify_rows_per_s": n / t_verify,
                "with_verify_rows_per_s": n / (t_load + t_verify)}
    finally:
        _drop(backend, path)


@pytest.mark.parametrize("backend_name", _backends())
def test_import_rate(benchmark: Any, backend_name: str) -> None:
    """``Cluster.import_from``: an unsharded SQLite database of 1M rows
    (``SHARDHASH_BENCH_IMPORT_ROWS``) loaded onto 4 shards, then verified."""
    backend = _resolve(backend_name)
    n = int(os.environ.get("SHARDHASH_BENCH_IMPORT_ROWS", "1000000")) if _enabled(benchmark) else 2000
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as d:
        r = _import_run(n, backend, Path(d))
    for k, v in r.items():
        benchmark.extra_info[k] = round(v)
    print(f"\n{backend_name}: import of {n:,} rows onto 4 shards: load {r['load_rows_per_s']:,.0f} rows/s, "
          f"verify {r['verify_rows_per_s']:,.0f} rows/s, both {r['with_verify_rows_per_s']:,.0f} rows/s "
          "(target: >= 200k rows/s)")
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def test_check_scan_rate(benchmark: Any) -> None:
    """``Cluster.check``: rows scanned per second for stranded rows (SQLite,
    4 shards, 200,000 users; 1,000 with --benchmark-disable), 10 planted."""
    n = 200_000 if _enabled(benchmark) else 1000
    shards = ["s0", "s1", "s2", "s3"]
    router = JumpRouter(shards)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as d:
        root = Path(d)
        owners = router.route_many(list(range(1, n + 1))).tolist()
        for i, s in enumerate(shards):
            c: Any = open_backend(f"sqlite:{s}.db", root).connect()
            c.execute("CREATE TABLE users (id BIGINT PRIMARY KEY, name TEXT NOT NULL, n BIGINT NOT NULL)")
            c.execute("BEGIN")
            c.executemany("INSERT INTO users VALUES (?, ?, 0)",
                          [(k, f"user{k}") for k, o in zip(range(1, n + 1), owners) if o == i])
            # (planted: keys past the end, on a shard that does not own them)
            c.executemany("INSERT INTO users VALUES (?, 'stray', 0)",
                          [(k,) for k in range(n + 1, n + 11) if router.route(k) != s][:3 if i == 0 else 0])
            c.execute("COMMIT")
            c.close()
        doc = {"metadata": "sqlite:meta.db",
               "shards": {s: {"primary": f"sqlite:{s}.db"} for s in shards},
               "groups": {"users": {"router": router.to_dict(), "tables": [{"name": "users", "key": "id"}]}},
               "options": {"synchronous": "NORMAL"}}
        (root / "cluster.json").write_text(json.dumps(doc))
        cl = Cluster.load(root / "cluster.json")
        cl.init()
        res: dict[str, Any] = {}

        def run() -> None:
            res.update(cl.check())

        benchmark.pedantic(run, rounds=3 if _enabled(benchmark) else 1, iterations=1)
        assert res["stranded"] == 3 and res["rows_scanned"] == n + 3
        benchmark.extra_info["check_rows_per_s"] = round(res["rows_per_s"])
        cl.close()
