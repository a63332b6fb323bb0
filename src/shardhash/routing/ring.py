"""Consistent-hash ring: a key belongs to the first token at or after its hash."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from shardhash import _limits

from .base import (
    U64_MAX,
    Hasher,
    Router,
    _check_int,
    _check_weights,
    _default_weights,
    _merge_ranges,
    _weights_doc,
    _width,
    register_router_type,
)

__all__ = ["RingRouter", "ring_owned_ranges"]


def ring_owned_ranges(tokens: Sequence[int] | np.ndarray,
                      owners: Sequence[int] | np.ndarray) -> list[tuple[int, int, int]]:
    """Ownership of the hash space by a ring (token ``i`` owns the arc
    ``(tokens[i-1], tokens[i]]``, wrapping): ``(lo, hi, owner)`` inclusive
    intervals covering [0, 2**64 - 1] in order, adjacent intervals of one
    owner merged.  ``tokens`` sorted strictly increasing.

    >>> ring_owned_ranges([20, 50], [0, 1])
    [(0, 20, 0), (21, 50, 1), (51, 18446744073709551615, 0)]
    """
    t = [int(x) for x in tokens]
    o = [int(x) for x in owners]
    if not t or len(t) != len(o):
        raise ValueError("a ring needs as many owners as tokens, and at least one token")
    ranges = [(0, t[0], o[0])]
    ranges += [(t[i - 1] + 1, t[i], o[i]) for i in range(1, len(t))]
    if t[-1] < U64_MAX:
        ranges.append((t[-1] + 1, U64_MAX, o[0]))
    return _merge_ranges(ranges)


_COLLISION_RULES = ("error", "first")


@register_router_type("ring")
class RingRouter(Router):
    """Consistent-hash ring: a key belongs to the first token at or after its hash.

    Each shard ``s`` gets ``floor(vnodes * weight(s) + 0.5)`` tokens (at least
    one), token ``i`` at position ``hasher("s:i")`` (the router's hasher
    applied to the string ``f"{s}:{i}"``), so adding a shard never moves the
    others' tokens.  ``tokens={"A": [20, ...], ...}`` gives explicit positions
    instead.  Two tokens on one position are an error naming both
    (``collisions="error"``), or with ``collisions="first"`` the token whose
    ``(shard id, token number)`` sorts first keeps it.

    ``RingRouter(shards, *, vnodes=None, weights=None, tokens=None,
    collisions="error", hasher=None, version=1, key_prefix=None)``:
    ``vnodes`` tokens per unit of weight (default 256, up to 2**20);
    ``weights`` a mapping shard id -> positive weight (missing shards weigh
    1); ``tokens`` explicit positions instead of ``vnodes``/``weights``.
    ``hasher`` (default ``Hasher()``: xxh3_64, seed 0), ``version`` (default
    1) and ``key_prefix`` (default None: the whole key) are as for every
    router (see :class:`Router`).

    >>> r = RingRouter(["A", "B", "C", "D"], tokens={"A": [20], "B": [50], "C": [80], "D": [40]})
    >>> [r.shards[i] for i in r.route_hashes([35, 40, 20, 21, 45, 51, 81, 90, 0])]
    ['D', 'D', 'A', 'D', 'B', 'C', 'A', 'A', 'A']
    """

    _collisions: str
    _vnodes: int | None
    _weights: dict[str, float] | None
    _explicit: dict[str, list[int]] | None
    _tokens: np.ndarray
    _owners: np.ndarray

    _doc_fields: ClassVar[tuple[str, ...]] = ("vnodes", "weights", "tokens", "collisions")
    replica_rule = "ring"

    def __init__(self, shards: Iterable[str], *, vnodes: int | None = None,
                 weights: Mapping[str, float] | None = None,
                 tokens: Mapping[str, Sequence[int]] | None = None, collisions: str = "error",
                 hasher: Hasher | None = None, version: int = 1, key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        if collisions not in _COLLISION_RULES:
            raise ValueError(f"collisions must be one of {_COLLISION_RULES}, got {collisions!r}")
        self._set("_collisions", collisions)
        index = {s: i for i, s in enumerate(self.shards)}
        pos_l: Any = []           # token positions (list of ints, or a uint64 array)
        sid_l: list[int] = []     # owner's shard index
        num_l: list[int] = []     # token number within its shard
        if tokens is not None:
            if vnodes is not None or weights is not None:
                raise ValueError("give either tokens= or vnodes=/weights=, not both")
            if not isinstance(tokens, Mapping):
                raise TypeError(f"tokens must be a mapping shard id -> positions, not {type(tokens).__name__}")
            known = set(self.shards)
            for s in tokens:
                if s not in known:
                    raise ValueError(f"tokens names unknown shard {s!r}")
            explicit: dict[str, list[int]] = {}
            total = 0
            for s in self.shards:
                if s not in tokens:
                    raise ValueError(f"shard {s!r} has no tokens")
                given = tokens[s]
                if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
                    raise TypeError(f"tokens[{s!r}] must be a list of ints")
                plist = [_check_int(p, f"tokens[{s!r}][{i}]", 0, U64_MAX) for i, p in enumerate(given)]
                if not plist:
                    raise ValueError(f"shard {s!r} has no tokens")
                total += len(plist)
                _limits.check_size(total, _limits.MAX_RING_TOKENS, "ring tokens")
                explicit[s] = plist
                pos_l += plist
                sid_l += [index[s]] * len(plist)
                num_l += range(len(plist))
            self._set("_vnodes", None)
            self._set("_weights", None)
            self._set("_explicit", explicit)
            _limits.reserve(total, _limits.MAX_RING_TOKENS, "ring tokens")
        else:
            v = 256 if vnodes is None else _check_int(vnodes, "vnodes", 1, 1 << 20)
            w = _check_weights(weights, self.shards)
            self._set("_vnodes", v)
            self._set("_weights", w)
            self._set("_explicit", None)
            # Count every shard's tokens before building any (a weight of
            # 1e12 must not build a trillion token names first).
            scaled = [v * (w.get(s, 1.0) if w else 1.0) + 0.5 for s in self.shards]
            if not all(math.isfinite(x) for x in scaled):  # vnodes * weight overflowed a float
                raise ValueError(f"ring tokens: vnodes={v} times a weight is beyond "
                                 f"the limit of {_limits.MAX_RING_TOKENS:,}")
            counts = [max(1, math.floor(x)) for x in scaled]
            _limits.reserve(sum(counts), _limits.MAX_RING_TOKENS,
                            f"ring tokens ({len(counts)} shards, vnodes={v}, weights)")
            idents: list[str] = []
            for k, s in enumerate(self.shards):
                count = counts[k]
                idents += [f"{s}:{i}" for i in range(count)]
                sid_l += [k] * count
                num_l += range(count)
            # Token position = hasher(f"{shard}:{i}"); hash_array gives hasher(x) for each x.
            pos_l = self.hasher.hash_array(idents)
        pos = np.asarray(pos_l, dtype=np.uint64)
        sid = np.array(sid_l, dtype=np.int32)
        num = np.array(num_l, dtype=np.int64)
        # Sort by (position, shard id as a string, token number).
        id_rank = np.empty(len(self.shards), dtype=np.int64)
        id_rank[sorted(range(len(self.shards)), key=lambda k: self.shards[k])] = np.arange(len(self.shards))
        order = np.lexsort((num, id_rank[sid], pos))
        pos, sid, num = pos[order], sid[order], num[order]
        dup = pos[1:] == pos[:-1]
        if dup.any():
            same = dup & (sid[1:] == sid[:-1])
            bad = np.flatnonzero(same if collisions == "first" else dup)
            if bad.size:
                j = int(bad[0])
                a, b = f"{self.shards[sid[j]]}:{num[j]}", f"{self.shards[sid[j + 1]]}:{num[j + 1]}"
                raise ValueError(f"ring tokens collide: {a} and {b} both sit at position {int(pos[j])}")
            keep = np.concatenate([[True], ~dup])  # of the tokens at one position, the first stays
            pos, sid = pos[keep], sid[keep]
        t, o = pos, sid
        tok, own = self._use_ring(t, o, _width(self.hasher))
        self._set("_tokens", tok)
        self._set("_owners", own)
        self._finish()

    @property
    def vnodes(self) -> int | None:
        """Tokens per unit of weight (None for explicit tokens)."""
        return self._vnodes

    @property
    def weights(self) -> dict[str, float] | None:
        return dict(self._weights) if self._weights else None

    @property
    def tokens(self) -> np.ndarray:
        """Token positions, sorted (read-only uint64 array)."""
        return self._tokens

    @property
    def collisions(self) -> str:
        """The collision rule: ``"error"`` or ``"first"``."""
        return self._collisions

    @property
    def explicit_tokens(self) -> dict[str, tuple[int, ...]] | None:
        """The positions given with ``tokens=`` (shard id -> tuple of ints, in
        the order given, shards in ``shards`` order), or None for a ring whose
        positions come from ``vnodes``/``weights``.  A fresh dict each time.

        >>> RingRouter(["A", "B"], tokens={"A": [20, 70], "B": [50]}).explicit_tokens
        {'A': (20, 70), 'B': (50,)}
        >>> RingRouter(["A", "B"], vnodes=4).explicit_tokens is None
        True
        """
        if self._explicit is None:
            return None
        return {s: tuple(p) for s, p in self._explicit.items()}

    @property
    def token_owners(self) -> np.ndarray:
        """Shard index owning each token (read-only int32 array)."""
        return self._owners

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """``(lo, hi, shard index)`` inclusive hash intervals covering [0, 2**64 - 1]."""
        return ring_owned_ranges(self._tokens, self._owners)

    # -- planning hooks ----------------------------------------------------------

    range_label = "token range"

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> RingRouter:
        """Every kept shard keeps its tokens: ``"<id>:<n>"`` positions do not
        depend on the other shards, and explicit positions are carried over
        (``tokens`` gives the new shards' positions)."""
        common: dict[str, Any] = {"hasher": self.hasher, "collisions": self._collisions,
                                  "version": self.version + 1 if version is None else version,
                                  "key_prefix": self.key_prefix}
        old_tokens = self.explicit_tokens
        if old_tokens:
            t = {s: list(v) for s, v in old_tokens.items() if s in shards}
            for s in shards:
                if s not in t:
                    if tokens is None or s not in tokens:
                        raise ValueError(f"this ring places tokens explicitly: give tokens={{{s!r}: [...]}} "
                                         "for the new shard")
                    t[s] = list(tokens[s])
            return RingRouter(list(shards), tokens=t, **common)
        if tokens:
            raise ValueError("tokens= only applies to rings built with explicit tokens")
        return RingRouter(list(shards), vnodes=self._vnodes, weights=_default_weights(weights), **common)

    def _doc_params(self) -> dict[str, Any]:
        if self._explicit is not None:
            return {"tokens": {s: list(p) for s, p in self._explicit.items()},
                    "collisions": self._collisions}
        return {"vnodes": self._vnodes, "weights": _weights_doc(self._weights),
                "collisions": self._collisions}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        collisions = params.get("collisions", "error")
        if params.get("tokens") is not None:
            return cls(shards, tokens=params["tokens"], collisions=collisions, hasher=hasher,
                       version=version, key_prefix=key_prefix)
        return cls(shards, vnodes=_check_int(params["vnodes"], "ring params: vnodes"), weights=params.get("weights"),
                   collisions=collisions, hasher=hasher, version=version, key_prefix=key_prefix)

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset({"vnodes", "shard_weights"})
    cli_hashes = True

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        return cls(shards, vnodes=args.vnodes or 256, weights=weights, hasher=hasher)
