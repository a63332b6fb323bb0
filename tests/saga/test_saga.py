"""Sagas on SQLite and PostgreSQL (shards and metadata store alike): the state
machine, exactly-once steps (also after a migration moved the step's key),
leases and fencing, idempotency keys, semantic locks, the outbox relay, the
operator actions and the bad-input errors."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter, plan, saga
from shardhash.migrate import Cluster, Migration
from shardhash.saga import core
from tests.migrate._harness import drop_cluster

from ._bank import START, balances, make_bank, make_transfer, shard_table


class Crash(BaseException):
    """A driver's death, simulated in-process (raised by the fault hook)."""


def crash_at(point: str, nth: int = 1) -> Callable[[str], None]:
    seen = Counter[str]()

    def hook(p: str) -> None:
        seen[p] += 1
        if p == point and seen[p] == nth:
            raise Crash(p)

    return hook


@pytest.fixture
def bank(tmp_path: Path, backend: str) -> Iterator[Cluster]:
    cl = make_bank(tmp_path, backend, ["a", "b", "c"], spare=("d",), metadata=backend)
    yield cl
    cl.close()
    drop_cluster(tmp_path, backend)


@pytest.fixture
def sqlite_bank(tmp_path: Path) -> Iterator[Cluster]:
    """The bank on SQLite only: for the tests of the driver's logic, which no backend changes
    (the ones above and the crash tests on PostgreSQL exercise the same code on the server)."""
    cl = make_bank(tmp_path, "sqlite", ["a", "b", "c"], spare=("d",))
    yield cl
    cl.close()


def ledger(cl: Cluster) -> list[tuple[Any, ...]]:
    return [r for s in cl.shard_ids() for r in shard_table(cl, s, "ledger")]


def applied_twice(cl: Cluster) -> int:
    """Steps whose effect is on the shards more than once (ledger rows per saga, step)."""
    c = Counter((r[2], r[3]) for r in ledger(cl))
    return sum(1 for n in c.values() if n > 1)


def test_transfer_completes_with_records_on_the_owners(bank: Cluster) -> None:
    t = make_transfer()
    sid = t.start(bank, {"from": 1, "to": 2, "amount": 30})
    st = saga.status(bank, sid)
    assert (st["state"], st["step"], st["results"]) == ("completed", 2, [START - 30, START + 30])
    b = balances(bank)
    assert (b[1], b[2]) == (START - 30, START + 30) and sum(b.values()) == START * 20
    recs = saga.records(bank, sid)
    router = bank.router("accounts")
    assert [(r["step"], r["direction"], r["status"], r["shard"]) for r in recs] == [
        (0, "do", "applied", router.route(1)), (1, "do", "applied", router.route(2))]
    # each record is on its key's owner and nowhere else
    for r in recs:
        for s in bank.shard_ids():
            here = [x for x in shard_table(bank, s, "saga_steps") if x[0] == sid and x[1] == r["step"]]
            assert len(here) == (1 if s == r["shard"] else 0)


def test_permanent_failure_compensates_and_cancels(bank: Cluster) -> None:
    t = make_transfer()
    sid = t.start(bank, {"from": 3, "to": 4, "amount": 50, "fail": True})
    st = saga.status(bank, sid)
    assert st["state"] == "compensated"
    assert "credit" in st["error"] and "closed" in st["error"]
    assert sum(balances(bank).values()) == START * 20 and balances(bank)[3] == START
    recs = {(r["step"], r["direction"]): r["status"] for r in saga.records(bank, sid)}
    assert recs == {(0, "do"): "applied", (0, "undo"): "applied", (1, "do"): "cancelled", (1, "undo"): "skipped"}
    assert sorted(r[3] for r in ledger(bank) if r[2] == sid) == ["debit", "refund"]
    # a refused first step (insufficient funds) compensates nothing that ran
    sid2 = t.start(bank, {"from": 5, "to": 6, "amount": START + 1})
    assert saga.status(bank, sid2)["state"] == "compensated"
    assert not [r for r in ledger(bank) if r[2] == sid2]


def test_idempotency_key_returns_the_same_saga(bank: Cluster) -> None:
    t = make_transfer()
    a = {"from": 7, "to": 8, "amount": 10}
    sid = t.start(bank, a, idempotency_key="req-123")
    assert t.start(bank, dict(a), idempotency_key="req-123") == sid
    assert balances(bank)[7] == START - 10  # applied once
    assert len(saga.list_sagas(bank)) == 1
    with pytest.raises(ValueError, match="req-123"):
        t.start(bank, {"from": 7, "to": 8, "amount": 11}, idempotency_key="req-123")
    assert t.start(bank, a, idempotency_key="req-124") != sid


@pytest.mark.parametrize("point", ["after-step-commit", "in-step", "after-log-update", "before-final"])
def test_crash_then_resume_applies_each_step_once(sqlite_bank: Cluster, point: str) -> None:
    t = make_transfer()
    saga.set_fault_hook(crash_at(point))
    with pytest.raises(Crash):
        t.start(sqlite_bank, {"from": 9, "to": 10, "amount": 5})
    saga.set_fault_hook(None)
    (row,) = saga.list_sagas(sqlite_bank)
    assert row["state"] == "running"
    assert saga.resume(sqlite_bank, row["id"]) == "running"  # (its lease is still valid: not taken over)
    assert saga.resume(sqlite_bank, row["id"], force=True) == "completed"
    assert applied_twice(sqlite_bank) == 0
    b = balances(sqlite_bank)
    assert (b[9], b[10]) == (START - 5, START + 5)
    assert saga.status(sqlite_bank, row["id"])["fence"] == 2


def test_record_moves_with_its_key(tmp_path: Path, backend: str) -> None:
    """A step re-run after a migration moved its key finds its record on the new owner."""
    cl = make_bank(tmp_path, backend, ["a", "b", "c"], spare=("d",), accounts=60, metadata=backend)
    try:
        t = make_transfer()
        old = cl.router("accounts")
        new, _ = plan.add_shards(old, "d")
        mover = next(k for k in range(1, 61) if new.route(k) == "d")
        to = next(k for k in range(1, 61) if k != mover and old.route(k) != old.route(mover))
        saga.set_fault_hook(crash_at("after-step-commit"))  # the debit committed, the log says step 0
        with pytest.raises(Crash):
            t.start(cl, {"from": mover, "to": to, "amount": 7})
        saga.set_fault_hook(None)
        (row,) = saga.list_sagas(cl)
        assert row["step"] == 0
        src = old.route(mover)
        assert [r for r in shard_table(cl, src, "saga_steps") if r[0] == row["id"] and r[3] == mover]
        m = Migration.create(cl, "accounts", new)
        m.run()
        m.cleanup()
        cl.refresh("accounts")
        # the record moved with the account: on d now, gone from the old owner
        assert [r[1:4] for r in shard_table(cl, "d", "saga_steps") if r[0] == row["id"]] == [(0, "do", mover)]
        assert not [r for r in shard_table(cl, src, "saga_steps") if r[0] == row["id"]]
        assert saga.resume(cl, row["id"], force=True) == "completed"
        assert applied_twice(cl) == 0
        b = balances(cl)
        assert (b[mover], b[to]) == (START - 7, START + 7)
        assert sum(b.values()) == START * 60
        assert [r["shard"] for r in saga.records(cl, row["id"]) if r["step"] == 0] == ["d"]
    finally:
        cl.close()
        drop_cluster(tmp_path, backend)


def test_lease_hand_over_and_fencing(bank: Cluster) -> None:
    t = make_transfer(lease=0.3)
    sid = t.start(bank, {"from": 11, "to": 12, "amount": 4}, run=False)
    got = core._acquire(bank, sid, 0.3)
    assert got is not None
    owner_a, fence_a = got
    assert core._acquire(bank, sid, 0.3) is None  # A's lease is valid: nobody else takes it
    time.sleep(0.35)
    got_b = core._acquire(bank, sid, 30.0)
    assert got_b is not None and got_b[1] == fence_a + 1
    a = core._Driver(t, bank, sid, owner_a, fence_a)
    with pytest.raises(saga.LeaseLost):
        a._save("running", 1, [])
    assert t._drive(bank, sid, *got_b) == "completed"
    with pytest.raises(saga.LeaseLost):
        a.run()
    assert saga.status(bank, sid)["owner"] == got_b[0]


def test_a_stale_driver_cannot_apply_a_step_after_its_compensation(bank: Cluster) -> None:
    t = make_transfer()
    saga.set_fault_hook(crash_at("after-step-commit"))
    with pytest.raises(Crash):
        t.start(bank, {"from": 13, "to": 14, "amount": 6})
    saga.set_fault_hook(None)
    (row,) = saga.list_sagas(bank)
    stale = core._Driver(t, bank, row["id"], row["owner"], row["fence"])
    assert saga.abort(bank, row["id"]) == "compensated"
    # the dead driver wakes up and runs the credit: the compensation cancelled it
    assert stale._once(t.steps[1], 1, "do", row["args"], []) == ("cancelled", None)
    with pytest.raises(saga.LeaseLost):
        stale.run()
    assert balances(bank)[14] == START and balances(bank)[13] == START
    assert sum(balances(bank).values()) == START * 20


def test_semantic_lock_is_visible_until_the_saga_ends(bank: Cluster) -> None:
    t = make_transfer(lock=True)
    saga.set_fault_hook(crash_at("after-step-commit"))
    with pytest.raises(Crash):
        t.start(bank, {"from": 15, "to": 16, "amount": 3})
    saga.set_fault_hook(None)
    (row,) = saga.list_sagas(bank)
    with bank.read(15) as tx:
        (p,) = saga.pending(tx)
        assert (p.saga_id, p.step, p.note) == (row["id"], 0, "transfer out")
    with bank.read(16) as tx:
        assert saga.pending(tx) == []
    assert saga.resume(bank, row["id"], force=True) == "completed"
    with bank.read(15) as tx:
        assert saga.pending(tx) == []
    # released by the compensation, in its transaction
    sid = t.start(bank, {"from": 15, "to": 16, "amount": 3, "fail": True})
    assert saga.status(bank, sid)["state"] == "compensated"
    with bank.read(15) as tx:
        assert saga.pending(tx) == []
    with pytest.raises(TypeError):
        saga.pending(object())


def test_outbox_relay_per_key_order_ids_and_redelivery(bank: Cluster) -> None:
    t = make_transfer()
    ids = [t.start(bank, {"from": 17, "to": 18 + i % 2, "amount": 1 + i}) for i in range(4)]
    t.start(bank, {"from": 17, "to": 18, "amount": 1, "fail": True})
    relay = saga.Relay(bank)
    got: list[saga.Event] = []

    def flaky(e: saga.Event) -> None:
        if e.key == 17 and e.seq == 3 and not any(g.seq == 3 and g.key == 17 for g in got):
            got.append(e)
            raise RuntimeError("consumer down")
        got.append(e)

    with pytest.raises(RuntimeError, match="consumer down"):
        relay.poll(flaky)
    relay.poll(flaky)
    assert relay.poll(flaky) == 0
    by_key: dict[Any, list[int]] = {}
    for e in got:
        by_key.setdefault(e.key, []).append(e.seq)
    assert by_key[17] == [1, 2, 3, 3, 4, 5, 6]  # seq 3 delivered twice (at least once), in order
    assert by_key[18] == [1, 2] and by_key[19] == [1, 2]
    assert {e.id for e in got if e.key == 17} >= {f"{s}/0/do/0" for s in ids}
    topics = Counter(e.topic for e in {e.id: e for e in got}.values())
    assert topics == {"debited": 5, "credited": 4, "refunded": 1}
    # the iterator: an event is marked once the next one is asked for
    t.start(bank, {"from": 20, "to": 19, "amount": 2})
    it = relay.events()
    first = next(it)
    assert first.topic in ("debited", "credited")
    it.close()
    again = list(relay.events())
    assert first.id in [e.id for e in again] and len(again) == 2
    assert {e.topic for e in again} == {"debited", "credited"}
    assert list(relay.events()) == []


def test_stuck_then_resume_after_the_fix(sqlite_bank: Cluster) -> None:
    s = saga.Saga("fragile", compensation_retries=1)
    broken = {"on": True}

    def undo(ctx: saga.StepContext, a: Any, result: Any) -> None:
        if broken["on"]:
            raise RuntimeError("the refund service is down")
        ctx.execute("UPDATE accounts SET balance = balance + 1 WHERE id = ?", (a["k"],))

    @s.step(key=lambda a: a["k"], compensate=undo, backoff=0.0)
    def take(ctx: saga.StepContext, a: Any) -> None:
        ctx.execute("UPDATE accounts SET balance = balance - 1 WHERE id = ?", (a["k"],))

    @s.step(key=lambda a: a["k"] + 1, backoff=0.0)
    def fail(ctx: saga.StepContext, a: Any) -> None:
        raise saga.StepFailed("no")

    sid = s.start(sqlite_bank, {"k": 1})
    st = saga.status(sqlite_bank, sid)
    assert st["state"] == "stuck" and "refund service is down" in st["error"] and st["attempts"] >= 2
    assert balances(sqlite_bank)[1] == START - 1
    broken["on"] = False
    assert saga.resume(sqlite_bank, sid) == "compensated"
    assert balances(sqlite_bank)[1] == START


def test_recover_worker_drives_sagas_whose_driver_died(bank: Cluster) -> None:
    t = make_transfer(lease=0.2)
    sids = [t.start(bank, {"from": 1 + i, "to": 11 + i, "amount": 2}, run=False) for i in range(3)]
    saga.set_fault_hook(crash_at("after-step-commit"))
    with pytest.raises(Crash):
        t.start(bank, {"from": 4, "to": 5, "amount": 1})
    saga.set_fault_hook(None)
    time.sleep(0.25)
    assert saga.Saga.recover(bank, once=True) == 4
    assert all(saga.status(bank, s)["state"] == "completed" for s in sids)
    assert saga.counts(bank)["completed"] == 4 and applied_twice(bank) == 0


def test_step_without_compensation_after_it_ran_is_stuck(sqlite_bank: Cluster) -> None:
    s = saga.Saga("pivot-first")

    @s.step(key=lambda a: 1)
    def pivot(ctx: saga.StepContext, a: Any) -> None:
        ctx.execute("UPDATE accounts SET balance = balance - 1 WHERE id = 1")

    @s.step(key=lambda a: 2)
    def after(ctx: saga.StepContext, a: Any) -> None:
        raise saga.StepFailed("no")

    sid = s.start(sqlite_bank, {})
    st = saga.status(sqlite_bank, sid)
    assert st["state"] == "stuck" and "no compensation" in st["error"]


def test_bad_input(sqlite_bank: Cluster, tmp_path: Path) -> None:
    t = make_transfer()
    with pytest.raises(TypeError, match="JSON"):
        t.start(sqlite_bank, {"from": 1, "to": 2, "amount": object()})
    with pytest.raises(TypeError, match="debit"):
        t.start(sqlite_bank, {"from": 1.5, "to": 2, "amount": 1})
    with pytest.raises(OverflowError):
        t.start(sqlite_bank, {"from": 2 ** 64, "to": 2, "amount": 1})
    with pytest.raises(ValueError, match="idempotency_key"):
        t.start(sqlite_bank, {"from": 1, "to": 2, "amount": 1}, idempotency_key="")
    with pytest.raises(ValueError, match="no steps"):
        saga.Saga("empty").start(sqlite_bank, {})
    with pytest.raises(ValueError, match="lease"):
        saga.Saga("x", lease=-1)
    with pytest.raises(ValueError, match="retries"):
        saga.Saga("x").step(key=lambda a: 1, retries=-1)
    with pytest.raises(ValueError, match="already has a step"):
        t.step(key=lambda a: 1, name="debit")(lambda c, a: None)
    with pytest.raises(ValueError, match="Tables.steps"):
        saga.Tables(steps="_shardhash_x")
    with pytest.raises(KeyError):
        saga.status(sqlite_bank, "nope")
    with pytest.raises(ValueError, match="state"):
        saga.list_sagas(sqlite_bank, state="done")
    # a group without the saga's tables: the message names the entries to add
    other = Cluster.from_dict({"metadata": "sqlite:m2.db", "shards": {"a": "sqlite:a2.db"},
                               "groups": {"g": {"router": JumpRouter(["a"]).to_dict(),
                                                "tables": [{"name": "t", "key": "id"}]}}}, base_dir=tmp_path)
    with pytest.raises(ValueError, match='name = "saga_steps", key = "shard_key"'):
        saga.setup(other)


def test_metrics_snapshot_and_events(sqlite_bank: Cluster) -> None:
    from shardhash import metrics as shm

    saga.metrics.reset()
    m = shm.ShardMetrics()
    m.attach()
    try:
        t = make_transfer()
        t.start(sqlite_bank, {"from": 1, "to": 2, "amount": 1})
        t.start(sqlite_bank, {"from": 1, "to": 2, "amount": 1, "fail": True})
    finally:
        m.detach()
    snap = saga.metrics.snapshot()
    assert (snap["started"], snap["completed"], snap["compensated"], snap["stuck"]) == (2, 1, 1, 0)
    assert snap["step_seconds"]["count"] == 6 and 0 < snap["step_seconds"]["p50"] <= snap["step_seconds"]["p99"]
    if m.enabled:
        assert m.value("shardhash_sagas_total", saga="transfer", state="completed") == 1.0
        assert m.value("shardhash_saga_step_seconds_count", saga="transfer", step="debit") == 3.0


def test_transient_errors_are_retried_then_fail_the_step(sqlite_bank: Cluster) -> None:
    from shardhash.migrate import FenceTimeout

    s = saga.Saga("flaky")
    calls = Counter[str]()

    @s.step(key=lambda a: 1, compensate=lambda ctx, a, r: None, backoff=0.0)
    def first(ctx: saga.StepContext, a: Any) -> None:
        calls["first"] += 1

    @s.step(key=lambda a: 2, retries=2, backoff=0.0)
    def second(ctx: saga.StepContext, a: Any) -> None:
        calls["second"] += 1
        if calls["second"] <= a["transient"]:
            raise FenceTimeout("a cutover took too long")

    assert saga.status(sqlite_bank, s.start(sqlite_bank, {"transient": 2}))["state"] == "completed"  # 2 retries suffice
    assert calls["second"] == 3
    calls.clear()
    st = saga.status(sqlite_bank, s.start(sqlite_bank, {"transient": 99}))
    assert st["state"] == "compensated" and "failed after 3 attempts" in st["error"] and calls["second"] == 3
    # a deadline stops the retries too (here at once), and a bug is not retried
    s2 = saga.Saga("deadline")

    @s2.step(key=lambda a: 1, retries=50, backoff=0.0, deadline=0.0)
    def late(ctx: saga.StepContext, a: Any) -> None:
        calls["late"] += 1
        raise FenceTimeout("waited")

    assert saga.status(sqlite_bank, s2.start(sqlite_bank, {}))["state"] == "compensated" and calls["late"] == 1
    s3 = saga.Saga("bug")

    @s3.step(key=lambda a: 1, retries=50, backoff=0.0)
    def bug(ctx: saga.StepContext, a: Any) -> None:
        calls["bug"] += 1
        raise ZeroDivisionError("oops")

    st = saga.status(sqlite_bank, s3.start(sqlite_bank, {}))
    assert st["state"] == "compensated" and "ZeroDivisionError" in st["error"] and calls["bug"] == 1
