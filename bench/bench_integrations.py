"""Per-request overhead of the ORM integrations against the same ORM on one
unsharded SQLite database (target: <= 15% with the router and the ownership
check included).

* SQLAlchemy (``shardhash.sqlalchemy.ShardedORM``, 4 SQLite shards under a
  jump router: its ``ShardedSession``, ``orm.session()``, and the fast path
  ``orm.session_for(key)``) against a plain ``Session`` on one SQLite file,
  and SQLAlchemy's own ``ShardedSession`` with constant choosers on that
  file: a point read (a new session, ``session.get``, close), a point
  insert (a new session, ``add``, commit) and a read-modify-write (``get``,
  change, commit);
* Django (``shardhash.django``: ``ShardRouter`` and ``sharded_atomic``)
  against ``.using(alias)`` and ``transaction.atomic`` on one SQLite
  database: a point read and a point update; it runs in a child process of
  its own (Django's settings are per process; bench/_django_overhead.py);
* the asyncio client (``cluster.aread`` / ``cluster.atransaction``) against
  aiosqlite on one SQLite file: a point read and a point update (wall and
  CPU time, the median of the rounds' overheads and their range).

Every database: WAL, synchronous NORMAL, the same table of 2,000 rows.  Each
figure is the best of several rounds of N requests run in alternation with
the baseline (CPU time: SQLite runs in the process).  With
``--benchmark-disable`` (the default) the rounds are tiny and each benchmark
runs once as a plain test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench._timing import alternating_best, enabled
from shardhash import JumpRouter
from tests._support import child_env, oracle_required

if not oracle_required():  # (in CI a missing SQLAlchemy fails the import below)
    pytest.importorskip("sqlalchemy", reason="pip install 'shardhash[sqlalchemy]'")

from sqlalchemy import BigInteger, Text, create_engine, event  # noqa: E402
from sqlalchemy.ext.horizontal_shard import ShardedSession  # noqa: E402
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker  # noqa: E402

from shardhash.migrate import Cluster  # noqa: E402
from shardhash.sqlalchemy import ShardedORM  # noqa: E402

SHARDS = ["s0", "s1", "s2", "s3"]
ROWS = 2000


class Base(DeclarativeBase):
    pass


class Account(Base):
    __tablename__ = "accounts"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(Text)
    n: Mapped[int] = mapped_column(BigInteger)


def _cluster(root: Path) -> Cluster:
    import sqlite3

    r = JumpRouter(SHARDS)
    for s in SHARDS:
        with sqlite3.connect(root / f"{s}.db") as c:
            c.execute("CREATE TABLE accounts (id BIGINT PRIMARY KEY, name TEXT, n BIGINT)")
            c.executemany("INSERT INTO accounts VALUES (?, ?, 0)",
                          [(k, f"a{k}") for k in range(1, ROWS + 1) if r.route(k) == s])
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": f"sqlite:{s}.db"} for s in SHARDS},
           "groups": {"accounts": {"router": r.to_dict(), "key_type": "int",
                                   "tables": [{"name": "accounts", "key": "id"}]}},
           "options": {"synchronous": "NORMAL"}}
    cl = Cluster.from_dict(doc, base_dir=root)
    cl.init()
    return cl


def _plain_engine(root: Path) -> Any:
    e = create_engine(f"sqlite:///{root / 'plain.db'}")

    @event.listens_for(e, "connect")
    def _connect(dbapi_conn: Any, _rec: Any) -> None:
        dbapi_conn.execute("PRAGMA journal_mode=WAL")
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    Base.metadata.create_all(e)
    with Session(e) as s, s.begin():
        s.add_all([Account(id=k, name=f"a{k}", n=0) for k in range(1, ROWS + 1)])
    return e


def test_sqlalchemy_overhead(benchmark: Any, tmp_path: Path) -> None:
    cl = _cluster(tmp_path)
    orm = ShardedORM(cl, "accounts")
    plain = _plain_engine(tmp_path)
    n, rounds = (400, 7) if enabled(benchmark) else (5, 1)
    keys = [1 + (i * 7919) % ROWS for i in range(n)]
    fresh = iter(range(10**6, 10**9))

    # (make(key): a session for a request on that key; only session_for uses it)
    def read(make: Any) -> Any:
        def run() -> None:
            for k in keys:
                with make(k) as s:
                    s.get(Account, k)
        return run

    def insert(make: Any) -> Any:
        def run() -> None:
            for _ in keys:
                k = next(fresh)
                with make(k) as s, s.begin():
                    s.add(Account(id=k, name="x", n=0))
        return run

    def rmw(make: Any) -> Any:
        def run() -> None:
            for k in keys:
                with make(k) as s, s.begin():
                    a = s.get(Account, k)
                    assert a is not None
                    a.n += 1
        return run

    def plain_session(_k: Any) -> Session:
        return Session(plain)

    # SQLAlchemy's own ShardedSession over the one plain database, every chooser a constant:
    # what the horizontal_shard extension costs by itself
    sa_maker = sessionmaker(class_=ShardedSession, shards={"p": plain},
                            shard_chooser=lambda *a, **k: "p", identity_chooser=lambda *a, **k: ["p"],
                            execute_chooser=lambda ctx: ["p"])

    def sa_sharded(_k: Any) -> Session:
        return sa_maker()

    def sharded(_k: Any) -> Session:
        return orm.session()

    out: dict[str, float] = {}
    for name, op in (("point read", read), ("point insert", insert), ("read-modify-write", rmw)):
        t = alternating_best({"plain": op(plain_session), "ShardedSession": op(sa_sharded),
                              "shardhash": op(sharded), "session_for": op(orm.session_for)}, repeat=rounds)
        over = t["shardhash"] / t["plain"] - 1
        out[name] = over
        out[name + " (ShardedSession alone)"] = t["ShardedSession"] / t["plain"] - 1
        out[name + " (session_for)"] = t["session_for"] / t["plain"] - 1
        print(f"\nSQLAlchemy {name}: plain Session {t['plain'] / n * 1e6:.1f} us, ShardedSession with constant "
              f"choosers {t['ShardedSession'] / n * 1e6:.1f} us ({t['ShardedSession'] / t['plain'] - 1:+.1%}), "
              f"shardhash ShardedSession {t['shardhash'] / n * 1e6:.1f} us ({over:+.1%}), "
              f"session_for {t['session_for'] / n * 1e6:.1f} us ({t['session_for'] / t['plain'] - 1:+.1%}) "
              "per request")
    benchmark.extra_info.update({k: round(v, 4) for k, v in out.items()})
    benchmark.pedantic(read(sharded), rounds=rounds, iterations=1)  # (its table: the sharded point reads)
    orm.dispose()
    plain.dispose()
    cl.close()


def test_django_overhead(benchmark: Any, tmp_path: Path) -> None:
    if not oracle_required():
        pytest.importorskip("django", reason="pip install 'shardhash[django]'")
    n, rounds = (400, 7) if enabled(benchmark) else (5, 1)
    script = Path(__file__).resolve().parent / "_django_overhead.py"

    def child() -> Any:
        return subprocess.run([sys.executable, str(script), str(tmp_path), str(n), str(rounds)], env=child_env(),
                              capture_output=True, text=True, timeout=600)

    res = benchmark.pedantic(child, rounds=1, iterations=1)  # (its table: the whole child run)
    assert res.returncode == 0, res.stderr
    t = json.loads(res.stdout.strip().splitlines()[-1])
    for name in ("point read", "point update"):
        over = t[name]["sharded"] / t[name]["plain"] - 1
        benchmark.extra_info[name] = round(over, 4)
        extra = ""
        if "sharded, guard=False" in t[name]:
            u = t[name]["sharded, guard=False"]
            extra = f"; guard=False {u / n * 1e6:.1f} us ({u / t[name]['plain'] - 1:+.1%})"
        print(f"\nDjango {name}: plain {t[name]['plain'] / n * 1e6:.1f} us, sharded "
              f"{t[name]['sharded'] / n * 1e6:.1f} us per request ({over:+.1%}){extra}")


def test_async_client_overhead(benchmark: Any, tmp_path: Path) -> None:
    """cluster.aread / cluster.atransaction (4 SQLite shards, aiosqlite) against
    aiosqlite on one unsharded file: a point read and a point update, one
    request at a time on one event loop.  Rounds of N requests alternate
    with the baseline; each round gives a wall time and a CPU time (the
    process's, so aiosqlite's threads count too), and the overhead reported
    is the median of the rounds' overheads with their range (thread hops on
    a shared machine spread widely: a best-of would flatter one side)."""
    if not oracle_required():
        pytest.importorskip("aiosqlite", reason="pip install 'shardhash[async]'")
    import asyncio
    import statistics
    import time

    import aiosqlite

    cl = _cluster(tmp_path)
    _plain_engine(tmp_path).dispose()
    n, rounds = (200, 31) if enabled(benchmark) else (5, 1)
    keys = [1 + (i * 7919) % ROWS for i in range(n)]
    Times = dict[str, dict[str, list[tuple[float, float]]]]

    async def main() -> Times:
        plain = await aiosqlite.connect(str(tmp_path / "plain.db"), isolation_level=None)
        await plain.execute("PRAGMA synchronous=NORMAL")

        async def read_plain() -> None:
            for k in keys:
                cur = await plain.execute("SELECT name FROM accounts WHERE id = ?", (k,))
                await cur.fetchone()

        async def read_sharded() -> None:
            for k in keys:
                async with cl.aread(k) as tx:
                    await tx.fetchone("SELECT name FROM accounts WHERE id = ?", (k,))

        async def upd_plain() -> None:
            for k in keys:
                await plain.execute("BEGIN IMMEDIATE")
                await plain.execute("UPDATE accounts SET n = n + 1 WHERE id = ?", (k,))
                await plain.execute("COMMIT")

        async def upd_sharded() -> None:
            for k in keys:
                async with cl.atransaction(k) as tx:
                    await tx.execute("UPDATE accounts SET n = n + 1 WHERE id = ?", (k,))

        async def hop() -> None:  # (one trivial statement: what a hop to aiosqlite's thread costs now)
            for _ in keys:
                await plain.execute("SELECT 1")

        out: Times = {}
        for name, fns in (("point read", {"plain": read_plain, "sharded": read_sharded}),
                          ("point update", {"plain": upd_plain, "sharded": upd_sharded}),
                          ("SELECT 1", {"plain": hop})):
            for f in fns.values():
                await f()  # (warm: connections, statement caches, the ownership records)
            got: dict[str, list[tuple[float, float]]] = {k: [] for k in fns}
            for _ in range(rounds):
                for k, f in fns.items():
                    t0, c0 = time.perf_counter(), time.process_time()
                    await f()
                    got[k].append((time.perf_counter() - t0, time.process_time() - c0))
            out[name] = got
        await plain.close()
        await cl.aclose()
        return out

    t = benchmark.pedantic(lambda: asyncio.run(main()), rounds=1, iterations=1)  # (its table: the whole run)
    hops = [r[0] / n * 1e6 for r in t.pop("SELECT 1")["plain"]]
    print(f"\naiosqlite SELECT 1 (one hop to its thread and back): {statistics.median(hops):.1f} us "
          f"({min(hops):.1f}-{max(hops):.1f}) wall time")
    for name, v in t.items():
        for j, clock in enumerate(("wall", "CPU")):
            p = [r[j] / n * 1e6 for r in v["plain"]]
            s = [r[j] / n * 1e6 for r in v["sharded"]]
            over = [b / a - 1 for a, b in zip(p, s)]
            med = statistics.median(over)
            if j == 0:
                benchmark.extra_info[name] = round(med, 4)
            print(f"\nasync client {name} ({clock} time, median of {rounds} rounds of {n} and range): aiosqlite "
                  f"on one file {statistics.median(p):.1f} us ({min(p):.1f}-{max(p):.1f}), cluster "
                  f"{statistics.median(s):.1f} us ({min(s):.1f}-{max(s):.1f}) per request; overhead {med:+.1%} "
                  f"({min(over):+.1%} to {max(over):+.1%})")
    cl.close()
