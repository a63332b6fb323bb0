"""Crash injection for sagas: at least 200 transfers between accounts on
different shards (some failing on purpose to force compensations), driven by
processes that are SIGKILLed at named points and at random moments, while a
migration adds a shard and an outbox relay (killed too) delivers the events.

Each driver process works through its share of the requests, each started
with an idempotency key (a restarted driver starts them all again: the key
returns the same saga, driven again only once its dead driver's lease
expired).  A recovery worker process (``Saga.recover``) takes over sagas whose
driver died.  Every driver or recoverer is killed at its first pass of one
named point (assigned in turn: after a step's commit and before the log
update, inside a compensation's transaction, right after a lease hand-over,
...), or by the test after a random delay; then a new one takes its place.

Then, with every process gone and the sagas finished by a last recovery:

* every request has exactly one saga, and every saga is ``completed`` or
  ``compensated`` (none ``running``, ``compensating`` or ``stuck``);
* the sum of the balances is what it was, every account is on exactly one
  shard, and each balance is its start plus its ledger rows;
* no step's effect is on the shards twice (ledger rows per saga and step),
  a completed saga has its debit and its credit, a compensated one a refund
  for each debit and no credit;
* every event in the outbox (a debit, credit or refund of the ledger) was
  delivered at least once, none is left undelivered, and no event is missing;
* every named point got a kill.

``SHARDHASH_CHAOS_SAGAS`` sets the number of sagas on SQLite (default 400),
``SHARDHASH_CHAOS_PG_SAGAS`` on PostgreSQL (default 250; shards and metadata
store on the server), ``SHARDHASH_CHAOS_SEED`` the seed (printed).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shardhash import plan, saga
from shardhash.migrate import Cluster, Migration
from tests._postgres import need_postgres
from tests._support import fork_child as _fork
from tests.migrate._harness import drop_cluster

from ._bank import START, balances, make_bank, make_transfer, shard_table

pytestmark = pytest.mark.chaos

ACCOUNTS = 200
DRIVERS = 4
LEASE = 0.8
# Named points a driver dies at (in turn), and those of the recovery worker.
DRIVER_POINTS = ["after-step-commit", "in-compensation", "after-compensation-commit", "in-step", "after-start",
                 "after-log-update", "before-final", "lease-acquired", "timer", None]
RECOVER_POINTS = ["lease-acquired", "after-step-commit", "in-compensation", "timer"]
MUST_KILL = ("after-step-commit", "in-compensation", "lease-acquired", "in-step", "before-final")


def _hook(point: str | None, kills: str) -> Callable[[str], None]:
    def hook(p: str) -> None:
        if p == point:
            with open(kills, "a") as f:
                f.write(p + "\n")
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _requests(n: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rnd.sample(range(1, ACCOUNTS + 1), 2)
        req: dict[str, Any] = {"from": a, "to": b, "amount": rnd.randint(1, 60)}
        if rnd.random() < 0.2:
            req["fail"] = True
        out.append(req)
    return out


def _driver(path: str, reqs: list[tuple[int, dict[str, Any]]], point: str | None, kills: str) -> None:
    cl = Cluster.load(path, retries=20, wait_timeout=120.0)
    t = make_transfer(lease=LEASE)
    saga.set_fault_hook(_hook(point, kills))
    for i, a in reqs:
        t.start(cl, a, idempotency_key=f"req-{i}")


def _recoverer(path: str, point: str | None, kills: str, stop: str) -> None:
    cl = Cluster.load(path, retries=20, wait_timeout=120.0)
    make_transfer(lease=LEASE)
    saga.set_fault_hook(_hook(point, kills))
    while not os.path.exists(stop):
        saga.Saga.recover(cl, once=True)
        time.sleep(0.1)


def _relay(path: str, out: str, stop: str) -> None:
    cl = Cluster.load(path, retries=20, wait_timeout=120.0)
    relay = saga.Relay(cl)
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT)

    def deliver(e: saga.Event) -> None:
        os.write(fd, (e.id + "\n").encode())

    while not os.path.exists(stop):
        relay.poll(deliver)
        time.sleep(0.05)


def _migrate(path: str) -> None:
    cl = Cluster.load(path, retries=20, wait_timeout=120.0)
    time.sleep(0.5)
    new, _ = plan.add_shards(cl.router("accounts"), "d")
    m = Migration.create(cl, "accounts", new)
    m.run()
    time.sleep(1.0)
    m.cleanup()


def _reap(pids: dict[int, Any], block: bool = False) -> list[tuple[Any, int]]:
    done = []
    for pid in list(pids):
        r, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        if r:
            done.append((pids.pop(pid), status))
    return done


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest) -> str:
    return "sqlite" if request.param == "sqlite" else need_postgres()


def test_sagas_survive_kills_and_a_migration(tmp_path: Path, where: str) -> None:
    if where == "sqlite":
        n = int(os.environ.get("SHARDHASH_CHAOS_SAGAS", "400"))
    else:
        n = int(os.environ.get("SHARDHASH_CHAOS_PG_SAGAS", "250"))
    seed = int(os.environ.get("SHARDHASH_CHAOS_SEED", str(random.randrange(1 << 30))))
    print(f"saga chaos: {n} sagas on {'SQLite' if where == 'sqlite' else 'PostgreSQL'}, seed {seed}")
    rnd = random.Random(seed)
    cl = make_bank(tmp_path, where, ["a", "b", "c"], spare=("d",), accounts=ACCOUNTS, metadata=where)
    cl.close()
    try:
        _run(tmp_path, n, seed, rnd)
    finally:
        drop_cluster(tmp_path, where)


def _run(tmp_path: Path, n: int, seed: int, rnd: random.Random) -> None:
    path = str(tmp_path / "cluster.json")
    kills, delivered = str(tmp_path / "kills.txt"), str(tmp_path / "delivered.txt")
    stop = str(tmp_path / "stop")
    reqs = list(enumerate(_requests(n, seed)))
    shares = [reqs[w::DRIVERS] for w in range(DRIVERS)]
    points = iter(DRIVER_POINTS * 1000)
    rpoints = iter(RECOVER_POINTS * 1000)

    procs: dict[int, Any] = {}

    def spawn(kind: Any) -> None:
        if kind[0] == "driver":
            pt = next(points)
            procs[_fork(lambda: _driver(path, shares[kind[1]], pt, kills))] = (kind, pt, time.monotonic())
        elif kind[0] == "recover":
            pt = next(rpoints)
            procs[_fork(lambda: _recoverer(path, pt, kills, stop))] = (kind, pt, time.monotonic())
        elif kind[0] == "relay":
            procs[_fork(lambda: _relay(path, delivered, stop))] = (kind, "timer", time.monotonic())
        else:
            procs[_fork(lambda: _migrate(path))] = (kind, None, time.monotonic())

    for w in range(DRIVERS):
        spawn(("driver", w))
    spawn(("recover", 0))
    spawn(("relay", 0))
    spawn(("migrate", 0))
    finished: set[int] = set()
    timer_kills = 0
    t_end = time.monotonic() + 150
    try:
        while len(finished) < DRIVERS:
            assert time.monotonic() < t_end, "the drivers did not finish in time"
            time.sleep(0.05)
            for pid, (_kind, pt, t0) in list(procs.items()):
                if pt == "timer" and time.monotonic() - t0 > rnd.uniform(0.3, 1.5) and rnd.random() < 0.2:
                    os.kill(pid, signal.SIGKILL)
                    timer_kills += 1
            for (kind, _pt, _t0), status in _reap(procs):
                if kind[0] == "migrate":
                    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the migration failed"
                    continue
                if os.WIFEXITED(status):
                    assert os.WEXITSTATUS(status) == 0, f"{kind} failed"
                    if kind[0] == "driver":
                        finished.add(kind[1])
                    continue
                spawn(kind)  # killed: a new one takes its place
        open(stop, "w").close()
        for (kind, _pt, _t0), status in _reap(procs, block=True):
            if kind[0] == "migrate" or os.WIFEXITED(status):
                assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"{kind} failed"
    finally:
        for pid in procs:
            os.kill(pid, signal.SIGKILL)
        _reap(procs, block=True)

    # the last recovery, then the last delivery (no process of the run is left)
    cl = Cluster.load(path)
    make_transfer(lease=LEASE)
    time.sleep(LEASE)
    while saga.counts(cl)["running"] + saga.counts(cl)["compensating"]:
        saga.Saga.recover(cl, once=True)
        time.sleep(0.1)
    fd = os.open(delivered, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    saga.Relay(cl).poll(lambda e: os.write(fd, (e.id + "\n").encode()))
    os.close(fd)
    m = cl.metadata.migrations("accounts")
    assert [x["state"] for x in m] == ["cleaned"], m
    cl.refresh("accounts")
    # the migration ran while sagas were in flight: some started before its cutover and ended after it
    (cut,) = [ts for ts, msg in cl.metadata.events(m[0]["id"], limit=1000) if "cutover committed" in msg]

    # every request has one saga, and every saga ended
    log = saga.list_sagas(cl)
    assert sorted(r["idem_key"] for r in log) == sorted(f"req-{i}" for i in range(n))
    states = Counter(r["state"] for r in log)
    across = sum(1 for r in log if r["created"] < cut < r["updated"])
    assert across >= 1, "no saga was in flight during the cutover"
    assert set(states) <= {"completed", "compensated"}, states
    assert states["compensated"] >= n // 10 and states["completed"] >= n // 2, states
    # balances: the sum is unchanged, each balance is its start plus its ledger
    bal = balances(cl)
    assert len(bal) == ACCOUNTS and sum(bal.values()) == START * ACCOUNTS
    ledger = [r for s in cl.shard_ids() for r in shard_table(cl, s, "ledger")]
    per_account = Counter[int]()
    for r in ledger:
        per_account[int(r[1])] += int(r[4])
    assert all(bal[k] == START + per_account[k] for k in bal)
    # no step applied twice; each saga's effects match its final state
    steps = Counter((r[2], r[3]) for r in ledger)
    assert max(steps.values()) == 1, [k for k, v in steps.items() if v > 1][:5]
    by_saga: dict[str, set[str]] = {}
    for sid, step in steps:
        by_saga.setdefault(sid, set()).add(step)
    for entry in log:
        got = by_saga.get(entry["id"], set())
        if entry["state"] == "completed":
            assert got == {"debit", "credit"}, (entry, got)
        else:
            assert got in (set(), {"debit", "refund"}), (entry, got)
    # the outbox: every event delivered at least once, none left, none missing
    events = {}
    for s in cl.shard_ids():
        for row in shard_table(cl, s, "saga_outbox"):
            assert row[0] not in events, f"event {row[0]} is on two shards"
            events[row[0]] = row
    assert all(row[7] is not None for row in events.values()), "undelivered events are left"
    got_ids = Counter(Path(delivered).read_text().split())
    assert set(events) <= set(got_ids), sorted(set(events) - set(got_ids))[:5]
    topic = {"debited": "debit", "credited": "credit", "refunded": "refund"}
    assert Counter((row[5], topic[row[3]]) for row in events.values()) == Counter(steps)
    # the named points all got their kills
    killed = Counter(Path(kills).read_text().split())
    print(f"saga chaos: {dict(states)}, {across} across the cutover, kills at points {dict(killed)}, "
          f"{timer_kills} timer kills, "
          f"{sum(got_ids.values()) - len(events)} events delivered again")
    assert all(killed[p] >= 1 for p in MUST_KILL), killed
    cl.close()
