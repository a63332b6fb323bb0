"""Load, hot keys and shard-key comparison (shardhash.analysis)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash import analysis, routing
from tests._support import ill_typed, present


def test_imbalance() -> None:
    assert analysis.imbalance([1, 1, 1, 1]) == {"max_mean": 1.0, "cv": 0.0}
    im = analysis.imbalance([0, 0, 0, 40])
    assert im["max_mean"] == 4.0
    assert im["cv"] == pytest.approx(np.sqrt(3))
    assert analysis.imbalance([0, 0]) == {"max_mean": 1.0, "cv": 0.0}
    with pytest.raises(ValueError, match="non-empty"):
        analysis.imbalance([])


def test_shard_load_matches_route_many() -> None:
    r = routing.JumpRouter(["a", "b", "c"])
    keys = np.arange(30_000, dtype=np.int64)
    b = (keys % 7).astype(float)
    q = np.ones(len(keys))
    rep = analysis.shard_load(r, keys, bytes=b, requests=q, duration=10.0, chunk_size=4096)
    idx = r.route_many(keys)
    np.testing.assert_array_equal(rep.counts, np.bincount(idx, minlength=3))
    np.testing.assert_allclose(ill_typed(rep.bytes), np.bincount(idx, weights=b, minlength=3))
    np.testing.assert_allclose(ill_typed(rep.rates), ill_typed(np.bincount(idx, minlength=3) / 10.0))
    d = rep.to_dict()
    assert d["total"] == 30_000 and len(d["requests_per_second"]) == 3
    with pytest.raises(ValueError, match="duration"):
        analysis.shard_load(r, keys, duration=-1.0)


def test_shard_load_from_a_stream_of_chunks() -> None:
    r = routing.ModuloRouter(["a", "b"])
    chunks = iter([(np.arange(10), np.ones(10), np.full(10, 2.0)), (np.arange(10, 15), np.ones(5), np.ones(5))])
    rep = analysis.shard_load(r, chunks)
    assert rep.total == 15
    assert present(rep.bytes).sum() == 15 and present(rep.requests).sum() == 25


@given(st.lists(st.integers(0, 20), min_size=1, max_size=300), st.integers(1, 5))
def test_top_k_exact(keys: list[int], k: int) -> None:
    got = analysis.top_k(keys, k, chunk_size=37)
    c = Counter(keys)
    expect = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    assert got == [(key, float(n)) for key, n in expect]


@given(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "g"]), min_size=1, max_size=400),
       st.integers(1, 4), st.integers(1, 50))
def test_heavy_hitters_bounds(keys: list[str], capacity: int, chunk: int) -> None:
    hh = analysis.HeavyHitters(capacity)
    hh.update(keys, chunk_size=chunk)
    n = len(keys)
    c = Counter(keys)
    assert hh.total == n
    assert hh.error <= n / (capacity + 1) + 1e-9
    assert len(hh) <= capacity
    kept = {k: (lo, hi) for k, lo, hi in hh.candidates()}
    for key, true in c.items():
        if true > n / (capacity + 1):
            assert key in kept
        if key in kept:
            lo, hi = kept[key]
            assert lo <= true <= hi
    # top(): the kept keys whose lower bound clears the threshold (so each is truly above it)
    assert hh.threshold == n / (capacity + 1)
    assert [t for t in hh.top()] == [(k, lo, hi) for k, lo, hi in hh.candidates() if lo > hh.threshold]
    assert all(c[k] > hh.threshold for k, _, _ in hh.top())


def test_heavy_hitters_weighted_and_streamed() -> None:
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 100_000, size=200_000)
    keys[::10] = 42  # 10% of the stream
    w = np.ones(len(keys))
    hh = analysis.HeavyHitters(100)
    hh.update(iter([(keys[:70_000], w[:70_000]), (keys[70_000:], w[70_000:])]))
    (key, lo, hi), *_ = hh.top(1)
    true = int((keys == 42).sum())
    assert key == 42 and lo <= true <= hi
    assert hh.error <= len(keys) / 101
    out = analysis.hot_keys(keys, 1, capacity=100)
    assert out[0]["key"] == 42
    assert analysis.hot_keys(keys, 1)[0] == {"key": 42, "count": float(true), "upper": float(true)}


def test_hot_key_errors() -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        analysis.top_k([1], 0)
    with pytest.raises(TypeError, match="k must be an int"):
        analysis.HeavyHitters(ill_typed(2.5))
    with pytest.raises(TypeError, match="one comparable type"):
        analysis.top_k([1, "a"], 1)


def _sample_table(n: int = 20_000, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    created = np.sort(np.datetime64("2026-01-01") + rng.integers(0, 60, n).astype("timedelta64[D]"))
    return {
        "customer_id": rng.integers(0, 5000, n),
        "created": created,
        "country": rng.choice(np.array(["de", "fr", "us", "jp", "br"]), n, p=[0.1, 0.1, 0.6, 0.1, 0.1]),
    }


def test_date_key_sends_recent_writes_to_one_shard() -> None:
    t = _sample_table()
    reps = analysis.compare_shard_keys(
        t,
        {"hashed customer": ("hash", "customer_id"), "date range": "range:created", "country": ("hash", "country")},
        shards=8, time_column="created", recent=0.01,
        queries={"orders of a customer": "customer_id", "orders of a day": "created", "by country": "country"},
    )
    by = {r.name: r for r in reps}
    cust, date, country = by["hashed customer"], by["date range"], by["country"]
    assert date.recent_max_share == 1.0
    assert present(cust.recent_max_share) < 0.35
    assert cust.distinct == len(np.unique(t["customer_id"]))
    assert country.distinct == 5
    # Five countries over eight shards: at least three shards are empty.
    assert country.max_mean > 2.5
    assert cust.max_mean < 1.15
    assert cust.queries["orders of a customer"]["shards_asked"] == 1
    assert cust.queries["orders of a day"]["all_shards"] is True
    assert date.queries["orders of a day"]["shards_asked"] == 1
    assert date.queries["orders of a day"]["rows_spread"] <= 1.1
    assert cust.queries["orders of a customer"]["rows_spread"] == 1.0
    assert cust.queries["orders of a day"]["rows_spread"] > 7.0
    assert sum(r.counts.sum() for r in reps) == 3 * 20_000


def test_compare_shard_keys_accepts_pandas_and_arrow() -> None:
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    t = _sample_table(2000)
    a = analysis.compare_shard_keys(pd.DataFrame(t), {"c": ("hash", "customer_id")}, shards=4)
    b = analysis.compare_shard_keys(pa.table(t), {"c": ("hash", "customer_id")}, shards=4)
    np.testing.assert_array_equal(a[0].counts, b[0].counts)


def test_compare_shard_keys_errors() -> None:
    t = _sample_table(100)
    with pytest.raises(ValueError, match="no column 'nope'"):
        analysis.compare_shard_keys(t, {"x": ("hash", "nope")})
    with pytest.raises(ValueError, match="kind must be 'hash' or 'range'"):
        analysis.compare_shard_keys(t, {"x": ("list", "country")})
    with pytest.raises(ValueError, match="shards must be a positive int"):
        analysis.compare_shard_keys(t, {"x": "country"}, shards=0)
    with pytest.raises(ValueError, match="recent must be a fraction"):
        analysis.compare_shard_keys(t, {"x": "country"}, recent=2)
    with pytest.raises(ValueError, match="dtype float64"):
        analysis.compare_shard_keys({"f": np.ones(4)}, {"x": "f"})
