"""Cluster integration: per-group hot policies, cluster scatter-gather, lookup indexes, metrics hooks."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter, RingRouter, _events
from shardhash.hotkeys import HotKeyRouter
from shardhash.lookups import DuplicateValue
from shardhash.migrate import Cluster

SHARDS = ["s0", "s1", "s2"]


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    for s in SHARDS:
        c = sqlite3.connect(tmp_path / f"{s}.db")
        c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL, name TEXT)")
        # route_key (the shard key) holds subkey(user_key, sub): "celebrity", "celebrity#1", ...
        c.execute("CREATE TABLE events (route_key TEXT NOT NULL, user_key TEXT NOT NULL, sub INTEGER NOT NULL, "
                  "seq INTEGER NOT NULL, body TEXT, PRIMARY KEY (route_key, seq))")
        c.commit()
        c.close()
    doc = {
        "metadata": "sqlite:meta.db",
        "shards": {s: {"primary": f"sqlite:{s}.db"} for s in SHARDS},
        "groups": {
            "users": {"router": JumpRouter(SHARDS).to_dict(), "tables": [{"name": "users", "key": "id"}]},
            "email_lookup": {"router": RingRouter(SHARDS, vnodes=16).to_dict(),
                             "tables": [{"name": "email_lookup", "key": "value"}]},
            # only this group has a hot-key policy
            "events": {"router": HotKeyRouter(JumpRouter(SHARDS), {"celebrity": 3}, write="round_robin").to_dict(),
                       "tables": [{"name": "events", "key": "route_key"}]},
        },
    }
    cl = Cluster.from_dict(doc, base_dir=tmp_path)
    cl.add_lookup("email", group="email_lookup", owner_group="users", owner_table="users")
    cl.init()
    yield cl
    cl.close()


def test_lookup_through_the_cluster(cluster: Any) -> None:
    idx = cluster.lookup_index("email")
    for i in range(20):
        idx.register(i, f"u{i}@example.com", {"name": f"n{i}"})
    assert cluster.lookup("email", "u7@example.com") == 7
    assert cluster.lookup_row("email", "u7@example.com") == {"id": 7, "email": "u7@example.com", "name": "n7"}
    assert cluster.lookup("email", "none@example.com") is None
    with pytest.raises(DuplicateValue):
        idx.register(99, "u3@example.com")
    idx.change(3, "u3@example.com", "three@example.com")
    assert cluster.lookup("email", "three@example.com") == 3 and cluster.lookup("email", "u3@example.com") is None
    with pytest.raises(KeyError, match="add_lookup"):
        cluster.lookup("phone", "123")


def test_concurrent_registrations_through_the_cluster(cluster: Any) -> None:
    idx = cluster.lookup_index("email")
    won: list[int] = []
    lost: list[int] = []
    barrier = threading.Barrier(8)

    def writer(w: int) -> None:
        barrier.wait()
        try:
            idx.register(100 + w, "race@example.com")
            won.append(w)
        except DuplicateValue:
            lost.append(w)
        finally:
            cluster.close()  # this thread's connections

    ts = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert len(won) == 1 and len(lost) == 7
    assert cluster.lookup("email", "race@example.com") == 100 + won[0]
    res = cluster.scatter_gather("SELECT id, email FROM users", group="users", order_by=["id"], unique="id")
    assert [r[1] for r in res.rows].count("race@example.com") == 1


def test_hot_policy_per_group(cluster: Any) -> None:
    r = cluster.router("events")
    assert isinstance(r, HotKeyRouter) and not isinstance(cluster.router("users"), HotKeyRouter)
    for seq in range(30):
        for key in ("celebrity", "nobody"):
            with cluster.hot_transaction(key, group="events") as tx:
                tx.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?)",
                           (tx.routing_key, key, tx.sub_key, seq, f"e{seq}"))
    # the celebrity's writes went to three sub-keys, each on its own sub-key's shard
    q = "SELECT seq FROM events WHERE user_key = ? AND sub = ?"
    assert sorted(x[0] for x in cluster.hot_read("celebrity", q, ("celebrity",), group="events")) == list(range(30))
    assert sorted(x[0] for x in cluster.hot_read("nobody", q, ("nobody",), group="events")) == list(range(30))
    where: dict[int, set[str]] = {}
    for s in SHARDS:
        c = sqlite3.connect(cluster.backend(s).path)
        for sub, in c.execute("SELECT sub FROM events WHERE user_key = 'celebrity'"):
            where.setdefault(sub, set()).add(s)
        assert c.execute("SELECT COUNT(*) FROM events WHERE user_key = 'nobody' AND sub > 0").fetchone()[0] == 0
        c.close()
    assert sorted(where) == [0, 1, 2]
    assert all(where[i] == {r.route_read("celebrity")[i][0]} for i in range(3))
    # every row sits on the shard of its routing key: a cluster scatter-gather keeps them all
    res = cluster.scatter_gather("SELECT route_key, seq, user_key FROM events", group="events",
                                 order_by=["route_key", "seq"], unique=["route_key", "seq"], limit=7)
    n = len(res.rows)
    while res.cursor is not None:
        res = cluster.scatter_gather("SELECT route_key, seq, user_key FROM events", group="events",
                                     order_by=["route_key", "seq"], unique=["route_key", "seq"], limit=7,
                                     cursor=res.cursor)
        n += len(res.rows)
    assert n == 60
    with pytest.raises(ValueError, match="no hot-key policy"):
        with cluster.hot_transaction(5, group="users", sub_key=1):
            pass


def test_cluster_scatter_gather_drops_copies_a_shard_does_not_own(cluster: Any) -> None:
    idx = cluster.lookup_index("email")
    for i in range(30):
        idx.register(i, f"u{i}@example.com")
    router = cluster.router("users")
    # a stray copy of user 4 on a shard that does not own it (as a migration leaves behind)
    wrong = next(s for s in SHARDS if s != router.route(4))
    c = sqlite3.connect(cluster.backend(wrong).path)
    c.execute("INSERT INTO users VALUES (4, 'u4@example.com', 'stale copy')")
    c.commit()
    c.close()
    rows = []
    cursor = None
    while True:
        page = cluster.scatter_gather("SELECT id, name FROM users", group="users", order_by=["id"], unique="id",
                                      limit=4, cursor=cursor)
        rows += page.rows
        cursor = page.cursor
        if cursor is None:
            break
    assert [r[0] for r in rows] == list(range(30)) and all(r[1] is None for r in rows)
    with pytest.raises(ValueError, match="not unique"):
        cluster.scatter_gather("SELECT id FROM users", group="users", order_by=["id"], unique="id",
                               owned_only=False)
    agg = cluster.scatter_aggregate("SELECT id FROM users WHERE name IS NULL", {"n": "count(*)", "s": "sum(id)"},
                                    group="users")
    assert agg.rows == [{"n": 30, "s": sum(range(30))}]
    with pytest.raises(ValueError, match="no column 'user_id'"):
        cluster.scatter_gather("SELECT id FROM users", group="users", order_by=["id"], unique="id",
                               key_column="user_id")


def test_metrics_hooks(cluster: Any) -> None:
    metrics = pytest.importorskip("shardhash.metrics")
    if not metrics.available():
        pytest.skip("prometheus_client not installed")
    m = metrics.ShardMetrics()
    m.attach()
    try:
        for i in range(10):
            with cluster.transaction(i, group="users") as tx:
                tx.execute("INSERT INTO users VALUES (?, ?, ?)", (i, f"x{i}", None))
        for _ in range(6):
            with cluster.hot_transaction("celebrity", group="events") as tx:
                pass
        q = "SELECT seq FROM events WHERE user_key = ? AND sub = ?"
        for k in ("celebrity", "nobody", "nobody"):
            cluster.hot_read(k, q, (k,), group="events")
        cluster.lookup_index("email")
        cluster.lookup("email", "nobody@example.com")
    finally:
        m.detach()
    router = cluster.router("users")
    for s in SHARDS:
        n = sum(1 for i in range(10) if router.route(i) == s)
        assert (m.value("shardhash_routed_keys_total", shard=s) or 0) >= n
        if n:
            assert (m.value("shardhash_shard_op_seconds_count", shard=s, op="write") or 0) >= n
    assert m.value("shardhash_hot_writes_total", hot="true") == 6
    assert m.value("shardhash_hot_reads_total", hot="true") == 1
    assert m.value("shardhash_hot_reads_total", hot="false") == 2
    assert m.value("shardhash_lookups_total", index="email", result="miss") == 1


def test_a_migration_moves_hot_sub_keys_like_any_keys(tmp_path: Path) -> None:
    from shardhash.migrate import Migration

    every = SHARDS + ["s3"]
    for s in every:
        c = sqlite3.connect(tmp_path / f"{s}.db")
        c.execute("CREATE TABLE events (route_key TEXT NOT NULL, user_key TEXT NOT NULL, sub INTEGER NOT NULL, "
                  "seq INTEGER NOT NULL, PRIMARY KEY (route_key, seq))")
        c.commit()
        c.close()
    old = HotKeyRouter(JumpRouter(SHARDS), {"celebrity": 4, "star": 3})
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": f"sqlite:{s}.db"} for s in every},
           "groups": {"events": {"router": old.to_dict(), "tables": [{"name": "events", "key": "route_key"}]}}}
    cl = Cluster.from_dict(doc, base_dir=tmp_path)
    cl.init()
    try:
        keys = ["celebrity", "star"] + [f"user{i}" for i in range(60)]
        for seq in range(8):
            for k in keys:
                with cl.hot_transaction(k, group="events") as tx:
                    tx.execute("INSERT INTO events VALUES (?, ?, ?, ?)", (tx.routing_key, k, tx.sub_key, seq))
        new = HotKeyRouter(JumpRouter(every), {"celebrity": 4, "star": 3}, version=old.version + 1)
        m = Migration.create(cl, "events", new)
        seen: list[dict[str, Any]] = []

        def listen(event: str, fields: dict[str, Any]) -> None:
            if event == "migration_progress":
                seen.append(fields)

        _events.subscribe(listen)
        try:
            assert m.run(chunk=50) == "retained"
        finally:
            _events.unsubscribe(listen)
        # the executor reported its progress (what ShardMetrics turns into copy_rows_* gauges)
        assert seen and seen[-1]["migration_id"] == m.id and seen[-1]["copied"] > 0
        # (the total is counted only for a progress_fn)
        assert seen[-1]["scanned"] >= seen[-1]["copied"] and seen[-1]["total"] is None
        m.cleanup()
        assert cl.refresh("events") == new
        q = "SELECT seq FROM events WHERE user_key = ? AND sub = ?"
        for k in keys:
            got = sorted(x[0] for x in cl.hot_read(k, q, (k,), group="events"))
            assert got == list(range(8)), k
        # every row is on the shard its routing key names under the new router, exactly once
        for s in every:
            c = sqlite3.connect(tmp_path / f"{s}.db")
            for (rk,) in c.execute("SELECT route_key FROM events"):
                assert new.route(rk) == s
            c.close()
    finally:
        cl.close()


def orders_cluster(root: Path, shards: list[str], columns: str, *, also: Sequence[str] = ()) -> Cluster:
    """A cluster of SQLite files with one table ``orders(columns)`` keyed by
    ``id`` on a jump router (``also``: more files with the table, outside
    the cluster, e.g. an oracle)."""
    for s in [*shards, *also]:
        c = sqlite3.connect(root / f"{s}.db")
        c.execute(f"CREATE TABLE orders ({columns})")
        c.commit()
        c.close()
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": f"sqlite:{s}.db"} for s in shards},
           "groups": {"orders": {"router": JumpRouter(shards).to_dict(),
                                 "tables": [{"name": "orders", "key": "id"}]}}}
    cl = Cluster.from_dict(doc, base_dir=root)
    cl.init()
    return cl


def test_scatter_during_and_after_a_migration_counts_each_row_once(tmp_path: Path) -> None:
    # Four shards -> three (s3's rows move to s0..s2) -> four again (rows
    # move back to s3).  While the first migration copies, s0..s2 hold
    # copies they do not own yet; after the second one's cutover, s0..s2
    # keep the moved rows (retained) until cleanup.  Aggregates and pages
    # must match one database holding every row exactly once (the oracle).
    import random

    from shardhash.migrate import Migration

    four = ["s0", "s1", "s2", "s3"]
    cl = orders_cluster(tmp_path, four, "id INTEGER PRIMARY KEY, grp INTEGER NOT NULL, amount REAL",
                        also=["oracle"])
    rng = random.Random(4)
    rows = [(i, rng.randrange(4), None if i % 13 == 0 else round(rng.uniform(-20, 80), 2)) for i in range(600)]
    oracle = sqlite3.connect(tmp_path / "oracle.db")
    aggs = {"n": "count(*)", "n_amount": "count(amount)", "total": "sum(amount)", "lo": "min(amount)",
            "hi": "max(amount)", "mean": "avg(amount)"}

    def write(sql: str, r: tuple[Any, ...], key: int | None = None) -> None:
        with cl.transaction(r[0] if key is None else key, group="orders") as tx:
            tx.execute(sql, r)
        oracle.execute(sql, r)
        oracle.commit()

    def physical() -> int:
        n = 0
        for s in four:
            c = sqlite3.connect(tmp_path / f"{s}.db")
            n += c.execute("SELECT count(*) FROM orders").fetchone()[0]
            c.close()
        return n

    def check() -> None:
        got = cl.scatter_aggregate("SELECT id, grp, amount FROM orders", aggs, group="orders", group_by="grp")
        q = ("SELECT grp, count(*), count(amount), sum(amount), min(amount), max(amount), avg(amount) "
             "FROM orders GROUP BY grp ORDER BY grp")
        exp = [dict(zip(["grp", *aggs], r)) for r in oracle.execute(q)]
        assert [r["grp"] for r in got.rows] == [r["grp"] for r in exp]
        for g, e in zip(got.rows, exp):
            for k in ("n", "n_amount", "lo", "hi"):
                assert g[k] == e[k], (k, g, e)
            assert g["total"] == pytest.approx(e["total"]) and g["mean"] == pytest.approx(e["mean"])
        ids: list[int] = []
        cursor = None
        while True:
            page = cl.scatter_gather("SELECT id, grp FROM orders", group="orders", order_by=["grp", "id"],
                                     unique="id", limit=50, cursor=cursor)
            ids += [r[0] for r in page.rows]
            cursor = page.cursor
            if cursor is None:
                break
        assert ids == [r[0] for r in oracle.execute("SELECT id FROM orders ORDER BY grp, id")]

    try:
        for r in rows:
            write("INSERT INTO orders VALUES (?, ?, ?)", r)
        check()
        m1 = Migration.create(cl, "orders", JumpRouter(four[:3], version=2))
        m1.run(cutover=False)  # copied and caught up: s0..s2 hold copies of s3's rows they do not own yet
        assert m1.state not in ("retained", "cleaned") and physical() > len(rows)
        check()
        over = cl.scatter_aggregate("SELECT id FROM orders", {"n": "count(*)"}, group="orders", owned_only=False)
        assert over.rows[0]["n"] == physical() > len(rows)  # without the filter the copies count twice
        for i in range(600, 640):  # writes go on during the migration (to the owners)
            write("INSERT INTO orders VALUES (?, ?, ?)", (i, i % 4, float(i)))
        check()
        assert m1.run() == "retained"
        check()
        m1.cleanup()
        check()  # no migration holds the group: the aggregates run whole on each shard
        new = JumpRouter(four, version=3)
        m2 = Migration.create(cl, "orders", new)
        assert m2.run() == "retained"  # cut over: s0..s2 keep the rows that moved to s3 until cleanup
        assert cl.refresh("orders") == new and physical() > 640
        write("DELETE FROM orders WHERE id = ?", (5,))
        write("UPDATE orders SET amount = ? WHERE id = ?", (1000.5, 7), key=7)
        check()
        m2.cleanup()
        assert physical() == 639
        check()
    finally:
        oracle.close()
        cl.close()


def test_scatter_aggregate_ownership_arguments(cluster: Any) -> None:
    from shardhash.scatter import scatter_aggregate

    with pytest.raises(TypeError, match="go together"):
        scatter_aggregate("SELECT id FROM users", {"s0": lambda: None}, {"n": "count(*)"}, key_column="id")
    with pytest.raises(ValueError, match="attempts"):
        cluster.scatter_aggregate("SELECT id FROM users", {"n": "count(*)"}, group="users", attempts=0)
    assert cluster.scatter_aggregate("SELECT id FROM users", {"n": "count(*)"}, group="users").rows == [{"n": 0}]


def test_structured_records_of_a_real_stale_route(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A second client still holds the old router after a migration's cutover:
    # its write is refused by the shard, retried on the new owner, and the
    # records carry the shard key, the shards, the versions, the migration id
    # and the retry reason.
    import json
    import logging

    from shardhash.metrics import JsonFormatter, ShardMetrics
    from shardhash.migrate import Migration

    every = ["s0", "s1", "s2", "s3"]
    for s in every:
        c = sqlite3.connect(tmp_path / f"{s}.db")
        c.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        c.commit()
        c.close()
    old = JumpRouter(every[:3])
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": f"sqlite:{s}.db"} for s in every},
           "groups": {"users": {"router": old.to_dict(), "tables": [{"name": "users", "key": "id"}]}}}
    a = Cluster.from_dict(doc, base_dir=tmp_path)
    a.init()
    b = Cluster.from_dict(doc, base_dir=tmp_path)
    try:
        for i in range(40):
            with a.transaction(i, group="users") as tx:
                tx.execute("INSERT INTO users VALUES (?, ?)", (i, f"n{i}"))
        assert b.router("users") == old  # b caches the old router
        new = JumpRouter(every, version=2)
        m = Migration.create(a, "users", new)
        assert m.run() == "retained"
        moved = next(i for i in range(40) if new.route(i) != old.route(i))
        metrics = ShardMetrics()
        metrics.attach()
        try:
            with caplog.at_level(logging.DEBUG, logger="shardhash.events"):
                with b.transaction(moved, group="users") as tx:
                    tx.execute("UPDATE users SET name = 'changed' WHERE id = ?", (moved,))
        finally:
            metrics.detach()
        if metrics.enabled:
            assert metrics.value("shardhash_client_stale_retries_total", shard=old.route(moved)) == 1
            assert metrics.value("shardhash_routed_keys_total", shard=new.route(moved)) == 1
        docs = [json.loads(JsonFormatter().format(r)) for r in caplog.records if r.name == "shardhash.events"]
        stale = [d for d in docs if d["event"] == "stale_route_retry"]
        assert len(stale) == 1
        assert stale[0]["shard_key"] == moved and stale[0]["shard"] == old.route(moved)
        assert stale[0]["topology_version"] == 1 and stale[0]["current_version"] == 2
        assert stale[0]["migration_id"] == m.id and "stale route" in stale[0]["retry_reason"]
        route = [d for d in docs if d["event"] == "route"]
        assert route[-1]["shard_key"] == moved and route[-1]["shard"] == new.route(moved)
        assert route[-1]["topology_version"] == 2
        with a.read(moved, group="users") as tx:
            assert tx.execute("SELECT name FROM users WHERE id = ?", (moved,)).fetchone() == ("changed",)
    finally:
        a.close()
        b.close()


def test_pages_across_a_cutover_return_every_row_once(tmp_path: Path) -> None:
    """Page through a group while a migration changes its strategy over the
    same shards (jump to a ring) and cuts over between two pages: the pages
    together are exactly the oracle's ordered rows, none twice, none missed.
    The cursor's position is the last ordering key the merge reached, which
    means the same on every shard whoever owns a row now."""
    from shardhash.migrate import Migration

    four = ["s0", "s1", "s2", "s3"]
    cl = orders_cluster(tmp_path, four, "id INTEGER PRIMARY KEY, grp INTEGER NOT NULL")
    try:
        rows = [(i, (i * 7919) % 5) for i in range(1, 801)]
        for r in rows:
            with cl.transaction(r[0], group="orders") as tx:
                tx.execute("INSERT INTO orders VALUES (?, ?)", r)
        expected = [r[0] for r in sorted(rows, key=lambda r: (r[1], r[0]))]
        ids: list[int] = []
        cursor = None
        pages = 0
        while True:
            page = cl.scatter_gather("SELECT id, grp FROM orders", group="orders", order_by=["grp", "id"],
                                     unique="id", limit=60, cursor=cursor)
            ids += [r[0] for r in page.rows]
            cursor = page.cursor
            pages += 1
            if pages == 5:  # between two pages: every shard gives rows to and takes rows from others
                m = Migration.create(cl, "orders", RingRouter(four, vnodes=16, version=2))
                assert m.run() == "retained"
            if pages == 9:
                m.cleanup()
            if cursor is None:
                break
        assert pages > 9
        assert ids == expected
    finally:
        cl.close()
