"""The Django half of bench/bench_integrations.py, in a process of its own:
``python bench/_django_overhead.py DIR N ROUNDS`` prints one JSON line,
{operation: {"plain": seconds, "sharded": seconds}} for N requests (best of
ROUNDS rounds in alternation)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # (bench._timing)

SHARDS = ["s0", "s1", "s2", "s3"]
ROWS = 2000


def main(argv: list[str]) -> int:
    root, n, rounds = Path(argv[0]), int(argv[1]), int(argv[2])
    import django
    from django.conf import settings

    from bench._timing import alternating_best
    from shardhash import JumpRouter
    from shardhash.migrate import Cluster

    r = JumpRouter(SHARDS)
    for name in [*SHARDS, "plain"]:
        with sqlite3.connect(root / f"{name}.db") as c:
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER NOT NULL)")
            c.executemany("INSERT INTO accounts VALUES (?, ?, 0)",
                          [(k, f"a{k}") for k in range(1, ROWS + 1) if name == "plain" or r.route(k) == name])
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": f"sqlite:{s}.db"} for s in SHARDS},
           "groups": {"accounts": {"router": r.to_dict(), "key_type": "int",
                                   "tables": [{"name": "accounts", "key": "id"}]}},
           "options": {"synchronous": "NORMAL"}}
    cl = Cluster.from_dict(doc, base_dir=root)
    cl.init()
    from shardhash.django import ShardRouter, databases, sharded_atomic

    dbs = databases(cl, default={"ENGINE": "django.db.backends.sqlite3", "NAME": str(root / "plain.db"),
                                 "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 60}})
    dbs["plain"] = dbs.pop("default")
    dbs["default"] = {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
    for d in dbs.values():
        d.setdefault("OPTIONS", {})["init_command"] = "PRAGMA synchronous=NORMAL"
    settings.configure(DATABASES=dbs, INSTALLED_APPS=["bench._django_app"],
                       DATABASE_ROUTERS=[ShardRouter(cl, {"benchapp": "accounts"})], USE_TZ=True)
    django.setup()
    from django.db import transaction
    from django.db.models import F

    from bench._django_app.models import Account

    keys = [1 + (i * 7919) % ROWS for i in range(n)]

    def read_plain() -> None:
        for k in keys:
            Account.objects.using("plain").get(id=k)

    def read_sharded() -> None:
        for k in keys:
            Account.objects.db_manager(hints={"shard_key": k}).get(id=k)

    def upd_plain() -> None:
        for k in keys:
            with transaction.atomic(using="plain"):
                Account.objects.using("plain").filter(id=k).update(n=F("n") + 1)

    def upd_sharded() -> None:
        for k in keys:
            with sharded_atomic(k):
                Account.objects.filter(id=k).update(n=F("n") + 1)

    def upd_unguarded() -> None:
        for k in keys:
            with sharded_atomic(k, guard=False):
                Account.objects.filter(id=k).update(n=F("n") + 1)

    out: dict[str, Any] = {}
    out["point read"] = alternating_best({"plain": read_plain, "sharded": read_sharded}, repeat=rounds)
    out["point update"] = alternating_best({"plain": upd_plain, "sharded": upd_sharded,
                                            "sharded, guard=False": upd_unguarded}, repeat=rounds)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
