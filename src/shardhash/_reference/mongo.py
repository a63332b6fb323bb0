"""MongoDB's hashed-index value of a number, written plainly (test oracle).

``safeNumberLongForHash`` then MD5 over the seed, the BSON type and the
int64; use :mod:`shardhash.compat.mongo`.
"""

from __future__ import annotations

import hashlib
import math
import struct

__all__ = ["mongo_number_to_long", "mongo_hash_number"]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def mongo_number_to_long(x: float | int) -> int:
    """safeNumberLongForHash: NaN -> 0, 2**63 -> MIN, clamp, truncate."""
    if isinstance(x, int):
        return max(_INT64_MIN, min(_INT64_MAX, x))
    if math.isnan(x):
        return 0
    if x == 2.0 ** 63:
        return _INT64_MIN
    if x > 2.0 ** 63:
        return _INT64_MAX
    if x < -(2.0 ** 63):
        return _INT64_MIN
    return int(x)


def mongo_hash_number(x: float | int) -> int:
    """md5(seed 0 || type 10 || int64 LE), first 8 digest bytes LE, signed."""
    msg = struct.pack("<iiq", 0, 10, mongo_number_to_long(x))
    return int(struct.unpack("<q", hashlib.md5(msg).digest()[:8])[0])
