# distutils: sources = [src/shardhash/_core/hash/sh_md5.c, src/shardhash/_core/compat/sh_ketama.c, src/shardhash/_core/compat/sh_twemproxy.c]
"""Compiled bindings of ketama (libmemcached, uhashring) and twemproxy
(private; the public API is :mod:`shardhash.compat.ketama`): the MD5 and
fnv1a_64 key hashes, the continuum lookup and its key router."""

from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from shardhash._common cimport sh_job, key_index_fn, KEY_NOT_MINE, sh_exact_raw, sh_decimal, address, SH_OK
from shardhash.compat._native_base cimport _Keys, bytes_of, offs, map_array, map_offsets

import numpy as np

__all__ = ["md5", "ketama_hash", "twemproxy_fnv1a_64", "ketama_bucket_index", "ketama_hash_offsets",
           "ketama_route_offsets", "ketama_lookup", "KetamaKeys"]

cdef extern from "sh_md5.h" nogil:
    void sh_md5(const void *data, size_t len, uint8_t *out)
    uint32_t sh_md5_u32le(const void *data, size_t len)
    void sh_md5_u32le_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint32_t *out)

cdef extern from "sh_ketama.h" nogil:
    void sh_ketama_bucket_index(const uint32_t *points, size_t m, int bits, int32_t *index)
    void sh_ketama_lookup(const uint32_t *points, const int32_t *owners, size_t m, int upper,
                          const int32_t *index, int bits, const uint32_t *hashes, size_t n,
                          int32_t *out)
    void sh_ketama_route_offsets(const uint8_t *data, const int64_t *offsets, size_t n,
                                 const uint32_t *points, const int32_t *owners, size_t m,
                                 int upper, const int32_t *index, int bits, int key_hash,
                                 int32_t *out)

cdef extern from "sh_twemproxy.h" nogil:
    uint32_t sh_twemproxy_fnv1a_64(const void *data, size_t len)

cdef object _DT_U32 = np.dtype(np.uint32)
cdef object _DT_I32 = np.dtype(np.int32)


def md5(const uint8_t[::1] data not None) -> bytes:
    """MD5 digest (RFC 1321) of a bytes-like object."""
    cdef uint8_t out[16]
    sh_md5(bytes_of(data), <size_t>data.shape[0], out)
    return (<char *>out)[:16]


def ketama_hash(const uint8_t[::1] data not None) -> int:
    """ketama's key hash: the first 4 MD5 bytes, little-endian."""
    return sh_md5_u32le(bytes_of(data), <size_t>data.shape[0])


def twemproxy_fnv1a_64(const uint8_t[::1] data not None) -> int:
    """twemproxy's fnv1a_64 key hash (kept to 32 bits, as twemproxy does)."""
    return sh_twemproxy_fnv1a_64(bytes_of(data), <size_t>data.shape[0])


ctypedef struct _continuum:
    const uint32_t *points
    const int32_t *owners
    size_t m
    int upper         # the first point > h (uhashring) instead of >=
    const int32_t *index
    int bits
    int key_hash      # 0: md5, 1: twemproxy fnv1a_64


cdef int _check_continuum(const uint32_t[::1] points, const int32_t[::1] owners,
                          const int32_t[::1] index) except -1:
    cdef Py_ssize_t i, m = points.shape[0]
    if m == 0:
        raise ValueError("the continuum has no points")
    if owners.shape[0] != m:
        raise ValueError("points and owners differ in length")
    _check_points(points)
    if index is not None:
        if index.shape[0] < 3 or (index.shape[0] - 1) & (index.shape[0] - 2) or index.shape[0] - 1 > (1 << 24):
            raise ValueError("the bucket index must have 2**bits + 1 entries (1 <= bits <= 24)")
        for i in range(index.shape[0] - 1):
            if index[i] < 0 or index[i + 1] < index[i] or index[i + 1] > m:
                raise ValueError(f"the bucket index is not a valid index of the continuum (at position {i})")
    return 0


cdef int _check_points(const uint32_t[::1] points) except -1:
    cdef Py_ssize_t i
    for i in range(points.shape[0] - 1):
        if points[i + 1] < points[i]:
            raise ValueError(f"continuum points must be sorted (position {i + 1} is below position {i})")
    return 0


cdef _continuum _continuum_of(const uint32_t[::1] points, const int32_t[::1] owners, bint upper,
                              const int32_t[::1] index, int key_hash):
    """The validated continuum tables (borrowed: the caller keeps them alive)."""
    cdef _continuum c
    _check_continuum(points, owners, index)
    c.points = &points[0]
    c.owners = &owners[0]
    c.m = <size_t>points.shape[0]
    c.upper = upper
    c.index = &index[0] if index is not None else NULL
    c.bits = 0
    if index is not None:
        while (<Py_ssize_t>1 << c.bits) < index.shape[0] - 1:
            c.bits += 1
    c.key_hash = key_hash
    return c


def ketama_bucket_index(const uint32_t[::1] points not None, int bits):
    """For each ``bits``-bit prefix b, the first point >= ``b << (32 - bits)``
    (plus a final entry ``len(points)``): the lookup accelerator."""
    if not 1 <= bits <= 24:
        raise ValueError(f"bits must be in 1..24, got {bits}")
    cdef Py_ssize_t m = points.shape[0]
    _check_points(points)
    if m >= (1 << 31):
        raise ValueError("too many points")
    out = np.empty((1 << bits) + 1, dtype=np.int32)
    cdef int32_t *o = <int32_t *>address(out)
    cdef const uint32_t *p = &points[0] if m else <const uint32_t *><const void *>b""
    with nogil:
        sh_ketama_bucket_index(p, <size_t>m, bits, o)
    return out


cdef ptrdiff_t _k_ketama_hash(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_md5_u32le_offsets(<const uint8_t *>j.data, offs(j, s), <size_t>(e - s), <uint32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_ketama_route(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    cdef const _continuum *k = <const _continuum *>j.ctx
    sh_ketama_route_offsets(<const uint8_t *>j.data, offs(j, s), <size_t>(e - s), k.points, k.owners, k.m,
                            k.upper, k.index, k.bits, k.key_hash, <int32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_ketama_lookup(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    cdef const _continuum *k = <const _continuum *>j.ctx
    sh_ketama_lookup(k.points, k.owners, k.m, k.upper, k.index, k.bits, <const uint32_t *>j.data + s,
                     <size_t>(e - s), <int32_t *>j.out + s)
    return SH_OK


def ketama_hash_offsets(const uint8_t[::1] data not None, const int64_t[::1] offsets not None,
                        threads=None):
    """ketama's key hash of every (data, offsets) key (uint32 array)."""
    return map_offsets(_k_ketama_hash, data, offsets, None, _DT_U32, False, threads)


def ketama_route_offsets(const uint32_t[::1] points not None, const int32_t[::1] owners not None,
                         bint upper, const uint8_t[::1] data not None,
                         const int64_t[::1] offsets not None, threads=None,
                         const int32_t[::1] index=None, int key_hash=0):
    """Key hash (0: MD5, 1: twemproxy fnv1a_64) + continuum lookup: the
    owner index of every (data, offsets) key."""
    if key_hash not in (0, 1):
        raise ValueError(f"key_hash must be 0 (md5) or 1 (twemproxy fnv1a_64), got {key_hash}")
    cdef _continuum k = _continuum_of(points, owners, upper, index, key_hash)
    return map_offsets(_k_ketama_route, data, offsets, None, _DT_I32, False, threads, 0, &k)


def ketama_lookup(const uint32_t[::1] points not None, const int32_t[::1] owners not None,
                  bint upper, const uint32_t[::1] hashes not None, threads=None,
                  const int32_t[::1] index=None):
    """The owner index of every 32-bit key hash on the continuum."""
    cdef _continuum k = _continuum_of(points, owners, upper, index, 0)
    return map_array(_k_ketama_lookup, hashes, None, _DT_I32, False, threads, 0, &k)


cdef class KetamaKeys(_Keys):
    """A ketama continuum: sorted uint32 points, their owners, the bucket index
    (2**bits + 1 entries); upper: first point > h (uhashring) instead of >=;
    fnv: twemproxy's fnv1a_64 key hash instead of md5; empty_zero: an empty
    key hashes to 0 (twemproxy); str_all: every key is hashed as str(key)
    (uhashring: bytes keys take the Python path)."""
    cdef _continuum k
    cdef bint empty_zero, str_all

    def __init__(self, points, owners, index, int bits, *, bint upper, bint fnv, bint empty_zero,
                 bint str_all):
        self._fresh()
        p = self._own(points, np.uint32)
        o = self._own(owners, np.int32)
        x = self._own(index, np.int32)
        if o.shape[0] != p.shape[0] or x.shape[0] != (1 << bits) + 1 or not 1 <= bits <= 24:
            raise ValueError("bad ketama tables")
        self.k.points = <const uint32_t *>address(p)
        self.k.owners = <const int32_t *>address(o)
        self.k.index = <const int32_t *>address(x)
        self.k.m = <size_t>p.shape[0]
        self.k.bits = bits
        self.k.upper = upper
        self.k.key_hash = fnv
        self.empty_zero = empty_zero
        self.str_all = str_all

    cdef key_index_fn _fn(self):
        return _ketama_index


cdef int32_t _ketama_index(void *ctx, PyObject *key) except -1:
    cdef KetamaKeys s = <KetamaKeys>ctx
    cdef Py_ssize_t n
    cdef char buf[24]
    cdef long long v
    cdef int overflow = 0
    cdef uint32_t h
    cdef int32_t out
    cdef const char *p = sh_exact_raw(key, &n, not s.str_all, True)
    if p == NULL:
        if not PyLong_CheckExact(<object>key):
            return KEY_NOT_MINE
        v = PyLong_AsLongLongAndOverflow(<object>key, &overflow)
        if overflow != 0:
            return KEY_NOT_MINE
        n = sh_decimal(v, buf)
        p = buf
    if n == 0 and s.empty_zero:
        h = 0
    elif s.k.key_hash:
        h = sh_twemproxy_fnv1a_64(p, <size_t>n)
    else:
        h = sh_md5_u32le(p, <size_t>n)
    sh_ketama_lookup(s.k.points, s.k.owners, s.k.m, s.k.upper, s.k.index, s.k.bits, &h, 1, &out)
    return out
