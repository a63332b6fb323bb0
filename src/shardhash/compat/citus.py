"""Citus hash-distributed tables, reproduced to the bit.

Citus hashes the distribution column with PostgreSQL's 32-bit hash function
for its type (``hashint8``, ``hashtext``, ... -- the value of
``worker_hash(v)``), and each shard owns an inclusive range of that signed
32-bit hash.  ``create_distributed_table`` cuts the range into ``shard_count``
equal parts, the last one taking the remainder (:func:`shard_ranges`);
splits and tenant isolation leave arbitrary ranges, which
:class:`CitusRouter` accepts as an explicit list (read them from
``pg_dist_shard.shardminvalue / shardmaxvalue``).

>>> shard_ranges(4)
[(-2147483648, -1073741825), (-1073741824, -1), (0, 1073741823), (1073741824, 2147483647)]
>>> r = CitusRouter([f"orders_{102008 + i}" for i in range(32)], "bigint")
>>> r.route(42)
'orders_102035'

Shard placement on worker nodes is not modelled (it lives in
``pg_dist_placement``): route to shards, then map shards to nodes.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..routing.base import RawKeyRouter, Router, register_router_type
from . import _native
from ._common import int_pair_seq
from ._doc import doc_field, int_pairs, raw_doc_shards
from .postgres import _check_types, _out_array, canonical_type, hash32, hash32_array

__all__ = ["HASH_TOKEN_COUNT", "MAX_SHARD_COUNT", "shard_ranges", "CitusRouter"]

#: Size of Citus' hash space (``HASH_TOKEN_COUNT``): the signed 32-bit range.
HASH_TOKEN_COUNT = 1 << 32
#: Citus' upper limit for ``shard_count``.
MAX_SHARD_COUNT = 64000

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


def shard_ranges(n: int) -> list[tuple[int, int]]:
    """The inclusive ``(min, max)`` hash ranges of ``n`` uniform Citus shards.

    Shard ``i`` starts at ``-2**31 + i * (2**32 // n)``; the last shard ends
    at ``2**31 - 1`` and so absorbs the remainder ``2**32 % n``.

    >>> shard_ranges(3)
    [(-2147483648, -715827884), (-715827883, 715827881), (715827882, 2147483647)]
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"shard count must be an int, not {n!r}")
    n = int(n)
    if not 1 <= n <= MAX_SHARD_COUNT:
        raise ValueError(f"shard count must be in [1, {MAX_SHARD_COUNT}] (Citus' limit), got {n}")
    inc = HASH_TOKEN_COUNT // n
    out = []
    for i in range(n):
        lo = _I32_MIN + i * inc
        hi = _I32_MAX if i == n - 1 else lo + inc - 1
        out.append((lo, hi))
    return out


def _check_ranges(ranges: Any, n: int) -> list[tuple[int, int]]:
    def check(i: int, lo: int, hi: int) -> None:
        if not _I32_MIN <= lo <= hi <= _I32_MAX:
            raise ValueError(f"ranges[{i}] = ({lo}, {hi}) is not an inclusive range within "
                             f"[{_I32_MIN}, {_I32_MAX}]")

    out = int_pair_seq(ranges, n, "ranges", "min, max", "shards", "bounds must be ints", check)
    order = sorted(range(n), key=lambda i: out[i])
    expect = _I32_MIN
    for i in order:
        lo, hi = out[i]
        if lo > expect:
            raise ValueError(f"hash values {expect}..{lo - 1} belong to no shard (hole before ranges[{i}])")
        if lo < expect:
            raise ValueError(f"ranges[{i}] = ({lo}, {hi}) overlaps the range before it (which ends at {expect - 1})")
        expect = hi + 1
    if expect != _I32_MAX + 1:
        raise ValueError(f"hash values {expect}..{_I32_MAX} belong to no shard (hole at the end)")
    return out


@register_router_type("citus")
class CitusRouter(RawKeyRouter):
    """Route distribution-column values to the shards of a Citus table.

    ``shards[i]`` owns the inclusive hash range ``ranges[i]``; by default the
    uniform ranges of ``len(shards)`` shards (:func:`shard_ranges`).  Explicit
    ranges must cover the 32-bit hash space exactly (a hole or an overlap is a
    ValueError).  ``type`` is the distribution column's PostgreSQL type.

    >>> r = CitusRouter(["s0", "s1", "s2", "s3"], "int4")
    >>> r.route(42), r.route_many([1, 2, 3]).tolist()
    ('s3', [0, 3, 1])
    >>> split = CitusRouter(["s0", "s1a", "s1b", "s2", "s3"], "int4",
    ...     ranges=[(-2**31, -1073741825), (-1073741824, -536870913), (-536870912, -1),
    ...             (0, 1073741823), (1073741824, 2**31 - 1)])
    >>> split.route(2)
    's3'
    """

    _doc_fields = ("type", "ranges")

    _hashes_refused = ("a Citus router hashes values with PostgreSQL's 32-bit hash, not a shardhash "
                        "hasher: use route_many(values) or route_worker_hashes(hashes)")
    _hash_refused = "a Citus router does not route shardhash hashes"

    def hashing_description(self) -> str:
        return f"PostgreSQL hash of the {self.type} value (Citus)"

    cli_options = frozenset({"pg_type"})  # shardhash topology new

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Any, load: Callable[[str], Router]) -> Router:
        return cls(shards, args.pg_type or "bigint")

    def __init__(self, shards: Sequence[str], type: str, ranges: Sequence[tuple[int, int]] | None = None,
                 *, version: int = 1) -> None:
        t = canonical_type(type)
        _check_types((t,))
        super().__init__(shards, version=version)
        n = len(self.shards)
        rs = shard_ranges(n) if ranges is None else _check_ranges(ranges, n)
        order = sorted(range(n), key=lambda i: rs[i])
        mins = np.array([rs[i][0] for i in order], dtype=np.int64)
        owner = np.array(order, dtype=np.int32)
        mins.setflags(write=False)
        owner.setflags(write=False)
        self._set("_type", t)
        self._set("_ranges", tuple(rs))
        self._set("_mins", mins)
        self._set("_owner", owner)
        keys = _native.CitusKeys(t, mins, owner)  # route/route_index of common types in C
        self._use_native_keys(keys.capsule(), keys)
        self._finish()

    @property
    def type(self) -> str:
        """The distribution column's type (PostgreSQL's name)."""
        return self._type  # type: ignore[no-any-return]

    @property
    def ranges(self) -> list[tuple[int, int]]:
        """Inclusive ``(min, max)`` hash range of each shard, in shard order."""
        return list(self._ranges)

    def _doc_params(self) -> dict[str, Any]:
        return {"type": self._type, "ranges": [list(r) for r in self._ranges]}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Any, version: int,
                     key_prefix: int | None) -> CitusRouter:
        shards = raw_doc_shards(shards, key_prefix, "a Citus router")
        ranges = int_pairs(params["ranges"], "params.ranges", "min, max")
        typ = params["type"]
        with doc_field("type" if not isinstance(typ, str) else "ranges"):
            return cls(shards, typ, ranges, version=version)

    def shard_of_hash(self, h: int) -> int:
        """Shard index owning the 32-bit hash value ``h`` (``worker_hash`` output)."""
        if isinstance(h, bool) or not isinstance(h, numbers.Integral) or not _I32_MIN <= int(h) <= _I32_MAX:
            raise ValueError(f"a Citus hash is a signed 32-bit int, not {h!r}")
        pos = int(np.searchsorted(self._mins, int(h), side="right")) - 1
        return int(self._owner[pos])

    def _route_index_slow(self, value: Any) -> int:
        # route()/route_index() of the values the compiled path leaves here
        if value is None:
            raise ValueError("a Citus distribution column cannot be NULL")
        return self.shard_of_hash(hash32(value, self._type))

    def route_worker_hashes(self, hashes: Any, *, out: np.ndarray | None = None) -> np.ndarray:
        """Shard indices (int32) for 32-bit hash values (``worker_hash`` outputs)."""
        h = np.asarray(hashes)
        if h.dtype.kind not in "iu":
            raise TypeError(f"hashes must be integers, not {h.dtype}")
        if h.size and (int(h.min()) < _I32_MIN or int(h.max()) > _I32_MAX):
            raise ValueError("Citus hashes are signed 32-bit ints")
        pos = np.searchsorted(self._mins, h.astype(np.int64, copy=False), side="right") - 1
        res = _out_array(out, len(pos), np.int32)
        np.take(self._owner, pos, out=res)
        return res

    def route_many(self, values: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Shard indices (int32) of many distribution-column values."""
        return self._route_keys(values, out, threads, lambda: self.route_worker_hashes(
            hash32_array(values, self._type, threads=threads), out=out))

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """Inclusive ``(lo, hi, shard index)`` ranges covering ``[0, 2**64-1]``:
        the Citus hash ``h`` is the interval ``[(h + 2**31) * 2**32,
        (h + 2**31 + 1) * 2**32 - 1]``, so ``shardhash.plan`` can report the
        hash ranges that change shard (``lo // 2**32 - 2**31`` gives back
        the Citus hash)."""
        out = []
        for i, (lo, hi) in enumerate(self._ranges):
            out.append(((lo - _I32_MIN) << 32, ((hi - _I32_MIN + 1) << 32) - 1, i))
        out.sort()
        return out
