# distutils: sources = [src/shardhash/_core/hash/sh_des.c, src/shardhash/_core/hash/sh_xxhash.c, src/shardhash/_core/hash/sh_xxhash_avx512.c, src/shardhash/_core/hash/sh_xxhash_batch.c, src/shardhash/_core/common/sh_cpu.c, src/shardhash/_core/hash/sh_md5.c, src/shardhash/_core/compat/sh_unicode_loose.c]
"""Compiled bindings of Vitess (private; the public API is
:mod:`shardhash.compat.vitess`): the hash vindex (DES, all-zero key), the
xxhash vindex, the unicode_loose_* vindexes' folding and hashing, and the key
ranges' key router."""

from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_CheckExact
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from shardhash._common cimport sh_job, key_index_fn, KEY_NOT_MINE, sh_exact_raw, sh_decimal, SH_OK, SH_NOMEM, run
from shardhash._intake cimport seq_kernel, SH_SEQ_HEADER32
from shardhash.compat._native_base cimport _RangeKeys, bytes_of, offs, count_le, map_array, map_offsets

import numpy as np

from shardhash import _parallel

__all__ = ["des_encrypt_zero_key", "des_decrypt_zero_key", "xxh64", "des_encrypt_zero_key_array",
           "xxh64_offsets", "xxh64_kernels", "xxh64_decimal_int64", "vitess_xxhash_seq", "VitessKeys",
           "unicode_loose_key", "unicode_loose_ksid", "unicode_loose_ksids"]

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

cdef object _DT_U64 = np.dtype(np.uint64)

# xxh64 of Arrow data: the AVX-512 kernel where the CPU has it
sh_xxh64_batch_init()


def _simd_kernel():
    """The kernel this build and CPU run for xxh64 over Arrow data."""
    return sh_xxh64_batch_kernel().decode("ascii")


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
    return sh_xxh64(bytes_of(data), <size_t>data.shape[0], 0)


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
        sh_xxh64_offsets_avx512(data, offs(j, s), n, 0, out)
    elif kernel == 1:
        sh_xxh64_offsets(data, offs(j, s), n, 0, out)
    else:
        sh_xxh64_offsets_batch(data, offs(j, s), n, 0, out)
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
    return map_array(_k_des, blocks, None, _DT_U64, False, threads)


def xxh64_offsets(const uint8_t[::1] data not None, const int64_t[::1] offsets not None,
                  threads=None, *, bint swap=False):
    """xxh64 (seed 0) of every (data, offsets) key; with ``swap``, each
    byte-swapped (read as a big-endian number: a Vitess keyspace id)."""
    return map_offsets(_k_xxh64, data, offsets, None, _DT_U64, False, threads, 0, &_XXH_MODES[swap])


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
    return map_offsets(_k_xxh64, data, offsets, None, _DT_U64, False, threads, 0, &_XXH_MODES[2 * which])


def xxh64_decimal_int64(const int64_t[::1] values not None, threads=None, *, bint swap=False):
    """xxh64 (seed 0) of each value's decimal text (Vitess ``xxhash`` over
    ints); with ``swap``, each byte-swapped (a Vitess keyspace id)."""
    return map_array(_k_xxh64_decimal, values, None, _DT_U64, False, threads, 0, &_XXH_MODES[swap])


cdef void _pk_xxh_swapped(const void *ctx, const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                          void *out) noexcept nogil:
    # the kernel may read the 32 bytes before a key's end where the headers are that long
    if SH_SEQ_HEADER32:
        sh_xxh64_ptrs32_batch(ptrs, lens, n, 0, <uint64_t *>out)
    else:
        sh_xxh64_ptrs(ptrs, lens, n, 0, <uint64_t *>out)
    _swap_u64(<uint64_t *>out, <Py_ssize_t>n)


def vitess_xxhash_seq(keys, convert, threads=None):
    """Vitess ``xxhash`` keyspace ids (xxh64 of each key, byte-swapped, as
    uint64) of a list, tuple or numpy array of keys (read in place, see
    ``shardhash._intake.seq_kernel``; with ``threads`` > 1 on helper
    threads): bytes-like keys as they are, str as UTF-8, any other key
    through ``convert(key) -> bytes``; None for other inputs."""
    return seq_kernel(keys, _pk_xxh_swapped, NULL, _DT_U64, convert, True, threads, False)


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
    return s.owners[count_le(<const uint64_t *>s.bounds, s.m, k) - 1]


# ============================================================================
# unicode_loose_md5 / unicode_loose_xxhash: the collation key folded in C
# ============================================================================

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    unsigned int PyUnicode_KIND(object o)
    void *PyUnicode_DATA(object o)

cdef extern from "sh_unicode_loose.h" nogil:
    ctypedef struct sh_uloose:
        pass
    ctypedef struct sh_uloose_buf:
        uint32_t *cps
        size_t cps_cap
        uint32_t *el
        size_t el_cap
    enum:
        SH_ULOOSE_MAX_SUFFIX
        SH_ULOOSE_CON_COLS
    sh_uloose *sh_uloose_new(const uint32_t *elems, size_t nelems,
                             const uint32_t *exp_cp, const uint32_t *exp_off, const uint8_t *exp_cnt, size_t nexp,
                             const uint32_t *ideo, size_t nideo,
                             const uint32_t *ccc_cp, const uint8_t *ccc_lead, const uint8_t *ccc_trail, size_t nccc,
                             const uint32_t *con, size_t ncon, int max_combining)
    size_t sh_uloose_max_elems(const sh_uloose *t)
    void sh_uloose_free(sh_uloose *t)
    void sh_uloose_buf_free(sh_uloose_buf *b)
    ptrdiff_t sh_uloose_fold(const sh_uloose *t, const void *data, size_t len, int kind, sh_uloose_buf *b,
                             const uint8_t **key)
    ptrdiff_t sh_uloose_ksids(const sh_uloose *t, const void *const *ptrs, const int64_t *lens,
                              const uint8_t *kinds, size_t n, int md5, uint64_t *out)

# Built once, on first use, from the Python tables (shardhash.compat._unicode_loose,
# whose weights come from _unicode_loose_table: the one source of the data), and
# only read afterwards (thread-safe); never freed.
cdef const sh_uloose *_ULOOSE = NULL


cdef const sh_uloose *_uloose() except NULL:
    global _ULOOSE
    if _ULOOSE != NULL:
        return _ULOOSE
    from shardhash.compat import _unicode_loose
    f = _unicode_loose.flat_tables()
    if f["max_suffix"] > SH_ULOOSE_MAX_SUFFIX:  # pragma: no cover - tables of another shape
        raise RuntimeError(f"unicode_loose contractions longer than {SH_ULOOSE_MAX_SUFFIX} code points")
    cdef const uint32_t[::1] elems = np.asarray(f["elems"], dtype=np.uint32)
    cdef const uint32_t[::1] exp_cp = np.asarray(f["explicit_cp"], dtype=np.uint32)
    cdef const uint32_t[::1] exp_off = np.asarray(f["explicit_off"], dtype=np.uint32)
    cdef const uint8_t[::1] exp_cnt = np.asarray(f["explicit_cnt"], dtype=np.uint8)
    cdef const uint32_t[::1] ideo = np.asarray(f["ideographs"], dtype=np.uint32).reshape(-1)
    cdef const uint32_t[::1] ccc_cp = np.asarray(f["ccc_cp"], dtype=np.uint32)
    cdef const uint8_t[::1] ccc_lead = np.asarray(f["ccc_lead"], dtype=np.uint8)
    cdef const uint8_t[::1] ccc_trail = np.asarray(f["ccc_trail"], dtype=np.uint8)
    rows = np.zeros((len(f["contractions"]), SH_ULOOSE_CON_COLS), dtype=np.uint32)
    for i, (starter, suffix, off, cnt) in enumerate(f["contractions"]):
        rows[i, 0] = starter
        rows[i, 1] = len(suffix)
        rows[i, 2:2 + len(suffix)] = suffix
        rows[i, 2 + SH_ULOOSE_MAX_SUFFIX] = off
        rows[i, 3 + SH_ULOOSE_MAX_SUFFIX] = cnt
    cdef const uint32_t[::1] con = rows.reshape(-1)
    cdef sh_uloose *t = sh_uloose_new(&elems[0], <size_t>elems.shape[0], &exp_cp[0], &exp_off[0], &exp_cnt[0],
                      <size_t>exp_cp.shape[0], &ideo[0], <size_t>ideo.shape[0] // 2,
                      &ccc_cp[0], &ccc_lead[0], &ccc_trail[0], <size_t>ccc_cp.shape[0],
                      &con[0], <size_t>len(f["contractions"]), f["max_combining"])
    if t == NULL:  # pragma: no cover - out of memory or damaged tables
        raise RuntimeError("could not build the unicode_loose tables")
    if _ULOOSE != NULL:  # another thread built them meanwhile (the Python code above may switch threads)
        sh_uloose_free(t)
    else:
        _ULOOSE = t
    return _ULOOSE


def _unicode_loose_max_elems():
    """The most collation elements one code point or contraction yields (the
    kernel's memory bound: 4 bytes per element per code point of a key)."""
    return sh_uloose_max_elems(_uloose())


cdef int _key_parts(object k, const void **p, int64_t *n, uint8_t *kind):
    """An exact bytes (UTF-8) or str (its code units) key read in place; 0 for other keys."""
    if PyBytes_CheckExact(k):
        p[0] = PyBytes_AS_STRING(k)
        n[0] = PyBytes_GET_SIZE(k)
        kind[0] = 0
        return 1
    if PyUnicode_CheckExact(k):
        p[0] = PyUnicode_DATA(k)
        n[0] = PyUnicode_GET_LENGTH(k)
        kind[0] = <uint8_t>PyUnicode_KIND(k)
        return 1
    return 0


def unicode_loose_key(key):
    """The collation key (trailing spaces dropped, then the primary weights)
    of a bytes (UTF-8) or str key, folded in C; None when the C kernel
    leaves the key to the Python rules (invalid UTF-8, a lone surrogate, or
    contractions nested deeper than it follows): they raise or fold it."""
    cdef const sh_uloose *t = _uloose()
    cdef const void *p
    cdef int64_t n
    cdef uint8_t kind
    cdef sh_uloose_buf b
    cdef const uint8_t *out
    cdef ptrdiff_t r
    if not _key_parts(key, &p, &n, &kind):
        raise TypeError(f"a unicode_loose key is bytes or str, not {type(key).__name__}")
    b.cps = NULL
    b.el = NULL
    b.cps_cap = 0
    b.el_cap = 0
    try:
        r = sh_uloose_fold(t, p, <size_t>n, kind, &b, &out)
        if r == -2:
            raise MemoryError()
        if r < 0:
            return None
        return (<const char *>out)[:r]
    finally:
        sh_uloose_buf_free(&b)


def unicode_loose_ksid(key, bint md5):
    """The ``unicode_loose_md5`` (``md5``) or ``unicode_loose_xxhash``
    keyspace id's first 8 bytes, as a big-endian number, of a bytes (UTF-8)
    or str key, folded and hashed in C; None where :func:`unicode_loose_key`
    gives None."""
    cdef const sh_uloose *t = _uloose()
    cdef const void *p
    cdef int64_t n
    cdef uint8_t kind
    cdef uint64_t out
    cdef ptrdiff_t r
    if not _key_parts(key, &p, &n, &kind):
        raise TypeError(f"a unicode_loose key is bytes or str, not {type(key).__name__}")
    r = sh_uloose_ksids(t, &p, &n, &kind, 1, md5, &out)
    if r == -2:
        raise MemoryError()
    return None if r == 0 else out


cdef struct _LooseCtx:
    const sh_uloose *t
    const uint8_t *kinds
    int md5


cdef ptrdiff_t _k_loose(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    # job.ctx: a _LooseCtx; data: key pointers, offsets: key lengths (units), out: uint64 keyspace ids
    cdef const _LooseCtx *x = <const _LooseCtx *>j.ctx
    cdef ptrdiff_t r = sh_uloose_ksids(x.t, <const void *const *>j.data + s, <const int64_t *>j.offsets + s,
                                       x.kinds + s, <size_t>(e - s), x.md5, <uint64_t *>j.out + s)
    if r == -1:
        return SH_OK
    if r == -2:
        return SH_NOMEM
    return s + r


cdef enum:
    _LOOSE_BLOCK = 16384  # keys per block on one thread: their objects stay in cache from walk to kernel


def unicode_loose_ksids(keys, bint md5, convert, fallback, threads=None):
    """``unicode_loose_md5`` (``md5``) or ``unicode_loose_xxhash`` keyspace
    ids (their first 8 bytes as big-endian uint64) of a list or tuple of
    keys, folded and hashed in C without the GIL (``threads`` as every batch
    function takes it).

    Exact bytes keys are read as UTF-8 and exact str keys as their code
    units, in place (the keys are held in a private copy of the sequence
    while the kernel runs: a block of it at a time on one thread, all of it
    on more); any other key becomes ``convert(key, position) -> bytes``
    first (its errors are the caller's).  A key the kernel refuses (invalid
    UTF-8, a lone surrogate, nesting it does not follow) is passed to
    ``fallback(key, position) -> int``, which raises its error or returns its
    keyspace id."""
    cdef const sh_uloose *t = _uloose()
    if not isinstance(keys, (list, tuple)):
        raise TypeError(f"keys must be a list or tuple, not {type(keys).__name__}")
    cdef Py_ssize_t n = len(keys), base, block
    out = np.empty(n, dtype=np.uint64)
    if n == 0:
        return out
    block = n if _parallel.resolve_threads(threads, n) > 1 else min(n, <Py_ssize_t>_LOOSE_BLOCK)
    ptrs_a = np.empty(block, dtype=np.uintp)
    lens_a = np.empty(block, dtype=np.int64)
    kinds_a = np.empty(block, dtype=np.uint8)
    cdef uint64_t[::1] o = out
    base = 0
    while base < n:
        _loose_block(t, keys[base:base + block], base, md5, convert, fallback, threads, ptrs_a, lens_a, kinds_a,
                     &o[base])
        base += block
    return out


cdef int _loose_block(const sh_uloose *t, object items, Py_ssize_t base, bint md5, object convert, object fallback,
                      object threads, object ptrs_a, int64_t[::1] lens, uint8_t[::1] kinds, uint64_t *o) except -1:
    """Keyspace ids of items (a slice of the caller's list or tuple: it holds every key) into o; base:
    the position of items[0]."""
    cdef Py_ssize_t n = len(items), i, start
    cdef const void **ptrs = <const void **><size_t>ptrs_a.ctypes.data
    cdef list held = []
    for i in range(n):
        k = items[i]
        if not _key_parts(k, &ptrs[i], &lens[i], &kinds[i]):
            b = convert(k, base + i)
            if not PyBytes_CheckExact(b):
                raise TypeError(f"value at position {base + i}: the converter returned {type(b).__name__}, "
                                "not bytes")
            held.append(b)
            _key_parts(b, &ptrs[i], &lens[i], &kinds[i])
    cdef _LooseCtx ctx
    cdef sh_job job
    cdef ptrdiff_t r
    ctx.t = t
    ctx.md5 = md5
    start = 0
    while start < n:
        ctx.kinds = &kinds[start]
        job.data = &ptrs[start]
        job.offsets = &lens[start]
        job.out = &o[start]
        job.ctx = &ctx
        r = run(_k_loose, &job, n - start, threads)
        if r == SH_OK:
            break
        i = start + r  # a key the kernel left to the Python rules
        o[i] = fallback(items[i], base + i)
        start = i + 1
    return 0
