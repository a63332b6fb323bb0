"""MementoHash (Coluzzi et al. 2023): jump over a b-array plus a record of removed buckets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .base import Hasher, Router, _check_int, no_weights, register_router_type

__all__ = ["MementoRouter"]


def _memento_state(router: Router) -> tuple[int, list[int], dict[str, int]] | None:
    """``(buckets, removed, bucket of each shard id)`` of a jump or memento
    router; None for any other router."""
    if isinstance(router, MementoRouter):
        return router.buckets, list(router.removed), dict(zip(router.shards, router.shard_buckets))
    from .jump import JumpRouter

    if type(router) is JumpRouter:
        return len(router.shards), [], {s: i for i, s in enumerate(router.shards)}
    return None


def _descends(a: tuple[int, list[int]], b: tuple[int, list[int]]) -> bool:
    """True when record ``b`` comes from record ``a`` by removals alone (the
    b-array shrinking only while nothing is recorded, as ``remove`` does)."""
    (na, ra), (nb, rb) = a, b
    if rb[: len(ra)] != ra or nb > na:
        return False
    return nb == na or not ra


def successor(buckets: int, removed: Sequence[int], bucket_of: Mapping[str, int],
              shards: Sequence[str]) -> tuple[int, list[int], list[str]]:
    """The MementoHash state after going from the shards of ``bucket_of`` to
    ``shards``: ``(buckets, removed, shard ids in bucket order)``.

    Shards that stay keep their buckets.  Shards that go are removed in
    descending bucket order (so losing the last shards of a jump topology
    shrinks the b-array, as jump does); new shards take the most recently
    removed bucket back (restore), else the next bucket past the end."""
    if not set(shards) & set(bucket_of):
        return len(shards), [], list(shards)  # nothing kept: a fresh b-array
    n = buckets
    rem = list(removed)
    owner = {b: s for s, b in bucket_of.items()}
    keep = set(shards)
    for b in sorted((b for s, b in bucket_of.items() if s not in keep), reverse=True):
        if not rem and b == n - 1:
            n -= 1
        else:
            rem.append(b)
        del owner[b]
    for s in shards:
        if s in bucket_of:
            continue
        if rem:
            b = rem.pop()
        else:
            b = n
            n += 1
        owner[b] = s
    return n, rem, [owner[b] for b in sorted(owner)]


@register_router_type("memento")
class MementoRouter(Router):
    """MementoHash (Coluzzi, Brocco, Antonucci & Leidi 2023): jump consistent
    hash over ``buckets`` buckets plus a small record of the ``removed``
    ones, so that any shard can leave and only its keys move.

    ``MementoRouter(shards, *, buckets=None, removed=(), hasher=None,
    version=1, key_prefix=None)``: ``shards`` are the working buckets' ids in
    bucket order; ``removed`` lists the removed buckets in the order they
    were removed (distinct, in ``[0, buckets)``); ``buckets`` defaults to
    ``len(shards) + len(removed)`` and must equal it.  With nothing removed it
    routes exactly as :class:`JumpRouter` over the same shards.  ``hasher``
    (default ``Hasher()``: xxh3_64, seed 0), ``version`` (default 1) and
    ``key_prefix`` (default None: the whole key) are as for every router
    (see :class:`Router`).  Planners turn a jump topology that loses a shard
    other than the last into a MementoRouter.

    >>> r = MementoRouter(["a", "b", "d"], buckets=4, removed=[2])
    >>> r.shard_buckets
    (0, 1, 3)
    >>> old = JumpRouter(["a", "b", "c", "d"])
    >>> all(r.route(k) == old.route(k) for k in range(1000) if old.route(k) != "c")
    True
    """

    _buckets: int
    _removed: tuple[int, ...]
    _shard_buckets: tuple[int, ...]

    _doc_fields = ("buckets", "removed")
    replica_rule = "rehash"

    def __init__(self, shards: Iterable[str], *, buckets: int | None = None, removed: Iterable[int] = (),
                 hasher: Hasher | None = None, version: int = 1, key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        if isinstance(removed, (str, bytes)) or not isinstance(removed, Iterable):
            raise TypeError(f"removed must be a list of bucket numbers, not {type(removed).__name__}")
        rem = tuple(_check_int(b, f"removed[{i}]", 0, 0x7FFFFFFE) for i, b in enumerate(removed))
        n = len(self.shards) + len(rem)
        if buckets is not None:
            n_given = _check_int(buckets, "buckets", 1, 0x7FFFFFFF)
            if n_given != n:
                raise ValueError(f"buckets={n_given} with {len(rem)} removed leaves {n_given - len(rem)} "
                                 f"working buckets, but there are {len(self.shards)} shards")
        if n > 0x7FFFFFFF:
            raise ValueError(f"too many buckets ({n}); at most 2**31 - 1")
        bmap = self._use_memento(n, rem)
        self._set("_buckets", n)
        self._set("_removed", rem)
        self._set("_shard_buckets", tuple(int(b) for b in np.flatnonzero(bmap >= 0)))
        self._finish()

    @property
    def buckets(self) -> int:
        """The size of the b-array (working and removed buckets)."""
        return self._buckets

    @property
    def removed(self) -> tuple[int, ...]:
        """The removed buckets, in removal order."""
        return self._removed

    @property
    def shard_buckets(self) -> tuple[int, ...]:
        """The bucket of each shard, in shard order (increasing)."""
        return self._shard_buckets

    def _doc_params(self) -> dict[str, Any]:
        return {"buckets": self._buckets, "removed": list(self._removed)}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        for f in cls._doc_fields:
            if f not in params:
                raise ValueError(f"memento params need {f!r}")
        removed = params["removed"]
        if not isinstance(removed, list):
            raise TypeError(f"memento params: removed must be a list, not {type(removed).__name__}")
        return cls(shards, buckets=params["buckets"], removed=removed, hasher=hasher, version=version,
                   key_prefix=key_prefix)

    # -- planning hooks ----------------------------------------------------------

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> Router:
        """Kept shards keep their buckets; removed shards' keys spread over the
        others; a new shard restores the most recently removed bucket (else
        grows the b-array).  With nothing left removed the successor is a
        :class:`JumpRouter`."""
        n, rem, order = successor(self._buckets, self._removed, dict(zip(self.shards, self._shard_buckets)),
                                  list(shards))
        v = self.version + 1 if version is None else version
        if not rem:
            from .jump import JumpRouter

            return JumpRouter(order, hasher=self.hasher, version=v, key_prefix=self.key_prefix)
        return MementoRouter(order, buckets=n, removed=rem, hasher=self.hasher, version=v,
                             key_prefix=self.key_prefix)

    def with_weights(self, weights: Mapping[str, float], *, version: int | None = None) -> Router:
        raise no_weights(self)

    def expected_moves(self, new: Router) -> dict[tuple[int, int], float] | None:
        return memento_expected_moves(self, new)

    def explain_hash(self, h: int, key: Any) -> list[str]:
        i = self.route_index(key)
        return [f"bucket:   {self._shard_buckets[i]} of {self._buckets} "
                f"(MementoHash: jump with {len(self._removed)} removed)"]

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset()
    cli_hashes = True


def memento_expected_moves(old: Router, new: Router) -> dict[tuple[int, int], float] | None:
    """Expected moved share per (old index, new index) between two jump or
    memento routers when one comes from the other by removals alone (or by
    restores alone): kept shards keep their keys, and the keys of the shards
    that go spread uniformly over the shards left (1 / (W * w) per pair, W
    and w the larger and smaller shard counts).  None otherwise."""
    a, b = _memento_state(old), _memento_state(new)
    if a is None or b is None or old.hasher != new.hasher:
        return None
    (na, ra, ba), (nb, rb, bb) = a, b
    for s in set(ba) & set(bb):
        if ba[s] != bb[s]:
            return None
    if set(bb) <= set(ba) and _descends((na, ra), (nb, rb)):
        big, small, shrinking = ba, bb, True
    elif set(ba) <= set(bb) and _descends((nb, rb), (na, ra)):
        big, small, shrinking = bb, ba, False
    else:
        return None
    oi = {s: i for i, s in enumerate(old.shards)}
    ni = {s: i for i, s in enumerate(new.shards)}
    w_big, w_small = len(big), len(small)
    out: dict[tuple[int, int], float] = {}
    for s in small:
        out[(oi[s], ni[s])] = 1.0 / w_big
    p = 1.0 / (w_big * w_small)
    for g in big:
        if g in small:
            continue
        for s in small:
            out[(oi[g], ni[s]) if shrinking else (oi[s], ni[g])] = p
    return out
