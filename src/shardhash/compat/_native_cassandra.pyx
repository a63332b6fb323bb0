# distutils: sources = [src/shardhash/_core/compat/sh_cassandra.c, src/shardhash/_core/compat/sh_cassandra_avx512.c, src/shardhash/_core/compat/sh_cassandra_avx2.c, src/shardhash/_core/common/sh_cpu.c]
"""Compiled bindings of Cassandra (private; the public API is
:mod:`shardhash.compat.cassandra`): Murmur3Partitioner tokens, the token
ring, CQL partition keys serialized in C (``_core/pyapi/sh_cql.h``) and
the ring's key router."""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_Check, PyBytes_CheckExact
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t, INT64_MIN
from libc.string cimport memcpy, memset

from shardhash._common cimport (sh_job, key_index_fn, KEY_NOT_MINE, sh_exact_raw, run, check_out, address,
                                SH_OK)
from shardhash._intake cimport seq_kernel, PySequence_Fast_ITEMS
from shardhash._npy cimport import_numpy, NP_INT64
from shardhash.compat._native_base cimport (_RangeKeys, bytes_of, offs, count_le, small_kernel, map_array,
                                            map_offsets)

import uuid as _uuid_mod

import numpy as np

import_numpy()

__all__ = ["cassandra_token", "token", "token_small", "cassandra_token_seq", "cassandra_token_offsets",
           "cassandra_token_bigint", "cassandra_token_int", "cassandra_token_cql", "cassandra_ring_index",
           "cassandra_ring_owner", "cassandra_kernels", "CassandraKeys"]

cdef extern from "sh_cassandra.h" nogil:
    int64_t sh_cassandra_token(const void *data, size_t len)
    void sh_cassandra_token_offsets(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)
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

cdef object _DT_I32 = np.dtype(np.int32)
cdef object _DT_I64 = np.dtype(np.int64)

# Cassandra tokens of Arrow data and of bytes: the AVX-512 or AVX2 kernel where the CPU has it
sh_cassandra_init()

# The Python fallback of token (set by shardhash.compat.cassandra).
cdef object _token_py = None


def _set_fallback(token):
    global _token_py
    _token_py = token


def _simd_kernel():
    """The kernel this build and CPU run for Arrow data and bytes keys."""
    return sh_cassandra_kernel().decode("ascii")


def cassandra_token(const uint8_t[::1] data not None) -> int:
    """The Murmur3Partitioner token of one serialized partition key."""
    return sh_cassandra_token(bytes_of(data), <size_t>data.shape[0])


@cython.binding(False)
def token(key):
    """The ``Murmur3Partitioner`` token of one serialized partition key.

    >>> token(b""), token(b"123")
    (-9223372036854775808, -7468325962851647638)
    """
    if type(key) is bytes:
        return sh_cassandra_token(PyBytes_AS_STRING(key), <size_t>PyBytes_GET_SIZE(key))
    return _token_py(key)


cdef void _pk_token(const void *ctx, const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                    void *out) noexcept nogil:
    sh_cassandra_token_ptrs16(ptrs, lens, n, <int64_t *>out)


def token_small(keys):
    """token_array(keys) (blob) for a list or tuple of at most 64 exact
    bytes or ASCII str keys (int64 array), in one pass; None otherwise."""
    return small_kernel(keys, _pk_token, NP_INT64, sizeof(int64_t))


def cassandra_token_seq(keys, threads=None):
    """Tokens of a list, tuple or numpy array of bytes/str keys (read in
    place, see ``shardhash._intake.seq_kernel``; on two threads or more,
    through the plain-C pipeline); None for other inputs."""
    return seq_kernel(keys, _pk_token, NULL, _DT_I64, None, True, threads, True)


cdef ptrdiff_t _k_token(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    sh_cassandra_token_offsets(<const uint8_t *>j.data, offs(j, s), <size_t>(e - s), <int64_t *>j.out + s)
    return SH_OK


cdef int _CASS_KERNELS[3]  # the ctx of _k_token_named: 0 scalar, 1 AVX2, 2 AVX-512
_CASS_KERNELS[0], _CASS_KERNELS[1], _CASS_KERNELS[2] = 0, 1, 2


cdef ptrdiff_t _k_token_named(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    # job.ctx: which kernel (an entry of _CASS_KERNELS)
    cdef int which = (<const int *>j.ctx)[0]
    cdef const uint8_t *data = <const uint8_t *>j.data
    cdef int64_t *out = <int64_t *>j.out + s
    if which == 2:
        sh_cassandra_token_offsets_avx512(data, offs(j, s), <size_t>(e - s), out)
    elif which == 1:
        sh_cassandra_token_offsets_avx2(data, offs(j, s), <size_t>(e - s), out)
    else:
        sh_cassandra_token_offsets_scalar(data, offs(j, s), <size_t>(e - s), out)
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
    return map_offsets(_k_token_named, data, offsets, None, _DT_I64, False, threads, 0, &_CASS_KERNELS[which])


cdef ptrdiff_t _k_token_ints(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    # job.variant: 0 bigint (and timestamp) keys, 1 CQL int keys
    if j.variant == 0:
        sh_cassandra_token_bigint(<const int64_t *>j.data + s, <size_t>(e - s), <int64_t *>j.out + s)
    else:
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
    return map_offsets(_k_token, data, offsets, None, _DT_I64, False, threads)


def cassandra_token_bigint(const int64_t[::1] values not None, threads=None):
    """The token of every bigint (and timestamp) key (int64 array)."""
    return map_array(_k_token_ints, values, None, _DT_I64, False, threads, 0, NULL, 0)


def cassandra_token_int(const int32_t[::1] values not None, threads=None):
    """The token of every CQL int key (int64 array)."""
    return map_array(_k_token_ints, values, None, _DT_I64, False, threads, 0, NULL, 1)


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

cdef extern from "sh_cql.h":
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
        cdef Py_ssize_t lo = 0 if t == INT64_MIN else count_le(<const int64_t *>self.bounds, self.m, t - 1)
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
