# distutils: sources = [src/shardhash/_core/compat/sh_pg.c, src/shardhash/_core/compat/sh_guava.c]
"""Compiled kernels of shardhash.compat.postgres, .citus and .guava (private).

PostgreSQL's lookup3 hashes and per-type rules, and Guava's consistentHash,
from the plain-C core (sh_pg.c, sh_guava.c).  Every batch kernel validates
its arguments, then releases the GIL; callers split large inputs over
threads with shardhash._parallel.parallel_for.
"""

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

from shardhash._parallel import parallel_for


cdef extern from "sh_pg.h" nogil:
    uint64_t SH_PG_HASH_PARTITION_SEED
    uint64_t sh_pg_hash_uint32_extended(uint32_t k, uint64_t seed)
    uint32_t sh_pg_hash_uint32(uint32_t k)
    uint32_t sh_pg_fold_int8(int64_t v)
    uint64_t sh_pg_hash_combine64(uint64_t a, uint64_t b)
    uint64_t sh_pg_hash_bytes_extended(const void *data, size_t len, uint64_t seed)
    uint32_t sh_pg_hash_bytes(const void *data, size_t len)
    uint64_t sh_pg_hash_float8_extended(double v, uint64_t seed)
    uint32_t sh_pg_hash_float8(double v)
    void sh_pg_int2_extended(const int16_t *v, size_t n, uint64_t seed, uint64_t *out)
    void sh_pg_int4_extended(const int32_t *v, size_t n, uint64_t seed, uint64_t *out)
    void sh_pg_int8_extended(const int64_t *v, size_t n, uint64_t seed, uint64_t *out)
    void sh_pg_float8_extended(const double *v, size_t n, uint64_t seed, uint64_t *out)
    void sh_pg_fixed_extended(const uint8_t *data, size_t width, size_t n, uint64_t seed, uint64_t *out)
    void sh_pg_varlen_extended(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                               uint64_t *out)
    void sh_pg_int2_32(const int16_t *v, size_t n, int32_t *out)
    void sh_pg_int4_32(const int32_t *v, size_t n, int32_t *out)
    void sh_pg_int8_32(const int64_t *v, size_t n, int32_t *out)
    void sh_pg_float8_32(const double *v, size_t n, int32_t *out)
    void sh_pg_fixed_32(const uint8_t *data, size_t width, size_t n, int32_t *out)
    void sh_pg_varlen_32(const uint8_t *data, const int64_t *offsets, size_t n, int32_t *out)
    void sh_pg_combine64(uint64_t *acc, const uint64_t *h, const uint8_t *isnull, size_t n)
    void sh_pg_remainder(const uint64_t *rowhash, size_t n, uint64_t modulus, int64_t *out)

cdef extern from "sh_guava.h" nogil:
    int32_t sh_guava_consistent_hash(int64_t input, int32_t buckets)
    void sh_guava_consistent_hash_batch(const int64_t *keys, size_t n, int32_t buckets, int32_t *out)


HASH_PARTITION_SEED = SH_PG_HASH_PARTITION_SEED

ctypedef fused pgint:
    int16_t
    int32_t
    int64_t


cdef inline int32_t _as_int32(uint32_t x) noexcept:
    return <int32_t>x


cdef inline const uint8_t *_ptr(const uint8_t[::1] data) noexcept:
    # An empty buffer has no valid element pointer; no key reads from it.
    if data.shape[0] == 0:
        return NULL
    return &data[0]


cdef _check_out(Py_ssize_t n, Py_ssize_t nout):
    if nout != n:
        raise ValueError(f"out has {nout} elements, expected {n}")


# ---------------------------------------------------------------- scalars

def hash_uint32_extended(uint32_t k, uint64_t seed):
    """PostgreSQL hash_uint32_extended(k, seed) -> uint64."""
    return sh_pg_hash_uint32_extended(k, seed)


def hash_uint32(uint32_t k):
    """PostgreSQL hash_uint32(k) -> signed int32."""
    return _as_int32(sh_pg_hash_uint32(k))


def fold_int8(int64_t v):
    """hashint8's fold of an int8 to the uint32 that is hashed."""
    return sh_pg_fold_int8(v)


def hash_combine64(uint64_t a, uint64_t b):
    """PostgreSQL hash_combine64(a, b)."""
    return sh_pg_hash_combine64(a, b)


def hash_bytes_extended(const uint8_t[::1] data, uint64_t seed):
    """PostgreSQL hash_bytes_extended(data, len, seed) -> uint64 (little-endian server)."""
    return sh_pg_hash_bytes_extended(_ptr(data), <size_t>data.shape[0], seed)


def hash_bytes(const uint8_t[::1] data):
    """PostgreSQL hash_bytes(data, len) -> signed int32 (little-endian server)."""
    return _as_int32(sh_pg_hash_bytes(_ptr(data), <size_t>data.shape[0]))


def float8_extended(double v, uint64_t seed):
    """hashfloat8extended(v, seed) -> uint64."""
    return sh_pg_hash_float8_extended(v, seed)


def float8_32(double v):
    """hashfloat8(v) -> signed int32."""
    return _as_int32(sh_pg_hash_float8(v))


def guava_consistent_hash(int64_t key, int32_t buckets):
    """Guava Hashing.consistentHash(key, buckets); buckets must be >= 1."""
    if buckets < 1:
        raise ValueError(f"buckets must be positive, got {buckets}")
    return sh_guava_consistent_hash(key, buckets)


# ---------------------------------------------------------------- batches

def int_extended(const pgint[::1] values, uint64_t seed, uint64_t[::1] out, threads=None):
    """Extended hash of int2 / int4 (also date) / int8 (also timestamp) values."""
    cdef Py_ssize_t n = values.shape[0]
    _check_out(n, out.shape[0])

    def body(Py_ssize_t start, Py_ssize_t stop):
        cdef size_t m = <size_t>(stop - start)
        if m == 0:
            return
        with nogil:
            if pgint is int16_t:
                sh_pg_int2_extended(&values[start], m, seed, &out[start])
            elif pgint is int32_t:
                sh_pg_int4_extended(&values[start], m, seed, &out[start])
            else:
                sh_pg_int8_extended(&values[start], m, seed, &out[start])

    parallel_for(n, threads, body)


def int_32(const pgint[::1] values, int32_t[::1] out, threads=None):
    """32-bit hash (hashint2 / hashint4 / hashint8) of integer values."""
    cdef Py_ssize_t n = values.shape[0]
    _check_out(n, out.shape[0])

    def body(Py_ssize_t start, Py_ssize_t stop):
        cdef size_t m = <size_t>(stop - start)
        if m == 0:
            return
        with nogil:
            if pgint is int16_t:
                sh_pg_int2_32(&values[start], m, &out[start])
            elif pgint is int32_t:
                sh_pg_int4_32(&values[start], m, &out[start])
            else:
                sh_pg_int8_32(&values[start], m, &out[start])

    parallel_for(n, threads, body)


def float8_extended_array(const double[::1] values, uint64_t seed, uint64_t[::1] out, threads=None):
    cdef Py_ssize_t n = values.shape[0]
    _check_out(n, out.shape[0])

    def body(Py_ssize_t start, Py_ssize_t stop):
        if stop > start:
            with nogil:
                sh_pg_float8_extended(&values[start], <size_t>(stop - start), seed, &out[start])

    parallel_for(n, threads, body)


def float8_32_array(const double[::1] values, int32_t[::1] out, threads=None):
    cdef Py_ssize_t n = values.shape[0]
    _check_out(n, out.shape[0])

    def body(Py_ssize_t start, Py_ssize_t stop):
        if stop > start:
            with nogil:
                sh_pg_float8_32(&values[start], <size_t>(stop - start), &out[start])

    parallel_for(n, threads, body)


def fixed_extended(const uint8_t[::1] data, Py_ssize_t width, uint64_t seed, uint64_t[::1] out):
    """Extended hash of packed fixed-width keys (uuid: width 16)."""
    cdef Py_ssize_t n = out.shape[0]
    if width < 1 or data.shape[0] != n * width:
        raise ValueError(f"data has {data.shape[0]} bytes, expected {n} keys of {width} bytes")
    if n == 0:
        return
    with nogil:
        sh_pg_fixed_extended(&data[0], <size_t>width, <size_t>n, seed, &out[0])


def fixed_32(const uint8_t[::1] data, Py_ssize_t width, int32_t[::1] out):
    cdef Py_ssize_t n = out.shape[0]
    if width < 1 or data.shape[0] != n * width:
        raise ValueError(f"data has {data.shape[0]} bytes, expected {n} keys of {width} bytes")
    if n == 0:
        return
    with nogil:
        sh_pg_fixed_32(&data[0], <size_t>width, <size_t>n, &out[0])


cdef _check_offsets(const uint8_t[::1] data, const int64_t[::1] offsets, Py_ssize_t n):
    cdef Py_ssize_t i, bad = -1
    if offsets.shape[0] != n + 1:
        raise ValueError(f"offsets has {offsets.shape[0]} elements, expected {n + 1}")
    if offsets[0] < 0 or offsets[n] > data.shape[0]:
        raise ValueError(f"offsets [{offsets[0]}, {offsets[n]}] fall outside the {data.shape[0]}-byte data")
    with nogil:
        for i in range(n):
            if offsets[i + 1] < offsets[i]:
                bad = i
                break
    if bad >= 0:
        raise ValueError(f"offsets decrease at position {bad}")


def varlen_extended(const uint8_t[::1] data, const int64_t[::1] offsets, uint64_t seed,
                    uint64_t[::1] out, threads=None):
    """Extended hash of variable-length keys (text, bytea) in Arrow layout."""
    cdef Py_ssize_t n = out.shape[0]
    _check_offsets(data, offsets, n)
    cdef const uint8_t *base = _ptr(data)

    def body(Py_ssize_t start, Py_ssize_t stop):
        if stop > start:
            with nogil:
                sh_pg_varlen_extended(base, &offsets[start], <size_t>(stop - start), seed, &out[start])

    parallel_for(n, threads, body)


def varlen_32(const uint8_t[::1] data, const int64_t[::1] offsets, int32_t[::1] out, threads=None):
    """32-bit hash (hashtext, hashvarlena) of variable-length keys in Arrow layout."""
    cdef Py_ssize_t n = out.shape[0]
    _check_offsets(data, offsets, n)
    cdef const uint8_t *base = _ptr(data)

    def body(Py_ssize_t start, Py_ssize_t stop):
        if stop > start:
            with nogil:
                sh_pg_varlen_32(base, &offsets[start], <size_t>(stop - start), &out[start])

    parallel_for(n, threads, body)


def combine64(uint64_t[::1] acc, const uint64_t[::1] h, isnull=None):
    """acc[i] = hash_combine64(acc[i], h[i]) where isnull[i] is false (in place)."""
    cdef Py_ssize_t n = acc.shape[0]
    cdef const uint8_t[::1] mask
    if h.shape[0] != n:
        raise ValueError(f"h has {h.shape[0]} elements, expected {n}")
    if n == 0:
        return
    if isnull is None:
        with nogil:
            sh_pg_combine64(&acc[0], &h[0], NULL, <size_t>n)
    else:
        mask = isnull
        if mask.shape[0] != n:
            raise ValueError(f"isnull has {mask.shape[0]} elements, expected {n}")
        with nogil:
            sh_pg_combine64(&acc[0], &h[0], &mask[0], <size_t>n)


def remainder(const uint64_t[::1] rowhash, uint64_t modulus, int64_t[::1] out):
    """out[i] = rowhash[i] % modulus (unsigned)."""
    cdef Py_ssize_t n = rowhash.shape[0]
    _check_out(n, out.shape[0])
    if modulus == 0:
        raise ValueError("modulus must be positive")
    if n == 0:
        return
    with nogil:
        sh_pg_remainder(&rowhash[0], <size_t>n, modulus, &out[0])


def guava_consistent_hash_array(const int64_t[::1] keys, int32_t buckets, int32_t[::1] out,
                                threads=None):
    """Guava consistentHash over an int64 array."""
    cdef Py_ssize_t n = keys.shape[0]
    _check_out(n, out.shape[0])
    if buckets < 1:
        raise ValueError(f"buckets must be positive, got {buckets}")

    def body(Py_ssize_t start, Py_ssize_t stop):
        if stop > start:
            with nogil:
                sh_guava_consistent_hash_batch(&keys[start], <size_t>(stop - start), buckets, &out[start])

    parallel_for(n, threads, body)
