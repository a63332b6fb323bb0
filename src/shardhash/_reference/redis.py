"""Redis Cluster's key slot, written plainly (test oracle).

A bit-by-bit CRC16 (XMODEM) and the hash-tag rule; use
:mod:`shardhash.compat.redis`.
"""

from __future__ import annotations

__all__ = ["crc16_xmodem", "redis_keyslot"]


def crc16_xmodem(data: bytes) -> int:
    """Bit-by-bit CRC16: poly 0x1021, init 0, MSB first, no final xor."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def redis_keyslot(key: bytes) -> int:
    """Redis Cluster slot: hash the first non-empty {tag}, else the key."""
    s = key.find(b"{")
    if s != -1:
        e = key.find(b"}", s + 1)
        if e != -1 and e != s + 1:
            key = key[s + 1:e]
    return crc16_xmodem(key) & 16383
