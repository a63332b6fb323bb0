"""Units of a migration: which keys move from which shard to which.

A unit is one step of a plan (:class:`shardhash.plan.Step`) or one id batch
of a watermark walk.  A key belongs to a unit when the migration's old router
places it on the unit's ``source``, its new router places it on the unit's
``destination``, and the unit's own filter holds:

* ``range``: the key's 64-bit hash (the routers' hasher) is in ``[lo, hi]``;
* ``buckets``: ``hash % modulus`` is one of ``buckets``;
* ``ids``: the integer key itself is in ``[lo, hi]`` (watermark batches);
* ``all``: no further filter (routers without hash-space structure).

Membership is exact: only keys whose owner really changes belong to a unit,
so the shard-side ownership check and the copy agree on every key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_MAX = (1 << 64) - 1
KINDS = ("range", "buckets", "ids", "all")


@dataclass(frozen=True)
class Unit:
    """One unit of a migration (see the module docstring)."""

    index: int
    source: str
    destination: str
    kind: str = "all"
    lo: int = 0
    hi: int = _MAX
    buckets: tuple[int, ...] = ()
    modulus: int = 0
    _bset: frozenset[int] = field(default=frozenset(), compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "source": self.source, "destination": self.destination,
                             "kind": self.kind, "lo": self.lo, "hi": self.hi}
        if self.kind == "buckets":
            d["buckets"] = list(self.buckets)
            d["modulus"] = self.modulus
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Unit:
        kind = d.get("kind", "all")
        if kind not in KINDS:
            raise ValueError(f"unit {d.get('index')}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
        b = tuple(int(x) for x in d.get("buckets", ()))
        return cls(int(d["index"]), str(d["source"]), str(d["destination"]), kind, int(d.get("lo", 0)),
                   int(d.get("hi", _MAX)), b, int(d.get("modulus", 0)), frozenset(b))


def units_from_steps(steps: Sequence[Any]) -> list[Unit]:
    """Units from :func:`shardhash.plan.plan_steps` / ``add_shards`` steps."""
    out = []
    for i, st in enumerate(steps):
        if st.kind in ("range", "filter"):
            out.append(Unit(i, st.source, st.destination, "range", int(st.lo), int(st.hi)))
        elif st.kind == "buckets":
            b = tuple(int(x) for x in st.buckets)
            out.append(Unit(i, st.source, st.destination, "buckets", 0, _MAX, b, int(st.modulus), frozenset(b)))
        else:
            raise ValueError(f"step {st.order}: unknown kind {st.kind!r}")
    return out


def units_for(old: Any, new: Any, *, max_step_share: float = 0.02) -> list[Unit]:
    """The units that take ``old`` to ``new``: the plan's steps when the
    routers have hash-space structure, else one ``all`` unit per pair of
    shards whose keys may move."""
    from .. import plan

    if getattr(old, "routes_on_hash", False) and getattr(new, "routes_on_hash", False) \
            and old.hasher == new.hasher:
        try:
            return units_from_steps(plan.plan_steps(old, new, max_step_share=max_step_share))
        except ValueError:
            pass
    pairs = [(s, d) for s in old.shards for d in new.shards if s != d]
    return [Unit(i, s, d, "all") for i, (s, d) in enumerate(pairs)]


class Membership:
    """Assigns keys to the units of one migration (batch and scalar)."""

    def __init__(self, old: Any, new: Any, units: Sequence[Unit]) -> None:
        self.old, self.new = old, new
        self.units = list(units)
        so = {s: i for i, s in enumerate(old.shards)}
        sn = {s: i for i, s in enumerate(new.shards)}
        self._pairs = [(so.get(u.source, -1), sn.get(u.destination, -1)) for u in self.units]
        self._need_hash = any(u.kind in ("range", "buckets") for u in self.units)
        self.sources = sorted({u.source for u in self.units})
        self.destinations = sorted({u.destination for u in self.units})

    def _hashes(self, keys: Any) -> np.ndarray:
        return np.asarray(self.new.hasher.hash_array(keys), dtype=np.uint64)

    def assign(self, keys: Sequence[Any]) -> np.ndarray:
        """Unit index of every key (-1: the key does not move)."""
        n = len(keys)
        out = np.full(n, -1, dtype=np.int64)
        if n == 0 or not self.units:
            return out
        klist = list(keys)
        oi = np.asarray(self.old.route_many(klist))
        ni = np.asarray(self.new.route_many(klist))
        moving = oi.astype(np.int64) * 0 == 0
        h = self._hashes(klist) if self._need_hash else None
        ids: np.ndarray | None = None
        for u, (si, di) in zip(self.units, self._pairs):
            m = moving & (oi == si) & (ni == di)
            if not m.any():
                continue
            if u.kind == "range":
                assert h is not None
                m &= (h >= np.uint64(u.lo)) & (h <= np.uint64(u.hi))
            elif u.kind == "buckets":
                assert h is not None
                r = (h % np.uint64(u.modulus)).astype(np.int64)
                m &= np.isin(r, np.fromiter(u.buckets, dtype=np.int64))
            elif u.kind == "ids":
                if ids is None:
                    ids = np.array([int(k) for k in klist], dtype=object)
                m &= np.array([u.lo <= k <= u.hi for k in ids], dtype=bool)
            m &= out < 0
            out[m] = u.index
        return out

    def unit_of(self, key: Any) -> int:
        """Unit index of one key (-1: it does not move)."""
        return int(self.assign([key])[0])
