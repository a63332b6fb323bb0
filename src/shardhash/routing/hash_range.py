"""Ranges of the 64-bit hash space (Citus, MongoDB hashed, Vitess style)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .base import (
    U64_MAX,
    Hasher,
    Router,
    SplitRanges,
    _check_int,
    _merge_ranges,
    _owners_of,
    _width,
    hash_bits,
    no_weights,
    register_router_type,
)

__all__ = ["HashRangeRouter"]


@register_router_type("hash_range")
class HashRangeRouter(SplitRanges[int]):
    """Ranges of the 64-bit hash space (Citus, MongoDB hashed, Vitess style).

    ``splits`` are the lower bounds (inclusive) of ranges 1..k; range 0
    starts at 0.  ``shards[i]`` owns range ``i``; a shard may own several
    ranges (``router.shards`` then lists it once, in first-appearance order).

    ``HashRangeRouter(splits, shards, *, hasher=None, version=1,
    key_prefix=None)``: ``hasher`` (default ``Hasher()``: xxh3_64, seed 0), ``version`` (default
    1) and ``key_prefix`` (default None: the whole key) are as for every
    router (see :class:`Router`).

    >>> r = HashRangeRouter([2**63], ["low", "high"])
    >>> [r.shards[i] for i in r.route_hashes([0, 2**63 - 1, 2**63, 2**64 - 1])]
    ['low', 'low', 'high', 'high']
    """

    replica_rule = "ring"

    def __init__(self, splits: Sequence[int], shards: Sequence[str], *, hasher: Hasher | None = None,
                 version: int = 1, key_prefix: int | None = None) -> None:
        if isinstance(splits, (str, bytes)) or not isinstance(splits, Iterable):
            raise TypeError(f"splits must be a sequence of ints, not {type(splits).__name__}")
        if isinstance(shards, (str, bytes)) or not isinstance(shards, Iterable):
            raise TypeError(f"shards must be a sequence of shard ids, not {type(shards).__name__}")
        sp = [_check_int(s, f"splits[{i}]", 1, U64_MAX) for i, s in enumerate(splits)]
        owners = list(shards)
        if len(owners) != len(sp) + 1:
            raise ValueError(f"{len(sp)} splits need {len(sp) + 1} shards, got {len(owners)}")
        for i in range(1, len(sp)):
            if sp[i] <= sp[i - 1]:
                raise ValueError(f"splits must be strictly increasing: splits[{i - 1}] = {sp[i - 1]}, "
                                 f"splits[{i}] = {sp[i]}")
        uniq, idx = _owners_of(owners, "shards")
        super().__init__(uniq, hasher=hasher, version=version, key_prefix=key_prefix)
        self._set_ranges(sp, idx)
        # Range i = [splits[i-1], splits[i] - 1]: a ring whose tokens are the
        # ranges' inclusive upper ends.
        tokens = [s - 1 for s in sp] + [U64_MAX]
        self._use_ring(np.array(tokens, dtype=np.uint64), np.array(idx, dtype=np.int32), _width(self.hasher))
        self._finish()

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """``(lo, hi, shard index)`` inclusive hash intervals covering [0, 2**64 - 1]."""
        lows = [0, *self._splits]
        highs = [s - 1 for s in self._splits] + [U64_MAX]
        return _merge_ranges(list(zip(lows, highs, self._range_owners)))


    # -- planning hooks ----------------------------------------------------------

    def target_weights(self, space: int) -> np.ndarray:
        vals = np.zeros(len(self.shards))
        for lo, hi, s in self.hash_ranges() or ():
            vals[s] += max(0, min(hi, space - 1) - lo + 1)
        return vals

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> HashRangeRouter:
        """A removed shard's ranges merge into their left neighbour (the right
        one for the first range); each new shard takes the upper half of the
        widest range of the hashes the hasher gives."""
        rng = self.hash_ranges() or []
        splits = [lo for lo, _, _ in rng[1:]]
        owners = [self.shards[s] for _, _, s in rng]
        keep = set(shards)
        i = 0
        while i < len(owners):
            if owners[i] not in keep:
                if len(owners) == 1:
                    raise ValueError("cannot remove every shard")
                del splits[i - 1 if i > 0 else 0]
                del owners[i]
            else:
                i += 1
        j = 1
        while j < len(owners):  # merge adjacent ranges now owned by the same shard
            if owners[j] == owners[j - 1]:
                del owners[j]
                del splits[j - 1]
            else:
                j += 1
        space = 1 << hash_bits(self.hasher)
        for s in shards:
            if s in self.shards:
                continue
            bounds = [min(b, space) for b in [0, *splits, 1 << 64]]
            widths = [bounds[k + 1] - bounds[k] for k in range(len(owners))]
            k = int(np.argmax(widths))
            splits.insert(k, bounds[k] + widths[k] // 2)
            owners.insert(k + 1, s)
        return HashRangeRouter(splits, owners, hasher=self.hasher,
                               version=self.version + 1 if version is None else version,
                               key_prefix=self.key_prefix)

    def with_weights(self, weights: Mapping[str, float], *, version: int | None = None) -> Router:
        raise no_weights(self)

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        return cls(params["splits"], params["owners"], hasher=hasher, version=version,
                   key_prefix=key_prefix)

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset()
    cli_name = "hashrange"
    cli_hashes = True

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        n = len(shards)  # equal ranges
        return cls([(1 << 64) * i // n for i in range(1, n)], shards, hasher=hasher)
