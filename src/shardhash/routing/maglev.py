"""Maglev hashing (Eisenbud et al. 2016): a prime-sized lookup table."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from shardhash import _limits

from .base import (
    Hasher,
    Router,
    _check_int,
    _check_weights,
    _default_weights,
    _identity_hash,
    _weights_doc,
    maglev_populate,
    register_router_type,
)

__all__ = ["MaglevRouter", "maglev_default_table_size"]


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):  # deterministic below 3.3e24
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _next_prime(n: int) -> int:
    n = max(n, 2)
    while not _is_prime(n):
        n += 1
    return n



_MAGLEV_MAX = _limits.MAX_MAGLEV_TABLE
# Default table sizes: the smallest prime >= 2**16 * 4**k, k = 0..5.
_MAGLEV_LADDER = (65537, 262147, 1048583, 4194319, 16777259, 67108879)


def maglev_default_table_size(n: int) -> int:
    """The table size ``MaglevRouter`` picks for ``n`` shards: the first of
    65537, 262147, 1048583, 4194319, 16777259, 67108879 (the smallest primes
    >= 2**16 * 4**k) that is >= 100 * n, else the smallest prime >= 100 * n.
    It stays the same as shards are added (up to 655 shards it is 65537), so
    growing a cluster with default arguments moves about 1/(N+1) of the keys.

    >>> maglev_default_table_size(3), maglev_default_table_size(656)
    (65537, 262147)
    """
    n = _check_int(n, "n", 1)
    for m in _MAGLEV_LADDER:
        if m >= 100 * n:
            return m
    return _next_prime(100 * n)


@register_router_type("maglev")
class MaglevRouter(Router):
    """Maglev hashing (Eisenbud et al. 2016): a prime-sized lookup table
    ``table[hash % table_size]`` filled from per-shard permutations.

    The default table size, ``maglev_default_table_size(len(shards))``, is
    65537 up to 655 shards (then the next of a few fixed primes, each >= 100
    slots per shard), so adding a shard with default arguments keeps the table
    size and moves about 1/(N+1) of the keys.  Documents store the size, so
    routers rebuilt from them never change.

    ``MaglevRouter(shards, *, table_size=None, weights=None, hasher=None,
    version=1, key_prefix=None)``: ``table_size`` a prime >= the number of
    shards (default above); ``weights`` maps shard ids to positive weights
    (missing shards weigh 1).  ``hasher`` (default ``Hasher()``: xxh3_64, seed 0), ``version`` (default
    1) and ``key_prefix`` (default None: the whole key) are as for every
    router (see :class:`Router`).

    >>> r = MaglevRouter(["a", "b", "c"])
    >>> r.table_size
    65537
    """

    _weights: dict[str, float] | None
    _m: int
    _table: np.ndarray

    _doc_fields = ("table_size", "weights")
    replica_rule = "rehash"

    def __init__(self, shards: Iterable[str], *, table_size: int | None = None,
                 weights: Mapping[str, float] | None = None, hasher: Hasher | None = None,
                 version: int = 1, key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        n = len(self.shards)
        if table_size is None:
            m = maglev_default_table_size(n)
        else:
            m = _check_int(table_size, "table_size", 2, _MAGLEV_MAX)
            if not _is_prime(m):
                raise ValueError(f"table_size must be prime, got {m}")
            if m < n:
                raise ValueError(f"table_size {m} is smaller than the number of shards ({n})")
        if m > _MAGLEV_MAX:
            raise ValueError(f"table_size {m} exceeds {_MAGLEV_MAX}")
        _limits.reserve(m, _MAGLEV_MAX, "Maglev table_size")
        w = _check_weights(weights, self.shards)
        rel = None
        if w:
            full = [w.get(s, 1.0) for s in self.shards]
            top = max(full)
            if min(full) != top:
                rel = np.array([x / top for x in full], dtype=np.float64)
        ids = np.array([_identity_hash(self.hasher, s) for s in self.shards], dtype=np.uint64)
        table = maglev_populate(ids, rel, m)
        self._set("_weights", w)
        self._set("_m", m)
        self._set("_table", self._use_bucket(table))
        self._finish()

    @property
    def table_size(self) -> int:
        """Slots in the lookup table: bucket = hash % table_size."""
        return self._m

    bucket_count = table_size  # the same count under the name other bucket routers use

    @property
    def table(self) -> np.ndarray:
        """The lookup table: shard index of each slot (read-only int32 array)."""
        return self._table

    placement = table

    @property
    def weights(self) -> dict[str, float] | None:
        return dict(self._weights) if self._weights else None

    def _doc_params(self) -> dict[str, Any]:
        return {"table_size": self._m, "weights": _weights_doc(self._weights)}

    # -- planning hooks ----------------------------------------------------------

    table_unit = "slot"

    def bucket_table(self) -> np.ndarray:
        return self._table.astype(np.int64)

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> MaglevRouter:
        """Keeps the table size whenever it still holds every shard: Maglev
        disrupts least with a fixed size (choose it for the largest cluster
        up front)."""
        size: int | None = self._m
        if size is not None and size < len(shards):
            size = None
        return MaglevRouter(list(shards), table_size=size, weights=_default_weights(weights),
                            hasher=self.hasher, version=self.version + 1 if version is None else version,
                            key_prefix=self.key_prefix)

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        return cls(shards, table_size=_check_int(params["table_size"], "maglev params: table_size"),
                   weights=params.get("weights"),
                   hasher=hasher, version=version, key_prefix=key_prefix)

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset({"table_size", "shard_weights"})
    cli_hashes = True

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        return cls(shards, table_size=args.table_size, weights=weights, hasher=hasher)
