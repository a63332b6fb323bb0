"""``HeavyHitters.top`` reports hot keys only: the kept keys whose lower
bound clears the threshold ``total / (capacity + 1)``; on uniform traffic it
reports none (and says so), while ``candidates`` still lists what is kept."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np

from shardhash import analysis


def _uniform(seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 50_000, 400_000)


def test_uniform_ids_have_no_hot_keys() -> None:
    hh = analysis.HeavyHitters(1000)
    hh.update(_uniform())
    assert hh.candidates(5)  # (the summary keeps keys: arbitrary ones, with wide bounds)
    top = hh.top(5)
    assert top == [] and isinstance(top, list)
    assert "no hot keys" in repr(top) and "no hot keys" in str(top)
    assert f"{hh.threshold:,.2f}" in repr(top)
    assert analysis.hot_keys(_uniform(), 5, capacity=1000) == []


def test_a_planted_hot_key_is_the_only_one_reported() -> None:
    ids = _uniform()
    ids[::20] = 777  # 5% of the traffic
    hh = analysis.HeavyHitters(1000)
    hh.update(ids)
    true = Counter(ids.tolist())
    top = hh.top(5)
    assert [k for k, _, _ in top] == [777]
    (_, lo, hi), = top
    assert hh.threshold < lo <= true[777] <= hi
    assert repr(top) == repr([(777, lo, hi)])
    assert [d["key"] for d in analysis.hot_keys(ids, 5, capacity=1000)] == [777]
    back = pickle.loads(pickle.dumps(top))
    assert back == top and back.threshold == top.threshold


def test_top_is_candidates_above_the_threshold() -> None:
    rng = np.random.default_rng(11)
    ids = rng.zipf(1.5, 100_000)
    hh = analysis.HeavyHitters(50)
    hh.update(ids)
    cut = len(ids) / 51
    assert hh.threshold == cut
    want = [t for t in hh.candidates() if t[1] > cut]
    assert want and hh.top() == want and hh.top(2) == want[:2]
    true = Counter(ids.tolist())
    assert all(true[k] > cut for k, _, _ in hh.top())
