"""Sagas: transfers per second, and their cost against the same two local
transactions written by hand.

A transfer debits an account on one shard and credits one on another (each
step: read the balance, update it, insert a ledger row, put an event in the
outbox).  By hand it is two ``cluster.transaction(key)`` blocks doing the
same; as a saga it is :meth:`Saga.start`, which also records the saga in the
metadata store, each step's idempotency record on its shard, and the end
(``log_steps=False``: the start and the end only; the default also records
each step's progress).  One thread, shards with ``synchronous=FULL`` (the
metadata store always is).  ``SHARDHASH_BENCH_SAGAS`` sets the transfers per
round (default 300), three rounds, the median reported.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from shardhash import saga
from shardhash.migrate import Cluster
from tests._postgres import need_postgres
from tests.migrate._harness import drop_cluster
from tests.saga._bank import make_bank, make_transfer

ACCOUNTS = 400


def _enabled(benchmark: Any) -> bool:
    return not getattr(benchmark, "disabled", False)


def _by_hand(cl: Cluster, a: dict[str, Any]) -> None:
    """The same two local transactions without a saga (no records, no log)."""
    for account, amount, step, topic in ((a["from"], -a["amount"], "debit", "debited"),
                                         (a["to"], a["amount"], "credit", "credited")):
        with cl.transaction(account) as tx:
            r = tx.execute("SELECT balance FROM accounts WHERE id = ?", (account,)).fetchone()
            assert r is not None and r[0] + amount >= 0
            tx.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, account))
            tx.execute("INSERT INTO ledger VALUES (?, ?, ?, ?, ?)", (uuid.uuid4().hex, account, "hand", step, amount))
            tx.execute("INSERT INTO saga_outbox (event_id, shard_key, seq, topic, payload, saga_id, created) VALUES "
                       "(?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM saga_outbox WHERE shard_key = ?), ?, ?, "
                       "NULL, ?)", (uuid.uuid4().hex, account, account, topic, "{}", time.time()))


def _run(backend: str, n: int, rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as d:
        root = Path(d)
        cl = make_bank(root, backend, ["a", "b", "c", "d"], accounts=ACCOUNTS, metadata=backend, synchronous="FULL")
        try:
            router = cl.router("accounts")
            pairs = [(i, j) for i in range(1, ACCOUNTS + 1) for j in (i + 1, i + 2)
                     if j <= ACCOUNTS and router.route(i) != router.route(j)]
            logged, lean = make_transfer("bench-logged"), make_transfer("bench-lean", log_steps=False)
            times: dict[str, list[float]] = {"hand": [], "saga": [], "saga_lean": []}
            k = 0
            for _ in range(rounds):
                for name in times:
                    t0 = time.perf_counter()
                    for _ in range(n):
                        i, j = pairs[k % len(pairs)]
                        k += 1
                        a = {"from": i, "to": j, "amount": 1}
                        if name == "hand":
                            _by_hand(cl, a)
                        else:
                            (logged if name == "saga" else lean).start(cl, a)
                    times[name].append((time.perf_counter() - t0) / n)
            assert saga.counts(cl)["completed"] == 2 * rounds * n
            med = {name: statistics.median(v) for name, v in times.items()}
            return {"hand_ms": med["hand"] * 1e3, "saga_ms": med["saga"] * 1e3, "saga_lean_ms": med["saga_lean"] * 1e3,
                    "saga_per_s": 1 / med["saga"], "saga_lean_per_s": 1 / med["saga_lean"],
                    "overhead": med["saga"] / med["hand"], "overhead_lean": med["saga_lean"] / med["hand"]}
        finally:
            cl.close()
            drop_cluster(root, backend)


@pytest.mark.parametrize("backend_name", ["sqlite", pytest.param("postgres", marks=pytest.mark.oracle)])
def test_saga_transfer_rate(benchmark: Any, backend_name: str) -> None:
    backend = "sqlite" if backend_name == "sqlite" else need_postgres()
    n = int(os.environ.get("SHARDHASH_BENCH_SAGAS", "300")) if _enabled(benchmark) else 10
    r = _run(backend, n, 3 if _enabled(benchmark) else 1)
    for key, v in r.items():
        benchmark.extra_info[key] = round(v, 3)
    print(f"\n{backend_name}: by hand {r['hand_ms']:.2f} ms per transfer; saga {r['saga_ms']:.2f} ms "
          f"({r['saga_per_s']:.0f}/s, {r['overhead']:.2f}x), log_steps=False {r['saga_lean_ms']:.2f} ms "
          f"({r['saga_lean_per_s']:.0f}/s, {r['overhead_lean']:.2f}x)")
    assert r["hand_ms"] > 0 and r["saga_ms"] > 0
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
