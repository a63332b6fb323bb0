"""Guava's ``Hashing.consistentHash(long, int)``, reproduced to the bit.

Guava uses Lamping and Veach's jump consistent hash with a linear
congruential generator, in Java ``int`` and ``double`` arithmetic.  One
quirk makes it differ from the jump hash of the paper (and of
``jump-consistent-hash``): when the generator's top 31 bits are all ones,
``(int) (state >>> 33) + 1`` overflows, and the loop stops early.  This
happens for about one (key, buckets) pair in 50 million, and is reproduced:

>>> consistent_hash(2687259751451158933, 1000000007)
195
>>> [consistent_hash(i, 100) for i in range(6)]
[0, 55, 62, 8, 45, 59]
>>> consistent_hash(-1, 100)
92

``key`` is a Java ``long``: an int in [-2**63, 2**64-1], where values
>= 2**63 stand for their two's complement (``2**64-1`` is ``-1``).
``buckets`` is a Java ``int`` >= 1.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from shardhash._parallel import kernel_array
from shardhash.routing._kernels import prepare_out

from . import _native

__all__ = ["consistent_hash", "consistent_hash_array"]

_I64_MIN = -(1 << 63)
_U64_MAX = (1 << 64) - 1


def _describe(value: Any) -> str:
    r = repr(value)
    return f"{r[:57] + '...' if len(r) > 60 else r} (type {type(value).__name__})"


def _check_buckets(buckets: Any) -> int:
    if isinstance(buckets, (bool, np.bool_)) or not isinstance(buckets, numbers.Integral):
        raise TypeError(f"buckets must be an int, not {_describe(buckets)}")
    b = int(buckets)
    if not 1 <= b <= (1 << 31) - 1:
        raise ValueError(f"buckets must be in [1, 2**31-1] (a positive Java int), got {b}")
    return b


def _java_long(key: Any) -> int:
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, numbers.Integral):
        raise TypeError(f"key must be an int (a Java long), not {_describe(key)}")
    k = int(key)
    if not _I64_MIN <= k <= _U64_MAX:
        raise ValueError(f"key {k} does not fit in 64 bits")
    return k - (1 << 64) if k >= 1 << 63 else k


def consistent_hash(key: int, buckets: int) -> int:
    """``Hashing.consistentHash(key, buckets)``: the bucket in ``[0, buckets)``.

    >>> consistent_hash(1, 100), consistent_hash(2, 100001)
    (55, 80343)
    """
    return int(_native.guava_consistent_hash(_java_long(key), _check_buckets(buckets)))


def consistent_hash_array(keys: Any, buckets: int, *, out: np.ndarray | None = None,
                          threads: int | None = None) -> np.ndarray:
    """:func:`consistent_hash` over an array of keys, as ``int32``.

    ``keys``: a list of ints or an integer numpy array (``uint64`` values
    are taken as their two's complement, like Java).  The kernel releases
    the GIL; ``threads=None`` uses every core for large inputs.

    >>> consistent_hash_array([0, 1, 2, 3], 100).tolist()
    [0, 55, 62, 8]
    """
    b = _check_buckets(buckets)
    if isinstance(keys, (str, bytes)) or np.isscalar(keys):
        raise TypeError(f"keys must be a sequence or array of ints, not {_describe(keys)}")
    if hasattr(keys, "to_numpy") and not isinstance(keys, np.ndarray):
        keys = keys.to_numpy()
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            raise ValueError(f"keys must be 1-D, got shape {keys.shape}")
        if keys.dtype.kind == "O":
            arr = np.fromiter((_java_long(k) for k in keys), dtype=np.int64, count=len(keys))
        elif keys.dtype.kind == "u":
            arr = kernel_array(keys.astype(np.uint64, copy=False)).view(np.int64)
        elif keys.dtype.kind == "i":
            arr = kernel_array(keys, dtype=np.int64)
        else:
            raise TypeError(f"keys must be integers, not an array of {keys.dtype}")
    else:
        items = list(keys)
        arr = np.fromiter((_java_long(k) for k in items), dtype=np.int64, count=len(items))
    n = len(arr)
    res: np.ndarray = prepare_out(out, n)
    if out is not None and np.may_share_memory(out, arr):
        raise ValueError("out must not share memory with the keys")
    _native.guava_consistent_hash_array(arr, b, res, threads)
    return res
