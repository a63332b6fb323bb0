# distutils: sources = [src/shardhash/_core/sh_md5.c, src/shardhash/_core/sh_crc16.c, src/shardhash/_core/sh_cassandra.c]
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

from libc.stdint cimport uint8_t, uint16_t, uint32_t, int32_t, int64_t, uint64_t
from cpython.ref cimport PyObject
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_SetContext

import numpy as np

cdef extern from "sh_crc16.h" nogil:
    uint16_t sh_redis_keyslot(const void *key, size_t len)

cdef extern from "sh_cassandra.h" nogil:
    int64_t sh_cassandra_token(const void *data, size_t len)

cdef extern from "sh_md5.h" nogil:
    uint32_t sh_md5_u32le(const void *data, size_t len)
    uint32_t sh_twemproxy_fnv1a_64(const void *data, size_t len)
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

ctypedef int32_t (*key_index_fn)(void *ctx, PyObject *key) noexcept

cdef enum:
    NOT_MINE = -2   # the key goes to the router's Python path

# Python fallbacks of the public one-key functions (set by their modules).
cdef object _keyslot_py = None
cdef object _token_py = None


def _set_fallbacks(*, keyslot=None, token=None):
    global _keyslot_py, _token_py
    if keyslot is not None:
        _keyslot_py = keyslot
    if token is not None:
        _token_py = token


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


cdef int32_t _redis_index(void *ctx, PyObject *key) noexcept:
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


cdef int32_t _cassandra_index(void *ctx, PyObject *key) noexcept:
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


cdef int32_t _ketama_index(void *ctx, PyObject *key) noexcept:
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
