"""Ranges of the raw key (ints or strings)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .base import (
    Hasher,
    RawKeyRouter,
    Router,
    SplitRanges,
    TopologyOptionError,
    _check_int,
    _describe,
    _owners_of,
    _route_each,
    _unmasked,
    prepare_out,
    register_router_type,
)

__all__ = ["RangeRouter"]


def _split_kind(splits: Sequence[Any]) -> str:
    kinds = set()
    for i, s in enumerate(splits):
        if isinstance(s, bool) or not isinstance(s, (int, str, np.integer)):
            raise TypeError(f"splits[{i}] = {_describe(s)} must be an int or a str")
        kinds.add("str" if isinstance(s, str) else "int")
    if len(kinds) > 1:
        raise TypeError("splits mix ints and strings")
    return kinds.pop() if kinds else "int"


@register_router_type("range")
class RangeRouter(SplitRanges[Any], RawKeyRouter):
    """Ranges of the raw key (ints or strings), lower bounds inclusive.

    ``len(shards) == len(splits) + 1``; ``shards[i]`` owns the keys ``k``
    with ``splits[i-1] <= k < splits[i]``.  Strings compare by code point.
    The hasher is kept for the protocol but not used.  ``RangeRouter(splits,
    shards, *, hasher=None, version=1, key_prefix=None)``: ``version`` as for
    every router; with ``key_prefix`` a tuple key is ranged on its first
    ``key_prefix`` parts.

    >>> r = RangeRouter([1_000_000, 2_000_000], ["a", "b", "c"])
    >>> r.route(999_999), r.route(1_000_000), r.route(2_000_000)
    ('a', 'b', 'c')
    """

    _split_type: str
    _owner_arr: np.ndarray

    def __init__(self, splits: Sequence[int] | Sequence[str], shards: Sequence[str], *,
                 hasher: Hasher | None = None, version: int = 1, key_prefix: int | None = None) -> None:
        if isinstance(splits, (str, bytes)) or not isinstance(splits, Iterable):
            raise TypeError(f"splits must be a sequence of ints or strings, not {type(splits).__name__}")
        if isinstance(shards, (str, bytes)) or not isinstance(shards, Iterable):
            raise TypeError(f"shards must be a sequence of shard ids, not {type(shards).__name__}")
        sp: list[Any] = list(splits)
        kind = _split_kind(sp)
        if kind == "int":
            sp = [int(s) for s in sp]
        owners = list(shards)
        if len(owners) != len(sp) + 1:
            raise ValueError(f"{len(sp)} splits need {len(sp) + 1} shards, got {len(owners)}")
        for i in range(1, len(sp)):
            if not sp[i - 1] < sp[i]:
                raise ValueError(f"splits must be strictly increasing: splits[{i - 1}] = {sp[i - 1]!r}, "
                                 f"splits[{i}] = {sp[i]!r}")
        uniq, idx = _owners_of(owners, "shards")
        super().__init__(uniq, hasher=hasher, version=version, key_prefix=key_prefix)
        self._set_ranges(sp, idx)
        self._set("_split_type", kind)
        self._set("_owner_arr", np.array(idx, dtype=np.int32))
        self._use_key_ranges(self._splits, idx)  # route/route_index of exact ints/str in C
        self._finish()

    @classmethod
    def from_sample(cls, keys: Iterable[Any], n: int, *, shards: Sequence[str] | None = None,
                    hasher: Hasher | None = None, version: int = 1) -> RangeRouter:
        """Split points at the sample's quantiles so that ``n`` ranges hold equal data.

        >>> r = RangeRouter.from_sample(range(1000), 4)
        >>> r.splits
        (250, 500, 750)
        """
        n = _check_int(n, "n", 1, 1 << 20)
        sample = list(keys.tolist() if isinstance(keys, np.ndarray) else keys)
        if not sample:
            raise ValueError("the sample is empty")
        kind = _split_kind(sample)
        if kind == "int":
            sample = [int(k) for k in sample]
        sample.sort()
        splits: list[Any] = []
        for i in range(1, n):
            s = sample[(len(sample) * i) // n]
            if splits and s <= splits[-1] or (not splits and s <= sample[0]):
                raise ValueError(f"the sample has too few distinct keys for {n} ranges")
            splits.append(s)
        if shards is None:
            shards = [f"range-{i}" for i in range(n)]
        return cls(splits, shards, hasher=hasher, version=version)

    def _key(self, key: Any) -> Any:
        p = self.key_prefix
        if p is not None:
            if isinstance(key, tuple):
                if len(key) < p:
                    raise ValueError(f"key {key!r} has fewer than {p} parts")
                key = key[0] if p == 1 else key[:p]
            elif p != 1:
                raise TypeError(f"this router routes on the first {p} parts of a tuple key; got {key!r}")
        if self._split_type == "int":
            if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
                raise TypeError(f"this RangeRouter splits integer keys; got {_describe(key)} "
                                f"(type {type(key).__name__})")
        elif not isinstance(key, str):
            raise TypeError(f"this RangeRouter splits string keys; got {_describe(key)} "
                            f"(type {type(key).__name__})")
        return key

    def _route_index_slow(self, key: Any) -> int:
        # route()/route_index() of keys the compiled path leaves here: numpy
        # integers, ints beyond 64 bits, tuple keys (key_prefix), and every
        # key of the wrong type (which raises)
        return self._range_owners[bisect.bisect_right(self._splits, self._key(key))]

    def route_many(self, keys: Any, *, out: np.ndarray | None = None,
                   threads: int | None = None) -> np.ndarray:
        if isinstance(keys, np.ma.MaskedArray):
            keys = _unmasked(keys, "keys")
        if isinstance(keys, np.ndarray) and self.key_prefix is None and keys.ndim == 1:
            k = keys.dtype.kind
            if self._split_type == "int" and k in "iu":
                info = np.iinfo(keys.dtype)
                below = sum(1 for s in self._splits if s < info.min)
                inside = np.array([s for s in self._splits if info.min <= s <= info.max], dtype=keys.dtype)
                r = np.searchsorted(inside, keys, side="right") + below
                res = self._owner_arr[r]
                o = prepare_out(out, keys.shape[0])
                o[:] = res
                return o
            if self._split_type == "str" and k == "U":
                sp = np.array(self._splits, dtype=str)
                if sp.tolist() == list(self._splits):
                    r = np.searchsorted(sp, keys, side="right")
                    o = prepare_out(out, keys.shape[0])
                    o[:] = self._owner_arr[r]
                    return o
                # numpy drops trailing NULs: a split such as "b\0" would compare
                # as "b"; route the keys (as numpy gives them) one by one
                keys = keys.tolist()
            elif k != "O":
                want = "integer" if self._split_type == "int" else "string"
                raise TypeError(f"this RangeRouter splits {want} keys; got an array of dtype {keys.dtype}")
        return _route_each(self.route_index, keys, out, "keys", (TypeError,))

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        return cls(params["splits"], params["owners"], hasher=hasher, version=version,
                   key_prefix=key_prefix)

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset({"splits"})
    cli_requires = (("splits",), "--splits")

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        from shardhash._keytypes import parse_text

        kind = args.key_type if isinstance(args.key_type, str) else None
        if kind not in ("int", "str"):
            raise TopologyOptionError("topology new range: give --key-type int or str (the splits are keys)")
        try:
            sp = [parse_text(x, kind) for x in args.splits.split(",")]
        except ValueError as exc:
            raise TopologyOptionError(f"--splits: {exc}") from None
        return cls(sp, shards)
