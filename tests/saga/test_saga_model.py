"""A Hypothesis model of the saga state machine (SQLite): random transfers,
some failing on purpose or for want of funds, each driver killed (in-process)
at a random named point on its first or second pass, then resumed or aborted.
After every saga the balances equal the model's, the saga is completed or
compensated as the model says, and no step is on the shards twice."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash import saga
from shardhash.migrate import Cluster

from ._bank import START, _add, _ledger, balances, make_bank, shard_table

ACCOUNTS = 6
POINTS = [None, "after-start", "in-step", "after-step-commit", "after-log-update", "in-compensation",
          "after-compensation-commit", "before-final"]


class Crash(BaseException):
    pass


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cl = make_bank(Path(tmp_path_factory.mktemp("model")), "sqlite", ["a", "b"], accounts=ACCOUNTS)
    yield cl
    cl.close()


def _model_saga() -> saga.Saga:
    s = saga.Saga("model", log_steps=True)

    def refund(ctx: saga.StepContext, a: dict[str, Any], result: Any) -> None:
        _add(ctx, a["from"], a["amount"])
        _ledger(ctx, a["from"], "refund", a["amount"])

    def uncredit(ctx: saga.StepContext, a: dict[str, Any], result: Any) -> None:
        _add(ctx, a["to"], -a["amount"])
        _ledger(ctx, a["to"], "uncredit", -a["amount"])

    @s.step(key=lambda a: a["from"], compensate=refund, backoff=0.0)
    def debit(ctx: saga.StepContext, a: dict[str, Any]) -> None:
        _add(ctx, a["from"], -a["amount"])
        _ledger(ctx, a["from"], "debit", -a["amount"])

    @s.step(key=lambda a: a["to"], compensate=uncredit, backoff=0.0)
    def credit(ctx: saga.StepContext, a: dict[str, Any]) -> None:
        if a["fail"]:
            raise saga.StepFailed("closed")
        _add(ctx, a["to"], a["amount"])
        _ledger(ctx, a["to"], "credit", a["amount"])

    return s


def _crash(point: str | None, nth: int) -> Callable[[str], None]:
    seen = Counter[str]()

    def hook(p: str) -> None:
        seen[p] += 1
        if p == point and seen[p] == nth:
            raise Crash(p)

    return hook


transfer = st.tuples(st.integers(1, ACCOUNTS), st.integers(1, ACCOUNTS), st.integers(1, 2 * START // 3),
                     st.booleans(), st.sampled_from(POINTS), st.integers(1, 2), st.sampled_from(["resume", "abort"]))


@given(ops=st.lists(transfer, min_size=1, max_size=2))
def test_model(bank: Cluster, ops: list[tuple[int, int, int, bool, str | None, int, str]]) -> None:
    s = _model_saga()
    model = balances(bank)
    try:
        for frm, to, amount, fail, point, nth, recovery in ops:
            if frm == to:
                to = frm % ACCOUNTS + 1
            args = {"from": frm, "to": to, "amount": amount, "fail": fail}
            saga.set_fault_hook(_crash(point, nth))
            crashed = False
            try:
                sid = s.start(bank, args)
            except Crash:
                crashed = True
            saga.set_fault_hook(None)
            if crashed:
                (sid,) = [r["id"] for r in saga.list_sagas(bank, name="model") if r["state"] not in saga.FINAL]
                if recovery == "abort":
                    saga.abort(bank, sid)
                saga.resume(bank, sid, force=True)
            state = saga.status(bank, sid)["state"]
            ok = not fail and model[frm] >= amount and not (crashed and recovery == "abort")
            assert state == ("completed" if ok else "compensated"), (args, point, nth, recovery, crashed)
            if ok:
                model[frm] -= amount
                model[to] += amount
            assert balances(bank) == model
        ledger = [r for sh in bank.shard_ids() for r in shard_table(bank, sh, "ledger")]
        assert max(Counter((r[2], r[3]) for r in ledger).values()) == 1
    finally:
        saga.set_fault_hook(None)
