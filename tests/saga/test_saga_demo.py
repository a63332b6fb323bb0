"""``shardhash demo --saga`` on a small scale: every saga ends, the balance
total is unchanged and no step is applied twice (from the shards' ledger)."""

from __future__ import annotations

from pathlib import Path

from shardhash.saga.demo import run_demo


def test_demo_small(tmp_path: Path) -> None:
    res = run_demo(2000, workers=2, seconds=2.0, folder=str(tmp_path), quiet=True, lease=0.5)
    assert res["sagas"] > 10 and res["running"] == 0 and res["stuck"] == 0
    assert res["completed"] + res["compensated"] == res["sagas"]
    assert res["balance_before"] == res["balance_after"] == 2000 * 1000
    assert res["steps_applied_twice"] == 0 and res["worker_failures"] == []
    # one outbox event per applied step (debit, credit, refund), each delivered by the final relay pass
    assert res["events_delivered"] == res["steps_applied"] >= 2 * res["completed"]
