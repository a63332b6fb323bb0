"""Resharding by id watermark."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .base import (
    U64_MAX,
    Hasher,
    RawKeyRouter,
    Router,
    _check_int,
    _describe,
    _from_doc,
    _unmasked,
    prepare_out,
    register_router_type,
    unalias,
)

__all__ = ["WatermarkRouter"]


@register_router_type("watermark")
class WatermarkRouter(RawKeyRouter):
    """Resharding by id watermark: integer ids >= ``watermark`` follow ``new``,
    smaller ids follow ``old``.  ``lowered(k)`` gives the next version as the
    background copy moves older ids.

    >>> old = ModuloRouter(["a", "b"]); new = JumpRouter(["a", "b", "c"])
    >>> r = WatermarkRouter(old, new, 1000)
    >>> r.route(5) == old.route(5), r.route(5000) == new.route(5000)
    (True, True)
    """

    _old: Router
    _new: Router
    _wm: int
    _new_map: np.ndarray

    _doc_fields = ("old", "new", "watermark")

    def __init__(self, old: Router, new: Router, watermark: int, *, version: int = 1) -> None:
        for name, r in (("old", old), ("new", new)):
            if not isinstance(r, Router):
                raise TypeError(f"{name} must be a Router, not {type(r).__name__}")
            if r.key_prefix is not None:
                raise ValueError(f"{name} routes on a key prefix; a watermark needs integer ids")
            try:  # a router that cannot route an integer id would fail on every key
                r.route_index(0)
            except TypeError as e:
                raise TypeError(f"{name} ({type(r).__name__}) cannot route integer ids: {e}") from None
            except (ValueError, OverflowError):
                pass  # 0 may be outside what it routes; other ids are not
        wm = _check_int(watermark, "watermark", -(1 << 63), U64_MAX)
        shards = list(old.shards)
        pos = {s: i for i, s in enumerate(shards)}
        for s in new.shards:
            if s not in pos:
                pos[s] = len(shards)
                shards.append(s)
        super().__init__(shards, hasher=new.hasher, version=version)
        self._set("_old", old)
        self._set("_new", new)
        self._set("_wm", wm)
        self._set("_new_map", np.array([pos[s] for s in new.shards], dtype=np.int32))
        self._use_watermark(old, new, wm, self._new_map)  # route/route_index of exact ints in C
        self._finish()

    @property
    def old(self) -> Router:
        return self._old

    @property
    def new(self) -> Router:
        return self._new

    @property
    def watermark(self) -> int:
        return self._wm

    def lowered(self, watermark: int, *, version: int | None = None) -> WatermarkRouter:
        """The same migration with the watermark moved (version + 1 by default)."""
        return WatermarkRouter(self._old, self._new, watermark,
                               version=self.version + 1 if version is None else version)

    @staticmethod
    def _id(key: Any) -> int:
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
            raise TypeError(f"WatermarkRouter routes integer ids; got {_describe(key)} "
                            f"(type {type(key).__name__})")
        return int(key)

    def _route_index_slow(self, key: Any) -> int:
        # route()/route_index() of ids the compiled path leaves here (numpy
        # integers, ids beyond 64 bits) and of every non-integer key (raises)
        k = self._id(key)
        if k >= self._wm:
            return int(self._new_map[self._new.route_index(k)])
        return self._old.route_index(k)

    def route_many(self, keys: Any, *, out: np.ndarray | None = None,
                   threads: int | None = None) -> np.ndarray:
        if isinstance(keys, np.ma.MaskedArray):
            keys = _unmasked(keys, "keys")
        a = keys if isinstance(keys, np.ndarray) else None
        if a is None:
            if not isinstance(keys, Iterable) or isinstance(keys, (str, bytes)):
                raise TypeError(f"keys must be an iterable of integer ids, not {type(keys).__name__}")
            items = list(keys)
            for i, k in enumerate(items):
                if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
                    raise TypeError(f"keys[{i}]: WatermarkRouter routes integer ids; got {_describe(k)}")
            try:
                a = np.array(items, dtype=np.int64) if items else np.empty(0, dtype=np.int64)
            except OverflowError:
                a = None
                if min(items) >= 0:  # (NumPy 1.x would wrap a negative id into uint64 instead of raising)
                    try:
                        a = np.array(items, dtype=np.uint64)
                    except OverflowError:
                        pass
                if a is None:  # ids on both sides of the int64/uint64 ranges
                    o = prepare_out(out, len(items))
                    for i, k in enumerate(items):
                        o[i] = self.route_index(k)
                    return o
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise TypeError(f"WatermarkRouter routes integer ids; got an array of dtype {a.dtype}")
        o = prepare_out(out, a.shape[0])
        a = unalias(a, o)  # o is written in two passes, a read in both
        wm = self._wm
        info = np.iinfo(a.dtype)
        if wm <= info.min:
            mask = np.ones(a.shape[0], dtype=bool)
        elif wm > info.max:
            mask = np.zeros(a.shape[0], dtype=bool)
        else:
            mask = a >= a.dtype.type(wm)
        if mask.any():
            o[mask] = self._new_map[self._new.route_many(a[mask], threads=threads)]
        if not mask.all():
            o[~mask] = self._old.route_many(a[~mask], threads=threads)
        return o

    def _doc_params(self) -> dict[str, Any]:
        return {"old": self._old.to_dict(), "new": self._new.to_dict(), "watermark": self._wm}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Hasher,
                     version: int, key_prefix: int | None) -> Router:
        r = cls(_from_doc(params["old"], "watermark old"), _from_doc(params["new"], "watermark new"),
                params["watermark"], version=version)
        if r.hasher != hasher or key_prefix is not None:
            raise ValueError("watermark document: 'hasher' must be the new router's, no key_prefix")
        return r

    # -- `shardhash topology new` --------------------------------------------------

    cli_options = frozenset({"old", "new", "watermark"})
    cli_needs_shards = False
    cli_requires = (("old", "new", "watermark"), "--old FILE --new FILE --watermark N")

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Hasher | None, load: Callable[[str], Router]) -> Router:
        return cls(load(args.old), load(args.new), args.watermark)
