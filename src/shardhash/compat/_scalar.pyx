# distutils: sources = [src/shardhash/_core/hash/sh_md5.c, src/shardhash/_core/hash/sh_crc16.c, src/shardhash/_core/compat/sh_ketama.c, src/shardhash/_core/compat/sh_twemproxy.c, src/shardhash/_core/compat/sh_mongo.c, src/shardhash/_core/compat/sh_redis.c, src/shardhash/_core/compat/sh_cassandra.c, src/shardhash/_core/compat/sh_pg.c, src/shardhash/_core/hash/sh_des.c, src/shardhash/_core/hash/sh_xxhash.c]
"""One key at a time in C for the compat routers (private).

The compat modules' public one-key functions (``redis.keyslot``,
``cassandra.token``) and their routers' ``route``/``route_index`` run here
for the common exact key types -- ``bytes``, ``str`` stored as compact ASCII
(its characters are its UTF-8 bytes), ``int`` that fits 64 bits -- without
building a temporary bytes object.  Every other key (subclasses, non-ASCII
str, bytearray, numpy scalars, wrong types) goes to the module's pure-Python
function, which defines the answer and raises every error, so the values
and exceptions are those of the Python path.

Routers use these through ``RouterCore._use_native_keys``: each ``*Keys``
class below holds a router's tables and hands out a PyCapsule with a C
function ``int32_t f(void *ctx, PyObject *key)`` that returns the shard
index, -1 with a Python exception set, or -2 for "not a key type handled
here" (the router then calls its ``_route_index_slow``).
"""

cimport cython
from libc.stdint cimport uint8_t, uint16_t, uint32_t, int32_t, int64_t, uint64_t
from cpython.ref cimport PyObject
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact
from cpython.unicode cimport PyUnicode_CheckExact
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_SetContext
from cpython.datetime cimport (import_datetime, PyDate_CheckExact, PyDateTime_CheckExact, PyDateTime_GET_YEAR,
                               PyDateTime_GET_MONTH, PyDateTime_GET_DAY, PyDateTime_DATE_GET_HOUR,
                               PyDateTime_DATE_GET_MINUTE, PyDateTime_DATE_GET_SECOND,
                               PyDateTime_DATE_GET_MICROSECOND, datetime_tzinfo)
from libc.string cimport memchr, memcpy
from cpython.sequence cimport PySequence_Fast_GET_ITEM
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_WRITABLE, PyBUF_ND
import uuid as _uuid_mod
from builtins import type as builtins_type

import numpy as np

cdef extern from "sh_redis.h" nogil:
    uint16_t sh_redis_keyslot(const void *key, size_t len)

cdef extern from "sh_cassandra.h" nogil:
    int64_t sh_cassandra_token(const void *data, size_t len)

cdef extern from "sh_pg.h" nogil:
    uint64_t SH_PG_HASH_PARTITION_SEED
    uint32_t sh_pg_fold_int8(int64_t v)
    uint64_t sh_pg_hash_combine64(uint64_t a, uint64_t b)
    uint64_t sh_pg_hash_uint32_extended(uint32_t k, uint64_t seed)
    uint32_t sh_pg_hash_uint32(uint32_t k)
    uint64_t sh_pg_hash_bytes_extended(const void *data, size_t len, uint64_t seed)
    uint32_t sh_pg_hash_bytes(const void *data, size_t len)

cdef extern from "sh_des.h" nogil:
    ctypedef struct sh_des_ctx:
        pass
    void sh_des_setkey(sh_des_ctx *ctx, const uint8_t *key)
    uint64_t sh_des_encrypt(const sh_des_ctx *ctx, uint64_t block)

cdef extern from "sh_xxhash.h" nogil:
    uint64_t sh_xxh64(const void *data, size_t len, uint64_t seed)

cdef extern from "sh_md5.h" nogil:
    uint32_t sh_md5_u32le(const void *data, size_t len)
    void sh_md5(const void *data, size_t len, uint8_t *out)

cdef extern from "sh_twemproxy.h" nogil:
    uint32_t sh_twemproxy_fnv1a_64(const void *data, size_t len)

cdef extern from "sh_mongo.h" nogil:
    uint64_t sh_mongo_hash_int64(int64_t v)
    int64_t sh_mongo_double_to_long(double d)

cdef extern from "sh_ketama.h" nogil:
    void sh_ketama_lookup(const uint32_t *points, const int32_t *owners, size_t m, int upper,
                          const int32_t *index, int bits, const uint32_t *hashes, size_t n, int32_t *out)

cdef extern from *:
    """
    /* The UTF-8 bytes of an exact bytes object, or of an exact str stored
     * as compact ASCII; NULL for anything else (no exception set). */
    static inline const char *sh_exact_raw(PyObject *o, Py_ssize_t *n, int bytes_ok, int str_ok)
    {
        if (bytes_ok && PyBytes_CheckExact(o)) {
            *n = PyBytes_GET_SIZE(o);
            return PyBytes_AS_STRING(o);
        }
    #if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
        if (str_ok && PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o)) {
            *n = PyUnicode_GET_LENGTH(o);
            return (const char *)PyUnicode_DATA(o);
        }
    #else
        (void)str_ok;
    #endif
        return NULL;
    }

    /* The decimal text of v (as str(int)) into buf[0..21); returns its length. */
    static inline Py_ssize_t sh_decimal(long long v, char *buf)
    {
        char tmp[24];
        unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
        Py_ssize_t k = 0, n = 0;
        do { tmp[k++] = (char)('0' + (int)(u % 10u)); u /= 10u; } while (u);
        if (v < 0) buf[n++] = '-';
        while (k) buf[n++] = tmp[--k];
        return n;
    }
    """
    const char *sh_exact_raw(PyObject *o, Py_ssize_t *n, bint bytes_ok, bint str_ok)
    Py_ssize_t sh_decimal(long long v, char *buf)

cdef enum:
    SMALL = 64   # the *_small functions take at most this many keys

cdef object _np_empty = np.empty
cdef object _DT_U16 = np.dtype(np.uint16)
cdef object _DT_I64 = np.dtype(np.int64)
cdef object _DT_U64 = np.dtype(np.uint64)


cdef inline Py_ssize_t _small_len(object keys) noexcept:
    """len(keys) for a list or tuple of at most SMALL keys, else -1."""
    cdef Py_ssize_t n
    if type(keys) is list or type(keys) is tuple:
        n = len(keys)
        return n if n <= SMALL else -1
    return -1


cdef object _array_of(const void *src, Py_ssize_t n, object dtype, size_t itemsize):
    """A new numpy array of n items of dtype, copied from src."""
    cdef Py_buffer view
    res = _np_empty(n, dtype)
    if n:
        PyObject_GetBuffer(res, &view, PyBUF_WRITABLE | PyBUF_ND)
        memcpy(view.buf, src, <size_t>n * itemsize)
        PyBuffer_Release(&view)
    return res


ctypedef int32_t (*key_index_fn)(void *ctx, PyObject *key) except -1

cdef enum:
    NOT_MINE = -2   # the key goes to the router's Python path

# Python fallbacks of the public one-key functions (set by their modules).
cdef object _keyslot_py = None
cdef object _token_py = None
cdef object _hash_extended_py = None
cdef dict _pg_type_codes = {}


def _set_fallbacks(*, keyslot=None, token=None, hash_extended=None, pg_type_codes=None):
    global _keyslot_py, _token_py, _hash_extended_py
    if keyslot is not None:
        _keyslot_py = keyslot
    if token is not None:
        _token_py = token
    if hash_extended is not None:
        _hash_extended_py = hash_extended
    if pg_type_codes is not None:
        _pg_type_codes.update({k: PG_CODES.get(v, PG_OTHER) for k, v in pg_type_codes.items()})


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


def keyslot_small(keys):
    """keyslot_array(keys) for a list or tuple of at most 64 exact bytes or
    ASCII str keys (uint16 array), in one pass; None for anything else."""
    cdef uint16_t out[SMALL]
    cdef Py_ssize_t i, m, n = _small_len(keys)
    cdef const char *p
    if n < 0:
        return None
    for i in range(n):
        p = sh_exact_raw(PySequence_Fast_GET_ITEM(keys, i), &m, True, True)
        if p == NULL:
            return None
        out[i] = sh_redis_keyslot(p, <size_t>m)
    return _array_of(out, n, _DT_U16, sizeof(uint16_t))


def token_small(keys):
    """token_array(keys) (blob) for a list or tuple of at most 64 exact
    bytes or ASCII str keys (int64 array), in one pass; None otherwise."""
    cdef int64_t out[SMALL]
    cdef Py_ssize_t i, m, n = _small_len(keys)
    cdef const char *p
    if n < 0:
        return None
    for i in range(n):
        p = sh_exact_raw(PySequence_Fast_GET_ITEM(keys, i), &m, True, True)
        if p == NULL:
            return None
        out[i] = sh_cassandra_token(p, <size_t>m)
    return _array_of(out, n, _DT_I64, sizeof(int64_t))


@cython.binding(False)
def token(key):
    """The ``Murmur3Partitioner`` token of one serialized partition key.

    >>> token(b""), token(b"123")
    (-9223372036854775808, -7468325962851647638)
    """
    if type(key) is bytes:
        return sh_cassandra_token(PyBytes_AS_STRING(key), <size_t>PyBytes_GET_SIZE(key))
    return _token_py(key)


cdef class _Keys:
    """Tables of one router and the C function that routes a key with them."""
    cdef list _keep

    def __cinit__(self):
        self._keep = []

    cdef _own(self, arr, dtype):
        a = np.array(arr, dtype=dtype, copy=True, order="C")
        if a.ndim != 1 or a.shape[0] == 0:
            raise ValueError("a non-empty 1-D table is needed")
        a.setflags(write=False)
        self._keep.append(a)
        return a

    cdef key_index_fn _fn(self):
        return NULL

    def capsule(self):
        """PyCapsule("shardhash.key_index") of the C function; its context is this object."""
        cdef key_index_fn f = self._fn()
        cap = PyCapsule_New(<void *>f, b"shardhash.key_index", NULL)
        PyCapsule_SetContext(cap, <void *>self)  # the router keeps self alive
        return cap


# -- Redis Cluster ---------------------------------------------------------------

cdef class RedisKeys(_Keys):
    """slot table (16384 int32 node indices): route(key) = table[keyslot(key)]."""
    cdef const int32_t *table

    def __init__(self, table):
        t = self._own(table, np.int32)
        if t.shape[0] != 16384:
            raise ValueError("a slot table has 16384 entries")
        cdef const int32_t[::1] tv = t
        self.table = &tv[0]

    cdef key_index_fn _fn(self):
        return _redis_index


cdef int32_t _redis_index(void *ctx, PyObject *key) except -1:
    cdef RedisKeys s = <RedisKeys>ctx
    cdef Py_ssize_t n
    cdef const char *p = sh_exact_raw(key, &n, True, True)
    if p == NULL:
        return NOT_MINE
    return s.table[sh_redis_keyslot(p, <size_t>n)]


# -- Cassandra ---------------------------------------------------------------------

cdef enum:
    CQL_BLOB = 0
    CQL_BIGINT = 1   # also timestamp (8 bytes, big-endian, signed)
    CQL_INT = 2
    CQL_TEXT = 3     # text and ascii: an ASCII str is its bytes in both
    CQL_OTHER = 4

_CQL_CODES = {"blob": CQL_BLOB, "bigint": CQL_BIGINT, "timestamp": CQL_BIGINT, "int": CQL_INT,
              "text": CQL_TEXT, "ascii": CQL_TEXT}


cdef class CassandraKeys(_Keys):
    """ring: sorted int64 tokens, owners: their node indices; a key goes to
    the first token >= its token, wrapping to the first."""
    cdef const int64_t *ring
    cdef const int32_t *owners
    cdef Py_ssize_t m
    cdef int cql

    def __init__(self, ring, owners, cql_type):
        r = self._own(ring, np.int64)
        o = self._own(owners, np.int32)
        if o.shape[0] != r.shape[0]:
            raise ValueError("one owner per ring token")
        cdef const int64_t[::1] rv = r
        cdef const int32_t[::1] ov = o
        self.ring = &rv[0]
        self.owners = &ov[0]
        self.m = r.shape[0]
        self.cql = _CQL_CODES.get(cql_type, CQL_OTHER) if isinstance(cql_type, str) else CQL_OTHER

    cdef key_index_fn _fn(self):
        return _cassandra_index


cdef inline int32_t _ring_owner(CassandraKeys s, int64_t t) noexcept:
    cdef Py_ssize_t lo = 0, hi = s.m, mid
    while lo < hi:  # first token >= t
        mid = (lo + hi) >> 1
        if s.ring[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return s.owners[0 if lo == s.m else lo]


cdef int32_t _cassandra_index(void *ctx, PyObject *key) except -1:
    cdef CassandraKeys s = <CassandraKeys>ctx
    cdef Py_ssize_t n
    cdef const char *p
    cdef long long v
    cdef int overflow = 0
    cdef uint8_t buf[8]
    cdef int i
    if s.cql == CQL_BLOB:
        if not PyBytes_CheckExact(<object>key):
            return NOT_MINE
        return _ring_owner(s, sh_cassandra_token(PyBytes_AS_STRING(<object>key),
                                                 <size_t>PyBytes_GET_SIZE(<object>key)))
    if s.cql == CQL_TEXT:
        p = sh_exact_raw(key, &n, False, True)
        if p == NULL:
            return NOT_MINE
        return _ring_owner(s, sh_cassandra_token(p, <size_t>n))
    if s.cql == CQL_BIGINT or s.cql == CQL_INT:
        if not PyLong_CheckExact(<object>key):
            return NOT_MINE
        v = PyLong_AsLongLongAndOverflow(<object>key, &overflow)
        if overflow != 0:
            return NOT_MINE
        if s.cql == CQL_INT:
            if v < -2147483648 or v > 2147483647:
                return NOT_MINE
            for i in range(4):
                buf[i] = <uint8_t>((<uint64_t>v) >> (24 - 8 * i))
            return _ring_owner(s, sh_cassandra_token(buf, 4))
        for i in range(8):
            buf[i] = <uint8_t>((<uint64_t>v) >> (56 - 8 * i))
        return _ring_owner(s, sh_cassandra_token(buf, 8))
    return NOT_MINE


# -- ketama ------------------------------------------------------------------------

cdef class KetamaKeys(_Keys):
    """A ketama continuum: sorted uint32 points, their owners, the bucket index
    (2**bits + 1 entries); upper: first point > h (uhashring) instead of >=;
    fnv: twemproxy's fnv1a_64 key hash instead of md5; empty_zero: an empty
    key hashes to 0 (twemproxy); str_all: every key is hashed as str(key)
    (uhashring: bytes keys take the Python path)."""
    cdef const uint32_t *points
    cdef const int32_t *owners
    cdef const int32_t *index
    cdef size_t m
    cdef int bits
    cdef bint upper, fnv, empty_zero, str_all

    def __init__(self, points, owners, index, int bits, *, bint upper, bint fnv, bint empty_zero,
                 bint str_all):
        p = self._own(points, np.uint32)
        o = self._own(owners, np.int32)
        x = self._own(index, np.int32)
        if o.shape[0] != p.shape[0] or x.shape[0] != (1 << bits) + 1 or not 1 <= bits <= 24:
            raise ValueError("bad ketama tables")
        cdef const uint32_t[::1] pv = p
        cdef const int32_t[::1] ov = o
        cdef const int32_t[::1] xv = x
        self.points = &pv[0]
        self.owners = &ov[0]
        self.index = &xv[0]
        self.m = <size_t>p.shape[0]
        self.bits = bits
        self.upper = upper
        self.fnv = fnv
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
            return NOT_MINE
        v = PyLong_AsLongLongAndOverflow(<object>key, &overflow)
        if overflow != 0:
            return NOT_MINE
        n = sh_decimal(v, buf)
        p = buf
    if n == 0 and s.empty_zero:
        h = 0
    elif s.fnv:
        h = sh_twemproxy_fnv1a_64(p, <size_t>n)
    else:
        h = sh_md5_u32le(p, <size_t>n)
    sh_ketama_lookup(s.points, s.owners, s.m, s.upper, s.index, s.bits, &h, 1, &out)
    return out


# -- PostgreSQL --------------------------------------------------------------------

import_datetime()

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
    cdef Py_ssize_t i, n
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
    if builtins_type(values) is np.ndarray:
        if values.ndim != 1 or not 0 < values.shape[0] <= SMALL or values.dtype.kind not in "iu":
            return None  # (an empty array: the general path checks its dtype)
        values = values.tolist()
    n = _small_len(values)
    if n < 0:
        return None
    for i in range(n):
        v = <object>PySequence_Fast_GET_ITEM(values, i)
        if v is None or not _pg_value(v, code, True, <uint64_t>sd, &h):
            return None
        out[i] = h
    return _array_of(out, n, _DT_U64, sizeof(uint64_t))


cdef class PgPartitionKeys(_Keys):
    """A PARTITION BY HASH table: column type codes, the remainder -> partition
    table (-1: no partition); a row goes to table[rowhash % len(table)]."""
    cdef int types[32]
    cdef Py_ssize_t ntypes
    cdef const int32_t *table
    cdef uint64_t modulus

    def __init__(self, types, table):
        t = self._own(table, np.int32)
        cdef const int32_t[::1] tv = t
        self.table = &tv[0]
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
            return NOT_MINE
        for i in range(s.ntypes):
            v = (<tuple>row)[i]
            if v is None:
                continue
            r = _pg_value(v, s.types[i], True, SH_PG_HASH_PARTITION_SEED, &h)
            if r == 0:
                return NOT_MINE
            acc = sh_pg_hash_combine64(acc, h)
    elif s.ntypes == 1 and not isinstance(row, tuple) and row is not None:
        if not _pg_value(row, s.types[0], True, SH_PG_HASH_PARTITION_SEED, &h):
            return NOT_MINE
        acc = sh_pg_hash_combine64(0, h)
    else:
        return NOT_MINE
    idx = s.table[acc % s.modulus]
    return idx if idx >= 0 else NOT_MINE  # no partition: the Python path raises


cdef class CitusKeys(_Keys):
    """Citus hash distribution: a value's 32-bit hash (signed) goes to the
    shard whose range holds it: owner[last i with mins[i] <= hash]."""
    cdef const int64_t *mins
    cdef const int32_t *owner
    cdef Py_ssize_t m
    cdef int type_code

    def __init__(self, type_name, mins, owner):
        a = self._own(mins, np.int64)
        o = self._own(owner, np.int32)
        if o.shape[0] != a.shape[0]:
            raise ValueError("one owner per range")
        cdef const int64_t[::1] av = a
        cdef const int32_t[::1] ov = o
        self.mins = &av[0]
        self.owner = &ov[0]
        self.m = a.shape[0]
        self.type_code = PG_CODES.get(type_name, PG_OTHER)

    cdef key_index_fn _fn(self):
        return _citus_index


cdef int32_t _citus_index(void *ctx, PyObject *key) except -1:
    cdef CitusKeys s = <CitusKeys>ctx
    cdef uint64_t h
    cdef int64_t hv
    cdef Py_ssize_t lo = 0, hi = s.m, mid
    if <object>key is None:
        return NOT_MINE
    if not _pg_value(<object>key, s.type_code, False, 0, &h):
        return NOT_MINE
    hv = <int32_t>(<uint32_t>h)
    while lo < hi:  # first min > hv
        mid = (lo + hi) >> 1
        if s.mins[mid] <= hv:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0:
        return NOT_MINE
    return s.owner[lo - 1]


# -- Vitess ------------------------------------------------------------------------

cdef sh_des_ctx _ZERO_KEY_DES
cdef uint8_t _zero_key[8]
_zero_key[:] = [0, 0, 0, 0, 0, 0, 0, 0]
sh_des_setkey(&_ZERO_KEY_DES, _zero_key)


cdef class VitessKeys(_Keys):
    """Vitess key ranges: sorted range starts (uint64 keyspace ids, the first
    0) and their shards; xxhash: the xxhash vindex, else the hash vindex."""
    cdef const uint64_t *starts
    cdef const int32_t *owners
    cdef Py_ssize_t m
    cdef bint xx

    def __init__(self, starts, owners, bint xxhash):
        a = self._own(starts, np.uint64)
        o = self._own(owners, np.int32)
        if o.shape[0] != a.shape[0] or a[0] != 0:
            raise ValueError("one owner per range, the first starting at 0")
        cdef const uint64_t[::1] av = a
        cdef const int32_t[::1] ov = o
        self.starts = &av[0]
        self.owners = &ov[0]
        self.m = a.shape[0]
        self.xx = xxhash

    cdef key_index_fn _fn(self):
        return _vitess_index


cdef int32_t _vitess_index(void *ctx, PyObject *key) except -1:
    cdef VitessKeys s = <VitessKeys>ctx
    cdef long long v
    cdef int overflow = 0
    cdef uint64_t k, hx
    cdef Py_ssize_t n, lo = 0, hi, mid
    cdef const char *p
    cdef char buf[24]
    cdef int i
    if s.xx:
        p = sh_exact_raw(key, &n, True, True)
        if p == NULL:
            if <object>key is None:
                p = buf
                n = 0
            elif PyLong_CheckExact(<object>key):
                v = PyLong_AsLongLongAndOverflow(<object>key, &overflow)
                if overflow != 0:
                    return NOT_MINE
                n = sh_decimal(v, buf)
                p = buf
            else:
                return NOT_MINE
        hx = sh_xxh64(p, <size_t>n, 0)
        k = 0
        for i in range(8):  # the little-endian digest bytes, read big-endian
            k = (k << 8) | ((hx >> (8 * i)) & 0xFF)
    else:
        if not PyLong_CheckExact(<object>key):
            return NOT_MINE
        v = PyLong_AsLongLongAndOverflow(<object>key, &overflow)
        if overflow != 0:
            return NOT_MINE
        k = sh_des_encrypt(&_ZERO_KEY_DES, <uint64_t>v)
    hi = s.m
    while lo < hi:  # first start > k
        mid = (lo + hi) >> 1
        if s.starts[mid] <= k:
            lo = mid + 1
        else:
            hi = mid
    return s.owners[lo - 1]  # starts[0] == 0 <= k: lo >= 1


# -- MongoDB -----------------------------------------------------------------------

cdef class MongoKeys(_Keys):
    """MongoDB hashed chunks: sorted chunk minima (int64, the first INT64_MIN)
    and their shards; int, float and ASCII str values are hashed here."""
    cdef const int64_t *mins
    cdef const int32_t *owners
    cdef Py_ssize_t m

    def __init__(self, mins, owners):
        a = self._own(mins, np.int64)
        o = self._own(owners, np.int32)
        if o.shape[0] != a.shape[0] or a[0] != -(1 << 63):
            raise ValueError("one owner per chunk, the first starting at MinKey")
        cdef const int64_t[::1] av = a
        cdef const int32_t[::1] ov = o
        self.mins = &av[0]
        self.owners = &ov[0]
        self.m = a.shape[0]

    cdef key_index_fn _fn(self):
        return _mongo_index


cdef enum:
    MONGO_STR_MAX = 240   # longer strings take the Python path

cdef int32_t _mongo_index(void *ctx, PyObject *key) except -1:
    cdef MongoKeys s = <MongoKeys>ctx
    cdef long long v
    cdef int overflow = 0
    cdef int64_t h
    cdef Py_ssize_t n, lo = 0, hi, mid, i
    cdef const char *p
    cdef uint8_t buf[MONGO_STR_MAX + 16]
    cdef uint8_t digest[16]
    cdef uint64_t u
    cdef uint32_t w
    if PyLong_CheckExact(<object>key):
        v = PyLong_AsLongLongAndOverflow(<object>key, &overflow)
        if overflow != 0:
            return NOT_MINE
        h = <int64_t>sh_mongo_hash_int64(v)
    elif type(<object>key) is float:
        h = <int64_t>sh_mongo_hash_int64(sh_mongo_double_to_long(<double>(<object>key)))
    else:
        p = sh_exact_raw(key, &n, False, True)
        if p == NULL or n > MONGO_STR_MAX or (n and memchr(p, 0, <size_t>n) != NULL):
            return NOT_MINE
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
    hi = s.m
    while lo < hi:  # first minimum > h
        mid = (lo + hi) >> 1
        if s.mins[mid] <= h:
            lo = mid + 1
        else:
            hi = mid
    return s.owners[lo - 1]  # mins[0] == INT64_MIN <= h: lo >= 1
