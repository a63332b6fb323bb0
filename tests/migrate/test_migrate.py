"""shardhash.migrate on SQLite: the protocol end to end, stale routers,
rollback, failover, bad input."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter, RingRouter, Router, plan
from shardhash.migrate import Cluster, Migration, MigrationError, StaleRouteError, VerifyMismatch
from tests._support import present

from ._harness import connect, drop_cluster, frozen_key, make_cluster, shard_rows, upsert

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def owners_ok(root: Path, router: Router, shards: Iterable[str], *, exact: bool) -> dict[int, tuple[Any, ...]]:
    """Every row is on the shard the router names; with exact, nowhere else."""
    seen: dict[int, list[tuple[str, tuple[Any, ...]]]] = {}
    for s in shards:
        for k, row in shard_rows(root, s).items():
            seen.setdefault(k, []).append((s, row))
    for k, places in seen.items():
        owner = router.route(k)
        assert owner in [p[0] for p in places], (k, owner, places)
        if exact:
            assert len(places) == 1, (k, places)
    return {k: dict(p)[router.route(k)] for k, p in seen.items()}


def test_jump_four_to_five_moves_exactly_the_planned_keys(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=3000, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new, max_step_share=0.05)
    assert m.run(chunk=300) == "retained"
    assert cl.refresh().version == new.version == old.version + 1
    before = {k for s in FOUR for k in shard_rows(root, s)}
    rows = owners_ok(root, new, FOUR + ["s4"], exact=False)
    assert set(rows) == before == set(range(1, 3001))
    moved = {k for k in before if old.route(k) != new.route(k)}
    assert set(shard_rows(root, "s4")) == moved
    st = m.status()
    assert st["rows_copied"] == len(moved) and st["verify"]["mismatches"] == 0
    assert m.cleanup() == len(moved)
    owners_ok(root, new, FOUR + ["s4"], exact=True)
    cl.close()


class LiveWriters:
    """Writer threads upserting and deleting users (with an event row per
    upsert) through the cluster's client until stopped; ``acks`` holds every
    acknowledged final value (None: deleted), ``writes`` each writer's count
    of acknowledged writes."""

    def __init__(self, cl: Cluster, n: int, keys: int) -> None:
        self.cl, self.keys = cl, keys
        self.acks: dict[int, object] = {}
        self.errors: list[BaseException] = []
        self.writes = [0] * n
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._write, args=(w, n)) for w in range(n)]

    def _write(self, wid: int, n_writers: int) -> None:
        n = 0
        try:
            while not self.stop.is_set():
                k = 1 + (n * n_writers * 2 + wid) % self.keys
                n += 1
                with self.cl.transaction(k) as tx:
                    if n % 7 == 0:
                        tx.execute("DELETE FROM users WHERE id = ?", (k,))
                        v = None
                    else:
                        tx.execute(upsert(tx), (k, "w", n))
                        tx.execute("INSERT INTO events VALUES (?, ?, ?)", (k * 100_000 + n, k, f"p{n}"))
                        v = n
                self.acks[k] = v
                self.writes[wid] += 1
                time.sleep(0.001)  # (writers that outpace catch-up would only delay the fence)
        except BaseException as e:  # noqa: BLE001
            self.errors.append(e)

    def __enter__(self) -> LiveWriters:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()

    def check(self, root: Path, router: Router, shards: list[str], min_writes: int = 50) -> None:
        """Every writer wrote, at least ``min_writes`` writes were acknowledged
        in all (fewer: the writers did not really run alongside the
        migration), every acknowledged write is on its owner exactly once,
        and every event row is on its user's owner."""
        assert not self.errors, self.errors
        assert min(self.writes) > 0 and sum(self.writes) >= min_writes, f"acknowledged writes {self.writes}"
        final = owners_ok(root, router, shards, exact=True)
        for k, v in self.acks.items():
            if v is None:
                assert k not in final
            else:
                assert final[k][2] == v
        for s in shards:
            for _, uid, _ in shard_rows(root, s, "events").values():
                assert router.route(uid) == s


def test_ring_with_two_tables_and_live_writes(root: Path, backend: str) -> None:
    ring = RingRouter(FOUR, vnodes=16)
    path = make_cluster(root, FOUR, ring, users=2000, events=True, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path, retries=5)
    new, _ = plan.add_shards(ring, "s4")
    with LiveWriters(cl, 4, 2500) as w:
        time.sleep(0.3)
        m = Migration.create(cl, "users", new)
        assert m.run(chunk=200) == "retained"
        time.sleep(0.3)
    m.cleanup()
    w.check(root, new, FOUR + ["s4"])
    assert cl.metrics.snapshot()["stale_errors"] == 0
    cl.close()


def test_stale_router_gets_stale_route_error_then_retries(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=500, extra_shards=["s4"], backend=backend)
    stale = Cluster.load(path, retries=0)
    old = stale.router()  # cached: never refreshed by this client
    cl = Cluster.load(path)
    new, _ = plan.add_shards(old, "s4")
    Migration.create(cl, "users", new).run()
    moved = [k for k in range(1, 501) if old.route(k) != new.route(k)]
    assert moved
    for k in moved:
        with pytest.raises(StaleRouteError) as ei:
            with stale.transaction(k) as tx:
                tx.execute("UPDATE users SET n = -1 WHERE id = ?", (k,))
        e = ei.value
        assert (e.key, e.used_version, e.current_version, e.owner) == (k, old.version, new.version, new.route(k))
        assert e.shard == old.route(k)
        stale._routers[stale.group().name] = old  # stay stale
    assert all(r[2] != -1 for s in FOUR for r in shard_rows(root, s).values())
    # with retries, the client refreshes and lands on the new owner
    retry = Cluster.load(path, retries=2)
    retry._routers["users"] = old
    with retry.transaction(moved[0]) as tx:
        tx.execute("UPDATE users SET n = 7 WHERE id = ?", (moved[0],))
        assert tx.shard == new.route(moved[0])
    assert retry.metrics.stale_retries == 1
    for c in (stale, cl, retry):
        c.close()


def test_rollback_after_cutover_replays_destination_writes(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=800, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new)
    m.run()
    moved = [k for k in range(1, 801) if old.route(k) != new.route(k)]
    # writes accepted by the destination after the cutover
    for k in moved[:20]:
        with cl.transaction(k) as tx:
            assert tx.shard == "s4"
            tx.execute("UPDATE users SET n = 99 WHERE id = ?", (k,))
    for k in moved[20:25]:
        with cl.transaction(k) as tx:
            tx.execute("DELETE FROM users WHERE id = ?", (k,))
    with cl.transaction(100_001) as tx:
        tx.execute("INSERT INTO users VALUES (?, 'new', 5)", (100_001,))
    assert m.rollback() == "rolled-back"
    back = cl.refresh()
    assert back.version == new.version + 1 and back.shards == old.shards
    rev = Migration(cl, m.id + "-rollback")
    assert rev.state == "retained"
    rev.cleanup()
    final = owners_ok(root, back, FOUR + ["s4"], exact=True)
    assert not shard_rows(root, "s4")
    for k in moved[:20]:
        assert final[k][2] == 99
    for k in moved[20:25]:
        assert k not in final
    if old.route(100_001) != new.route(100_001):
        assert final[100_001][2] == 5
    cl.close()


def test_rollback_before_cutover_leaves_the_source_untouched(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=600, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    before = {s: shard_rows(root, s) for s in FOUR}
    new, _ = plan.add_shards(cl.router(), "s4")
    m = Migration.create(cl, "users", new)
    assert m.run(cutover=False) == "catching-up"
    assert shard_rows(root, "s4")
    assert m.rollback() == "rolled-back"
    assert {s: shard_rows(root, s) for s in FOUR} == before
    assert not shard_rows(root, "s4")
    assert cl.refresh().version == 1
    with cl.transaction(5) as tx:  # no fence left behind
        tx.execute("UPDATE users SET n = 1 WHERE id = 5")
    cl.close()


def test_verify_lists_the_first_differing_keys(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=600, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    old = cl.router()
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new)
    m.run(cutover=False)
    moved = sorted(k for k in range(1, 601) if old.route(k) != new.route(k))
    c = connect(root, "s4")
    c.execute("UPDATE users SET name = 'corrupt' WHERE id = ?", (moved[3],))  # behind the executor's back
    c.execute("DELETE FROM users WHERE id = ?", (moved[5],))
    c.close()
    with pytest.raises(VerifyMismatch) as ei:
        m.verify()
    assert sorted(d["pk"][0] for d in ei.value.diffs) == sorted([moved[3], moved[5]])
    assert m.state == "verify-failed"
    assert cl.refresh().version == old.version  # no cutover after a mismatch
    cl.close()


def test_failover_changes_only_the_shard_map(tmp_path: Path) -> None:
    import shutil

    path = make_cluster(tmp_path, FOUR, users=400)
    cl = Cluster.load(path)
    r0 = cl.router()
    routes = [r0.route(k) for k in range(1, 401)]
    topo = cl.metadata.topology("users")
    shutil.copy(tmp_path / "s2.db", tmp_path / "s2-replica.db")
    cl.failover("s2", "sqlite:s2-replica.db")
    assert cl.metadata.topology("users") == topo
    r1 = cl.refresh()
    assert r1 == r0 and r1.version == r0.version
    assert [r1.route(k) for k in range(1, 401)] == routes
    k = next(k for k in range(1, 401) if routes[k - 1] == "s2")
    with cl.transaction(k) as tx:
        tx.execute("UPDATE users SET n = 42 WHERE id = ?", (k,))
    def n_of(name: str) -> int:
        c = sqlite3.connect(tmp_path / f"{name}.db")
        try:
            return int(c.execute("SELECT n FROM users WHERE id = ?", (k,)).fetchone()[0])
        finally:
            c.close()

    assert n_of("s2-replica") == 42 and n_of("s2") == 0
    assert cl.shard_map()["s2"][0] == "sqlite:s2-replica.db"
    cl.close()


def test_bad_input_is_refused_with_a_clear_error(root: Path, backend: str) -> None:
    path = make_cluster(root, FOUR, users=50, extra_shards=["s4"], backend=backend)
    cl = Cluster.load(path)
    new, _ = plan.add_shards(cl.router(), "s4")
    with pytest.raises(MigrationError, match="made from topology version 7"):
        Migration.create(cl, "users", new, from_version=7)
    with pytest.raises(MigrationError, match="must be greater"):
        Migration.create(cl, "users", cl.router())
    bad = JumpRouter(FOUR + ["nowhere"], version=2)
    with pytest.raises(MigrationError, match="not in the shard map"):
        Migration.create(cl, "users", bad)
    m = Migration.create(cl, "users", new)
    with pytest.raises(MigrationError, match="held by migration"):
        Migration.create(cl, "users", new)
    m.rollback()
    # a shard-key column of the wrong type: the group declares text keys
    doc = json.loads(path.read_text())
    doc["groups"]["users"]["key_type"] = "str"
    path.write_text(json.dumps(doc))
    cl2 = Cluster.load(path)
    m2 = Migration.create(cl2, "users", new)
    with pytest.raises(MigrationError, match=r"shard-key value \d+ has type int; group 'users' needs str"):
        m2.run()
    rec = cl.metadata.migration(m2.id)
    assert present(rec)["state"] == "preparing" and "needs str" in present(rec)["error"]
    doc["groups"]["users"]["key_type"] = "int"
    path.write_text(json.dumps(doc))
    cl3 = Cluster.load(path)
    assert Migration(cl3, m2.id).run() == "retained"  # resume continues once the cause is gone
    assert present(cl3.metadata.migration(m2.id))["error"] is None
    for c in (cl, cl2, cl3):
        c.close()


def test_table_without_primary_key_is_refused(tmp_path: Path) -> None:
    for s in ("a", "b"):
        c = sqlite3.connect(tmp_path / f"{s}.db")
        c.execute("CREATE TABLE users (id INTEGER, name TEXT)")
        c.commit()
        c.close()
    doc = {"metadata": "sqlite:meta.db", "shards": {"a": "sqlite:a.db", "b": "sqlite:b.db"},
           "groups": {"users": {"router": JumpRouter(["a"]).to_dict(), "tables": [{"name": "users", "key": "id"}]}}}
    (tmp_path / "c.json").write_text(json.dumps(doc))
    cl = Cluster.load(tmp_path / "c.json")
    with pytest.raises(ValueError, match="has no primary key"):
        cl.init()
    cl.close()


def test_unreachable_shard_is_a_clear_error(tmp_path: Path) -> None:
    doc = {"metadata": "sqlite:meta.db", "shards": {"a": "sqlite:missing/a.db"},
           "groups": {"users": {"router": JumpRouter(["a"]).to_dict(), "tables": [{"name": "users", "key": "id"}]}}}
    (tmp_path / "c.json").write_text(json.dumps(doc))
    cl = Cluster.load(tmp_path / "c.json")
    with pytest.raises(ConnectionError, match="does not exist"):
        cl.init()
    cl.close()


def test_out_of_order_commits_are_never_skipped(tmp_path: Path) -> None:
    """PostgreSQL: a transaction that took change id 10 commits after the one
    that took 11; catch-up applies 11 first and still applies 10 later."""
    from tests._postgres import need_postgres

    dsn = need_postgres()
    try:
        path = make_cluster(tmp_path, FOUR, users=400, extra_shards=["s4"], backend=dsn)
        cl = Cluster.load(path)
        old = cl.router()
        new, _ = plan.add_shards(old, "s4")
        m = Migration.create(cl, "users", new)
        assert m.run(cutover=False) == "catching-up"
        src = "s1"
        a, b = [k for k in range(1, 401) if old.route(k) == src and new.route(k) == "s4"][:2]
        c1, c2 = connect(tmp_path, src), connect(tmp_path, src)
        c1.execute("BEGIN")
        c1.execute("UPDATE users SET n = 111 WHERE id = ?", (a,))  # takes the lower change id
        c2.execute("BEGIN")
        c2.execute("UPDATE users SET n = 222 WHERE id = ?", (b,))  # takes the higher one
        c2.execute("COMMIT")
        ids = {}
        chk = connect(tmp_path, src)
        assert m.catch_up()[0] >= 1
        (ids["b"],) = chk.execute("SELECT max(id) FROM _shardhash_changes WHERE state = 1").fetchone()
        assert shard_rows(tmp_path, "s4")[b][2] == 222 and shard_rows(tmp_path, "s4")[a][2] == 0
        c1.execute("COMMIT")
        (ids["a"],) = chk.execute("SELECT max(id) FROM _shardhash_changes WHERE state = 0").fetchone()
        assert ids["a"] < ids["b"]  # committed out of order: a position would have skipped it
        assert m.catch_up()[0] >= 1
        assert shard_rows(tmp_path, "s4")[a][2] == 111
        assert m.run() == "retained"
        rows = shard_rows(tmp_path, "s4")
        assert (rows[a][2], rows[b][2]) == (111, 222)
        for c in (c1, c2, chk):
            c.close()
        cl.close()
    finally:
        drop_cluster(tmp_path, dsn)


@pytest.mark.parametrize("case", range(6))
def test_membership_matches_the_unit_definitions(case: int) -> None:
    """The vectorised unit lookup agrees with the units' definitions, key by key."""
    import numpy as np

    from shardhash import BucketRouter, MaglevRouter, RendezvousRouter
    from shardhash.migrate.units import Membership, units_for

    olds = [JumpRouter(FOUR), RingRouter(FOUR, vnodes=8), BucketRouter(FOUR, FOUR * 16),
            MaglevRouter(FOUR, table_size=251), RendezvousRouter(FOUR), JumpRouter(FOUR)]
    old = olds[case]
    new = plan.add_shards(old, "s4")[0] if case < 5 else plan.remove_shards(old, "s2")[0]
    units = units_for(old, new, max_step_share=0.03)
    mem = Membership(old, new, units)
    keys = list(range(20_000)) + [f"user-{i}" for i in range(2000)]
    got = mem.assign(keys)
    h = [int(x) for x in old.hasher.hash_array(keys)]
    for i, k in enumerate(keys):
        src, dst = old.route(k), new.route(k)
        want = -1
        for u in units:
            if u.source != src or u.destination != dst:
                continue
            if u.kind == "range" and not (u.lo <= h[i] <= u.hi):
                continue
            if u.kind == "ranges" and not any(lo <= h[i] <= hi for lo, hi in u.ranges):
                continue
            if u.kind == "buckets" and h[i] % u.modulus not in u.buckets:
                continue
            want = u.index
            break
        assert got[i] == want, (k, got[i], want)
        if src != dst:
            assert want >= 0, f"key {k} moves {src}->{dst} but no unit holds it"
    assert np.all((got >= 0) == np.array([old.route(k) != new.route(k) for k in keys]))


def test_watermark_walk_under_writes(root: Path, backend: str) -> None:
    """New ids follow the new layout at once; the walk copies [K - j, K) batch
    by batch, lowers K durably, and ends on the new router; nothing is lost."""
    from shardhash import WatermarkRouter
    from shardhash.migrate.executor import walk_watermark

    wm = WatermarkRouter(JumpRouter(FOUR), JumpRouter(FOUR + ["s4"]), 301)
    # (the new layout's shards exist before the watermark topology is published)
    path = make_cluster(root, FOUR + ["s4"], wm, users=300, backend=backend)
    cl = Cluster.load(path, retries=5)
    acks: dict[int, object] = {}
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer(wid: int) -> None:
        n = 0
        try:
            while not stop.is_set():
                n += 1
                k = 1 + (n * 4 + wid) % 400
                with cl.transaction(k) as tx:
                    if n % 9 == 0:
                        tx.execute("DELETE FROM users WHERE id = ?", (k,))
                        v = None
                    else:
                        tx.execute(upsert(tx), (k, "w", n))
                        v = n
                acks[k] = v
                time.sleep(0.001)  # (writers that outpace catch-up would only delay the fence)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in ts:
        t.start()
    try:
        time.sleep(0.2)
        # the first ids above K went to the new layout directly
        final = walk_watermark(cl, batch=100, fence_threshold=0.2)
    finally:
        stop.set()
        for t in ts:
            t.join()
    assert not errors, errors
    assert final == JumpRouter(FOUR + ["s4"]).with_version(final.version)
    kinds = [m["info"].get("kind") for m in cl.metadata.migrations()]
    assert kinds.count("watermark") == 4  # three batches of 100 below 301, then the switch
    assert final.version == wm.version + 4
    rows = owners_ok(root, final, FOUR + ["s4"], exact=True)
    assert any(k >= 301 and final.route(k) == "s4" for k in acks)
    for k, v in acks.items():
        if v is None:
            assert k not in rows
        else:
            assert rows[k][2] == v
    cl.close()


def test_two_groups_migrate_side_by_side(tmp_path: Path) -> None:
    """Migrations of different table groups run concurrently; each group's
    capture only logs its own tables."""
    shards = FOUR + ["s4"]
    users_r, logs_r = JumpRouter(FOUR), RingRouter(FOUR, vnodes=8)
    for s in shards:
        c = sqlite3.connect(tmp_path / f"{s}.db")
        c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        c.execute("CREATE TABLE logs (lid INTEGER PRIMARY KEY, user_id INTEGER, msg TEXT)")
        if s in FOUR:
            c.executemany("INSERT INTO users VALUES (?, ?)",
                          [(k, f"u{k}") for k in range(1, 1001) if users_r.route(k) == s])
            c.executemany("INSERT INTO logs VALUES (?, ?, ?)",
                          [(k * 10, k, "m") for k in range(1, 1001) if logs_r.route(k) == s])
        c.commit()
        c.close()
    doc = {"metadata": "sqlite:meta.db", "shards": {s: f"sqlite:{s}.db" for s in shards},
           "groups": {"users": {"router": users_r.to_dict(), "tables": [{"name": "users", "key": "id"}]},
                      "logs": {"router": logs_r.to_dict(), "tables": [{"name": "logs", "key": "user_id"}]}}}
    (tmp_path / "c.json").write_text(json.dumps(doc))
    cl = Cluster.load(tmp_path / "c.json")
    cl.init()
    new_u = plan.add_shards(users_r, "s4")[0]
    new_l = plan.add_shards(logs_r, "s4")[0]
    ms = [Migration.create(cl, "users", new_u), Migration.create(cl, "logs", new_l)]
    out: list[Any] = []

    def go(mid: str) -> None:
        c2 = Cluster.load(tmp_path / "c.json")
        out.append(Migration(c2, mid).run(chunk=100))
        c2.close()

    ts = [threading.Thread(target=go, args=(m.id,)) for m in ms]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == ["retained", "retained"]
    for m in ms:
        m.cleanup()
    for s in shards:
        c = sqlite3.connect(tmp_path / f"{s}.db")
        assert all(new_u.route(k) == s for (k,) in c.execute("SELECT id FROM users"))
        assert all(new_l.route(k) == s for (k,) in c.execute("SELECT user_id FROM logs"))
        c.close()
    assert cl.refresh("users").version == cl.refresh("logs").version == 2
    cl.close()


def test_cli_dry_run_start_status_cleanup(root: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    path = make_cluster(root, FOUR, users=500, extra_shards=["s4"], backend=backend)
    assert main(["migrate", "init", "--config", str(path)]) == 0
    capsys.readouterr()
    assert main(["migrate", "start", "--config", str(path), "--add", "s4", "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    old = JumpRouter(FOUR)
    assert dry["rows"] == sum(old.route(k) != "s4" and plan.add_shards(old, "s4")[0].route(k) == "s4"
                              for k in range(1, 501))
    assert dry["from_version"] == 1 and dry["to_version"] == 2
    assert not shard_rows(root, "s4")  # a dry run writes nothing
    assert main(["migrate", "start", "--config", str(path), "--add", "s4", "-q"]) == 0
    out = capsys.readouterr()
    assert "retained" in out.out
    assert main(["migrate", "status", "--config", str(path), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["state"] == "retained" and st["rows_copied"] == dry["rows"]
    assert st["verify"]["mismatches"] == 0 and "client_metrics" in st
    assert main(["migrate", "cleanup", "--config", str(path)]) == 0
    assert "cleaned" in capsys.readouterr().out
    assert main(["migrate", "rollback", "--config", str(path)]) == 2
    assert "rollback is impossible" in capsys.readouterr().err


def test_docstring_examples_run() -> None:
    import doctest

    from shardhash.migrate import cluster as cluster_mod

    res = doctest.testmod(cluster_mod)
    assert res.attempted > 0 and res.failed == 0


def test_toml_cluster_file_and_metrics(tmp_path: Path) -> None:
    pytest.importorskip("tomllib")
    path = make_cluster(tmp_path, FOUR, users=100, extra_shards=["s4"])
    doc = json.loads(path.read_text())
    lines = [f'metadata = "{doc["metadata"]}"']
    for s, v in doc["shards"].items():
        lines += [f"[shards.{s}]", f'primary = "{v["primary"]}"']
    (tmp_path / "users.router.json").write_text(json.dumps(doc["groups"]["users"]["router"]))
    lines += ["[groups.users]", 'router = "users.router.json"', 'tables = [{ name = "users", key = "id" }]']
    (tmp_path / "cluster.toml").write_text("\n".join(lines) + "\n")
    cl = Cluster.load(tmp_path / "cluster.toml")
    assert cl.router().shards == tuple(FOUR)
    m = Migration.create(cl, "users", plan.add_shards(cl.router(), "s4")[0])
    m.run()
    from shardhash.metrics import available
    from shardhash.migrate import metrics

    st = m.status()
    st["client_metrics"] = cl.metrics.snapshot()
    if available():
        import prometheus_client

        def pause_count() -> float:  # the histogram is process-wide: other tests may have observed pauses
            for line in prometheus_client.generate_latest().decode().splitlines():
                if line.startswith("shardhash_write_pause_seconds_count "):
                    return float(line.split()[1])
            return 0.0

        before = pause_count()
        assert metrics.publish(st, pauses=[0.01, 0.2])
        text = prometheus_client.generate_latest().decode()
        assert f'shardhash_migration_rows_copied{{migration="{m.id}"}} {float(st["rows_copied"])}' in text
        assert pause_count() == before + 2
    cl.close()


def test_core_does_not_import_prometheus() -> None:
    import subprocess
    import sys

    from tests._support import child_env

    code = ("import sys, shardhash, shardhash.migrate, shardhash.migrate.cli; "
            "print('prometheus_client' in sys.modules, 'psycopg' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(),
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_frozen_units_make_writers_wait_and_let_readers_read(root: Path, backend: str) -> None:
    from shardhash.migrate import FenceTimeout

    path, cl, m, old, new, k, src = frozen_key(root, backend, 0.3)
    still = next(k for k in range(1, 301) if new.route(k) == old.route(k))
    with cl.read(k) as tx:
        assert tx.execute("SELECT n FROM users WHERE id = ?", (k,)).fetchone()[0] == 0
    t0 = time.perf_counter()
    with pytest.raises(FenceTimeout):
        with cl.transaction(k) as tx:
            tx.execute("UPDATE users SET n = 5 WHERE id = ?", (k,))
    assert time.perf_counter() - t0 >= 0.3
    assert shard_rows(root, src)[k][2] == 0  # nothing was written
    with cl.transaction(still) as tx:  # keys outside the units are not held up
        tx.execute("UPDATE users SET n = 6 WHERE id = ?", (still,))
    # a writer that waits through a short freeze succeeds once it ends
    done: list[Any] = []

    def late_writer() -> None:
        c2 = Cluster.load(path, wait_timeout=10)
        with c2.transaction(k) as tx:
            tx.execute("UPDATE users SET n = 7 WHERE id = ?", (k,))
            done.append(tx.shard)
        c2.close()

    t = threading.Thread(target=late_writer)
    t.start()
    time.sleep(0.3)
    assert not done
    m._set_units(src, "source", ("frozen",), "copying")
    t.join()
    assert done == [src] and shard_rows(root, src)[k][2] == 7
    assert m.run() == "retained"
    assert shard_rows(root, "s4")[k][2] == 7
    cl.close()


def test_demo_counts_acknowledged_lost_and_duplicated(tmp_path: Path) -> None:
    from shardhash.migrate.demo import run_demo

    res = run_demo(5000, writers=4, folder=str(tmp_path), quiet=True)
    assert res["acknowledged"] > 0 and res["rows_copied"] > 0
    assert (res["lost"], res["duplicated"], res["misplaced"], res["writer_errors"]) == (0, 0, 0, [])
    assert res["verify"]["mismatches"] == 0


def test_capture_logs_old_keys_only_when_the_primary_key_changes(root: Path, backend: str) -> None:
    """A bulk UPDATE under an active capture logs each new key, and the old
    key too only for rows whose primary key changed (PostgreSQL: a set
    difference of the statement's transition tables, linear in its rows)."""
    path = make_cluster(root, FOUR, users=400, backend=backend)
    cl = Cluster.load(path)
    b = cl.backend("s0")
    c = b.conn()
    with b.writing(c):
        b.start_capture(c, "probe", "users")
    cid = b.capture_id(c, "probe")
    assert cid is not None
    ids = sorted(k for (k,) in c.execute("SELECT id FROM users").fetchall())
    with b.writing(c):
        c.execute("UPDATE users SET name = 'x'")                                  # keys unchanged
        c.execute("UPDATE users SET id = id + 1000000 WHERE id <= ?", (ids[9],))  # 10 keys change
    logged = [tuple(json.loads(pk)) for _, _, pk in b.pending(c, cid, 100_000)]
    moved = {(k,) for k in ids[:10]}
    assert sorted(logged) == sorted([(k,) for k in ids] + sorted(moved)
                                    + [(k + 1_000_000,) for (k,) in moved])
    with b.writing(c):
        b.drop_capture(c, "probe")
    cl.close()


def test_a_shard_that_is_both_source_and_destination_copies_each_row_once(root: Path, backend: str) -> None:
    """Changing the strategy over the same shards (jump to a ring) makes every
    shard a source of some units and the destination of others.  Scanning a
    source must copy, catch up and verify only the rows that shard owns under
    the old router, never the copies it has received from another source."""
    path = make_cluster(root, FOUR, users=3000, events=True, backend=backend)
    cl = Cluster.load(path, retries=5)
    old = cl.router()
    assert isinstance(old, JumpRouter)
    new = RingRouter(FOUR, vnodes=16, version=old.version + 1)
    with LiveWriters(cl, 4, 3500) as w:
        time.sleep(0.2)
        m = Migration.create(cl, "users", new)
        assert m.run(chunk=250) == "retained"
        assert m.status()["verify"]["mismatches"] == 0
        time.sleep(0.2)
    assert m.cleanup() > 0
    w.check(root, new, FOUR)
    cl.close()
