"""Measure load, skew and hot keys, and compare candidate shard keys.

* :func:`shard_load` -- per-shard key counts, bytes and request rates for one
  router over keys of any size (chunked, constant memory).
* :func:`imbalance` -- max/mean and coefficient of variation of a load vector.
* :func:`top_k` -- exact hot keys (memory grows with the number of distinct
  keys) and :class:`HeavyHitters`, a streaming Misra–Gries summary in fixed
  memory for inputs that do not fit.
* :func:`propose_hot_set` -- a hot set ``{key: fan_out}`` for a
  :class:`shardhash.hotkeys.HotKeyRouter` from the same heavy-hitter pass and
  a target per-shard load (see :func:`shardhash.hotkeys.propose_hot_set`).
* :func:`compare_shard_keys` -- on a sample table, how candidate shard keys
  (a hashed customer id, a creation date as a range key, a country...) spread
  rows, where the most recent writes land and which queries must ask every
  shard.

>>> import numpy as np
>>> imbalance(np.array([10, 10, 10, 30]))["max_mean"]
2.0
>>> top_k(["a", "b", "a", "c", "a", "b"], 2)
[('a', 3.0), ('b', 2.0)]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .io import DEFAULT_CHUNK_SIZE, iter_chunks

__all__ = [
    "LoadReport",
    "shard_load",
    "imbalance",
    "top_k",
    "HeavyHitters",
    "HotKeys",
    "hot_keys",
    "propose_hot_set",
    "ShardKeyReport",
    "compare_shard_keys",
]


def imbalance(load: Any) -> dict[str, float]:
    """Skew of a per-shard load vector: ``max_mean`` (1.0 is perfect) and ``cv``.

    ``cv`` is the coefficient of variation (population standard deviation over
    the mean).  An all-zero vector counts as perfectly balanced.

    >>> imbalance([5, 5, 5, 5])
    {'max_mean': 1.0, 'cv': 0.0}
    """
    a = np.asarray(load, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError("load must be a non-empty one-dimensional vector")
    mean = float(a.mean())
    if mean == 0.0:
        return {"max_mean": 1.0, "cv": 0.0}
    return {"max_mean": float(a.max()) / mean, "cv": float(a.std()) / mean}


@dataclass
class LoadReport:
    """Per-shard load of one router over a set of keys (see :func:`shard_load`)."""

    shards: tuple[str, ...]
    counts: np.ndarray
    bytes: np.ndarray | None = None
    requests: np.ndarray | None = None
    duration: float | None = None

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def rates(self) -> np.ndarray | None:
        """Requests per second per shard (needs ``requests`` and ``duration``)."""
        if self.requests is None or not self.duration:
            return None
        return self.requests / self.duration

    def imbalance(self, what: str = "counts") -> dict[str, float]:
        vec = getattr(self, what)
        if vec is None:
            raise ValueError(f"no {what} in this report")
        return imbalance(vec)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "shards": list(self.shards),
            "total": self.total,
            "counts": self.counts.tolist(),
            "imbalance": self.imbalance(),
        }
        if self.bytes is not None:
            out["bytes"] = self.bytes.tolist()
            out["bytes_imbalance"] = imbalance(self.bytes)
        if self.requests is not None:
            out["requests"] = self.requests.tolist()
            out["requests_imbalance"] = imbalance(self.requests)
        rates = self.rates
        if rates is not None:
            out["requests_per_second"] = rates.tolist()
        return out


def shard_load(
    router: Any,
    keys: Any,
    *,
    bytes: Any = None,
    requests: Any = None,
    duration: float | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    threads: int | None = None,
    progress: Any = None,
) -> LoadReport:
    """Count keys, bytes and requests per shard of ``router``.

    ``keys`` is an array-like or a stream of chunks (see
    :func:`shardhash.io.iter_chunks`; a chunk's weights count as bytes, a third
    element as requests).  ``duration`` (seconds) turns request counts into
    rates.  ``progress(n)`` is called after each chunk with its size.

    >>> from shardhash import routing
    >>> r = routing.JumpRouter(["a", "b"])
    >>> rep = shard_load(r, list(range(1000)), bytes=[2.0] * 1000)
    >>> rep.total, float(rep.bytes.sum())
    (1000, 2000.0)
    """
    n_sh = len(router.shards)
    counts = np.zeros(n_sh, dtype=np.int64)
    byt = None
    req = None
    for k, w, e in iter_chunks(keys, bytes, chunk_size=chunk_size, extra=requests):
        idx = router.route_many(k, threads=threads)
        counts += np.bincount(idx, minlength=n_sh)
        if w is not None:
            if byt is None:
                byt = np.zeros(n_sh)
            byt += np.bincount(idx, weights=w, minlength=n_sh)
        if e is not None:
            if req is None:
                req = np.zeros(n_sh)
            req += np.bincount(idx, weights=e, minlength=n_sh)
        if progress is not None:
            progress(len(idx))
    if duration is not None and not (isinstance(duration, (int, float)) and duration > 0 and math.isfinite(duration)):
        raise ValueError(f"duration must be a positive number of seconds, got {duration!r}")
    return LoadReport(tuple(router.shards), counts, byt, req, duration)


# --------------------------------------------------------------------- hot keys


def _key_array(keys: Any) -> np.ndarray:
    if hasattr(keys, "to_numpy") and not isinstance(keys, np.ndarray):
        try:
            keys = keys.to_numpy(zero_copy_only=False)
        except TypeError:
            keys = keys.to_numpy()
    if isinstance(keys, np.ndarray):
        arr = keys
    else:
        seq = list(keys)
        if seq and all(isinstance(x, int) and not isinstance(x, bool) for x in seq):
            try:
                arr = np.array(seq, dtype=np.int64)
            except OverflowError:
                arr = np.empty(len(seq), dtype=object)
                arr[:] = seq
        else:
            arr = np.empty(len(seq), dtype=object)
            arr[:] = seq
    if arr.ndim != 1:
        raise ValueError(f"keys must be one-dimensional, got shape {arr.shape}")
    return arr


def _unique_counts(keys: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    try:
        uniq, inv = np.unique(keys, return_inverse=True)
    except TypeError:
        raise TypeError("hot-key counting needs keys of one comparable type (all ints, all str or all bytes)") from None
    inv = inv.reshape(-1)
    counts = np.bincount(inv, weights=weights, minlength=len(uniq)).astype(np.float64)
    return uniq, counts


def _py(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _top(uniq: np.ndarray, counts: np.ndarray, k: int) -> list[int]:
    """Indices of the k largest counts; ties broken by key order (stable)."""
    order = np.argsort(-counts, kind="stable")
    return [int(i) for i in order[:k]]


def top_k(keys: Any, k: int = 10, *, weights: Any = None,
          chunk_size: int = DEFAULT_CHUNK_SIZE) -> list[tuple[Any, float]]:
    """Exact top-``k`` keys by frequency (or summed ``weights``), largest first.

    Memory grows with the number of distinct keys; for inputs that do not fit,
    use :class:`HeavyHitters`.  Ties are broken by key order.

    >>> top_k([3, 1, 3, 2, 1, 3], 2)
    [(3, 3.0), (1, 2.0)]
    >>> top_k(["x", "y"], 1, weights=[1.0, 5.0])
    [('y', 5.0)]
    """
    _check_k(k)
    acc_u: np.ndarray | None = None
    acc_c: np.ndarray | None = None
    for kc, w, _ in iter_chunks(keys, weights, chunk_size=chunk_size):
        u, c = _unique_counts(_key_array(kc), w)
        if acc_u is None:
            acc_u, acc_c = u, c
        else:
            assert acc_c is not None
            acc_u, acc_c = _merge(acc_u, acc_c, u, c)
    if acc_u is None or acc_c is None:
        return []
    return [(_py(acc_u[i]), float(acc_c[i])) for i in _top(acc_u, acc_c, k)]


def _merge(u1: np.ndarray, c1: np.ndarray, u2: np.ndarray, c2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if u1.dtype != u2.dtype and (u1.dtype == object or u2.dtype == object or u1.dtype.kind != u2.dtype.kind):
        u1 = u1.astype(object)
        u2 = u2.astype(object)
    allk = np.concatenate([u1, u2])
    allc = np.concatenate([c1, c2])
    return _unique_counts_w(allk, allc)


def _unique_counts_w(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    try:
        uniq, inv = np.unique(keys, return_inverse=True)
    except TypeError:
        raise TypeError("hot-key counting needs keys of one comparable type (all ints, all str or all bytes)") from None
    return uniq, np.bincount(inv.reshape(-1), weights=counts, minlength=len(uniq))


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int, not {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


class HeavyHitters:
    """Streaming heavy hitters in fixed memory: a Misra–Gries summary.

    Keeps at most ``capacity`` counters.  After updates totalling weight
    ``N`` (the number of keys, or the sum of their weights):

    * every key whose true weight exceeds ``N / (capacity + 1)`` is kept;
    * a kept key's counter underestimates its true weight by at most
      :attr:`error` ``<= N / (capacity + 1)``, so the true weight lies in
      ``[count, count + error]`` (:meth:`top` reports both bounds).

    Each chunk is first counted exactly, then merged into the summary and
    reduced by subtracting the ``(capacity+1)``-th largest counter from every
    counter (the mergeable Misra–Gries reduction of Agarwal et al., 2012).
    Each reduction by ``c`` removes at least ``(capacity+1)·c`` of weight, so
    the total subtracted, :attr:`error`, is at most ``N / (capacity + 1)``.

    :meth:`top` reports the *hot* keys: those whose lower bound clears
    :attr:`threshold` ``= N / (capacity + 1)`` (certainly above the weight
    the summary guarantees to keep); :meth:`candidates` lists every key kept,
    with its bounds, hot or not.

    >>> hh = HeavyHitters(capacity=2)
    >>> hh.update(["a"] * 50 + ["b"] * 36 + list("cdefghij"))
    >>> [(k, lo) for k, lo, hi in hh.top(2)]
    [('a', 49.0), ('b', 35.0)]
    >>> hh.error <= hh.total / 3
    True
    >>> u = HeavyHitters(capacity=2)
    >>> u.update(list("abcdefghij"))
    >>> u.top(2)
    no hot keys (no key's lower bound exceeds the threshold 3.33)
    """

    def __init__(self, capacity: int = 1000) -> None:
        _check_k(capacity)
        self.capacity = capacity
        self.total = 0.0
        self.error = 0.0
        self._keys: np.ndarray | None = None
        self._counts = np.zeros(0)

    def update(self, keys: Any, weights: Any = None, *, chunk_size: int = DEFAULT_CHUNK_SIZE) -> None:
        """Add keys (array-like or a stream of chunks), optionally weighted."""
        for kc, w, _ in iter_chunks(keys, weights, chunk_size=chunk_size):
            u, c = _unique_counts(_key_array(kc), w)
            self.total += float(c.sum())
            if self._keys is None:
                self._keys, self._counts = u, c
            else:
                self._keys, self._counts = _merge(self._keys, self._counts, u, c)
            self._reduce()

    def _reduce(self) -> None:
        k = self.capacity
        if self._keys is None or len(self._counts) <= k:
            return
        cut = float(np.partition(self._counts, len(self._counts) - (k + 1))[len(self._counts) - (k + 1)])
        self._counts = self._counts - cut
        keep = self._counts > 0
        self._keys = self._keys[keep]
        self._counts = self._counts[keep]
        self.error += cut

    def merged(self, other: HeavyHitters) -> HeavyHitters:
        """A new summary of both inputs' keys (neither changes): counters are
        added, errors add up, then the summary is reduced to ``capacity``, so
        the guarantee above holds for the combined total (mergeable
        Misra-Gries; associative up to the order ties are broken in).

        >>> a, b = HeavyHitters(2), HeavyHitters(2)
        >>> a.update(["x"] * 5 + ["y"]); b.update(["x"] * 3 + ["z"] * 2)
        >>> m = a.merged(b)
        >>> m.top(1)[0][0], m.total
        ('x', 11.0)
        """
        if not isinstance(other, HeavyHitters):
            raise TypeError(f"cannot merge HeavyHitters with {type(other).__name__}")
        if other.capacity != self.capacity:
            raise ValueError(f"capacities differ ({self.capacity} vs {other.capacity})")
        out = HeavyHitters(self.capacity)
        out.total = self.total + other.total
        out.error = self.error + other.error
        if self._keys is None or other._keys is None:
            src = self if other._keys is None else other
            out._keys = None if src._keys is None else src._keys.copy()
            out._counts = src._counts.copy()
        else:
            out._keys, out._counts = _merge(self._keys, self._counts, other._keys, other._counts)
        out._reduce()
        return out

    def __len__(self) -> int:
        return 0 if self._keys is None else len(self._keys)

    @property
    def threshold(self) -> float:
        """``total / (capacity + 1)``: every key heavier than this is kept
        (and :attr:`error` never exceeds it); :meth:`top` reports a key once
        its lower bound exceeds it."""
        return self.total / (self.capacity + 1)

    def top(self, n: int | None = None) -> HotKeys:
        """The hot keys, largest first: ``(key, lower, upper)`` bounds on the
        true weight, for the (at most ``n``) keys whose lower bound exceeds
        :attr:`threshold`.  An empty result (no hot keys: uniform traffic,
        say) prints as "no hot keys".  A key whose true weight is above the
        threshold but whose lower bound is not yet is among
        :meth:`candidates`."""
        if n is not None:
            _check_k(n)
        cut = self.threshold
        hot = [t for t in self.candidates() if t[1] > cut]
        return HotKeys(hot if n is None else hot[:n], cut)

    def candidates(self, n: int | None = None) -> list[tuple[Any, float, float]]:
        """Every key the summary keeps (at most ``n``), with its ``(key,
        lower, upper)`` bounds, largest lower bound first, hot or not: a key
        whose upper bound is small may be any key of uniform traffic."""
        if n is not None:
            _check_k(n)
        if self._keys is None or len(self._keys) == 0:
            return []
        n = len(self._keys) if n is None else n
        return [
            (_py(self._keys[i]), float(self._counts[i]), float(self._counts[i] + self.error))
            for i in _top(self._keys, self._counts, n)
        ]


class HotKeys(list[tuple[Any, float, float]]):
    """The result of :meth:`HeavyHitters.top`: a list of ``(key, lower,
    upper)``; empty, it prints as "no hot keys" with the threshold no key's
    lower bound cleared."""

    def __init__(self, items: Iterable[tuple[Any, float, float]] = (), threshold: float = 0.0) -> None:
        super().__init__(items)
        self.threshold = threshold

    def __repr__(self) -> str:
        if self:
            return super().__repr__()
        return f"no hot keys (no key's lower bound exceeds the threshold {self.threshold:,.2f})"

    __str__ = __repr__


def hot_keys(
    keys: Any,
    k: int = 10,
    *,
    weights: Any = None,
    capacity: int | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> list[dict[str, Any]]:
    """Hot keys as dicts ``{key, count, upper}``: exact by default, streaming with ``capacity``.

    With ``capacity=None`` the counts are exact (``upper == count``); with a
    capacity a :class:`HeavyHitters` summary is used and ``upper`` bounds the
    true weight.

    >>> hot_keys([1, 1, 2], 1)
    [{'key': 1, 'count': 2.0, 'upper': 2.0}]
    """
    _check_k(k)
    if capacity is None:
        top = top_k(keys, k, weights=weights, chunk_size=chunk_size)
        return [{"key": key, "count": c, "upper": c} for key, c in top]
    hh = HeavyHitters(capacity)
    hh.update(keys, weights, chunk_size=chunk_size)
    return [{"key": key, "count": lo, "upper": hi} for key, lo, hi in hh.top(k)]


# ------------------------------------------------------ shard-key comparison


def propose_hot_set(keys: Any, router: Any, **kw: Any) -> dict[Any, int]:
    """A hot set ``{key: fan_out}`` for ``router`` from the traffic ``keys``
    (or a :class:`HeavyHitters` summary of it): the keys whose guaranteed
    upper bound exceeds ``headroom * target_load`` on one shard, each with
    the smallest fan-out that brings it under.  The same function as
    :func:`shardhash.hotkeys.propose_hot_set` (keyword arguments there).

    >>> from shardhash import JumpRouter
    >>> hot = propose_hot_set(["star"] * 3000 + [f"u{i}" for i in range(7000)], JumpRouter([f"s{i}" for i in range(8)]))
    >>> list(hot), hot["star"] >= 3
    (['star'], True)
    """
    from .hotkeys import propose_hot_set as propose

    return propose(keys, router, **kw)


def _column(table: Any, name: str) -> np.ndarray:
    try:
        if hasattr(table, "column") and hasattr(table, "schema") and hasattr(table, "num_rows"):  # pyarrow
            col = table.column(name)
        else:
            col = table[name]
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"sample table has no column {name!r}") from exc
    except Exception as exc:  # polars/pyarrow raise their own errors for unknown columns
        raise ValueError(f"sample table has no column {name!r}") from exc
    if hasattr(col, "to_numpy") and not isinstance(col, np.ndarray):
        try:
            col = col.to_numpy(zero_copy_only=False)
        except TypeError:
            col = col.to_numpy()
    arr = np.asarray(col)
    if arr.ndim != 1:
        raise ValueError(f"column {name!r} must be one-dimensional")
    return arr


def _routable(values: np.ndarray, name: str) -> np.ndarray:
    """Turn a column into keys the routers accept (ints, str, bytes)."""
    if values.dtype.kind == "M":
        return values.astype("datetime64[us]").astype(np.int64)
    if values.dtype.kind in "iu":
        return values.astype(np.int64) if values.dtype.kind == "i" else values.astype(np.uint64)
    if values.dtype.kind == "b":
        return values.astype(np.int64)
    if values.dtype.kind in "US":
        return values.astype(object)
    if values.dtype.kind == "O":
        return values
    raise ValueError(f"column {name!r} has dtype {values.dtype}; shard keys must be integers, strings, bytes or dates")


@dataclass
class ShardKeyReport:
    """How one candidate shard key would spread a sample table."""

    name: str
    kind: str
    column: str
    distinct: int
    counts: np.ndarray
    max_mean: float
    cv: float
    recent_max_share: float | None
    queries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "column": self.column,
            "distinct": self.distinct,
            "counts": self.counts.tolist(),
            "max_mean": self.max_mean,
            "cv": self.cv,
            "recent_max_share": self.recent_max_share,
            "queries": self.queries,
        }


def _parse_candidate(name: str, spec: Any) -> tuple[str, str]:
    if isinstance(spec, str):
        kind, _, col = spec.partition(":")
        if not col:
            kind, col = "hash", spec
    elif isinstance(spec, Sequence) and len(spec) == 2:
        kind, col = spec
    else:
        raise ValueError(f"candidate {name!r}: expected ('hash'|'range', column) or 'kind:column', got {spec!r}")
    if kind not in ("hash", "range"):
        raise ValueError(f"candidate {name!r}: kind must be 'hash' or 'range', not {kind!r}")
    return str(kind), str(col)


def _place(kind: str, keys: np.ndarray, n: int) -> np.ndarray:
    from . import routing

    names = [f"s{i}" for i in range(n)]
    if kind == "hash":
        return np.asarray(routing.JumpRouter(names).route_many(keys), dtype=np.int64)
    # Range: split points at quantiles of the sample so ranges hold equal data
    # (lower bounds inclusive, as RangeRouter does).
    rr = getattr(routing, "RangeRouter", None)
    if rr is not None and hasattr(rr, "from_sample") and keys.dtype.kind in "iu":
        try:
            router = rr.from_sample(keys, n)
        except ValueError:
            pass  # too few distinct values for n ranges: use fewer ranges below
        else:
            return np.asarray(router.route_many(keys), dtype=np.int64)
    return _quantile_ranges(keys, n)


def _quantile_ranges(keys: np.ndarray, n: int) -> np.ndarray:
    """Range placement with split points at the sample's quantiles (lower bound inclusive)."""
    try:
        uniq = np.unique(keys)
    except TypeError:
        raise ValueError("a range key needs values of one comparable type") from None
    srt = np.sort(keys, kind="stable")
    splits: list[Any] = []
    for i in range(1, n):
        v = srt[len(srt) * i // n]
        if not splits or v > splits[-1]:
            splits.append(v)
    del uniq
    return np.searchsorted(np.asarray(splits, dtype=srt.dtype), keys, side="right").astype(np.int64)


def compare_shard_keys(
    table: Any,
    candidates: Mapping[str, Any],
    *,
    shards: int = 8,
    time_column: str | None = None,
    recent: float = 0.01,
    queries: Mapping[str, str] | None = None,
) -> list[ShardKeyReport]:
    """Compare candidate shard keys on a sample table.

    ``table`` is anything indexable by column name (dict of arrays, pandas or
    polars DataFrame, pyarrow Table).  ``candidates`` maps a label to
    ``("hash", column)`` (hash partitioning, a JumpRouter) or
    ``("range", column)`` (ranges with split points at the sample's quantiles,
    a RangeRouter); ``"range:created_at"`` is the same as a string.

    For each candidate the report gives the distinct values, rows per shard
    with max/mean and CV, the largest share of the most recent ``recent``
    fraction of rows (by ``time_column``) that lands on a single shard (1.0
    means every new write hits one shard), and for each query ``name ->
    column`` (an equality filter on that column): ``shards_asked`` (1 when the
    column is the shard key, else every shard) and ``rows_spread``, the mean
    number of shards that actually hold a value's rows.

    >>> import numpy as np
    >>> day = np.repeat(np.arange(10), 100)
    >>> t = {"customer": np.arange(1000) % 97, "day": day}
    >>> reps = compare_shard_keys(t, {"customer": ("hash", "customer"), "date": ("range", "day")},
    ...                           shards=4, time_column="day", recent=0.1)
    >>> [(r.name, r.recent_max_share) for r in reps]
    [('customer', 0.32), ('date', 1.0)]
    """
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise ValueError(f"shards must be a positive int, got {shards!r}")
    if not (isinstance(recent, (int, float)) and 0 < recent <= 1):
        raise ValueError(f"recent must be a fraction in (0, 1], got {recent!r}")
    if not candidates:
        raise ValueError("no candidate shard keys given")
    recent_idx = None
    if time_column is not None:
        tcol = _column(table, time_column)
        n_recent = max(1, int(round(len(tcol) * recent)))
        order = np.argsort(_routable(tcol, time_column), kind="stable")
        recent_idx = order[len(order) - n_recent :]
    qcols = {qn: _column(table, qc) for qn, qc in (queries or {}).items()}
    reports = []
    for name, spec in candidates.items():
        kind, col = _parse_candidate(name, spec)
        values = _routable(_column(table, col), col)
        try:
            distinct = int(len(np.unique(values)))
        except TypeError:
            distinct = len(set(values.tolist()))
        placed = _place(kind, values, shards)
        counts = np.bincount(placed, minlength=shards)
        imb = imbalance(counts)
        recent_share = None
        if recent_idx is not None:
            rc = np.bincount(placed[recent_idx], minlength=shards)
            recent_share = float(rc.max() / rc.sum())
        qrep: dict[str, dict[str, Any]] = {}
        for qn, qv in qcols.items():
            qcol = (queries or {})[qn]
            try:
                _, inv = np.unique(qv, return_inverse=True)
            except TypeError:
                raise ValueError(f"query {qn!r}: column {qcol!r} mixes types") from None
            inv = inv.reshape(-1).astype(np.int64)
            pairs = np.unique(inv * shards + placed)
            spread = np.bincount(pairs // shards)
            targeted = qcol == col
            qrep[qn] = {
                "column": qcol,
                "shards_asked": 1 if targeted else shards,
                "all_shards": (not targeted) and shards > 1,
                "rows_spread": float(spread[spread > 0].mean()),
            }
        reports.append(
            ShardKeyReport(name, kind, col, distinct, counts, imb["max_mean"], imb["cv"], recent_share, qrep)
        )
    return reports
