"""Rendezvous (highest random weight) hashing."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .base import (
    Hasher,
    Router,
    _check_weights,
    _default_weights,
    _identity_hash,
    _weights_doc,
    mix64,
    register_router_type,
)

__all__ = ["RendezvousRouter"]


@register_router_type("rendezvous")
class RendezvousRouter(Router):
    """Highest random weight: each shard draws ``mix64(hash ^ seed)``; the largest wins.

    ``seed = mix64(hasher(shard id))``.  With ``weights``, the logarithmic
    method: ``score = -weight / ln(u)`` with ``u = ((draw >> 11) | 1) / 2**53``.

    ``RendezvousRouter(shards, *, weights=None, hasher=None, version=1,
    key_prefix=None)``: ``weights`` maps shard ids to positive weights
    (missing shards weigh 1).  ``hasher`` (default ``Hasher()``: xxh3_64, seed 0), ``version`` (default
    1) and ``key_prefix`` (default None: the whole key) are as for every
    router (see :class:`Router`).

    >>> r = RendezvousRouter(["a", "b", "c"])
    >>> r.route("user:1") in ("a", "b", "c")
    True
    """

    _weights: dict[str, float] | None

    _doc_fields = ("weights",)
    replica_rule = "score"

    def __init__(self, shards: Iterable[str], *, weights: Mapping[str, float] | None = None,
                 hasher: Hasher | None = None, version: int = 1, key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        w = _check_weights(weights, self.shards)
        self._set("_weights", w)
        seeds = np.array([mix64(_identity_hash(self.hasher, s)) for s in self.shards], dtype=np.uint64)
        wl = None
        if w:
            full = [w.get(s, 1.0) for s in self.shards]
            if len(set(full)) > 1:
                wl = np.array(full, dtype=np.float64)
        self._use_rendezvous(seeds, wl)
        self._finish()

    @property
    def weights(self) -> dict[str, float] | None:
        return dict(self._weights) if self._weights else None

    def _doc_params(self) -> dict[str, Any]:
        return {"weights": _weights_doc(self._weights)}

    # -- planning hooks ----------------------------------------------------------

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> RendezvousRouter:
        return RendezvousRouter(list(shards), weights=_default_weights(weights), hasher=self.hasher,
                                version=self.version + 1 if version is None else version,
                                key_prefix=self.key_prefix)

    def moves_only_added_removed(self, new: Router) -> bool:
        """Each shard's score for a key depends on the key's hash, its own
        seed and its own weight only: when the shards both routers keep keep
        their weights, a kept shard's key can only be outbid by an added one."""
        if not (self._same_placement_params(new) and isinstance(new, RendezvousRouter)):
            return False
        w0, w1 = self._weights or {}, new._weights or {}
        kept = set(self.shards) & set(new.shards)
        return all(w0.get(s, 1.0) == w1.get(s, 1.0) for s in kept)

    def explain_hash(self, h: int, key: Any) -> list[str]:
        return [f"placement: highest (weighted) score of the key against each of {len(self.shards)} shards"]

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        return cls(shards, weights=params.get("weights"), hasher=hasher, version=version,
                   key_prefix=key_prefix)

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset({"shard_weights"})
    cli_hashes = True

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        return cls(shards, weights=weights, hasher=hasher)
