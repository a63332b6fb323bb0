"""Multi-probe consistent hashing (Appleton & O'Reilly 2015): one token per shard, k probes per key."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .base import Hasher, Router, _check_int, _identity_hash, mix64, no_weights, register_router_type

__all__ = ["MultiProbeRouter"]

#: The default number of probes: peak-to-mean about 1.05 (Appleton & O'Reilly 2015).
DEFAULT_PROBES = 21


@register_router_type("multiprobe")
class MultiProbeRouter(Router):
    """Multi-probe consistent hashing (Appleton & O'Reilly 2015, arXiv
    1505.00062): each shard has one token ``mix64(hasher(shard id))`` on the
    64-bit circle; a key's ``probes`` probes are the first outputs of
    SplitMix64 seeded with its hash, and the key goes to the token closest
    clockwise to any probe (equal distances: the smaller shard index).
    Memory is one token per shard; balance without virtual nodes.

    ``MultiProbeRouter(shards, *, probes=21, hasher=None, version=1,
    key_prefix=None)``: ``probes`` in 1..64.  ``hasher`` (default
    ``Hasher()``: xxh3_64, seed 0), ``version`` (default 1) and
    ``key_prefix`` (default None: the whole key) are as for every router
    (see :class:`Router`).  Two shards on one token are an error naming both.

    >>> r = MultiProbeRouter(["a", "b", "c"])
    >>> r.probes, r.route("user:1") in ("a", "b", "c")
    (21, True)
    """

    _probes: int
    _tokens: np.ndarray
    _owners: np.ndarray

    _doc_fields = ("probes",)
    replica_rule = "probe"

    def __init__(self, shards: Iterable[str], *, probes: int = DEFAULT_PROBES, hasher: Hasher | None = None,
                 version: int = 1, key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        k = _check_int(probes, "probes", 1, 64)
        pos = np.array([mix64(_identity_hash(self.hasher, s)) for s in self.shards], dtype=np.uint64)
        order = np.argsort(pos, kind="stable")
        t = pos[order]
        dup = np.flatnonzero(t[1:] == t[:-1])
        if dup.size:
            j = int(dup[0])
            a, b = self.shards[int(order[j])], self.shards[int(order[j + 1])]
            raise ValueError(f"multi-probe tokens collide: shards {a!r} and {b!r} both sit at position {int(t[j])}")
        tok, own = self._use_multiprobe(t, order.astype(np.int32), k)
        self._set("_probes", k)
        self._set("_tokens", tok)
        self._set("_owners", own)
        self._finish()

    @property
    def probes(self) -> int:
        """Probes per key."""
        return self._probes

    @property
    def tokens(self) -> np.ndarray:
        """Token positions, sorted (read-only uint64 array)."""
        return self._tokens

    @property
    def token_owners(self) -> np.ndarray:
        """Shard index owning each token (read-only int32 array)."""
        return self._owners

    def _doc_params(self) -> dict[str, Any]:
        return {"probes": self._probes}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        if "probes" not in params:
            raise ValueError("multiprobe params need 'probes'")
        return cls(shards, probes=params["probes"], hasher=hasher, version=version, key_prefix=key_prefix)

    # -- planning hooks ----------------------------------------------------------

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> MultiProbeRouter:
        """Every kept shard keeps its token (it depends on the shard id alone)."""
        return MultiProbeRouter(list(shards), probes=self._probes, hasher=self.hasher,
                                version=self.version + 1 if version is None else version,
                                key_prefix=self.key_prefix)

    def with_weights(self, weights: Mapping[str, float], *, version: int | None = None) -> Router:
        raise no_weights(self)

    def moves_only_added_removed(self, new: Router) -> bool:
        """A shard's token depends on its id only, and a key goes to the
        token nearest (clockwise) to any of its probes: an added token can
        only win keys, a removed one only lose its own."""
        return self._same_placement_params(new) and isinstance(new, MultiProbeRouter) \
            and new.probes == self._probes

    def explain_hash(self, h: int, key: Any) -> list[str]:
        return [f"placement: the token closest clockwise to any of {self._probes} probes "
                f"({len(self.shards)} tokens, one per shard)"]

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset({"probes"})
    cli_hashes = True

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        probes = getattr(args, "probes", None)
        return cls(shards, probes=DEFAULT_PROBES if probes is None else probes, hasher=hasher)
