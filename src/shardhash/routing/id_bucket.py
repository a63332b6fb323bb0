"""Ids that carry their bucket (:mod:`shardhash.ids`): routed by the bucket."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .base import (
    Hasher,
    RawKeyRouter,
    Router,
    _describe,
    _route_each,
    no_weights,
    prepare_out,
    register_router_type,
)
from .bucket import _balanced_placement, _BucketTable, _even_placement, _placement_index, _placement_params

__all__ = ["IdBucketRouter"]


@register_router_type("id_bucket")
class IdBucketRouter(_BucketTable, RawKeyRouter):
    """Routes an id of :mod:`shardhash.ids` by the bucket in its low bits
    through a placement table (bucket -> shard id), without hashing it.

    ``IdBucketRouter(shards, layout, placement=None, *, version=1)``:
    ``layout`` an :class:`~shardhash.ids.IdLayout` (or its document);
    ``placement`` the shard id of each of its ``2 ** bucket_bits`` buckets
    (default: contiguous even blocks in shard order).  The document records
    the layout and the placement; ``with_shards`` (``plan.add_shards``)
    moves the fewest buckets, and a migration moves exactly the ids of the
    moved buckets.  Keys are ids: ints in ``0..2**63-1`` (TypeError for
    another type, ValueError out of range).

    >>> from shardhash.ids import IdLayout
    >>> layout = IdLayout(bucket_bits=2, worker_bits=13)
    >>> r = IdBucketRouter(["a", "b"], layout, ["a", "b", "b", "a"])
    >>> [r.route(layout.compose(layout.epoch_ms + 5, 0, 1, b)) for b in range(4)]
    ['a', 'b', 'b', 'a']
    """

    _placement: np.ndarray
    _layout: Any
    _doc_fields = ("layout", "placement")
    _hashes_refused = "IdBucketRouter routes ids by the bucket they carry, not hashes; use route or route_many"

    def __init__(self, shards: Iterable[str], layout: Any, placement: Sequence[str] | None = None, *,
                 hasher: Hasher | None = None, version: int = 1, key_prefix: int | None = None) -> None:
        from shardhash.ids import IdLayout

        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        if key_prefix is not None:
            raise ValueError("IdBucketRouter routes whole ids: key_prefix must be None")
        if isinstance(layout, Mapping):
            layout = IdLayout.from_dict(layout)
        if not isinstance(layout, IdLayout):
            raise TypeError(f"layout must be a shardhash.ids.IdLayout (or its document), not {type(layout).__name__}")
        n = layout.buckets
        if placement is None:
            placement = _even_placement(self.shards, n, None) if n >= len(self.shards) else \
                [self.shards[i % len(self.shards)] for i in range(n)]
        idx = _placement_index(self.shards, placement)
        if len(idx) != n:
            raise ValueError(f"placement must name the shard of each of the layout's {n} buckets "
                             f"(2 ** bucket_bits), not {len(idx)}")
        arr = np.array(idx, dtype=np.int32)
        arr.setflags(write=False)
        self._set("_placement", arr)
        self._set("_layout", layout)
        self._set("_mask", n - 1)
        self._finish()

    @property
    def layout(self) -> Any:
        """The :class:`~shardhash.ids.IdLayout` of the ids this router places."""
        return self._layout

    def route_index(self, key: Any) -> int:
        """The index of the shard of id ``key`` (its bucket's)."""
        return self._route_index_slow(key)

    def route(self, key: Any) -> str:
        """The shard of id ``key`` (its bucket's)."""
        return self.shards[self._route_index_slow(key)]

    def _route_index_slow(self, key: Any) -> int:
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
            raise TypeError(f"an IdBucketRouter routes ids (ints); got {_describe(key)} "
                            f"(type {type(key).__name__})")
        k = int(key)
        if not 0 <= k < 2**63:
            raise ValueError(f"an id is in 0..2**63-1, not {k}")
        return int(self._placement[k & self._mask])

    def route_many(self, keys: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        if isinstance(keys, np.ndarray) and keys.ndim == 1 and keys.dtype.kind in "iu":
            a = keys
            if a.size and (a.dtype.kind == "i" and int(a.min()) < 0 or a.dtype.itemsize == 8 and
                           a.dtype.kind == "u" and int(a.max()) >= 2**63):
                bad = int(np.flatnonzero((a < 0) if a.dtype.kind == "i" else (a >= 2**63))[0])
                raise ValueError(f"keys[{bad}]: an id is in 0..2**63-1, not {int(a[bad])}")
            o = prepare_out(out, a.shape[0])
            o[:] = self._placement[(a & self._mask).astype(np.intp)]
            return o
        if isinstance(keys, np.ndarray) and keys.dtype.kind != "O":
            raise TypeError(f"an IdBucketRouter routes ids (integers); got an array of dtype {keys.dtype}")
        return _route_each(self._route_index_slow, keys, out, "ids", (TypeError, ValueError))

    def _doc_params(self) -> dict[str, Any]:
        return {"layout": self._layout.to_dict(), "placement": self._placement.tolist()}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        ids = _placement_params(params, shards, "id_bucket")
        if not isinstance(params["layout"], Mapping):
            raise ValueError("id_bucket params: 'layout' must be an id layout document")
        return cls(shards, dict(params["layout"]), ids, hasher=hasher, version=version, key_prefix=key_prefix)

    # -- planning hooks ----------------------------------------------------------

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> IdBucketRouter:
        """Same layout; the fewest buckets move that give each shard its
        weighted share of the buckets."""
        return IdBucketRouter(list(shards), self._layout, _balanced_placement(self.placement_ids, shards, weights),
                              hasher=self.hasher, version=self.version + 1 if version is None else version)

    def with_weights(self, weights: Mapping[str, float], *, version: int | None = None) -> Router:
        raise no_weights(self)

    def with_placement(self, placement: Sequence[str], *, version: int | None = None) -> IdBucketRouter:
        """The same layout with another placement (e.g. one bucket moved)."""
        shards = list(dict.fromkeys([*self.shards, *placement]))
        return IdBucketRouter(shards, self._layout, placement, hasher=self.hasher,
                              version=self.version + 1 if version is None else version)
