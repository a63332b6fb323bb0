"""Consistent hashing with bounded loads (Mirrokni, Thorup & Zadimoghaddam 2018).

A ring whose per-batch assignment (``assign``) caps every shard at
``ceil(balance_factor / 100 * average)``, the overflow walking the ring, and
``place_items``, a planner that places weighted items (buckets with byte
counts, big tenants) under the cap while keeping what it can of a previous
placement.  ``route(key)`` is the plain ring's answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .base import (
    Hasher,
    Router,
    _check_int,
    _default_weights,
    _describe,
    bounded_assign,
    bounded_capacity,
    register_router_type,
)
from .ring import RingRouter

__all__ = ["BoundedLoadRouter", "ItemPlacement", "place_items"]

#: The default balance factor, in percent (1 + eps = 1.25), as Envoy's and HAProxy's examples use.
DEFAULT_BALANCE_FACTOR = 125


def _prefix(key: Any, p: int) -> Any:
    """A key's first ``p`` parts (docs/routers.md 2.12)."""
    if not isinstance(key, tuple):
        if p == 1:
            return key
        raise TypeError(f"this router routes on the first {p} part(s) of a tuple key; "
                        f"got {key!r} (type {type(key).__name__})")
    if len(key) < p:
        raise ValueError(f"key {key!r} has fewer than {p} parts")
    return key[0] if p == 1 else key[:p]


@register_router_type("bounded")
class BoundedLoadRouter(RingRouter):
    """Consistent hashing with bounded loads (Mirrokni, Thorup & Zadimoghaddam
    2018, arXiv 1608.01350; HAProxy's ``hash-balance-factor``, Envoy's
    ``hash_balance_factor``): a ring (as :class:`RingRouter`) plus a balance
    factor *f* in percent (1 + eps = f / 100).

    ``route(key)`` and the other routing methods are the plain ring's.
    ``assign(keys)`` places one batch so that no shard receives more than
    ``ceil(f / 100 * len(keys) / N)`` of its keys: each key starts at its
    successor token and walks the ring clockwise to the first shard with
    room (``sizes=`` weighs the keys).  :func:`place_items` places weighted
    items under the cap, keeping what it can of a previous placement.

    ``BoundedLoadRouter(shards, *, balance_factor=125, vnodes=None,
    weights=None, tokens=None, collisions="error", hasher=None, version=1,
    key_prefix=None)``: ``balance_factor`` an int >= 100 (105 for eps =
    0.05); the other parameters are :class:`RingRouter`'s.  With
    ``weights``, shard *s*'s cap is ``ceil(f / 100 * total * w_s / sum(w))``.

    >>> r = BoundedLoadRouter([f"s{i}" for i in range(4)], balance_factor=110)
    >>> shards = r.assign(range(1000)).tolist()
    >>> max(shards.count(i) for i in range(4)) <= int(r.capacities(1000)[0]) == 275
    True
    """

    _balance_factor: int

    _doc_fields: ClassVar[tuple[str, ...]] = ("vnodes", "weights", "tokens", "collisions", "balance_factor")

    def __init__(self, shards: Iterable[str], *, balance_factor: int = DEFAULT_BALANCE_FACTOR,
                 vnodes: int | None = None, weights: Mapping[str, float] | None = None,
                 tokens: Mapping[str, Sequence[int]] | None = None, collisions: str = "error",
                 hasher: Hasher | None = None, version: int = 1, key_prefix: int | None = None) -> None:
        f = _check_int(balance_factor, "balance_factor", 100, 0xFFFFFFFF)
        super().__init__(shards, vnodes=vnodes, weights=weights, tokens=tokens, collisions=collisions,
                         hasher=hasher, version=version, key_prefix=key_prefix)
        self._set("_balance_factor", f)

    @property
    def balance_factor(self) -> int:
        """The load factor in percent: no shard takes more than ``balance_factor / 100`` times its share."""
        return self._balance_factor

    def capacities(self, total: int) -> np.ndarray:
        """Each shard's capacity (uint64) for a batch of total size ``total``:
        ``ceil(total * f / (100 * N))`` exactly, or with weights
        ``ceil(total * f * w_s / (100 * sum(w)))``."""
        t = _check_int(total, "total", 0, (1 << 64) - 1)
        n = len(self.shards)
        w = self._weights
        if not w:
            return np.full(n, bounded_capacity(t, n, self._balance_factor), dtype=np.uint64)
        ws = [Fraction(w.get(s, 1.0)) for s in self.shards]
        tw = sum(ws)
        caps = [math.ceil(Fraction(t * self._balance_factor, 100) * x / tw) for x in ws]
        if max(caps) > (1 << 64) - 1:
            raise OverflowError("a capacity does not fit in 64 bits")
        return np.array(caps, dtype=np.uint64)

    def _hashes_of(self, keys: Any) -> np.ndarray:
        if self.key_prefix is not None:
            keys = [_prefix(k, self.key_prefix) for k in keys]
        return np.asarray(self.hasher.hash_array(keys))

    def assign(self, keys: Any, *, sizes: Any = None) -> np.ndarray:
        """Shard indices (int32) for one batch of keys under the cap (keys are
        placed in order, so a key's shard depends on the keys before it).
        ``sizes`` (one non-negative int per key) weighs them; the cap is then
        on the total size.  With sizes an item that fits nowhere goes to the
        least-loaded shard (see :func:`place_items` for a count of those)."""
        return self.assign_hashes(self._hashes_of(keys), sizes=sizes)

    def assign_hashes(self, hashes: Any, *, sizes: Any = None) -> np.ndarray:
        """``assign`` for precomputed 64-bit hashes."""
        return self._assign(hashes, sizes)[0]

    def _assign(self, hashes: Any, sizes: Any, order: Any = None,
                prev: Any = None) -> tuple[np.ndarray, np.ndarray, int]:
        from .base import as_hashes

        h = as_hashes(hashes)
        sz = None if sizes is None else as_hashes(sizes, "sizes")
        if sz is not None and sz.shape[0] != h.shape[0]:
            raise ValueError(f"sizes has {sz.shape[0]} entries for {h.shape[0]} keys")
        total = h.shape[0] if sz is None else sum(int(x) for x in sz)
        return bounded_assign(self.tokens, self.token_owners, h, self.capacities(total), sizes=sz,
                              order=order, prev=prev)

    def _doc_params(self) -> dict[str, Any]:
        d = super()._doc_params()
        d["balance_factor"] = self._balance_factor
        return d

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        if "balance_factor" not in params:
            raise ValueError("bounded params need 'balance_factor'")
        collisions = params.get("collisions", "error")
        f = params["balance_factor"]
        if params.get("tokens") is not None:
            return cls(shards, balance_factor=f, tokens=params["tokens"], collisions=collisions, hasher=hasher,
                       version=version, key_prefix=key_prefix)
        return cls(shards, balance_factor=f, vnodes=_check_int(params["vnodes"], "bounded params: vnodes"),
                   weights=params.get("weights"),
                   collisions=collisions, hasher=hasher, version=version, key_prefix=key_prefix)

    # -- planning hooks ----------------------------------------------------------

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> BoundedLoadRouter:
        """As :meth:`RingRouter.with_shards` (kept shards keep their tokens), with the same balance factor."""
        ring = RingRouter.with_shards(self, shards, weights=weights, tokens=tokens, version=version)
        explicit = ring.explicit_tokens
        common: dict[str, Any] = {"balance_factor": self._balance_factor, "collisions": ring.collisions,
                                  "hasher": ring.hasher, "version": ring.version, "key_prefix": ring.key_prefix}
        if explicit is not None:
            return BoundedLoadRouter(ring.shards, tokens={s: list(p) for s, p in explicit.items()}, **common)
        return BoundedLoadRouter(ring.shards, vnodes=ring.vnodes, weights=_default_weights(ring.weights),
                                 **common)

    def explain_hash(self, h: int, key: Any) -> list[str]:
        return [*super().explain_hash(h, key),
                f"bounded loads: batch assignments cap each shard at {self._balance_factor}% of the average "
                "(route() is the plain ring's answer)"]

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset({"vnodes", "shard_weights", "balance_factor"})
    cli_hashes = True

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        f = getattr(args, "balance_factor", None)
        return cls(shards, balance_factor=DEFAULT_BALANCE_FACTOR if f is None else f,
                   vnodes=args.vnodes or 256, weights=weights, hasher=hasher)


@dataclass(frozen=True)
class ItemPlacement:
    """What :func:`place_items` decided.

    ``assignment`` maps each item to its shard id (a DirectoryRouter's
    overrides, or a bucket table when the items are bucket numbers);
    ``loads`` and ``capacity`` give each shard's total size and cap;
    ``moved`` lists the items whose shard differs from the previous
    placement, ``moved_size`` their total size; ``overflows`` counts items
    that fit nowhere (placed on the least-loaded shard)."""

    assignment: dict[Any, str]
    loads: dict[str, int]
    capacity: dict[str, int]
    moved: list[Any] = field(default_factory=list)
    moved_size: int = 0
    total_size: int = 0
    overflows: int = 0

    @property
    def moved_share(self) -> float:
        """``moved_size / total_size`` (0.0 for an empty placement)."""
        return self.moved_size / self.total_size if self.total_size else 0.0


def place_items(router: BoundedLoadRouter, items: Mapping[Any, int], *,
                previous: Mapping[Any, str] | None = None) -> ItemPlacement:
    """Place weighted ``items`` (item key -> size, a non-negative int: a
    tenant's rows, a bucket's bytes) on ``router``'s shards so that no shard
    holds more than its cap (:meth:`BoundedLoadRouter.capacities` of the total
    size), moving as little as possible from ``previous`` (item -> shard id;
    items missing there, or on shards no longer in ``router``, are new).

    Items are taken largest first (ties: in the order given).  Pass 1 keeps
    every item whose previous shard still has room; pass 2 walks the others
    from the successor of the item's hash (``router.hasher``, as ``route``
    hashes the key) to the first shard with room (docs/routers.md 2.16).

    >>> r = BoundedLoadRouter(["a", "b", "c"], balance_factor=105)
    >>> p = place_items(r, {"t1": 20, "t2": 20, "t3": 20, "t4": 10, "t5": 10, "t6": 10, "t7": 5, "t8": 5})
    >>> p.capacity["a"], sorted(p.loads.values()), p.overflows
    (35, [30, 35, 35], 0)
    """
    if not isinstance(router, BoundedLoadRouter):
        raise TypeError(f"router must be a BoundedLoadRouter, not {type(router).__name__}")
    if not isinstance(items, Mapping):
        raise TypeError(f"items must be a mapping item -> size, not {type(items).__name__}")
    keys = list(items)
    sizes = [_check_int(items[k], f"items[{_describe(k)}]", 0, (1 << 64) - 1) for k in keys]
    index = {s: i for i, s in enumerate(router.shards)}
    prev = None
    if previous is not None:
        if not isinstance(previous, Mapping):
            raise TypeError(f"previous must be a mapping item -> shard id, not {type(previous).__name__}")
        for k, s in previous.items():
            if not isinstance(s, str):
                raise TypeError(f"previous[{_describe(k)}] must be a shard id (str), got {_describe(s)}")
        prev = np.array([index.get(previous[k], -1) if k in previous else -1 for k in keys], dtype=np.int32)
    order = np.array(sorted(range(len(keys)), key=lambda i: (-sizes[i], i)), dtype=np.intp)
    hashes = router._hashes_of(keys) if keys else np.empty(0, dtype=np.uint64)
    sz = np.array(sizes, dtype=np.uint64)
    out, loads, over = router._assign(hashes, sz, order=order, prev=prev)
    total = sum(sizes)
    caps = router.capacities(total)
    assignment = {k: router.shards[int(i)] for k, i in zip(keys, out)}
    moved = [k for k in keys if previous is not None and k in previous and previous[k] != assignment[k]]
    return ItemPlacement(
        assignment=assignment,
        loads={s: int(v) for s, v in zip(router.shards, loads)},
        capacity={s: int(c) for s, c in zip(router.shards, caps)},
        moved=moved,
        moved_size=sum(items[k] for k in moved),
        total_size=total,
        overflows=over,
    )
