"""The metadata store on every backend (SQLite file, PostgreSQL schema, MariaDB database): the
same migrations, the same exclusion of concurrent writers, the same
resume after a SIGKILL at the decision point."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, Migration, MigrationError
from shardhash.migrate.executor import pending_router
from tests._mariadb import need_mysql
from tests._postgres import need_postgres
from tests._support import fork_child as _fork

from ._harness import drop_cluster, make_cluster, shard_rows, upsert

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture(params=["sqlite", "postgres", "mariadb"])
def meta(request: pytest.FixtureRequest) -> str:
    """'sqlite', the DSN of a reachable PostgreSQL server or the URL of a
    reachable MariaDB server (the store's home)."""
    if request.param == "sqlite":
        return "sqlite"
    if request.param == "mariadb":
        return need_mysql()
    return need_postgres()


@pytest.fixture
def mroot(tmp_path: Path, meta: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, meta)




def test_metadata_url_selects_the_store(mroot: Path, meta: str) -> None:
    path = make_cluster(mroot, FOUR, users=10, metadata=meta)
    cl = Cluster.load(path)
    try:
        assert cl.metadata.kind == ("sqlite" if meta == "sqlite" else "mysql" if meta.startswith("mysql://")
                                    else "postgresql")
        assert (mroot / "meta.db").exists() == (meta == "sqlite")
        assert list(cl.router("users").shards) == FOUR
        assert sorted(cl.metadata.shard_map()) == FOUR
    finally:
        cl.close()


def test_migration_end_to_end_with_either_store(mroot: Path, meta: str) -> None:
    path = make_cluster(mroot, FOUR, users=3000, extra_shards=["s4"], metadata=meta)
    cl = Cluster.load(path)
    stop = threading.Event()
    acked: dict[int, int | None] = {}

    def writer() -> None:
        w = Cluster.load(path)
        seq = 0
        try:
            while not stop.is_set():
                seq += 1
                k = 1 + seq * 7 % 3000
                with w.transaction(k) as tx:
                    tx.execute(upsert(tx), (k, "w", seq))
                acked[k] = seq
        finally:
            w.close()

    t = threading.Thread(target=writer)
    t.start()
    try:
        new, _ = plan.add_shards(cl.router("users"), "s4")
        m = Migration.create(cl, "users", new)
        assert m.run(chunk=500) == "retained"
        time.sleep(0.1)
    finally:
        stop.set()
        t.join()
    assert m.cleanup() > 0
    assert m.state == "cleaned"
    cl.refresh("users")
    final = cl.router("users")
    assert final.version == new.version
    seen: dict[int, list[str]] = {}
    for s in FOUR + ["s4"]:
        for k in shard_rows(mroot, s):
            seen.setdefault(k, []).append(s)
    assert len(seen) == 3000
    for k, places in seen.items():
        assert places == [final.route(k)], (k, places)
    for k, v in acked.items():
        row = shard_rows(mroot, final.route(k))[k]
        assert row[2] == v, (k, row, v)
    st = m.status()
    assert st["state"] == "cleaned" and st["rows_copied"] > 0
    assert any("cutover committed" in msg for _, msg in cl.metadata.events(m.id))
    cl.close()


def test_write_transactions_exclude_each_other(mroot: Path, meta: str) -> None:
    """Read-check-write under tx(): no lost update across threads (SQLite's
    write lock; PostgreSQL's row lock of meta_lock)."""
    path = make_cluster(mroot, FOUR, metadata=meta)
    cl = Cluster.load(path)
    cl.metadata.put("m", "counter", 0)
    n_threads, per = 4, 25
    errors: list[BaseException] = []

    def bump() -> None:
        try:
            for _ in range(per):
                with cl.metadata.tx() as c:
                    r = c.execute('SELECT value FROM progress WHERE mig = ? AND "key" = ?', ("m", "counter")).fetchone()
                    v = int(r[0])
                    time.sleep(0.0005)  # widen the window a lost update would need
                    cl.metadata.put("m", "counter", v + 1, c)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            cl.metadata.db.close()

    ts = [threading.Thread(target=bump) for _ in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert cl.metadata.get("m", "counter") == n_threads * per
    cl.close()


def test_failed_transaction_leaves_nothing(mroot: Path, meta: str) -> None:
    path = make_cluster(mroot, FOUR, metadata=meta)
    cl = Cluster.load(path)
    with pytest.raises(RuntimeError):
        with cl.metadata.tx() as c:
            cl.metadata.put("m", "x", 1, c)
            raise RuntimeError("boom")
    assert cl.metadata.get("m", "x") is None
    with cl.metadata.tx() as c:  # the connection is usable again
        cl.metadata.put("m", "x", 2, c)
    assert cl.metadata.get("m", "x") == 2
    cl.close()


def test_fence_breaks_and_upserts_on_every_store(mroot: Path, meta: str) -> None:
    path = make_cluster(mroot, FOUR, metadata=meta)
    cl = Cluster.load(path)
    try:
        m = cl.metadata
        m.put("m", "key", 1)
        m.put("m", "key", 2)  # (an upsert: the row is replaced, the column named key read back)
        assert m.progress("m") == {"key": 2}
        assert m.break_fence("m", 1) == "aborted"
        assert m.break_fence("m", 1) == "aborted"  # (recorded once)
        assert m.fence_aborted(None, "m", 1) and not m.fence_aborted(None, "m", 2)
        assert [msg for _ts, msg in m.events("m")].count(
            "fence attempt 1 aborted by a writer that waited past its deadline") == 1
        with m.tx() as c:
            m.put("m", "committed_at", 1.5, c)
        assert m.break_fence("m", 2) == "committed" and not m.fence_aborted(None, "m", 2)
        with m.tx() as c:
            m.set_shard(c, "s0", "sqlite:elsewhere.db", ["sqlite:r.db"])
        assert m.shard_map()["s0"] == ("sqlite:elsewhere.db", ["sqlite:r.db"])
    finally:
        cl.close()


@pytest.mark.parametrize("point", ["before-commit", "after-commit"])
def test_sigkill_at_the_decision_point_then_resume(mroot: Path, meta: str, point: str) -> None:
    path = make_cluster(mroot, FOUR, users=800, extra_shards=["s4"], metadata=meta)
    cl = Cluster.load(path)
    new, _ = plan.add_shards(cl.router("users"), "s4")
    m = Migration.create(cl, "users", new)
    mig = m.id
    cl.close()

    def body() -> None:
        c2 = Cluster.load(path)
        Migration(c2, mig).run(chunk=100)

    pid = _fork(body, {"SHARDHASH_MIGRATE_CRASH": point})
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    cl = Cluster.load(path)
    m = Migration(cl, mig)
    # The store's commit decided: before it the old version, after it the new.
    assert m.state == ("freezing" if point == "before-commit" else "cutover")
    assert cl.refresh("users").version == (1 if point == "before-commit" else new.version)
    assert m.run() == "retained"
    assert cl.refresh("users").version == new.version
    with cl.transaction(5) as tx:
        tx.execute(upsert(tx), (5, "after", 1))
        assert tx.shard == new.route(5)
    cl.close()


def test_group_check_and_version_check_read_the_store(mroot: Path, meta: str) -> None:
    path = make_cluster(mroot, FOUR, users=50, extra_shards=["s4"], metadata=meta)
    cl = Cluster.load(path)
    new, _ = plan.add_shards(cl.router("users"), "s4")
    with pytest.raises(MigrationError, match="topology version"):
        Migration.create(cl, "users", new, from_version=7)
    m = Migration.create(cl, "users", new)
    # s4 leaves again (planned on top of m's target): the keys m moves.
    other, _ = plan.remove_shards(pending_router(cl, "users"), "s4")
    with pytest.raises(MigrationError, match=f"overlaps unit .* of migration {m.id}"):
        Migration.create(cl, "users", other)
    m.run()
    m.cleanup()
    cl.close()
