"""shardhash.django on SQLite shards: where Django puts sharded rows, which
databases a query touches, allow_migrate / allow_relation, sharded_atomic's
ownership check, and a migration under Django writers."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests._support import oracle_required

if not oracle_required():  # (in CI a missing Django fails the import below)
    pytest.importorskip("django", reason="pip install 'shardhash[django]'")

from django.db import connections  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from shardhash import plan  # noqa: E402
from shardhash.django import ShardedWriteOutsideAtomic, ShardKeyRequired, ShardRouter, sharded_atomic  # noqa: E402
from shardhash.migrate import Cluster, FenceTimeout, Migration, ShardKeyError  # noqa: E402

from .conftest import DIR, SHARDS, Shop  # noqa: E402
from .shop.models import Order, User  # noqa: E402

FOUR = SHARDS[:4]


def _tables(db: str) -> set[str]:
    c = sqlite3.connect(DIR / f"{db}.db")
    try:
        return {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        c.close()


def _add_users(keys: range) -> None:
    for k in keys:
        with sharded_atomic(k):
            User.objects.create(id=k, name=f"u{k}")
            Order.objects.create(oid=k * 10, user_id=k, total=k)


def test_migrate_puts_the_sharded_tables_on_every_shard_only(shop: Shop) -> None:
    for s in SHARDS:
        assert {"shop_user", "shop_order"} <= _tables(s)
    assert not {"shop_user", "shop_order"} & _tables("default")
    r = shop.router
    assert r.allow_migrate("s1", "shop") is True and r.allow_migrate("default", "shop") is False
    assert r.allow_migrate("s1", "auth") is False and r.allow_migrate("default", "auth") is None


def test_writes_land_on_the_owner_and_reads_ask_only_it(shop: Shop) -> None:
    _add_users(range(1, 121))
    rt = shop.cluster.router("users")
    for s in FOUR:
        users, orders = shop.rows(s), shop.rows(s, "shop_order")
        assert users and all(rt.route(k) == s for k in users)
        assert sorted(o[1] for o in orders.values()) == sorted(users)
    assert not shop.rows("s4")
    ctx = {s: CaptureQueriesContext(connections[s]) for s in SHARDS}
    for c in ctx.values():
        c.__enter__()
    u = User.objects.db_manager(hints={"shard_key": 77}).get(id=77)
    its_orders = list(u.order_set.all())  # (the related manager follows the instance's shard)
    for c in ctx.values():
        c.__exit__(None, None, None)
    assert u.name == "u77" and [o.oid for o in its_orders] == [770]
    touched = {s for s, c in ctx.items() if len(c.captured_queries)}
    assert touched == {rt.route(77)}


def test_unrouted_queries_and_unchecked_writes_are_refused(shop: Shop) -> None:
    _add_users(range(1, 5))
    rt = shop.cluster.router("users")
    with pytest.raises(ShardKeyRequired, match="names no shard"):
        list(User.objects.filter(name="u1"))
    with pytest.raises(ShardedWriteOutsideAtomic, match="outside sharded_atomic"):
        User.objects.create(id=500, name="x")
    with sharded_atomic(2):
        assert User.objects.get(id=2).name == "u2"  # (inside the block: the block's shard)
    # a row of another key written in the block: the guard refuses it, all rolled back
    with pytest.raises(ShardKeyError, match="rolled back"):
        with sharded_atomic(2):
            User.objects.filter(id=2).update(n=8)
            User.objects.create(id=1002, name="another key")
    assert shop.rows(rt.route(2))[2][2] == 0 and 1002 not in shop.rows(rt.route(2))
    with pytest.raises(ValueError, match="nest blocks of the same key"):
        with sharded_atomic(2), sharded_atomic(3):
            pass
    # a relation between rows of two shards
    k2 = next(k for k in range(2, 5) if rt.route(k) != rt.route(1))
    other = User.objects.db_manager(hints={"shard_key": 1}).get(id=1)
    with sharded_atomic(k2):
        order = Order.objects.get(oid=k2 * 10)
        with pytest.raises(ValueError, match="cross-shard relation refused"):
            order.user = other


def test_the_guard_rolls_back_a_raw_write_of_another_key(shop: Shop) -> None:
    _add_users(range(1, 3))
    rt = shop.cluster.router("users")
    same = next(k for k in range(3, 200) if rt.route(k) == rt.route(1))
    with pytest.raises(ShardKeyError, match="rolled back"):
        with sharded_atomic(1) as alias:
            with connections[alias].cursor() as cur:
                cur.execute("UPDATE shop_user SET n = 5 WHERE id = 1")
                cur.execute("INSERT INTO shop_user (id, name, n) VALUES (%s, 'x', 0)", [same])
    rows = shop.rows(rt.route(1))
    assert rows[1][2] == 0 and same not in rows


def test_a_stale_router_is_refreshed_and_the_block_retried(shop: Shop) -> None:
    _add_users(range(1, 201))
    old = shop.cluster.router("users")
    mover = Cluster.load(shop.path)
    new, _ = plan.add_shards(mover.router("users"), "s4")
    m = Migration.create(mover, "users", new)
    assert m.run() == "retained"
    k = next(k for k in range(1, 201) if new.route(k) == "s4")
    assert shop.cluster.router("users").version == old.version  # (cached: stale)
    with sharded_atomic(k) as alias:
        User.objects.filter(id=k).update(n=9)
    assert alias == "s4" and shop.rows("s4")[k][2] == 9
    assert shop.rows(old.route(k))[k][2] == 0
    assert shop.cluster.metrics.stale_retries == 1
    mover.close()


def test_a_frozen_key_waits_then_times_out(shop: Shop) -> None:
    _add_users(range(1, 101))
    cl = Cluster.load(shop.path, wait_timeout=0.2)
    old = cl.router("users")
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(cl, "users", new)
    m.run(cutover=False)
    k = next(k for k in range(1, 101) if new.route(k) == "s4")
    m._set_units(old.route(k), "source", ("copying",), "frozen")
    r2 = ShardRouter(cl, {"shop": "users"})
    t0 = time.perf_counter()
    with pytest.raises(FenceTimeout):
        with sharded_atomic(k, router=r2):
            User.objects.filter(id=k).update(n=3)
    assert time.perf_counter() - t0 >= 0.2 and shop.rows(old.route(k))[k][2] == 0
    cl.close()


def test_a_migration_under_django_writers_loses_nothing(shop: Shop) -> None:
    _add_users(range(1, 301))
    acks: dict[int, int | None] = {}
    errors: list[BaseException] = []
    stop = threading.Event()
    writes = [0, 0, 0]

    def writer(w: int) -> None:
        n = 0
        try:
            while not stop.is_set():
                n += 1
                k = 1 + (n * 6 + w) % 360
                with sharded_atomic(k):
                    u = User.objects.filter(id=k).first()
                    v: int | None
                    if u is not None and n % 9 == 0:
                        u.delete()
                        v = None
                    elif u is None:
                        User.objects.create(id=k, name="w", n=n)
                        v = n
                    else:
                        u.n = n
                        u.save(update_fields=["n"])
                        v = n
                acks[k] = v
                writes[w] += 1
                time.sleep(0.001)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    new, _ = plan.add_shards(shop.cluster.router("users"), "s4")
    m = Migration.create(shop.cluster, "users", new)
    assert m.run(chunk=100) == "retained"
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    m.cleanup()
    assert not errors, errors
    assert min(writes) > 0 and sum(writes) >= 30, writes
    final: dict[int, tuple[Any, ...]] = {}
    for s in SHARDS:
        for k, row in shop.rows(s).items():
            assert k not in final and new.route(k) == s, (k, s)
            final[k] = row
    for k, v in acks.items():
        if v is None:
            assert k not in final
        else:
            assert final[k][2] == v


def test_guard_false_leaves_the_shard_key_guard_out(shop: Shop) -> None:
    _add_users(range(1, 3))
    rt = shop.cluster.router("users")
    same = next(k for k in range(3, 200) if rt.route(k) == rt.route(1))
    with sharded_atomic(1, guard=False) as alias:
        with connections[alias].cursor() as cur:
            cur.execute("INSERT INTO shop_user (id, name, n) VALUES (%s, 'x', 0)", [same])
    assert same in shop.rows(rt.route(1))  # (not refused: no guard)


def test_databases_builds_the_shards_entries(tmp_path: Path) -> None:
    from shardhash import JumpRouter
    from shardhash.django import databases

    doc = {"metadata": f"sqlite:{tmp_path / 'm.db'}",
           "shards": {"a": {"primary": f"sqlite:{tmp_path / 'a.db'}"},
                      "b": {"primary": "postgresql:host=/run/pg port=5999 dbname=app user=svc "
                                       "options='-csearch_path=b'"}},
           "groups": {"g": {"router": JumpRouter(["a", "b"]).to_dict(), "tables": [{"name": "t", "key": "k"}]}}}
    cl = Cluster.from_dict(doc)
    dbs = databases(cl, default={"ENGINE": "django.db.backends.sqlite3", "NAME": "x.db"}, aliases={"b": "pg_b"})
    assert set(dbs) == {"default", "a", "pg_b"}
    assert dbs["a"]["NAME"] == str(tmp_path / "a.db") and dbs["a"]["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    pg = dbs["pg_b"]
    assert (pg["ENGINE"], pg["NAME"], pg["USER"], pg["HOST"], pg["PORT"]) == \
        ("django.db.backends.postgresql", "app", "svc", "/run/pg", "5999")
    assert pg["OPTIONS"] == {"options": "-csearch_path=b"}
    cl.close()


def test_capture_skips_only_keys_that_do_not_move_and_the_skip_marker_never_commits(shop: Shop) -> None:
    _add_users(range(1, 121))
    old = shop.cluster.router("users")
    new, _ = plan.add_shards(old, "s4")
    m = Migration.create(shop.cluster, "users", new)
    m.run(cutover=False)  # (copied; the capture of the sources stays on until the cutover)
    moving = next(k for k in range(1, 121) if new.route(k) == "s4")
    staying = next(k for k in range(1, 121) if new.route(k) == old.route(k) == old.route(moving))
    src = old.route(moving)

    def changes() -> list[tuple[Any, ...]]:
        c = sqlite3.connect(DIR / f"{src}.db")
        try:
            assert c.execute("SELECT count(*) FROM _shardhash_skip").fetchone() == (0,)
            return c.execute("SELECT tbl, pk FROM _shardhash_changes WHERE state = 0").fetchall()
        finally:
            c.close()

    before = changes()
    with sharded_atomic(staying):
        User.objects.filter(id=staying).update(n=5)
    assert changes() == before  # (a key no unit moves: not captured)
    with sharded_atomic(moving):
        User.objects.filter(id=moving).update(n=6)
    assert changes()[len(before):] == [("shop_user", f"[{moving}]")]
    assert m.run() == "retained"
    assert shop.rows("s4")[moving][2] == 6 and shop.rows(src)[staying][2] == 5


def test_a_shard_set_up_by_an_older_version_is_guarded(shop: Shop) -> None:
    """No guard table, no guarded-table list, no guard triggers in the file
    (as an older version left it): the block still guards the cluster
    file's tables, on the connection, before any init."""
    _add_users(range(1, 3))
    rt = shop.cluster.router("users")
    shard = rt.route(1)
    same = next(k for k in range(3, 200) if rt.route(k) == shard)
    c = sqlite3.connect(DIR / f"{shard}.db")
    q = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '_shardhash_g%'"
    for (name,) in c.execute(q).fetchall():
        c.execute(f'DROP TRIGGER "{name}"')  # (a name read from the schema)
    c.execute("DROP TABLE _shardhash_guard")
    c.execute("DROP TABLE _shardhash_guarded")
    c.commit()
    c.close()
    connections.close_all()  # (new connections: no guard of an earlier block on them)
    with sharded_atomic(1):
        User.objects.filter(id=1).update(n=9)
    with pytest.raises(ShardKeyError, match="rolled back"):
        with sharded_atomic(1):
            User.objects.filter(id=1).update(n=10)
            User.objects.create(id=same, name="another key")
    rows = shop.rows(shard)
    assert rows[1][2] == 9 and same not in rows


def test_the_guard_survives_an_outer_transaction_rolled_back(shop: Shop) -> None:
    """A connection's first guarded block inside an application's outer
    transaction makes the guard's TEMP triggers there; the outer transaction
    rolls back and takes them: the next block makes them again, and still
    refuses a row of another key."""
    from django.db import transaction

    _add_users(range(1, 3))
    rt = shop.cluster.router("users")
    shard = rt.route(1)
    same = next(k for k in range(3, 200) if rt.route(k) == shard)
    connections.close_all()  # (new connections: their first guarded block is the one below)
    with pytest.raises(RuntimeError):
        with transaction.atomic(using=shard):
            with sharded_atomic(1):
                User.objects.filter(id=1).update(n=3)
            raise RuntimeError("the application gives up")
    for _ in range(2):
        with pytest.raises(ShardKeyError, match="rolled back"):
            with sharded_atomic(1):
                User.objects.filter(id=1).update(n=4)
                User.objects.create(id=same, name="another key")
        with sharded_atomic(1):
            User.objects.filter(id=1).update(n=5)
    rows = shop.rows(shard)
    assert rows[1][2] == 5 and same not in rows
