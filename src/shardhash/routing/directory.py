"""Explicit key -> shard overrides over any hash router."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .base import (
    _CORE_ROUTE_MANY,
    Hasher,
    RawKeyRouter,
    Router,
    WrappingRouter,
    _check_shard_id,
    _describe,
    register_router_type,
)

__all__ = ["DirectoryRouter"]


def _override_key(k: Any, where: str) -> Any:
    if isinstance(k, bool) or not isinstance(k, (int, str)):
        raise TypeError(f"{where}: override keys must be int or str (they are stored in the "
                        f"document), got {_describe(k)}")
    return k


@register_router_type("directory")
class DirectoryRouter(WrappingRouter):
    """Explicit key -> shard overrides over any hash router.

    An override applies to every key whose hash equals the hash of the
    override key (with 64-bit hashers that is the key itself).  Shards that
    only overrides name are appended after the base router's shards.
    ``DirectoryRouter(base, overrides, *, version=1)``: the hasher and
    ``key_prefix`` are the base's; the planners plan the base and keep the
    overrides.

    >>> base = JumpRouter(["a", "b"])
    >>> r = DirectoryRouter(base, {"giant-tenant": "c"})
    >>> r.route("giant-tenant"), r.shards
    ('c', ('a', 'b', 'c'))
    """

    _overrides: tuple[tuple[Any, str], ...]

    _doc_fields = ("base", "overrides")

    def __init__(self, base: Router, overrides: Mapping[Any, str] | Iterable[tuple[Any, str]], *,
                 version: int = 1) -> None:
        if not isinstance(base, Router):
            raise TypeError(f"base must be a Router, not {type(base).__name__}")
        if isinstance(base, RawKeyRouter) or not (
                type(base).route_many is _CORE_ROUTE_MANY or getattr(type(base), "routes_on_hash", None) is True):
            # overrides apply to the base's hashes: a router that places keys
            # some other way (Redis slots, Cassandra tokens...) would fail on every key
            raise TypeError(f"DirectoryRouter needs a hash router as base (one that places keys by "
                            f"its hasher's hash), not {type(base).__name__}")
        items = list(overrides.items()) if isinstance(overrides, Mapping) else list(overrides)
        shards = list(base.shards)
        pos = {s: i for i, s in enumerate(shards)}
        pairs: list[tuple[Any, str]] = []
        seen: dict[int, Any] = {}
        byhash: dict[int, int] = {}
        for i, it in enumerate(items):
            if not isinstance(it, tuple) or len(it) != 2:
                raise TypeError(f"overrides[{i}] must be a (key, shard id) pair")
            k = _override_key(it[0], f"overrides[{i}]")
            s = _check_shard_id(it[1], f"shard of override {k!r}")
            if s not in pos:
                pos[s] = len(shards)
                shards.append(s)
            try:
                h = int(base.hasher(k))
            except (TypeError, ValueError, OverflowError) as exc:  # e.g. an int outside [-2**63, 2**64)
                raise type(exc)(f"overrides[{i}]: {exc}") from None
            if h in seen:
                raise ValueError(f"override keys {seen[h]!r} and {k!r} have the same hash {h}")
            seen[h] = k
            byhash[h] = pos[s]
            pairs.append((k, s))
        super().__init__(shards, hasher=base.hasher, version=version, key_prefix=base.key_prefix)
        self._set("_overrides", tuple(pairs))
        hs = sorted(byhash)
        self._wrap(base)
        self._use_overrides(np.array(hs, dtype=np.uint64), np.array([byhash[h] for h in hs], dtype=np.int32))
        self._finish()

    @property
    def overrides(self) -> dict[Any, str]:
        return dict(self._overrides)

    def _doc_params(self) -> dict[str, Any]:
        return {"base": self._base.to_dict(), "overrides": [list(p) for p in self._overrides]}

    # -- planning hooks ----------------------------------------------------------

    def replanned(self, plan_base: Callable[[Router], Router], *,
                  removing: Sequence[str] = ()) -> DirectoryRouter:
        """Planned by planning the base; the overrides stay."""
        base = self._base
        for s in removing:
            if s in self.shards and s not in base.shards:
                raise ValueError(f"shard {s!r} is only named by overrides; change the overrides to remove it")
        new_base = plan_base(base)
        for key, shard in self._overrides:
            if shard not in new_base.shards and shard in base.shards:
                raise ValueError(f"override {key!r} -> {shard!r} names a shard being removed; "
                                 "change the overrides first")
        return DirectoryRouter(new_base, self.overrides, version=self.version + 1)

    def base_pair(self, new: Router) -> tuple[Router, Router] | None:
        # the overridden keys stay where they are: the moves are the bases'
        if isinstance(new, DirectoryRouter) and self.overrides == new.overrides:
            return self._base, new.base
        return None

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        base, pairs = cls._base_and_pairs(params, "directory", "overrides", "key, shard id")
        r = cls(base, pairs, version=version)
        r._check_base_hashing(hasher, key_prefix, "directory")
        return r

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset({"base"})
    cli_needs_shards = False
    cli_requires = (("base",), "--base FILE (the topology keys fall back to)")

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        return cls(load(args.base), {})
