# distutils: sources = [src/shardhash/_core/hash/sh_crc16.c, src/shardhash/_core/compat/sh_redis.c]
"""Compiled bindings of Redis Cluster (private; the public API is
:mod:`shardhash.compat.redis`): CRC16 (XMODEM) key slots, hash tags, the
slot table's key router."""

cimport cython
from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t

from shardhash._common cimport sh_job, key_index_fn, KEY_NOT_MINE, sh_exact_raw, address, SH_OK
from shardhash._intake cimport seq_kernel
from shardhash._npy cimport import_numpy, NP_UINT16
from shardhash.compat._native_base cimport _Keys, bytes_of, offs, small_kernel, map_offsets

import numpy as np

import_numpy()

__all__ = ["crc16_xmodem", "redis_keyslot", "keyslot", "keyslot_small", "redis_keyslot_seq",
           "redis_keyslot_offsets", "RedisKeys"]

cdef extern from "sh_crc16.h" nogil:
    uint16_t sh_crc16_xmodem(const void *data, size_t len)

cdef extern from "sh_redis.h" nogil:
    uint16_t sh_redis_keyslot(const void *key, size_t len)
    void sh_redis_keyslot_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint16_t *out)
    void sh_redis_keyslot_ptrs16(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint16_t *out)

cdef object _DT_U16 = np.dtype(np.uint16)

# The Python fallback of keyslot (set by shardhash.compat.redis).
cdef object _keyslot_py = None


def _set_fallback(keyslot):
    global _keyslot_py
    _keyslot_py = keyslot


def crc16_xmodem(const uint8_t[::1] data not None) -> int:
    """CRC-16/XMODEM of a bytes-like object (Redis Cluster's checksum)."""
    return sh_crc16_xmodem(bytes_of(data), <size_t>data.shape[0])


def redis_keyslot(const uint8_t[::1] data not None) -> int:
    """The slot (0..16383) of one key's bytes, hash tags applied."""
    return sh_redis_keyslot(bytes_of(data), <size_t>data.shape[0])


@cython.binding(False)
def keyslot(key):
    """The Redis Cluster slot (0..16383) of one key, as ``CLUSTER KEYSLOT``.

    >>> keyslot(b"123456789"), keyslot(b""), keyslot(b"{{}}")
    (12739, 0, 4092)
    """
    cdef Py_ssize_t n
    cdef const char *p = sh_exact_raw(<PyObject *>key, &n, True, True)
    if p != NULL:
        return sh_redis_keyslot(p, <size_t>n)
    return _keyslot_py(key)


cdef void _pk_keyslot(const void *ctx, const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                      void *out) noexcept nogil:
    sh_redis_keyslot_ptrs16(ptrs, lens, n, <uint16_t *>out)


def keyslot_small(keys):
    """keyslot_array(keys) for a list or tuple of at most 64 exact bytes or
    ASCII str keys (uint16 array), in one pass; None for anything else."""
    return small_kernel(keys, _pk_keyslot, NP_UINT16, sizeof(uint16_t))


def redis_keyslot_seq(keys, threads=None):
    """Slots of a list, tuple or numpy array of bytes/str keys (read in
    place, see ``shardhash._intake.seq_kernel``; with ``threads`` > 1 on
    helper threads); None for other inputs."""
    return seq_kernel(keys, _pk_keyslot, NULL, _DT_U16, None, True, threads, False)


cdef ptrdiff_t _k_keyslot(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_redis_keyslot_offsets(<const uint8_t *>j.data, offs(j, s), <size_t>(e - s), <uint16_t *>j.out + s)
    return SH_OK


def redis_keyslot_offsets(const uint8_t[::1] data not None, const int64_t[::1] offsets not None,
                          threads=None):
    """The slot of every (data, offsets) key (uint16 array)."""
    return map_offsets(_k_keyslot, data, offsets, None, _DT_U16, False, threads)


cdef class RedisKeys(_Keys):
    """slot table (16384 int32 node indices): route(key) = table[keyslot(key)]."""
    cdef const int32_t *table

    def __init__(self, table):
        self._fresh()
        t = self._own(table, np.int32)
        if t.shape[0] != 16384:
            raise ValueError("a slot table has 16384 entries")
        self.table = <const int32_t *>address(t)

    cdef key_index_fn _fn(self):
        return _redis_index


cdef int32_t _redis_index(void *ctx, PyObject *key) except -1:
    cdef RedisKeys s = <RedisKeys>ctx
    cdef Py_ssize_t n
    cdef const char *p = sh_exact_raw(key, &n, True, True)
    if p == NULL:
        return KEY_NOT_MINE
    return s.table[sh_redis_keyslot(p, <size_t>n)]
