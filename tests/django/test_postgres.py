"""shardhash.django with its shards on a real PostgreSQL server (one schema
per shard): Django's migrate puts the sharded tables on every shard, writes
in ``sharded_atomic`` land on the key's owner, a point read asks only it, the
guard refuses a row of another key, and a stale router is refreshed and the
block retried -- or, with no retries left, refused with StaleRouteError
before anything is written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support import oracle_required

if not oracle_required():  # (in CI a missing Django fails the import below)
    pytest.importorskip("django", reason="pip install 'shardhash[django]'")

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402
from django.test import override_settings  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from shardhash import JumpRouter, plan  # noqa: E402
from shardhash.django import ShardRouter, databases, sharded_atomic  # noqa: E402
from shardhash.migrate import Cluster, Migration, ShardKeyError, StaleRouteError  # noqa: E402
from tests._postgres import need_postgres  # noqa: E402
from tests.migrate._harness import create_schemas, drop_cluster, shard_url  # noqa: E402

from .shop.models import Order, User  # noqa: E402

PG = ["p0", "p1", "p2", "p3"]


class _PGShop:
    def __init__(self, cluster: Cluster, router: ShardRouter, path: Path, aliases: dict[str, str]) -> None:
        self.cluster, self.router, self.path, self.aliases = cluster, router, path, aliases

    def rows(self, shard: str) -> dict[int, tuple[Any, ...]]:
        b = self.cluster.backend(shard)
        c = b.connect()
        try:
            return {int(r[0]): tuple(r) for r in c.execute("SELECT id, name, n FROM shop_user").fetchall()}
        finally:
            b.rollback(c)
            c.close()


@pytest.fixture
def pgshop(tmp_path: Path, real_databases: None) -> Iterator[_PGShop]:
    """A cluster of four PostgreSQL shards (p0..p3; users on p0..p2 by a
    jump router), each a Django database alias (``pg-p0``...) added for this
    test, the shop tables made there by Django's migrate under the router."""
    dsn = need_postgres()
    create_schemas(dsn, tmp_path, ["meta", *PG])
    doc = {"metadata": shard_url(dsn, tmp_path, "meta"),
           "shards": {s: {"primary": shard_url(dsn, tmp_path, s)} for s in PG},
           "groups": {"users": {"router": JumpRouter(PG[:3]).to_dict(), "key_type": "int",
                                "tables": [{"name": "shop_user", "key": "id"},
                                           {"name": "shop_order", "key": "user_id"}]}}}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(doc))
    cl = Cluster.load(path)
    aliases = {s: f"pg-{s}" for s in PG}
    entries = databases(cl, aliases=aliases)
    filled = connections.configure_settings({"default": connections.settings["default"], **entries})
    connections.settings.update({a: filled[a] for a in entries})
    router = ShardRouter(cl, {"shop": "users"}, aliases=aliases)
    try:
        with override_settings(DATABASE_ROUTERS=[router]):
            for alias in aliases.values():
                call_command("migrate", database=alias, run_syncdb=True, verbosity=0)
            cl.init()
            yield _PGShop(cl, router, path, aliases)
    finally:
        for alias in aliases.values():
            connections[alias].close()
            del connections[alias]
            del connections.settings[alias]
        cl.close()
        drop_cluster(tmp_path, dsn)


def test_writes_land_on_the_owner_on_postgresql(pgshop: _PGShop) -> None:
    assert all(pgshop.router.allow_migrate(a, "shop") for a in pgshop.aliases.values())
    rt = pgshop.cluster.router("users")
    for k in range(1, 61):
        with sharded_atomic(k) as alias:
            assert alias == pgshop.aliases[rt.route(k)]
            User.objects.create(id=k, name=f"u{k}")
            Order.objects.create(oid=k * 10, user_id=k, total=k)
    seen: set[int] = set()
    for s in PG[:3]:
        users = pgshop.rows(s)
        assert users and all(rt.route(k) == s for k in users)
        seen |= set(users)
    assert seen == set(range(1, 61)) and not pgshop.rows("p3")
    ctx = {a: CaptureQueriesContext(connections[a]) for a in pgshop.aliases.values()}
    for c in ctx.values():
        c.__enter__()
    u = User.objects.db_manager(hints={"shard_key": 17}).get(id=17)
    for c in ctx.values():
        c.__exit__(None, None, None)
    assert u.name == "u17"
    assert {a for a, c in ctx.items() if c.captured_queries} == {pgshop.aliases[rt.route(17)]}
    # the guard (PostgreSQL's trigger refuses the statement): nothing of the block committed
    same = next(k for k in range(61, 400) if rt.route(k) == rt.route(1))
    with pytest.raises(ShardKeyError):
        with sharded_atomic(1):
            User.objects.filter(id=1).update(n=5)
            User.objects.create(id=same, name="another key")
    rows = pgshop.rows(rt.route(1))
    assert rows[1][2] == 0 and same not in rows


def test_sharded_atomic_refuses_a_stale_router_on_postgresql(pgshop: _PGShop) -> None:
    for k in range(1, 121):
        with sharded_atomic(k):
            User.objects.create(id=k, name=f"u{k}")
    old = pgshop.cluster.router("users")
    mover = Cluster.load(pgshop.path)
    new, _ = plan.add_shards(mover.router("users"), "p3")
    assert Migration.create(mover, "users", new).run() == "retained"
    moved = [k for k in range(1, 121) if new.route(k) == "p3"]
    assert moved
    k = moved[0]
    # with no retry left, the stale router is refused before the block runs
    pgshop.cluster.retries = 0
    ran = []
    with pytest.raises(StaleRouteError):
        with sharded_atomic(k):
            ran.append(k)
            User.objects.filter(id=k).update(n=7)
    assert not ran and pgshop.rows(old.route(k))[k][2] == 0 and pgshop.rows("p3")[k][2] == 0
    # with retries, the router is refreshed and the write lands on the new owner
    pgshop.cluster.retries = 3
    with sharded_atomic(k) as alias:
        User.objects.filter(id=k).update(n=9)
    assert alias == pgshop.aliases["p3"] and pgshop.rows("p3")[k][2] == 9
    assert pgshop.rows(old.route(k))[k][2] == 0
    mover.close()
