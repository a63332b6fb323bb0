"""twemproxy's key hashes (its ``hash:`` setting), computed over many keys at
once with numpy.

Keys are grouped by length; each group is a matrix (keys x bytes) and every
hash runs column by column over all the group's keys, so no Python code runs
per key.  The functions follow twemproxy's ``src/hashkit`` as built for
x86-64, where C ``char`` is signed: where twemproxy widens a key byte to an
integer without going through an unsigned type, a byte >= 0x80 is
sign-extended (``one_at_a_time``, ``fnv1_32``, ``fnv1a_32``, ``fnv1_64``, the
third tail byte of ``hsieh``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["TWEMPROXY_HASHES", "hash_matrix", "hash_offsets"]

_U32 = np.uint32
_U64 = np.uint64


def _crc32_table() -> np.ndarray:
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        t.append(c)
    return np.array(t, dtype=_U32)


def _crc16_table() -> np.ndarray:  # CRC-16/XMODEM: polynomial 0x1021, most significant bit first
    t = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021 if c & 0x8000 else c << 1) & 0xFFFF
        t.append(c)
    return np.array(t, dtype=_U32)


_CRC32 = _crc32_table()
_CRC16 = _crc16_table()


def _sx32(col: np.ndarray) -> np.ndarray:
    """A C ``char`` byte widened to uint32: bytes >= 0x80 sign-extended."""
    c = col.astype(_U32)
    return np.where(c >= 0x80, c | _U32(0xFFFFFF00), c)


def _sx64(col: np.ndarray) -> np.ndarray:
    c = col.astype(_U64)
    return np.where(c >= 0x80, c | _U64(0xFFFFFFFFFFFFFF00), c)


def _u(col: np.ndarray) -> np.ndarray:
    return col.astype(_U32)


def _word(m: np.ndarray, j: int) -> np.ndarray:
    """The little-endian 32-bit word of bytes j..j+3 of every row."""
    w = _u(m[:, j]) | (_u(m[:, j + 1]) << _U32(8)) | (_u(m[:, j + 2]) << _U32(16)) | (_u(m[:, j + 3]) << _U32(24))
    return np.asarray(w, dtype=_U32)


def _one_at_a_time(m: np.ndarray) -> np.ndarray:
    v = np.zeros(len(m), dtype=_U32)
    for j in range(m.shape[1]):
        v += _sx32(m[:, j])
        v += v << _U32(10)
        v ^= v >> _U32(6)
    v += v << _U32(3)
    v ^= v >> _U32(11)
    v += v << _U32(15)
    return v


def _crc16(m: np.ndarray) -> np.ndarray:
    """twemproxy 0.4 / 0.5.0's ``hash_crc16``: the XMODEM table, but the
    register is 32 bits wide and never masked, so the value keeps the bits
    shifted past 16 (later twemproxy sources changed this function)."""
    crc = np.zeros(len(m), dtype=_U32)
    for j in range(m.shape[1]):
        crc = (crc << _U32(8)) ^ _CRC16[((crc >> _U32(8)) ^ _u(m[:, j])) & _U32(0xFF)]
    return crc


def _crc32_loop(m: np.ndarray) -> np.ndarray:
    crc = np.full(len(m), 0xFFFFFFFF, dtype=_U32)
    for j in range(m.shape[1]):
        crc = (crc >> _U32(8)) ^ _CRC32[(crc ^ _u(m[:, j])) & _U32(0xFF)]
    return crc


def _crc32(m: np.ndarray) -> np.ndarray:  # libmemcached's: 15 bits of the CRC
    return np.asarray(((~_crc32_loop(m)) >> _U32(16)) & _U32(0x7FFF), dtype=_U32)


def _crc32a(m: np.ndarray) -> np.ndarray:  # the standard CRC-32
    return np.asarray(_crc32_loop(m) ^ _U32(0xFFFFFFFF), dtype=_U32)


def _fnv1_64(m: np.ndarray) -> np.ndarray:
    h = np.full(len(m), 0xCBF29CE484222325, dtype=_U64)
    for j in range(m.shape[1]):
        h *= _U64(0x100000001B3)
        h ^= _sx64(m[:, j])
    return np.asarray((h & _U64(0xFFFFFFFF)).astype(_U32), dtype=_U32)


def _fnv1_32(m: np.ndarray) -> np.ndarray:
    h = np.full(len(m), 2166136261, dtype=_U32)
    for j in range(m.shape[1]):
        h *= _U32(16777619)
        h ^= _sx32(m[:, j])
    return h


def _fnv1a_32(m: np.ndarray) -> np.ndarray:
    h = np.full(len(m), 2166136261, dtype=_U32)
    for j in range(m.shape[1]):
        h ^= _sx32(m[:, j])
        h *= _U32(16777619)
    return h


def _hsieh(m: np.ndarray) -> np.ndarray:
    n, length = m.shape
    h = np.zeros(n, dtype=_U32)
    if length == 0:
        return h

    def g16(j: int) -> np.ndarray:
        return np.asarray(_u(m[:, j]) | (_u(m[:, j + 1]) << _U32(8)), dtype=_U32)

    blocks, rem = length >> 2, length & 3
    for b in range(blocks):
        j = 4 * b
        h += g16(j)
        tmp = (g16(j + 2) << _U32(11)) ^ h
        h = (h << _U32(16)) ^ tmp
        h += h >> _U32(11)
    j = 4 * blocks
    if rem == 3:
        h += g16(j)
        h ^= h << _U32(16)
        h ^= _sx32(m[:, j + 2]) << _U32(18)
        h += h >> _U32(11)
    elif rem == 2:
        h += g16(j)
        h ^= h << _U32(11)
        h += h >> _U32(17)
    elif rem == 1:
        h += _u(m[:, j])
        h ^= h << _U32(10)
        h += h >> _U32(1)
    h ^= h << _U32(3)
    h += h >> _U32(5)
    h ^= h << _U32(4)
    h += h >> _U32(17)
    h ^= h << _U32(25)
    h += h >> _U32(6)
    return h


def _murmur(m: np.ndarray) -> np.ndarray:
    n, length = m.shape
    mm = _U32(0x5BD1E995)
    seed = _U32((0xDEADBEEF * length) & 0xFFFFFFFF)
    h = np.full(n, int(seed ^ _U32(length & 0xFFFFFFFF)), dtype=_U32)
    j = 0
    while length - j >= 4:
        k = _word(m, j)
        k *= mm
        k ^= k >> _U32(24)
        k *= mm
        h *= mm
        h ^= k
        j += 4
    rem = length - j
    if rem >= 3:
        h ^= _u(m[:, j + 2]) << _U32(16)
    if rem >= 2:
        h ^= _u(m[:, j + 1]) << _U32(8)
    if rem >= 1:
        h ^= _u(m[:, j])
        h *= mm
    h ^= h >> _U32(13)
    h *= mm
    h ^= h >> _U32(15)
    return h


def _rot(x: np.ndarray, k: int) -> np.ndarray:
    return np.asarray((x << _U32(k)) | (x >> _U32(32 - k)), dtype=_U32)


def _jenkins(m: np.ndarray) -> np.ndarray:
    """Bob Jenkins' lookup3 ``hashlittle`` with initval 13 (twemproxy's three
    read paths give the same value on little-endian machines)."""
    n, length = m.shape
    a = np.full(n, (0xDEADBEEF + length + 13) & 0xFFFFFFFF, dtype=_U32)
    b = a.copy()
    c = a.copy()
    if length == 0:
        return np.asarray(c, dtype=_U32)
    j = 0
    rest = length
    while rest > 12:
        a += _word(m, j)
        b += _word(m, j + 4)
        c += _word(m, j + 8)
        a -= c; a ^= _rot(c, 4); c += b  # noqa: E702
        b -= a; b ^= _rot(a, 6); a += c  # noqa: E702
        c -= b; c ^= _rot(b, 8); b += a  # noqa: E702
        a -= c; a ^= _rot(c, 16); c += b  # noqa: E702
        b -= a; b ^= _rot(a, 19); a += c  # noqa: E702
        c -= b; c ^= _rot(b, 4); b += a  # noqa: E702
        rest -= 12
        j += 12
    regs = (a, b, c)
    for i in range(rest):  # the last 1..12 bytes, little-endian into a, b, c
        regs[i // 4][...] += _u(m[:, j + i]) << _U32(8 * (i % 4))
    c ^= b; c -= _rot(b, 14)  # noqa: E702
    a ^= c; a -= _rot(c, 11)  # noqa: E702
    b ^= a; b -= _rot(a, 25)  # noqa: E702
    c ^= b; c -= _rot(b, 16)  # noqa: E702
    a ^= c; a -= _rot(c, 4)  # noqa: E702
    b ^= a; b -= _rot(a, 14)  # noqa: E702
    c ^= b; c -= _rot(b, 24)  # noqa: E702
    return np.asarray(c, dtype=_U32)


TWEMPROXY_HASHES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "one_at_a_time": _one_at_a_time,
    "crc16": _crc16,
    "crc32": _crc32,
    "crc32a": _crc32a,
    "fnv1_64": _fnv1_64,
    "fnv1_32": _fnv1_32,
    "fnv1a_32": _fnv1a_32,
    "hsieh": _hsieh,
    "murmur": _murmur,
    "jenkins": _jenkins,
}


def hash_matrix(name: str, m: np.ndarray) -> np.ndarray:
    """The hashes (uint32) of the rows of ``m``, keys of one length (uint8, 2-D)."""
    return TWEMPROXY_HASHES[name](m)


def hash_offsets(name: str, data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The hashes (uint32) of Arrow-style ``(data, offsets)`` keys."""
    fn = TWEMPROXY_HASHES[name]
    n = len(offsets) - 1
    out = np.zeros(n, dtype=_U32)
    if n == 0:
        return out
    starts = np.asarray(offsets[:-1], dtype=np.int64)
    lengths = np.diff(np.asarray(offsets, dtype=np.int64))
    buf = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8) if not isinstance(data, np.ndarray) \
        else data.view(np.uint8).reshape(-1)
    for length in np.unique(lengths).tolist():
        idx = np.flatnonzero(lengths == length)
        m = buf[starts[idx][:, None] + np.arange(length, dtype=np.int64)[None, :]] if length else \
            np.zeros((len(idx), 0), dtype=np.uint8)
        out[idx] = fn(m)
    return out
