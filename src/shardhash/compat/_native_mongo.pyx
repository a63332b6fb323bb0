# distutils: sources = [src/shardhash/_core/hash/sh_md5.c, src/shardhash/_core/compat/sh_mongo.c]
"""Compiled bindings of MongoDB (private; the public API is
:mod:`shardhash.compat.mongo`): hashed shard keys (MD5 of the BSON element)
and the chunk ranges' key router."""

from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memchr

from shardhash._common cimport sh_job, key_index_fn, KEY_NOT_MINE, sh_exact_raw, SH_OK
from shardhash.compat._native_base cimport _RangeKeys, count_le, map_array

import numpy as np

__all__ = ["mongo_hash_int64", "mongo_double_to_long", "mongo_hash_int64_array", "mongo_hash_double_array",
           "MongoKeys"]

cdef extern from "sh_md5.h" nogil:
    void sh_md5(const void *data, size_t len, uint8_t *out)

cdef extern from "sh_mongo.h" nogil:
    uint64_t sh_mongo_hash_int64(int64_t v)
    void sh_mongo_hash_int64_batch(const int64_t *values, size_t n, uint64_t *out)
    int64_t sh_mongo_double_to_long(double d)
    void sh_mongo_hash_double_batch(const double *values, size_t n, uint64_t *out)

cdef object _DT_U64 = np.dtype(np.uint64)


def mongo_hash_int64(int64_t v) -> int:
    """Signed int64 MongoDB hash of a number already reduced to int64."""
    cdef uint64_t h = sh_mongo_hash_int64(v)
    return <int64_t>h


def mongo_double_to_long(double d) -> int:
    """MongoDB's conversion of a double shard key value to the int64 it hashes."""
    return sh_mongo_double_to_long(d)


cdef ptrdiff_t _k_mongo(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    # job.variant: 0 int64 values, 1 double values
    cdef uint64_t *out = <uint64_t *>j.out + s
    cdef size_t n = <size_t>(e - s)
    if j.variant == 0:
        sh_mongo_hash_int64_batch(<const int64_t *>j.data + s, n, out)
    else:
        sh_mongo_hash_double_batch(<const double *>j.data + s, n, out)
    return SH_OK


def mongo_hash_int64_array(const int64_t[::1] values not None, threads=None):
    """The signed MongoDB hash of every int64 value (int64 array)."""
    return map_array(_k_mongo, values, None, _DT_U64, False, threads, 0, NULL, 0).view(np.int64)


def mongo_hash_double_array(const double[::1] values not None, threads=None):
    """The signed MongoDB hash of every double value (int64 array)."""
    return map_array(_k_mongo, values, None, _DT_U64, False, threads, 0, NULL, 1).view(np.int64)


cdef class MongoKeys(_RangeKeys):
    """MongoDB hashed chunks: sorted chunk minima (int64, the first INT64_MIN)
    and their shards; int, float and ASCII str values are hashed here."""

    def __init__(self, mins, owners):
        self._fresh()
        a = self._ranges(mins, owners, np.int64, "one owner per chunk, the first starting at MinKey")
        if a[0] != -(1 << 63):
            raise ValueError("one owner per chunk, the first starting at MinKey")

    cdef key_index_fn _fn(self):
        return _mongo_index


cdef enum:
    MONGO_STR_MAX = 240   # longer strings take the Python path

cdef int32_t _mongo_index(void *ctx, PyObject *key) except -1:
    cdef MongoKeys s = <MongoKeys>ctx
    cdef long long v
    cdef int overflow = 0
    cdef int64_t h
    cdef Py_ssize_t n, i
    cdef const char *p
    cdef uint8_t buf[MONGO_STR_MAX + 16]
    cdef uint8_t digest[16]
    cdef uint64_t u
    cdef uint32_t w
    if PyLong_CheckExact(<object>key):
        v = PyLong_AsLongLongAndOverflow(<object>key, &overflow)
        if overflow != 0:
            return KEY_NOT_MINE
        h = <int64_t>sh_mongo_hash_int64(v)
    elif type(<object>key) is float:
        h = <int64_t>sh_mongo_hash_int64(sh_mongo_double_to_long(<double>(<object>key)))
    else:
        p = sh_exact_raw(key, &n, False, True)
        if p == NULL or n > MONGO_STR_MAX or (n and memchr(p, 0, <size_t>n) != NULL):
            return KEY_NOT_MINE
        # seed 0, canonical type 15 (string), length + 1, the bytes, NUL; all LE32
        w = 0
        for i in range(4):
            buf[i] = 0
        w = 15
        for i in range(4):
            buf[4 + i] = <uint8_t>(w >> (8 * i))
        w = <uint32_t>(n + 1)
        for i in range(4):
            buf[8 + i] = <uint8_t>(w >> (8 * i))
        for i in range(n):
            buf[12 + i] = <uint8_t>p[i]
        buf[12 + n] = 0
        sh_md5(buf, <size_t>(13 + n), digest)
        u = 0
        for i in range(8):
            u |= (<uint64_t>digest[i]) << (8 * i)
        h = <int64_t>u
    # mins[0] == INT64_MIN <= h: at least one minimum is <= h
    return s.owners[count_le(<const int64_t *>s.bounds, s.m, h) - 1]
