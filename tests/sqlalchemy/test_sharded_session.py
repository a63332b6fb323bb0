"""shardhash.sqlalchemy: SQLAlchemy's ShardedSession on a shardhash cluster, on
SQLite files and PostgreSQL schemas: where flushed rows land, which engines a
query touches, the ownership check inside the ORM's transaction, and a
migration under ORM writers."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests._support import oracle_required

if not oracle_required():  # (in CI a missing SQLAlchemy fails the import below)
    pytest.importorskip("sqlalchemy", reason="pip install 'shardhash[sqlalchemy]'")

from sqlalchemy import bindparam, delete, event, insert, or_, select, update  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

from shardhash import plan  # noqa: E402
from shardhash.migrate import Cluster, FenceTimeout, Migration, StaleRouteError  # noqa: E402
from shardhash.sqlalchemy import ShardedORM  # noqa: E402
from tests.migrate._harness import frozen_key, make_cluster, shard_rows  # noqa: E402

from ._models import Event, User  # noqa: E402

FOUR = ["s0", "s1", "s2", "s3"]


class Executions:
    """Counts the statements each engine runs (engine events)."""

    def __init__(self, engines: dict[str, Engine]) -> None:
        self.counts: Counter[str] = Counter()
        for shard, e in engines.items():
            event.listen(e, "before_cursor_execute", self._hook(shard))

    def _hook(self, shard: str) -> Any:
        def count(*_a: Any) -> None:
            self.counts[shard] += 1
        return count

    def touched(self) -> set[str]:
        out = set(self.counts)
        self.counts.clear()
        return out


def test_every_flushed_row_lands_on_its_owner(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, events=True, backend=backend)
    cl = Cluster.load(path)
    orm = ShardedORM(cl, "users")
    r = cl.router("users")
    with orm.session() as s, s.begin():
        for i in range(1, 201):
            u = User(id=i, name=f"u{i}", n=i)
            s.add(u)
            # the event's shard key comes through its relationship to the user
            s.add(Event(eid=i * 10, user=u, payload="p"))
    placed = {sh: shard_rows(root, sh) for sh in FOUR}
    assert sum(len(v) for v in placed.values()) == 200
    assert len({sh for sh, v in placed.items() if v}) == 4
    for sh, rows in placed.items():
        assert all(r.route(k) == sh for k in rows), sh
        events = shard_rows(root, sh, "events")
        assert sorted(e[1] for e in events.values()) == sorted(rows)
    # the event's key attribute was filled in from the relationship
    with orm.session() as s:
        ev = s.execute(select(Event).where(Event.user_id == 7)).scalar_one()
        assert ev.eid == 70 and ev.user.name == "u7"
    orm.dispose()
    cl.close()


def test_point_queries_touch_one_engine_and_in_lists_only_the_owners(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=400, backend=backend)
    cl = Cluster.load(path)
    r = cl.router("users")
    orm = ShardedORM(cl, "users")
    ex = Executions(orm.engines)
    with orm.session() as s:
        for k in (1, 17, 399):
            u = s.get(User, k)
            assert u is not None and u.name == f"u{k}"
            assert ex.touched() == {r.route(k)}
        assert s.execute(select(User.name).where(User.id == 23)).scalar_one() == "u23"
        assert ex.touched() == {r.route(23)}
        # a bound parameter given at execution
        q = select(User.name).where(User.id == bindparam("uid"))
        assert s.execute(q, {"uid": 41}).scalar_one() == "u41"
        assert ex.touched() == {r.route(41)}
        ids = [3, 5, 8]
        got = s.execute(select(User.id).where(User.id.in_(ids))).scalars().all()
        assert sorted(got) == ids and ex.touched() == {r.route(k) for k in ids}
        # an expanding bound parameter
        q2 = select(User.id).where(User.id.in_(bindparam("ks", expanding=True)))
        assert sorted(s.execute(q2, {"ks": [101, 102]}).scalars()) == [101, 102]
        assert ex.touched() == {r.route(101), r.route(102)}
        # OR of pinned terms: both owners; a term without the key: every shard
        q3 = select(User.id).where(or_(User.id == 9, User.id == 10))
        assert sorted(s.execute(q3).scalars()) == [9, 10] and ex.touched() == {r.route(9), r.route(10)}
        q4 = select(User.id).where(or_(User.id == 9, User.name == "u10"))
        assert sorted(s.execute(q4).scalars()) == [9, 10] and ex.touched() == set(FOUR)
        # AND with another criterion still pins the key
        q5 = select(User.id).where(User.name == "u11", User.id == 11)
        assert s.execute(q5).scalars().all() == [11] and ex.touched() == {r.route(11)}
        assert len(s.execute(select(User)).scalars().all()) == 400 and ex.touched() == set(FOUR)
    orm.dispose()
    cl.close()


def test_stale_router_new_rows_are_rerouted_and_loaded_rows_refused(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=300, extra_shards=["s4"], backend=backend)
    stale = Cluster.load(path)
    orm = ShardedORM(stale, "users")
    old = stale.router("users")
    moved = [k for k in range(1, 301) if plan.add_shards(old, "s4")[0].route(k) == "s4"]
    with orm.session() as s:   # loaded before the migration, through the soon stale router
        loaded = s.get(User, moved[0])
        assert loaded is not None
        mover = Cluster.load(path)
        new, _ = plan.add_shards(mover.router("users"), "s4")
        m = Migration.create(mover, "users", new)
        assert m.run() == "retained"
        assert stale.router("users").version == old.version  # (still the cached, stale one)
        loaded.n = 99
        with pytest.raises(StaleRouteError) as ei:
            s.commit()
        assert ei.value.shard == old.route(moved[0]) and ei.value.owner == "s4"
        s.rollback()
    assert shard_rows(root, "s4")[moved[0]][2] == 0  # nothing written anywhere
    assert shard_rows(root, old.route(moved[0]))[moved[0]][2] == 0
    # a new row of a moved key: refused by the old owner, routed again after a refresh
    k_new = next(k for k in range(301, 2000) if new.route(k) == "s4")
    stale.refresh("users")
    stale._routers["users"] = old  # (make the router stale again, as another process would see it)
    with orm.session() as s, s.begin():
        s.add(User(id=k_new, name="late", n=1))
    assert shard_rows(root, "s4")[k_new][1] == "late"
    assert k_new not in shard_rows(root, old.route(k_new))
    assert stale.router("users").version == new.version and stale.metrics.stale_retries >= 1
    m.cleanup()
    orm.dispose()
    stale.close()
    mover.close()


def commit_waits_out(session: Session, k: int, root: Path, src: str, wait_timeout: float) -> None:
    """A change of user ``k`` committed through ``session`` while k's unit is
    frozen on ``src``: FenceTimeout after ``wait_timeout``, nothing written."""
    t0 = time.perf_counter()
    with session as s:
        u = s.get(User, k)
        assert u is not None
        u.n = 5
        with pytest.raises(FenceTimeout):
            s.commit()
    assert time.perf_counter() - t0 >= wait_timeout
    assert shard_rows(root, src)[k][2] == 0


def test_frozen_keys_wait_for_the_cutover(root: Path, backend: str) -> None:
    path, cl, m, _old, _new, k, src = frozen_key(root, backend, 0.3)
    orm = ShardedORM(cl, "users")
    commit_waits_out(orm.session(), k, root, src, 0.3)
    done: list[str] = []

    def late_writer() -> None:
        c2 = Cluster.load(path, wait_timeout=10)
        o2 = ShardedORM(c2, "users")
        with o2.session() as s2, s2.begin():
            u2 = s2.get(User, k)
            assert u2 is not None
            u2.n = 7
        done.append("ok")
        o2.dispose()
        c2.close()

    t = threading.Thread(target=late_writer)
    t.start()
    time.sleep(0.4)
    assert not done  # (waiting for the freeze, holding no lock)
    m._set_units(src, "source", ("frozen",), "copying")
    t.join()
    assert done == ["ok"] and shard_rows(root, src)[k][2] == 7
    assert m.run() == "retained"
    assert shard_rows(root, "s4")[k][2] == 7
    orm.dispose()
    cl.close()


def test_shard_key_is_immutable_and_bulk_writes_must_pin_keys(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=50, events=True, backend=backend)
    cl = Cluster.load(path)
    r = cl.router("users")
    orm = ShardedORM(cl, "users")
    with orm.session() as s:
        ev = s.get(Event, 700_000)  # (not by its shard key: every shard is asked)
        assert ev is not None and ev.user_id == 7
        ev.user_id = 8
        with pytest.raises(ValueError, match="shard key"):
            s.flush()
        s.rollback()
    with orm.session() as s, s.begin():
        with pytest.raises(ValueError, match="pin its shard keys"):
            s.execute(update(User).where(User.name == "u1").values(n=1))
    ex = Executions(orm.engines)
    with orm.session() as s, s.begin():
        s.execute(update(User).where(User.id.in_([2, 3])).values(n=42))
        s.execute(delete(User).where(User.id == 4))
    assert ex.touched() <= {r.route(2), r.route(3), r.route(4)}
    assert shard_rows(root, r.route(2))[2][2] == 42 and shard_rows(root, r.route(3))[3][2] == 42
    assert 4 not in shard_rows(root, r.route(4))
    orm.dispose()
    cl.close()


def test_a_migration_under_orm_writers_loses_nothing(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=600, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path, retries=5)
    orm = ShardedORM(cl, "users")
    acks: dict[int, int | None] = {}
    errors: list[BaseException] = []
    stop = threading.Event()
    writes = [0, 0, 0]

    def writer(w: int) -> None:
        n = 0
        try:
            while not stop.is_set():
                n += 1
                k = 1 + (n * 6 + w) % 700  # (updates, and inserts of new keys above 600)

                def work(s: Session, k: int = k, n: int = n) -> int | None:
                    # (run again, in a new session, when a row it loaded moved before its flush)
                    u = s.get(User, k)
                    if u is not None and n % 9 == 0:
                        s.delete(u)
                        return None
                    if u is None:
                        s.add(User(id=k, name="w", n=n))
                    else:
                        u.n = n
                    return n

                acks[k] = orm.run(work)
                writes[w] += 1
                time.sleep(0.001)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    new, _ = plan.add_shards(cl.router("users"), "s4")
    m = Migration.create(cl, "users", new)
    assert m.run(chunk=100) == "retained"
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    m.cleanup()
    assert not errors, errors
    assert min(writes) > 0 and sum(writes) >= 30, writes
    final: dict[int, tuple[str, tuple[Any, ...]]] = {}
    for sh in FOUR + ["s4"]:
        for k, row in shard_rows(root, sh).items():
            assert k not in final, (k, sh, final[k][0])  # exactly once
            assert new.route(k) == sh                     # on its owner
            final[k] = (sh, row)
    for k, v in acks.items():
        if v is None:
            assert k not in final
        else:
            assert final[k][1][2] == v
    orm.dispose()
    cl.close()


def test_a_failover_repoints_the_next_session(tmp_path: Path) -> None:
    import shutil

    path = make_cluster(tmp_path, FOUR, users=40)
    cl = Cluster.load(path)
    orm = ShardedORM(cl, "users")
    r = cl.router("users")
    k = next(k for k in range(41, 200) if r.route(k) == "s0")
    with orm.session() as s:
        assert s.get(User, 1) is not None
    orm.dispose()
    shutil.copy(tmp_path / "s0.db", tmp_path / "s0b.db")  # (a promoted replica: the same rows)
    cl.failover("s0", "sqlite:s0b.db")
    with orm.session() as s, s.begin():
        s.add(User(id=k, name="after failover", n=0))
    new_primary = Cluster.load(path)
    assert new_primary.shard_map()["s0"][0] == "sqlite:s0b.db"
    import sqlite3

    with sqlite3.connect(tmp_path / "s0b.db") as c:
        assert c.execute("SELECT name FROM users WHERE id = ?", (k,)).fetchone() == ("after failover",)
    with sqlite3.connect(tmp_path / "s0.db") as c:
        assert c.execute("SELECT 1 FROM users WHERE id = ?", (k,)).fetchone() is None
    orm.dispose()
    cl.close()
    new_primary.close()


def test_an_insert_statement_into_a_group_table_is_refused(root: Path, backend: str) -> None:
    # (it ran on every shard the execute chooser names: a copy of the row on each)
    path = make_cluster(root, FOUR, users=10, backend=backend)
    cl = Cluster.load(path)
    orm = ShardedORM(cl, "users")
    with orm.session() as s, s.begin():
        with pytest.raises(ValueError, match="INSERT statement"):
            s.execute(insert(User).values(id=5000, name="x", n=0))
    assert all(5000 not in shard_rows(root, sh) for sh in FOUR)
    with orm.session() as s, s.begin():  # (instances are routed, and checked, by the flush)
        s.add(User(id=5000, name="x", n=0))
    assert [sh for sh in FOUR if 5000 in shard_rows(root, sh)] == [cl.router("users").route(5000)]
    orm.dispose()
    cl.close()
