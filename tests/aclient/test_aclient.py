"""cluster.atransaction / cluster.aread (shardhash.migrate.aclient) on SQLite
(aiosqlite) and PostgreSQL (psycopg async, psycopg_pool): the same checks as
the sync client, waits that do not block the event loop, and a migration
under async writers."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, FenceTimeout, Migration, ShardKeyError, StaleRouteError
from tests._support import oracle_required
from tests.migrate._harness import UPSERT, drop_cluster, frozen_key, make_cluster, shard_rows

if not oracle_required():  # (in CI a missing driver fails the import below)
    pytest.importorskip("aiosqlite", reason="pip install 'shardhash[async]'")

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    if backend != "sqlite" and not oracle_required():
        pytest.importorskip("psycopg_pool", reason="pip install 'shardhash[async]'")
    yield tmp_path
    drop_cluster(tmp_path, backend)


def test_writes_land_on_the_owner_and_reads_read_them(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, backend=backend)
    cl = Cluster.load(path)
    r = cl.router()

    async def main() -> list[Any]:
        async def one(k: int) -> None:
            async with cl.atransaction(k) as tx:
                await tx.execute(UPSERT, (k, f"u{k}", k))
                assert tx.shard == r.route(k)
        await asyncio.gather(*(one(k) for k in range(1, 121)))
        out = []
        for k in (5, 77):
            async with cl.aread(k) as tx:
                out.append(await tx.fetchone("SELECT name, n FROM users WHERE id = ?", (k,)))
        await cl.aclose()
        return out

    got = asyncio.run(main())
    assert [tuple(x) for x in got] == [("u5", 5), ("u77", 77)]
    for s in FOUR:
        rows = shard_rows(root, s)
        assert rows and all(r.route(k) == s for k in rows)
    assert sum(len(shard_rows(root, s)) for s in FOUR) == 120
    cl.close()


def test_a_stale_router_is_refreshed_and_retried(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=200, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    mover = Cluster.load(path)
    new, _ = plan.add_shards(mover.router(), "s4")
    assert Migration.create(mover, "users", new).run() == "retained"
    k = next(k for k in range(1, 201) if new.route(k) == "s4")

    async def main() -> str:
        async with cl.atransaction(k) as tx:
            await tx.execute("UPDATE users SET n = 9 WHERE id = ?", (k,))
            shard: str = tx.shard
        await cl.aclose()
        return shard

    assert asyncio.run(main()) == "s4"
    assert shard_rows(root, "s4")[k][2] == 9 and shard_rows(root, old.route(k))[k][2] == 0
    assert cl.metrics.stale_retries == 1
    none_left = Cluster.load(path, retries=0)
    none_left._routers["users"] = old

    async def refused() -> None:
        try:
            async with none_left.atransaction(k) as tx:
                await tx.execute("UPDATE users SET n = 10 WHERE id = ?", (k,))
        finally:
            await none_left.aclose()

    with pytest.raises(StaleRouteError):
        asyncio.run(refused())
    cl.close()
    mover.close()
    none_left.close()


def test_a_frozen_key_waits_without_blocking_the_loop(root: Path, backend: str) -> None:
    path, cl, m, _old, _new, k, src = frozen_key(root, backend, 10)
    threading.Timer(0.4, m._set_units, args=(src, "source", ("frozen",), "copying")).start()

    async def main() -> tuple[int, float]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        async def write() -> float:
            t0 = time.perf_counter()
            async with cl.atransaction(k) as tx:
                await tx.execute("UPDATE users SET n = 7 WHERE id = ?", (k,))
            done.set()
            return time.perf_counter() - t0

        t = asyncio.create_task(ticker())
        waited = await write()
        await t
        await cl.aclose()
        return ticks, waited

    ticks, waited = asyncio.run(main())
    assert waited >= 0.3 and ticks >= 10  # (the loop ran other tasks while the write waited)
    assert shard_rows(root, src)[k][2] == 7
    short = Cluster.load(path, wait_timeout=0.2)
    m._set_units(src, "source", ("copying",), "frozen")

    async def times_out() -> None:
        try:
            async with short.atransaction(k) as tx:
                await tx.execute("UPDATE users SET n = 8 WHERE id = ?", (k,))
        finally:
            await short.aclose()

    with pytest.raises(FenceTimeout):
        asyncio.run(times_out())
    assert shard_rows(root, src)[k][2] == 7
    m._set_units(src, "source", ("frozen",), "copying")
    assert m.run() == "retained"
    cl.close()
    short.close()


def test_the_guard_refuses_a_row_of_another_key(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=50, backend=backend)
    cl = Cluster.load(path)
    r = cl.router()
    same = next(k for k in range(2, 50) if r.route(k) == r.route(1))

    async def main() -> None:
        try:
            async with cl.atransaction(1) as tx:
                await tx.execute("UPDATE users SET n = 5 WHERE id = ?", (1,))
                await tx.execute("UPDATE users SET n = 5 WHERE id = ?", (same,))
        finally:
            await cl.aclose()

    with pytest.raises(ShardKeyError):
        asyncio.run(main())
    rows = shard_rows(root, r.route(1))
    assert rows[1][2] == 0 and rows[same][2] == 0
    cl.close()


def test_a_migration_under_async_writers_loses_nothing(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=400, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path, retries=5)
    acks: dict[int, int | None] = {}
    stop = threading.Event()
    counts = [0, 0, 0, 0]

    async def writers() -> None:
        async def writer(w: int) -> None:
            n = 0
            while not stop.is_set():
                n += 1
                k = 1 + (n * 8 + w) % 450
                async with cl.atransaction(k) as tx:
                    if n % 9 == 0:
                        await tx.execute("DELETE FROM users WHERE id = ?", (k,))
                        v = None
                    else:
                        await tx.execute(UPSERT, (k, "w", n))
                        v = n
                acks[k] = v
                counts[w] += 1
                await asyncio.sleep(0.001)
        try:
            await asyncio.gather(*(writer(w) for w in range(4)))
        finally:
            await cl.aclose()

    t = threading.Thread(target=asyncio.run, args=(writers(),))
    t.start()
    time.sleep(0.2)
    mover = Cluster.load(path)
    new, _ = plan.add_shards(mover.router(), "s4")
    m = Migration.create(mover, "users", new)
    assert m.run(chunk=100) == "retained"
    time.sleep(0.2)
    stop.set()
    t.join()
    m.cleanup()
    assert min(counts) > 0 and sum(counts) >= 40, counts
    final: dict[int, tuple[Any, ...]] = {}
    for s in FOUR + ["s4"]:
        for k, row in shard_rows(root, s).items():
            assert k not in final and new.route(k) == s, (k, s)
            final[k] = row
    for k, v in acks.items():
        if v is None:
            assert k not in final
        else:
            assert final[k][2] == v
    cl.close()
    mover.close()


def test_a_read_is_one_snapshot_and_a_block_without_statements_touches_nothing(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=20, backend=backend)
    cl = Cluster.load(path)
    other = Cluster.load(path)

    async def main() -> tuple[Any, Any, Any, str]:
        try:
            async with cl.aread(3) as tx:
                first = await tx.fetchone("SELECT n FROM users WHERE id = ?", (3,))
                # a write committed meanwhile (another client): this read's snapshot does not see it
                await asyncio.to_thread(_update_n, other, 3, 41)
                again = await tx.fetchone("SELECT n FROM users WHERE id = ?", (3,))
            async with cl.aread(3) as tx:
                after = await tx.fetchone("SELECT n FROM users WHERE id = ?", (3,))
            async with cl.atransaction(4) as tx:
                shard = tx.shard  # (no statement: no transaction, nothing to commit)
            return first, again, after, shard
        finally:
            await cl.aclose()

    first, again, after, shard = asyncio.run(main())
    assert (first[0], again[0], after[0]) == (0, 0, 41)
    assert shard == cl.router().route(4)
    assert cl.metrics.stale_retries == 0
    cl.close()
    other.close()


def _update_n(cl: Cluster, k: int, n: int) -> None:
    with cl.transaction(k) as tx:
        tx.execute("UPDATE users SET n = ? WHERE id = ?", (n, k))


def test_a_cancelled_wait_for_a_connection_leaks_none(root: Path, backend: str) -> None:
    from shardhash.migrate.aclient import client_of

    path = make_cluster(root, FOUR, users=20, backend=backend)
    cl = Cluster.load(path)
    r = cl.router()
    same = [k for k in range(1, 21) if r.route(k) == r.route(1)][:3]

    async def main() -> list[Any]:
        client_of(cl, pool_size=1)
        held = asyncio.Event()
        go = asyncio.Event()

        async def holder() -> None:
            async with cl.atransaction(same[0]) as tx:
                await tx.execute("UPDATE users SET n = 1 WHERE id = ?", (same[0],))
                held.set()
                await go.wait()

        async def waiter(k: int) -> None:
            async with cl.atransaction(k) as tx:
                await tx.execute("UPDATE users SET n = 2 WHERE id = ?", (k,))

        try:
            h = asyncio.create_task(holder())
            await held.wait()
            w = asyncio.create_task(waiter(same[1]))
            await asyncio.sleep(0.05)
            w.cancel()  # (waiting for the only connection)
            go.set()
            await h
            with pytest.raises(asyncio.CancelledError):
                await w
            # the connection went back to the pool: the next transaction gets it
            await asyncio.wait_for(waiter(same[2]), 10)
            out = []
            for k in same:
                async with cl.aread(k) as tx:
                    out.append((await tx.fetchone("SELECT n FROM users WHERE id = ?", (k,)))[0])
            return out
        finally:
            await cl.aclose()

    assert asyncio.run(main()) == [1, 0, 2]
    cl.close()


def test_a_write_checked_against_outdated_cached_records_is_rolled_back_and_rerouted(root: Path,
                                                                                      backend: str) -> None:
    """The first statement goes with the check against the cached ownership
    records; when a migration changed them since, that statement's effects
    are rolled back on the old shard and it runs on the new owner."""
    path = make_cluster(root, FOUR, users=200, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    k = next(k for k in range(1, 201) if new.route(k) == "s4")
    src = old.route(k)
    warm = next(j for j in range(1, 201) if old.route(j) == src and new.route(j) == src)

    async def write(key: int, n: int) -> str:
        async with cl.atransaction(key) as tx:
            cur = await tx.execute("UPDATE users SET n = ? WHERE id = ?", (n, key))
            assert cur.rowcount == 1
            return str(tx.shard)

    async def main() -> tuple[str, str]:
        try:
            first = await write(warm, 3)  # (the client caches src's records now)
            mover = Cluster.load(path)
            assert Migration.create(mover, "users", new).run() == "retained"
            mover.close()
            return first, await write(k, 9)
        finally:
            await cl.aclose()

    assert asyncio.run(main()) == (src, "s4")
    assert shard_rows(root, "s4")[k][2] == 9 and shard_rows(root, src)[k][2] == 0
    assert shard_rows(root, src)[warm][2] == 3
    assert cl.metrics.stale_retries == 1
    cl.close()


def test_a_stale_router_is_refused_when_the_cached_records_are_current(root: Path, backend: str) -> None:
    """The usual request is checked against ownership records cached at the
    shard's current epoch, in the same job as its statement: a router that
    predates a finished migration is refused for a moved key (its retained
    copy on the old shard is never read or written) even though nothing
    had to be read again."""
    path = make_cluster(root, FOUR, users=200, extra_shards=["s4"], backend=backend)
    mover = Cluster.load(path)
    old = mover.router()
    new, _ = plan.add_shards(old, "s4")
    assert Migration.create(mover, "users", new).run() == "retained"
    mover.close()
    k = next(k for k in range(1, 201) if new.route(k) == "s4")
    src = old.route(k)
    stay = next(j for j in range(1, 201) if old.route(j) == src and new.route(j) == src)
    stale = Cluster.load(path, retries=0)
    stale._routers["users"] = old
    retrying = Cluster.load(path, retries=1)
    retrying._routers["users"] = old

    async def main() -> list[Any]:
        out: list[Any] = []
        try:
            for cl in (stale, retrying):  # (each caches the source's current records first)
                async with cl.aread(stay) as tx:
                    out.append((await tx.fetchone("SELECT n FROM users WHERE id = ?", (stay,)))[0])
                async with cl.atransaction(stay) as tx:
                    await tx.execute("UPDATE users SET n = 3 WHERE id = ?", (stay,))
                    out.append(tx.shard)
            for write in (False, True):
                try:
                    async with stale.atransaction(k) if write else stale.aread(k) as tx:
                        if write:
                            await tx.execute("UPDATE users SET n = 9 WHERE id = ?", (k,))
                        else:
                            await tx.fetchone("SELECT n FROM users WHERE id = ?", (k,))
                    out.append("not refused")
                except StaleRouteError as e:
                    out.append((e.shard, e.owner))
            async with retrying.aread(k) as tx:
                await tx.execute("SELECT 1")
                out.append(tx.shard)
            async with retrying.atransaction(k) as tx:
                cur = await tx.execute("UPDATE users SET n = 8 WHERE id = ?", (k,))
                out.append((tx.shard, cur.rowcount))
        finally:
            await stale.aclose()
            await retrying.aclose()
        return out

    got = asyncio.run(main())
    assert got == [0, src, 3, src, (src, "s4"), (src, "s4"), "s4", ("s4", 1)]
    assert shard_rows(root, src)[k][2] == 0 and shard_rows(root, "s4")[k][2] == 8
    assert stale.metrics.stale_errors == 2 and retrying.metrics.stale_retries == 1  # (then refreshed)
    stale.close()
    retrying.close()


def test_a_failover_reaches_the_async_client(tmp_path: Path) -> None:
    """The client caches each shard's pool under the cluster's shard map: a
    failover replaces the map, and the next transaction uses the new
    primary."""
    import sqlite3

    path = make_cluster(tmp_path, FOUR, users=20)
    cl = Cluster.load(path)
    s = cl.router().route(1)

    async def write(n: int) -> None:
        async with cl.atransaction(1) as tx:
            await tx.execute("UPDATE users SET n = ? WHERE id = ?", (n, 1))

    async def main() -> int:
        try:
            await write(1)
            with sqlite3.connect(tmp_path / f"{s}.db") as a, sqlite3.connect(tmp_path / "promoted.db") as b:
                a.backup(b)
            cl.failover(s, "sqlite:promoted.db")
            await write(2)
            async with cl.aread(1) as tx:
                return int((await tx.fetchone("SELECT n FROM users WHERE id = ?", (1,)))[0])
        finally:
            await cl.aclose()

    assert asyncio.run(main()) == 2
    with sqlite3.connect(tmp_path / f"{s}.db") as a, sqlite3.connect(tmp_path / "promoted.db") as b:
        assert a.execute("SELECT n FROM users WHERE id = 1").fetchone()[0] == 1
        assert b.execute("SELECT n FROM users WHERE id = 1").fetchone()[0] == 2
    cl.close()


def test_a_writer_past_a_dead_executors_fence_deadline_goes_on(root: Path, backend: str) -> None:
    """As the sync client (tests/migrate/test_fence_deadline.py): the executor
    killed after its freeze, an async write waits about the fence timeout
    (not wait_timeout), the metadata store aborts the attempt and the write
    lands on the source; the resumed executor carries it to the destination."""
    from tests.migrate.test_fence_deadline import FENCE, _killed_at, _setup

    path, initial, new, k = _setup(root, backend)  # (wait_timeout 30 s: the old client waited it out)
    _killed_at(path, "m0", "after-freeze")
    cl = Cluster.load(path)

    async def write(n: int) -> tuple[str, float]:
        t0 = time.perf_counter()
        async with cl.atransaction(k) as tx:
            await tx.execute("UPDATE users SET n = ? WHERE id = ?", (n, k))
            shard: str = tx.shard
        return shard, time.perf_counter() - t0

    async def main() -> tuple[tuple[str, float], tuple[str, float]]:
        first = await write(7)
        second = await write(8)
        await cl.aclose()
        return first, second

    (shard, pause), (shard2, pause2) = asyncio.run(main())
    assert shard == initial.route(k) and FENCE * 0.5 < pause < FENCE + 2.0, (shard, pause)
    assert shard2 == initial.route(k) and pause2 < FENCE, (shard2, pause2)
    assert cl.metadata.get("m0", "fence_aborted:1") is not None
    assert Migration(cl, "m0").run(fence_timeout=FENCE) == "retained"
    assert shard_rows(root, new.route(k))[k][2] == 8
    cl.close()
