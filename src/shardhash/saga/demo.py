"""``shardhash demo --saga``: transfers between accounts on different shards, as sagas.

Accounts on four SQLite shards (jump hash); eight worker processes make
random transfers (debit on the payer's shard, credit on the payee's, a
refund when the credit is refused: one account in 100 is closed); halfway a
fifth shard joins (a live migration in its own process), and one worker is
SIGKILLed mid-run.  At the end a recovery worker finishes the killed
worker's sagas, the outbox relay delivers every event, and the demo prints
the sagas completed / compensated / stuck, the balance total before and
after, and the steps applied twice -- counted from the shards' own ledger
rows (each step writes one, with a random id, in its transaction).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from .core import Saga, StepContext, StepFailed

START = 1000
LEASE = 2.0
SHARDS = [f"shard-{i}" for i in range(4)]
NEW = "shard-4"


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _add(ctx: StepContext, account: int, amount: int, step: str) -> None:
    r = ctx.execute("SELECT balance FROM accounts WHERE id = ?", (account,)).fetchone()
    if r is None:
        raise StepFailed(f"no account {account}")
    if r[0] + amount < 0:
        raise StepFailed(f"account {account}: insufficient funds")
    ctx.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, account))
    ctx.execute("INSERT INTO ledger VALUES (?, ?, ?, ?, ?)", (uuid.uuid4().hex, account, ctx.saga_id, step, amount))


def transfer_saga(lease: float = LEASE) -> Saga:
    """The demo's saga: debit (compensated by a refund), then credit (refused for a closed account)."""
    t = Saga("demo-transfer", lease=lease)

    def refund(ctx: StepContext, a: dict[str, Any], result: Any) -> None:
        _add(ctx, a["from"], a["amount"], "refund")
        ctx.emit("refunded", a)

    @t.step(key=lambda a: a["from"], compensate=refund, retries=50, deadline=120.0)
    def debit(ctx: StepContext, a: dict[str, Any]) -> None:
        _add(ctx, a["from"], -a["amount"], "debit")
        ctx.emit("debited", a)

    @t.step(key=lambda a: a["to"], retries=50, deadline=120.0)
    def credit(ctx: StepContext, a: dict[str, Any]) -> None:
        if a["to"] % 100 == 0:
            raise StepFailed(f"account {a['to']} is closed")
        _add(ctx, a["to"], a["amount"], "credit")
        ctx.emit("credited", a)

    return t


def worker(config: str, accounts: int, seed: int, stop: str, lease: float = LEASE) -> None:
    """One worker process: random transfers until the file ``stop`` exists."""
    from ..migrate.cluster import Cluster

    cl = Cluster.load(config)
    t = transfer_saga(lease)
    rnd = random.Random(seed)
    while not os.path.exists(stop):
        a, b = rnd.randrange(1, accounts + 1), rnd.randrange(1, accounts + 1)
        if a != b:
            t.start(cl, {"from": a, "to": b, "amount": rnd.randint(1, 100)})


def _totals(root: Path) -> tuple[int, Counter[tuple[str, str]]]:
    total = 0
    steps: Counter[tuple[str, str]] = Counter()
    for s in SHARDS + [NEW]:
        c = sqlite3.connect(root / f"{s}.db")
        total += c.execute("SELECT COALESCE(SUM(balance), 0) FROM accounts").fetchone()[0]
        steps.update((str(r[0]), str(r[1])) for r in c.execute("SELECT saga_id, step FROM ledger"))
        c.close()
    return int(total), steps


def run_demo(accounts: int = 100_000, *, workers: int = 8, seconds: float = 20.0, folder: str | None = None,
             quiet: bool = False, seed: int = 7, lease: float = LEASE) -> dict[str, Any]:
    """Run the demo; returns its figures (see the module docstring).  The workers run
    ``seconds`` or until the migration is done, whichever is later.  ``lease``:
    the sagas' lease (how long the killed worker's sagas wait for a takeover)."""
    from .. import JumpRouter
    from ..migrate import Migration
    from ..migrate.cluster import Cluster
    from . import core, outbox
    from ._tables import DEFAULT_TABLES

    say = (lambda s: None) if quiet else _say
    tmp = tempfile.TemporaryDirectory(prefix="shardhash-saga-", ignore_cleanup_errors=True) if folder is None else None
    root = Path(folder or tmp.name)  # type: ignore[union-attr]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        t0 = time.perf_counter()
        router = JumpRouter(SHARDS)
        ids = list(range(1, accounts + 1))
        owner = router.route_many(ids).tolist()
        for i, s in enumerate(SHARDS + [NEW]):
            c = sqlite3.connect(root / f"{s}.db")
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
            c.execute("CREATE TABLE ledger (entry TEXT PRIMARY KEY, account INTEGER NOT NULL, saga_id TEXT NOT NULL, "
                      "step TEXT NOT NULL, amount INTEGER NOT NULL)")
            if i < 4:
                c.executemany("INSERT INTO accounts VALUES (?, ?)", ((k, START) for k, o in zip(ids, owner) if o == i))
            c.commit()
            c.close()
        doc = {"metadata": "sqlite:meta.db",
               "shards": {s: {"primary": f"sqlite:{s}.db"} for s in SHARDS + [NEW]},
               "groups": {"accounts": {"router": router.to_dict(), "key_type": "int",
                                       "tables": [{"name": "accounts", "key": "id"},
                                                  {"name": "ledger", "key": "account"},
                                                  *DEFAULT_TABLES.entries()]}},
               "options": {"synchronous": "NORMAL", "retries": 10, "wait_timeout": 120}}
        config = root / "cluster.json"
        config.write_text(json.dumps(doc))
        cluster = Cluster.load(config)
        core.setup(cluster)
        before, _ = _totals(root)
        say(f"{accounts:,} accounts on 4 SQLite shards ({time.perf_counter() - t0:.1f} s to load), "
            f"balance total {before:,}; {workers} workers make transfers for {seconds:g} s")
        stop = root / "stop"
        env = dict(os.environ)
        for w in range(workers):
            code = (f"from shardhash.saga.demo import worker; worker({str(config)!r}, {accounts}, {seed * 100 + w}, "
                    f"{str(stop)!r}, {lease!r})")
            procs.append(subprocess.Popen([sys.executable, "-c", code], env=env))
        t_run = time.monotonic()
        time.sleep(seconds * 0.3)
        # kill worker 0 while it drives a saga (its pid is in the owner of the sagas it holds)
        mid_saga = False
        meta = cluster.metadata.db.conn()
        t_kill = time.monotonic() + 10
        while not mid_saga and time.monotonic() < t_kill:
            mid_saga = meta.execute("SELECT COUNT(*) FROM sagas WHERE state = 'running' AND owner LIKE ?",
                                    (f"%:{procs[0].pid}:%",)).fetchone()[0] > 0
            if not mid_saga:
                time.sleep(0.01)
        procs[0].send_signal(signal.SIGKILL)
        say(f"  {time.monotonic() - t_run:.0f} s: worker 0 killed (SIGKILL)"
            + (" while it drove a saga" if mid_saga else ""))
        time.sleep(max(0.0, seconds * 0.5 - (time.monotonic() - t_run)))
        say(f"  {time.monotonic() - t_run:.0f} s: a fifth shard joins (shardhash migrate start --add {NEW})")
        t_mig = time.perf_counter()
        mig = subprocess.run([sys.executable, "-m", "shardhash", "migrate", "start", "--config", str(config),
                              "--add", NEW, "-q"], capture_output=True, text=True, env=env)
        mig_s = time.perf_counter() - t_mig
        if mig.returncode != 0:
            raise RuntimeError(f"the migration failed: {mig.stderr.strip()[-2000:]}")
        say(f"  the migration cut over after {mig_s:.1f} s")
        time.sleep(max(0.0, seconds - (time.monotonic() - t_run)))
        stop.touch()
        run_s = time.monotonic() - t_run
        for p in procs[1:]:
            p.wait()
        procs[0].wait()
        failed = [i for i, p in enumerate(procs) if i > 0 and p.returncode != 0]
        m = Migration(cluster, cluster.metadata.migrations("accounts")[-1]["id"])
        m.cleanup()
        # the killed worker's sagas: a recovery worker takes them over once their lease expires
        transfer_saga(lease)
        t_rec = time.perf_counter()
        recovered = 0
        while True:
            now = core.counts(cluster)
            if now["running"] + now["compensating"] == 0:
                break
            recovered += core.Saga.recover(cluster, once=True)
            time.sleep(0.2)
        rec_s = time.perf_counter() - t_rec
        delivered = outbox.Relay(cluster).poll(lambda e: None)
        after, steps = _totals(root)
        counts = core.counts(cluster)
        twice = sum(1 for v in steps.values() if v > 1)
        snap = core.metrics.snapshot()
        res = {"accounts": accounts, "workers": workers, "seconds": run_s, "sagas": sum(counts.values()),
               "completed": counts["completed"], "compensated": counts["compensated"], "stuck": counts["stuck"],
               "running": counts["running"] + counts["compensating"], "recovered": recovered, "lease": lease,
               "killed_mid_saga": mid_saga,
               "recover_seconds": rec_s, "balance_before": before, "balance_after": after,
               "steps_applied": sum(steps.values()), "steps_applied_twice": twice,
               "events_delivered": delivered, "migration_seconds": mig_s, "worker_failures": failed,
               "stale_retries": cluster.metrics.stale_retries, "recover_step_seconds": snap["step_seconds"]}
        cluster.close()
        return res
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if tmp is not None:
            tmp.cleanup()


def main(args: argparse.Namespace) -> int:
    """Entry point of ``shardhash demo --saga``."""
    res = run_demo(args.accounts, workers=args.workers, seconds=args.seconds, quiet=args.json)
    if args.json:
        _say(json.dumps(res, indent=2, default=str))
    else:
        _say("")
        _say(f"sagas: {res['sagas']:,} in {res['seconds']:.0f} s ({res['sagas'] / res['seconds']:,.0f}/s) -- "
             f"completed: {res['completed']:,}, "
             f"compensated: {res['compensated']:,}, stuck: {res['stuck']}, unfinished: {res['running']}")
        _say(f"the killed worker's sagas finished by the recovery worker: {res['recovered']} "
             f"({res['recover_seconds']:.1f} s, leases of {res['lease']:g} s)")
        _say(f"balance total before: {res['balance_before']:,}, after: {res['balance_after']:,}")
        _say(f"outbox events delivered: {res['events_delivered']:,}")
        _say(f"steps applied: {res['steps_applied']:,}, applied twice: {res['steps_applied_twice']} "
             "(from the shards' ledger rows)")
        if res["worker_failures"]:
            _say(f"workers that failed: {res['worker_failures']}")
    ok = (res["stuck"] == 0 and res["running"] == 0 and res["balance_before"] == res["balance_after"]
          and res["steps_applied_twice"] == 0 and not res["worker_failures"])
    return 0 if ok else 1
