"""MementoHash, written from docs/routers.md 2.14 alone (test-only oracle).

Jump consistent hash over a b-array of ``n`` buckets plus a replacement record
of removed buckets (Coluzzi et al., arXiv 2306.09783).  With nothing removed a
key's bucket is exactly jump's.
"""

from __future__ import annotations

MASK = (1 << 64) - 1
SALT = 0x6D656D656E746F31  # "memento1"
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z: int) -> int:
    """The SplitMix64 finaliser (docs/routers.md, section 2.1)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def jump(h: int, n: int) -> int:
    """Lamping & Veach's jump consistent hash, as docs/routers.md states it."""
    b, j = -1, 0
    while j < n:
        b = j
        h = (h * 2862933555777941757 + 1) & MASK
        j = int(float(b + 1) * (2147483648.0 / float((h >> 33) + 1)))
    return b


def rehash(h: int, b: int) -> int:
    """The re-hash of key hash ``h`` after it met removed bucket ``b``."""
    return mix64(((h ^ SALT) + b * GOLDEN) & MASK)


class Memento:
    """A b-array of ``n`` buckets and the record of the removed ones."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError("n must be >= 1")
        self.n = n
        self.replacer: dict[int, int] = {}  # removed bucket -> working count after its removal
        self.prev: dict[int, int] = {}      # removed bucket -> the bucket removed before it
        self.last_removed = n

    def working(self) -> list[int]:
        return [b for b in range(self.n) if b not in self.replacer]

    def remove(self, b: int) -> None:
        w = self.n - len(self.replacer)
        if not 0 <= b < self.n or b in self.replacer or w <= 1:
            raise ValueError(f"bucket {b} cannot be removed")
        if not self.replacer and b == self.n - 1:
            self.n = b          # plain jump loses its last bucket
            self.last_removed = b
            return
        self.replacer[b] = w - 1
        self.prev[b] = self.last_removed
        self.last_removed = b

    def restore(self) -> int:
        b = self.last_removed
        if b >= self.n:
            self.n = b + 1
            self.last_removed = b + 1
            return b
        self.last_removed = self.prev.pop(b)
        del self.replacer[b]
        return b

    def bucket(self, h: int) -> int:
        r = self.replacer
        b = jump(h, self.n)
        c = r.get(b, -1)
        while c >= 0:
            b = (rehash(h, b) * c) >> 64
            nxt = r.get(b, -1)
            while nxt >= c:
                b, nxt = nxt, r.get(nxt, -1)
            c = nxt
        return b
