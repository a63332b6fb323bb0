"""Jump consistent hash (Lamping & Veach 2014) over the key's 64-bit hash."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .base import Hasher, Router, jump_hash, jump_hash_array, no_weights, register_router_type

__all__ = ["JumpRouter", "jump_hash", "jump_hash_array"]


@register_router_type("jump")
class JumpRouter(Router):
    """Jump consistent hash (Lamping & Veach 2014) of the key's 64-bit hash.

    ``JumpRouter(shards, *, hasher=None, version=1, key_prefix=None)``:
    ``hasher`` (default ``Hasher()``: xxh3_64, seed 0), ``version`` (default
    1) and ``key_prefix`` (default None: the whole key) are as for every
    router (see :class:`Router`).  Adding a shard at the end moves
    1/(N+1) of the keys; the planners turn a jump topology that loses a shard
    other than the last into a :class:`MementoRouter` (only that shard's keys move).

    >>> r = JumpRouter([f"s{i}" for i in range(100)])
    >>> r.route_hashes([0, 1, 2]).tolist()
    [0, 55, 62]
    """

    replica_rule = "rehash"

    def __init__(self, shards: Iterable[str], *, hasher: Hasher | None = None, version: int = 1,
                 key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        self._use_jump()
        self._finish()

    # -- planning hooks ----------------------------------------------------------

    def expected_moves(self, new: Router) -> dict[tuple[int, int], float] | None:
        # Going from n to m buckets, a key keeps its bucket when both are
        # below min(n, m); the keys of the buckets beyond it spread uniformly
        # (Lamping & Veach 2014).  The shares are expectations.
        if not isinstance(new, JumpRouter):
            from .memento import memento_expected_moves

            return memento_expected_moves(self, new)
        n, m = len(self.shards), len(new.shards)
        out: dict[tuple[int, int], float] = {}
        for i in range(n):
            for j in range(m):
                if m >= n:
                    p = (1.0 / m if i == j else 0.0) if j < n else 1.0 / (m * n)
                else:
                    p = (1.0 / n if i == j else 0.0) if i < m else 1.0 / (n * m)
                if p:
                    out[(i, j)] = p
        return out

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> Router:
        """Shards kept keep their buckets.  Adding shards at the end (or
        removing the last ones) stays a JumpRouter; losing a shard that is not
        the last gives a :class:`MementoRouter`, which moves only that shard's
        keys (jump would renumber every later shard)."""
        from .memento import MementoRouter, successor

        v = self.version + 1 if version is None else version
        new = list(shards)
        old = {s: i for i, s in enumerate(self.shards)}
        if all(old.get(s, i) == i for i, s in enumerate(new)) and all(s in old for s in new[: len(old)]):
            return JumpRouter(new, hasher=self.hasher, version=v, key_prefix=self.key_prefix)
        n, rem, order = successor(len(self.shards), (), old, new)
        if not rem:
            return JumpRouter(order, hasher=self.hasher, version=v, key_prefix=self.key_prefix)
        return MementoRouter(order, buckets=n, removed=rem, hasher=self.hasher, version=v, key_prefix=self.key_prefix)

    def with_weights(self, weights: Mapping[str, float], *, version: int | None = None) -> Router:
        raise no_weights(self)

    def moves_only_added_removed(self, new: Router) -> bool:
        """Jump hashing moves keys only into buckets added at the end (or
        out of the last ones removed): when one router's shards are the
        other's first shards, in order."""
        if not self._same_placement_params(new):
            return False
        a, b = self.shards, new.shards
        k = min(len(a), len(b))
        return a[:k] == b[:k]

    def explain_hash(self, h: int, key: Any) -> list[str]:
        return [f"bucket:   {self.route_index(key)} of {len(self.shards)} (jump consistent hash)"]

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset()
    cli_hashes = True
