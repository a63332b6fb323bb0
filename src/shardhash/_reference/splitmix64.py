"""SplitMix64's finaliser, the mixer of the rendezvous and Maglev references
(test oracle).
"""

from __future__ import annotations

M64 = (1 << 64) - 1


def mix64(z: int) -> int:
    """SplitMix64 finaliser."""
    z &= M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)
