# distutils: sources = [src/shardhash/_core/hash/sh_md5.c, src/shardhash/_core/hash/sh_des.c, src/shardhash/_core/hash/sh_crc16.c, src/shardhash/_core/hash/sh_xxhash.c, src/shardhash/_core/hash/sh_xxhash_avx512.c, src/shardhash/_core/hash/sh_xxhash_batch.c, src/shardhash/_core/compat/sh_redis.c, src/shardhash/_core/compat/sh_cassandra.c, src/shardhash/_core/compat/sh_cassandra_avx512.c, src/shardhash/_core/compat/sh_cassandra_avx2.c, src/shardhash/_core/compat/sh_ketama.c, src/shardhash/_core/compat/sh_twemproxy.c, src/shardhash/_core/compat/sh_mongo.c, src/shardhash/_core/compat/sh_pg.c, src/shardhash/_core/compat/sh_pg_avx2.c, src/shardhash/_core/common/sh_cpu.c, src/shardhash/_core/compat/sh_guava.c]
"""Compiled bindings of the compatibility modes (private).

One section per system -- Redis Cluster, Cassandra, ketama/twemproxy,
Vitess, MongoDB, PostgreSQL/Citus, Guava -- each with its one-key functions,
its batch kernels and the C key router its compat router hands to
``RouterCore._use_native_keys``.  The public API is in the modules of
:mod:`shardhash.compat` (``redis``, ``cassandra``, ``ketama``, ``vitess``,
``mongo``, ``postgres``, ``citus``, ``guava``).

Every batch kernel validates its inputs with the GIL held (offsets and
``out=`` through ``shardhash._common``), then runs the C core without the
GIL, split over threads by ``shardhash._common.run``.  Variable-length keys
come as Arrow-style ``(data, offsets)``: key i is
``data[offsets[i]:offsets[i+1]]``.  The kernels over Python sequences
(``*_seq``) run the C core on the keys as they read them, on the calling
thread with the GIL held.

The one-key functions (``keyslot``, ``token``, ``hash_extended``) and the
key routers take the common exact key types (``bytes``, ``str`` stored as
compact ASCII, ``int`` that fits 64 bits) in C; every other key goes to the
module's pure-Python function, which defines the answer and raises every
error.  A key router is a C function ``int32_t f(void *ctx, PyObject *key)``
returning the shard index, -1 with a Python exception set, or
``KEY_NOT_MINE`` (the router then calls its ``_route_index_slow``).
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_Check, PyBytes_CheckExact
from cpython.datetime cimport (import_datetime, PyDate_CheckExact, PyDateTime_CheckExact, PyDateTime_GET_YEAR,
                               PyDateTime_GET_MONTH, PyDateTime_GET_DAY, PyDateTime_DATE_GET_HOUR,
                               PyDateTime_DATE_GET_MINUTE, PyDateTime_DATE_GET_SECOND,
                               PyDateTime_DATE_GET_MICROSECOND, datetime_tzinfo)
from cpython.list cimport PyList_GET_ITEM
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_SetContext
from cpython.ref cimport PyObject
from cpython.sequence cimport PySequence_Fast_GET_ITEM
from cpython.tuple cimport PyTuple_GET_ITEM
from cpython.unicode cimport PyUnicode_Check, PyUnicode_CheckExact
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, INT64_MIN
from libc.string cimport memchr, memcpy, memset

from shardhash._common cimport (sh_job, sh_chunk_fn, key_index_fn, KEY_NOT_MINE, sh_exact_raw, sh_decimal, run,
                                check_offsets, check_out, address, SH_OK)
from shardhash._npy cimport (import_numpy, is_ndarray_exact, new_array, array_data, int_array, NP_INT64, NP_UINT16,
                             NP_UINT64)

import uuid as _uuid_mod

import numpy as np

import_numpy()

from shardhash import _parallel

__all__ = [
    "pack_keys", "cassandra_token_seq", "redis_keyslot_seq", "list_walk_floor", "list_walk_floor_refcounted",
    "crc16_xmodem",
    "redis_keyslot", "keyslot", "keyslot_small", "redis_keyslot_offsets", "RedisKeys",
    "cassandra_token", "token", "token_small", "cassandra_token_offsets", "cassandra_token_bigint",
    "cassandra_token_int", "cassandra_token_cql", "cassandra_ring_index", "CassandraKeys", "md5", "ketama_hash",
    "twemproxy_fnv1a_64", "ketama_bucket_index", "ketama_hash_offsets", "ketama_route_offsets",
    "ketama_lookup", "KetamaKeys", "des_encrypt_zero_key", "des_decrypt_zero_key", "xxh64",
    "des_encrypt_zero_key_array", "xxh64_offsets", "xxh64_decimal_int64", "VitessKeys",
    "mongo_hash_int64", "mongo_double_to_long", "mongo_hash_int64_array", "mongo_hash_double_array",
    "MongoKeys", "hash_extended", "hash_extended_small", "PgPartitionKeys", "CitusKeys",
    "hash_uint32_extended", "hash_uint32", "fold_int8", "hash_combine64", "hash_bytes_extended",
    "hash_bytes", "float8_extended", "float8_32", "int_extended", "int_32", "float8_extended_array",
    "float8_32_array", "fixed_extended", "fixed_32", "varlen_extended", "varlen_32", "combine64",
    "remainder", "guava_consistent_hash", "guava_consistent_hash_array", "PG_CODES",
    "HASH_PARTITION_SEED", "simd_kernels", "cassandra_kernels", "xxh64_kernels", "vitess_xxhash_seq",
    "cassandra_ring_owner", "first_not_bytes_like", "first_not_type", "first_of_type", "first_not_ascii_str",
    "find_byte",
]

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t *) except NULL
    bytes PyUnicode_AsUTF8String(object)

cdef extern from "sh_crc16.h" nogil:
    uint16_t sh_crc16_xmodem(const void *data, size_t len)

cdef extern from "sh_redis.h" nogil:
    uint16_t sh_redis_keyslot(const void *key, size_t len)
    void sh_redis_keyslot_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint16_t *out)
    void sh_redis_keyslot_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint16_t *out)
    void sh_redis_keyslot_ptrs16(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint16_t *out)

cdef extern from "sh_cassandra.h" nogil:
    int64_t sh_cassandra_token(const void *data, size_t len)
    void sh_cassandra_token_offsets(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)
    void sh_cassandra_token_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out)
    void sh_cassandra_token_ptrs16(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out)
    void sh_cassandra_token_bigint(const int64_t *values, size_t n, int64_t *out)
    void sh_cassandra_token_int(const int32_t *values, size_t n, int64_t *out)
    void sh_cassandra_ring_index(const int64_t *ring, size_t m, const int64_t *tokens, size_t n,
                                 int64_t *out)
    void sh_cassandra_ring_owner(const int64_t *ring, const int32_t *owners, size_t m, const int64_t *tokens,
                                 size_t n, int32_t *out)
    void sh_cassandra_init()
    const char *sh_cassandra_kernel()
    int sh_cassandra_avx512_available()
    int sh_cassandra_avx2_available()
    void sh_cassandra_token_offsets_scalar(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)
    void sh_cassandra_token_offsets_avx2(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)
    void sh_cassandra_token_offsets_avx512(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)

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

cdef extern from "sh_mongo.h" nogil:
    uint64_t sh_mongo_hash_int64(int64_t v)
    void sh_mongo_hash_int64_batch(const int64_t *values, size_t n, uint64_t *out)
    int64_t sh_mongo_double_to_long(double d)
    void sh_mongo_hash_double_batch(const double *values, size_t n, uint64_t *out)

cdef extern from "sh_des.h" nogil:
    ctypedef struct sh_des_ctx:
        pass
    void sh_des_setkey(sh_des_ctx *ctx, const uint8_t *key)
    uint64_t sh_des_encrypt(const sh_des_ctx *ctx, uint64_t block)
    uint64_t sh_des_decrypt(const sh_des_ctx *ctx, uint64_t block)
    void sh_des_encrypt_batch(const sh_des_ctx *ctx, const uint64_t *inp, size_t n, uint64_t *out)

cdef extern from "sh_xxhash.h" nogil:
    uint64_t sh_xxh64(const void *data, size_t len, uint64_t seed)
    void sh_xxh64_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed, uint64_t *out)
    void sh_xxh64_offsets_batch(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                                uint64_t *out)
    void sh_xxh64_batch_init()
    const char *sh_xxh64_batch_kernel()
    int sh_xxh64_avx512_available()
    void sh_xxh64_offsets_avx512(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                                 uint64_t *out)
    void sh_xxh64_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint64_t seed, uint64_t *out)
    void sh_xxh64_ptrs32_batch(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint64_t seed,
                               uint64_t *out)

cdef extern from "sh_common.h" nogil:
    uint64_t sh_swap64(uint64_t x)

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

cdef extern from "sh_guava.h" nogil:
    int32_t sh_guava_consistent_hash(int64_t input, int32_t buckets)
    void sh_guava_consistent_hash_batch(const int64_t *keys, size_t n, int32_t buckets, int32_t *out)


cdef object _DT_U16 = np.dtype(np.uint16)
cdef object _DT_U32 = np.dtype(np.uint32)
cdef object _DT_I32 = np.dtype(np.int32)
cdef object _DT_I64 = np.dtype(np.int64)
cdef object _DT_U64 = np.dtype(np.uint64)

cdef const uint8_t _EMPTY[1]


cdef inline const uint8_t *_bytes_of(const uint8_t[::1] data) noexcept:
    # An empty buffer has no element pointer; no key reads from it.
    return &data[0] if data.shape[0] else _EMPTY


# ============================================================================
# Keys in bulk: Arrow-style (data, offsets), or read in place from a sequence
# ============================================================================


cdef inline bytes _as_bytes(object k, Py_ssize_t i, object convert, bint raw_bytes=True):
    cdef Py_ssize_t n
    cdef const char *p
    if not raw_bytes and not isinstance(k, str):
        pass
    elif PyBytes_Check(k):
        return <bytes>k
    if isinstance(k, str):
        p = PyUnicode_AsUTF8AndSize(k, &n)
        return p[:n]
    elif raw_bytes and isinstance(k, (bytearray, memoryview)):
        return bytes(k)
    if convert is not None:
        try:
            b = convert(k)
        except (TypeError, ValueError, OverflowError) as e:
            raise type(e)(f"key at position {i}: {e}") from None
        if not PyBytes_Check(b):
            raise TypeError(f"key at position {i}: converter returned {type(b).__name__}, not bytes")
        return <bytes>b
    raise TypeError(f"key at position {i} must be bytes or str, not {type(k).__name__} ({k!r:.60})")


def _arrow_pack(obj, bint as_text=False):
    """(data uint8, offsets int64) of an Arrow binary/string array; None if
    ``obj`` is not Arrow data; a list of Python values when the keys need a
    per-key conversion (non-string types, or binary keys when ``as_text``)."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    if isinstance(obj, pa.ChunkedArray):
        obj = obj.combine_chunks()
    elif not isinstance(obj, pa.Array):
        if hasattr(obj, "__arrow_c_array__"):
            obj = pa.array(obj)
        elif hasattr(obj, "__arrow_c_stream__"):
            obj = pa.chunked_array(obj).combine_chunks()
        else:
            return None
    t = obj.type
    is_view = bool((getattr(pa.types, "is_binary_view", None) and pa.types.is_binary_view(t)) or
                   (getattr(pa.types, "is_string_view", None) and pa.types.is_string_view(t)))
    is_text = pa.types.is_string(t) or pa.types.is_large_string(t) or \
        bool(getattr(pa.types, "is_string_view", None) and pa.types.is_string_view(t))
    is_bin = pa.types.is_binary(t) or pa.types.is_large_binary(t) or is_view
    if obj.null_count:
        first = obj.is_null().index(True).as_py()
        raise ValueError(f"key at position {first} is null")
    if not (is_text or is_bin) or (as_text and not is_text):
        return obj.to_pylist()
    if is_view:
        obj = obj.cast(pa.large_binary())
        t = obj.type
    if obj.null_count:
        first = obj.is_null().index(True).as_py()
        raise ValueError(f"key at position {first} is null")
    n = len(obj)
    bufs = obj.buffers()
    odt = np.int64 if (pa.types.is_large_binary(t) or pa.types.is_large_string(t)) else np.int32
    if n == 0:
        return np.zeros(1, np.uint8), np.zeros(1, np.int64)
    offsets = np.frombuffer(bufs[1], dtype=odt)[obj.offset: obj.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    return data, offsets


cdef extern from *:
    """
    /* pack_keys of a list or tuple of exact bytes and compact ASCII str
     * keys, in C (borrowed references only, no Python code): pass 1 sums
     * their sizes and returns the index of the first other key (n when
     * there is none); pass 2 copies them and their offsets, and returns -1
     * if a key is no longer one of those or no longer fits (the sequence
     * changed in between: allocating the output can run a finalizer). */
    static Py_ssize_t sh_pack_total(PyObject *const *items, Py_ssize_t n, Py_ssize_t *total)
    {
    #if defined(PYPY_VERSION) || defined(Py_LIMITED_API)
        (void)items; (void)n; *total = 0;
        return 0;
    #else
        Py_ssize_t i, t = 0;
        for (i = 0; i < n; i++) {
            PyObject *o = items[i];
            if (PyBytes_CheckExact(o))
                t += PyBytes_GET_SIZE(o);
            else if (PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o))
                t += PyUnicode_GET_LENGTH(o);
            else
                break;
        }
        *total = t;
        return i;
    #endif
    }
    static int sh_pack_copy(PyObject *const *items, Py_ssize_t n, uint8_t *data, Py_ssize_t total,
                            int64_t *offsets)
    {
    #if defined(PYPY_VERSION) || defined(Py_LIMITED_API)
        (void)items; (void)n; (void)data; (void)total; (void)offsets;
        return -1;
    #else
        Py_ssize_t i, pos = 0;
        offsets[0] = 0;
        for (i = 0; i < n; i++) {
            PyObject *o = items[i];
            const void *p;
            Py_ssize_t m;
            if (PyBytes_CheckExact(o)) {
                p = PyBytes_AS_STRING(o);
                m = PyBytes_GET_SIZE(o);
            } else if (PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o)) {
                p = PyUnicode_DATA(o);
                m = PyUnicode_GET_LENGTH(o);
            } else {
                return -1;
            }
            if (m > total - pos) return -1;
            if (m) memcpy(data + pos, p, (size_t)m);
            pos += m;
            offsets[i + 1] = (int64_t)pos;
        }
        return pos == total ? 0 : -1;
    #endif
    }
    """
    Py_ssize_t sh_pack_total(PyObject *const *items, Py_ssize_t n, Py_ssize_t *total)
    int sh_pack_copy(PyObject *const *items, Py_ssize_t n, uint8_t *data, Py_ssize_t total, int64_t *offsets)
    PyObject **PySequence_Fast_ITEMS(object o)


def pack_keys(keys, convert=None, bint raw_bytes=True):
    """Lay out keys as Arrow-style ``(data, offsets)``: key i is
    ``data[offsets[i]:offsets[i+1]]``.

    bytes-like keys are taken as they are (with ``raw_bytes=False`` they go
    through ``convert`` too), ``str`` as UTF-8; any other key goes through
    ``convert(key) -> bytes`` or raises TypeError naming its position.  Arrow binary/string arrays (and objects exporting the Arrow
    C interface) are used without copying the data.
    """
    cdef Py_ssize_t i, n, total = 0, pos = 0, m
    cdef int64_t[::1] off
    cdef uint8_t[::1] dat
    cdef list seq
    cdef object k
    cdef const char *p
    cdef dict other = {}
    if isinstance(keys, (bytes, str, bytearray, memoryview)):
        raise TypeError("keys must be a sequence of keys, not a single "
                        f"{type(keys).__name__}")
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            raise ValueError(f"keys must be one-dimensional, got shape {keys.shape}")
        seq = keys.tolist()
    elif isinstance(keys, (list, tuple)):
        # exact bytes (taken as they are) and ASCII str keys: both passes in
        # C, no copy of the list (no key's code runs)
        n = len(keys)
        if raw_bytes and sh_pack_total(PySequence_Fast_ITEMS(keys), n, &total) == n:
            offsets = np.empty(n + 1, dtype=np.int64)
            data = np.empty(max(total, 1), dtype=np.uint8)
            off = offsets
            dat = data
            if n == len(keys) and sh_pack_copy(PySequence_Fast_ITEMS(keys), n, &dat[0], total, &off[0]) == 0:
                return data, offsets
            raise RuntimeError("keys changed while being packed")
        total = 0
        # a private copy: a key's own code (__str__, __bytes__, convert) may
        # change the caller's list while it is being packed
        seq = list(keys)
    else:
        packed = _arrow_pack(keys, not raw_bytes)
        if isinstance(packed, tuple):
            return packed
        seq = packed if packed is not None else list(keys)
    n = len(seq)
    # pass 1: sizes (str keys: their cached UTF-8 form; others converted once)
    for i in range(n):
        k = seq[i]
        if raw_bytes and PyBytes_Check(k):
            total += PyBytes_GET_SIZE(k)
        elif isinstance(k, str):
            PyUnicode_AsUTF8AndSize(k, &m)
            total += m
        else:
            b = _as_bytes(k, i, convert, raw_bytes)
            other[i] = b
            total += PyBytes_GET_SIZE(b)
    offsets = np.empty(n + 1, dtype=np.int64)
    data = np.empty(max(total, 1), dtype=np.uint8)
    off = offsets
    dat = data
    off[0] = 0
    # pass 2: copy
    for i in range(n):
        k = seq[i]
        if raw_bytes and PyBytes_Check(k):
            m = PyBytes_GET_SIZE(k)
            p = PyBytes_AS_STRING(k)
        elif isinstance(k, str):
            p = PyUnicode_AsUTF8AndSize(k, &m)
        else:
            k = other[i]
            m = PyBytes_GET_SIZE(k)
            p = PyBytes_AS_STRING(k)
        if pos + m > total:
            raise RuntimeError("keys changed while being packed")
        if m:
            memcpy(&dat[pos], p, m)
        pos += m
        off[i + 1] = pos
    if pos != total:
        raise RuntimeError("keys changed while being packed")
    return data, offsets


cdef extern from *:
    """
    /* The walk over a list's (or tuple's) items that the *_seq kernels share:
     * items[i..end) are read while each is an exact bytes object or an
     * exact str stored as compact ASCII (its characters are its UTF-8
     * bytes), into ptrs/lens; the walk stops at the first other key and
     * returns its index (end when there is none).  Borrowed references
     * only: no reference count is touched, so the keys' memory is read,
     * never written.  The object `ahead` items on is prefetched (its
     * header and first bytes, where the type, size and data are).
     *
     * The data of both kinds of key is preceded, inside the same object,
     * by at least 16 bytes of header: the kernels may read them
     * (sh_cassandra_token_ptrs16, sh_redis_keyslot_ptrs16). */
    #if defined(__GNUC__) || defined(__clang__)
    #  define SH_PREFETCH(p) __builtin_prefetch((const void *)(p))
    #else
    #  define SH_PREFETCH(p) ((void)0)
    #endif
    #define SH_SEQ_AHEAD 8
    static Py_ssize_t sh_seq_walk(PyObject *const *items, Py_ssize_t i, Py_ssize_t end, Py_ssize_t n,
                                  const uint8_t **ptrs, int64_t *lens)
    {
    #if defined(PYPY_VERSION) || defined(Py_LIMITED_API)
        (void)items; (void)end; (void)n; (void)ptrs; (void)lens;
        return i;
    #else
        Py_ssize_t k = 0;
        for (; i < end; i++, k++) {
            PyObject *o = items[i];
            if (i + SH_SEQ_AHEAD < n) SH_PREFETCH(items[i + SH_SEQ_AHEAD]);
            if (PyBytes_CheckExact(o)) {
                ptrs[k] = (const uint8_t *)PyBytes_AS_STRING(o);
                lens[k] = (int64_t)PyBytes_GET_SIZE(o);
            } else if (PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o)) {
                ptrs[k] = (const uint8_t *)PyUnicode_DATA(o);
                lens[k] = (int64_t)PyUnicode_GET_LENGTH(o);
            } else {
                break;
            }
        }
        return i;
    #endif
    }
    /* The first of items[0..n) that fails a test; n when none does.
     * Borrowed references only, no Python code.  The tests: 0, a bytes
     * (or subclass), bytearray (or subclass) or memoryview object; 1, an
     * object of type exactly tp; 2, an object of any other type than tp;
     * 3, an exact str of ASCII characters only. */
    static Py_ssize_t sh_first_failing(PyObject *const *items, Py_ssize_t n, int test, PyObject *tp)
    {
        Py_ssize_t i;
        for (i = 0; i < n; i++) {
            PyObject *o = items[i];
            int ok;
            switch (test) {
            case 0: ok = PyBytes_Check(o) || PyByteArray_Check(o) || PyMemoryView_Check(o); break;
            case 1: ok = (PyObject *)Py_TYPE(o) == tp; break;
            case 2: ok = (PyObject *)Py_TYPE(o) != tp; break;
            default: ok = PyUnicode_CheckExact(o) && PyUnicode_IS_ASCII(o); break;
            }
            if (!ok) break;
        }
        return i;
    }
    /* The header before the data of a bytes object is at least 16 bytes. */
    #if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
    typedef char sh_bytes_header_check[offsetof(PyBytesObject, ob_sval) >= 16 ? 1 : -1];
    typedef char sh_ascii_header_check[sizeof(PyASCIIObject) >= 16 ? 1 : -1];
    /* 1 when it is at least 32 bytes for both kinds of key (64-bit builds):
     * the kernels that read 32 bytes before a key's end may run on them. */
    #  define SH_SEQ_HEADER32 (offsetof(PyBytesObject, ob_sval) >= 32 && sizeof(PyASCIIObject) >= 32)
    #else
    #  define SH_SEQ_HEADER32 0
    #endif
    """
    Py_ssize_t sh_seq_walk(PyObject *const *items, Py_ssize_t i, Py_ssize_t end, Py_ssize_t n,
                           const uint8_t **ptrs, int64_t *lens)
    Py_ssize_t sh_first_failing(PyObject *const *items, Py_ssize_t n, int test, PyObject *tp)
    PyObject **PySequence_Fast_ITEMS(object o)
    const bint SH_SEQ_HEADER32


cdef extern from *:
    """
    /* Two or more threads over a list of keys (Cassandra tokens): the
     * calling thread walks the list with the GIL held, as the one-thread
     * path does, and hands each chunk of SH_PIPE_CHUNK keys' pointers and
     * lengths to helper threads that hash it (they may take every chunk;
     * the calling thread hashes one itself whenever more than SH_PIPE_LAG
     * wait, so the work is balanced whatever the speeds).  The helpers are
     * plain OS threads (PyThread_start_new_thread) that never touch a Python
     * object or the interpreter: they read the keys' bytes and the pipe,
     * and write the output.  The calling thread holds the GIL from the
     * first key read to the last key hashed, so no Python code runs in
     * between (the walk runs none) and no key can be freed or changed
     * while a helper reads it; it waits for every helper to exit before it
     * returns or raises.  Chunks go through SH_PIPE_SLOTS slots in turn; a
     * slot is refilled only once its previous chunk is hashed.  The
     * synchronisation is PyThread locks (usable without the GIL): `mu`
     * guards the counters, a sleeping thread waits on its own wake lock. */
    #include "pythread.h"
    #define SH_PIPE_CHUNK   8192
    #define SH_PIPE_SLOTS   8
    #define SH_PIPE_HELPERS 7
    #define SH_PIPE_LAG     4
    typedef void (*sh_pipe_kernel)(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out);
    typedef struct sh_pipe sh_pipe;
    typedef struct { sh_pipe *pipe; int h; } sh_pipe_arg;
    struct sh_pipe {
        PyThread_type_lock mu;
        PyThread_type_lock wake[SH_PIPE_HELPERS]; /* helper h sleeps on it (held otherwise) */
        PyThread_type_lock gone[SH_PIPE_HELPERS]; /* released by helper h as it exits */
        PyThread_type_lock main_wake;             /* the calling thread sleeps on it */
        sh_pipe_arg args[SH_PIPE_HELPERS];
        int sleeping[SH_PIPE_HELPERS], main_sleeping, started, closed;
        Py_ssize_t n, published, claimed;         /* chunks [0, published) are filled */
        Py_ssize_t done[SH_PIPE_SLOTS];           /* the last chunk hashed in each slot */
        sh_pipe_kernel fn;
        int64_t *out;
        const uint8_t *ptrs[SH_PIPE_SLOTS][SH_PIPE_CHUNK];
        int64_t lens[SH_PIPE_SLOTS][SH_PIPE_CHUNK];
    };
    #define SH_LOCK(l)   PyThread_acquire_lock((l), WAIT_LOCK)
    #define SH_UNLOCK(l) PyThread_release_lock(l)

    static void sh_pipe_hash(sh_pipe *q, Py_ssize_t c)
    {
        Py_ssize_t s = c % SH_PIPE_SLOTS, start = c * SH_PIPE_CHUNK;
        Py_ssize_t m = q->n - start < SH_PIPE_CHUNK ? q->n - start : SH_PIPE_CHUNK;
        q->fn(q->ptrs[s], q->lens[s], (size_t)m, q->out + start);
    }

    /* With mu held: hash the next chunk waiting, mu released meanwhile. */
    static void sh_pipe_take(sh_pipe *q)
    {
        Py_ssize_t c = q->claimed++;
        SH_UNLOCK(q->mu);
        sh_pipe_hash(q, c);
        SH_LOCK(q->mu);
        q->done[c % SH_PIPE_SLOTS] = c;
        if (q->main_sleeping) {
            q->main_sleeping = 0;
            SH_UNLOCK(q->main_wake);
        }
    }

    static void sh_pipe_helper(void *arg)
    {
        sh_pipe *q = ((sh_pipe_arg *)arg)->pipe;
        int h = ((sh_pipe_arg *)arg)->h;
        SH_LOCK(q->mu);
        for (;;) {
            if (q->claimed < q->published) {
                sh_pipe_take(q);
            } else if (q->closed) {
                break;
            } else {
                q->sleeping[h] = 1;
                SH_UNLOCK(q->mu);
                SH_LOCK(q->wake[h]);
                SH_LOCK(q->mu);
            }
        }
        SH_UNLOCK(q->mu);
        SH_UNLOCK(q->gone[h]); /* the last touch of the pipe */
    }

    /* A lock no thread uses any more, freed unlocked (as CPython's own
     * lock objects are). */
    static void sh_pipe_free_lock(PyThread_type_lock l)
    {
        if (l == NULL) return;
        PyThread_acquire_lock(l, NOWAIT_LOCK);
        PyThread_release_lock(l);
        PyThread_free_lock(l);
    }

    static void sh_pipe_free(sh_pipe *q)
    {
        int h;
        sh_pipe_free_lock(q->mu);
        sh_pipe_free_lock(q->main_wake);
        for (h = 0; h < SH_PIPE_HELPERS; h++) {
            sh_pipe_free_lock(q->wake[h]);
            sh_pipe_free_lock(q->gone[h]);
        }
        PyMem_RawFree(q);
    }

    /* A pipe for n keys with up to `helpers` helper threads started; NULL
     * when out of memory.  With no helper started the calling thread hashes
     * every chunk itself. */
    static sh_pipe *sh_pipe_new(Py_ssize_t n, int64_t *out, sh_pipe_kernel fn, int helpers)
    {
        sh_pipe *q = (sh_pipe *)PyMem_RawMalloc(sizeof(sh_pipe));
        int h, ok;
        if (q == NULL) return NULL;
        memset(q, 0, offsetof(sh_pipe, ptrs)); /* not the slots */
        q->n = n;
        q->out = out;
        q->fn = fn;
        for (h = 0; h < SH_PIPE_SLOTS; h++) q->done[h] = -1;
        q->mu = PyThread_allocate_lock();
        q->main_wake = PyThread_allocate_lock();
        ok = q->mu != NULL && q->main_wake != NULL && PyThread_acquire_lock(q->main_wake, NOWAIT_LOCK);
        if (!ok) {
            sh_pipe_free(q);
            return NULL;
        }
        if (helpers > SH_PIPE_HELPERS) helpers = SH_PIPE_HELPERS;
        for (h = 0; h < helpers; h++) {
            q->wake[h] = PyThread_allocate_lock();
            q->gone[h] = PyThread_allocate_lock();
            if (q->wake[h] == NULL || q->gone[h] == NULL || !PyThread_acquire_lock(q->wake[h], NOWAIT_LOCK) ||
                !PyThread_acquire_lock(q->gone[h], NOWAIT_LOCK))
                break;
            q->args[h].pipe = q;
            q->args[h].h = h;
            if (PyThread_start_new_thread(sh_pipe_helper, &q->args[h]) == PYTHREAD_INVALID_THREAD_ID) break;
            q->started++;
        }
        return q;
    }

    /* Before chunk c is written into its slot: the slot's previous chunk
     * hashed (by this thread if no helper has taken it). */
    static void sh_pipe_slot(sh_pipe *q, Py_ssize_t c)
    {
        Py_ssize_t prev = c - SH_PIPE_SLOTS;
        if (prev < 0) return;
        SH_LOCK(q->mu);
        while (q->done[c % SH_PIPE_SLOTS] != prev) {
            if (q->claimed <= prev) {
                sh_pipe_take(q);
            } else {
                q->main_sleeping = 1;
                SH_UNLOCK(q->mu);
                SH_LOCK(q->main_wake);
                SH_LOCK(q->mu);
            }
        }
        SH_UNLOCK(q->mu);
    }

    static void sh_pipe_wake_one(sh_pipe *q)
    {
        int h;
        for (h = 0; h < q->started; h++)
            if (q->sleeping[h]) {
                q->sleeping[h] = 0;
                SH_UNLOCK(q->wake[h]);
                return;
            }
    }

    /* Chunk c is filled: hand it over; hash the oldest waiting chunk here
     * while more than SH_PIPE_LAG wait (every chunk, with no helper). */
    static void sh_pipe_publish(sh_pipe *q, Py_ssize_t c)
    {
        SH_LOCK(q->mu);
        q->published = c + 1;
        sh_pipe_wake_one(q);
        while (q->published - q->claimed > (q->started ? SH_PIPE_LAG : 0)) sh_pipe_take(q);
        SH_UNLOCK(q->mu);
    }

    /* Every chunk filled hashed (when `hash_rest`; else those not yet taken
     * are dropped), every helper gone, the pipe freed. */
    static void sh_pipe_finish(sh_pipe *q, int hash_rest)
    {
        int h;
        SH_LOCK(q->mu);
        q->closed = 1;
        if (!hash_rest) q->published = q->claimed;
        for (h = 0; h < q->started; h++)
            if (q->sleeping[h]) {
                q->sleeping[h] = 0;
                SH_UNLOCK(q->wake[h]);
            }
        while (q->claimed < q->published) sh_pipe_take(q);
        SH_UNLOCK(q->mu);
        for (h = 0; h < q->started; h++) SH_LOCK(q->gone[h]);
        sh_pipe_free(q);
    }

    """
    ctypedef void (*sh_pipe_kernel)(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out)
    ctypedef struct sh_pipe:
        const uint8_t *ptrs[8][8192]
        int64_t lens[8][8192]
    enum:
        SH_PIPE_CHUNK
        SH_PIPE_SLOTS
    sh_pipe *sh_pipe_new(Py_ssize_t n, int64_t *out, sh_pipe_kernel fn, int helpers)
    void sh_pipe_slot(sh_pipe *q, Py_ssize_t c)
    void sh_pipe_publish(sh_pipe *q, Py_ssize_t c)
    void sh_pipe_finish(sh_pipe *q, int hash_rest)


cdef enum:
    _SEQ_CHUNK = 256

cdef object _seq_kernel(object keys, int kind, object convert, bint raw_bytes):
    """Run a pointer kernel over a list, tuple or 1-d numpy array of keys as
    they are read (kind 0: Cassandra tokens, 1: Redis slots, 2: Vitess
    keyspace ids, xxh64 byte-swapped); None for any other input (Arrow data
    and iterables go through :func:`pack_keys`).

    One walk reads each key's pointer and length, and every _SEQ_CHUNK keys
    the kernel runs on them while they are still in cache; no key's bytes
    are copied.  The kernels may read the 16 bytes before a key (they are
    the header of its bytes or str object; a str whose UTF-8 is kept outside
    it is encoded to a bytes object; xxh64 reads the 32 bytes before a key's
    end where the headers are that long, as on 64-bit builds).  Exact bytes and compact ASCII str keys are read by a C
    walk (``sh_seq_walk``) that runs no Python code.  The walk holds the GIL
    throughout, so nothing but a key's own code (a converter,
    ``bytes(memoryview)``) can change the caller's list or free a key whose
    pointer is pending: before the first such call the walk switches to a
    private copy of the sequence (taken before that code ran, and holding
    every key), and converted keys are kept until the kernel has read them.
    """
    cdef object src
    cdef tuple snapshot = None
    cdef list converted = []
    cdef Py_ssize_t i = 0, n, m, j = 0, base = 0, stop
    cdef object k
    cdef const char *p
    cdef PyObject **items
    cdef const uint8_t *ptrs[_SEQ_CHUNK]
    cdef int64_t lens[_SEQ_CHUNK]
    cdef int64_t[::1] o64
    cdef uint16_t[::1] o16
    cdef uint64_t[::1] ou64
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            raise ValueError(f"keys must be one-dimensional, got shape {keys.shape}")
        src = keys.tolist()
    elif isinstance(keys, (list, tuple)):
        src = keys
    else:
        return None
    n = len(src)
    items = PySequence_Fast_ITEMS(src)
    if kind == 0:
        out = np.empty(n, dtype=np.int64)
        o64 = out
    elif kind == 2:
        out = np.empty(n, dtype=np.uint64)
        ou64 = out
    else:
        out = np.empty(n, dtype=np.uint16)
        o16 = out
    while i < n:
        # exact bytes / ASCII str keys, up to the end of the chunk (no
        # Python code runs: the list is as it was, or its snapshot's)
        stop = min(n, i + (_SEQ_CHUNK - j))
        m = sh_seq_walk(items, i, stop, n, &ptrs[j], &lens[j])
        j += m - i
        i = m
        if i < stop:
            # any other key, by the general rules
            k = <object>items[i]
            if raw_bytes and PyBytes_Check(k):
                p = PyBytes_AS_STRING(k)
                m = PyBytes_GET_SIZE(k)
            elif PyUnicode_Check(k):
                # a str's cached UTF-8 lies outside it (the kernels may read
                # the 16 bytes before a key): its UTF-8 as a bytes object
                k = PyUnicode_AsUTF8String(k)
                converted.append(k)
                p = PyBytes_AS_STRING(k)
                m = PyBytes_GET_SIZE(k)
            else:
                if snapshot is None and isinstance(src, list):
                    # the key's own code may run: walk a private copy from here on
                    snapshot = tuple(src)
                    items = PySequence_Fast_ITEMS(snapshot)
                k = _as_bytes(k, i, convert, raw_bytes)
                converted.append(k)
                p = PyBytes_AS_STRING(k)
                m = PyBytes_GET_SIZE(k)
            ptrs[j] = <const uint8_t *>p
            lens[j] = m
            j += 1
            i += 1
        if j == _SEQ_CHUNK or i == n:
            if kind == 0:
                sh_cassandra_token_ptrs16(ptrs, lens, <size_t>j, &o64[base])
            elif kind == 2:
                if SH_SEQ_HEADER32:
                    sh_xxh64_ptrs32_batch(ptrs, lens, <size_t>j, 0, &ou64[base])
                else:
                    sh_xxh64_ptrs(ptrs, lens, <size_t>j, 0, &ou64[base])
                _swap_u64(&ou64[base], j)
            else:
                sh_redis_keyslot_ptrs16(ptrs, lens, <size_t>j, &o16[base])
            base += j
            j = 0
            if converted:
                converted = []
    return out


def list_walk_floor(list keys):
    """The floor of any kernel over a Python list of bytes/str keys: the walk
    the list kernels use (``sh_seq_walk``), reading each key's pointer and
    length and nothing else (for the benchmarks).  Returns the total length
    in bytes."""
    cdef Py_ssize_t i = 0, n = len(keys), m, q, total = 0
    cdef PyObject **items = PySequence_Fast_ITEMS(keys)
    cdef const uint8_t *ptrs[_SEQ_CHUNK]
    cdef int64_t lens[_SEQ_CHUNK]
    while i < n:
        m = sh_seq_walk(items, i, min(n, i + _SEQ_CHUNK), n, ptrs, lens)
        if m == i:
            raise TypeError(f"key at position {i} is not bytes or an ASCII str")
        for q in range(m - i):
            total += lens[q]
        i = m
    return total


def list_walk_floor_refcounted(list keys):
    """The plain walk of earlier versions, for comparison: each key taken as
    a Python object (its reference count raised and dropped), its pointer
    and length read."""
    cdef Py_ssize_t i, m, total = 0
    cdef object k
    for i in range(len(keys)):
        k = keys[i]
        if PyBytes_Check(k):
            total += PyBytes_GET_SIZE(k)
        else:
            PyUnicode_AsUTF8AndSize(k, &m)
            total += m
    return total


# ============================================================================
# The batch bindings' plumbing: validate, then run a kernel over every key
# ============================================================================

ctypedef fused _num:
    int16_t
    int32_t
    int64_t
    uint32_t
    uint64_t
    double


cdef object _map(sh_chunk_fn fn, const _num[::1] values, object out, object dtype, bint required,
                 object threads, uint64_t seed=0, const void *ctx=NULL):
    """out[i] = f(values[i]) by the kernel fn: ``out`` checked (or made when
    not required), then fn run over every key without the GIL."""
    cdef Py_ssize_t n = values.shape[0]
    cdef sh_job job
    out = check_out(out, n, dtype, required)
    memset(&job, 0, sizeof(sh_job))
    job.data = &values[0] if n else NULL
    job.out = address(out)
    job.seed = seed
    job.ctx = ctx
    run(fn, &job, n, threads)
    return out


cdef Py_ssize_t _out_len(object out, object dtype) except -1:
    """The length of a required ``out=``, the number of keys (check_out then
    checks the rest)."""
    if not isinstance(out, np.ndarray) or out.ndim != 1:
        check_out(out, 0, dtype, True)  # raises, naming what is wrong
    return out.shape[0]


cdef object _map_offsets(sh_chunk_fn fn, const uint8_t[::1] data, const int64_t[::1] offsets,
                         object out, object dtype, bint required, object threads, uint64_t seed=0,
                         const void *ctx=NULL):
    """out[i] = f(key i) for Arrow-style (data, offsets) keys: offsets
    checked against the data (and, with a required ``out``, its length)."""
    cdef Py_ssize_t n = _out_len(out, dtype) if required else -1
    cdef sh_job job
    n = check_offsets(&offsets[0] if offsets.shape[0] else NULL, offsets.shape[0], data.shape[0], n)
    out = check_out(out, n, dtype, required)
    memset(&job, 0, sizeof(sh_job))
    job.data = _bytes_of(data)
    job.offsets = &offsets[0]
    job.out = address(out)
    job.seed = seed
    job.ctx = ctx
    run(fn, &job, n, threads)
    return out


cdef object _map_fixed(sh_chunk_fn fn, const uint8_t[::1] data, Py_ssize_t width, object out, object dtype,
                       object threads, uint64_t seed=0):
    """out[i] = f(data[i * width:(i + 1) * width]) (keys packed back to back)."""
    cdef Py_ssize_t n = _out_len(out, dtype)
    cdef sh_job job
    if width < 1 or data.shape[0] != n * width:
        raise ValueError(f"data has {data.shape[0]} bytes, expected {n} keys of {width} bytes")
    out = check_out(out, n, dtype, True)
    memset(&job, 0, sizeof(sh_job))
    job.data = _bytes_of(data)
    job.width = <size_t>width
    job.out = address(out)
    job.seed = seed
    run(fn, &job, n, threads)
    return out


# The kernels (sh_chunk_fn): keys [s, e) of the job, one C call each.
# Arrow-style keys: job.data (bytes), job.offsets (int64).

cdef inline const int64_t *_offs(const sh_job *j, Py_ssize_t s) noexcept nogil:
    return <const int64_t *>j.offsets + s


# ============================================================================
# Key routers: a router's tables and the C function that routes one key
# ============================================================================

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

    cdef _fresh(self):
        """Refuse a second __init__: the tables of a built object are read by
        the routers that hold it (replacing them would change their answers,
        and a replacement that failed half-way would leave tables that do not
        fit together)."""
        if self._keep:
            raise AttributeError(f"{type(self).__name__} is immutable: build a new one")

    def capsule(self):
        """PyCapsule("shardhash.key_index") of the C function; its context is this object."""
        cdef key_index_fn f = self._fn()
        cap = PyCapsule_New(<void *>f, b"shardhash.key_index", NULL)
        PyCapsule_SetContext(cap, <void *>self)  # the router keeps self alive
        return cap


cdef class _RangeKeys(_Keys):
    """Sorted range bounds (int64 or uint64: ring tokens, range starts, chunk
    minima) and the shard index of each."""
    cdef const void *bounds
    cdef const int32_t *owners
    cdef Py_ssize_t m

    cdef _ranges(self, bounds, owners, dtype, str mismatch):
        """Own the tables; ValueError(mismatch) unless one owner per bound."""
        b = self._own(bounds, dtype)
        o = self._own(owners, np.int32)
        if o.shape[0] != b.shape[0]:
            raise ValueError(mismatch)
        self.bounds = address(b)
        self.owners = <const int32_t *>address(o)
        self.m = b.shape[0]
        return b


ctypedef fused _bound:
    int64_t
    uint64_t


cdef inline Py_ssize_t _count_le(const _bound *a, Py_ssize_t n, _bound v) noexcept:
    """The number of sorted bounds a[0..n) that are <= v (the first bound > v)."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= v:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef enum:
    SMALL = 64   # the *_small functions take at most this many keys



cdef inline Py_ssize_t _small_len(object keys) noexcept:
    """len(keys) for a list or tuple of at most SMALL keys, else -1."""
    cdef Py_ssize_t n
    if type(keys) is list or type(keys) is tuple:
        n = len(keys)
        return n if n <= SMALL else -1
    return -1


cdef object _array_of(const void *src, Py_ssize_t n, int typenum, size_t itemsize):
    """A new numpy array of n items of a builtin dtype (NP_UINT16...), copied
    from src (made through NumPy's C API: no Python call, no buffer export)."""
    res = new_array(n, typenum)
    if n:
        memcpy(array_data(res), src, <size_t>n * itemsize)
    return res


cdef object _small_raw(object keys, bint slots):
    """Redis slots (uint16; slots) or Cassandra blob tokens (int64) of a list
    or tuple of at most SMALL exact bytes or ASCII str keys; None otherwise."""
    cdef uint16_t o16[SMALL]
    cdef int64_t o64[SMALL]
    cdef Py_ssize_t i, m, n = _small_len(keys)
    cdef const char *p
    if n < 0:
        return None
    for i in range(n):
        p = sh_exact_raw(PySequence_Fast_GET_ITEM(keys, i), &m, True, True)
        if p == NULL:
            return None
        if slots:
            o16[i] = sh_redis_keyslot(p, <size_t>m)
        else:
            o64[i] = sh_cassandra_token(p, <size_t>m)
    if slots:
        return _array_of(o16, n, NP_UINT16, sizeof(uint16_t))
    return _array_of(o64, n, NP_INT64, sizeof(int64_t))


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


# ============================================================================
# Redis Cluster: CRC16 (XMODEM) key slots, hash tags
# ============================================================================

def crc16_xmodem(const uint8_t[::1] data not None) -> int:
    """CRC-16/XMODEM of a bytes-like object (Redis Cluster's checksum)."""
    return sh_crc16_xmodem(_bytes_of(data), <size_t>data.shape[0])


def redis_keyslot(const uint8_t[::1] data not None) -> int:
    """The slot (0..16383) of one key's bytes, hash tags applied."""
    return sh_redis_keyslot(_bytes_of(data), <size_t>data.shape[0])


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
    return _small_raw(keys, True)


def redis_keyslot_seq(keys):
    """Slots of a list, tuple or numpy array of bytes/str keys (read in
    place, see :func:`_seq_kernel`); None for other inputs."""
    return _seq_kernel(keys, 1, None, True)


cdef Py_ssize_t _first_failing(object keys, int test, object tp) except -2:
    """The position of the first key of a list or tuple that fails the test
    of sh_first_failing; -1 when every key passes."""
    if not isinstance(keys, (list, tuple)):
        raise TypeError(f"keys must be a list or tuple, not {type(keys).__name__}")
    cdef Py_ssize_t n = len(keys)
    cdef Py_ssize_t i = sh_first_failing(PySequence_Fast_ITEMS(keys), n, test, <PyObject *>tp)
    return -1 if i == n else i


def first_not_bytes_like(keys):
    """The position of the first key of a list or tuple that is not bytes,
    bytearray or memoryview (subclasses included); -1 when every key is.
    A C loop that runs no Python code (for the routers that take only
    serialized keys)."""
    return _first_failing(keys, 0, None)


def first_not_type(keys, type tp):
    """The position of the first key of a list or tuple whose type is not
    exactly ``tp``; -1 when every key's is.  A C loop that runs no Python
    code."""
    return _first_failing(keys, 1, tp)


def first_of_type(keys, type tp):
    """The position of the first key of a list or tuple whose type is
    exactly ``tp`` (``type(None)``: the first None); -1 when there is none."""
    return _first_failing(keys, 2, tp)


def first_not_ascii_str(keys):
    """The position of the first key of a list or tuple that is not an
    exact str of ASCII characters only; -1 when every key is one."""
    return _first_failing(keys, 3, None)


def find_byte(const uint8_t[::1] data not None, int byte=0):
    """The position of the first byte of ``data`` equal to ``byte`` (0 ..
    255); -1 when there is none (memchr)."""
    if not 0 <= byte <= 255:
        raise ValueError(f"byte must be 0 .. 255, got {byte}")
    if data.shape[0] == 0:
        return -1
    cdef const void *p = memchr(&data[0], byte, <size_t>data.shape[0])
    return -1 if p == NULL else <Py_ssize_t>(<const uint8_t *>p - &data[0])


def vitess_xxhash_seq(keys, convert):
    """Vitess ``xxhash`` keyspace ids (xxh64 of each key, byte-swapped, as
    uint64) of a list, tuple or numpy array of keys (read in place, see
    :func:`_seq_kernel`): bytes-like keys as they are, str as UTF-8, any
    other key through ``convert(key) -> bytes``; None for other inputs."""
    return _seq_kernel(keys, 2, convert, True)


cdef ptrdiff_t _k_keyslot(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_redis_keyslot_offsets(<const uint8_t *>j.data, _offs(j, s), <size_t>(e - s), <uint16_t *>j.out + s)
    return SH_OK


def redis_keyslot_offsets(const uint8_t[::1] data not None, const int64_t[::1] offsets not None,
                          threads=None):
    """The slot of every (data, offsets) key (uint16 array)."""
    return _map_offsets(_k_keyslot, data, offsets, None, _DT_U16, False, threads)


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


# ============================================================================
# Cassandra: Murmur3Partitioner tokens and the token ring
# ============================================================================

def cassandra_token(const uint8_t[::1] data not None) -> int:
    """The Murmur3Partitioner token of one serialized partition key."""
    return sh_cassandra_token(_bytes_of(data), <size_t>data.shape[0])


@cython.binding(False)
def token(key):
    """The ``Murmur3Partitioner`` token of one serialized partition key.

    >>> token(b""), token(b"123")
    (-9223372036854775808, -7468325962851647638)
    """
    if type(key) is bytes:
        return sh_cassandra_token(PyBytes_AS_STRING(key), <size_t>PyBytes_GET_SIZE(key))
    return _token_py(key)


def token_small(keys):
    """token_array(keys) (blob) for a list or tuple of at most 64 exact
    bytes or ASCII str keys (int64 array), in one pass; None otherwise."""
    return _small_raw(keys, False)


def cassandra_token_seq(keys, threads=None):
    """Tokens of a list, tuple or numpy array of bytes/str keys (read in
    place, see :func:`_seq_kernel`; on two threads or more, see
    :func:`_seq_tokens_piped`); None for other inputs."""
    cdef Py_ssize_t n
    if isinstance(keys, (list, tuple)) or (isinstance(keys, np.ndarray) and keys.ndim == 1):
        n = len(keys)
        helpers = _parallel.resolve_threads(threads, n) - 1  # validates threads
        if helpers > 0:
            return _seq_tokens_piped(keys.tolist() if isinstance(keys, np.ndarray) else keys, n, helpers)
    return _seq_kernel(keys, 0, None, True)


cdef object _seq_tokens_piped(object src, Py_ssize_t n, int helpers):
    """Tokens of a list or tuple of n keys, hashed by ``helpers`` helper
    threads as the calling thread reads them (the pipe above): the walk of
    :func:`_seq_kernel`, one chunk after another into the pipe's slots, with
    the GIL held throughout.  Keys converted on the way (a str whose UTF-8
    lies outside it, bytearray, memoryview) are kept until their slot is
    reused, the snapshot (taken before a key's own code may run) until every
    helper is gone."""
    cdef sh_pipe *q
    cdef tuple snapshot = None
    cdef list conv = [[] for _ in range(SH_PIPE_SLOTS)]
    cdef list held
    cdef Py_ssize_t c = 0, i, stop, m, j, s
    cdef PyObject **items = PySequence_Fast_ITEMS(src)
    cdef const uint8_t **ptrs
    cdef int64_t *lens
    cdef object k
    cdef const char *p
    cdef bint ok = False
    out = np.empty(n, dtype=np.int64)
    q = sh_pipe_new(n, <int64_t *>address(out), sh_cassandra_token_ptrs16, helpers)
    if q == NULL:
        raise MemoryError()
    try:
        while c * SH_PIPE_CHUNK < n:
            sh_pipe_slot(q, c)  # the slot's previous chunk is hashed
            s = c % SH_PIPE_SLOTS
            held = <list>conv[s]
            if held:
                del held[:]
            ptrs = &q.ptrs[s][0]
            lens = &q.lens[s][0]
            i = c * SH_PIPE_CHUNK
            stop = min(n, i + SH_PIPE_CHUNK)
            j = 0
            while i < stop:
                m = sh_seq_walk(items, i, stop, n, &ptrs[j], &lens[j])
                j += m - i
                i = m
                if i < stop:
                    k = <object>items[i]
                    if PyBytes_Check(k):
                        p = PyBytes_AS_STRING(k)
                        m = PyBytes_GET_SIZE(k)
                    else:
                        if PyUnicode_Check(k):
                            k = PyUnicode_AsUTF8String(k)
                        else:
                            if snapshot is None and isinstance(src, list):
                                # the key's own code may run: walk a private copy from here on
                                snapshot = tuple(src)
                                items = PySequence_Fast_ITEMS(snapshot)
                            k = _as_bytes(k, i, None, True)
                        held.append(k)
                        p = PyBytes_AS_STRING(k)
                        m = PyBytes_GET_SIZE(k)
                    ptrs[j] = <const uint8_t *>p
                    lens[j] = m
                    j += 1
                    i += 1
            sh_pipe_publish(q, c)
            c += 1
        ok = True
    finally:
        sh_pipe_finish(q, ok)  # every helper gone
    return out


cdef ptrdiff_t _k_token(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_cassandra_token_offsets(<const uint8_t *>j.data, _offs(j, s), <size_t>(e - s), <int64_t *>j.out + s)
    return SH_OK


cdef int _CASS_KERNELS[3]  # the ctx of _k_token_named: 0 scalar, 1 AVX2, 2 AVX-512
_CASS_KERNELS[0], _CASS_KERNELS[1], _CASS_KERNELS[2] = 0, 1, 2


cdef ptrdiff_t _k_token_named(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    # job.ctx: which kernel (an entry of _CASS_KERNELS)
    cdef int which = (<const int *>j.ctx)[0]
    cdef const uint8_t *data = <const uint8_t *>j.data
    cdef int64_t *out = <int64_t *>j.out + s
    if which == 2:
        sh_cassandra_token_offsets_avx512(data, _offs(j, s), <size_t>(e - s), out)
    elif which == 1:
        sh_cassandra_token_offsets_avx2(data, _offs(j, s), <size_t>(e - s), out)
    else:
        sh_cassandra_token_offsets_scalar(data, _offs(j, s), <size_t>(e - s), out)
    return SH_OK


def cassandra_kernels():
    """The Cassandra kernels this build and CPU can run: "scalar", and
    "avx2" and "avx512" where the CPU has them (see
    :func:`_cassandra_token_offsets_with`)."""
    return ["scalar"] + (["avx2"] if sh_cassandra_avx2_available() else []) + \
        (["avx512"] if sh_cassandra_avx512_available() else [])


def _cassandra_token_offsets_with(str kernel, const uint8_t[::1] data not None,
                                  const int64_t[::1] offsets not None, threads=None):
    """:func:`cassandra_token_offsets` with a named kernel instead of the
    one chosen for this CPU (for the tests that hold every kernel to the
    reference, and the benchmarks that compare them)."""
    if kernel not in cassandra_kernels():
        raise ValueError(f"the {kernel!r} Cassandra kernel is not available here ({cassandra_kernels()})")
    cdef int which = ("scalar", "avx2", "avx512").index(kernel)
    return _map_offsets(_k_token_named, data, offsets, None, _DT_I64, False, threads, 0, &_CASS_KERNELS[which])


cdef ptrdiff_t _k_token_bigint(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_cassandra_token_bigint(<const int64_t *>j.data + s, <size_t>(e - s), <int64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_token_int(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_cassandra_token_int(<const int32_t *>j.data + s, <size_t>(e - s), <int64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_ring_index(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    # job.ctx: the ring's sorted tokens, job.width of them
    sh_cassandra_ring_index(<const int64_t *>j.ctx, j.width, <const int64_t *>j.data + s, <size_t>(e - s),
                            <int64_t *>j.out + s)
    return SH_OK


def cassandra_token_offsets(const uint8_t[::1] data not None, const int64_t[::1] offsets not None,
                            threads=None):
    """The token of every (data, offsets) blob key (int64 array)."""
    return _map_offsets(_k_token, data, offsets, None, _DT_I64, False, threads)


def cassandra_token_bigint(const int64_t[::1] values not None, threads=None):
    """The token of every bigint (and timestamp) key (int64 array)."""
    return _map(_k_token_bigint, values, None, _DT_I64, False, threads)


def cassandra_token_int(const int32_t[::1] values not None, threads=None):
    """The token of every CQL int key (int64 array)."""
    return _map(_k_token_int, values, None, _DT_I64, False, threads)


ctypedef struct _ring_tables:
    const int64_t *ring
    const int32_t *owners


cdef ptrdiff_t _k_ring_owner(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    # job.ctx: a _ring_tables, job.width tokens
    cdef const _ring_tables *t = <const _ring_tables *>j.ctx
    sh_cassandra_ring_owner(t.ring, t.owners, j.width, <const int64_t *>j.data + s, <size_t>(e - s),
                            <int32_t *>j.out + s)
    return SH_OK


cdef _check_ring(const int64_t[::1] ring):
    cdef Py_ssize_t i, m = ring.shape[0]
    if m == 0:
        raise ValueError("the ring has no tokens")
    for i in range(m - 1):
        if ring[i + 1] < ring[i]:
            raise ValueError(f"ring tokens must be sorted (position {i + 1} is below position {i})")


def cassandra_ring_owner(const int64_t[::1] ring not None, const int32_t[::1] owners not None,
                         const int64_t[::1] tokens not None, threads=None):
    """owners[i] (int32) for each token, i the index of the first ring token
    >= the token, wrapping to 0 (the node of each token)."""
    _check_ring(ring)
    if owners.shape[0] != ring.shape[0]:
        raise ValueError(f"{owners.shape[0]} owners for {ring.shape[0]} ring tokens")
    cdef sh_job job
    cdef _ring_tables tables
    memset(&job, 0, sizeof(sh_job))
    out = check_out(None, tokens.shape[0], _DT_I32)
    tables.ring = &ring[0]
    tables.owners = &owners[0]
    job.ctx = &tables
    job.width = <size_t>ring.shape[0]
    job.data = &tokens[0] if tokens.shape[0] else NULL
    job.out = address(out)
    run(_k_ring_owner, &job, tokens.shape[0], threads)
    return out


def cassandra_ring_index(const int64_t[::1] ring not None, const int64_t[::1] tokens not None,
                         threads=None):
    """Index of the first ring token >= each token, wrapping to 0."""
    _check_ring(ring)
    cdef Py_ssize_t m = ring.shape[0]
    cdef sh_job job
    memset(&job, 0, sizeof(sh_job))
    out = check_out(None, tokens.shape[0], _DT_I64)
    job.ctx = &ring[0]
    job.width = <size_t>m
    job.data = &tokens[0] if tokens.shape[0] else NULL
    job.out = address(out)
    run(_k_ring_index, &job, tokens.shape[0], threads)
    return out


# ---------------------------------------------------------------------------
# Cassandra partition keys of CQL types serialized in C (composite keys)
# ---------------------------------------------------------------------------

cdef extern from *:
    """
    /* The partition-key bytes of CQL values of the common exact Python types,
     * written without a Python call (CQL's serialization, as the
     * cassandra.serialize() reference does it): int types big-endian two's
     * complement of their width, text UTF-8, ascii its bytes, blob as is,
     * uuid its 16 bytes, boolean one byte 0/1.  A composite key is each
     * column's bytes preceded by their length (2 bytes, big-endian) and
     * followed by a 0 byte; a one-column composite type is that column's bytes.
     *
     * Only exact types are taken (bytes, bytearray, str, int, bool,
     * uuid.UUID; a key that is an exact tuple or list): no key's own code
     * runs here, so a caller's list read around these calls cannot change.
     * Anything else (None, subclasses, numpy scalars, datetime, a str uuid,
     * an out-of-range int, non-ASCII ascii, a component over 65535 bytes, a
     * wrong number of values) returns -1 with no exception set, and the
     * caller hands the key to the Python reference, which decides the bytes
     * or raises the error. */
    enum { SH_CQL_BLOB = 0, SH_CQL_TEXT, SH_CQL_ASCII, SH_CQL_TINYINT, SH_CQL_SMALLINT, SH_CQL_INT,
           SH_CQL_BIGINT, SH_CQL_UUID, SH_CQL_BOOLEAN, SH_CQL_NCODES };
    #define SH_CQL_MAX_COLUMNS 64
    static PyObject *sh_cql_uuid_type = NULL;   /* uuid.UUID */
    static PyObject *sh_cql_int_name = NULL;    /* "int", the attribute holding a UUID's value */
    static PyObject *sh_cql_64 = NULL;          /* the int 64 */

    static int sh_cql_setup(PyObject *uuid_type)
    {
        if (sh_cql_uuid_type == NULL) {
            sh_cql_int_name = PyUnicode_InternFromString("int");
            sh_cql_64 = PyLong_FromLong(64);
            if (sh_cql_int_name == NULL || sh_cql_64 == NULL) return -1;
            Py_INCREF(uuid_type);
            sh_cql_uuid_type = uuid_type;
        }
        return 0;
    }

    static void sh_cql_be(uint8_t *dst, uint64_t v, int width)
    {
        int i;
        for (i = 0; i < width; i++) dst[i] = (uint8_t)(v >> (8 * (width - 1 - i)));
    }

    /* The 16 big-endian bytes of an exact uuid.UUID at dst; -1 (no exception
     * set) unless its `int` is an exact int in [0, 2**128). */
    static int sh_cql_uuid_bytes(PyObject *v, uint8_t *dst)
    {
        PyObject *x = PyObject_GetAttr(v, sh_cql_int_name);
        int ok;
        if (x == NULL) { PyErr_Clear(); return -1; }
        ok = PyLong_CheckExact(x);
    #if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API) && PY_VERSION_HEX >= 0x030D0000
        if (ok) {
            Py_ssize_t r = PyLong_AsNativeBytes(x, dst, 16, Py_ASNATIVEBYTES_BIG_ENDIAN |
                                                Py_ASNATIVEBYTES_UNSIGNED_BUFFER | Py_ASNATIVEBYTES_REJECT_NEGATIVE);
            if (r < 0) PyErr_Clear();
            ok = r >= 0 && r <= 16;
        }
    #elif !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
        if (ok && _PyLong_AsByteArray((PyLongObject *)x, dst, 16, 0, 0) < 0) {   /* negative or >= 2**128 */
            PyErr_Clear();
            ok = 0;
        }
    #else
        if (ok) {
            PyObject *h = PyNumber_Rshift(x, sh_cql_64);
            uint64_t hi = 0, lo;
            if (h == NULL) { PyErr_Clear(); ok = 0; }
            else {
                hi = PyLong_AsUnsignedLongLong(h);   /* OverflowError if negative or >= 2**64 */
                Py_DECREF(h);
                if (hi == (uint64_t)-1 && PyErr_Occurred()) { PyErr_Clear(); ok = 0; }
            }
            if (ok) {
                lo = PyLong_AsUnsignedLongLongMask(x);
                sh_cql_be(dst, hi, 8);
                sh_cql_be(dst + 8, lo, 8);
            }
        }
    #endif
        Py_DECREF(x);
        return ok ? 0 : -1;
    }

    /* A value's n bytes at p copied to dst.  When p is the data of an exact
     * bytes or compact-ASCII str object `o` (at least SH_CQL_PAD bytes of
     * header before the data: SH_CQL_HEADERS_FIT, true on 64-bit builds; a
     * 32-bit build takes the plain copy) and n <= SH_CQL_PAD, the copy is
     * one 32-byte load ending where the data ends and one store ending at
     * dst + n, with the SH_CQL_PAD bytes before dst saved and put back: no
     * branch on the length, which varies from key to key.  The caller's
     * buffer must then have SH_CQL_PAD bytes before dst. */
    #define SH_CQL_PAD 32
    #if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
    #define SH_CQL_HEADERS_FIT \
        (offsetof(PyBytesObject, ob_sval) >= SH_CQL_PAD && sizeof(PyASCIIObject) >= SH_CQL_PAD)
    #endif
    static void sh_cql_copy(uint8_t *dst, const char *p, Py_ssize_t n, PyObject *o)
    {
    #if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
        if (SH_CQL_HEADERS_FIT && o != NULL && n <= SH_CQL_PAD) {
            uint8_t save[SH_CQL_PAD], v[SH_CQL_PAD];
            const char *end = (const char *)o + (p - (const char *)o) + n;   /* inside o */
            memcpy(save, dst - SH_CQL_PAD, SH_CQL_PAD);
            memcpy(v, end - SH_CQL_PAD, SH_CQL_PAD);
            memcpy(dst + n - SH_CQL_PAD, v, SH_CQL_PAD);
            memcpy(dst - SH_CQL_PAD, save, SH_CQL_PAD);
            return;
        }
    #else
        (void)o;
    #endif
        if (n > 0) memcpy(dst, p, (size_t)n);
    }

    /* One value of CQL code t: its length, its bytes written at dst when they
     * fit in `room` (else nothing is written); -1 when not handled here. */
    static Py_ssize_t sh_cql_value(PyObject *v, int t, uint8_t *dst, Py_ssize_t room)
    {
        const char *p;
        Py_ssize_t n;
        int width, overflow = 0;
        long long x;
        uint8_t u[16];
        PyObject *padded = NULL;   /* the object whose header precedes p */
        switch (t) {
        case SH_CQL_BLOB:
            if (PyBytes_CheckExact(v)) {
                p = PyBytes_AS_STRING(v);
                n = PyBytes_GET_SIZE(v);
                padded = v;
            } else if (PyByteArray_CheckExact(v)) {
                p = PyByteArray_AS_STRING(v);
                n = PyByteArray_GET_SIZE(v);
            } else {
                return -1;
            }
            break;
        case SH_CQL_TEXT:
        case SH_CQL_ASCII:
            if (!PyUnicode_CheckExact(v)) return -1;
            if (PyUnicode_IS_COMPACT_ASCII(v)) {
                p = (const char *)PyUnicode_DATA(v);
                n = PyUnicode_GET_LENGTH(v);
                padded = v;
            } else {
                if (t == SH_CQL_ASCII) return -1;
                p = PyUnicode_AsUTF8AndSize(v, &n);   /* NULL for lone surrogates */
                if (p == NULL) { PyErr_Clear(); return -1; }
            }
            break;
        case SH_CQL_TINYINT:
        case SH_CQL_SMALLINT:
        case SH_CQL_INT:
        case SH_CQL_BIGINT:
            if (!PyLong_CheckExact(v)) return -1;   /* bool, int subclasses, numpy ints: the reference */
            x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow != 0) return -1;
            width = t == SH_CQL_TINYINT ? 1 : t == SH_CQL_SMALLINT ? 2 : t == SH_CQL_INT ? 4 : 8;
            if (width < 8) {
                long long lim = 1LL << (8 * width - 1);
                if (x < -lim || x >= lim) return -1;
            }
            if (room >= width) sh_cql_be(dst, (uint64_t)x, width);
            return width;
        case SH_CQL_UUID:
            /* (the generic getattr reads the `int` slot: no Python code runs) */
            if ((PyObject *)Py_TYPE(v) != sh_cql_uuid_type || Py_TYPE(v)->tp_getattro != PyObject_GenericGetAttr ||
                sh_cql_uuid_bytes(v, u) < 0)
                return -1;
            if (room >= 16) memcpy(dst, u, 16);
            return 16;
        case SH_CQL_BOOLEAN:
            if (v != Py_True && v != Py_False) return -1;
            if (room >= 1) dst[0] = v == Py_True;
            return 1;
        default:
            return -1;
        }
        if (n <= room) sh_cql_copy(dst, p, n, padded);
        return n;
    }

    /* The keys ahead of key i, fetched into the cache while key i is
     * serialized: key i + SH_CQL_AHEAD itself, and the first values of key
     * i + SH_CQL_AHEAD / 2 (a tuple fetched earlier). */
    #ifndef SH_PREFETCH
    #  define SH_PREFETCH(p) ((void)0)
    #endif
    #define SH_CQL_AHEAD 8
    static void sh_cql_prefetch(PyObject *const *items, Py_ssize_t i, Py_ssize_t n)
    {
        PyObject *k;
        Py_ssize_t c, m;
        if (i + SH_CQL_AHEAD < n) SH_PREFETCH(items[i + SH_CQL_AHEAD]);
        if (i + SH_CQL_AHEAD / 2 < n) {
            k = items[i + SH_CQL_AHEAD / 2];
            if (PyTuple_CheckExact(k)) {
                m = PyTuple_GET_SIZE(k);
                for (c = 0; c < m && c < 4; c++) SH_PREFETCH(PyTuple_GET_ITEM(k, c));
            }
        }
    }

    /* A partition key: with `scalar`, key is the one value of type t[0];
     * otherwise an exact tuple or list of ncols values of types t[..].
     * Returns the key's length, its bytes written at dst when they fit in
     * `room` (else the caller makes room and calls again); -1 when the key
     * is not handled here.  The SH_CQL_PAD bytes before dst must be the
     * caller's too (see sh_cql_copy; they are left as they were). */
    static Py_ssize_t sh_cql_key(PyObject *key, const int *t, Py_ssize_t ncols, int scalar, uint8_t *dst,
                                 Py_ssize_t room)
    {
        Py_ssize_t c, pos = 0, r, left;
        PyObject *const *items;
        if (scalar) return sh_cql_value(key, t[0], dst, room);
        if (PyTuple_CheckExact(key)) {
            if (PyTuple_GET_SIZE(key) != ncols) return -1;
            items = PySequence_Fast_ITEMS(key);
        } else if (PyList_CheckExact(key)) {
            if (PyList_GET_SIZE(key) != ncols) return -1;
            items = PySequence_Fast_ITEMS(key);
        } else {
            return -1;
        }
        if (ncols == 1) return sh_cql_value(items[0], t[0], dst, room);
        for (c = 0; c < ncols; c++) {
            left = room - pos - 3;
            r = sh_cql_value(items[c], t[c], dst + pos + 2, left < 0 ? 0 : left);
            if (r < 0 || r > 0xFFFF) return -1;
            if (r <= left) {
                dst[pos] = (uint8_t)(r >> 8);
                dst[pos + 1] = (uint8_t)r;
                dst[pos + 2 + r] = 0;
            }
            pos += r + 3;
        }
        return pos;
    }
    """
    enum:
        SH_CQL_BLOB
        SH_CQL_TEXT
        SH_CQL_ASCII
        SH_CQL_TINYINT
        SH_CQL_SMALLINT
        SH_CQL_INT
        SH_CQL_BIGINT
        SH_CQL_UUID
        SH_CQL_BOOLEAN
        SH_CQL_MAX_COLUMNS
    enum: SH_CQL_PAD
    int sh_cql_setup(object uuid_type) except -1
    void sh_cql_prefetch(PyObject *const *items, Py_ssize_t i, Py_ssize_t n) noexcept
    Py_ssize_t sh_cql_key(PyObject *key, const int *t, Py_ssize_t ncols, int scalar, uint8_t *dst,
                          Py_ssize_t room) noexcept

sh_cql_setup(_uuid_mod.UUID)

# canonical CQL type name (cassandra._ALIASES) -> the C serialiser's code
_CQL_SER_CODES = {"blob": SH_CQL_BLOB, "text": SH_CQL_TEXT, "ascii": SH_CQL_ASCII, "tinyint": SH_CQL_TINYINT,
                  "smallint": SH_CQL_SMALLINT, "int": SH_CQL_INT, "bigint": SH_CQL_BIGINT,
                  "timestamp": SH_CQL_BIGINT, "uuid": SH_CQL_UUID, "boolean": SH_CQL_BOOLEAN}


cdef int _cql_codes(object types, int *codes) except -2:
    """The C serialiser's codes of canonical CQL type names (a tuple of at
    most SH_CQL_MAX_COLUMNS) into codes; their number, or -1 when a name is
    not one it serializes."""
    cdef Py_ssize_t c, n = len(types)
    if n < 1 or n > SH_CQL_MAX_COLUMNS:
        return -1
    for c in range(n):
        code = _CQL_SER_CODES.get(types[c])
        if code is None:
            return -1
        codes[c] = <int>code
    return <int>n


cdef object _at_position(BaseException e, Py_ssize_t i):
    """e's error with "key at position i: " before its message (the same
    type when it takes a message alone, as TypeError/ValueError/OverflowError
    do; UnicodeError's subclasses become ValueError)."""
    msg = f"key at position {i}: {e}"
    try:
        return type(e)(msg)
    except Exception:
        return ValueError(msg) if isinstance(e, ValueError) else TypeError(msg)


cdef uint8_t *_grow(uint8_t *buf, Py_ssize_t *cap, Py_ssize_t need) except NULL:
    """buf reallocated to hold SH_CQL_PAD bytes and at least need more (at
    least twice as many as before)."""
    cdef Py_ssize_t c = max(2 * cap[0], need)
    cdef uint8_t *grown = <uint8_t *>PyMem_Realloc(buf, <size_t>(SH_CQL_PAD + c))
    if grown == NULL:
        raise MemoryError()
    cap[0] = c
    return grown


cdef enum:
    _CQL_KEY_ROOM = 512         # one key serialized by a key router (longer keys: the reference)
    _CQL_CHUNK = 256            # keys hashed at a time
    _CQL_CHUNK_BYTES = 1 << 16  # ... or fewer, once their bytes pass this


def cassandra_token_cql(keys, tuple types, bint scalar, fallback):
    """Tokens (int64 array) of partition keys of CQL types ``types`` (canonical
    names): with ``scalar`` each key is one value of ``types[0]``, otherwise a
    tuple of ``len(types)`` values (see :func:`cassandra.serialize`).

    One walk over a list, tuple or numpy array (other iterables are
    made a list first), with the GIL held: each key of the common exact
    types is serialized in C (``sh_cql_key``) into a buffer reused chunk
    after chunk, and every chunk's keys are hashed while in cache; any other
    key goes to ``fallback(key) -> bytes`` (the Python reference), whose
    errors come back naming the key's position.  Before the first such call
    the walk switches to a private copy of a list (a key's own code may
    change the caller's list).  None when a type is not one the C
    serialiser knows."""
    cdef int codes[SH_CQL_MAX_COLUMNS]
    cdef int ncols = _cql_codes(types, codes)
    cdef object src, k
    cdef tuple snapshot = None
    cdef Py_ssize_t i, n, r, j = 0, base = 0, pos = 0, cap = 2 * _CQL_CHUNK_BYTES
    cdef PyObject **items
    cdef int64_t offs[_CQL_CHUNK + 1]
    cdef int64_t[::1] o64
    cdef uint8_t *buf
    cdef uint8_t *kb     # the keys' bytes (buf + SH_CQL_PAD)
    if ncols < 0 or (scalar and ncols != 1):
        return None
    if isinstance(keys, np.ndarray):
        src = keys.tolist()  # (rows of a 2-d array: list keys, as the reference takes them)
    elif isinstance(keys, (list, tuple)):
        src = keys
    else:
        src = list(keys)
    n = len(src)
    items = PySequence_Fast_ITEMS(src)
    out = np.empty(n, dtype=np.int64)
    o64 = out
    buf = <uint8_t *>PyMem_Malloc(<size_t>(SH_CQL_PAD + cap))  # keys at buf + SH_CQL_PAD (sh_cql_copy)
    if buf == NULL:
        raise MemoryError()
    memset(buf, 0, SH_CQL_PAD)
    kb = buf + SH_CQL_PAD
    try:
        offs[0] = 0
        i = 0
        while i < n:
            sh_cql_prefetch(items, i, n)
            r = sh_cql_key(items[i], codes, ncols, scalar, kb + pos, cap - pos)
            if r > cap - pos:
                # a key larger than the room left: grow the buffer, serialize it again
                buf = _grow(buf, &cap, pos + r)
                kb = buf + SH_CQL_PAD
                if sh_cql_key(items[i], codes, ncols, scalar, kb + pos, cap - pos) != r:
                    raise RuntimeError("keys changed while being serialized")
            elif r < 0:
                k = <object>items[i]
                if snapshot is None and isinstance(src, list):
                    # the key's own code may run: walk a private copy from here on
                    snapshot = tuple(src)
                    items = PySequence_Fast_ITEMS(snapshot)
                try:
                    b = fallback(k)
                except (TypeError, ValueError, OverflowError) as e:
                    raise _at_position(e, i) from None
                if not PyBytes_Check(b):
                    raise TypeError(f"key at position {i}: serialized to {type(b).__name__}, not bytes")
                r = PyBytes_GET_SIZE(b)
                if r > cap - pos:
                    buf = _grow(buf, &cap, pos + r)
                    kb = buf + SH_CQL_PAD
                if r:
                    memcpy(kb + pos, PyBytes_AS_STRING(b), <size_t>r)
            pos += r
            j += 1
            offs[j] = pos
            i += 1
            if j == _CQL_CHUNK or pos >= _CQL_CHUNK_BYTES or i == n:
                sh_cassandra_token_offsets(kb, offs, <size_t>j, &o64[base])
                base += j
                j = 0
                pos = 0
    finally:
        PyMem_Free(buf)
    return out


cdef enum:
    CQL_BLOB = 0
    CQL_BIGINT = 1   # also timestamp (8 bytes, big-endian, signed)
    CQL_INT = 2
    CQL_TEXT = 3     # text and ascii: an ASCII str is its bytes in both
    CQL_OTHER = 4
    CQL_SERIALIZED = 5  # other types, composite keys: sh_cql_key

_CQL_CODES = {"blob": CQL_BLOB, "bigint": CQL_BIGINT, "timestamp": CQL_BIGINT, "int": CQL_INT,
              "text": CQL_TEXT, "ascii": CQL_TEXT}


cdef class CassandraKeys(_RangeKeys):
    """ring: sorted int64 tokens, owners: their node indices; a key goes to
    the first token >= its token, wrapping to the first."""
    cdef int cql
    cdef int ser[SH_CQL_MAX_COLUMNS]   # CQL_SERIALIZED: the columns' codes
    cdef int ncols
    cdef bint scalar

    def __init__(self, ring, owners, cql_type):
        """cql_type: a canonical CQL type name (cassandra._ALIASES's values)
        or a tuple of them (a composite key)."""
        self._fresh()
        self._ranges(ring, owners, np.int64, "one owner per ring token")
        self.cql = _CQL_CODES.get(cql_type, CQL_OTHER) if isinstance(cql_type, str) else CQL_OTHER
        if self.cql == CQL_OTHER:
            self.scalar = isinstance(cql_type, str)
            self.ncols = _cql_codes((cql_type,) if self.scalar else tuple(cql_type), self.ser)
            if self.ncols > 0:
                self.cql = CQL_SERIALIZED

    cdef key_index_fn _fn(self):
        return _cassandra_index

    cdef inline int32_t _owner(self, int64_t t) noexcept:
        # the first token >= t: as many tokens lie below it as are <= t - 1
        cdef Py_ssize_t lo = 0 if t == INT64_MIN else _count_le(<const int64_t *>self.bounds, self.m, t - 1)
        return self.owners[0 if lo == self.m else lo]


cdef int32_t _cassandra_index(void *ctx, PyObject *key) except -1:
    cdef CassandraKeys s = <CassandraKeys>ctx
    cdef Py_ssize_t n
    cdef const char *p
    cdef long long v
    cdef int overflow = 0
    cdef uint8_t buf[8]
    cdef uint8_t ser[SH_CQL_PAD + _CQL_KEY_ROOM]
    cdef int i, width
    if s.cql == CQL_SERIALIZED:
        memset(ser, 0, SH_CQL_PAD)  # (read and put back by sh_cql_copy: defined bytes)
        n = sh_cql_key(key, s.ser, s.ncols, s.scalar, &ser[SH_CQL_PAD], _CQL_KEY_ROOM)
        if n < 0 or n > _CQL_KEY_ROOM:
            return KEY_NOT_MINE  # (the reference serializes it, or raises)
        return s._owner(sh_cassandra_token(&ser[SH_CQL_PAD], <size_t>n))
    if s.cql == CQL_BLOB:
        if not PyBytes_CheckExact(<object>key):
            return KEY_NOT_MINE
        return s._owner(sh_cassandra_token(PyBytes_AS_STRING(<object>key), <size_t>PyBytes_GET_SIZE(<object>key)))
    if s.cql == CQL_TEXT:
        p = sh_exact_raw(key, &n, False, True)
        if p == NULL:
            return KEY_NOT_MINE
        return s._owner(sh_cassandra_token(p, <size_t>n))
    if s.cql == CQL_BIGINT or s.cql == CQL_INT:
        if not PyLong_CheckExact(<object>key):
            return KEY_NOT_MINE
        v = PyLong_AsLongLongAndOverflow(<object>key, &overflow)
        if overflow != 0:
            return KEY_NOT_MINE
        width = 8
        if s.cql == CQL_INT:
            if v < -2147483648 or v > 2147483647:
                return KEY_NOT_MINE
            width = 4
        for i in range(width):  # big-endian, as CQL serializes it
            buf[i] = <uint8_t>((<uint64_t>v) >> (8 * (width - 1 - i)))
        return s._owner(sh_cassandra_token(buf, <size_t>width))
    return KEY_NOT_MINE


# ============================================================================
# ketama (libmemcached, uhashring) and twemproxy: MD5 / fnv1a_64 continuum
# ============================================================================

def md5(const uint8_t[::1] data not None) -> bytes:
    """MD5 digest (RFC 1321) of a bytes-like object."""
    cdef uint8_t out[16]
    sh_md5(_bytes_of(data), <size_t>data.shape[0], out)
    return (<char *>out)[:16]


def ketama_hash(const uint8_t[::1] data not None) -> int:
    """ketama's key hash: the first 4 MD5 bytes, little-endian."""
    return sh_md5_u32le(_bytes_of(data), <size_t>data.shape[0])


def twemproxy_fnv1a_64(const uint8_t[::1] data not None) -> int:
    """twemproxy's fnv1a_64 key hash (kept to 32 bits, as twemproxy does)."""
    return sh_twemproxy_fnv1a_64(_bytes_of(data), <size_t>data.shape[0])


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
    cdef const uint32_t *p = &points[0] if m else <const uint32_t *>_EMPTY
    with nogil:
        sh_ketama_bucket_index(p, <size_t>m, bits, o)
    return out


cdef ptrdiff_t _k_ketama_hash(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_md5_u32le_offsets(<const uint8_t *>j.data, _offs(j, s), <size_t>(e - s), <uint32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_ketama_route(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    cdef const _continuum *k = <const _continuum *>j.ctx
    sh_ketama_route_offsets(<const uint8_t *>j.data, _offs(j, s), <size_t>(e - s), k.points, k.owners, k.m,
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
    return _map_offsets(_k_ketama_hash, data, offsets, None, _DT_U32, False, threads)


def ketama_route_offsets(const uint32_t[::1] points not None, const int32_t[::1] owners not None,
                         bint upper, const uint8_t[::1] data not None,
                         const int64_t[::1] offsets not None, threads=None,
                         const int32_t[::1] index=None, int key_hash=0):
    """Key hash (0: MD5, 1: twemproxy fnv1a_64) + continuum lookup: the
    owner index of every (data, offsets) key."""
    if key_hash not in (0, 1):
        raise ValueError(f"key_hash must be 0 (md5) or 1 (twemproxy fnv1a_64), got {key_hash}")
    cdef _continuum k = _continuum_of(points, owners, upper, index, key_hash)
    return _map_offsets(_k_ketama_route, data, offsets, None, _DT_I32, False, threads, 0, &k)


def ketama_lookup(const uint32_t[::1] points not None, const int32_t[::1] owners not None,
                  bint upper, const uint32_t[::1] hashes not None, threads=None,
                  const int32_t[::1] index=None):
    """The owner index of every 32-bit key hash on the continuum."""
    cdef _continuum k = _continuum_of(points, owners, upper, index, 0)
    return _map(_k_ketama_lookup, hashes, None, _DT_I32, False, threads, 0, &k)


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


# ============================================================================
# Vitess: the hash vindex (DES, all-zero key) and the xxhash vindex
# ============================================================================

# The Vitess `hash` vindex encrypts with an all-zero DES key.  The expanded
# key is built once at import and only read afterwards (thread-safe).
cdef sh_des_ctx _ZERO_KEY_DES
cdef uint8_t _zero_key[8]
_zero_key[:] = [0, 0, 0, 0, 0, 0, 0, 0]
sh_des_setkey(&_ZERO_KEY_DES, _zero_key)


def des_encrypt_zero_key(uint64_t block) -> int:
    """DES (all-zero key) of one block, a big-endian uint64 value."""
    return sh_des_encrypt(&_ZERO_KEY_DES, block)


def des_decrypt_zero_key(uint64_t block) -> int:
    """The inverse of :func:`des_encrypt_zero_key`."""
    return sh_des_decrypt(&_ZERO_KEY_DES, block)


def xxh64(const uint8_t[::1] data not None) -> int:
    """xxh64 (seed 0) of a bytes-like object."""
    return sh_xxh64(_bytes_of(data), <size_t>data.shape[0], 0)


cdef ptrdiff_t _k_des(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_des_encrypt_batch(&_ZERO_KEY_DES, <const uint64_t *>j.data + s, <size_t>(e - s), <uint64_t *>j.out + s)
    return SH_OK


cdef int _XXH_MODES[6]  # the ctx of _k_xxh64 and _k_xxh64_decimal: kernel * 2 + swap
for _i in range(6):
    _XXH_MODES[_i] = _i
_XXH_KERNELS = ("batch", "scalar", "avx512")  # kernel 0: the one chosen for this CPU


cdef inline void _swap_u64(uint64_t *out, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        out[i] = sh_swap64(out[i])


cdef ptrdiff_t _k_xxh64(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    # job.ctx: an entry of _XXH_MODES.  Kernel 0 is the one chosen for this CPU: eight keys per
    # AVX-512 vector (sh_xxhash_simd.h), else keys queued by length and hashed by code compiled
    # per length (sh_xxhash.c).  With swap, each hash is byte-swapped
    # (its big-endian bytes: Vitess's keyspace id) while the chunk is in the cache.
    cdef int mode = (<const int *>j.ctx)[0]
    cdef const uint8_t *data = <const uint8_t *>j.data
    cdef uint64_t *out = <uint64_t *>j.out + s
    cdef size_t n = <size_t>(e - s)
    cdef int kernel = mode >> 1
    if kernel == 2:
        sh_xxh64_offsets_avx512(data, _offs(j, s), n, 0, out)
    elif kernel == 1:
        sh_xxh64_offsets(data, _offs(j, s), n, 0, out)
    else:
        sh_xxh64_offsets_batch(data, _offs(j, s), n, 0, out)
    if mode & 1:
        _swap_u64(out, e - s)
    return SH_OK


cdef ptrdiff_t _k_xxh64_decimal(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    # job.ctx: an entry of _XXH_MODES (only its swap bit counts)
    cdef const int64_t *v = <const int64_t *>j.data
    cdef uint64_t *out = <uint64_t *>j.out
    cdef bint swap = (<const int *>j.ctx)[0] & 1
    cdef char buf[24]
    cdef Py_ssize_t i
    for i in range(s, e):
        out[i] = sh_xxh64(buf, <size_t>sh_decimal(v[i], buf), 0)
    if swap:
        _swap_u64(out + s, e - s)
    return SH_OK


def des_encrypt_zero_key_array(const uint64_t[::1] blocks not None, threads=None):
    """DES (all-zero key) of each block, blocks as big-endian uint64 values."""
    return _map(_k_des, blocks, None, _DT_U64, False, threads)


def xxh64_offsets(const uint8_t[::1] data not None, const int64_t[::1] offsets not None,
                  threads=None, *, bint swap=False):
    """xxh64 (seed 0) of every (data, offsets) key; with ``swap``, each
    byte-swapped (read as a big-endian number: a Vitess keyspace id)."""
    return _map_offsets(_k_xxh64, data, offsets, None, _DT_U64, False, threads, 0, &_XXH_MODES[swap])


def xxh64_kernels():
    """The XXH64 batch kernels this build and CPU can run: "scalar", and
    "avx512" where the CPU has it (see :func:`_xxh64_offsets_with`)."""
    return ["scalar"] + (["avx512"] if sh_xxh64_avx512_available() else [])


def _xxh64_offsets_with(str kernel, const uint8_t[::1] data not None, const int64_t[::1] offsets not None,
                        threads=None):
    """:func:`xxh64_offsets` with a named kernel instead of the one chosen
    for this CPU (for the tests that hold every kernel to the reference, and
    the benchmarks that compare them)."""
    if kernel not in xxh64_kernels():
        raise ValueError(f"the {kernel!r} XXH64 kernel is not available here ({xxh64_kernels()})")
    cdef int which = _XXH_KERNELS.index(kernel)
    return _map_offsets(_k_xxh64, data, offsets, None, _DT_U64, False, threads, 0, &_XXH_MODES[2 * which])


def xxh64_decimal_int64(const int64_t[::1] values not None, threads=None, *, bint swap=False):
    """xxh64 (seed 0) of each value's decimal text (Vitess ``xxhash`` over
    ints); with ``swap``, each byte-swapped (a Vitess keyspace id)."""
    return _map(_k_xxh64_decimal, values, None, _DT_U64, False, threads, 0, &_XXH_MODES[swap])


cdef class VitessKeys(_RangeKeys):
    """Vitess key ranges: sorted range starts (uint64 keyspace ids, the first
    0) and their shards; xxhash: the xxhash vindex, else the hash vindex."""
    cdef bint xx

    def __init__(self, starts, owners, bint xxhash):
        self._fresh()
        a = self._ranges(starts, owners, np.uint64, "one owner per range, the first starting at 0")
        if a[0] != 0:
            raise ValueError("one owner per range, the first starting at 0")
        self.xx = xxhash

    cdef key_index_fn _fn(self):
        return _vitess_index


cdef int32_t _vitess_index(void *ctx, PyObject *key) except -1:
    cdef VitessKeys s = <VitessKeys>ctx
    cdef long long v
    cdef int overflow = 0
    cdef uint64_t k, hx
    cdef Py_ssize_t n
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
                    return KEY_NOT_MINE
                n = sh_decimal(v, buf)
                p = buf
            else:
                return KEY_NOT_MINE
        hx = sh_xxh64(p, <size_t>n, 0)
        k = 0
        for i in range(8):  # the little-endian digest bytes, read big-endian
            k = (k << 8) | ((hx >> (8 * i)) & 0xFF)
    else:
        if not PyLong_CheckExact(<object>key):
            return KEY_NOT_MINE
        v = PyLong_AsLongLongAndOverflow(<object>key, &overflow)
        if overflow != 0:
            return KEY_NOT_MINE
        k = sh_des_encrypt(&_ZERO_KEY_DES, <uint64_t>v)
    # starts[0] == 0 <= k: at least one start is <= k
    return s.owners[_count_le(<const uint64_t *>s.bounds, s.m, k) - 1]


# ============================================================================
# MongoDB: hashed shard keys (MD5 of the BSON element) and chunk ranges
# ============================================================================

def mongo_hash_int64(int64_t v) -> int:
    """Signed int64 MongoDB hash of a number already reduced to int64."""
    cdef uint64_t h = sh_mongo_hash_int64(v)
    return <int64_t>h


def mongo_double_to_long(double d) -> int:
    """MongoDB's conversion of a double shard key value to the int64 it hashes."""
    return sh_mongo_double_to_long(d)


cdef ptrdiff_t _k_mongo_int64(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_mongo_hash_int64_batch(<const int64_t *>j.data + s, <size_t>(e - s), <uint64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_mongo_double(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_mongo_hash_double_batch(<const double *>j.data + s, <size_t>(e - s), <uint64_t *>j.out + s)
    return SH_OK


def mongo_hash_int64_array(const int64_t[::1] values not None, threads=None):
    """The signed MongoDB hash of every int64 value (int64 array)."""
    return _map(_k_mongo_int64, values, None, _DT_U64, False, threads).view(np.int64)


def mongo_hash_double_array(const double[::1] values not None, threads=None):
    """The signed MongoDB hash of every double value (int64 array)."""
    return _map(_k_mongo_double, values, None, _DT_U64, False, threads).view(np.int64)


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
    return s.owners[_count_le(<const int64_t *>s.bounds, s.m, h) - 1]


# ============================================================================
# PostgreSQL (PARTITION BY HASH) and Citus: the hash opclasses, per type
# ============================================================================

import_datetime()
# lookup3 over variable-length keys: the AVX2 kernel where the CPU has it;
# Cassandra tokens of Arrow data and of bytes: the AVX-512 or AVX2 kernel
sh_pg_init()
sh_cassandra_init()
sh_xxh64_batch_init()


def simd_kernels():
    """The vector kernels this build and this CPU run for variable-length
    keys, by system: ``{"cassandra": "avx512", "avx2" or "scalar",
    "postgres": "avx2" or "scalar", "vitess": "avx512" or "scalar"}`` (the
    answers are the same either way; for benchmark reports and bug
    reports)."""
    return {"cassandra": sh_cassandra_kernel().decode("ascii"),
            "vitess": sh_xxh64_batch_kernel().decode("ascii"),
            "postgres": "avx2" if sh_pg_avx2_available() else "scalar"}

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
    n = _small_len(values)
    if n < 0:
        return None
    for i in range(n):
        v = <object>PySequence_Fast_GET_ITEM(values, i)
        if v is None or not _pg_value(v, code, True, <uint64_t>sd, &h):
            return None
        out[i] = h
    return _array_of(out, n, NP_UINT64, sizeof(uint64_t))


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
    lo = _count_le(<const int64_t *>s.bounds, s.m, <int64_t><int32_t><uint32_t>h)
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
    return sh_pg_hash_bytes_extended(_bytes_of(data), <size_t>data.shape[0], seed)


def hash_bytes(const uint8_t[::1] data not None):
    """PostgreSQL hash_bytes(data, len) -> signed int32 (little-endian server)."""
    return _as_int32(sh_pg_hash_bytes(_bytes_of(data), <size_t>data.shape[0]))


def float8_extended(double v, uint64_t seed):
    """hashfloat8extended(v, seed) -> uint64."""
    return sh_pg_hash_float8_extended(v, seed)


def float8_32(double v):
    """hashfloat8(v) -> signed int32."""
    return _as_int32(sh_pg_hash_float8(v))


# -- the PostgreSQL hash functions over arrays (out= given by the caller) ----------
# job.seed: the seed of the extended (64-bit) hashes.

cdef ptrdiff_t _k_pg_int2_ext(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_int2_extended(<const int16_t *>j.data + s, <size_t>(e - s), j.seed, <uint64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_int4_ext(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_int4_extended(<const int32_t *>j.data + s, <size_t>(e - s), j.seed, <uint64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_int8_ext(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_int8_extended(<const int64_t *>j.data + s, <size_t>(e - s), j.seed, <uint64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_int2_32(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_int2_32(<const int16_t *>j.data + s, <size_t>(e - s), <int32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_int4_32(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_int4_32(<const int32_t *>j.data + s, <size_t>(e - s), <int32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_int8_32(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_int8_32(<const int64_t *>j.data + s, <size_t>(e - s), <int32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_float8_ext(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_float8_extended(<const double *>j.data + s, <size_t>(e - s), j.seed, <uint64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_float8_32(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_float8_32(<const double *>j.data + s, <size_t>(e - s), <int32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_fixed_ext(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_fixed_extended(<const uint8_t *>j.data + <size_t>s * j.width, j.width, <size_t>(e - s), j.seed,
                         <uint64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_fixed_32(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_fixed_32(<const uint8_t *>j.data + <size_t>s * j.width, j.width, <size_t>(e - s), <int32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_varlen_ext(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_varlen_extended(<const uint8_t *>j.data, _offs(j, s), <size_t>(e - s), j.seed, <uint64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_pg_varlen_32(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_pg_varlen_32(<const uint8_t *>j.data, _offs(j, s), <size_t>(e - s), <int32_t *>j.out + s)
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
    if pgint is int16_t:
        _map(_k_pg_int2_ext, values, out, _DT_U64, True, threads, seed)
    elif pgint is int32_t:
        _map(_k_pg_int4_ext, values, out, _DT_U64, True, threads, seed)
    else:
        _map(_k_pg_int8_ext, values, out, _DT_U64, True, threads, seed)


def int_32(const pgint[::1] values not None, out, threads=None):
    """32-bit hash (hashint2 / hashint4 / hashint8) of integer values into out (int32)."""
    if pgint is int16_t:
        _map(_k_pg_int2_32, values, out, _DT_I32, True, threads)
    elif pgint is int32_t:
        _map(_k_pg_int4_32, values, out, _DT_I32, True, threads)
    else:
        _map(_k_pg_int8_32, values, out, _DT_I32, True, threads)


def float8_extended_array(const double[::1] values not None, uint64_t seed, out, threads=None):
    """hashfloat8extended of every value into out (uint64)."""
    _map(_k_pg_float8_ext, values, out, _DT_U64, True, threads, seed)


def float8_32_array(const double[::1] values not None, out, threads=None):
    """hashfloat8 of every value into out (int32)."""
    _map(_k_pg_float8_32, values, out, _DT_I32, True, threads)


def fixed_extended(const uint8_t[::1] data not None, Py_ssize_t width, uint64_t seed, out, threads=None):
    """Extended hash of packed fixed-width keys (uuid: width 16) into out (uint64)."""
    _map_fixed(_k_pg_fixed_ext, data, width, out, _DT_U64, threads, seed)


def fixed_32(const uint8_t[::1] data not None, Py_ssize_t width, out, threads=None):
    """32-bit hash of packed fixed-width keys into out (int32)."""
    _map_fixed(_k_pg_fixed_32, data, width, out, _DT_I32, threads)


def varlen_extended(const uint8_t[::1] data not None, const int64_t[::1] offsets not None, uint64_t seed,
                    out, threads=None):
    """Extended hash of variable-length keys (text, bytea) in Arrow layout into out (uint64)."""
    _map_offsets(_k_pg_varlen_ext, data, offsets, out, _DT_U64, True, threads, seed)


def varlen_32(const uint8_t[::1] data not None, const int64_t[::1] offsets not None, out, threads=None):
    """32-bit hash (hashtext, hashvarlena) of variable-length keys in Arrow layout into out (int32)."""
    _map_offsets(_k_pg_varlen_32, data, offsets, out, _DT_I32, True, threads)


def combine64(acc, const uint64_t[::1] h not None, isnull=None, threads=None):
    """acc[i] = hash_combine64(acc[i], h[i]) where isnull[i] is false (in place)."""
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
    run(_k_pg_combine, &job, n, threads)


def remainder(const uint64_t[::1] rowhash not None, uint64_t modulus, out, threads=None):
    """out[i] = rowhash[i] % modulus (unsigned), out an int64 array."""
    if modulus == 0:
        raise ValueError("modulus must be positive")
    _map(_k_pg_remainder, rowhash, out, _DT_I64, True, threads, modulus)


# ============================================================================
# Guava: Hashing.consistentHash
# ============================================================================

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
    _map(_k_guava, keys, out, _DT_I32, True, threads, <uint64_t>buckets)
