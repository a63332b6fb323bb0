# distutils: sources = [src/shardhash/_core/compat/sh_guava.c]
"""Compiled bindings of Guava's ``Hashing.consistentHash`` (private; the
public API is :mod:`shardhash.compat.guava`)."""

from libc.stdint cimport int32_t, int64_t, uint64_t

from shardhash._common cimport sh_job, SH_OK
from shardhash.compat._native_base cimport map_array

import numpy as np

__all__ = ["guava_consistent_hash", "guava_consistent_hash_array"]

cdef extern from "sh_guava.h" nogil:
    int32_t sh_guava_consistent_hash(int64_t input, int32_t buckets)
    void sh_guava_consistent_hash_batch(const int64_t *keys, size_t n, int32_t buckets, int32_t *out)

cdef object _DT_I32 = np.dtype(np.int32)


def guava_consistent_hash(int64_t key, int32_t buckets):
    """Guava Hashing.consistentHash(key, buckets); buckets must be >= 1."""
    if buckets < 1:
        raise ValueError(f"buckets must be positive, got {buckets}")
    return sh_guava_consistent_hash(key, buckets)


cdef ptrdiff_t _k_guava(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_guava_consistent_hash_batch(<const int64_t *>j.data + s, <size_t>(e - s), <int32_t>j.seed,
                                   <int32_t *>j.out + s)
    return SH_OK


def guava_consistent_hash_array(const int64_t[::1] keys not None, int32_t buckets, out, threads=None):
    """Guava consistentHash over an int64 array, into out (int32)."""
    if buckets < 1:
        raise ValueError(f"buckets must be positive, got {buckets}")
    map_array(_k_guava, keys, out, _DT_I32, True, threads, <uint64_t>buckets)
