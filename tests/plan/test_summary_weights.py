"""``PlanReport.summary()`` with ``diff(..., weights=)`` shows the weighted
figures (total and moved weight, and the weight's balance), the ones the
CLI's ``plan --weights`` prints; without weights it shows none."""

from __future__ import annotations

import numpy as np

from shardhash import JumpRouter, plan
from shardhash.analysis import imbalance


def test_summary_shows_the_weighted_figures() -> None:
    rng = np.random.default_rng(7)
    keys = np.arange(20_000, dtype=np.int64)
    w = rng.integers(1, 1000, len(keys)).astype(np.float64)
    w[:10] = 1e6  # a few heavy keys: the weight's balance is not the keys'
    old = JumpRouter(["a", "b", "c"])
    new = JumpRouter(["a", "b", "c", "d"])
    rep = plan.diff(old, new, keys, weights=w)
    text = rep.summary()
    moved = new.route_many(keys) != old.route_many(keys)
    tot, mw = float(w.sum()), float(w[moved].sum())
    assert rep.moved_weight == mw
    assert f"weight: {tot:,.0f} total, {mw:,.0f} moved ({mw / tot:.2%})" in text.splitlines()
    wb = imbalance(rep.before_weighted)["max_mean"]
    wa = imbalance(rep.after_weighted)["max_mean"]
    assert f"weight balance max/mean: before {wb:.4f}  after {wa:.4f}" in text.splitlines()
    assert text.splitlines()[0].startswith("keys: 20,000")


def test_summary_without_weights_has_no_weight_line() -> None:
    keys = np.arange(5000, dtype=np.int64)
    rep = plan.diff(JumpRouter(["a", "b"]), JumpRouter(["a", "b", "c"]), keys)
    assert "weight" not in rep.summary()
