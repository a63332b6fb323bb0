"""Units of a migration: which keys move from which shard to which.

A unit is one step of a plan (:class:`shardhash.plan.Step`) or one id batch
of a watermark walk.  A key belongs to a unit when the migration's old router
places it on the unit's ``source``, its new router places it on the unit's
``destination``, and the unit's own filter holds:

* ``range``: the key's 64-bit hash (the routers' hasher) is in ``[lo, hi]``;
* ``ranges``: the key's hash is in one of the intervals ``ranges`` (a plan
  step that groups many small pieces of one pair, e.g. a ring's vnode arcs);
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
KINDS = ("range", "ranges", "buckets", "ids", "all")


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
    ranges: tuple[tuple[int, int], ...] = ()

    def intervals(self) -> list[tuple[int, int]]:
        """The hash intervals of a ``range`` / ``ranges`` unit (inclusive)."""
        if self.kind == "ranges":
            return list(self.ranges)
        return [(self.lo, self.hi)] if self.kind == "range" else []

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "source": self.source, "destination": self.destination,
                             "kind": self.kind, "lo": self.lo, "hi": self.hi}
        if self.kind == "buckets":
            d["buckets"] = list(self.buckets)
            d["modulus"] = self.modulus
        if self.kind == "ranges":
            d["ranges"] = [list(r) for r in self.ranges]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Unit:
        kind = d.get("kind", "all")
        if kind not in KINDS:
            raise ValueError(f"unit {d.get('index')}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
        b = tuple(int(x) for x in d.get("buckets", ()))
        r = tuple((int(lo), int(hi)) for lo, hi in d.get("ranges", ()))
        return cls(int(d["index"]), str(d["source"]), str(d["destination"]), kind, int(d.get("lo", 0)),
                   int(d.get("hi", _MAX)), b, int(d.get("modulus", 0)), frozenset(b), r)


def units_from_steps(steps: Sequence[Any]) -> list[Unit]:
    """Units from :func:`shardhash.plan.plan_steps` / ``add_shards`` steps."""
    out = []
    for i, st in enumerate(steps):
        if st.kind in ("range", "filter"):
            out.append(Unit(i, st.source, st.destination, "range", int(st.lo), int(st.hi)))
        elif st.kind == "ranges":
            r = tuple((int(lo), int(hi)) for lo, hi in st.ranges)
            out.append(Unit(i, st.source, st.destination, "ranges", int(st.lo), int(st.hi), ranges=r))
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

    units: list[Unit] | None = None
    if getattr(old, "routes_on_hash", False) and getattr(new, "routes_on_hash", False) \
            and old.hasher == new.hasher:
        try:
            steps = plan.plan_steps(old, new, max_step_share=max_step_share)
        except ValueError:
            pass
        else:
            units = units_from_steps(steps)
            if any(st.kind == "filter" for st in steps):
                units += _catch_all(old, new, units)
    if units is None:
        pairs = [(s, d) for s in old.shards for d in new.shards if s != d]
        units = [Unit(i, s, d, "all") for i, (s, d) in enumerate(pairs)]
    _check_pinned(old, new, units)
    return units


#: A plan of two routers without hash-space structure (rendezvous,
#: multi-probe, a change of strategy) finds its (source, destination) pairs
#: by routing random hashes; a pair that owns a sliver of the hash space (a
#: tiny change of weight, hundreds of shards) can be missed, and its keys
#: would stay behind on a shard that no longer owns them.  Up to this many
#: unseen pairs, each gets an ``all`` unit (exact: it holds precisely the keys
#: the two routers place on that pair); beyond it, see docs/migrate.md.
CATCH_ALL_PAIRS = 4096


def _catch_all(old: Any, new: Any, units: Sequence[Unit]) -> list[Unit]:
    """``all`` units for the pairs of shards that a sampled plan did not see."""
    seen = {(u.source, u.destination) for u in units}
    # (a change that moves keys only off dropped shards or onto added ones
    # cannot move a key between two shards both routers keep)
    only = old.moves_only_added_removed(new)
    in_new, in_old = set(new.shards), set(old.shards)
    missing = [(s, d) for s in old.shards for d in new.shards if s != d and (s, d) not in seen
               and not (only and s in in_new and d in in_old)]
    if len(missing) > CATCH_ALL_PAIRS:
        return []
    first = len(units)
    return [Unit(first + i, s, d, "all") for i, (s, d) in enumerate(missing)]


def _pinned_keys(router: Any) -> list[Any]:
    """The keys a router places explicitly (DirectoryRouter overrides, through
    any wrappers), which no sample of random hashes finds."""
    from ..routing import DirectoryRouter, WrappingRouter

    keys: list[Any] = []
    r = router
    while isinstance(r, WrappingRouter):
        if isinstance(r, DirectoryRouter):
            keys.extend(r.overrides)
        r = r.base
    return keys


def _check_pinned(old: Any, new: Any, units: Sequence[Unit]) -> None:
    """Refuse units that would leave behind an explicitly placed key whose
    owner changes (its rows would stay on a shard that no longer owns them)."""
    keys = list(dict.fromkeys(_pinned_keys(old) + _pinned_keys(new)))
    if not keys:
        return
    moving: dict[Any, tuple[str, str]] = {}
    for k in keys:
        try:
            src, dst = old.route(k), new.route(k)
        except (TypeError, ValueError):  # (a key the routers cannot place holds no rows)
            continue
        if src != dst:
            moving[k] = (src, dst)
    if not moving:
        return
    mem = Membership(old, new, units)
    for kind in (int, str):  # (one batch per key type)
        batch = [k for k in moving if isinstance(k, kind)]
        for k, u in zip(batch, mem.assign(batch).tolist()):
            if u < 0:
                src, dst = moving[k]
                raise ValueError(f"the migration units do not move override key {k!r} from shard {src!r} "
                                 f"to {dst!r}: refusing to plan a migration that would leave its rows behind")


class Membership:
    """Assigns keys to the units of one migration (batch and scalar).

    Keys are routed once by each router; units are looked up per (source,
    destination) pair: hash ranges and id ranges by binary search, bucket
    sets through a residue table."""

    def __init__(self, old: Any, new: Any, units: Sequence[Unit]) -> None:
        self.old, self.new = old, new
        self.units = list(units)
        so = {s: i for i, s in enumerate(old.shards)}
        sn = {s: i for i, s in enumerate(new.shards)}
        self._n_new = len(new.shards)
        self._need_hash = any(u.kind in ("range", "ranges", "buckets") for u in self.units)
        self.sources = sorted({u.source for u in self.units})
        self.destinations = sorted({u.destination for u in self.units})
        groups: dict[int, dict[str, list[Unit]]] = {}
        for u in self.units:
            if u.source not in so or u.destination not in sn:
                continue
            code = so[u.source] * self._n_new + sn[u.destination]
            # (a ``ranges`` unit is looked up like ``range`` units, interval by interval)
            groups.setdefault(code, {}).setdefault("range" if u.kind == "ranges" else u.kind, []).append(u)
        self._by_pair: dict[int, list[tuple[str, Any]]] = {}
        for code, kinds in groups.items():
            specs: list[tuple[str, Any]] = []
            for kind, us in kinds.items():
                if kind == "range":
                    # (a plan's intervals of one pair are disjoint: the one that
                    # starts last at or below a hash is the only candidate)
                    iv = sorted((a, b, u.index) for u in us for a, b in u.intervals())
                    lo = np.array([a for a, _, _ in iv], dtype=np.uint64)
                    hi = np.array([b for _, b, _ in iv], dtype=np.uint64)
                    specs.append((kind, (lo, hi, np.array([i for _, _, i in iv], dtype=np.int64))))
                elif kind == "ids":
                    us = sorted(us, key=lambda u: u.lo)
                    lo = np.array([u.lo for u in us], dtype=object)
                    hi = np.array([u.hi for u in us], dtype=object)
                    specs.append((kind, (lo, hi, np.array([u.index for u in us], dtype=np.int64))))
                elif kind == "buckets":
                    for mod in sorted({u.modulus for u in us}):
                        table = np.full(mod, -1, dtype=np.int64) if mod <= (1 << 22) else None
                        members: dict[int, int] = {}
                        for u in us:
                            if u.modulus != mod:
                                continue
                            for b in u.buckets:
                                if table is not None:
                                    if table[b] < 0:
                                        table[b] = u.index
                                else:
                                    members.setdefault(b, u.index)
                        specs.append(("buckets", (mod, table, members)))
                else:
                    specs.append(("all", min(u.index for u in us)))
            self._by_pair[code] = specs

    def _hashes(self, keys: Any) -> np.ndarray:
        return np.asarray(self.new.hasher.hash_array(keys), dtype=np.uint64)

    def assign(self, keys: Sequence[Any]) -> np.ndarray:
        """Unit index of every key (-1: the key does not move)."""
        n = len(keys)
        out = np.full(n, -1, dtype=np.int64)
        if n == 0 or not self._by_pair:
            return out
        klist = list(keys)
        oi = np.asarray(self.old.route_many(klist)).astype(np.int64)
        ni = np.asarray(self.new.route_many(klist)).astype(np.int64)
        code = oi * self._n_new + ni
        h = self._hashes(klist) if self._need_hash else None
        # (with many pairs, only those this batch has: a plan may hold thousands)
        pairs = self._by_pair if len(self._by_pair) <= 32 else np.unique(code).tolist()
        for pair in pairs:
            specs = self._by_pair.get(pair)
            if specs is None:
                continue
            idx = np.flatnonzero(code == pair)
            if idx.size == 0:
                continue
            for kind, data in specs:
                free = out[idx] < 0
                cand = idx[free]
                if cand.size == 0:
                    break
                if kind == "all":
                    out[cand] = data
                elif kind in ("range", "ids"):
                    lo, hi, ui = data
                    if kind == "range":
                        assert h is not None
                        v = h[cand]
                    else:
                        v = np.array([int(klist[i]) for i in cand.tolist()], dtype=object)
                    j = np.searchsorted(lo, v, side="right") - 1
                    jj = np.clip(j, 0, None)
                    ok = (j >= 0) & np.asarray(v <= hi[jj], dtype=bool)
                    out[cand[ok]] = ui[jj[ok]]
                else:
                    mod, table, members = data
                    assert h is not None
                    r = (h[cand] % np.uint64(mod)).astype(np.int64)
                    if table is not None:
                        out[cand] = table[r]
                    else:
                        out[cand] = np.array([members.get(int(x), -1) for x in r], dtype=np.int64)
        return out

    def unit_of(self, key: Any) -> int:
        """Unit index of one key (-1: it does not move)."""
        return int(self.assign([key])[0])
