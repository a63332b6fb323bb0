"""shardhash.sqlalchemy's fast path, ``ShardedORM.session_for(key)``: a plain
Session on the key's owner, on SQLite files and PostgreSQL schemas -- where
its rows land, the ownership check of its flush (a stale router refused
before anything commits, a frozen key waiting), and the key guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._support import oracle_required

if not oracle_required():  # (in CI a missing SQLAlchemy fails the import below)
    pytest.importorskip("sqlalchemy", reason="pip install 'shardhash[sqlalchemy]'")

from sqlalchemy import delete, insert, select, text, update  # noqa: E402

from shardhash import plan  # noqa: E402
from shardhash.migrate import Cluster, Migration, ShardKeyError, StaleRouteError  # noqa: E402
from shardhash.sqlalchemy import KeySession, ShardedORM  # noqa: E402
from tests.migrate._harness import frozen_key, make_cluster, shard_rows  # noqa: E402

from ._models import Event, User  # noqa: E402
from .test_sharded_session import Executions, commit_waits_out  # noqa: E402

FOUR = ["s0", "s1", "s2", "s3"]


def test_rows_land_on_the_owner_and_reads_ask_it_only(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=40, events=True, backend=backend)
    cl = Cluster.load(path)
    orm = ShardedORM(cl, "users")
    r = cl.router("users")
    ex = Executions(orm.engines)
    for k in range(100, 160):
        with orm.session_for(k) as s, s.begin():
            assert isinstance(s, KeySession) and s.shardhash_shard == r.route(k)
            u = User(id=k, name=f"u{k}", n=k)
            s.add(u)
            s.add(Event(eid=k * 10, user=u, payload="p"))  # (its key through the relationship)
        assert ex.touched() == {r.route(k)}
    placed = {sh: shard_rows(root, sh) for sh in FOUR}
    assert len({sh for sh, rows in placed.items() if any(k >= 100 for k in rows)}) == 4
    for sh, rows in placed.items():
        assert all(r.route(k) == sh for k in rows), sh
        assert all(r.route(e[1]) == sh for e in shard_rows(root, sh, "events").values()), sh
    assert sum(k >= 100 for rows in placed.values() for k in rows) == 60
    # read-modify-write, and a bulk update pinned to the key
    with orm.session_for(7) as s, s.begin():
        u7 = s.get(User, 7)
        assert u7 is not None and u7.name == "u7"
        u7.n = 70
        s.execute(update(User).where(User.id == 7).values(name="seven"))
    assert ex.touched() == {r.route(7)}
    assert shard_rows(root, r.route(7))[7][1:] == ("seven", 70)
    got = orm.run_for(7, lambda s: s.execute(select(User.n).where(User.id == 7)).scalar_one())
    assert got == 70
    orm.dispose()
    cl.close()


def test_a_stale_router_is_refused_before_commit_and_a_refresh_repoints(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=300, extra_shards=["s4"], backend=backend)
    stale = Cluster.load(path)
    orm = ShardedORM(stale, "users")
    old = stale.router("users")
    mover = Cluster.load(path)
    new, _ = plan.add_shards(mover.router("users"), "s4")
    m = Migration.create(mover, "users", new)
    assert m.run() == "retained"
    assert stale.router("users").version == old.version  # (still the cached, stale one)
    k = next(k for k in range(1, 301) if new.route(k) == "s4")
    k_new = next(k for k in range(301, 2000) if new.route(k) == "s4")
    src, src_new = old.route(k), old.route(k_new)
    # an update of a loaded row and the insert of a new row, each on the key's former owner
    with orm.session_for(k) as s:
        assert s.shardhash_shard == src
        u = s.get(User, k)  # (the source keeps its copy after the cutover: reads are not checked)
        assert u is not None
        u.n = 99
        with pytest.raises(StaleRouteError) as ei:
            s.commit()
        assert ei.value.shard == src and ei.value.owner == "s4"
        s.rollback()
    with orm.session_for(k_new) as s:
        assert s.shardhash_shard == src_new
        s.add(User(id=k_new, name="late", n=1))
        with pytest.raises(StaleRouteError):
            s.commit()
    assert shard_rows(root, src)[k][2] == 0 and shard_rows(root, "s4")[k][2] == 0
    assert k_new not in shard_rows(root, src_new) and k_new not in shard_rows(root, "s4")
    assert stale.metrics.stale_errors >= 2
    # run_for refreshes the router and runs the work again on the new owner
    orm.run_for(k_new, lambda s: s.add(User(id=k_new, name="late", n=1)))
    assert shard_rows(root, "s4")[k_new][1] == "late" and k_new not in shard_rows(root, src_new)
    assert stale.router("users").version == new.version
    with orm.session_for(k) as s, s.begin():  # (the refreshed router: the new owner)
        assert s.shardhash_shard == "s4"
        u = s.get(User, k)
        assert u is not None
        u.n = 99
    assert shard_rows(root, "s4")[k][2] == 99 and shard_rows(root, src)[k][2] == 0
    m.cleanup()
    orm.dispose()
    stale.close()
    mover.close()


def test_a_frozen_key_waits_for_the_cutover(root: Path, backend: str) -> None:
    _path, cl, m, _old, _new, k, src = frozen_key(root, backend, 0.3)
    orm = ShardedORM(cl, "users")
    commit_waits_out(orm.session_for(k), k, root, src, 0.3)
    m._set_units(src, "source", ("frozen",), "copying")
    orm.run_for(k, lambda s: s.execute(update(User).where(User.id == k).values(n=7)))
    assert shard_rows(root, src)[k][2] == 7
    assert m.run() == "retained"
    assert shard_rows(root, "s4")[k][2] == 7
    orm.dispose()
    cl.close()


def test_rows_of_another_key_are_refused(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=50, events=True, backend=backend)
    cl = Cluster.load(path)
    orm = ShardedORM(cl, "users")
    r = cl.router("users")
    # (keys on the same shard as key 1: only the key guard refuses them)
    other = next(k for k in range(2, 50) if r.route(k) == r.route(1))
    fresh = next(k for k in range(1000, 5000) if r.route(k) == r.route(1))
    with orm.session_for(1) as s, s.begin():
        s.add(User(id=fresh, name="x", n=0))
        with pytest.raises(ShardKeyError) as ei:
            s.flush()
        assert ei.value.tx_key == 1 and ei.value.table == "users"
        s.rollback()
    with orm.session_for(1) as s:
        u = s.get(User, other)  # (reads go to the key's shard, which holds this row too)
        assert u is not None
        u.n = 5
        with pytest.raises(ShardKeyError):
            s.commit()
        s.rollback()
        u1 = s.get(User, 1)
        assert u1 is not None
        u1.id = 2
        with pytest.raises(ValueError, match="cannot change"):
            s.flush()
        s.rollback()
    with orm.session_for(1) as s, s.begin():
        with pytest.raises(ValueError, match="must pin its shard key"):
            s.execute(update(User).where(User.name == "u1").values(n=1))
        with pytest.raises(ShardKeyError):
            s.execute(delete(User).where(User.id.in_([1, other])))
        with pytest.raises(ValueError, match="INSERT statement"):
            s.execute(insert(User).values(id=other, name="x", n=0))
    with orm.session_for(1) as s, s.begin():
        s.execute(update(User).where(User.id == 1).values(n=11))
        s.execute(text("SELECT 1"))  # (not a write of the group: not refused)
    assert shard_rows(root, r.route(1))[1][2] == 11
    assert shard_rows(root, r.route(1))[other][2] == 0  # (the refused update of another key)
    assert all(k < 50 for k in shard_rows(root, r.route(1)))
    with pytest.raises((TypeError, ValueError)):
        orm.session_for(None)
    orm.dispose()
    cl.close()
