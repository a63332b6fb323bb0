"""Django settings of tests/django only: five SQLite shard databases (s0..s4)
and a default one in a temporary folder, the test app ``shop``, configured
when this folder is collected (the rest of the suite never imports Django).
Each test gets fresh databases and its own cluster and router (fixture
``shop``)."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter
from shardhash.migrate import Cluster

try:
    import django
except ImportError:  # (the test modules skip, or fail in CI)
    django = None

SHARDS = ["s0", "s1", "s2", "s3", "s4"]
DIR = Path(tempfile.mkdtemp(prefix="shardhash-django-"))
atexit.register(shutil.rmtree, DIR, True)


def _sqlite(name: str) -> dict[str, Any]:
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(DIR / f"{name}.db"),
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 60}}


if django is not None:
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            DATABASES={"default": _sqlite("default"), **{s: _sqlite(s) for s in SHARDS}},
            INSTALLED_APPS=["tests.django.shop"],
            DATABASE_ROUTERS=[],
            USE_TZ=True,
            DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        )
        django.setup()


@dataclass
class Shop:
    cluster: Cluster
    router: Any  # shardhash.django.ShardRouter
    path: Path

    def rows(self, shard: str, table: str = "shop_user") -> dict[int, tuple[Any, ...]]:
        import sqlite3

        c = sqlite3.connect(DIR / f"{shard}.db")
        try:
            return {r[0]: tuple(r) for r in c.execute(f"SELECT * FROM {table}")}  # (a fixed table name)
        finally:
            c.close()


@pytest.fixture
def real_databases(request: pytest.FixtureRequest) -> Iterator[None]:
    """These tests use the configured databases themselves: with
    pytest-django installed, its blocker is lifted for them (its test
    databases are not used)."""
    try:
        blocker = request.getfixturevalue("django_db_blocker")
    except pytest.FixtureLookupError:
        yield
        return
    with blocker.unblock():
        yield


@pytest.fixture
def shop(tmp_path: Path, real_databases: None) -> Iterator[Shop]:
    """Fresh databases with the shop tables on every shard (by Django's
    migrate, under the router's allow_migrate), a cluster over s0..s4 whose
    jump router places users on s0..s3, and the router installed."""
    from django.core.management import call_command
    from django.db import connections
    from django.test import override_settings

    from shardhash.django import ShardRouter

    connections.close_all()
    for f in DIR.iterdir():
        f.unlink()
    doc = {"metadata": f"sqlite:{tmp_path / 'meta.db'}",
           "shards": {s: {"primary": f"sqlite:{DIR / (s + '.db')}"} for s in SHARDS},
           "groups": {"users": {"router": JumpRouter(SHARDS[:4]).to_dict(), "key_type": "int",
                                "tables": [{"name": "shop_user", "key": "id"},
                                           {"name": "shop_order", "key": "user_id"}]}},
           "options": {"synchronous": "NORMAL"}}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(doc))
    cl = Cluster.load(path)
    router = ShardRouter(cl, {"shop": "users"})
    with override_settings(DATABASE_ROUTERS=[router]):
        for alias in ["default", *SHARDS]:
            call_command("migrate", database=alias, run_syncdb=True, verbosity=0)
        cl.init()
        yield Shop(cl, router, path)
        connections.close_all()
    cl.close()
