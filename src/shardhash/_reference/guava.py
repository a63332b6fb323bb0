"""Pure-Python reference of Guava's ``Hashing.consistentHash`` (test oracle).

Deliberately literal: Java's wrapping ``long`` and ``int`` arithmetic and its
saturating ``(int)`` cast of a double are spelled out step by step.  Used by
the tests to check the compiled kernel; use :mod:`shardhash.compat.guava`.
"""

from __future__ import annotations

import math

_MASK64 = (1 << 64) - 1
_LCG = 2862933555777941757


def _java_int(x: int) -> int:
    """Wrap an integer to Java's 32-bit ``int``."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _java_d2i(d: float) -> int:
    """Java's ``(int) d``: NaN -> 0, saturating, truncation toward zero."""
    if math.isnan(d):
        return 0
    if d >= 2147483647.0:
        return 2147483647
    if d <= -2147483648.0:
        return -2147483648
    return int(d)


def consistent_hash(key: int, buckets: int) -> int:
    if buckets <= 0:
        raise ValueError(f"buckets must be positive: {buckets}")
    state = key & _MASK64
    candidate = 0
    while True:
        state = (_LCG * state + 1) & _MASK64
        top_plus_one = _java_int((state >> 33) + 1)      # int arithmetic: may wrap
        d = float(top_plus_one) / 2147483648.0
        nxt = _java_d2i(float(candidate + 1) / d)
        if 0 <= nxt < buckets:
            candidate = nxt
        else:
            return candidate
