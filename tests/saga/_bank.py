"""A small bank for the saga tests: accounts on SQLite files or PostgreSQL
schemas, the saga's tables in the accounts group, and a transfer saga whose
steps also write a ledger row (with a random id: a step applied twice would
leave two rows) and an outbox event."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from shardhash import JumpRouter
from shardhash.migrate import Cluster
from shardhash.migrate.cluster import open_backend
from shardhash.saga import Saga, StepContext, StepFailed, setup
from tests.migrate._harness import create_schemas, shard_url

ACCOUNTS = ("CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL)",)
LEDGER = ("CREATE TABLE ledger (entry TEXT PRIMARY KEY, account BIGINT NOT NULL, saga_id TEXT NOT NULL, "
          "step TEXT NOT NULL, amount BIGINT NOT NULL)",)
START = 1000


def make_bank(root: Path, backend: str, shards: list[str], *, accounts: int = 20, spare: tuple[str, ...] = (),
              metadata: str = "sqlite", **opts: Any) -> Cluster:
    """``accounts`` accounts (ids 1..n, START each) on ``shards`` by jump hash;
    ``spare`` shards are in the shard map but own nothing (yet)."""
    root.mkdir(parents=True, exist_ok=True)
    router = JumpRouter(shards)
    every = list(shards) + list(spare)
    if backend != "sqlite":
        create_schemas(backend, root, every + (["meta"] if metadata != "sqlite" else []))
    urls = {s: shard_url(backend, root, s) for s in every}
    owners = router.route_many(list(range(1, accounts + 1))).tolist()
    for s in every:
        c = open_backend(urls[s], root).connect()
        c.execute("BEGIN")
        for q in ACCOUNTS + LEDGER:
            c.execute(q)
        if s in shards:
            rows = [(i + 1, START) for i, o in enumerate(owners) if router.shards[o] == s]
            if rows:
                c.executemany("INSERT INTO accounts VALUES (?, ?)", rows)
        c.execute("COMMIT")
        c.close()
    meta_url = "sqlite:meta.db"
    if metadata != "sqlite":
        meta_url = shard_url(metadata, root, "meta")
    doc = {
        "metadata": meta_url,
        "shards": {s: {"primary": urls[s]} for s in every},
        "groups": {"accounts": {"router": router.to_dict(), "key_type": "int",
                                "tables": [{"name": "accounts", "key": "id"}, {"name": "ledger", "key": "account"},
                                           {"name": "saga_steps", "key": "shard_key"},
                                           {"name": "saga_outbox", "key": "shard_key"},
                                           {"name": "saga_locks", "key": "shard_key"}]}},
        "options": {"synchronous": "NORMAL", "retries": 10, **opts},
    }
    (root / "cluster.json").write_text(json.dumps(doc))
    cl = Cluster.load(root / "cluster.json")
    cl.init()
    setup(cl)
    return cl


def _ledger(ctx: StepContext, account: int, step: str, amount: int) -> None:
    ctx.execute("INSERT INTO ledger VALUES (?, ?, ?, ?, ?)", (uuid.uuid4().hex, account, ctx.saga_id, step, amount))


def _add(ctx: StepContext, account: int, amount: int) -> int:
    r = ctx.execute("SELECT balance FROM accounts WHERE id = ?", (account,)).fetchone()
    if r is None:
        raise StepFailed(f"no account {account}")
    if r[0] + amount < 0:
        raise StepFailed(f"account {account}: insufficient funds")
    ctx.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, account))
    return int(r[0]) + amount


def refund(ctx: StepContext, a: dict[str, Any], result: Any) -> None:
    _add(ctx, a["from"], a["amount"])
    _ledger(ctx, a["from"], "refund", a["amount"])
    ctx.emit("refunded", {"account": a["from"], "amount": a["amount"]})


def make_transfer(name: str = "transfer", *, lock: bool = False, log_steps: bool = True,
                  lease: float = 30.0) -> Saga:
    """debit (compensated by a refund) then credit; a credit to a negative
    amount's account... fails permanently when ``a["fail"]`` is set."""
    saga = Saga(name, lease=lease, log_steps=log_steps)

    @saga.step(key=lambda a: a["from"], compensate=refund, retries=20, deadline=60.0)
    def debit(ctx: StepContext, a: dict[str, Any]) -> int:
        left = _add(ctx, a["from"], -a["amount"])
        _ledger(ctx, a["from"], "debit", -a["amount"])
        ctx.emit("debited", {"account": a["from"], "amount": a["amount"]})
        if lock:
            ctx.lock("transfer out")
        return left

    @saga.step(key=lambda a: a["to"], retries=20, deadline=60.0)
    def credit(ctx: StepContext, a: dict[str, Any]) -> int:
        if a.get("fail"):
            raise StepFailed("the receiving account is closed")
        left = _add(ctx, a["to"], a["amount"])
        _ledger(ctx, a["to"], "credit", a["amount"])
        ctx.emit("credited", {"account": a["to"], "amount": a["amount"]})
        return left

    return saga


def shard_table(cluster: Cluster, shard: str, table: str) -> list[tuple[Any, ...]]:
    """Every row of a table on one shard, read straight from its database."""
    b = cluster.backend(shard)
    c = b.connect()
    try:
        if not b.has_table(c, table):
            return []
        return [tuple(r) for r in c.execute(f'SELECT * FROM "{table}"').fetchall()]
    finally:
        c.close()


def balances(cluster: Cluster) -> dict[int, int]:
    """Every account's balance, from every shard (an account on two shards is an error)."""
    out: dict[int, int] = {}
    for s in cluster.shard_ids():
        for k, bal in shard_table(cluster, s, "accounts"):
            assert k not in out, f"account {k} is on two shards"
            out[int(k)] = int(bal)
    return out
