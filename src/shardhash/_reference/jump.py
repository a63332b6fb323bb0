"""Jump consistent hash (Lamping & Veach 2014), transcribed from the paper
(test oracle).
"""

from __future__ import annotations

from shardhash._reference.splitmix64 import M64


def jump(key: int, n: int) -> int:
    """Lamping & Veach, transcribed from the paper."""
    b, j = -1, 0
    while j < n:
        b = j
        key = (key * 2862933555777941757 + 1) & M64
        j = int((b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b
