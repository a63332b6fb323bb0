# distutils: sources = [src/shardhash/_core/hash/sh_md5.c, src/shardhash/_core/hash/sh_des.c, src/shardhash/_core/hash/sh_crc16.c, src/shardhash/_core/compat/sh_ketama.c, src/shardhash/_core/compat/sh_twemproxy.c, src/shardhash/_core/compat/sh_mongo.c, src/shardhash/_core/compat/sh_redis.c, src/shardhash/_core/compat/sh_cassandra.c, src/shardhash/_core/hash/sh_xxhash.c]
"""Compiled kernels of the compatibility modes for Cassandra, ketama, Vitess,
MongoDB and Redis Cluster.

Private module; the public API is in :mod:`shardhash.compat.cassandra`,
:mod:`~shardhash.compat.ketama`, :mod:`~shardhash.compat.vitess`,
:mod:`~shardhash.compat.mongo` and :mod:`~shardhash.compat.redis`.

Every batch kernel over arrays validates its inputs with the GIL held, then
runs the C core without the GIL, split over threads by ``shardhash._parallel``.
The kernels over Python sequences (``*_seq``) run the C core on the keys as
they read them, on the calling thread with the GIL held.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_Check
from cpython.list cimport PyList_GET_ITEM
from cpython.tuple cimport PyTuple_GET_ITEM
from cpython.unicode cimport PyUnicode_Check
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as np

from shardhash._parallel import parallel_for

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t *) except NULL

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
    void sh_twemproxy_fnv1a_64_offsets(const uint8_t *data, const int64_t *offsets, size_t n,
                                       uint32_t *out)

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
    void sh_des_decrypt_batch(const sh_des_ctx *ctx, const uint64_t *inp, size_t n, uint64_t *out)

cdef extern from "sh_crc16.h" nogil:
    uint16_t sh_crc16_xmodem(const void *data, size_t len)

cdef extern from "sh_redis.h" nogil:
    uint16_t sh_redis_keyslot(const void *key, size_t len)
    void sh_redis_keyslot_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint16_t *out)
    void sh_redis_keyslot_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint16_t *out)

cdef extern from "sh_cassandra.h" nogil:
    uint64_t sh_cassandra_murmur_h1(const void *data, size_t len)
    int64_t sh_cassandra_token(const void *data, size_t len)
    void sh_cassandra_token_offsets(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)
    void sh_cassandra_token_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out)
    void sh_cassandra_token_bigint(const int64_t *values, size_t n, int64_t *out)
    void sh_cassandra_token_int(const int32_t *values, size_t n, int64_t *out)
    void sh_cassandra_ring_index(const int64_t *ring, size_t m, const int64_t *tokens, size_t n,
                                 int64_t *out)

cdef extern from "sh_xxhash.h" nogil:
    uint64_t sh_xxh64(const void *data, size_t len, uint64_t seed)


# The Vitess `hash` vindex encrypts with an all-zero DES key.  The expanded
# key is built once at import and only read afterwards (thread-safe).
cdef sh_des_ctx _ZERO_KEY_DES
cdef uint8_t _zero_key[8]
_zero_key[:] = [0, 0, 0, 0, 0, 0, 0, 0]
sh_des_setkey(&_ZERO_KEY_DES, _zero_key)


# ----------------------------------------------------------------------------
# Keys as Arrow-style (offsets, data)
# ----------------------------------------------------------------------------

cdef const uint8_t _EMPTY[1]


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
        except (TypeError, ValueError) as e:
            raise type(e)(f"key at position {i}: {e}") from None
        if not PyBytes_Check(b):
            raise TypeError(f"key at position {i}: converter returned {type(b).__name__}, not bytes")
        return <bytes>b
    raise TypeError(f"key at position {i} must be bytes or str, not {type(k).__name__} ({k!r:.60})")


def _arrow_pack(obj, bint as_text=False):
    """(offsets int64, data uint8) of an Arrow binary/string array; None if
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
        return np.zeros(1, np.int64), np.zeros(1, np.uint8)
    offsets = np.frombuffer(bufs[1], dtype=odt)[obj.offset: obj.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    return offsets, data


def pack_keys(keys, convert=None, bint raw_bytes=True):
    """Lay out keys as Arrow-style ``(offsets, data)``: key i is
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
    return offsets, data


# ----------------------------------------------------------------------------
# Keys as pointers into the keys' own bytes (Python sequences, no copy)
# ----------------------------------------------------------------------------

cdef enum:
    _SEQ_CHUNK = 1024

cdef object _seq_kernel(object keys, int kind, object convert, bint raw_bytes):
    """Run a pointer kernel over a list, tuple or 1-d numpy array of keys as
    they are read (kind 0: Cassandra tokens, 1: Redis slots); None for any
    other input (Arrow data and iterables go through :func:`pack_keys`).

    One walk reads each key's pointer and length, and every _SEQ_CHUNK keys
    the kernel runs on them while they are still in cache; no key's bytes
    are copied.  The walk holds the GIL throughout, so nothing but a key's
    own code (a converter, ``bytes(memoryview)``) can change the caller's
    list or free a key whose pointer is pending: before the first such call
    the walk switches to a private copy of the sequence (taken before that
    code ran, and holding every key), and converted keys are kept until the
    kernel has read them.
    """
    cdef object src
    cdef tuple snapshot = None
    cdef list converted = []
    cdef Py_ssize_t i, n, m, j = 0, base = 0
    cdef object k
    cdef const char *p
    cdef bint is_list
    cdef const uint8_t *ptrs[_SEQ_CHUNK]
    cdef int64_t lens[_SEQ_CHUNK]
    cdef int64_t[::1] o64
    cdef uint16_t[::1] o16
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            raise ValueError(f"keys must be one-dimensional, got shape {keys.shape}")
        src = keys.tolist()
    elif isinstance(keys, (list, tuple)):
        src = keys
    else:
        return None
    is_list = isinstance(src, list)
    n = len(src)
    if kind == 0:
        out = np.empty(n, dtype=np.int64)
        o64 = out
    else:
        out = np.empty(n, dtype=np.uint16)
        o16 = out
    for i in range(n):
        if snapshot is not None:
            k = snapshot[i]
        elif is_list:
            # no key's code has run yet: the list is as it was at the start
            k = <object>PyList_GET_ITEM(src, i)
        else:
            k = <object>PyTuple_GET_ITEM(src, i)
        if raw_bytes and PyBytes_Check(k):
            p = PyBytes_AS_STRING(k)
            m = PyBytes_GET_SIZE(k)
        elif PyUnicode_Check(k):
            p = PyUnicode_AsUTF8AndSize(k, &m)
        else:
            if snapshot is None and is_list:
                snapshot = tuple(src)
            k = _as_bytes(k, i, convert, raw_bytes)
            converted.append(k)
            p = PyBytes_AS_STRING(k)
            m = PyBytes_GET_SIZE(k)
        ptrs[j] = <const uint8_t *>p
        lens[j] = m
        j += 1
        if j == _SEQ_CHUNK or i == n - 1:
            if kind == 0:
                sh_cassandra_token_ptrs(ptrs, lens, <size_t>j, &o64[base])
            else:
                sh_redis_keyslot_ptrs(ptrs, lens, <size_t>j, &o16[base])
            base += j
            j = 0
            if converted:
                converted = []
    return out


def cassandra_token_seq(keys):
    """Tokens of a list, tuple or numpy array of bytes/str keys (read in
    place, see :func:`_seq_kernel`); None for other inputs."""
    return _seq_kernel(keys, 0, None, True)


def redis_keyslot_seq(keys):
    """Slots of a list, tuple or numpy array of bytes/str keys (read in
    place, see :func:`_seq_kernel`); None for other inputs."""
    return _seq_kernel(keys, 1, None, True)


def list_walk_floor(list keys):
    """The floor of any kernel over a Python list of bytes/str keys: one walk
    that reads each key's pointer and length and nothing else (for the
    benchmarks).  Returns the total length in bytes."""
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


cdef Py_ssize_t _check_offsets(const int64_t[::1] offsets, Py_ssize_t ndata) except -1:
    """Validate Arrow offsets (non-decreasing, inside the data); returns n."""
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("offsets must have at least one element")
    if offsets[0] < 0:
        raise ValueError(f"offsets[0] = {offsets[0]} is negative")
    for i in range(n):
        if offsets[i + 1] < offsets[i]:
            raise ValueError(f"offsets decrease at position {i + 1}")
    if offsets[n] > ndata:
        raise ValueError(f"offsets end at {offsets[n]} beyond the data ({ndata} bytes)")
    return n


# ----------------------------------------------------------------------------
# Scalars
# ----------------------------------------------------------------------------

def md5(const uint8_t[::1] data not None) -> bytes:
    """MD5 digest (RFC 1321) of a bytes-like object."""
    cdef uint8_t out[16]
    cdef const uint8_t *p = &data[0] if data.shape[0] else _EMPTY
    sh_md5(p, <size_t>data.shape[0], out)
    return (<char *>out)[:16]


def crc16_xmodem(const uint8_t[::1] data not None) -> int:
    cdef const uint8_t *p = &data[0] if data.shape[0] else _EMPTY
    return sh_crc16_xmodem(p, <size_t>data.shape[0])


def redis_keyslot(const uint8_t[::1] data not None) -> int:
    cdef const uint8_t *p = &data[0] if data.shape[0] else _EMPTY
    return sh_redis_keyslot(p, <size_t>data.shape[0])


def cassandra_token(const uint8_t[::1] data not None) -> int:
    cdef const uint8_t *p = &data[0] if data.shape[0] else _EMPTY
    return sh_cassandra_token(p, <size_t>data.shape[0])


def ketama_hash(const uint8_t[::1] data not None) -> int:
    cdef const uint8_t *p = &data[0] if data.shape[0] else _EMPTY
    return sh_md5_u32le(p, <size_t>data.shape[0])


def mongo_hash_int64(int64_t v) -> int:
    """Signed int64 MongoDB hash of a number already reduced to int64."""
    cdef uint64_t h = sh_mongo_hash_int64(v)
    return <int64_t>h


def mongo_double_to_long(double d) -> int:
    return sh_mongo_double_to_long(d)


def des_encrypt_zero_key(uint64_t block) -> int:
    return sh_des_encrypt(&_ZERO_KEY_DES, block)


def des_decrypt_zero_key(uint64_t block) -> int:
    return sh_des_decrypt(&_ZERO_KEY_DES, block)


# ----------------------------------------------------------------------------
# Batch kernels (outputs allocated by the caller or here)
# ----------------------------------------------------------------------------

def cassandra_token_offsets(const int64_t[::1] offsets not None, const uint8_t[::1] data not None,
                            threads=None):
    cdef Py_ssize_t n = _check_offsets(offsets, data.shape[0])
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef const uint8_t *d = &data[0] if data.shape[0] else _EMPTY

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_cassandra_token_offsets(d, &offsets[s], <size_t>(e - s), &o[s])
    parallel_for(n, threads, body)
    return out


def cassandra_token_bigint(const int64_t[::1] values not None, threads=None):
    cdef Py_ssize_t n = values.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_cassandra_token_bigint(&values[s], <size_t>(e - s), &o[s])
    parallel_for(n, threads, body)
    return out


def cassandra_token_int(const int32_t[::1] values not None, threads=None):
    cdef Py_ssize_t n = values.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_cassandra_token_int(&values[s], <size_t>(e - s), &o[s])
    parallel_for(n, threads, body)
    return out


def cassandra_ring_index(const int64_t[::1] ring not None, const int64_t[::1] tokens not None,
                         threads=None):
    """Index of the first ring token >= each token, wrapping to 0."""
    cdef Py_ssize_t n = tokens.shape[0], m = ring.shape[0], i
    if m == 0:
        raise ValueError("the ring has no tokens")
    for i in range(m - 1):
        if ring[i + 1] < ring[i]:
            raise ValueError("ring tokens must be sorted")
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_cassandra_ring_index(&ring[0], <size_t>m, &tokens[s], <size_t>(e - s), &o[s])
    parallel_for(n, threads, body)
    return out


def redis_keyslot_offsets(const int64_t[::1] offsets not None, const uint8_t[::1] data not None,
                          threads=None):
    cdef Py_ssize_t n = _check_offsets(offsets, data.shape[0])
    out = np.empty(n, dtype=np.uint16)
    cdef uint16_t[::1] o = out
    cdef const uint8_t *d = &data[0] if data.shape[0] else _EMPTY

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_redis_keyslot_offsets(d, &offsets[s], <size_t>(e - s), &o[s])
    parallel_for(n, threads, body)
    return out


def ketama_hash_offsets(const int64_t[::1] offsets not None, const uint8_t[::1] data not None,
                        threads=None):
    cdef Py_ssize_t n = _check_offsets(offsets, data.shape[0])
    out = np.empty(n, dtype=np.uint32)
    cdef uint32_t[::1] o = out
    cdef const uint8_t *d = &data[0] if data.shape[0] else _EMPTY

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_md5_u32le_offsets(d, &offsets[s], <size_t>(e - s), &o[s])
    parallel_for(n, threads, body)
    return out


cdef int _check_continuum(const uint32_t[::1] points, const int32_t[::1] owners,
                          const int32_t[::1] index) except -1:
    cdef Py_ssize_t i, m = points.shape[0]
    if m == 0:
        raise ValueError("the continuum has no points")
    if owners.shape[0] != m:
        raise ValueError("points and owners differ in length")
    for i in range(m - 1):
        if points[i + 1] < points[i]:
            raise ValueError("continuum points must be sorted")
    if index is not None:
        if index.shape[0] < 3 or (index.shape[0] - 1) & (index.shape[0] - 2) or index.shape[0] - 1 > (1 << 24):
            raise ValueError("the bucket index must have 2**bits + 1 entries (1 <= bits <= 24)")
        for i in range(index.shape[0] - 1):
            if index[i] < 0 or index[i + 1] < index[i] or index[i + 1] > m:
                raise ValueError("the bucket index is not a valid index of the continuum")
    return 0


cdef int _bits_of(const int32_t[::1] index):
    cdef int bits = 0
    if index is None:
        return 0
    while (<Py_ssize_t>1 << bits) < index.shape[0] - 1:
        bits += 1
    return bits


def ketama_bucket_index(const uint32_t[::1] points not None, int bits):
    """For each ``bits``-bit prefix b, the first point >= ``b << (32 - bits)``
    (plus a final entry ``len(points)``): the lookup accelerator."""
    if not 1 <= bits <= 24:
        raise ValueError(f"bits must be in 1..24, got {bits}")
    cdef Py_ssize_t i, m = points.shape[0]
    for i in range(m - 1):
        if points[i + 1] < points[i]:
            raise ValueError("continuum points must be sorted")
    if m >= (1 << 31):
        raise ValueError("too many points")
    out = np.empty((1 << bits) + 1, dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef const uint32_t *p = &points[0] if m else <const uint32_t *>_EMPTY
    with nogil:
        sh_ketama_bucket_index(p, <size_t>m, bits, &o[0])
    return out


def twemproxy_fnv1a_64(const uint8_t[::1] data not None) -> int:
    cdef const uint8_t *p = &data[0] if data.shape[0] else _EMPTY
    return sh_twemproxy_fnv1a_64(p, <size_t>data.shape[0])


def ketama_route_offsets(const uint32_t[::1] points not None, const int32_t[::1] owners not None,
                         bint upper, const int64_t[::1] offsets not None,
                         const uint8_t[::1] data not None, threads=None,
                         const int32_t[::1] index=None, int key_hash=0):
    """Key hash (0: MD5, 1: twemproxy fnv1a_64) + continuum lookup: the
    owner index of every key."""
    if key_hash not in (0, 1):
        raise ValueError(f"key_hash must be 0 (md5) or 1 (twemproxy fnv1a_64), got {key_hash}")
    _check_continuum(points, owners, index)
    cdef Py_ssize_t n = _check_offsets(offsets, data.shape[0])
    cdef Py_ssize_t m = points.shape[0]
    cdef int bits = _bits_of(index)
    cdef const int32_t *ix = &index[0] if index is not None else NULL
    out = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef const uint8_t *d = &data[0] if data.shape[0] else _EMPTY

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_ketama_route_offsets(d, &offsets[s], <size_t>(e - s), &points[0], &owners[0],
                                        <size_t>m, upper, ix, bits, key_hash, &o[s])
    parallel_for(n, threads, body)
    return out


def ketama_lookup(const uint32_t[::1] points not None, const int32_t[::1] owners not None,
                  bint upper, const uint32_t[::1] hashes not None, threads=None,
                  const int32_t[::1] index=None):
    _check_continuum(points, owners, index)
    cdef Py_ssize_t n = hashes.shape[0], m = points.shape[0]
    cdef int bits = _bits_of(index)
    cdef const int32_t *ix = &index[0] if index is not None else NULL
    out = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] o = out

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_ketama_lookup(&points[0], &owners[0], <size_t>m, upper, ix, bits, &hashes[s],
                                 <size_t>(e - s), &o[s])
    parallel_for(n, threads, body)
    return out


def mongo_hash_int64_array(const int64_t[::1] values not None, threads=None):
    cdef Py_ssize_t n = values.shape[0]
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_mongo_hash_int64_batch(&values[s], <size_t>(e - s), &o[s])
    parallel_for(n, threads, body)
    return out.view(np.int64)


def mongo_hash_double_array(const double[::1] values not None, threads=None):
    cdef Py_ssize_t n = values.shape[0]
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_mongo_hash_double_batch(&values[s], <size_t>(e - s), &o[s])
    parallel_for(n, threads, body)
    return out.view(np.int64)


def des_encrypt_zero_key_array(const uint64_t[::1] blocks not None, threads=None):
    """DES (all-zero key) of each block, blocks as big-endian uint64 values."""
    cdef Py_ssize_t n = blocks.shape[0]
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out

    def body(Py_ssize_t s, Py_ssize_t e):
        if e > s:
            with nogil:
                sh_des_encrypt_batch(&_ZERO_KEY_DES, &blocks[s], <size_t>(e - s), &o[s])
    parallel_for(n, threads, body)
    return out


cdef inline size_t _format_decimal(int64_t v, char *buf) noexcept nogil:
    """Decimal text of a signed 64-bit integer; returns its length."""
    cdef char tmp[24]
    cdef size_t n = 0, k = 0
    cdef uint64_t u
    if v < 0:
        u = <uint64_t>0 - <uint64_t>v
    else:
        u = <uint64_t>v
    while True:
        tmp[n] = <char>(48 + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    if v < 0:
        buf[0] = 45  # '-'
        k = 1
    while n:
        n -= 1
        buf[k] = tmp[n]
        k += 1
    return k


def xxh64_offsets(const int64_t[::1] offsets not None, const uint8_t[::1] data not None,
                  threads=None):
    """xxh64 (seed 0) of every key."""
    cdef Py_ssize_t n = _check_offsets(offsets, data.shape[0])
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef const uint8_t *d = &data[0] if data.shape[0] else _EMPTY

    def body(Py_ssize_t s, Py_ssize_t e):
        cdef Py_ssize_t i
        with nogil:
            for i in range(s, e):
                o[i] = sh_xxh64(d + offsets[i], <size_t>(offsets[i + 1] - offsets[i]), 0)
    parallel_for(n, threads, body)
    return out


def xxh64_decimal_int64(const int64_t[::1] values not None, threads=None):
    """xxh64 (seed 0) of each value's decimal text (Vitess ``xxhash`` over ints)."""
    cdef Py_ssize_t n = values.shape[0]
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out

    def body(Py_ssize_t s, Py_ssize_t e):
        cdef Py_ssize_t i
        cdef char buf[24]
        cdef size_t k
        with nogil:
            for i in range(s, e):
                k = _format_decimal(values[i], buf)
                o[i] = sh_xxh64(buf, k, 0)
    parallel_for(n, threads, body)
    return out


def xxh64(const uint8_t[::1] data not None) -> int:
    cdef const uint8_t *p = &data[0] if data.shape[0] else _EMPTY
    return sh_xxh64(p, <size_t>data.shape[0], 0)
