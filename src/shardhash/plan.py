"""Migration planning: what moves when a topology changes, and in what order.

* :func:`diff` routes every key under the old and the new router in one
  chunked pass and counts the old × new move matrix (optionally weighted by
  bytes or requests), with balance figures before and after.
* :func:`moved_ranges` answers without any keys, for strategies that partition
  the 64-bit hash space: the exact hash intervals, buckets or residue classes
  that change owner.
* :func:`add_shards`, :func:`remove_shards` and :func:`reweight` build the new
  router (``version + 1``) and an ordered list of capped migration
  :class:`Step` s.
* :func:`ideal_fraction` is the least share of keys any strategy must move for
  a change of target shares (1/5 when a fifth equal shard joins four).

>>> from shardhash import plan
>>> from shardhash.routing import ModuloRouter
>>> old = ModuloRouter(["a", "b", "c"])
>>> new = ModuloRouter(["a", "b", "c", "d"])
>>> rep = plan.diff(old, new, list(range(120_000)))
>>> round(rep.moved_fraction, 2), rep.ideal_fraction
(0.75, 0.25)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from ._options import check_options
from .analysis import imbalance
from .io import DEFAULT_CHUNK_SIZE, AtomicWriter, iter_chunks
from .routing import Router, hash_bits

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "PlanReport",
    "MovesWriter",
    "MovedRange",
    "Step",
    "diff",
    "moved_ranges",
    "ideal_fraction",
    "target_shares",
    "add_shards",
    "remove_shards",
    "reweight",
    "plan_steps",
    "MAX_STEPS",
    "TooManySteps",
]

HASH_SPACE = 1 << 64
_MAX = HASH_SPACE - 1
_MAX_RESIDUES = 1 << 22
# plan_steps refuses to build more steps than this (a tiny cap would
# otherwise run for minutes and print a plan nobody can execute).
MAX_STEPS = 100_000


class TooManySteps(ValueError):
    """``max_step_share`` would cut the plan into more than :data:`MAX_STEPS` steps."""



# ----------------------------------------------------------------- the report


@dataclass
class PlanReport:
    """What :func:`diff` found (every count is over the keys given)."""

    old_shards: tuple[str, ...]
    new_shards: tuple[str, ...]
    total: int
    moved: int
    ideal_fraction: float
    matrix: np.ndarray
    weighted_matrix: np.ndarray | None = None
    sources: np.ndarray | None = None
    destinations: np.ndarray | None = None
    hot_changes: list[Any] = field(default_factory=list)
    #: With ``diff(..., replicas=n)``: n, and the (key, replica) placements
    #: counted: ``replica_total`` = keys x n, ``replica_moved`` placements that
    #: the new lists hold and the old ones did not (copies to make),
    #: ``replica_in`` per new shard (copies it receives) and ``replica_out``
    #: per old shard (copies it drops).  A replica changing rank within a
    #: key's list does not move.
    replicas: int | None = None
    replica_total: int = 0
    replica_moved: int = 0
    replica_in: np.ndarray | None = None
    replica_out: np.ndarray | None = None

    @property
    def moved_fraction(self) -> float:
        return self.moved / self.total if self.total else 0.0

    @property
    def replica_moved_fraction(self) -> float:
        """Share of the (key, replica) placements that move (0.0 without replicas)."""
        return self.replica_moved / self.replica_total if self.replica_total else 0.0

    @property
    def before(self) -> np.ndarray:
        """Keys per old shard."""
        return np.asarray(self.matrix.sum(axis=1))

    @property
    def after(self) -> np.ndarray:
        """Keys per new shard."""
        return np.asarray(self.matrix.sum(axis=0))

    @property
    def before_weighted(self) -> np.ndarray | None:
        return None if self.weighted_matrix is None else self.weighted_matrix.sum(axis=1)

    @property
    def after_weighted(self) -> np.ndarray | None:
        return None if self.weighted_matrix is None else self.weighted_matrix.sum(axis=0)

    @property
    def moved_weight(self) -> float | None:
        if self.weighted_matrix is None:
            return None
        return float(self.weighted_matrix[self._moved_mask()].sum())

    @property
    def imbalance_before(self) -> dict[str, float]:
        return imbalance(self.before)

    @property
    def imbalance_after(self) -> dict[str, float]:
        return imbalance(self.after)

    def _moved_mask(self) -> np.ndarray:
        old = np.asarray(self.old_shards, dtype=object)[:, None]
        new = np.asarray(self.new_shards, dtype=object)[None, :]
        return np.asarray(old != new, dtype=bool)

    def moves(self) -> list[dict[str, Any]]:
        """Non-empty off-diagonal cells: ``{source, destination, keys[, weight]}``, largest first."""
        out = []
        mask = self._moved_mask()
        for i, j in zip(*np.nonzero(mask & (self.matrix > 0))):
            d: dict[str, Any] = {
                "source": self.old_shards[i],
                "destination": self.new_shards[j],
                "keys": int(self.matrix[i, j]),
            }
            if self.weighted_matrix is not None:
                d["weight"] = float(self.weighted_matrix[i, j])
            out.append(d)
        out.sort(key=lambda d: (-d["keys"], d["source"], d["destination"]))
        return out

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "old_shards": list(self.old_shards),
            "new_shards": list(self.new_shards),
            "total": self.total,
            "moved": self.moved,
            "moved_fraction": self.moved_fraction,
            "ideal_fraction": self.ideal_fraction,
            "matrix": self.matrix.tolist(),
            "before": self.before.tolist(),
            "after": self.after.tolist(),
            "imbalance_before": self.imbalance_before,
            "imbalance_after": self.imbalance_after,
            "moves": self.moves(),
        }
        if self.weighted_matrix is not None:
            d["weighted_matrix"] = self.weighted_matrix.tolist()
            d["moved_weight"] = self.moved_weight
            d["before_weighted"] = self.before_weighted.tolist()  # type: ignore[union-attr]
            d["after_weighted"] = self.after_weighted.tolist()  # type: ignore[union-attr]
        if self.hot_changes:
            d["hot_changes"] = [c.to_dict() for c in self.hot_changes]
        if self.replicas is not None:
            assert self.replica_in is not None and self.replica_out is not None
            d["replicas"] = {
                "n": self.replicas,
                "placements": self.replica_total,
                "moved": self.replica_moved,
                "moved_fraction": self.replica_moved_fraction,
                "in": dict(zip(self.new_shards, self.replica_in.tolist())),
                "out": dict(zip(self.old_shards, self.replica_out.tolist())),
            }
        return d

    def summary(self) -> str:
        """A plain-text summary table; with ``diff(..., weights=)``, the
        weighted figures too (total and moved weight, as the CLI's ``plan
        --weights`` prints them, and the weight's balance)."""
        lines = [
            f"keys: {self.total:,}   moved: {self.moved:,} ({self.moved_fraction:.2%})   "
            f"ideal: {self.ideal_fraction:.2%}",
            f"balance max/mean: before {self.imbalance_before['max_mean']:.4f}  "
            f"after {self.imbalance_after['max_mean']:.4f}",
        ]
        if self.weighted_matrix is not None:
            tot = float(self.weighted_matrix.sum())
            mw = self.moved_weight or 0.0
            wb, wa = self.before_weighted, self.after_weighted
            assert wb is not None and wa is not None
            lines.append(f"weight: {tot:,.0f} total, {mw:,.0f} moved ({(mw / tot if tot else 0.0):.2%})")
            lines.append(f"weight balance max/mean: before {imbalance(wb)['max_mean']:.4f}  "
                         f"after {imbalance(wa)['max_mean']:.4f}")
        if self.replicas is not None:
            lines.append(f"replicas: {self.replicas} per key, {self.replica_total:,} placements, "
                         f"{self.replica_moved:,} move ({self.replica_moved_fraction:.2%})")
        for c in self.hot_changes:
            lines.append(f"hot key {c.key!r}: {c.kind} (fan-out {c.before} -> {c.after}; "
                         f"{len(c.added)} sub-key(s) added, {len(c.removed)} to fold back, {len(c.moved)} moved)")
        return "\n".join(lines)


# ------------------------------------------------------------ routing helpers


def _hash_routed(router: Any) -> bool:
    """True when ``route_hashes(hasher.hash_array(keys)) == route_many(keys)``
    (``Router.routes_on_hash``; compat routers set it themselves)."""
    return bool(getattr(router, "routes_on_hash", False))


def _check_router(router: Any, what: str) -> None:
    if not all(hasattr(router, a) for a in ("shards", "route_many")):
        raise TypeError(f"{what} must be a shardhash router, not {type(router).__name__}")


class MovesWriter(AtomicWriter):
    """Write moved keys ``(id, source, destination[, weight])`` to Parquet or CSV, chunk by chunk.

    Pass it as ``on_chunk`` to :func:`diff` (or give ``diff`` a ``moves=``
    path).  Shard columns are dictionary-encoded in Parquet.  Use as a
    context manager, or call :meth:`close`.

    >>> import os, tempfile
    >>> from shardhash import routing
    >>> old, new = routing.ModuloRouter(["a", "b"]), routing.ModuloRouter(["a", "b", "c"])
    >>> path = os.path.join(tempfile.mkdtemp(), "moves.csv")
    >>> with MovesWriter(path, old, new) as w:
    ...     rep = diff(old, new, list(range(1000)), on_chunk=w)
    >>> w.rows == rep.moved
    True
    """

    def __init__(self, path: Any, old: Any, new: Any, *, id_column: str = "id",
                 weight_column: str = "weight") -> None:
        from .io import ChunkWriter

        self._writer = ChunkWriter(path)
        self._old = list(old.shards)
        self._new = list(new.shards)
        so = np.asarray(self._old, dtype=object)
        sn = np.asarray(self._new, dtype=object)
        self._moved_cell = np.asarray(so[:, None] != sn[None, :], dtype=bool)
        self.id_column = id_column
        self.weight_column = weight_column
        self.rows = 0

    def __call__(self, keys: Any, old_idx: np.ndarray, new_idx: np.ndarray, weights: np.ndarray | None) -> None:
        sel = self._moved_cell[old_idx, new_idx]
        if isinstance(keys, np.ndarray):
            ids = keys[sel]
        else:
            if hasattr(keys, "to_numpy"):
                try:
                    arr = keys.to_numpy(zero_copy_only=False)
                except TypeError:
                    arr = keys.to_numpy()
            else:
                arr = np.empty(len(keys), dtype=object)
                arr[:] = list(keys)
            ids = np.asarray(arr)[sel]
        cols: dict[str, Any] = {
            self.id_column: ids,
            "source": (old_idx[sel], self._old),
            "destination": (new_idx[sel], self._new),
        }
        if weights is not None:
            cols[self.weight_column] = weights[sel]
        self._writer.write(cols)
        self.rows += int(sel.sum())

    def close(self) -> None:
        if self._writer.rows == 0 and self._writer._names is None:
            # Nothing moved: still write the header / schema.
            empty: dict[str, Any] = {
                self.id_column: np.zeros(0, dtype=np.int64),
                "source": (np.zeros(0, np.int32), self._old),
                "destination": (np.zeros(0, np.int32), self._new),
            }
            self._writer.write(empty)
        self._writer.close()

    def abort(self) -> None:
        """Drop the moves written so far (no partial file is left)."""
        self._writer.abort()



def diff(
    old: Any,
    new: Any,
    keys: Any,
    *,
    weights: Any = None,
    per_key: bool = False,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    threads: int | None = None,
    on_chunk: Callable[[Any, np.ndarray, np.ndarray, np.ndarray | None], None] | None = None,
    progress: Callable[[int], None] | None = None,
    moves: Any = None,
    replicas: int | None = None,
) -> PlanReport:
    """Route ``keys`` under ``old`` and ``new`` and count what moves.

    ``keys`` is an array-like (anything ``route_many`` accepts) or a stream of
    chunks such as :func:`shardhash.io.open_ids` (whose chunks carry their
    weights).  ``weights`` (bytes, requests...) fills ``weighted_matrix``.
    Work happens in chunks of ``chunk_size`` keys; when both routers route on
    the same hash the keys are hashed once.  Nothing per key is kept unless
    ``per_key=True`` (then ``sources`` / ``destinations`` hold the old and new
    shard index of every key); ``on_chunk(keys, old_idx, new_idx, weights)``
    sees each chunk (e.g. to write moved keys out) and ``progress(n)`` is told
    how many keys each chunk held.  ``moves`` (a ``.parquet`` or ``.csv``
    path) receives every moved key as ``(id, source, destination[, weight])``,
    written chunk by chunk (see :class:`MovesWriter`).  ``replicas=n`` also
    compares every key's replica lists (``route_replicas``, each router with
    its own ``zones``) and fills ``replica_moved``, ``replica_in`` and
    ``replica_out`` (see :class:`PlanReport`); both routers need replica
    lists and at least n shards.

    >>> from shardhash import routing
    >>> old = routing.JumpRouter(["a", "b", "c", "d"])
    >>> new = routing.JumpRouter(["a", "b", "c", "d", "e"])
    >>> rep = diff(old, new, range(100_000))
    >>> 0.19 < rep.moved_fraction < 0.21, int(rep.after[4]) == rep.moved
    (True, True)
    """
    _check_router(old, "old")
    _check_router(new, "new")
    if isinstance(keys, range):
        keys = np.arange(keys.start, keys.stop, keys.step, dtype=np.int64)
    if moves is not None:
        with MovesWriter(moves, old, new) as writer:
            user_cb = on_chunk

            def cb(k: Any, o: np.ndarray, n: np.ndarray, w: np.ndarray | None) -> None:
                writer(k, o, n, w)
                if user_cb is not None:
                    user_cb(k, o, n, w)

            return diff(old, new, keys, weights=weights, per_key=per_key, chunk_size=chunk_size,
                        threads=threads, on_chunk=cb, progress=progress, replicas=replicas)
    from ._plan import count_moves

    n_old, n_new = len(old.shards), len(new.shards)
    rc: _ReplicaCount | None = None
    if replicas is not None:
        rc = _ReplicaCount(old, new, replicas)
    matrix = np.zeros((n_old, n_new), dtype=np.int64)
    wmatrix: np.ndarray | None = None
    share_hash = _hash_routed(old) and _hash_routed(new) and old.hasher == new.hasher
    src_parts: list[np.ndarray] = []
    dst_parts: list[np.ndarray] = []
    hbuf = obuf = nbuf = None
    for k, w, _ in iter_chunks(keys, weights, chunk_size=chunk_size):
        n = len(k)
        if n == 0:
            continue
        if obuf is None or len(obuf) < n or per_key:
            cap = max(n, 0 if obuf is None else len(obuf))
            obuf = np.empty(cap, dtype=np.int32)
            nbuf = np.empty(cap, dtype=np.int32)
            hbuf = np.empty(cap, dtype=np.uint64) if share_hash else None
        oi, ni = obuf[:n], nbuf[:n]  # type: ignore[index]
        if rc is not None:
            rc.add(k, oi, ni, threads)  # also fills oi, ni: a list's first replica is the route
        elif share_hash:
            h = old.hasher.hash_array(k, out=hbuf[:n], threads=threads)  # type: ignore[index]
            old.route_hashes(h, out=oi, threads=threads)
            new.route_hashes(h, out=ni, threads=threads)
        else:
            old.route_many(k, out=oi, threads=threads)
            new.route_many(k, out=ni, threads=threads)
        if w is not None and wmatrix is None:
            if matrix.any():
                raise ValueError("weights are missing for some chunks: give weights for every key or none")
            wmatrix = np.zeros((n_old, n_new), dtype=np.float64)
        elif w is None and wmatrix is not None:
            raise ValueError("weights are missing for some chunks: give weights for every key or none")
        count_moves(oi, ni, matrix, w, wmatrix, threads=threads)
        if on_chunk is not None:
            on_chunk(k, oi, ni, w)
        if per_key:
            src_parts.append(oi)
            dst_parts.append(ni)
        if progress is not None:
            progress(n)
    rep = PlanReport(
        tuple(old.shards),
        tuple(new.shards),
        int(matrix.sum()),
        0,
        ideal_fraction(old, new),
        matrix,
        wmatrix,
    )
    rep.moved = int(matrix[rep._moved_mask()].sum())
    if rc is not None:
        rc.fill(rep)
    from .hotkeys import hot_changes

    rep.hot_changes = hot_changes(old, new)  # [] unless a router has hot keys
    if per_key:
        rep.sources = np.concatenate(src_parts) if src_parts else np.zeros(0, np.int32)
        rep.destinations = np.concatenate(dst_parts) if dst_parts else np.zeros(0, np.int32)
    return rep


class _ReplicaCount:
    """diff's replica-placement counts, chunk by chunk."""

    def __init__(self, old: Any, new: Any, n: Any) -> None:
        for r, what in ((old, "old"), (new, "new")):
            if getattr(r, "replica_rule", None) is None:
                raise TypeError(f"replicas: the {what} router ({type(r).__name__}) has no replica lists")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"replicas must be an int, got {n!r} (type {type(n).__name__})")
        self.n = int(n)
        for r, what in ((old, "old"), (new, "new")):
            if not 1 <= self.n <= len(r.shards):
                raise ValueError(f"replicas = {self.n}: the {what} router has {len(r.shards)} shard(s)")
        self.old, self.new = old, new
        # Both routers' shards in one numbering (old's first), so ids compare as ints.
        pos = {s: i for i, s in enumerate(old.shards)}
        for s in new.shards:
            pos.setdefault(s, len(pos))
        self.new_ids = np.array([pos[s] for s in new.shards], dtype=np.int32)
        self.share_hash = _hash_routed(old) and _hash_routed(new) and old.hasher == new.hasher
        self.total = 0
        self.moved = 0
        self.into = np.zeros(len(new.shards), dtype=np.int64)
        self.out = np.zeros(len(old.shards), dtype=np.int64)

    def add(self, keys: Any, oi: np.ndarray, ni: np.ndarray, threads: int | None) -> None:
        if self.share_hash:
            h = self.old.hasher.hash_array(keys, threads=threads)
            orows = self.old.route_replicas_hashes(h, self.n, threads=threads)
            nrows = self.new.route_replicas_hashes(h, self.n, threads=threads)
        else:
            orows = self.old.route_replicas_many(keys, self.n, threads=threads)
            nrows = self.new.route_replicas_many(keys, self.n, threads=threads)
        oi[...] = orows[:, 0]
        ni[...] = nrows[:, 0]
        nid = self.new_ids[nrows]  # old ids are their own indices
        kept_new = (nid[:, :, None] == orows[:, None, :]).any(axis=2)
        kept_old = (orows[:, :, None] == nid[:, None, :]).any(axis=2)
        self.total += orows.size
        self.moved += int((~kept_new).sum())
        self.into += np.bincount(nrows[~kept_new], minlength=len(self.into))
        self.out += np.bincount(orows[~kept_old], minlength=len(self.out))

    def fill(self, rep: PlanReport) -> None:
        rep.replicas = self.n
        rep.replica_total = self.total
        rep.replica_moved = self.moved
        rep.replica_in = self.into
        rep.replica_out = self.out


# --------------------------------------------------------------- ideal share


def target_shares(router: Any) -> dict[str, float]:
    """The share of keys each shard is meant to own (sums to 1).

    From the router's ``weights`` when it has them, from its placement table
    or hash ranges when those define it, else equal shares.

    >>> from shardhash import routing
    >>> target_shares(routing.ModuloRouter(["a", "b"]))
    {'a': 0.5, 'b': 0.5}
    """
    shards = tuple(router.shards)
    w = getattr(router, "weights", None)
    vals: np.ndarray | None = None
    if isinstance(w, Mapping):
        vals = np.array([float(w.get(s, 1.0)) for s in shards])
    elif w is not None and not callable(w) and len(w) == len(shards):
        vals = np.asarray(w, dtype=np.float64)
    elif isinstance(router, Router):
        vals = router.target_weights(_space(router))  # a placement table or hash ranges may say
    if vals is None or not np.isfinite(vals).all() or vals.sum() <= 0:
        vals = np.ones(len(shards))
    vals = vals / vals.sum()
    return {s: float(v) for s, v in zip(shards, vals)}


def ideal_fraction(old: Any, new: Any) -> float:
    """The least share of keys any placement must move to go from ``old``'s
    target shares to ``new``'s: half the L1 distance between the two.

    >>> from shardhash import routing
    >>> ideal_fraction(routing.JumpRouter(list("abcd")), routing.JumpRouter(list("abcde")))
    0.2
    """
    a = target_shares(old)
    b = target_shares(new)
    ids = set(a) | set(b)
    return round(0.5 * sum(abs(a.get(s, 0.0) - b.get(s, 0.0)) for s in ids), 12)


# ------------------------------------------------------- hash-space structure


def _table_of(router: Any) -> np.ndarray | None:
    """Shard index per bucket, for routers that route ``table[hash % len(table)]``."""
    return router.bucket_table() if isinstance(router, Router) else None


def _ranges_of(router: Any) -> list[tuple[int, int, int]] | None:
    """Sorted ``(lo, hi, shard index)`` intervals; a duck-typed router's from its ``owned_ranges()``."""
    return router.hash_ranges() if isinstance(router, Router) else Router.hash_ranges(router)


@dataclass(frozen=True, slots=True)
class MovedRange:
    """A part of the hash space that changes owner.

    ``kind`` is ``"range"`` (every hash in ``[lo, hi]``), ``"bucket"`` (the
    hashes with ``hash % modulus == bucket``; ``lo``/``hi`` are the smallest
    and largest of them), ``"residue"`` (the same, for a modulus that is the
    least common multiple of two table sizes) or ``"scattered"`` (jump hash:
    no interval structure; ``share`` is the expected fraction, ``exact`` is
    False).  ``share`` is the fraction of the 2**64 hash values.
    """

    lo: int
    hi: int
    source: str
    destination: str
    share: float
    kind: str = "range"
    bucket: int | None = None
    modulus: int | None = None
    exact: bool = True

    def to_dict(self) -> dict[str, Any]:
        d = {
            "kind": self.kind,
            "lo": self.lo,
            "hi": self.hi,
            "source": self.source,
            "destination": self.destination,
            "share": self.share,
        }
        if self.bucket is not None:
            d["bucket"] = self.bucket
            d["modulus"] = self.modulus
        if not self.exact:
            d["exact"] = False
        return d


def _residue_count(r: int, m: int, space: int = HASH_SPACE) -> int:
    """How many values h in [0, space) have h % m == r."""
    return (space - 1 - r) // m + 1 if r < space else 0


def _space(*routers: Any) -> int:
    """How many hash values the routers' hasher gives: 2**32 for a 32-bit
    algorithm (its hashes are below 2**32), else 2**64.  Shares of hash space
    are fractions of this."""
    for r in routers:
        h = getattr(r, "hasher", None)
        if h is not None:
            return 1 << hash_bits(h)
    return HASH_SPACE


def moved_ranges(old: Any, new: Any) -> list[MovedRange]:
    """The parts of the hash space whose owner changes from ``old`` to ``new``.

    Works without keys for strategies that partition the hash space: rings
    and hash ranges (exact intervals), buckets, Maglev and modulo (exact
    residue classes), and jump (expected shares per source and destination).
    Both routers must use the same hasher.  Other strategies raise ValueError:
    use :func:`diff` with keys.

    >>> from shardhash import routing
    >>> old = routing.RingRouter(["A", "B", "C"], tokens={"A": [20], "B": [50], "C": [80]})
    >>> new = routing.RingRouter(["A", "B", "C", "D"], tokens={"A": [20], "B": [50], "C": [80], "D": [40]})
    >>> [(m.lo, m.hi, m.source, m.destination) for m in moved_ranges(old, new)]
    [(21, 40, 'B', 'D')]
    """
    _check_router(old, "old")
    _check_router(new, "new")
    if getattr(old, "hasher", None) != getattr(new, "hasher", None):
        raise ValueError(
            "old and new routers hash keys differently "
            f"({getattr(old, 'hasher', None)!r} vs {getattr(new, 'hasher', None)!r}); "
            "their hash spaces cannot be compared: use plan.diff with keys"
        )
    so, sn = tuple(old.shards), tuple(new.shards)
    space = _space(old, new)
    expected = old.expected_moves(new) if isinstance(old, Router) and isinstance(new, Router) else None
    if expected is not None:
        return _scattered_moves(expected, so, sn, space)
    to, tn = _table_of(old), _table_of(new)
    if to is not None and tn is not None:
        # equal tables of one strategy number their buckets alike: moved entries are buckets
        same = len(to) == len(tn) and type(old) is type(new) and old.table_buckets
        return _table_moves(to, tn, so, sn, bucket_kind=same, space=space)
    ro, rn = _ranges_of(old), _ranges_of(new)
    if ro is not None and rn is not None:
        return _interval_moves(ro, rn, so, sn, space)
    raise ValueError(
        f"moved_ranges cannot compare {type(old).__name__} with {type(new).__name__} without keys "
        "(it needs two rings / hash-range routers, two table routers (modulo, buckets, Maglev) "
        "or two jump routers); use plan.diff(old, new, keys)"
    )


def _interval_moves(
    ro: list[tuple[int, int, int]], rn: list[tuple[int, int, int]], so: tuple[str, ...], sn: tuple[str, ...],
    space: int = HASH_SPACE,
) -> list[MovedRange]:
    for name, rr in (("old", ro), ("new", rn)):
        covered = sum(hi - lo + 1 for lo, hi, _ in rr)
        if covered != HASH_SPACE:
            raise ValueError(f"the {name} router's owned_ranges do not cover the hash space exactly")
    starts = sorted({lo for lo, _, _ in ro} | {lo for lo, _, _ in rn})
    o_lo = [lo for lo, _, _ in ro]
    n_lo = [lo for lo, _, _ in rn]
    import bisect

    out: list[list[Any]] = []
    cur: list[Any] | None = None
    for i, lo in enumerate(starts):
        hi = starts[i + 1] - 1 if i + 1 < len(starts) else _MAX
        src = so[ro[bisect.bisect_right(o_lo, lo) - 1][2]]
        dst = sn[rn[bisect.bisect_right(n_lo, lo) - 1][2]]
        if src == dst:
            cur = None
            continue
        if cur is not None and cur[1] + 1 == lo and cur[2] == src and cur[3] == dst:
            cur[1] = hi
        else:
            cur = [lo, hi, src, dst]
            out.append(cur)
    # only hashes below ``space`` exist (a 32-bit hasher never reaches the rest)
    return [MovedRange(int(a), min(int(b), space - 1), str(c), str(e), (min(int(b), space - 1) - int(a) + 1) / space)
            for a, b, c, e in out if int(a) < space]


def _table_moves(
    to: np.ndarray, tn: np.ndarray, so: tuple[str, ...], sn: tuple[str, ...], bucket_kind: bool,
    space: int = HASH_SPACE,
) -> list[MovedRange]:
    m1, m2 = len(to), len(tn)
    lcm = m1 * m2 // math.gcd(m1, m2)
    if lcm > _MAX_RESIDUES:
        raise ValueError(
            f"table sizes {m1} and {m2} give {lcm:,} residue classes (more than {_MAX_RESIDUES:,}); "
            "use plan.diff with keys"
        )
    r = np.arange(lcm, dtype=np.int64)
    src = to[r % m1]
    dst = tn[r % m2]
    so_a = np.asarray(so, dtype=object)
    sn_a = np.asarray(sn, dtype=object)
    moved = np.flatnonzero(so_a[src] != sn_a[dst])
    kind = "bucket" if bucket_kind else "residue"
    out = []
    srcs = so_a[src[moved]].tolist()
    dsts = sn_a[dst[moved]].tolist()
    for res, s_id, d_id in zip(moved.tolist(), srcs, dsts):
        cnt = _residue_count(res, lcm, space)  # hashes h in [0, space) with h % lcm == res
        if cnt:
            out.append(MovedRange(res, res + (cnt - 1) * lcm, s_id, d_id, cnt / space, kind, res, lcm))
    return out


def _scattered_moves(expected: Mapping[tuple[int, int], float], so: tuple[str, ...], sn: tuple[str, ...],
                     space: int = HASH_SPACE) -> list[MovedRange]:
    """Expected shares per (old index, new index) pair, as ``"scattered"`` moves."""
    return [
        MovedRange(0, space - 1, so[i], sn[j], p, kind="scattered", exact=False)
        for (i, j), p in sorted(expected.items())
        if p and so[i] != sn[j]
    ]


# ------------------------------------------------------------------ planners


@dataclass
class Step:
    """One migration step: copy the keys described here from ``source`` to ``destination``.

    ``kind``: ``"range"`` (hashes in ``[lo, hi]``), ``"ranges"`` (hashes in
    any of the intervals listed in ``ranges``: small pieces of one pair
    grouped into one step; ``lo``/``hi`` span them), ``"buckets"`` (the listed
    buckets of a table of ``modulus`` slots), or ``"filter"`` (keys with a
    hash in ``[lo, hi]`` whose owner changes from source to destination -- for
    strategies without interval structure).  ``share`` is the fraction of the
    hash space (expected, for filters); ``est_keys`` / ``est_bytes`` are
    estimates when key counts or weights were given.
    """

    order: int
    kind: str
    source: str
    destination: str
    share: float
    lo: int = 0
    hi: int = _MAX
    buckets: tuple[int, ...] | None = None
    modulus: int | None = None
    est_keys: float | None = None
    est_bytes: float | None = None
    ranges: tuple[tuple[int, int], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "order": self.order,
            "kind": self.kind,
            "source": self.source,
            "destination": self.destination,
            "share": self.share,
            "lo": self.lo,
            "hi": self.hi,
        }
        if self.buckets is not None:
            d["buckets"] = list(self.buckets)
            d["modulus"] = self.modulus
        if self.ranges is not None:
            d["ranges"] = [list(r) for r in self.ranges]
        if self.est_keys is not None:
            d["est_keys"] = self.est_keys
        if self.est_bytes is not None:
            d["est_bytes"] = self.est_bytes
        return d


def _check_cap(max_step_share: float) -> float:
    if isinstance(max_step_share, bool) or not isinstance(max_step_share, (int, float)):
        raise TypeError(f"max_step_share must be a number, not {type(max_step_share).__name__}")
    if not (0 < max_step_share <= 1) or math.isnan(max_step_share):
        raise ValueError(f"max_step_share must be in (0, 1], got {max_step_share!r}")
    return float(max_step_share)


def _sampled_pairs(old: Any, new: Any, samples: int = 1 << 18) -> dict[tuple[str, str], float]:
    """Estimate the moved share per (source, destination) from random hashes."""
    rng = np.random.default_rng(0x5EED)
    h = rng.integers(0, _space(old, new), size=samples, dtype=np.uint64)
    oi = np.asarray(old.route_hashes(h))
    ni = np.asarray(new.route_hashes(h))
    so = np.asarray(old.shards, dtype=object)
    sn = np.asarray(new.shards, dtype=object)
    out: dict[tuple[str, str], float] = {}
    mat = np.bincount(oi.astype(np.int64) * len(sn) + ni, minlength=len(so) * len(sn)).reshape(len(so), len(sn))
    for i, j in zip(*np.nonzero(mat)):
        if so[i] != sn[j]:
            out[(so[i], sn[j])] = mat[i, j] / samples
    return out



def _unpinned(router: Any) -> tuple[Any, dict[int, Any]] | None:
    """``(base, {hash: key})`` for a router that places every hash as ``base``
    does except the pinned hashes (a DirectoryRouter's override keys; a
    HotKeyRouter pins none: it places keys as its base), nested wrappers
    unwrapped; ``(router, {})`` for a router that wraps nothing; None for a
    wrapper of unknown kind."""
    from .hotkeys import HotKeyRouter
    from .routing import DirectoryRouter, WrappingRouter

    pins: dict[int, Any] = {}
    r = router
    while isinstance(r, WrappingRouter):
        if isinstance(r, DirectoryRouter):
            for k in r.overrides:
                pins.setdefault(int(r.hasher(k)), k)  # (an outer override wins; the key is the same)
        elif not isinstance(r, HotKeyRouter):
            return None
        r = r.base
    return r, pins


def _pinned_split(old: Any, new: Any) -> tuple[Any, Any, list[MovedRange]] | None:
    """For two hash routers with one hasher, at least one of which pins some
    hashes to shards (DirectoryRouter overrides) or wraps a base: their bases
    and one exact ``[h, h]`` move per pinned hash (of either router) whose
    owner changes.  Random hashes never hit a pinned key, so a plan that
    samples would miss them; planned this way, every hash outside the pinned
    set moves as the bases move it and every pinned one moves on its own.
    None when the routers wrap nothing (or something unknown)."""
    if not (isinstance(old, Router) and isinstance(new, Router) and _hash_routed(old) and _hash_routed(new)
            and old.hasher == new.hasher):
        return None
    uo, un = _unpinned(old), _unpinned(new)
    if uo is None or un is None or (uo[0] is old and un[0] is new):
        return None
    (b_old, p_old), (b_new, p_new) = uo, un
    if not (_hash_routed(b_old) and _hash_routed(b_new)):
        return None
    pins = {**p_new, **p_old}
    hs = np.array(sorted(pins), dtype=np.uint64)
    if hs.size == 0:
        return b_old, b_new, []
    so = np.asarray(old.shards, dtype=object)[np.asarray(old.route_hashes(hs)).astype(np.int64)]
    sn = np.asarray(new.shards, dtype=object)[np.asarray(new.route_hashes(hs)).astype(np.int64)]
    space = _space(old, new)
    return b_old, b_new, [MovedRange(int(h), int(h), str(s), str(d), 1 / space)
                          for h, s, d in zip(hs.tolist(), so.tolist(), sn.tolist()) if s != d]


def _uncovered(pinned: list[MovedRange], moves: list[MovedRange]) -> list[MovedRange]:
    """The pinned ``[h, h]`` moves no move of the same pair already covers
    (a step's hash intervals of one pair must stay disjoint)."""
    import bisect

    if not pinned:
        return []
    ivs: dict[tuple[str, str], list[tuple[int, int]]] = {}
    whole: set[tuple[str, str]] = set()
    res: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for m in moves:
        pr = (m.source, m.destination)
        if m.kind == "range":
            ivs.setdefault(pr, []).append((m.lo, m.hi))
        elif m.kind in ("bucket", "residue"):
            res.setdefault(pr, set()).add((int(m.modulus or 1), int(m.bucket or 0)))
        else:  # scattered: filter steps over the whole hash space
            whole.add(pr)
    for v in ivs.values():
        v.sort()
    mods: dict[tuple[str, str], set[int]] = {pr: {md for md, _ in rs} for pr, rs in res.items()}
    out = []
    for m in pinned:
        pr, h = (m.source, m.destination), m.lo
        if pr in whole:
            continue
        iv = ivs.get(pr, [])
        j = bisect.bisect_right(iv, (h, _MAX)) - 1
        if j >= 0 and iv[j][0] <= h <= iv[j][1]:
            continue
        if any((md, h % md) in res[pr] for md in mods.get(pr, ())):
            continue
        out.append(m)
    return out


def plan_steps(
    old: Any,
    new: Any,
    *,
    max_step_share: float = 0.02,
    keys: Any = None,
    weights: Any = None,
    total_keys: int | None = None,
    total_bytes: float | None = None,
) -> list[Step]:
    """Ordered migration steps from ``old`` to ``new``, none moving more than
    ``max_step_share`` of the hash space (a range or bucket bigger than the
    cap is split; one bucket is the smallest step).

    Steps come from :func:`moved_ranges` when the strategies allow it, else
    from the moved share per (source, destination) pair, estimated by routing
    random hashes (``"filter"`` steps).  Steps are interleaved round-robin
    across (source, destination) pairs so consecutive steps load different
    shards.  With ``keys`` (and ``weights``) the keys are counted once with
    :func:`diff` and each step's ``est_keys`` / ``est_bytes`` are its pair's
    exact totals shared out in proportion to hash space; with ``total_keys``
    / ``total_bytes`` they are that total times the step's share.
    """
    cap = _check_cap(max_step_share)
    split = _pinned_split(old, new)
    if split is not None:
        # every hash but the pinned ones is placed by the bases: plan the
        # bases, then add the pinned keys whose owner changes
        b_old, b_new, pinned = split
    else:
        bases = old.base_pair(new) if isinstance(old, Router) and isinstance(new, Router) else None
        # a wrapper whose change moves exactly what its base's change moves
        b_old, b_new = bases if bases is not None else (old, new)
        pinned = []
    try:
        moves = moved_ranges(b_old, b_new)
    except ValueError:
        if not (_hash_routed(old) and _hash_routed(new) and old.hasher == new.hasher):
            raise
        moves = [
            MovedRange(0, _space(old, new) - 1, s, d, p, kind="scattered", exact=False)
            for (s, d), p in sorted(_sampled_pairs(b_old, b_new).items())
        ]
    extra = _uncovered(pinned, moves)
    # Bound the work before doing it: every range or filter is cut into
    # ceil(share / cap) pieces, every moved bucket is at least one slot.
    expected = sum(math.ceil(m.share / cap - 1e-12) if m.kind not in ("bucket", "residue") else 0 for m in moves)
    expected += math.ceil(sum(m.share for m in moves if m.kind in ("bucket", "residue")) / cap - 1e-12)
    if expected > MAX_STEPS:
        moved = sum(m.share for m in moves)
        raise TooManySteps(
            f"max_step_share {max_step_share:g} would cut this plan into about {expected:,} steps (at most "
            f"{MAX_STEPS:,}); {moved:.4%} of the hash space moves, so give a cap of at least "
            f"{moved / MAX_STEPS * 1.01:.2g}")
    # (pinned keys go into the steps of their pair, grouped like a ring's arcs)
    moves = moves + extra
    per_pair: dict[tuple[str, str], list[Step]] = {}
    table_moves: dict[tuple[str, str], list[MovedRange]] = {}
    space = _space(old, new)
    range_pieces: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for m in moves:
        lst = per_pair.setdefault((m.source, m.destination), [])
        if m.kind == "range":
            pieces = max(1, math.ceil(m.share / cap - 1e-12))
            width = m.hi - m.lo + 1
            rp = range_pieces.setdefault((m.source, m.destination), [])
            for p in range(pieces):
                lo = m.lo + width * p // pieces
                hi = m.lo + width * (p + 1) // pieces - 1
                rp.append((lo, hi))
        elif m.kind in ("bucket", "residue"):
            table_moves.setdefault((m.source, m.destination), []).append(m)
        else:
            pieces = max(1, math.ceil(m.share / cap - 1e-12))
            for p in range(pieces):
                lo = space * p // pieces
                hi = space * (p + 1) // pieces - 1
                lst.append(Step(0, "filter", m.source, m.destination, m.share / pieces, lo, hi))
    for (src, dst), rp in range_pieces.items():
        # Small pieces of one pair (a ring's many vnode arcs) go together into
        # steps of at most the cap, in hash order.
        lst = per_pair[(src, dst)]
        group: list[tuple[int, int]] = []
        gshare = 0.0
        for lo, hi in sorted(rp) + [(-1, -1)]:
            share = (hi - lo + 1) / space
            if group and (lo < 0 or gshare + share > cap + 1e-15):
                if len(group) == 1:
                    lst.append(Step(0, "range", src, dst, gshare, group[0][0], group[0][1]))
                else:
                    lst.append(Step(0, "ranges", src, dst, gshare, group[0][0], group[-1][1],
                                    ranges=tuple(group)))
                group, gshare = [], 0.0
            if lo >= 0:
                group.append((lo, hi))
                gshare += share
    for (src, dst), ms in table_moves.items():
        # Whole buckets, in groups of nearly equal size under the cap.
        total = sum(m.share for m in ms)
        groups = max(1, math.ceil(total / cap - 1e-12))
        while True:
            parts = [ms[len(ms) * g // groups : len(ms) * (g + 1) // groups] for g in range(groups)]
            parts = [part for part in parts if part]
            if groups >= len(ms) or all(sum(m.share for m in part) <= cap + 1e-15 for part in parts):
                break
            groups += 1
        lst = per_pair.setdefault((src, dst), [])
        for part in parts:
            lst.append(Step(0, "buckets", src, dst, sum(m.share for m in part), min(m.lo for m in part),
                            max(m.hi for m in part), tuple(int(m.bucket or 0) for m in part), part[0].modulus))
    pair_keys: dict[tuple[str, str], tuple[float, float | None]] = {}
    if keys is not None:
        rep = diff(old, new, keys, weights=weights)
        for mv in rep.moves():
            pair_keys[(mv["source"], mv["destination"])] = (float(mv["keys"]), mv.get("weight"))
    ordered: list[Step] = []
    queues = [per_pair[p] for p in sorted(per_pair)]
    depth = max((len(q) for q in queues), default=0)
    for level in range(depth):
        for q in queues:
            if level < len(q):
                ordered.append(q[level])
    pair_share = {pr: sum(s.share for s in q) for pr, q in per_pair.items()}
    for i, st in enumerate(ordered):
        st.order = i + 1
        pair = (st.source, st.destination)
        if keys is not None:
            cnt, wt = pair_keys.get(pair, (0.0, None))
            frac = st.share / pair_share[pair] if pair_share[pair] else 0.0
            st.est_keys = cnt * frac
            st.est_bytes = None if wt is None else wt * frac
        else:
            if total_keys is not None:
                st.est_keys = total_keys * st.share
            if total_bytes is not None:
                st.est_bytes = total_bytes * st.share
    return ordered


def _weights_dict(router: Any) -> dict[str, float] | None:
    w = getattr(router, "weights", None)
    if w is None:
        return None
    if isinstance(w, Mapping):
        return {str(k): float(v) for k, v in w.items()}
    if len(w) == len(router.shards):
        return {s: float(x) for s, x in zip(router.shards, w)}
    return None


def _check_ids(ids: Any, what: str) -> list[str]:
    if isinstance(ids, str):
        ids = [ids]
    try:
        out = list(ids)
    except TypeError:
        raise TypeError(f"{what} must be a shard id or a list of shard ids, not {type(ids).__name__}") from None
    if not out:
        raise ValueError(f"{what}: no shard ids given")
    for s in out:
        if not isinstance(s, str) or not s:
            raise TypeError(f"{what}: shard ids must be non-empty strings, got {s!r}")
    if len(set(out)) != len(out):
        dup = next(s for s in out if out.count(s) > 1)
        raise ValueError(f"{what}: shard id {dup!r} given twice")
    return out


def _check_weights(weights: Mapping[str, float] | None, what: str = "weights") -> dict[str, float] | None:
    if weights is None:
        return None
    if not isinstance(weights, Mapping):
        raise TypeError(f"{what} must be a mapping shard id -> weight, not {type(weights).__name__}")
    out = {}
    for k, v in weights.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{what}[{k!r}] = {v!r}: weights must be finite and > 0")
        out[str(k)] = float(v)
    return out


class _StepOptions(TypedDict, total=False):
    """The step options of :func:`add_shards`, :func:`remove_shards` and
    :func:`reweight`, given as keywords: they go to :func:`plan_steps`
    (``key_weights`` as its ``weights``), whose defaults apply."""

    max_step_share: float
    keys: Any
    key_weights: Any
    total_keys: int | None
    total_bytes: float | None


def _change(planner: Callable[..., tuple[Any, list[Step]]], router: Any, arg: Any, extra: dict[str, Any],
            steps: _StepOptions, build: Callable[[], Any]) -> tuple[Any, list[Step]]:
    """What :func:`add_shards`, :func:`remove_shards` and :func:`reweight`
    share: the checks of ``router`` and of the step options; a router that
    places keys through another one (a DirectoryRouter) is planned by
    planning its base with ``planner(base, arg, **extra)``; any other router
    gets ``build()``, its successor (which checks the change itself); then
    the steps from ``router`` to the new router."""
    check_options(planner.__name__, steps, _StepOptions)
    _check_router(router, "router")
    kw: dict[str, Any] = {"weights" if k == "key_weights" else k: v for k, v in steps.items()}
    new = None
    if isinstance(router, Router):
        removing = ([arg] if isinstance(arg, str) else list(arg)) if planner is remove_shards else ()
        cap = {k: v for k, v in kw.items() if k == "max_step_share"}

        def plan_base(base: Router) -> Router:
            new_base: Router = planner(base, arg, **cap, **extra)[0]
            return new_base

        new = router.replanned(plan_base, removing=removing)
    if new is None:
        new = build()
    return new, plan_steps(router, new, **kw)


def _successor(router: Any) -> Router:
    """The router whose hooks make the successor (a duck-typed router has none:
    ``Router.with_shards`` then says there is no planner for it)."""
    if isinstance(router, Router):
        return router
    Router.with_shards(router, [])  # raises ValueError: no planner for it
    raise AssertionError("unreachable")


def _carry_zones(router: Any, new: Any, zones: Mapping[str, str] | None = None) -> Any:
    """``new`` with ``router``'s zones for the shards it keeps, plus ``zones``
    for the shards being added (every added shard needs one when the
    topology has zones)."""
    old_z = getattr(router, "zones", None)
    if old_z is None and zones is None:
        return new
    if zones is not None and not isinstance(zones, Mapping):
        raise TypeError(f"zones must be a mapping shard id -> zone name, not {type(zones).__name__}")
    merged = {s: z for s, z in (old_z or {}).items() if s in new.shards}
    for s, z in (zones or {}).items():
        if s in merged:
            raise ValueError(f"zones: shard {s!r} keeps its zone {merged[s]!r}; only new shards take a zone")
        merged[s] = z
    missing = [s for s in new.shards if s not in merged]
    if missing:
        raise ValueError(f"the topology has zones: give a zone for the new shard(s) {', '.join(map(repr, missing))}"
                         if old_z is not None else
                         f"zones: give a zone for every shard (missing: {', '.join(map(repr, missing))})")
    return new.with_zones(merged)


def add_shards(
    router: Any,
    new_ids: str | Sequence[str],
    *,
    weights: Mapping[str, float] | None = None,
    tokens: Mapping[str, Sequence[int]] | None = None,
    zones: Mapping[str, str] | None = None,
    **steps: Unpack[_StepOptions],
) -> tuple[Any, list[Step]]:
    """Add shards: returns ``(new_router, steps)``; ``new_router.version`` is one more.

    ``weights`` gives the new shards' weights (default 1).  Bucket routers
    move the fewest buckets that balance the shards; rings keep every
    existing token (new tokens are named ``"<id>:<n>"``, so their positions
    are stable); hash-range routers split the widest ranges.  ``tokens`` gives
    explicit ring positions for the new shards of a ring built with tokens.
    ``zones`` gives the new shards' zones (required when the topology has
    zones; kept shards keep theirs).  The step options (``max_step_share``
    = 0.02, ``keys``, ``key_weights``, ``total_keys``, ``total_bytes``) go
    to :func:`plan_steps` (``key_weights`` as its ``weights``).

    >>> from shardhash import routing
    >>> r = routing.BucketRouter(["a", "b"], ["a", "b"] * 8)
    >>> new, steps = add_shards(r, "c")
    >>> sorted(new.placement_ids.count(s) for s in "abc")
    [5, 5, 6]
    >>> new.version == r.version + 1
    True
    """
    def build() -> Any:
        ids = _check_ids(new_ids, "new_ids")
        for s in ids:
            if s in router.shards:
                raise ValueError(f"shard {s!r} is already in the topology")
        w_new = _check_weights(weights)
        if w_new is not None:
            unknown = set(w_new) - set(ids)
            if unknown:
                raise ValueError(f"weights given for shards that are not being added: {sorted(unknown)}")
        shards = list(router.shards) + ids
        old_w = _weights_dict(router)
        w = None
        if old_w is not None or w_new is not None:
            w = {s: (old_w or {}).get(s, 1.0) for s in router.shards}
            w.update({s: (w_new or {}).get(s, 1.0) for s in ids})
        return _carry_zones(router, _successor(router).with_shards(shards, weights=w, tokens=tokens), zones)

    return _change(add_shards, router, new_ids, {"weights": weights, "tokens": tokens, "zones": zones}, steps, build)


def remove_shards(
    router: Any,
    ids: str | Sequence[str],
    **steps: Unpack[_StepOptions],
) -> tuple[Any, list[Step]]:
    """Remove shards: returns ``(new_router, steps)`` with ``version`` one more.

    Bucket routers hand the removed shards' buckets to the remaining shards
    so they stay balanced (no other bucket moves); rings drop the removed
    shards' tokens; hash-range routers merge each removed range into its
    neighbour.  Jump hash drops its last shards as jump does; losing any
    other shard makes it a MementoRouter, which moves only that shard's keys.
    Step options as for :func:`add_shards`.

    >>> from shardhash import routing
    >>> r = routing.RingRouter(["a", "b", "c"])
    >>> new, steps = remove_shards(r, "c")
    >>> new.shards, {s.source for s in steps}
    (('a', 'b'), {'c'})
    """
    def build() -> Any:
        gone = _check_ids(ids, "ids")
        for s in gone:
            if s not in router.shards:
                raise ValueError(f"shard {s!r} is not in the topology (shards: {', '.join(router.shards)})")
        shards = [s for s in router.shards if s not in gone]
        if not shards:
            raise ValueError("cannot remove every shard")
        old_w = _weights_dict(router)
        w = None if old_w is None else {s: old_w.get(s, 1.0) for s in shards}
        return _carry_zones(router, _successor(router).with_shards(shards, weights=w))

    return _change(remove_shards, router, ids, {}, steps, build)


def reweight(
    router: Any,
    weights: Mapping[str, float],
    **steps: Unpack[_StepOptions],
) -> tuple[Any, list[Step]]:
    """Change shard weights: returns ``(new_router, steps)`` with ``version`` one more.

    Shards not named keep their weight.  Bucket routers move the fewest
    buckets that reach the new shares; rings, rendezvous and Maglev are
    rebuilt with the new weights (ring tokens keep their identities, so a
    heavier shard only gains tokens).  Step options as for :func:`add_shards`.

    >>> from shardhash import routing
    >>> r = routing.BucketRouter(["a", "b"], ["a", "b"] * 6)
    >>> new, steps = reweight(r, {"a": 2.0})
    >>> [(s.source, s.destination, s.buckets) for s in steps]
    [('b', 'a', (9,)), ('b', 'a', (11,))]
    """
    def build() -> Any:
        w_in = _check_weights(weights)
        assert w_in is not None
        for s in w_in:
            if s not in router.shards:
                raise ValueError(f"weights name shard {s!r}, which is not in the topology")
        old_w = _weights_dict(router) or {}
        w = {s: old_w.get(s, 1.0) for s in router.shards}
        w.update(w_in)
        return _carry_zones(router, _successor(router).with_weights(w))

    return _change(reweight, router, weights, {}, steps, build)
