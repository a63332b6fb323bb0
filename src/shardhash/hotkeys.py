"""Hot keys: spread one key's writes over sub-keys, and know where to read.

A celebrity account, an automated client or a huge tenant can overload its
shard however balanced the placement.  For append-mostly data (events,
activity, counters) a hot key's writes can be spread over ``fan_out``
sub-keys; reads then fan out to every sub-key and merge.

:class:`HotKeyRouter` wraps any hash router.  Its hot set ``{key: fan_out}``
is part of its versioned document (type ``"hot"``), so every instance that
loads the document agrees on it.  It places every key exactly as its base
(``route(key) == base.route(key)``); on top of that:

* ``route_write(key) -> (shard, sub_key)``: a cold key gives
  ``(route(key), 0)``; a hot key one of its sub-keys ``0..fan_out-1``
  (chosen by the ``write`` policy: ``"random"``, ``"round_robin"`` or
  ``"time"`` buckets of ``bucket_seconds``).
* ``route_read(key) -> [(shard, sub_key), ...]``: every sub-key to read
  (one pair for a cold key).
* Sub-key 0 is the key itself, so the rows a key had before it became hot
  never move; sub-key ``i >= 1`` is placed as the routing key
  :func:`subkey` ``(key, i) == f"{key}#{i}"`` through the base router, so
  sub-keys follow every later change of topology like any other key.

The application stores each row with its ``sub_key`` (for example a
``sub smallint`` column of the primary key) and reads a hot key as the union
of ``route_read(key)``.  Making a key hot or cold is a new document version;
:func:`hot_changes` (and ``shardhash.plan.diff``, in ``report.hot_changes``)
say which sub-keys appear and which must be folded back into sub-key 0.

>>> from shardhash import JumpRouter, load_router
>>> r = HotKeyRouter(JumpRouter([f"s{i}" for i in range(8)]), {"celebrity": 4}, write="round_robin")
>>> r.route_write("nobody") == (r.route("nobody"), 0)
True
>>> [sub for _, sub in r.route_read("celebrity")]
[0, 1, 2, 3]
>>> [r.route_write("celebrity")[1] for _ in range(5)]
[0, 1, 2, 3, 0]
>>> load_router(r.to_json()) == r
True
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shardhash._hashing import Hasher
from shardhash._hotkeys import HotPaths
from shardhash.routing import RangeRouter, Router, WatermarkRouter, WrappingRouter, register_router_type
from shardhash.routing.base import _check_int, _describe

__all__ = ["HotKeyRouter", "HotChange", "hot_changes", "propose_hot_set", "subkey", "MAX_FAN_OUT"]

MAX_FAN_OUT = 1024
#: the shortest ``bucket_seconds`` of ``write="time"``: any shorter bucket and
#: ``unix_time / bucket_seconds`` (up to the year 9999) could overflow a double
MIN_BUCKET_SECONDS = 1e-6
#: the largest unix time ``write="time"`` is checked against (9999-12-31)
_LAST_UNIX_TIME = 253402300799.0
_WRITE_POLICIES = ("random", "round_robin", "time")


def subkey(key: Any, i: int) -> Any:
    """The routing key of sub-key ``i`` of ``key``: the key itself for 0,
    ``f"{key}#{i}"`` otherwise.

    >>> subkey("celebrity", 0), subkey("celebrity", 2), subkey(42, 1)
    ('celebrity', 'celebrity#2', '42#1')
    """
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i < 0:
        raise ValueError(f"sub-key must be an int >= 0, got {i!r}")
    return key if i == 0 else f"{key}#{int(i)}"


def _hot_key(k: Any, where: str) -> Any:
    if isinstance(k, bool) or not isinstance(k, (int, str)):
        raise TypeError(f"{where}: hot keys must be int or str (they are stored in the document), "
                        f"got {_describe(k)} (type {type(k).__name__})")
    return k


def _check_bucket_seconds(v: Any) -> float:
    """``bucket_seconds`` of ``write="time"`` as a float, refused unless every
    ``floor(unix_time / bucket_seconds)`` route_write computes is finite."""
    if not (_finite(v) and v >= MIN_BUCKET_SECONDS and math.isfinite(_LAST_UNIX_TIME / float(v))):
        raise ValueError(f"write='time' needs bucket_seconds, a finite number >= {MIN_BUCKET_SECONDS:g}, "
                         f"got {_describe(v)} (type {type(v).__name__})")
    return float(v)


def _finite(v: Any) -> bool:
    """``v`` is an int or float (not bool) that is finite as a float."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:  # an int beyond the float range
        return False


def _sort_key(k: Any) -> tuple[int, Any]:
    return (0, k) if isinstance(k, int) else (1, k)


@register_router_type("hot")
class HotKeyRouter(WrappingRouter):
    """Any hash router plus a hot set ``{key: fan_out}`` (see the module docstring).

    ``write``: how ``route_write`` picks a hot key's sub-key: ``"random"``
    (default), ``"round_robin"`` (per router instance), or ``"time"`` (the
    sub-key of the current ``bucket_seconds`` time bucket, modulo fan_out).
    ``fan_out`` is 2..1024 per key.

    >>> from shardhash import JumpRouter
    >>> r = HotKeyRouter(JumpRouter(["a", "b", "c"]), {42: 3})
    >>> sorted(sub for _, sub in r.route_read(42)), r.route_read(7) == [(r.route(7), 0)]
    ([0, 1, 2], True)
    """

    _hot: tuple[tuple[Any, int], ...]
    _fan: dict[Any, tuple[str, ...]]
    _write: str
    _bucket: float | None
    _rr: Any
    _rng: random.Random

    _doc_fields = ("base", "hot", "write", "bucket_seconds")

    def __init__(self, base: Router, hot: Mapping[Any, int] | Iterable[tuple[Any, int]] = (), *,
                 write: str = "random", bucket_seconds: float | None = None, version: int = 1) -> None:
        if not isinstance(base, Router):
            raise TypeError(f"base must be a Router, not {type(base).__name__}")
        if isinstance(base, (RangeRouter, WatermarkRouter)):
            raise TypeError(f"HotKeyRouter needs a router that takes str keys as base, not {type(base).__name__}")
        if isinstance(base, HotKeyRouter):
            raise TypeError("HotKeyRouter cannot wrap another HotKeyRouter (merge the hot sets)")
        if write not in _WRITE_POLICIES:
            raise ValueError(f"write must be one of {_WRITE_POLICIES}, got {write!r}")
        if write == "time":
            bucket_seconds = _check_bucket_seconds(bucket_seconds)
        elif bucket_seconds is not None:
            raise ValueError("bucket_seconds only applies to write='time'")
        items = list(hot.items()) if isinstance(hot, Mapping) else list(hot)
        pairs: dict[Any, int] = {}
        for i, it in enumerate(items):
            if not isinstance(it, (tuple, list)) or len(it) != 2:
                raise TypeError(f"hot[{i}] must be a (key, fan_out) pair")
            k = _hot_key(it[0], f"hot[{i}]")
            n = _check_int(it[1], f"fan_out of hot key {k!r}", 2, MAX_FAN_OUT)
            if k in pairs:
                raise ValueError(f"hot key {k!r} given twice")
            pairs[k] = n
        super().__init__(base.shards, hasher=base.hasher, version=version, key_prefix=base.key_prefix)
        self._set("_hot", tuple(sorted(pairs.items(), key=lambda p: _sort_key(p[0]))))
        # Immutable router: each hot key's sub-key placement is computed once.
        self._set("_fan", {k: tuple(base.route(subkey(k, i)) for i in range(n)) for k, n in self._hot})
        self._set("_write", write)
        self._set("_bucket", bucket_seconds)
        self._set("_rr", itertools.count())
        self._set("_rng", random.Random())
        self._wrap(base)
        # Compiled fast paths for cold int/str keys (the methods below are the
        # reference they fall back to): instance attributes shadow the methods.
        paths = HotPaths(self, base, [k for k, _ in self._hot], HotKeyRouter.route_write.__get__(self),
                         HotKeyRouter.route_read.__get__(self))
        self._set("route_write", paths.route_write)
        self._set("route_read", paths.route_read)
        self._finish()

    # -- the hot set ---------------------------------------------------------------

    @property
    def hot(self) -> dict[Any, int]:
        """The hot set ``{key: fan_out}``."""
        return dict(self._hot)

    @property
    def write_policy(self) -> str:
        return self._write

    def fan_out(self, key: Any) -> int:
        """Number of sub-keys of ``key`` (1 for a cold key)."""
        shards = self._lookup(key)
        return 1 if shards is None else len(shards)

    def _lookup(self, key: Any) -> tuple[str, ...] | None:
        try:
            shards = self._fan.get(key)
        except TypeError:  # unhashable: route() names the problem
            self.route(key)
            raise
        if shards is not None and (isinstance(key, bool) or not isinstance(key, (int, str, np.integer))):
            return None  # 1.0 == 1 in a dict; only the int/str key itself is hot
        return shards

    def route_write(self, key: Any, *, sub_key: int | None = None) -> tuple[str, int]:
        """``(shard, sub_key)`` to write a row of ``key`` to.

        A cold key: ``(route(key), 0)``.  A hot key: a sub-key by the write
        policy, or ``sub_key`` when given (0..fan_out-1).
        """
        shards = self._fan.get(key) if type(key) is str or type(key) is int else self._lookup(key)
        if shards is None:
            if sub_key:
                raise ValueError(f"key {_describe(key)} is not hot: its only sub-key is 0")
            return self.route(key), 0
        n = len(shards)
        if sub_key is None:
            w = self._write
            if w == "random":
                i = self._rng.randrange(n)
            elif w == "round_robin":
                i = next(self._rr) % n
            else:
                i = int(time.time() // self._bucket) % n  # type: ignore[operator]
        else:
            i = _check_int(sub_key, "sub_key", 0, n - 1)
        return shards[i], i

    def route_read(self, key: Any) -> list[tuple[str, int]]:
        """Every ``(shard, sub_key)`` holding rows of ``key``, sub-key order."""
        shards = self._fan.get(key) if type(key) is str or type(key) is int else self._lookup(key)
        if shards is None:
            return [(self.route(key), 0)]
        return list(zip(shards, range(len(shards))))

    def read_shards(self, key: Any) -> dict[str, list[int]]:
        """``route_read`` grouped by shard: ``{shard: [sub_keys]}`` (one query per shard)."""
        out: dict[str, list[int]] = {}
        for s, i in self.route_read(key):
            out.setdefault(s, []).append(i)
        return out

    def with_hot(self, hot: Mapping[Any, int], *, version: int | None = None) -> HotKeyRouter:
        """The same base and policy with another hot set (version + 1 by default)."""
        return HotKeyRouter(self._base, hot, write=self._write, bucket_seconds=self._bucket,
                            version=self.version + 1 if version is None else version)

    # -- document ------------------------------------------------------------------

    def _doc_params(self) -> dict[str, Any]:
        return {"base": self._base.to_dict(), "hot": [[k, n] for k, n in self._hot],
                "write": self._write, "bucket_seconds": self._bucket}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        base, hot = cls._base_and_pairs(params, "hot", "hot", "key, fan_out")
        r = cls(base, hot, write=params.get("write", "random"),
                bucket_seconds=params.get("bucket_seconds"), version=version)
        r._check_base_hashing(hasher, key_prefix, "hot")
        return r


# ---------------------------------------------------------------------------
# topology changes


@dataclass
class HotChange:
    """How one key's sub-keys change between two topologies.

    ``added``: ``(shard, sub_key)`` that start receiving writes; ``removed``:
    sub-keys that stop, whose rows must be folded back into sub-key 0 (or
    another remaining sub-key) before the old topology is retired; ``moved``:
    ``(sub_key, old shard, new shard)`` of sub-keys that stay but whose shard
    changes (the base router changed).
    """

    key: Any
    before: int
    after: int
    added: list[tuple[str, int]] = field(default_factory=list)
    removed: list[tuple[str, int]] = field(default_factory=list)
    moved: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if self.before == 1:
            return "made hot"
        if self.after == 1:
            return "made cold"
        return "fan-out changed" if self.before != self.after else "sub-keys moved"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "before": self.before, "after": self.after,
                "added": [list(p) for p in self.added], "removed": [list(p) for p in self.removed],
                "moved": [list(p) for p in self.moved]}


def _reads(r: Any, key: Any) -> list[tuple[str, int]]:
    if isinstance(r, HotKeyRouter):
        return r.route_read(key)
    return [(r.route(key), 0)]


def hot_changes(old: Any, new: Any) -> list[HotChange]:
    """What changes for the hot keys of either router (either may be a plain
    router: every key is cold there).  Keys in order: ints, then str.

    >>> from shardhash import JumpRouter
    >>> base = JumpRouter(["a", "b", "c", "d"])
    >>> old = HotKeyRouter(base, {"x": 2})
    >>> new = old.with_hot({"x": 3, "y": 2})
    >>> [(c.key, c.kind, [s for _, s in c.added]) for c in hot_changes(old, new)]
    [('x', 'fan-out changed', [2]), ('y', 'made hot', [1])]
    >>> hot_changes(new, base)[0].kind
    'made cold'
    """
    keys: set[Any] = set()
    for r in (old, new):
        if isinstance(r, HotKeyRouter):
            keys.update(r.hot)
    out = []
    for k in sorted(keys, key=_sort_key):
        a, b = _reads(old, k), _reads(new, k)
        da, db = dict((i, s) for s, i in a), dict((i, s) for s, i in b)
        ch = HotChange(k, len(a), len(b),
                       added=[(s, i) for s, i in b if i not in da],
                       removed=[(s, i) for s, i in a if i not in db],
                       moved=[(i, da[i], db[i]) for i in sorted(set(da) & set(db)) if da[i] != db[i]])
        if ch.before != ch.after or ch.moved:
            out.append(ch)
    return out


# ---------------------------------------------------------------------------
# proposing a hot set


def propose_hot_set(keys: Any, router: Router, *, weights: Any = None, target_load: float | None = None,
                    headroom: float = 0.5, capacity: int = 1000, max_fan_out: int = 64,
                    candidates: int = 100) -> dict[Any, int]:
    """A hot set ``{key: fan_out}`` for ``router`` from the traffic ``keys``
    (or from a :class:`shardhash.analysis.HeavyHitters` summary of it already
    made; ``weights`` and ``capacity`` then do not apply).

    One heavy-hitter pass (:class:`shardhash.analysis.HeavyHitters` with
    ``capacity`` counters) bounds each frequent key's weight from above.  The
    per-shard target load defaults to the mean (total / shards); one key may
    put at most ``headroom * target_load`` on any one shard.  A key above that
    gets the smallest fan-out whose sub-keys, placed by ``router``, keep each
    shard's share of the key under the cap (up to ``max_fan_out``; a key that
    cannot be brought under gets ``max_fan_out``).  Only int and str keys are
    proposed (hot keys are stored in the router document).

    >>> from shardhash import JumpRouter
    >>> r = JumpRouter([f"s{i}" for i in range(8)])
    >>> traffic = ["star"] * 3000 + [f"u{i}" for i in range(7000)]
    >>> hot = propose_hot_set(traffic, r)
    >>> list(hot), hot["star"] >= 3
    (['star'], True)
    """
    from shardhash.analysis import HeavyHitters

    if not isinstance(router, Router):
        raise TypeError(f"router must be a Router, not {type(router).__name__}")
    base = router.base if isinstance(router, HotKeyRouter) else router
    if isinstance(headroom, bool) or not (isinstance(headroom, (int, float)) and 0 < headroom <= 1):
        raise ValueError(f"headroom must be a number in (0, 1], got {_describe(headroom)}")
    max_fan_out = _check_int(max_fan_out, "max_fan_out", 2, MAX_FAN_OUT)
    candidates = _check_int(candidates, "candidates", 1)
    if isinstance(keys, HeavyHitters):
        if weights is not None:
            raise ValueError("weights do not apply to a HeavyHitters summary (it holds weighted counts)")
        hh = keys
    else:
        hh = HeavyHitters(_check_int(capacity, "capacity", 1))
        hh.update(keys, weights)
    if not math.isfinite(hh.total):
        raise ValueError(f"the total weight of the traffic is not a finite number ({hh.total!r})")
    if target_load is not None and not (_finite(target_load) and target_load > 0):
        raise ValueError(f"target_load must be a finite number > 0, got {_describe(target_load)}")
    if hh.total <= 0:
        return {}
    if target_load is None:
        target_load = hh.total / len(base.shards)
    cap = headroom * float(target_load)
    if not cap > 0:
        raise ValueError(f"headroom * target_load = {headroom!r} * {target_load!r} is 0 as a float")
    out: dict[Any, int] = {}
    for key, _lo, hi in hh.candidates(candidates):
        if hi <= cap:
            break  # candidates() is sorted by count; later keys are lighter
        if isinstance(key, (np.integer,)):
            key = int(key)
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            continue
        q = hi / cap  # inf when cap is tiny: then no fan-out is enough
        n = max(2, math.ceil(q)) if q < max_fan_out else max_fan_out
        while n < max_fan_out:
            per: dict[str, int] = {}
            for i in range(n):
                s = base.route(subkey(key, i))
                per[s] = per.get(s, 0) + 1
            if max(per.values()) * hi / n <= cap:
                break
            n += 1
        out[key] = min(n, max_fan_out)
    return out

