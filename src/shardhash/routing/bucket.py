"""Buckets: a fixed number of logical buckets and a placement table."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from shardhash import _limits

from .base import (
    Hasher,
    Router,
    TopologyOptionError,
    _check_int,
    _check_shard_id,
    _check_shards,
    _check_weights,
    _describe,
    register_router_type,
)

__all__ = ["BucketRouter"]

DEFAULT_BUCKETS = 4096


def _balanced_placement(
    placement: Sequence[str], shards: Sequence[str], weights: Mapping[str, float] | None
) -> list[str]:
    """Move as few buckets as possible so each shard holds its weighted share.

    Targets use the largest-remainder method (equal shards differ by at most
    one bucket); ties for the extra buckets go to shards that already hold
    more, so fewer buckets move.  Only shards above target give, only shards
    below target receive, and each gives its highest-numbered buckets.
    """
    b = len(placement)
    w = np.array([float((weights or {}).get(s, 1.0)) for s in shards])
    quota = b * w / w.sum()
    base = np.floor(quota).astype(np.int64)
    rem = int(b - base.sum())
    current = {s: 0 for s in shards}
    for s in placement:
        if s in current:
            current[s] += 1
    frac = quota - base
    order = sorted(range(len(shards)), key=lambda i: (-round(frac[i], 12), -current[shards[i]], i))
    for i in order[:rem]:
        base[i] += 1
    target = {s: int(t) for s, t in zip(shards, base)}
    held: dict[str, list[int]] = {}
    for bkt, s in enumerate(placement):
        held.setdefault(s, []).append(bkt)
    free: list[int] = []
    for s, bs in held.items():
        keep = target.get(s, 0)
        if len(bs) > keep:
            free.extend(bs[keep:])
    free.sort()
    new = list(placement)
    receivers = [s for s in shards if current[s] < target[s]]
    need = {s: target[s] - current[s] for s in receivers}
    ri = 0
    for bkt in free:
        # Round-robin over the receivers that still need buckets.
        for _ in range(len(receivers)):
            s = receivers[ri % len(receivers)]
            ri += 1
            if need[s] > 0:
                need[s] -= 1
                new[bkt] = s
                break
    return new


def _even_placement(shards: Sequence[str], buckets: int, weights: Mapping[str, float] | None) -> list[str]:
    """``buckets`` buckets shared by weight (largest remainder), in
    contiguous blocks in shard order (they read better in a table than
    round-robin)."""
    if buckets < len(shards):
        raise ValueError(f"{buckets} buckets are fewer than the {len(shards)} shards")
    placement = _balanced_placement([shards[0]] * buckets, shards, weights)
    return [p for s in shards for p in [s] * placement.count(s)]


def _placement_index(shards: Sequence[str], placement: Any) -> list[int]:
    """The shard index of each bucket of ``placement`` (a sequence of shard
    ids), checked: a clear TypeError/ValueError naming the bucket."""
    if isinstance(placement, (str, bytes)) or not isinstance(placement, Iterable):
        raise TypeError(f"placement must be a sequence of shard ids, not {type(placement).__name__}")
    index = {s: i for i, s in enumerate(shards)}
    idx: list[int] = []
    for b, s in enumerate(placement):
        if not isinstance(s, str):
            raise TypeError(f"placement[{b}] must be a shard id string, got {_describe(s)}")
        i = index.get(s)
        if i is None:
            raise ValueError(f"placement[{b}] names unknown shard {s!r}")
        idx.append(i)
    return idx


def _placement_params(params: dict[str, Any], shards: Sequence[str], kind: str) -> list[str]:
    """The shard ids of a document's ``params.placement`` (shard indices)."""
    p = params["placement"]
    if not isinstance(p, list):
        raise ValueError(f"{kind} params: 'placement' must be a list of shard indices")
    ids: list[str] = []
    for b, i in enumerate(p):
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(shards):
            raise ValueError(f"{kind} params: placement[{b}] = {i!r} is not a shard index")
        ids.append(shards[i])
    return ids


class _BucketTable:
    """The bucket -> shard table (``_placement``, read-only int32 shard
    indices) of :class:`BucketRouter` and ``IdBucketRouter``."""

    _placement: np.ndarray

    @property
    def placement(self) -> np.ndarray:
        """Shard index of each bucket (read-only int32 array)."""
        return self._placement

    @property
    def placement_ids(self) -> tuple[str, ...]:
        """Shard id of each bucket."""
        sh = cast(Router, self).shards
        return tuple(sh[i] for i in self._placement.tolist())


@register_router_type("bucket")
class BucketRouter(_BucketTable, Router):
    """A fixed number of logical buckets (``hash % len(placement)``) and a
    placement table bucket -> shard id.

    ``BucketRouter(shards, placement)`` takes the shard id of every bucket;
    ``BucketRouter(shards, buckets=4096)`` (the default when ``placement`` is
    left out) spreads ``buckets`` buckets evenly over the shards, in
    contiguous blocks in shard order; :meth:`balanced` does the same with
    ``weights``.  ``hasher``, ``version`` and ``key_prefix`` are as for every
    router (see :class:`Router`).  Documents store the placement, so adding
    a shard with ``shardhash.plan.add_shards`` moves only the fewest buckets.

    >>> r = BucketRouter(["db1", "db2"], ["db1", "db1", "db2", "db2"])
    >>> [r.shards[i] for i in r.route_hashes([0, 1, 2, 3, 6])]
    ['db1', 'db1', 'db2', 'db2', 'db2']
    >>> BucketRouter(["a", "b", "c"], buckets=8).placement_ids
    ('a', 'a', 'a', 'b', 'b', 'b', 'c', 'c')
    """

    _placement: np.ndarray

    _doc_fields = ("placement",)
    replica_rule = "rehash"

    def __init__(self, shards: Iterable[str], placement: Sequence[str] | None = None, *,
                 buckets: int | None = None, hasher: Hasher | None = None, version: int = 1,
                 key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        if placement is None:
            n = DEFAULT_BUCKETS if buckets is None else _check_int(buckets, "buckets", 1, _limits.MAX_BUCKETS)
            placement = _even_placement(self.shards, n, None)
        elif buckets is not None:
            raise ValueError("give either placement or buckets, not both")
        idx = _placement_index(self.shards, placement)
        if not idx:
            raise ValueError("placement must not be empty")
        _limits.reserve(len(idx), _limits.MAX_BUCKETS, "bucket count")
        self._set("_placement", self._use_bucket(np.array(idx, dtype=np.int32)))
        self._finish()

    @classmethod
    def balanced(cls, shards: Iterable[str], buckets: int = 4096, *,
                 weights: Mapping[str, float] | None = None, hasher: Hasher | None = None,
                 version: int = 1, key_prefix: int | None = None) -> BucketRouter:
        """``buckets`` buckets over ``shards`` in proportion to ``weights``
        (missing shards weigh 1; the largest-remainder method), in contiguous
        blocks in shard order.

        >>> BucketRouter.balanced(["a", "b"], 6, weights={"b": 2.0}).placement_ids
        ('a', 'a', 'b', 'b', 'b', 'b')
        """
        sh = _check_shards(shards)
        n = _check_int(buckets, "buckets", 1, _limits.MAX_BUCKETS)
        return cls(sh, _even_placement(sh, n, _check_weights(weights, sh)), hasher=hasher,
                   version=version, key_prefix=key_prefix)

    @classmethod
    def from_ranges(cls, starts: Mapping[int, str] | Iterable[tuple[int, str]], bucket_count: int, *,
                    shards: Iterable[str] | None = None, hasher: Hasher | None = None,
                    version: int = 1, key_prefix: int | None = None) -> BucketRouter:
        """Build from range starts: bucket ``b`` goes to the shard of the
        greatest start <= b (the first start must be 0).

        >>> r = BucketRouter.from_ranges({0: "db1", 256: "db2"}, 512)
        >>> r.placement_ids[255], r.placement_ids[256]
        ('db1', 'db2')
        """
        n = _check_int(bucket_count, "bucket_count", 1, _limits.MAX_BUCKETS)
        items = list(starts.items()) if isinstance(starts, Mapping) else list(starts)
        if not items:
            raise ValueError("starts must not be empty")
        pairs = []
        for i, it in enumerate(items):
            if not isinstance(it, tuple) or len(it) != 2:
                raise TypeError(f"starts[{i}] must be a (start, shard id) pair")
            st = _check_int(it[0], f"start of range {i}", 0, n - 1)
            _check_shard_id(it[1], f"shard of range {i}")
            pairs.append((st, it[1]))
        for i in range(1, len(pairs)):
            if pairs[i][0] <= pairs[i - 1][0]:
                raise ValueError(f"range starts must be strictly increasing: {pairs[i - 1][0]} then {pairs[i][0]}")
        if pairs[0][0] != 0:
            raise ValueError(f"the first range must start at bucket 0, not {pairs[0][0]}")
        placement: list[str] = []
        for i, (st, s) in enumerate(pairs):
            end = pairs[i + 1][0] if i + 1 < len(pairs) else n
            placement.extend([s] * (end - st))
        if shards is None:
            shards = list(dict.fromkeys(s for _, s in pairs))
        return cls(shards, placement, hasher=hasher, version=version, key_prefix=key_prefix)

    @property
    def bucket_count(self) -> int:
        return int(self._placement.shape[0])

    def _doc_params(self) -> dict[str, Any]:
        return {"placement": self._placement.tolist()}

    # -- planning hooks ----------------------------------------------------------

    def bucket_table(self) -> np.ndarray:
        return self._placement.astype(np.int64)

    def target_weights(self, space: int) -> np.ndarray:
        t = self.bucket_table()
        if space < (1 << 64) and len(t) > 1:
            # bucket b holds the hashes below ``space`` with h % len(t) == b
            cnt = (space - 1 - np.arange(len(t), dtype=np.int64)) // len(t) + 1
            return np.bincount(t, weights=cnt.astype(np.float64), minlength=len(self.shards))
        return np.bincount(t, minlength=len(self.shards)).astype(np.float64)

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> BucketRouter:
        """Same bucket count; the fewest buckets move that give each shard its
        weighted share (see :func:`_balanced_placement`)."""
        return BucketRouter(list(shards), _balanced_placement(self.placement_ids, shards, weights),
                            hasher=self.hasher, version=self.version + 1 if version is None else version,
                            key_prefix=self.key_prefix)

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        ids = _placement_params(params, shards, "bucket")
        return cls(shards, ids, hasher=hasher, version=version, key_prefix=key_prefix)

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset({"buckets", "shard_weights"})
    cli_name = "buckets"
    cli_hashes = True

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        nb = args.buckets or DEFAULT_BUCKETS
        if nb < len(shards):
            raise TopologyOptionError(f"--buckets {nb} is fewer than the {len(shards)} shards")
        return cls.balanced(shards, nb, weights=weights, hasher=hasher)
