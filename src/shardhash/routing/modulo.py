"""``hash % len(shards)``: the baseline strategy."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .base import Hasher, Router, no_weights, register_router_type

__all__ = ["ModuloRouter"]


@register_router_type("modulo")
class ModuloRouter(Router):
    """``hash % len(shards)``: the baseline (adding a shard moves most keys).

    ``ModuloRouter(shards, *, hasher=None, version=1, key_prefix=None)``:
    ``hasher`` (default ``Hasher()``: xxh3_64, seed 0), ``version`` (default
    1) and ``key_prefix`` (default None: the whole key) are as for every
    router (see :class:`Router`).

    >>> r = ModuloRouter(["a", "b", "c"])
    >>> r.route_hashes([0, 1, 2, 3, 4]).tolist()
    [0, 1, 2, 0, 1]
    """

    _placement: np.ndarray

    replica_rule = "rehash"

    def __init__(self, shards: Iterable[str], *, hasher: Hasher | None = None, version: int = 1,
                 key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        self._set("_placement", self._use_bucket(np.arange(len(self.shards), dtype=np.int32)))
        self._finish()

    @property
    def bucket_count(self) -> int:
        """Buckets are ``hash % bucket_count`` (here: the number of shards)."""
        return len(self.shards)

    @property
    def placement(self) -> np.ndarray:
        """Shard index of each bucket (read-only int32 array)."""
        return self._placement

    # -- planning hooks ----------------------------------------------------------

    table_buckets = False  # its table is the residues mod the shard count

    def bucket_table(self) -> np.ndarray:
        return self._placement.astype(np.int64)

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> ModuloRouter:
        return ModuloRouter(list(shards), hasher=self.hasher,
                            version=self.version + 1 if version is None else version,
                            key_prefix=self.key_prefix)

    def with_weights(self, weights: Mapping[str, float], *, version: int | None = None) -> Router:
        raise no_weights(self)

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset()
    cli_hashes = True
