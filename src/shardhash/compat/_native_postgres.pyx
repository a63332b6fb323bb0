# distutils: sources = [src/shardhash/_core/compat/sh_pg.c, src/shardhash/_core/compat/sh_pg_avx2.c, src/shardhash/_core/common/sh_cpu.c]
"""Compiled bindings of PostgreSQL (PARTITION BY HASH) and Citus (private;
the public API is :mod:`shardhash.compat.postgres` and
:mod:`shardhash.compat.citus`): the hash opclasses per type, one value at a
time and over arrays, and the key routers of both."""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact
from cpython.datetime cimport (import_datetime, PyDate_CheckExact, PyDateTime_CheckExact, PyDateTime_GET_YEAR,
                               PyDateTime_GET_MONTH, PyDateTime_GET_DAY, PyDateTime_DATE_GET_HOUR,
                               PyDateTime_DATE_GET_MINUTE, PyDateTime_DATE_GET_SECOND,
                               PyDateTime_DATE_GET_MICROSECOND, datetime_tzinfo, PyDelta_CheckExact,
                               timedelta_days, timedelta_seconds, timedelta_microseconds)
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.ref cimport PyObject
from cpython.sequence cimport PySequence_Fast_GET_ITEM
from cpython.unicode cimport PyUnicode_CheckExact
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memchr, memset

from shardhash._common cimport sh_job, sh_chunk_fn, key_index_fn, KEY_NOT_MINE, sh_exact_raw, run, check_out, address, SH_OK
from shardhash._npy cimport import_numpy, is_ndarray_exact, int_array, NP_UINT64
from shardhash.compat._native_base cimport (_Keys, _RangeKeys, SMALL, bytes_of, offs, count_le, small_len,
                                            array_of, map_array, map_offsets, map_fixed)

import uuid as _uuid_mod

import numpy as np

import_numpy()

__all__ = ["hash_extended", "hash_extended_small", "PgPartitionKeys", "CitusKeys", "hash_uint32_extended",
           "hash_uint32", "fold_int8", "hash_combine64", "hash_bytes_extended", "hash_bytes", "float8_extended",
           "float8_32", "int_extended", "int_32", "float8_extended_array", "float8_32_array", "fixed_extended",
           "fixed_32", "varlen_extended", "varlen_32", "combine64", "remainder", "PG_CODES",
           "HASH_PARTITION_SEED", "RANGE_ELEMENT_CODES", "range_columns", "multirange_columns", "range_hashes",
           "composite_columns", "int_column", "fold31", "flatten_arrays", "numeric_hashes"]

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
    void sh_pg_init()
    int sh_pg_avx2_available()
    int sh_pg_range_canonical(int discrete, int64_t vmax, uint8_t *flags, int64_t *lower, int64_t *upper)
    size_t sh_pg_multirange_canonical(uint8_t *flags, int64_t *lower, int64_t *upper, size_t k)
    void sh_pg_range_extended(const uint8_t *flags, const int64_t *lower, const int64_t *upper, size_t n,
                              int wide, uint64_t seed, uint64_t *out)
    void sh_pg_range_32(const uint8_t *flags, const int64_t *lower, const int64_t *upper, size_t n, int wide,
                        int32_t *out)
    void sh_pg_multirange_extended(const uint8_t *flags, const int64_t *lower, const int64_t *upper,
                                   const int64_t *offsets, size_t n, int wide, uint64_t seed, uint64_t *out)
    void sh_pg_multirange_32(const uint8_t *flags, const int64_t *lower, const int64_t *upper,
                             const int64_t *offsets, size_t n, int wide, int32_t *out)
    void sh_pg_fold31(uint64_t *acc, const uint64_t *h, const uint8_t *isnull, size_t n)
    int sh_pg_numeric_text(const char *s, size_t len, int wide, uint64_t seed, uint64_t *out)
    void sh_pg_numeric_int64(int64_t v, int wide, uint64_t seed, uint64_t *out)

cdef object _DT_I32 = np.dtype(np.int32)
cdef object _DT_I64 = np.dtype(np.int64)
cdef object _DT_U64 = np.dtype(np.uint64)

import_datetime()
# lookup3 over variable-length keys: the AVX2 kernel where the CPU has it
sh_pg_init()

# The Python fallback of hash_extended and the type names it takes (set by
# shardhash.compat.postgres).
cdef object _hash_extended_py = None
cdef dict _pg_type_codes = {}


def _set_fallback(hash_extended=None, pg_type_codes=None):
    global _hash_extended_py
    if hash_extended is not None:
        _hash_extended_py = hash_extended
    if pg_type_codes is not None:
        _pg_type_codes.update({k: PG_CODES.get(v, PG_OTHER) for k, v in pg_type_codes.items()})


def _simd_kernel():
    """The kernel this build and CPU run for lookup3 over variable-length keys."""
    return "avx2" if sh_pg_avx2_available() else "scalar"


cdef enum:
    PG_INT2 = 0
    PG_INT4 = 1
    PG_INT8 = 2
    PG_TEXT = 3      # text, varchar
    PG_BPCHAR = 4    # trailing spaces do not count
    PG_BYTEA = 5
    PG_DATE = 6
    PG_TIMESTAMP = 7
    PG_UUID = 8
    PG_OTHER = 9     # timestamptz, floats: the Python path
    PG_TIMESTAMPTZ = 10  # range bounds and int_column only (hash_extended: the Python path)

PG_CODES = {"int2": PG_INT2, "int4": PG_INT4, "int8": PG_INT8, "text": PG_TEXT, "varchar": PG_TEXT,
            "bpchar": PG_BPCHAR, "bytea": PG_BYTEA, "date": PG_DATE, "timestamp": PG_TIMESTAMP,
            "uuid": PG_UUID}

cdef object _UUID = _uuid_mod.UUID
cdef long long _EPOCH_ORD = 730120           # date(2000, 1, 1).toordinal()
cdef long long _TS_MIN = -211813488000000000  # PostgreSQL's timestamp range, in us since 2000
cdef long long _TS_MAX = 9223371331199999999


cdef inline long long _ordinal(int y, int m, int d) noexcept:
    """datetime.date(y, m, d).toordinal() (proleptic Gregorian, 0001-01-01 is 1)."""
    cdef int *before = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]
    cdef long long yy = y - 1
    cdef long long n = yy * 365 + yy // 4 - yy // 100 + yy // 400 + before[m - 1] + d
    if m > 2 and (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)):
        n += 1
    return n


cdef int _pg_value(object v, int t, bint ext, uint64_t seed, uint64_t *h) except -1:
    """PostgreSQL's hash of one non-NULL value of type code t: the seeded
    64-bit hash (ext) or the 32-bit one (as uint32).  1: *h is set; 0: the
    value is not one this handles (the Python path decides, and raises)."""
    cdef long long x
    cdef int overflow = 0
    cdef uint32_t k
    cdef Py_ssize_t n
    cdef const char *p
    if t <= PG_INT8 or t == PG_DATE or t == PG_TIMESTAMP:
        if t <= PG_INT8:
            if not PyLong_CheckExact(v):
                return 0
            x = PyLong_AsLongLongAndOverflow(v, &overflow)
            if overflow != 0:
                return 0
            if t == PG_INT2 and not -32768 <= x <= 32767:
                return 0
            if t == PG_INT4 and not -2147483648 <= x <= 2147483647:
                return 0
            k = sh_pg_fold_int8(x) if t == PG_INT8 else <uint32_t>(<uint64_t>x)
        elif t == PG_DATE:
            if not PyDate_CheckExact(v):
                return 0
            x = _ordinal(PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v), PyDateTime_GET_DAY(v)) - _EPOCH_ORD
            k = <uint32_t>(<uint64_t>x)
        else:
            if not PyDateTime_CheckExact(v) or datetime_tzinfo(v) is not None:
                return 0
            x = ((_ordinal(PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v), PyDateTime_GET_DAY(v)) - _EPOCH_ORD)
                 * 86400 + PyDateTime_DATE_GET_HOUR(v) * 3600 + PyDateTime_DATE_GET_MINUTE(v) * 60
                 + PyDateTime_DATE_GET_SECOND(v)) * 1000000 + PyDateTime_DATE_GET_MICROSECOND(v)
            if not _TS_MIN <= x <= _TS_MAX:
                return 0
            k = sh_pg_fold_int8(x)
        h[0] = sh_pg_hash_uint32_extended(k, seed) if ext else sh_pg_hash_uint32(k)
        return 1
    if t == PG_TEXT or t == PG_BPCHAR:
        p = sh_exact_raw(<PyObject *>v, &n, False, True)
        if p == NULL or (n and memchr(p, 0, <size_t>n) != NULL):
            return 0
        if t == PG_BPCHAR:
            while n and p[n - 1] == 32:
                n -= 1
    elif t == PG_BYTEA:
        if not PyBytes_CheckExact(v):
            return 0
        p = PyBytes_AS_STRING(v)
        n = PyBytes_GET_SIZE(v)
    elif t == PG_UUID:
        if type(v) is not _UUID:
            return 0
        b = (<object>v).int.to_bytes(16, "big")
        p = PyBytes_AS_STRING(b)
        n = 16
        h[0] = sh_pg_hash_bytes_extended(p, 16, seed) if ext else sh_pg_hash_bytes(p, 16)
        return 1
    else:
        return 0
    h[0] = sh_pg_hash_bytes_extended(p, <size_t>n, seed) if ext else sh_pg_hash_bytes(p, <size_t>n)
    return 1


@cython.binding(False)
def hash_extended(value, type, seed=SH_PG_HASH_PARTITION_SEED):
    """The type's seeded 64-bit hash (hash opclass proc 2), as an unsigned int.

    ``hash_extended(v, "int8", s)`` equals ``hashint8extended(v, s)`` in SQL
    (which shows it signed: take it modulo ``2**64``).

    >>> hash_extended(42, "bigint")
    7363975540656877951
    >>> hash_extended(-0.0, "float8", seed=7)
    7
    """
    cdef uint64_t h
    cdef long long s
    cdef int overflow = 0
    code = _pg_type_codes.get(type) if PyUnicode_CheckExact(type) else None
    if code is not None and value is not None and PyLong_CheckExact(seed):
        s = PyLong_AsLongLongAndOverflow(seed, &overflow)
        if overflow == 0 and _pg_value(value, code, True, <uint64_t>s, &h):
            return h
    return _hash_extended_py(value, type, seed)


def hash_extended_small(values, type, seed):
    """hash_extended_array(values, type, seed) for a list, tuple or integer
    numpy array of at most 64 values of a type handled in C (uint64 array),
    in one pass; None for anything else (the general path decides)."""
    cdef uint64_t out[SMALL]
    cdef uint64_t h
    cdef Py_ssize_t i, n, stride
    cdef const char *p
    cdef long long sd
    cdef int overflow = 0
    cdef int code
    c = _pg_type_codes.get(type) if PyUnicode_CheckExact(type) else None
    if c is None or not PyLong_CheckExact(seed):
        return None
    code = c
    if code == PG_OTHER:
        return None
    sd = PyLong_AsLongLongAndOverflow(seed, &overflow)
    if overflow != 0:
        return None
    if is_ndarray_exact(values):
        # a native-order integer array (others: the general path decides)
        if not int_array(values, &p, &n, &stride) or not 0 < n <= SMALL:
            return None  # (an empty array: the general path checks its dtype)
        values = values.tolist()
    n = small_len(values)
    if n < 0:
        return None
    for i in range(n):
        v = <object>PySequence_Fast_GET_ITEM(values, i)
        if v is None or not _pg_value(v, code, True, <uint64_t>sd, &h):
            return None
        out[i] = h
    return array_of(out, n, NP_UINT64, sizeof(uint64_t))


cdef class PgPartitionKeys(_Keys):
    """A PARTITION BY HASH table: column type codes, the remainder -> partition
    table (-1: no partition); a row goes to table[rowhash % len(table)]."""
    cdef int types[32]
    cdef Py_ssize_t ntypes
    cdef const int32_t *table
    cdef uint64_t modulus

    def __init__(self, types, table):
        self._fresh()
        t = self._own(table, np.int32)
        self.table = <const int32_t *>address(t)
        self.modulus = <uint64_t>t.shape[0]
        ts = list(types)
        if not 1 <= len(ts) <= 32:
            raise ValueError("1..32 key columns are handled in C")
        self.ntypes = len(ts)
        for i, name in enumerate(ts):
            self.types[i] = PG_CODES.get(name, PG_OTHER)

    cdef key_index_fn _fn(self):
        return _pg_partition_index


cdef int32_t _pg_partition_index(void *ctx, PyObject *key) except -1:
    cdef PgPartitionKeys s = <PgPartitionKeys>ctx
    cdef object row = <object>key
    cdef uint64_t acc = 0, h
    cdef Py_ssize_t i
    cdef int32_t idx
    cdef int r
    if type(row) is tuple:
        if len(<tuple>row) != s.ntypes:
            return KEY_NOT_MINE
        for i in range(s.ntypes):
            v = (<tuple>row)[i]
            if v is None:
                continue
            r = _pg_value(v, s.types[i], True, SH_PG_HASH_PARTITION_SEED, &h)
            if r == 0:
                return KEY_NOT_MINE
            acc = sh_pg_hash_combine64(acc, h)
    elif s.ntypes == 1 and not isinstance(row, tuple) and row is not None:
        if not _pg_value(row, s.types[0], True, SH_PG_HASH_PARTITION_SEED, &h):
            return KEY_NOT_MINE
        acc = sh_pg_hash_combine64(0, h)
    else:
        return KEY_NOT_MINE
    idx = s.table[acc % s.modulus]
    return idx if idx >= 0 else KEY_NOT_MINE  # no partition: the Python path raises



cdef class CitusKeys(_RangeKeys):
    """Citus hash distribution: a value's 32-bit hash (signed) goes to the
    shard whose range holds it: owner[last i with mins[i] <= hash]."""
    cdef int type_code

    def __init__(self, type_name, mins, owner):
        self._fresh()
        self._ranges(mins, owner, np.int64, "one owner per range")
        self.type_code = PG_CODES.get(type_name, PG_OTHER)

    cdef key_index_fn _fn(self):
        return _citus_index


cdef int32_t _citus_index(void *ctx, PyObject *key) except -1:
    cdef CitusKeys s = <CitusKeys>ctx
    cdef uint64_t h
    cdef Py_ssize_t lo
    if <object>key is None:
        return KEY_NOT_MINE
    if not _pg_value(<object>key, s.type_code, False, 0, &h):
        return KEY_NOT_MINE
    lo = count_le(<const int64_t *>s.bounds, s.m, <int64_t><int32_t><uint32_t>h)
    if lo == 0:
        return KEY_NOT_MINE
    return s.owners[lo - 1]


# -- the PostgreSQL hash functions, one value at a time ---------------------------

HASH_PARTITION_SEED = SH_PG_HASH_PARTITION_SEED


cdef inline int32_t _as_int32(uint32_t x) noexcept:
    return <int32_t>x


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


def hash_bytes_extended(const uint8_t[::1] data not None, uint64_t seed):
    """PostgreSQL hash_bytes_extended(data, len, seed) -> uint64 (little-endian server)."""
    return sh_pg_hash_bytes_extended(bytes_of(data), <size_t>data.shape[0], seed)


def hash_bytes(const uint8_t[::1] data not None):
    """PostgreSQL hash_bytes(data, len) -> signed int32 (little-endian server)."""
    return _as_int32(sh_pg_hash_bytes(bytes_of(data), <size_t>data.shape[0]))


def float8_extended(double v, uint64_t seed):
    """hashfloat8extended(v, seed) -> uint64."""
    return sh_pg_hash_float8_extended(v, seed)


def float8_32(double v):
    """hashfloat8(v) -> signed int32."""
    return _as_int32(sh_pg_hash_float8(v))


# -- the PostgreSQL hash functions over arrays (out= given by the caller) ----------
# job.seed: the seed of the extended (64-bit) hashes.

cdef enum:  # job.variant of _k_pg_values
    PGV_INT2 = 0
    PGV_INT4 = 1
    PGV_INT8 = 2
    PGV_FLOAT8 = 3
    PGV_32 = 4   # added to the above: the 32-bit hash instead of the seeded 64-bit one


cdef ptrdiff_t _k_pg_values(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    cdef size_t n = <size_t>(e - s)
    cdef uint64_t *o64 = <uint64_t *>j.out + s
    cdef int32_t *o32 = <int32_t *>j.out + s
    cdef int v = j.variant
    if v == PGV_INT2:
        sh_pg_int2_extended(<const int16_t *>j.data + s, n, j.seed, o64)
    elif v == PGV_INT4:
        sh_pg_int4_extended(<const int32_t *>j.data + s, n, j.seed, o64)
    elif v == PGV_INT8:
        sh_pg_int8_extended(<const int64_t *>j.data + s, n, j.seed, o64)
    elif v == PGV_FLOAT8:
        sh_pg_float8_extended(<const double *>j.data + s, n, j.seed, o64)
    elif v == PGV_32 + PGV_INT2:
        sh_pg_int2_32(<const int16_t *>j.data + s, n, o32)
    elif v == PGV_32 + PGV_INT4:
        sh_pg_int4_32(<const int32_t *>j.data + s, n, o32)
    elif v == PGV_32 + PGV_INT8:
        sh_pg_int8_32(<const int64_t *>j.data + s, n, o32)
    else:
        sh_pg_float8_32(<const double *>j.data + s, n, o32)
    return SH_OK


cdef ptrdiff_t _k_pg_fixed_ext(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_fixed_extended(<const uint8_t *>j.data + <size_t>s * j.width, j.width, <size_t>(e - s), j.seed,
                         <uint64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_fixed_32(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_fixed_32(<const uint8_t *>j.data + <size_t>s * j.width, j.width, <size_t>(e - s), <int32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_varlen_ext(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_varlen_extended(<const uint8_t *>j.data, offs(j, s), <size_t>(e - s), j.seed, <uint64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_varlen_32(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_varlen_32(<const uint8_t *>j.data, offs(j, s), <size_t>(e - s), <int32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_combine(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    # job.out: the accumulators (in place), job.data: the hashes, job.ctx: the NULL flags or NULL
    sh_pg_combine64(<uint64_t *>j.out + s, <const uint64_t *>j.data + s,
                    <const uint8_t *>j.ctx + s if j.ctx != NULL else NULL, <size_t>(e - s))
    return SH_OK


cdef ptrdiff_t _k_pg_remainder(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_remainder(<const uint64_t *>j.data + s, <size_t>(e - s), j.seed, <int64_t *>j.out + s)
    return SH_OK


ctypedef fused pgint:
    int16_t
    int32_t
    int64_t


def int_extended(const pgint[::1] values not None, uint64_t seed, out, threads=None):
    """Extended hash of int2 / int4 (also date) / int8 (also timestamp) values into out (uint64)."""
    cdef int v = PGV_INT2 if pgint is int16_t else PGV_INT4 if pgint is int32_t else PGV_INT8
    map_array(_k_pg_values, values, out, _DT_U64, True, threads, seed, NULL, v)


def int_32(const pgint[::1] values not None, out, threads=None):
    """32-bit hash (hashint2 / hashint4 / hashint8) of integer values into out (int32)."""
    cdef int v = PGV_INT2 if pgint is int16_t else PGV_INT4 if pgint is int32_t else PGV_INT8
    map_array(_k_pg_values, values, out, _DT_I32, True, threads, 0, NULL, PGV_32 + v)


def float8_extended_array(const double[::1] values not None, uint64_t seed, out, threads=None):
    """hashfloat8extended of every value into out (uint64)."""
    map_array(_k_pg_values, values, out, _DT_U64, True, threads, seed, NULL, PGV_FLOAT8)


def float8_32_array(const double[::1] values not None, out, threads=None):
    """hashfloat8 of every value into out (int32)."""
    map_array(_k_pg_values, values, out, _DT_I32, True, threads, 0, NULL, PGV_32 + PGV_FLOAT8)


def fixed_extended(const uint8_t[::1] data not None, Py_ssize_t width, uint64_t seed, out, threads=None):
    """Extended hash of packed fixed-width keys (uuid: width 16) into out (uint64)."""
    map_fixed(_k_pg_fixed_ext, data, width, out, _DT_U64, threads, seed)


def fixed_32(const uint8_t[::1] data not None, Py_ssize_t width, out, threads=None):
    """32-bit hash of packed fixed-width keys into out (int32)."""
    map_fixed(_k_pg_fixed_32, data, width, out, _DT_I32, threads)


def varlen_extended(const uint8_t[::1] data not None, const int64_t[::1] offsets not None, uint64_t seed,
                    out, threads=None):
    """Extended hash of variable-length keys (text, bytea) in Arrow layout into out (uint64)."""
    map_offsets(_k_pg_varlen_ext, data, offsets, out, _DT_U64, True, threads, seed)


def varlen_32(const uint8_t[::1] data not None, const int64_t[::1] offsets not None, out, threads=None):
    """32-bit hash (hashtext, hashvarlena) of variable-length keys in Arrow layout into out (int32)."""
    map_offsets(_k_pg_varlen_32, data, offsets, out, _DT_I32, True, threads)


cdef int _fold_column(sh_chunk_fn kernel, acc, const uint64_t[::1] h, isnull, threads) except -1:
    """Run ``kernel`` over ``acc`` (uint64, in place) and the column ``h``,
    skipping the rows ``isnull`` (uint8, optional) marks."""
    cdef Py_ssize_t n = h.shape[0]
    cdef const uint8_t[::1] mask
    cdef sh_job job
    memset(&job, 0, sizeof(sh_job))
    check_out(acc, n, _DT_U64, True)
    if isnull is not None:
        mask = isnull
        if mask.shape[0] != n:
            raise ValueError(f"isnull has {mask.shape[0]} elements, expected {n}")
        job.ctx = &mask[0] if n else NULL
    job.data = &h[0] if n else NULL
    job.out = address(acc)
    run(kernel, &job, n, threads)
    return 0


def combine64(acc, const uint64_t[::1] h not None, isnull=None, threads=None):
    """acc[i] = hash_combine64(acc[i], h[i]) where isnull[i] is false (in place)."""
    _fold_column(_k_pg_combine, acc, h, isnull, threads)


def remainder(const uint64_t[::1] rowhash not None, uint64_t modulus, out, threads=None):
    """out[i] = rowhash[i] % modulus (unsigned), out an int64 array."""
    if modulus == 0:
        raise ValueError("modulus must be positive")
    map_array(_k_pg_remainder, rowhash, out, _DT_I64, True, threads, modulus)



# -- range, multirange and composite types over arrays -------------------------------
# The bindings read the Python values into columns with the GIL held (a value
# they do not handle -- another type, a subclass, an error -- is left to the
# Python path, which hashes it one at a time or raises naming it); the C
# kernels then hash the columns without the GIL.

#: Range element types the compiled path reads, by PostgreSQL's name.
RANGE_ELEMENT_CODES = {"int4": PG_INT4, "int8": PG_INT8, "date": PG_DATE, "timestamp": PG_TIMESTAMP,
                       "timestamptz": PG_TIMESTAMPTZ}

cdef enum:
    SH_R_EMPTY = 0x01
    SH_R_LB_INC = 0x02
    SH_R_UB_INC = 0x04
    SH_R_LB_INF = 0x08
    SH_R_UB_INF = 0x10

import datetime as _dt_mod
cdef object _UTC_TZ = _dt_mod.timezone.utc
cdef long long _DATE_MAX = 2145031948       # PostgreSQL's last date (5874897-12-31), in days since 2000-01-01
# datetime.min and datetime.max in microseconds since 2000-01-01
cdef long long _DT_PY_MIN = -63082281600000000
cdef long long _DT_PY_MAX = 252455615999999999


cdef inline long long _naive_us(object v) noexcept:
    return ((_ordinal(PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v), PyDateTime_GET_DAY(v)) - _EPOCH_ORD)
            * 86400 + PyDateTime_DATE_GET_HOUR(v) * 3600 + PyDateTime_DATE_GET_MINUTE(v) * 60
            + PyDateTime_DATE_GET_SECOND(v)) * 1000000 + PyDateTime_DATE_GET_MICROSECOND(v)


cdef int _int_of(object v, int t, int64_t *x) except -1:
    """The integer a non-NULL value of element code t hashes as (int2/4/8
    values, dates as days and timestamps as microseconds since 2000-01-01):
    1 with *x set, or 0 for a value the Python path must judge."""
    cdef long long y
    cdef int overflow = 0
    if t <= PG_INT8:
        if not PyLong_CheckExact(v):
            return 0
        y = PyLong_AsLongLongAndOverflow(v, &overflow)
        if overflow != 0 or (t == PG_INT2 and not -32768 <= y <= 32767) or \
                (t == PG_INT4 and not -2147483648 <= y <= 2147483647):
            return 0
    elif t == PG_DATE:
        if not PyDate_CheckExact(v):
            return 0
        y = _ordinal(PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v), PyDateTime_GET_DAY(v)) - _EPOCH_ORD
    elif t == PG_TIMESTAMP:
        if not PyDateTime_CheckExact(v) or datetime_tzinfo(v) is not None:
            return 0
        y = _naive_us(v)
    elif t == PG_TIMESTAMPTZ:
        if not PyDateTime_CheckExact(v) or datetime_tzinfo(v) is None:
            return 0
        if datetime_tzinfo(v) is _UTC_TZ:  # (no utcoffset() call)
            y = _naive_us(v)
        else:
            off = v.utcoffset()
            if not PyDelta_CheckExact(off):
                return 0
            y = _naive_us(v) - ((<long long>timedelta_days(off) * 86400 + timedelta_seconds(off)) * 1000000
                                + timedelta_microseconds(off))
        if not _DT_PY_MIN <= y <= _DT_PY_MAX:  # astimezone(utc) would leave datetime's range
            return 0
    else:
        return 0
    x[0] = y
    return 1


cdef int _bounds_flags(object b) noexcept:
    """The inclusive flags of a Range's bounds string, or -1."""
    if not PyUnicode_CheckExact(b) or len(<str>b) != 2:
        return -1
    if b == "[)":
        return SH_R_LB_INC
    if b == "[]":
        return SH_R_LB_INC | SH_R_UB_INC
    if b == "(]":
        return SH_R_UB_INC
    if b == "()":
        return 0
    return -1


cdef int _range_of(object v, object range_cls, int t, uint8_t *flags, int64_t *lo, int64_t *hi) except -1:
    """One range value (a Range of the exact class, or 'empty') as canonical
    flags and bounds: 1, or 0 for a value the Python path must judge."""
    cdef int f
    cdef int64_t vmax
    if type(v) is not range_cls:
        if PyUnicode_CheckExact(v) and v == "empty":
            flags[0] = SH_R_EMPTY
            lo[0] = hi[0] = 0
            return 1
        return 0
    e = v.empty
    if e is True:
        flags[0] = SH_R_EMPTY
        lo[0] = hi[0] = 0
        return 1
    if e is not False:
        return 0
    f = _bounds_flags(v.bounds)
    if f < 0:
        return 0
    lo[0] = hi[0] = 0
    b = v.lower
    if b is None:
        f |= SH_R_LB_INF
    elif not _int_of(b, t, lo):
        return 0
    b = v.upper
    if b is None:
        f |= SH_R_UB_INF
    elif not _int_of(b, t, hi):
        return 0
    flags[0] = <uint8_t>f
    vmax = 2147483647 if t == PG_INT4 else 9223372036854775807 if t == PG_INT8 else _DATE_MAX
    if sh_pg_range_canonical(t <= PG_INT8 or t == PG_DATE, vmax, flags, lo, hi) != 0:
        return 0
    return 1


cdef int _elem_code(int elem) except -1:
    if elem != PG_INT4 and elem != PG_INT8 and elem != PG_DATE and elem != PG_TIMESTAMP and elem != PG_TIMESTAMPTZ:
        raise ValueError(f"no compiled range path for element code {elem}")
    return elem


def range_columns(list items, range_cls, int elem):
    """Range values (a list: Range, 'empty' or None) as canonical columns:
    (flags uint8, lower int64, upper int64, isnull uint8, slow), where slow
    lists the positions the Python path must hash (or refuse)."""
    cdef Py_ssize_t i, n = len(items)
    _elem_code(elem)
    flags = np.zeros(n, dtype=np.uint8)
    lows = np.zeros(n, dtype=np.int64)
    highs = np.zeros(n, dtype=np.int64)
    isnull = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] f = flags
    cdef int64_t[::1] lo = lows
    cdef int64_t[::1] hi = highs
    cdef uint8_t[::1] nul = isnull
    cdef list slow = []
    for i in range(n):
        v = items[i]
        if v is None:
            nul[i] = 1
        elif not _range_of(v, range_cls, elem, &f[i], &lo[i], &hi[i]):
            slow.append(i)
            f[i] = SH_R_EMPTY
            lo[i] = hi[i] = 0
    return flags, lows, highs, isnull, slow


def multirange_columns(list items, range_cls, multirange_cls, int elem):
    """Multirange values (a list: Multirange or None) as their canonical
    ranges: (flags, lower, upper, offsets, isnull, slow); multirange i has
    the ranges [offsets[i], offsets[i + 1]); slow as for range_columns."""
    cdef Py_ssize_t i, j, k, n = len(items), total = 0, w = 0, start
    cdef bint ok
    _elem_code(elem)
    for i in range(n):
        v = items[i]
        if type(v) is multirange_cls:
            rs = v.ranges
            if type(rs) is tuple:
                total += len(<tuple>rs)
    flags = np.zeros(total, dtype=np.uint8)
    lows = np.zeros(total, dtype=np.int64)
    highs = np.zeros(total, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    isnull = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] f = flags
    cdef int64_t[::1] lo = lows
    cdef int64_t[::1] hi = highs
    cdef int64_t[::1] off = offsets
    cdef uint8_t[::1] nul = isnull
    cdef list slow = []
    for i in range(n):
        v = items[i]
        start = w
        if v is None:
            nul[i] = 1
        elif type(v) is not multirange_cls or type(v.ranges) is not tuple:
            slow.append(i)
        else:
            rs = v.ranges
            k = len(<tuple>rs)
            ok = w + k <= total  # (the ranges were counted above; a changed value goes the Python way)
            j = 0
            while ok and j < k:
                if not _range_of((<tuple>rs)[j], range_cls, elem, &f[w], &lo[w], &hi[w]):
                    ok = False
                elif not f[w] & SH_R_EMPTY:
                    w += 1  # empty ranges are dropped
                j += 1
            if ok:
                w = start + <Py_ssize_t>sh_pg_multirange_canonical(&f[start] if w > start else NULL,
                                                                   &lo[start] if w > start else NULL,
                                                                   &hi[start] if w > start else NULL,
                                                                   <size_t>(w - start))
            else:
                w = start
                slow.append(i)
        off[i + 1] = w
    return flags[:w], lows[:w], highs[:w], offsets, isnull, slow


cdef struct _RangeCols:
    const uint8_t *flags
    const int64_t *lo
    const int64_t *hi
    const int64_t *offsets   # NULL: one range per key
    int wide


cdef ptrdiff_t _k_pg_ranges(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    cdef const _RangeCols *r = <const _RangeCols *>j.ctx
    cdef size_t n = <size_t>(e - s)
    if r.offsets == NULL:
        if j.variant:
            sh_pg_range_32(r.flags + s, r.lo + s, r.hi + s, n, r.wide, <int32_t *>j.out + s)
        else:
            sh_pg_range_extended(r.flags + s, r.lo + s, r.hi + s, n, r.wide, j.seed, <uint64_t *>j.out + s)
    elif j.variant:
        sh_pg_multirange_32(r.flags, r.lo, r.hi, r.offsets + s, n, r.wide, <int32_t *>j.out + s)
    else:
        sh_pg_multirange_extended(r.flags, r.lo, r.hi, r.offsets + s, n, r.wide, j.seed, <uint64_t *>j.out + s)
    return SH_OK


def range_hashes(const uint8_t[::1] flags not None, const int64_t[::1] lower not None,
                 const int64_t[::1] upper not None, offsets, int elem, seed, out, threads=None):
    """hash_range_extended (seed an int) or hash_range (seed None) of the
    canonical ranges of range_columns into out (uint64 / int32); with the
    offsets of multirange_columns, hash_multirange(_extended) of each
    multirange instead."""
    cdef _RangeCols cols
    cdef sh_job job
    cdef const int64_t[::1] off
    cdef Py_ssize_t nr = flags.shape[0], n = nr, i
    _elem_code(elem)
    if lower.shape[0] != nr or upper.shape[0] != nr:
        raise ValueError("flags, lower and upper must have the same length")
    memset(&job, 0, sizeof(sh_job))
    memset(&cols, 0, sizeof(_RangeCols))
    for i in range(nr):  # canonical flags only (the kernels trust them)
        if flags[i] & ~(SH_R_EMPTY | SH_R_LB_INC | SH_R_UB_INC | SH_R_LB_INF | SH_R_UB_INF):
            raise ValueError(f"range flags at position {i} are not a range's")
    if offsets is not None:
        off = offsets
        n = off.shape[0] - 1
        if n < 0 or off[0] != 0 or off[n] != nr:
            raise ValueError("offsets must start at 0 and end at the number of ranges")
        for i in range(n):
            if off[i + 1] < off[i]:
                raise ValueError(f"offsets decrease at position {i}")
        cols.offsets = &off[0]
    cols.flags = &flags[0] if nr else NULL
    cols.lo = &lower[0] if nr else NULL
    cols.hi = &upper[0] if nr else NULL
    cols.wide = elem == PG_INT8 or elem == PG_TIMESTAMP or elem == PG_TIMESTAMPTZ
    check_out(out, n, _DT_I32 if seed is None else _DT_U64, True)
    job.ctx = &cols
    job.out = address(out)
    job.variant = seed is None
    job.seed = 0 if seed is None else <uint64_t>seed
    run(_k_pg_ranges, &job, n, threads)


def composite_columns(list items, Py_ssize_t nfields):
    """The field columns of composite values (a list: tuples or lists of
    nfields values, or None): (columns, isnull uint8, bad), bad the first
    position that is neither (-1: none), where nothing is returned."""
    cdef Py_ssize_t i, k, n = len(items)
    cdef list cols = [[None] * n for _ in range(nfields)]
    isnull = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] nul = isnull
    for i in range(n):
        v = items[i]
        if v is None:
            nul[i] = 1
        elif (type(v) is tuple or type(v) is list) and len(v) == nfields:
            for k in range(nfields):
                (<list>cols[k])[i] = v[k]
        else:
            return None, None, i
    return cols, isnull, -1


def int_column(list items, int code):
    """Values of an integer-like type (int2/int4/int8, date as days,
    timestamp(tz) as microseconds) as (int64 array, isnull uint8 or None), or
    None when a non-NULL value is not one this reads (the Python path judges)."""
    cdef Py_ssize_t i, n = len(items)
    cdef bint any_null = False
    if code != PG_INT2:
        _elem_code(code)
    vals = np.zeros(n, dtype=np.int64)
    isnull = np.zeros(n, dtype=np.uint8)
    cdef int64_t[::1] x = vals
    cdef uint8_t[::1] nul = isnull
    for i in range(n):
        v = items[i]
        if v is None:
            nul[i] = 1
            any_null = True
        elif not _int_of(v, code, &x[i]):
            return None
    return vals, isnull if any_null else None


cdef ptrdiff_t _k_pg_fold31(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_fold31(<uint64_t *>j.out + s, <const uint64_t *>j.data + s,
                 <const uint8_t *>j.ctx + s if j.ctx != NULL else NULL, <size_t>(e - s))
    return SH_OK


def fold31(acc, const uint64_t[::1] h not None, isnull=None, threads=None):
    """acc[i] = acc[i] * 31 + (0 if isnull[i] else h[i]) (mod 2**64, in place):
    hash_record's and hash_array's fold of one field or element column."""
    _fold_column(_k_pg_fold31, acc, h, isnull, threads)


cdef int _flatten_into(list flat, object value, object ndarray) except -1:
    """Append an array value's elements in storage order (lists nest for more
    dimensions; a tuple is an element): 1, or 0 where a numpy array nests
    (the Python path reads it)."""
    for v in value:
        if isinstance(v, list):
            if not _flatten_into(flat, v, ndarray):
                return 0
        elif isinstance(v, ndarray):
            return 0
        else:
            flat.append(v)
    return 1


def flatten_arrays(list items):
    """Array values (a list: lists or tuples, nested lists for more
    dimensions, or None) as (elements, lengths int64, isnull uint8), or None
    when one is not read here (the Python path reads or refuses it)."""
    cdef Py_ssize_t i, n = len(items), before
    cdef list flat = []
    lengths = np.zeros(n, dtype=np.int64)
    isnull = np.zeros(n, dtype=np.uint8)
    cdef int64_t[::1] ln = lengths
    cdef uint8_t[::1] nul = isnull
    ndarray = np.ndarray
    for i in range(n):
        v = items[i]
        if v is None:
            nul[i] = 1
            continue
        if not isinstance(v, (list, tuple)):
            return None
        before = len(flat)
        if not _flatten_into(flat, v, ndarray):
            return None
        ln[i] = len(flat) - before
    return flat, lengths, isnull


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL


def numeric_hashes(list items, object decimal_type, seed, uint64_t[::1] out not None):
    """out[i] = hash_numeric_extended(items[i], seed), or its 32-bit hash
    (unsigned) for seed None, for each value that is an exact int or an
    exact ``decimal_type``; returns the positions of the other values (None,
    subclasses, bool, numpy integers, signalling NaNs, ...), whose out[i]
    is left as it was: the Python path hashes or refuses them."""
    cdef Py_ssize_t i, n = len(items), size
    cdef int wide = seed is not None, overflow
    cdef uint64_t s = <uint64_t>seed if wide else 0
    cdef long long v
    cdef const char *txt
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} values")
    slow = []
    for i in range(n):
        x = items[i]
        if PyLong_CheckExact(x):
            v = PyLong_AsLongLongAndOverflow(x, &overflow)
            if not overflow:
                sh_pg_numeric_int64(v, wide, s, &out[i])
                continue
        elif type(x) is not decimal_type:
            slow.append(i)
            continue
        try:
            text = str(x)  # (held while txt points into it)
        except ValueError:  # an int beyond the int-to-str digit limit
            slow.append(i)
            continue
        txt = PyUnicode_AsUTF8AndSize(text, &size)
        if sh_pg_numeric_text(txt, <size_t>size, wide, s, &out[i]) != 0:
            slow.append(i)
    return slow
