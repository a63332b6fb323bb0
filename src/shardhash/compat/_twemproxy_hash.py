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

__all__ = ["TWEMPROXY_HASHES", "TWEMPROXY_HASHES_ONE", "hash_matrix", "hash_offsets", "hash_one"]

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


# --------------------------------------------------------------- one key at a time
# The same functions over one key in plain Python (a numpy pass per column
# costs more than the whole hash for one short key).

_M32 = 0xFFFFFFFF
_CRC32_L = [int(x) for x in _CRC32.tolist()]
_CRC16_L = [int(x) for x in _CRC16.tolist()]


def _sx(b: int) -> int:
    return b | 0xFFFFFF00 if b >= 0x80 else b


def _py_one_at_a_time(k: bytes) -> int:
    v = 0
    for b in k:
        v = (v + _sx(b)) & _M32
        v = (v + (v << 10)) & _M32
        v ^= v >> 6
    v = (v + (v << 3)) & _M32
    v ^= v >> 11
    return (v + (v << 15)) & _M32


def _py_crc16(k: bytes) -> int:
    crc = 0
    for b in k:
        crc = ((crc << 8) & _M32) ^ _CRC16_L[((crc >> 8) ^ b) & 0xFF]
    return crc


def _py_crc32_loop(k: bytes) -> int:
    crc = _M32
    for b in k:
        crc = (crc >> 8) ^ _CRC32_L[(crc ^ b) & 0xFF]
    return crc


def _py_fnv1_64(k: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in k:
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        h ^= b | 0xFFFFFFFFFFFFFF00 if b >= 0x80 else b
    return h & _M32


def _py_fnv1_32(k: bytes) -> int:
    h = 2166136261
    for b in k:
        h = (h * 16777619) & _M32
        h ^= _sx(b)
    return h


def _py_fnv1a_32(k: bytes) -> int:
    h = 2166136261
    for b in k:
        h ^= _sx(b)
        h = (h * 16777619) & _M32
    return h


def _py_hsieh(k: bytes) -> int:
    n = len(k)
    if n == 0:
        return 0
    h = 0
    j = 0
    for _ in range(n >> 2):
        h = (h + (k[j] | k[j + 1] << 8)) & _M32
        tmp = (((k[j + 2] | k[j + 3] << 8) << 11) & _M32) ^ h
        h = ((h << 16) & _M32) ^ tmp
        h = (h + (h >> 11)) & _M32
        j += 4
    rem = n & 3
    if rem == 3:
        h = (h + (k[j] | k[j + 1] << 8)) & _M32
        h ^= (h << 16) & _M32
        h ^= (_sx(k[j + 2]) << 18) & _M32
        h = (h + (h >> 11)) & _M32
    elif rem == 2:
        h = (h + (k[j] | k[j + 1] << 8)) & _M32
        h ^= (h << 11) & _M32
        h = (h + (h >> 17)) & _M32
    elif rem == 1:
        h = (h + k[j]) & _M32
        h ^= (h << 10) & _M32
        h = (h + (h >> 1)) & _M32
    h ^= (h << 3) & _M32
    h = (h + (h >> 5)) & _M32
    h ^= (h << 4) & _M32
    h = (h + (h >> 17)) & _M32
    h ^= (h << 25) & _M32
    return (h + (h >> 6)) & _M32


def _py_murmur(k: bytes) -> int:
    m = 0x5BD1E995
    n = len(k)
    h = ((0xDEADBEEF * n) ^ n) & _M32
    j = 0
    while n - j >= 4:
        w = int.from_bytes(k[j:j + 4], "little")
        w = (w * m) & _M32
        w ^= w >> 24
        w = (w * m) & _M32
        h = ((h * m) & _M32) ^ w
        j += 4
    rem = n - j
    if rem >= 3:
        h ^= k[j + 2] << 16
    if rem >= 2:
        h ^= k[j + 1] << 8
    if rem >= 1:
        h ^= k[j]
        h = (h * m) & _M32
    h ^= h >> 13
    h = (h * m) & _M32
    return h ^ (h >> 15)


def _prot(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _py_jenkins(k: bytes) -> int:
    n = len(k)
    a = b = c = (0xDEADBEEF + n + 13) & _M32
    if n == 0:
        return c
    j = 0
    while n - j > 12:
        a = (a + int.from_bytes(k[j:j + 4], "little")) & _M32
        b = (b + int.from_bytes(k[j + 4:j + 8], "little")) & _M32
        c = (c + int.from_bytes(k[j + 8:j + 12], "little")) & _M32
        a = (a - c) & _M32; a ^= _prot(c, 4); c = (c + b) & _M32  # noqa: E702
        b = (b - a) & _M32; b ^= _prot(a, 6); a = (a + c) & _M32  # noqa: E702
        c = (c - b) & _M32; c ^= _prot(b, 8); b = (b + a) & _M32  # noqa: E702
        a = (a - c) & _M32; a ^= _prot(c, 16); c = (c + b) & _M32  # noqa: E702
        b = (b - a) & _M32; b ^= _prot(a, 19); a = (a + c) & _M32  # noqa: E702
        c = (c - b) & _M32; c ^= _prot(b, 4); b = (b + a) & _M32  # noqa: E702
        j += 12
    tail = k[j:] + bytes(12 - (n - j))
    a = (a + int.from_bytes(tail[0:4], "little")) & _M32
    b = (b + int.from_bytes(tail[4:8], "little")) & _M32
    c = (c + int.from_bytes(tail[8:12], "little")) & _M32
    c ^= b; c = (c - _prot(b, 14)) & _M32  # noqa: E702
    a ^= c; a = (a - _prot(c, 11)) & _M32  # noqa: E702
    b ^= a; b = (b - _prot(a, 25)) & _M32  # noqa: E702
    c ^= b; c = (c - _prot(b, 16)) & _M32  # noqa: E702
    a ^= c; a = (a - _prot(c, 4)) & _M32  # noqa: E702
    b ^= a; b = (b - _prot(a, 14)) & _M32  # noqa: E702
    c ^= b
    return (c - _prot(b, 24)) & _M32


TWEMPROXY_HASHES_ONE: dict[str, Callable[[bytes], int]] = {
    "one_at_a_time": _py_one_at_a_time,
    "crc16": _py_crc16,
    "crc32": lambda k: ((~_py_crc32_loop(k) & _M32) >> 16) & 0x7FFF,
    "crc32a": lambda k: _py_crc32_loop(k) ^ _M32,
    "fnv1_64": _py_fnv1_64,
    "fnv1_32": _py_fnv1_32,
    "fnv1a_32": _py_fnv1a_32,
    "hsieh": _py_hsieh,
    "murmur": _py_murmur,
    "jenkins": _py_jenkins,
}


def hash_one(name: str, key: bytes) -> int:
    """The hash of one key (plain Python; the same values as :func:`hash_matrix`)."""
    return TWEMPROXY_HASHES_ONE[name](key)
