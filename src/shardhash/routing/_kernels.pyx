# distutils: sources = [src/shardhash/_core/place/sh_jump.c, src/shardhash/_core/place/sh_bucket.c, src/shardhash/_core/place/sh_ring.c, src/shardhash/_core/place/sh_maglev.c, src/shardhash/_core/place/sh_rendezvous.c, src/shardhash/_core/place/sh_override.c, src/shardhash/_core/place/sh_memento.c, src/shardhash/_core/place/sh_multiprobe.c, src/shardhash/_core/place/sh_bounded.c, src/shardhash/_core/place/sh_jump_avx2.c, src/shardhash/_core/place/sh_jump_neon.c, src/shardhash/_core/common/sh_cpu.c, src/shardhash/_core/hash/sh_xxhash.c, src/shardhash/_core/place/sh_replicas.c]
"""Compiled routing cores (private; the public API is ``shardhash.routing``).

``RouterCore`` is the base ``cdef class`` of every router.  It holds the
hasher, the shard tuple and one placement table: its strategy's C functions
(from ``_core/place/``) for one hash, a batch and a replica list, with the
state they read.  ``route(key)`` hashes the key through the hasher's C entry
point and places the hash through the table without leaving C;
``route_hashes`` validates its input, then runs the table's batch function
without the GIL over contiguous chunks with ``shardhash._common.run``.

A router fills its table once with one of the ``_use_*`` methods, then
seals itself with ``_seal()``; after that the tables can no longer
change (routers are immutable, which is what makes the GIL-free batch loops
safe).  Routers without a C kernel set ``_use_python()`` and implement
``_route_hashes_kernel(hashes, out)`` in Python.
"""

cimport cython
from libc.stdint cimport uint64_t, int32_t, uint32_t, int64_t, uint16_t, uint8_t
from libc.string cimport memcpy, memcmp, memset
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.ref cimport Py_INCREF, PyObject
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.unicode cimport PyUnicode_Compare
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_GetContext, PyCapsule_New
from cpython.sequence cimport PySequence_Fast_GET_ITEM, PySequence_Fast_GET_SIZE

from shardhash._hashing cimport Hasher
from shardhash._common cimport (sh_job, key_index_fn, sh_py_ascii, run, check_out, check_out_layout,
                                address, SH_OK)
from shardhash._npy cimport (import_numpy, is_ndarray_exact, new_array, array_data, int_array, int_word,
                             NP_INT32, NP_UNSIGNED)
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong

import numpy as np

import_numpy()

from shardhash._parallel import kernel_array, resolve_threads

__all__ = ["RouterCore", "jump_hash", "jump_hash_array", "as_hashes", "prepare_out", "unalias", "fill_out",
           "ring_index_bits", "maglev_populate", "mix64",
           "bounded_capacity", "bounded_assign",
           "ReplicaZones", "replicas_key", "replicas_hash", "replicas_keys", "replicas_hashes"]


cdef extern from "sh_xxhash.h" nogil:
    uint64_t sh_xxh3_word_key(uint64_t seed)
    uint64_t sh_xxh3_64_word_keyed(uint64_t v, uint64_t key)
    uint64_t sh_xxh3_64(const void *data, size_t len, uint64_t seed)

cdef extern from *:
    """
    /* The first 8 bytes of p[0 .. n-1] as a big-endian number, zero-padded:
     * comparing two of these orders byte strings like memcmp over 8 bytes. */
    static inline uint64_t sh_be_prefix(const char *p, Py_ssize_t n)
    {
        uint64_t v = 0;
        Py_ssize_t i;
        for (i = 0; i < 8; i++) v = (v << 8) | (i < n ? (uint64_t)(unsigned char)p[i] : 0u);
        return v;
    }
    """
    uint64_t sh_be_prefix(const char *p, Py_ssize_t n)

cdef extern from *:
    """
    /* route()'s inline hashing.  int_ok / str_ok: the router's Hasher is
     * xxh3_64 over the default int / str encodings (int_key is the word key
     * of its seed).  Returns 1 with *h set for an exact int of one digit or
     * a compact-ASCII exact str -- the bytes Hasher.hash_one would hash, so
     * the same value -- else 0: the caller then asks the Hasher, which also
     * raises every error. */
    SH_FORCE_INLINE int sh_route_fast_hash(PyObject *key, int int_ok, uint64_t int_key,
                                           int str_ok, uint64_t seed, uint64_t *h)
    {
        long long v;
        Py_ssize_t n;
        const char *p;
        if (PyLong_CheckExact(key)) {
            if (int_ok && sh_py_small_int(key, &v)) {
                *h = sh_xxh3_64_word_keyed((uint64_t)v, int_key);
                return 1;
            }
        } else if (str_ok && PyUnicode_CheckExact(key)) {
            p = sh_py_ascii(key, &n);
            if (p != NULL) {
                *h = sh_xxh3_64(p, (size_t)n, seed);
                return 1;
            }
        }
        return 0;
    }
    """
    bint sh_route_fast_hash(object key, bint int_ok, uint64_t int_key, bint str_ok, uint64_t seed,
                            uint64_t *h)

cdef extern from "sh_place.h" nogil:
    ctypedef struct sh_fastmod:
        uint64_t m_lo
        uint64_t m_hi
        uint64_t d
    ctypedef struct sh_ring:
        const uint64_t *tokens
        const int32_t *owners
        size_t ntokens
        const uint32_t *index
        uint64_t index_last
        unsigned shift
    uint64_t sh_mix64(uint64_t z)
    int32_t sh_jump(uint64_t key, int32_t num_buckets)
    void sh_jump_batch(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out)
    int sh_jump_avx2_available()
    int sh_jump_neon_available()
    void sh_place_init()
    unsigned sh_place_features()
    void sh_fastmod_init(sh_fastmod *f, uint64_t d)
    unsigned sh_ring_index_bits(size_t ntokens, unsigned width)
    void sh_ring_build_index(const uint64_t *tokens, const int32_t *owners, size_t ntokens,
                             unsigned shift, unsigned bits, uint32_t *index)
    ctypedef struct sh_ring16:
        const uint64_t *tokens
        const uint16_t *owners
        const uint16_t *index
        size_t ntokens
        uint64_t index_last
        unsigned shift
    uint32_t SH_RING_EMPTY
    uint32_t SH_RING16_EMPTY
    int sh_ring16_fits(size_t ntokens, const int32_t *owners)
    unsigned sh_ring16_index_bits(size_t ntokens, unsigned width)
    int sh_maglev_populate(const uint64_t *shard_hashes, const double *weights, size_t nshards,
                           uint64_t m, int32_t *table, uint64_t *pos, double *credit)
    int32_t sh_override_find(const uint64_t *ohashes, const int32_t *oshards, size_t m, uint64_t h)
    void sh_override_batch(const uint64_t *ohashes, const int32_t *oshards, size_t m,
                           const uint64_t *hashes, size_t n, int32_t *out)

# ---------------------------------------------------------------------------
# MementoHash, multi-probe consistent hashing, bounded loads: the C kernels
# (_core/place/sh_memento, sh_multiprobe, sh_bounded; docs/routers.md 2.14-2.16)

from shardhash.routing._place cimport (sh_memento, sh_mprobe, SH_MPROBE_MAX_PROBES, sh_mprobe_index_bits,
                                     sh_mprobe_build_index)

cdef extern from "sh_bounded.h" nogil:
    uint64_t sh_bounded_capacity(uint64_t total, uint64_t nshards, uint32_t factor_percent)
    size_t sh_bounded_assign(const uint64_t *tokens, const int32_t *owners, size_t ntokens,
                             const uint64_t *hashes, const uint64_t *sizes, const size_t *order,
                             const int32_t *prev, size_t n, const uint64_t *caps, size_t nshards,
                             uint64_t *load, int32_t *out)

# ---------------------------------------------------------------------------
# The placement table, in the manner of numpy's bitgen_t: a strategy's _use_*
# method fills one sh_placer once -- the state its C functions read and one
# function per kind of call (place one hash, place a batch, one replica list)
# -- and route(), the batch runner and the replica lists call through it.  A
# router's sh_router adds the pre-transform before the table and the
# overrides after it; a delegate's table is another router's sh_router.

cdef extern from * nogil:
    """
    #include "sh_place.h"
    #include "sh_memento.h"
    #include "sh_multiprobe.h"
    #include "sh_replicas.h"

    typedef int32_t (*sh_place_one_fn)(const void *state, uint64_t h);
    typedef void (*sh_place_batch_fn)(const void *state, const uint64_t *hashes, size_t n, int32_t *out);
    /* The replica list of h (r entries at out) as the sh_*_replicas functions
     * write it; scratch: nshards words of workspace. */
    typedef size_t (*sh_place_replicas_fn)(const void *state, size_t nshards, uint64_t h, size_t r,
                                           const sh_replica_work *w, uint64_t *scratch, int32_t *out);

    typedef struct {
        const void *state;
        sh_place_one_fn one;
        sh_place_batch_fn batch;
        sh_place_replicas_fn replicas; /* NULL: the strategy has no replica lists */
    } sh_placer;

    /* A router's placement: the table sees (h + pre_add) ^ pre_xor when
     * has_pre; the exact-hash overrides (on h) apply after it. */
    typedef struct {
        sh_placer pl;
        uint64_t pre_add, pre_xor;
        int has_pre;
        const uint64_t *ohash;
        const int32_t *oshard;
        size_t nover;
    } sh_router;

    #define SH_PRE_BLOCK 512 /* hashes pre-transformed per block (stack buffer) */

    SH_FORCE_INLINE int32_t sh_router_place(const sh_router *r, uint64_t h)
    {
        int32_t i = r->pl.one(r->pl.state, r->has_pre ? (h + r->pre_add) ^ r->pre_xor : h);
        if (r->nover) {
            int32_t j = sh_override_find(r->ohash, r->oshard, r->nover, h);
            if (j >= 0) i = j;
        }
        return i;
    }

    static void sh_router_batch(const sh_router *r, const uint64_t *h, size_t n, int32_t *out)
    {
        uint64_t buf[SH_PRE_BLOCK];
        size_t s, m, k;
        if (r->has_pre) {
            for (s = 0; s < n; s += m) {
                m = n - s < SH_PRE_BLOCK ? n - s : SH_PRE_BLOCK;
                for (k = 0; k < m; k++) buf[k] = (h[s + k] + r->pre_add) ^ r->pre_xor;
                r->pl.batch(r->pl.state, buf, m, out + s);
            }
        } else {
            r->pl.batch(r->pl.state, h, n, out);
        }
        if (r->nover) sh_override_batch(r->ohash, r->oshard, r->nover, h, n, out);
    }

    static sh_placer shp_table(const void *state, sh_place_one_fn one, sh_place_batch_fn batch,
                               sh_place_replicas_fn replicas)
    {
        sh_placer p;
        p.state = state;
        p.one = one;
        p.batch = batch;
        p.replicas = replicas;
        return p;
    }

    /* A placer's three entry points over its state (a T): SHP_ONE returns
     * the shard of hash h, SHP_BATCH fills out[0..n) for h[0..n), and
     * SHP_REPLICAS returns the replica count written to out (scratch is the
     * caller's work area, there for the placers that need one). */
    #define SHP_ONE(name, T, expr)                        \
        static int32_t name(const void *st, uint64_t h)   \
        {                                                 \
            const T *s = (const T *)st;                   \
            return (int32_t)(expr);                       \
        }
    #define SHP_BATCH(name, T, call)                                                    \
        static void name(const void *st, const uint64_t *h, size_t n, int32_t *out)   \
        {                                                                             \
            const T *s = (const T *)st;                                               \
            call;                                                                     \
        }
    #define SHP_REPLICAS(name, T, expr)                                                \
        static size_t name(const void *st, size_t nshards, uint64_t h, size_t r,      \
                           const sh_replica_work *w, uint64_t *scratch, int32_t *out) \
        {                                                                             \
            const T *s = (const T *)st;                                               \
            (void)scratch;                                                            \
            return expr;                                                              \
        }

    /* Bucket tables (bucket, modulo, Maglev): shard = table[h mod size].
     * Scalar lookups read a 1- or 2-byte copy when the shard count allows (a
     * smaller table stays in cache between calls). */
    typedef struct {
        sh_fastmod fm;
        uint64_t mask; /* size - 1 */
        const int32_t *table;
        const uint16_t *table16;
        const uint8_t *table8;
    } shp_bucket;

    SHP_ONE(shp_bucket_one8_pow2, shp_bucket, s->table8[h & s->mask])
    SHP_ONE(shp_bucket_one16_pow2, shp_bucket, s->table16[h & s->mask])
    SHP_ONE(shp_bucket_one32_pow2, shp_bucket, s->table[h & s->mask])
    SHP_ONE(shp_bucket_one8, shp_bucket, s->table8[sh_fastmod_u64(h, &s->fm)])
    SHP_ONE(shp_bucket_one16, shp_bucket, s->table16[sh_fastmod_u64(h, &s->fm)])
    SHP_ONE(shp_bucket_one32, shp_bucket, s->table[sh_fastmod_u64(h, &s->fm)])
    SHP_BATCH(shp_bucket_batch, shp_bucket, sh_bucket_batch(h, n, &s->fm, s->table, out))
    SHP_REPLICAS(shp_bucket_replicas, shp_bucket, sh_table_replicas(s->table, s->fm.d, nshards, h, r, w, out))

    /* b's table; width: the bytes per entry of the scalar copy (1, 2 or 4). */
    static sh_placer shp_table_bucket(const shp_bucket *b, int width)
    {
        int pow2 = (b->fm.d & (b->fm.d - 1)) == 0;
        sh_place_one_fn one = width == 1   ? (pow2 ? shp_bucket_one8_pow2 : shp_bucket_one8)
                              : width == 2 ? (pow2 ? shp_bucket_one16_pow2 : shp_bucket_one16)
                                           : (pow2 ? shp_bucket_one32_pow2 : shp_bucket_one32);
        return shp_table(b, one, shp_bucket_batch, shp_bucket_replicas);
    }

    /* Jump and MementoHash: jump's bucket, unless it was removed (the map is
     * -1 exactly there).  Jump is MementoHash with nothing removed (replacer
     * and map NULL, the shards being the buckets). */
    typedef struct {
        sh_memento m;
        const int32_t *map;
    } shp_memento;

    SHP_ONE(shp_jump_one, shp_memento, sh_jump(h, s->m.n))
    SHP_BATCH(shp_jump_batch, shp_memento, sh_jump_batch(h, n, s->m.n, out))

    static int32_t shp_memento_one(const void *st, uint64_t h)
    {
        const shp_memento *s = (const shp_memento *)st;
        int32_t b = sh_jump(h, s->m.n);
        int32_t i = s->map[b];
        return i >= 0 ? i : s->map[sh_memento_resolve_from(&s->m, b, h)];
    }

    SHP_BATCH(shp_memento_batch, shp_memento, sh_memento_batch(&s->m, h, n, s->map, out))
    SHP_REPLICAS(shp_memento_replicas, shp_memento, sh_memento_replicas(&s->m, s->map, nshards, h, r, w, out))

    static sh_placer shp_table_memento(const shp_memento *s)
    {
        if (s->m.nremoved == 0) return shp_table(s, shp_jump_one, shp_jump_batch, shp_memento_replicas);
        return shp_table(s, shp_memento_one, shp_memento_batch, shp_memento_replicas);
    }

    /* Rings (ring, hash ranges): the first token >= h, wrapping; scalar
     * lookups use the compact copy when the ring fits it (has16). */
    typedef struct {
        sh_ring ring;
        sh_ring16 ring16;
    } shp_ring;

    SHP_ONE(shp_ring_one, shp_ring, sh_ring_lookup(&s->ring, h))
    SHP_ONE(shp_ring16_one, shp_ring, sh_ring16_lookup(&s->ring16, h))
    SHP_BATCH(shp_ring_batch, shp_ring, sh_ring_batch(&s->ring, h, n, out))
    SHP_REPLICAS(shp_ring_replicas, shp_ring,
                 sh_ring_replicas(s->ring.tokens, s->ring.owners, s->ring.ntokens, nshards, h, r, w, out))

    static sh_placer shp_table_ring(const shp_ring *s, int has16)
    {
        return shp_table(s, has16 ? shp_ring16_one : shp_ring_one, shp_ring_batch, shp_ring_replicas);
    }

    /* Rendezvous: the highest (weighted) score; weights NULL: unweighted. */
    typedef struct {
        const uint64_t *seeds;
        const double *weights;
        size_t n;
    } shp_rendezvous;

    SHP_ONE(shp_rendezvous_one, shp_rendezvous, sh_rendezvous(h, s->seeds, s->weights, s->n))
    SHP_BATCH(shp_rendezvous_batch, shp_rendezvous, sh_rendezvous_batch(h, n, s->seeds, s->weights, s->n, out))
    SHP_REPLICAS(shp_rendezvous_replicas, shp_rendezvous,
                 sh_rendezvous_replicas(s->seeds, s->weights, nshards, h, r, w, scratch, out))

    static sh_placer shp_table_rendezvous(const shp_rendezvous *s)
    {
        return shp_table(s, shp_rendezvous_one, shp_rendezvous_batch, shp_rendezvous_replicas);
    }

    /* Multi-probe consistent hashing. */
    SHP_ONE(shp_mprobe_one, sh_mprobe, sh_mprobe_lookup(s, h))
    SHP_BATCH(shp_mprobe_batch, sh_mprobe, sh_mprobe_batch(s, h, n, out))
    SHP_REPLICAS(shp_mprobe_replicas, sh_mprobe, sh_mprobe_replicas(s, nshards, h, r, w, out))

    static sh_placer shp_table_mprobe(const sh_mprobe *s)
    {
        return shp_table(s, shp_mprobe_one, shp_mprobe_batch, shp_mprobe_replicas);
    }

    /* A delegate: place exactly as another (sealed) router, its pre-transform
     * and overrides included.  Its replica lists are the other router's when
     * nothing stands between them (_replica_plan walks the delegates). */
    SHP_ONE(shp_delegate_one, sh_router, sh_router_place(s, h))
    SHP_BATCH(shp_delegate_batch, sh_router, sh_router_batch(s, h, n, out))

    static sh_placer shp_table_delegate(const sh_router *other)
    {
        return shp_table(other, shp_delegate_one, shp_delegate_batch, NULL);
    }
    """
    ctypedef struct sh_replica_work:
        pass
    ctypedef int32_t (*sh_place_one_fn)(const void *state, uint64_t h) noexcept nogil
    ctypedef void (*sh_place_batch_fn)(const void *state, const uint64_t *hashes, size_t n,
                                       int32_t *out) noexcept nogil
    ctypedef size_t (*sh_place_replicas_fn)(const void *state, size_t nshards, uint64_t h, size_t r,
                                            const sh_replica_work *w, uint64_t *scratch,
                                            int32_t *out) noexcept nogil
    ctypedef struct sh_placer:
        const void *state
        sh_place_one_fn one
        sh_place_batch_fn batch
        sh_place_replicas_fn replicas
    ctypedef struct sh_router:
        sh_placer pl
        uint64_t pre_add
        uint64_t pre_xor
        int has_pre
        const uint64_t *ohash
        const int32_t *oshard
        size_t nover
    ctypedef struct shp_bucket:
        sh_fastmod fm
        uint64_t mask
        const int32_t *table
        const uint16_t *table16
        const uint8_t *table8
    ctypedef struct shp_memento:
        sh_memento m
        const int32_t *map
    ctypedef struct shp_ring:
        sh_ring ring
        sh_ring16 ring16
    ctypedef struct shp_rendezvous:
        const uint64_t *seeds
        const double *weights
        size_t n
    int32_t sh_router_place(const sh_router *r, uint64_t h)
    void sh_router_batch(const sh_router *r, const uint64_t *h, size_t n, int32_t *out)
    sh_placer shp_table_bucket(const shp_bucket *b, int width)
    sh_placer shp_table_memento(const shp_memento *s)
    sh_placer shp_table_ring(const shp_ring *s, int has16)
    sh_placer shp_table_rendezvous(const shp_rendezvous *s)
    sh_placer shp_table_mprobe(const sh_mprobe *s)
    sh_placer shp_table_delegate(const sh_router *other)


cdef enum:
    KIND_UNSET = 0   # no placement configured yet
    KIND_PY = 1      # placement by the Python method _route_hashes_kernel
    KIND_C = 2       # placement by the C table in _rt.pl

cdef enum:
    KEYMODE_RANGES = 1
    KEYMODE_WATERMARK = 2
    KEYMODE_NATIVE = 3

cdef enum:
    SMALL_BATCH = 64  # route_many on at most this many keys: one pass with the GIL (see _route_small)

cdef object _DT_INT32 = np.dtype(np.int32)

_U64_MAX = (1 << 64) - 1


# ---------------------------------------------------------------------------
# Input validation shared by every router


def _unmasked(a, name):
    """The data of a numpy masked array with no masked entries, else ValueError
    (a masked entry has no value to route, and its data slot is arbitrary)."""
    m = np.ma.getmaskarray(a)
    if m.any():
        raise ValueError(f"{name} has masked (missing) entries, the first at position "
                         f"{int(np.flatnonzero(m.ravel())[0])}; fill or drop them first")
    return np.asarray(a.data)


def as_hashes(hashes, name="hashes"):
    """Return ``hashes`` as a C-contiguous 1-D uint64 array, or raise.

    Accepts uint64 arrays as they are (no copy when contiguous), other
    integer arrays and sequences of ints when every value is in
    [0, 2**64 - 1].  Floats, bools, strings and negative values are errors
    naming the offending position.
    """
    cdef Py_ssize_t i
    if isinstance(hashes, np.ma.MaskedArray):
        hashes = _unmasked(hashes, name)
    if isinstance(hashes, np.ndarray):
        a = hashes
    else:
        if isinstance(hashes, (str, bytes, bytearray)) or not hasattr(hashes, "__len__"):
            if hasattr(hashes, "__array__"):
                a = np.asarray(hashes)
            else:
                raise TypeError(f"{name} must be an array or sequence of unsigned 64-bit ints, "
                                f"not {type(hashes).__name__}")
        else:
            if len(hashes) == 0:
                return np.empty(0, dtype=np.uint64)
            try:
                a = np.asarray(hashes)
            except (OverflowError, ValueError, TypeError):
                a = None
            if a is None or a.dtype.kind not in "iu":
                # Mixed or huge Python ints (numpy may pick float64): check one by one.
                a = np.empty(len(hashes), dtype=object)
                for i, v in enumerate(hashes):
                    a[i] = v
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    dt = a.dtype
    if dt == np.uint64:
        return kernel_array(a)
    kind = dt.kind
    if kind == "u":
        return a.astype(np.uint64)
    if kind == "i":
        neg = np.flatnonzero(a < 0)
        if neg.size:
            j = int(neg[0])
            raise ValueError(f"{name}[{j}] = {int(a[j])} is negative; hashes are unsigned 64-bit values")
        return a.astype(np.uint64)
    if kind == "O":
        out = np.empty(a.shape[0], dtype=np.uint64)
        for i in range(a.shape[0]):
            v = a[i]
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name}[{i}] = {v!r} is not an integer (type {type(v).__name__})")
            v = int(v)
            if v < 0 or v > _U64_MAX:
                raise ValueError(f"{name}[{i}] = {v} is outside [0, 2**64 - 1]")
            out[i] = v
        return out
    raise TypeError(f"{name} must hold unsigned 64-bit integers, got dtype {dt}")


def prepare_out(out, Py_ssize_t n, dtype=None):
    """Allocate, or check, an output array of length ``n`` (int32, or
    ``dtype``): the rules and errors of every ``out=``."""
    return check_out(out, n, _DT_INT32 if dtype is None else np.dtype(dtype))


def unalias(a, out):
    """``a``, or a copy of it when it shares memory with ``out``: a kernel
    writing ``out`` must not overwrite inputs it has yet to read."""
    if np.may_share_memory(a, out):
        return a.copy()
    return a


def fill_out(out, res):
    """``res`` (shard indices) itself, or copied into ``out`` once ``out`` is
    checked like every ``out=`` (int32, native byte order, 1-D, C-contiguous,
    writable, of ``len(res)``).  ``res`` is complete before ``out`` is written,
    so ``out`` may share memory with the caller's input."""
    if out is None:
        return res
    out = prepare_out(out, res.shape[0])
    out[...] = res
    return out


def _check_count(n, name="num_buckets", too_big=OverflowError):
    """``n`` as an int in [1, 2**31 - 1]; a larger one raises ``too_big``."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(n).__name__}")
    n = int(n)
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    if n > 0x7FFFFFFF:
        raise too_big(f"{name} must be < 2**31, got {n}")
    return n


def jump_hash(key, num_buckets):
    """Jump consistent hash (Lamping & Veach 2014) of a 64-bit ``key``.

    >>> jump_hash(1, 100)
    55
    """
    if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
        raise TypeError(f"key must be an int, not {type(key).__name__}")
    key = int(key)
    if key < 0 or key > _U64_MAX:
        raise OverflowError(f"key {key} is outside [0, 2**64 - 1]")
    nb = _check_count(num_buckets)
    return sh_jump(<uint64_t>key, <int32_t>nb)


# Choose the jump kernels (AVX2 batch and SSE4.1 scalar by cpuid/xgetbv on
# x86-64; NEON batch on aarch64) once, at import, under the GIL and before any
# thread can run a kernel: the kernels only ever read the answer.
sh_place_init()
_JUMP_KERNEL = "avx2" if sh_jump_avx2_available() else ("neon" if sh_jump_neon_available() else "portable")
_JUMP_SCALAR = "sse4.1" if sh_place_features() & 1 else "portable"


def jump_hash_array(keys, num_buckets, *, out=None):
    """Jump consistent hash of every uint64 in ``keys``; returns int32 array."""
    cdef int32_t nb = _check_count(num_buckets)
    a = as_hashes(keys, "keys")
    out = check_out(out, a.shape[0], _DT_INT32)
    a = unalias(a, out)
    cdef sh_job job
    job.data = address(a)
    job.out = address(out)
    job.seed = <uint64_t>nb
    run(_k_jump, &job, a.shape[0], None)
    return out


cdef ptrdiff_t _k_jump(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """Jump hash of hashes [s, e) into job.seed buckets."""
    sh_jump_batch(<const uint64_t *>j.data + s, <size_t>(e - s), <int32_t>j.seed, <int32_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_route(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """A router's placement (job.ctx, a sealed RouterCore's sh_router) over hashes [s, e)."""
    sh_router_batch(<const sh_router *>j.ctx, <const uint64_t *>j.data + s, <size_t>(e - s),
                    <int32_t *>j.out + s)
    return SH_OK


def mix64(x):
    """The SplitMix64 finaliser used by rendezvous and Maglev (a bijection)."""
    return sh_mix64(<uint64_t>int(x))


def ring_index_bits(size_t ntokens, unsigned width):
    return sh_ring_index_bits(ntokens, width)


def maglev_populate(shard_hashes, weights, uint64_t m):
    """Populate a Maglev lookup table of prime size ``m`` (int32 array)."""
    sh = kernel_array(shard_hashes, dtype=np.uint64)
    cdef const uint64_t[::1] shv = sh
    cdef size_t ns = shv.shape[0]
    cdef const double[::1] wv
    cdef const double *wp = NULL
    if weights is not None:
        w = kernel_array(weights, dtype=np.float64)
        if w.shape[0] != ns:
            raise ValueError("weights and shard_hashes differ in length")
        wv = w
        wp = &wv[0]
    if ns == 0 or m < 2 or m < ns:
        raise ValueError(f"bad Maglev table size {m} for {ns} shards")
    table = np.empty(m, dtype=np.int32)
    pos = np.empty(ns, dtype=np.uint64)
    credit = np.empty(ns, dtype=np.float64)
    cdef int32_t[::1] tv = table
    cdef uint64_t[::1] pv = pos
    cdef double[::1] cv = credit
    cdef int rc
    with nogil:
        rc = sh_maglev_populate(&shv[0], wp, ns, m, &tv[0], &pv[0], &cv[0])
    if rc != 0:
        raise ValueError("Maglev population failed")
    return table


cdef inline object _prefix_of(object key, Py_ssize_t p):
    if type(key) is not tuple:
        if not isinstance(key, tuple):
            if p == 1:
                return key      # a bare key is its own one-part prefix
            raise TypeError(f"this router routes on the first {p} part(s) of a tuple key; "
                            f"got {key!r} (type {type(key).__name__})")
    if PyTuple_GET_SIZE(key) < p:
        raise ValueError(f"key {key!r} has fewer than {p} parts")
    if p == 1:
        return <object>PyTuple_GET_ITEM(key, 0)
    return key[:p]


cdef class RouterCore:
    """Hasher + shards + one placement kernel.  Not used directly."""

    cdef Hasher _hasher
    cdef bint _int_xxh3          # the hasher takes ints as 8 LE bytes into xxh3_64
    cdef bint _str_xxh3          # ... and str as plain UTF-8 into xxh3_64
    cdef uint64_t _int_key       # sh_xxh3_word_key(seed) for that path
    cdef tuple _shards
    cdef int _kind               # KIND_UNSET, KIND_PY or KIND_C
    cdef bint _sealed
    cdef Py_ssize_t _prefix
    cdef Py_ssize_t _nshards
    # The placement: the strategy's table (filled once by a _use_* method),
    # the pre-transform before it and the overrides after it.  The table's
    # state is one of the structs below (or a delegate's _rt), all inside
    # this object or arrays in _keep, so its pointers live as long as it.
    cdef sh_router _rt
    cdef shp_bucket _bucket      # bucket / modulo / Maglev
    cdef shp_memento _memento    # jump, MementoHash
    cdef shp_ring _ring          # ring / hash ranges
    cdef shp_rendezvous _rdv     # rendezvous
    cdef sh_mprobe _mprobe       # multi-probe
    cdef list _keep
    cdef RouterCore _delegate
    # routing on the raw key (no hash): 0 = hash routing, KEYMODE_RANGES =
    # key ranges, KEYMODE_WATERMARK = integer-id watermark.  route() and
    # route_index() take the fast path for exact ints (and str for string
    # ranges); anything else calls the Python method _route_index_slow.
    cdef int _keymode
    cdef const int64_t *_rs_i64      # the int64-representable int splits
    cdef Py_ssize_t _rs_n
    cdef Py_ssize_t _rs_below        # int splits below -2**63
    cdef tuple _rs_str               # string splits (code-point order)
    cdef tuple _rs_utf8              # their UTF-8 bytes (None if one has a surrogate)
    cdef const uint64_t *_rs_pre     # sh_be_prefix of each split's UTF-8 bytes
    cdef const int32_t *_rs_owners   # range -> shard index
    cdef RouterCore _wm_old
    cdef RouterCore _wm_new
    cdef bint _wm_old_c              # old/new answer route_index in C (not overridden)
    cdef bint _wm_new_c
    cdef int64_t _wm_i64             # the watermark, when it is <= 2**63 - 1
    cdef bint _wm_above_i64          # the watermark is >= 2**63: every int64 id is below
    cdef const int32_t *_wm_newmap
    cdef key_index_fn _kfn           # KEYMODE_NATIVE
    cdef void *_kctx
    # replica lists (see "Replica (preference) lists" at the end of this file)
    cdef bint _replica_ok            # the class declares a replica_rule
    cdef object _zmap                # the router's own ReplicaZones, or None

    def __cinit__(self, *args, **kwargs):
        self._kind = KIND_UNSET
        self._sealed = False
        self._prefix = 0
        self._keep = []
        self._shards = ()
        self._nshards = 0

    # -- configuration (only before _seal) ----------------------------------

    cdef _check_open(self):
        if self._sealed:
            raise AttributeError("routers are immutable")

    def _core_init(self, tuple shards, Hasher hasher, Py_ssize_t key_prefix=0):
        self._check_open()
        if hasher is None:
            raise TypeError("hasher must be a shardhash.Hasher")
        self._shards = shards
        self._nshards = len(shards)
        self._hasher = hasher
        self._prefix = key_prefix
        # route(int) hashes small ints inline; the Hasher defines the answer.
        self._int_xxh3 = hasher._fast_int and hasher._algo == 0  # sh_algo SH_XXH3_64
        self._int_key = sh_xxh3_word_key(hasher._seed)
        self._str_xxh3 = hasher._fast_str and hasher._algo == 0

    cdef _own(self, arr, dtype):
        a = np.array(arr, dtype=dtype, copy=True, order="C")
        a.setflags(write=False)
        self._keep.append(a)
        return a

    cdef _set_table(self, sh_placer pl, int kind=KIND_C):
        """Install a strategy's table (the last _use_* call wins)."""
        self._rt.pl = pl
        self._delegate = None
        self._kind = kind

    def _use_python(self):
        """Placement is done by the Python method ``_route_hashes_kernel``."""
        self._check_open()
        cdef sh_placer none
        memset(&none, 0, sizeof(none))
        self._set_table(none, KIND_PY)

    def _use_bucket(self, placement):
        """bucket = placement-hash % len(placement); shard = placement[bucket]."""
        self._check_open()
        p = self._own(placement, np.int32)
        if p.ndim != 1 or p.shape[0] == 0:
            raise ValueError("placement must be a non-empty 1-D table")
        if p.min() < 0 or p.max() >= self._nshards:
            raise ValueError("placement refers to a shard index out of range")
        cdef const int32_t[::1] pv = p
        self._bucket.table = &pv[0]
        sh_fastmod_init(&self._bucket.fm, <uint64_t>p.shape[0])
        self._bucket.mask = <uint64_t>p.shape[0] - 1
        cdef const uint8_t[::1] p8
        cdef const uint16_t[::1] p16
        cdef int width = 4
        if self._nshards <= 0x100:
            p8 = self._own(p, np.uint8)
            self._bucket.table8 = &p8[0]
            width = 1
        elif self._nshards <= 0x10000:
            p16 = self._own(p, np.uint16)
            self._bucket.table16 = &p16[0]
            width = 2
        self._set_table(shp_table_bucket(&self._bucket, width))
        return p

    def _use_jump(self):
        self._check_open()
        self._memento.m.replacer = NULL
        self._memento.m.n = <int32_t>self._nshards
        self._memento.m.nremoved = 0
        self._memento.map = NULL
        self._set_table(shp_table_memento(&self._memento))

    cdef tuple _checked_tokens(self, tokens, owners, str subject, str name):
        """A ring's ``tokens`` (strictly increasing uint64, at least one) and
        ``owners`` (one int32 shard index per token), checked: (tokens,
        owners, count)."""
        t0 = np.asarray(tokens, dtype=np.uint64)
        o0 = np.asarray(owners, dtype=np.int32)
        cdef Py_ssize_t n = t0.shape[0] if t0.ndim == 1 else 0
        if n == 0 or o0.ndim != 1 or o0.shape[0] != n:
            raise ValueError(f"{subject} needs as many owners as tokens, and at least one token")
        if n >= 0x7FFFFFFF:
            raise ValueError("too many tokens")
        if n > 1 and not bool(np.all(t0[1:] > t0[:n - 1])):
            raise ValueError(f"{name} tokens must be strictly increasing")
        if o0.min() < 0 or o0.max() >= self._nshards:
            raise ValueError(f"{name} owner index out of range")
        return t0, o0, n

    def _use_ring(self, tokens, owners, unsigned width=64):
        """tokens: strictly increasing uint64; owners: int32 shard indices.

        Returns read-only (tokens, owners) arrays without the sentinels."""
        self._check_open()
        cdef Py_ssize_t n
        t0, o0, n = self._checked_tokens(tokens, owners, "a ring", "ring")
        if width < 1 or width > 64:
            raise ValueError("width must be in 1..64")
        # Sentinels: tokens[n] = 2**64 - 1 stops every scan; owners[n] wraps.
        t = self._own(np.append(t0, np.uint64(_U64_MAX)), np.uint64)
        o = self._own(np.append(o0, o0[0]), np.int32)
        cdef unsigned bits = sh_ring_index_bits(<size_t>n, width)
        idx = np.empty(1 << bits, dtype=np.uint32)
        cdef const uint64_t[::1] tv = t
        cdef const int32_t[::1] ov = o
        cdef uint32_t[::1] iv = idx
        sh_ring_build_index(&tv[0], &ov[0], <size_t>n, width - bits, bits, &iv[0])
        idx.setflags(write=False)
        self._keep.append(idx)
        self._ring.ring.tokens = &tv[0]
        self._ring.ring.owners = &ov[0]
        self._ring.ring.ntokens = <size_t>n
        self._ring.ring.index = &iv[0]
        self._ring.ring.index_last = (<uint64_t>1 << bits) - 1
        self._ring.ring.shift = width - bits
        cdef unsigned bits16
        cdef const uint16_t[::1] o16v
        cdef const uint16_t[::1] i16v
        cdef uint32_t[::1] i32v
        cdef bint has16 = sh_ring16_fits(<size_t>n, &ov[0]) != 0
        if has16:
            bits16 = sh_ring16_index_bits(<size_t>n, width)
            i32 = np.empty(1 << bits16, dtype=np.uint32)
            i32v = i32
            sh_ring_build_index(&tv[0], &ov[0], <size_t>n, width - bits16, bits16, &i32v[0])
            empty = (i32 & np.uint32(SH_RING_EMPTY)) != 0
            i16 = np.where(empty, (i32 & np.uint32(0x7FFF)) | np.uint32(SH_RING16_EMPTY), i32)
            o16v = self._own(o, np.uint16)
            i16v = self._own(i16, np.uint16)
            self._ring.ring16.tokens = &tv[0]
            self._ring.ring16.owners = &o16v[0]
            self._ring.ring16.index = &i16v[0]
            self._ring.ring16.ntokens = <size_t>n
            self._ring.ring16.index_last = (<uint64_t>1 << bits16) - 1
            self._ring.ring16.shift = width - bits16
        self._set_table(shp_table_ring(&self._ring, has16))
        return t[:n], o[:n]

    def _use_rendezvous(self, seeds, weights=None):
        self._check_open()
        s = self._own(seeds, np.uint64)
        if s.shape[0] != self._nshards:
            raise ValueError("one seed per shard")
        cdef const uint64_t[::1] sv = s
        cdef const double[::1] wv
        self._rdv.seeds = &sv[0]
        self._rdv.n = <size_t>s.shape[0]
        self._rdv.weights = NULL
        if weights is not None:
            w = self._own(weights, np.float64)
            if w.shape[0] != self._nshards:
                raise ValueError("one weight per shard")
            wv = w
            self._rdv.weights = &wv[0]
        self._set_table(shp_table_rendezvous(&self._rdv))

    # -- MementoHash, multi-probe (docs/routers.md 2.14, 2.15) -------------------

    def _use_memento(self, buckets, removed):
        """MementoHash over ``buckets`` jump buckets with the buckets ``removed``
        (in removal order): the k-th removed bucket records ``buckets - k - 1``.
        Shard i is the i-th working bucket.  With nothing removed this is
        ``_use_jump()``.  Returns the read-only bucket -> shard index map (-1
        for a removed bucket)."""
        self._check_open()
        cdef Py_ssize_t n = buckets, k, m
        if n < 1 or n > 0x7FFFFFFF:
            raise ValueError(f"buckets must be in [1, 2**31 - 1], got {n}")
        rem = [int(b) for b in removed]
        m = len(rem)
        if m >= n:
            raise ValueError(f"{m} removed buckets of {n}: at least one bucket must remain")
        if n - m != self._nshards:
            raise ValueError(f"{n} buckets with {m} removed leave {n - m} working buckets, "
                             f"but there are {self._nshards} shards")
        rep = np.full(n, -1, dtype=np.int32)
        for k in range(m):
            b = rem[k]
            if not 0 <= b < n:
                raise ValueError(f"removed[{k}] = {b} is not a bucket in [0, {n})")
            if rep[b] >= 0:
                raise ValueError(f"removed[{k}] = {b} is removed twice")
            rep[b] = n - k - 1
        bmap = np.full(n, -1, dtype=np.int32)
        working = rep < 0
        bmap[working] = np.arange(n - m, dtype=np.int32)
        r = self._own(rep, np.int32)
        mp = self._own(bmap, np.int32)
        cdef const int32_t[::1] rv = r
        cdef const int32_t[::1] mv = mp
        if m == 0:
            self._use_jump()
            return mp
        self._memento.m.replacer = &rv[0]
        self._memento.m.n = <int32_t>n
        self._memento.m.nremoved = <int32_t>m
        self._memento.map = &mv[0]
        self._set_table(shp_table_memento(&self._memento))
        return mp

    def _use_multiprobe(self, tokens, owners, probes):
        """Multi-probe consistent hashing: ``tokens`` strictly increasing
        uint64, ``owners`` their shard indices, ``probes`` in 1..64."""
        self._check_open()
        cdef Py_ssize_t n
        t0, o0, n = self._checked_tokens(tokens, owners, "multi-probe", "multi-probe")
        if not 1 <= probes <= SH_MPROBE_MAX_PROBES:
            raise ValueError(f"probes must be in [1, {SH_MPROBE_MAX_PROBES}], got {probes}")
        # the kernel reads two sentinel tokens (2**64 - 1) after the last one
        t = self._own(np.concatenate([t0, np.full(2, _U64_MAX, dtype=np.uint64)]), np.uint64)
        o = self._own(o0, np.int32)
        cdef unsigned bits = sh_mprobe_index_bits(<size_t>n)
        idx = np.empty((1 << bits) + 1, dtype=np.uint32)
        cdef const uint64_t[::1] tv = t
        cdef const int32_t[::1] ov = o
        cdef uint32_t[::1] iv = idx
        sh_mprobe_build_index(&tv[0], <size_t>n, bits, &iv[0])
        idx.setflags(write=False)
        self._keep.append(idx)
        self._mprobe.tokens = &tv[0]
        self._mprobe.owners = &ov[0]
        self._mprobe.ntokens = <size_t>n
        self._mprobe.index = &iv[0]
        self._mprobe.shift = 64 - bits
        self._mprobe.probes = <unsigned>probes
        self._set_table(shp_table_mprobe(&self._mprobe))
        return t[:n], o

    def _use_key_ranges(self, splits, owners):
        """route/route_index: owners[bisect_right(splits, key)] for exact int
        keys (int splits) or exact str keys (str splits), in C; other keys go
        to ``self._route_index_slow(key)``.  Placement stays KIND_PY."""
        self._check_open()
        sp = tuple(splits)
        ow = self._own(owners, np.int32)
        if ow.shape[0] != len(sp) + 1:
            raise ValueError("one owner per range")
        cdef const int32_t[::1] owv = ow
        cdef const int64_t[::1] spv
        cdef const uint64_t[::1] prev
        self._rs_owners = &owv[0]
        if sp and isinstance(sp[0], str):
            self._rs_str = sp
            self._rs_n = len(sp)
            try:  # UTF-8 byte order is code-point order: ASCII keys compare as bytes
                self._rs_utf8 = tuple(v.encode("utf-8") for v in sp)
            except UnicodeEncodeError:
                self._rs_utf8 = None
            if self._rs_utf8 is not None:
                pre = self._own([int.from_bytes(b[:8].ljust(8, b"\0"), "big") for b in self._rs_utf8] or [0],
                                np.uint64)
                prev = pre
                self._rs_pre = &prev[0]
        else:
            inside = [v for v in sp if -(1 << 63) <= v < (1 << 63)]
            self._rs_below = sum(1 for v in sp if v < -(1 << 63))
            self._rs_n = len(inside)
            arr = self._own(inside if inside else [0], np.int64)
            spv = arr
            self._rs_i64 = &spv[0]
        self._keymode = KEYMODE_RANGES

    def _use_watermark(self, RouterCore old, RouterCore new, watermark, newmap):
        """route/route_index of exact int ids: new (through newmap) at or above
        the watermark, old below, in C; other keys go to _route_index_slow."""
        self._check_open()
        m = self._own(newmap, np.int32)
        cdef const int32_t[::1] mv = m
        self._wm_newmap = &mv[0]
        self._wm_old = old
        self._wm_new = new
        base = RouterCore.route_index
        self._wm_old_c = type(old).route_index is base
        self._wm_new_c = type(new).route_index is base
        self._wm_above_i64 = watermark >= (1 << 63)
        self._wm_i64 = 0 if self._wm_above_i64 else <int64_t>watermark
        self._keymode = KEYMODE_WATERMARK

    def _use_native_keys(self, capsule, owner):
        """route/route_index through a compat module's C function: ``capsule``
        is a PyCapsule named "shardhash.key_index" holding a C function
        ``int32_t f(void *ctx, PyObject *key)`` with ``ctx`` as its context;
        ``owner`` (the object ``ctx`` points into) is kept alive.  Keys the
        function leaves (-2) go to ``self._route_index_slow(key)``."""
        self._check_open()
        cdef void *f = PyCapsule_GetPointer(capsule, b"shardhash.key_index")
        self._kctx = PyCapsule_GetContext(capsule)
        if f == NULL or self._kctx == NULL or self._kctx != <void *>owner:
            raise ValueError("not a key_index capsule of this owner")
        self._keep.append(owner)
        self._keep.append(capsule)
        self._kfn = <key_index_fn>f
        self._keymode = KEYMODE_NATIVE

    def _route_small_keys(self, keys):
        """route_many for at most 64 keys (a list, a tuple or an integer numpy
        array) through the native key function, in one pass with the GIL;
        None when the router has none, for other inputs, or as soon as a key
        is not one the function handles (the caller's general path then
        decides, and raises).  No key's own code runs while the caller's
        list is read."""
        cdef Py_ssize_t n, i, stride
        cdef int32_t r
        cdef int32_t res_i[SMALL_BATCH]
        cdef const char *p
        cdef int code
        cdef uint64_t w
        cdef object v
        cdef type t = type(keys)
        if self._keymode != KEYMODE_NATIVE:
            return None
        if is_ndarray_exact(keys):
            code = int_array(keys, &p, &n, &stride)
            if code == 0 or not 0 < n <= SMALL_BATCH:
                return None  # (an empty array: the general path checks its dtype)
            for i in range(n):  # each item as the Python int route() takes
                w = int_word(p + i * stride, code)
                v = PyLong_FromUnsignedLongLong(w) if code & NP_UNSIGNED else PyLong_FromLongLong(<long long>w)
                r = self._kfn(self._kctx, <PyObject *>v)
                if r == -2:
                    return None
                res_i[i] = r
        elif t is list or t is tuple:  # (the PySequence_Fast_* macros read both)
            n = PySequence_Fast_GET_SIZE(keys)
            if n > SMALL_BATCH:
                return None
            for i in range(n):
                r = self._kfn(self._kctx, PySequence_Fast_GET_ITEM(keys, i))
                if r == -2:
                    return None
                res_i[i] = r
        else:
            return None
        res = new_array(n, NP_INT32)
        if n:
            memcpy(array_data(res), res_i, <size_t>n * sizeof(int32_t))
        return res

    def _keymode_native(self):
        """True when route/route_index run a compat module's C function."""
        return self._keymode == KEYMODE_NATIVE

    cdef int32_t _key_index(self, object key) except -1:
        """route_index for the raw-key modes."""
        cdef int overflow = 0
        cdef long long v
        cdef Py_ssize_t lo, hi, mid, n, sn
        cdef const char *p
        cdef object sb
        cdef int c
        cdef bint le
        cdef uint64_t kp
        cdef int32_t i
        cdef type t = type(key)
        if self._keymode == KEYMODE_NATIVE:
            i = self._kfn(self._kctx, <PyObject *>key)  # -1: an exception, which propagates
            if i != -2:
                return i
            return self._route_index_slow(key)
        if self._keymode == KEYMODE_RANGES and not self._prefix:
            if t is int and self._rs_str is None:
                v = PyLong_AsLongLongAndOverflow(key, &overflow)
                if overflow == 0:
                    lo = 0
                    hi = self._rs_n
                    while lo < hi:  # first split > v
                        mid = (lo + hi) >> 1
                        if self._rs_i64[mid] <= v:
                            lo = mid + 1
                        else:
                            hi = mid
                    return self._rs_owners[self._rs_below + lo]
            elif t is str and self._rs_str is not None:
                lo = 0
                hi = self._rs_n
                p = sh_py_ascii(key, &n) if self._rs_utf8 is not None else NULL
                if p != NULL:
                    kp = sh_be_prefix(p, n)
                    while lo < hi:  # first split > key
                        mid = (lo + hi) >> 1
                        if self._rs_pre[mid] != kp:
                            le = self._rs_pre[mid] < kp
                        else:  # same first 8 bytes (or padding): the whole strings
                            sb = <object>PyTuple_GET_ITEM(self._rs_utf8, mid)
                            sn = PyBytes_GET_SIZE(sb)
                            c = memcmp(PyBytes_AS_STRING(sb), p, <size_t>(sn if sn < n else n))
                            le = c < 0 or (c == 0 and sn <= n)
                        if le:
                            lo = mid + 1
                        else:
                            hi = mid
                    return self._rs_owners[lo]
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if PyUnicode_Compare(<object>PyTuple_GET_ITEM(self._rs_str, mid), key) <= 0:
                        lo = mid + 1
                    else:
                        hi = mid
                return self._rs_owners[lo]
        elif self._keymode == KEYMODE_WATERMARK and t is int:
            v = PyLong_AsLongLongAndOverflow(key, &overflow)
            if overflow == 0:
                if not self._wm_above_i64 and v >= self._wm_i64:
                    i = self._wm_new._index_of(key) if self._wm_new_c else self._wm_new.route_index(key)
                    return self._wm_newmap[i]
                return self._wm_old._index_of(key) if self._wm_old_c else self._wm_old.route_index(key)
        return self._route_index_slow(key)

    cdef inline int32_t _index_of(self, object key) except -1:
        """route_index(key), callable from C (inline: route() and route_index() are this)."""
        cdef uint64_t h
        if self._keymode:
            return self._key_index(key)
        if self._hasher is None:
            self._not_initialised()
        if self._prefix:
            key = _prefix_of(key, self._prefix)
        if not sh_route_fast_hash(key, self._int_xxh3, self._int_key, self._str_xxh3, self._hasher._seed, &h):
            h = self._hasher.hash_one(key)
        return self._place(h)

    cdef int _not_initialised(self) except -1:
        # A subclass whose __init__ never called Router.__init__ (or an object
        # made with __new__) has no hasher: refuse it instead of reading None.
        raise TypeError(f"{type(self).__name__} was never initialised "
                        "(its __init__ must call Router.__init__)")

    def _route_index_slow(self, key):
        raise NotImplementedError(f"{type(self).__name__} must implement _route_index_slow")

    def _use_delegate(self, RouterCore other):
        """Place hashes exactly as the sealed router ``other`` (whose shards
        must be the first ``len(other.shards)`` of ours), e.g. under overrides."""
        self._check_open()
        if other is None or not other._sealed or other._kind == KIND_UNSET:
            raise ValueError("the delegate must be a finished router")
        if other._kind == KIND_PY:
            raise ValueError("the delegate has no C kernel")
        if tuple(self._shards[:other._nshards]) != other._shards:
            raise ValueError("the delegate's shards must come first, in order")
        self._set_table(shp_table_delegate(&other._rt))
        self._delegate = other

    def _use_overrides(self, ohashes, oshards):
        """Exact hash -> shard index overrides applied after the kernel."""
        self._check_open()
        h = self._own(ohashes, np.uint64)
        s = self._own(oshards, np.int32)
        if h.shape[0] != s.shape[0]:
            raise ValueError("one shard per override")
        if h.shape[0] > 1 and not bool(np.all(h[1:] > h[:h.shape[0] - 1])):
            raise ValueError("override hashes must be strictly increasing")
        if h.shape[0] and (s.min() < 0 or s.max() >= self._nshards):
            raise ValueError("override shard index out of range")
        cdef const uint64_t[::1] hv
        cdef const int32_t[::1] sv
        self._rt.nover = <size_t>h.shape[0]
        if self._rt.nover:
            hv = h
            sv = s
            self._rt.ohash = &hv[0]
            self._rt.oshard = &sv[0]

    def _use_pre_transform(self, add=0, xor=0):
        """Kernels see ``((h + add) mod 2**64) ^ xor`` instead of ``h``."""
        self._check_open()
        self._rt.pre_add = <uint64_t>int(add)
        self._rt.pre_xor = <uint64_t>int(xor)
        self._rt.has_pre = self._rt.pre_add != 0 or self._rt.pre_xor != 0

    def _has_c_kernel(self):
        """True when placement runs in C (not in a Python ``_route_hashes_kernel``)."""
        return self._kind == KIND_C

    def _seal(self):
        if self._kind == KIND_UNSET:
            raise TypeError(f"{type(self).__name__} configured no placement kernel")
        self._replica_ok = getattr(type(self), "replica_rule", None) is not None
        self._sealed = True

    # -- read-only views -------------------------------------------------------

    @property
    def shards(self):
        """Logical shard ids, in index order."""
        return self._shards

    @property
    def hasher(self):
        """The ``Hasher`` that turns keys into 64-bit values."""
        return self._hasher

    @property
    def key_prefix(self):
        """Route tuple keys on their first ``key_prefix`` parts (None: whole key)."""
        return self._prefix or None

    # -- the hot paths ---------------------------------------------------------

    cdef inline int32_t _place(self, uint64_t h) except -1:
        if self._kind == KIND_C:  # one call through the strategy's table
            return sh_router_place(&self._rt, h)
        return self._place_py(h)

    cdef int32_t _place_py(self, uint64_t h) except -1:
        """_place for a Python kernel: _route_hash(h), checked, then the overrides."""
        cdef int32_t i, j
        if self._kind != KIND_PY:
            raise TypeError(f"{type(self).__name__} has no placement kernel")
        r = self._route_hash(h)
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 0 <= r < self._nshards:
            raise ValueError(f"{type(self).__name__}._route_hash returned {r!r}, "
                             f"not a shard index in [0, {self._nshards})")
        i = <int32_t>r
        if self._rt.nover:
            j = sh_override_find(self._rt.ohash, self._rt.oshard, self._rt.nover, h)
            if j >= 0:
                i = j
        return i

    def _route_hash(self, h):
        """One hash -> shard index, for Python-kernel routers (default: via the batch kernel)."""
        out = np.empty(1, dtype=np.int32)
        self._route_hashes_kernel(np.array([h], dtype=np.uint64), out)
        return int(out[0])

    def _route_hashes_kernel(self, hashes, out):
        raise NotImplementedError(f"{type(self).__name__} must implement _route_hashes_kernel")

    # route, route_index and route_hash take one positional argument (METH_O,
    # the cheapest call there is); their docstrings carry that signature in
    # the form inspect.signature() reads (the "--" line must start the line).

    @cython.binding(False)
    @cython.always_allow_keywords(False)
    @cython.embedsignature(False)
    def route(self, key):
        """route($self, key, /)
--

        The shard id that owns ``key``."""
        return <object>PyTuple_GET_ITEM(self._shards, self._index_of(key))

    @cython.binding(False)
    @cython.always_allow_keywords(False)
    @cython.embedsignature(False)
    def route_index(self, key):
        """route_index($self, key, /)
--

        The index in ``shards`` of the shard that owns ``key``."""
        return self._index_of(key)

    @cython.binding(False)
    @cython.always_allow_keywords(False)
    @cython.embedsignature(False)
    def route_hash(self, h):
        """route_hash($self, h, /)
--

        The shard index for one precomputed 64-bit hash."""
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)):
            raise TypeError(f"hash must be an int, not {type(h).__name__}")
        h = int(h)
        if h < 0 or h > _U64_MAX:
            raise ValueError(f"hash {h} is outside [0, 2**64 - 1]")
        return self._place(<uint64_t>h)

    def route_hashes(self, hashes, *, out=None, threads=None):
        """Shard indices (int32 array) for precomputed uint64 hashes."""
        a = as_hashes(hashes)
        cdef Py_ssize_t n = a.shape[0]
        cdef sh_job job
        out = check_out(out, n, _DT_INT32)
        a = unalias(a, out)
        if self._kind == KIND_PY:
            resolve_threads(threads, n)  # validates; Python kernels run on the calling thread
            if n:
                self._route_hashes_kernel(a, out)
                self._apply_overrides_py(a, out)
            return out
        if self._kind == KIND_UNSET:
            raise TypeError(f"{type(self).__name__} has no placement kernel")
        job.data = address(a)
        job.out = address(out)
        job.ctx = <const void *>&self._rt   # sealed: its tables no longer change
        run(_k_route, &job, n, threads)
        return out

    def _apply_overrides_py(self, a, out):
        cdef const uint64_t[::1] hv
        cdef int32_t[::1] ov
        if self._rt.nover and a.shape[0]:
            hv = a
            ov = out
            with nogil:
                sh_override_batch(self._rt.ohash, self._rt.oshard, self._rt.nover, &hv[0],
                                  <size_t>hv.shape[0], &ov[0])

    cdef object _route_small(self, object keys):
        """route_many for a list/tuple of at most SMALL_BATCH exact ints (one
        digit) and compact-ASCII str, or a native-order integer numpy array
        of at most SMALL_BATCH keys, when the hasher is xxh3_64 over the
        default encodings: each key hashed inline (the bytes Hasher.hash_one
        and hash_array hash) and placed with the scalar kernel (bit-exact
        with the batch kernels), without the thread pool or a hash
        temporary; the input is read and the result made through NumPy's C
        API (no buffer export, no Python call).  None: not such an input
        (the general path decides, and raises).  No key's own code runs
        here, so iterating the caller's list is safe."""
        cdef uint64_t hs[SMALL_BATCH]
        cdef Py_ssize_t n, i, stride
        cdef int code
        cdef const char *p
        cdef int32_t *o
        cdef type t = type(keys)
        if t is list or t is tuple:  # (the PySequence_Fast_* macros read both)
            n = PySequence_Fast_GET_SIZE(keys)
            if n > SMALL_BATCH:
                return None
            for i in range(n):
                if not sh_route_fast_hash(<object>PySequence_Fast_GET_ITEM(keys, i), self._int_xxh3,
                                          self._int_key, self._str_xxh3, self._hasher._seed, &hs[i]):
                    return None
        elif self._int_xxh3:
            code = int_array(keys, &p, &n, &stride)
            if code == 0 or n > SMALL_BATCH:
                return None
            # each item as the 8-byte word hash_array hashes for it (an int64
            # or uint64 as it is, narrower ones widened)
            for i in range(n):
                hs[i] = sh_xxh3_64_word_keyed(int_word(p + i * stride, code), self._int_key)
        else:
            return None
        res = new_array(n, NP_INT32)
        o = <int32_t *>array_data(res)
        for i in range(n):
            o[i] = self._place(hs[i])
        return res

    def route_many(self, keys, *, out=None, threads=None):
        """Shard indices (int32 array) for many keys: hashes them, then routes the hashes.

        Uses one uint64 temporary per key (the hashes); small batches (up to
        64 keys of the common types) are hashed and placed in one pass.
        """
        cdef object res
        if self._hasher is None:
            self._not_initialised()
        if out is None and threads is None and self._kind == KIND_C and not self._prefix and not self._keymode:
            res = self._route_small(keys)
            if res is not None:
                return res
        if self._prefix:
            keys = _prefix_many(keys, self._prefix)
        hashes = self._hasher.hash_array(keys, threads=threads)
        return self.route_hashes(hashes, out=out, threads=threads)

    # -- replica lists (see "Replica (preference) lists" at the end of this file) --

    def _set_replica_zones(self, zones):
        """The router's own zones (a ReplicaZones or None): part of its document,
        set by Router while it is being built or loaded, before ``_seal``.  A
        sealed router is immutable: replacing its zones while a batch reads
        them would change its answers under the caller."""
        if self._sealed:
            raise AttributeError(f"{type(self).__name__} is immutable: its zones are part of its "
                                 "document (with_zones() makes a router with other zones)")
        if zones is not None and not isinstance(zones, ReplicaZones):
            raise TypeError("zones must be a ReplicaZones")
        self._zmap = zones

    cdef ReplicaZones _replica_zones(self, object zones):
        if not self._replica_ok:
            raise self._replica_refused()
        if zones is None:
            return <ReplicaZones>self._zmap
        return <ReplicaZones>self._zones_for_call(zones)

    def route_replicas(self, key, n, *, zones=None):
        """The ``n`` distinct shard ids that hold ``key``'s replicas, in
        preference order; the first is ``route(key)`` (docs/routers.md 2.17).
        ``zones`` (shard id -> zone name, every shard) replaces the router's
        own ``zones`` for this call: no two replicas share a zone while ``n``
        is at most the number of zones, then the rest follow in preference
        order."""
        return _replicas_key(self, key, n, self._replica_zones(zones))

    def route_replicas_hash(self, h, n, *, zones=None):
        """The replica list (shard indices) of one precomputed 64-bit hash."""
        return _replicas_hash(self, h, n, self._replica_zones(zones))


def _prefix_many(keys, Py_ssize_t p):
    if isinstance(keys, np.ndarray) and keys.dtype != object:
        raise TypeError("a key_prefix router needs tuple keys, not an array of dtype "
                        f"{keys.dtype}")
    return [_prefix_of(k, p) for k in keys]


# -- C entry point for other compiled modules ------------------------------------
# shardhash._hotkeys routes cold keys and checks its hot set on the same
# 64-bit hash in one call; it reaches route's hashing and placement through
# this capsule (a struct of function pointers) instead of cimporting
# RouterCore.  Layout: struct { route_index_hash } (append fields only).

ctypedef int32_t (*_route_index_hash_fn)(object, object, uint64_t *) except -2

cdef struct _RouterCAPI:
    _route_index_hash_fn route_index_hash


cdef int32_t _route_index_hash(object router, object key, uint64_t *h) except -2:
    """route_index(key) of the RouterCore ``router``, with the key's hash (the
    one route() places) in ``*h``; -1 when route() does not hash the key
    itself (raw-key modes, key_prefix routers): the caller then uses route().
    The caller has checked that ``router`` is a RouterCore (no check here)."""
    cdef RouterCore c = <RouterCore>router
    if c._keymode or c._prefix:
        return -1
    if c._hasher is None:
        c._not_initialised()
    if not sh_route_fast_hash(key, c._int_xxh3, c._int_key, c._str_xxh3, c._hasher._seed, h):
        h[0] = c._hasher.hash_one(key)
    return c._place(h[0])


cdef _RouterCAPI _c_api
_c_api.route_index_hash = _route_index_hash
_C_API = PyCapsule_New(<void *>&_c_api, b"shardhash.routing._kernels._C_API", NULL)


cdef extern from *:
    """
    /* Remove a type's "__pyx_vtable__" entry: Cython publishes the C method
     * table there only for other modules that cimport the type, and help()
     * would list it.  Instances keep their table (set in tp_new from C). */
    static int sh_hide_vtable(PyTypeObject *t)
    {
        if (t->tp_dict == NULL || PyDict_GetItemString(t->tp_dict, "__pyx_vtable__") == NULL) return 0;
        if (PyDict_DelItemString(t->tp_dict, "__pyx_vtable__") != 0) return -1;
        PyType_Modified(t);
        return 0;
    }
    """
    int sh_hide_vtable(type t) except -1

# No other compiled module cimports RouterCore, so nothing needs its table
# through the type's dict; help(JumpRouter) then shows only the API.
sh_hide_vtable(RouterCore)


# ---------------------------------------------------------------------------
# Bounded loads (docs/routers.md 2.16): capacities and the capped ring walk


def bounded_capacity(total, nshards, factor_percent):
    """``ceil(total * factor_percent / (100 * nshards))``, exactly (a 128-bit
    product in C).  ``total`` in [0, 2**64 - 1], ``nshards`` >= 1,
    ``factor_percent`` in [100, 2**32 - 1]; OverflowError when the capacity
    does not fit in 64 bits."""
    for name, v in (("total", total), ("nshards", nshards), ("factor_percent", factor_percent)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an int, not {type(v).__name__}")
    total, nshards, factor_percent = int(total), int(nshards), int(factor_percent)
    if not 0 <= total <= _U64_MAX:
        raise ValueError(f"total {total} is outside [0, 2**64 - 1]")
    if not 1 <= nshards <= _U64_MAX:
        raise ValueError(f"nshards must be in [1, 2**64 - 1], got {nshards}")
    if not 100 <= factor_percent <= 0xFFFFFFFF:
        raise ValueError(f"factor_percent must be in [100, 2**32 - 1], got {factor_percent}")
    cdef uint64_t c = sh_bounded_capacity(<uint64_t>total, <uint64_t>nshards, <uint32_t>factor_percent)
    if c == <uint64_t>_U64_MAX and -(-(total * factor_percent) // (100 * nshards)) != _U64_MAX:
        raise OverflowError("the capacity does not fit in 64 bits")
    return int(c)


def _u64_column(v, n, name):
    """``v`` as a C-contiguous uint64 array of length ``n`` (sizes, loads, caps)."""
    a = as_hashes(v, name)
    if a.shape[0] != n:
        raise ValueError(f"{name} has {a.shape[0]} entries, expected {n}")
    return a


def bounded_assign(tokens, owners, hashes, caps, *, sizes=None, order=None, prev=None, load=None):
    """Place items on a ring under per-shard capacities (the capped walk of
    docs/routers.md 2.16): ``(shard of each item (int32), final loads
    (uint64), number of items placed above a cap)``.

    ``tokens`` strictly increasing uint64 ring positions with ``owners``
    (int32 shard indices in ``[0, len(caps))``); ``hashes`` the items' 64-bit
    hashes; ``caps`` one capacity per shard; ``sizes`` the items' sizes
    (default 1 each); ``order`` the placement order (a permutation of the
    item positions; default input order); ``prev`` each item's previous
    shard index or -1 (kept in pass 1 while it has room); ``load`` loads
    already on the shards (default zeros).  Everything is checked before
    the C walk runs without the GIL."""
    t = np.ascontiguousarray(as_hashes(tokens, "tokens"))
    cdef Py_ssize_t nt = t.shape[0]
    if nt == 0:
        raise ValueError("tokens must not be empty")
    if nt > 1 and not bool(np.all(t[1:] > t[:nt - 1])):
        j = int(np.flatnonzero(t[1:] <= t[:nt - 1])[0]) + 1
        raise ValueError(f"tokens must be strictly increasing: tokens[{j}] = {int(t[j])} "
                         f"follows {int(t[j - 1])}")
    cp = as_hashes(caps, "caps")
    cdef Py_ssize_t ns = cp.shape[0]
    if ns == 0:
        raise ValueError("caps must have one entry per shard (at least one)")
    ow = np.asarray(owners)
    if ow.ndim != 1 or ow.shape[0] != nt:
        raise ValueError(f"owners must have one entry per token ({nt})")
    if ow.dtype.kind not in "iu":
        raise TypeError(f"owners must hold integers, got dtype {ow.dtype}")
    bad = np.flatnonzero((ow < 0) | (ow >= ns))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"owners[{j}] = {int(ow[j])} is not a shard index in [0, {ns})")
    ow = np.ascontiguousarray(ow, dtype=np.int32)
    h = as_hashes(hashes, "hashes")
    cdef Py_ssize_t n = h.shape[0]
    sz = None if sizes is None else _u64_column(sizes, n, "sizes")
    od = None
    if order is not None:
        oa = np.asarray(order)
        if oa.ndim != 1 or oa.shape[0] != n or (n and oa.dtype.kind not in "iu"):
            raise ValueError(f"order must be a permutation of 0..{n - 1}")
        bad = np.flatnonzero((oa < 0) | (oa >= n))
        if bad.size:
            j = int(bad[0])
            raise ValueError(f"order[{j}] = {int(oa[j])}: order must be a permutation of 0..{n - 1}")
        counts = np.bincount(oa.astype(np.intp), minlength=n)
        if n and counts.max() > 1:
            v = int(np.flatnonzero(counts > 1)[0])
            j = int(np.flatnonzero(oa == v)[1])
            raise ValueError(f"order[{j}] = {v} repeats an earlier entry: order must be a permutation "
                             f"of 0..{n - 1}")
        od = np.ascontiguousarray(oa, dtype=np.uintp)
    pv = None
    if prev is not None:
        pa = np.asarray(prev)
        if pa.ndim != 1 or pa.shape[0] != n:
            raise ValueError(f"prev must have one entry per item ({n})")
        if n and pa.dtype.kind not in "iu":
            raise TypeError(f"prev must hold integers, got dtype {pa.dtype}")
        bad = np.flatnonzero((pa < -1) | (pa >= ns))
        if bad.size:
            j = int(bad[0])
            raise ValueError(f"prev[{j}] = {int(pa[j])} is neither -1 nor a shard index in [0, {ns})")
        pv = np.ascontiguousarray(pa, dtype=np.int32)
    ld = np.zeros(ns, dtype=np.uint64) if load is None else _u64_column(load, ns, "load").copy()
    # the loads must stay below 2**64
    big = (int(sz.max()) if sz is not None and n else 1) * n + (int(ld.max()) if ns else 0) * ns
    if big > _U64_MAX:
        tot = sum(int(x) for x in ld) + (sum(int(x) for x in sz) if sz is not None else n)
        if tot > _U64_MAX:
            raise OverflowError("the sizes and loads add up to more than 2**64 - 1")
    out = np.empty(n, dtype=np.int32)
    if n == 0:
        return out, ld, 0
    cdef const uint64_t[::1] tv = t
    cdef const int32_t[::1] owv = ow
    cdef const uint64_t[::1] hv = h
    cdef const uint64_t[::1] cv = cp
    cdef uint64_t[::1] lv = ld
    cdef int32_t[::1] outv = out
    cdef const uint64_t[::1] szv
    cdef const size_t[::1] odv
    cdef const int32_t[::1] prv
    cdef const uint64_t *szp = NULL
    cdef const size_t *odp = NULL
    cdef const int32_t *prp = NULL
    if sz is not None:
        szv = sz
        szp = &szv[0]
    if od is not None:
        odv = od
        odp = &odv[0]
    if pv is not None:
        prv = pv
        prp = &prv[0]
    cdef size_t over
    with nogil:
        over = sh_bounded_assign(&tv[0], &owv[0], <size_t>nt, &hv[0], szp, odp, prp, <size_t>n,
                                 &cv[0], <size_t>ns, &lv[0], &outv[0])
    return out, ld, int(over)


# ===========================================================================
# Replica (preference) lists: sh_replicas.c (docs/routers.md, section 2.17)
#
# A router's replica list is the third entry of the table its strategy
# filled: a ring (and hash ranges, which are a ring) walks its tokens,
# rendezvous takes the top scores, jump and the table routers (bucket,
# modulo, Maglev) follow the rehash walk.  Routers with overrides, Python
# kernels or raw-key placement have none (Router.replica_rule is None for
# them; the binding refuses too).
# ===========================================================================

from libc.stdlib cimport calloc, free

cdef extern from *:
    """
    #include <stdlib.h>
    #include "sh_replicas.h"

    /* What one router's replica list reads: its strategy's table (whose
     * replicas entry is set), its pre-transform and the zones. */
    typedef struct {
        sh_placer pl;
        size_t nshards;
        uint64_t pre_add, pre_xor; /* the router's pre-transform */
        int has_pre;
        const int32_t *zones; /* NULL: no failure-domain rule */
        int32_t nzones;
    } shr_plan;

    /* The replica list of hash h (r entries at out); the count of shards
     * written (< r only for a ring where some shard owns no token).
     * mark: nshards + nzones zeroed bytes; skip: nshards; scratch: nshards. */
    static size_t shr_one(const shr_plan *p, uint64_t h, size_t r, uint8_t *mark, int32_t *skip,
                          uint64_t *scratch, int32_t *out)
    {
        sh_replica_work w;
        w.zones = p->zones;
        w.nzones = p->zones ? p->nzones : 0;
        w.mark = mark;
        w.zmark = p->zones ? mark + p->nshards : NULL;
        w.skip = p->zones ? skip : NULL;
        if (p->has_pre) h = (h + p->pre_add) ^ p->pre_xor;
        return p->pl.replicas(p->pl.state, p->nshards, h, r, &w, scratch, out);
    }

    /* Rows [s, e) of a batch (row i at out + i * r), with the chunk's own
     * workspace.  Returns -1 (SH_OK), -2 (no memory) or the first row that
     * came out short. */
    static ptrdiff_t shr_rows(const shr_plan *p, const uint64_t *hashes, size_t s, size_t e, size_t r,
                              int32_t *out)
    {
        size_t i, nz = p->zones ? (size_t)p->nzones : 0;
        ptrdiff_t bad = -1;
        uint8_t *mark = (uint8_t *)calloc(p->nshards + nz, 1);
        int32_t *skip = (int32_t *)malloc(p->nshards * sizeof(int32_t));
        uint64_t *scratch = (uint64_t *)malloc(p->nshards * sizeof(uint64_t));
        if (mark == NULL || skip == NULL || scratch == NULL) {
            free(mark);
            free(skip);
            free(scratch);
            return -2;
        }
        for (i = s; i < e; i++) {
            if (shr_one(p, hashes[i], r, mark, skip, scratch, out + i * r) < r && bad < 0) bad = (ptrdiff_t)i;
        }
        free(mark);
        free(skip);
        free(scratch);
        return bad;
    }
    """
    ctypedef struct shr_plan:
        sh_placer pl
        size_t nshards
        uint64_t pre_add
        uint64_t pre_xor
        int has_pre
        const int32_t *zones
        int32_t nzones
    size_t shr_one(const shr_plan *p, uint64_t h, size_t r, uint8_t *mark, int32_t *skip,
                   uint64_t *scratch, int32_t *out) nogil
    ptrdiff_t shr_rows(const shr_plan *p, const uint64_t *hashes, size_t s, size_t e, size_t r,
                       int32_t *out) nogil


cdef enum:
    SHR_STACK = 256   # scalar lists of routers with at most this many shards use stack workspace


cdef class ReplicaZones:
    """A checked failure-domain map for replica lists: the zone number (in
    ``[0, nzones)``) of every shard, in shard order.  Immutable.

    ``ReplicaZones(zone_of_shard)``: a sequence of ints >= 0, one per shard;
    ``nzones`` is the largest plus one, and every number below it must be
    some shard's zone."""

    cdef object _arr
    cdef const int32_t *_zones
    cdef readonly int nzones
    cdef readonly Py_ssize_t nshards

    def __init__(self, zone_of_shard):
        if self._arr is not None:  # a router's zones: replacing them would change its answers
            raise AttributeError("ReplicaZones is immutable")
        if isinstance(zone_of_shard, (str, bytes)) or not hasattr(zone_of_shard, "__len__"):
            raise TypeError(f"zones must be a sequence of zone numbers, not {type(zone_of_shard).__name__}")
        vals = []
        for i, z in enumerate(zone_of_shard):
            if isinstance(z, bool) or not isinstance(z, (int, np.integer)):
                raise TypeError(f"zones[{i}] must be an int, got {z!r} (type {type(z).__name__})")
            if not 0 <= z < 0x7FFFFFFF:
                raise ValueError(f"zones[{i}] = {int(z)} is outside [0, 2**31 - 1)")
            vals.append(int(z))
        if not vals:
            raise ValueError("zones must name at least one shard's zone")
        nz = max(vals) + 1
        missing = sorted(set(range(nz)) - set(vals))
        if missing:
            raise ValueError(f"zone {missing[0]} holds no shard (zones are numbered 0 .. {nz - 1})")
        a = np.array(vals, dtype=np.int32)
        a.setflags(write=False)
        self._arr = a
        cdef const int32_t[::1] v = a
        self._zones = &v[0]
        self.nzones = nz
        self.nshards = len(vals)

    @property
    def zones(self):
        """The zone number of each shard (read-only int32 array)."""
        return self._arr

    def __repr__(self):
        return f"ReplicaZones({self._arr.tolist()!r})"


cdef int _replica_plan(RouterCore rt, Py_ssize_t r, ReplicaZones zones, shr_plan *p) except -1:
    """Fill p from a sealed router and check r and zones (with the GIL)."""
    cdef RouterCore k = rt
    if rt._hasher is None:
        rt._not_initialised()
    if rt._keymode or rt._rt.nover:
        raise TypeError(f"{type(rt).__name__} has no replica lists")
    # a delegate with no overrides or pre-transform of its own, over the same
    # shards, has its delegate's replica lists
    while k._delegate is not None and not k._rt.nover and not k._rt.has_pre and k._nshards == rt._nshards:
        k = k._delegate
    if k._kind != KIND_C or k._rt.nover or k._rt.pl.replicas == NULL:
        raise TypeError(f"{type(rt).__name__} has no replica lists")
    p.pl = k._rt.pl
    p.nshards = <size_t>rt._nshards
    p.has_pre = k._rt.has_pre
    p.pre_add = k._rt.pre_add
    p.pre_xor = k._rt.pre_xor
    p.zones = NULL
    p.nzones = 0
    if r < 1:
        raise ValueError(f"n must be >= 1, got {r}")
    if r > rt._nshards:
        raise ValueError(f"n = {r} is more than the {rt._nshards} shard(s) of the router")
    if zones is not None:
        if zones.nshards != rt._nshards:
            raise ValueError(f"zones name {zones.nshards} shard(s), the router has {rt._nshards}")
        p.zones = zones._zones
        p.nzones = zones.nzones
    return 0


cdef Py_ssize_t _replica_count(object n) except -1:
    if type(n) is int and 0 < n < 0x80000000:   # the common case, without numpy's types
        return <Py_ssize_t>n
    return <Py_ssize_t>_check_count(n, "n", ValueError)


cdef object _short_ring(RouterCore rt, Py_ssize_t r, str where):
    return ValueError(f"{type(rt).__name__}: fewer than n = {r} shards own tokens, so {where} "
                      f"has fewer than {r} replicas")


cdef list _replicas_of(RouterCore rt, uint64_t h, Py_ssize_t r, ReplicaZones zones, bint ids, str where):
    cdef shr_plan p
    cdef uint8_t mark_s[2 * SHR_STACK]
    cdef int32_t skip_s[SHR_STACK]
    cdef uint64_t scratch_s[SHR_STACK]
    cdef int32_t out_s[SHR_STACK]
    cdef uint8_t *mark = mark_s
    cdef int32_t *skip = skip_s
    cdef uint64_t *scratch = scratch_s
    cdef int32_t *out = out_s
    cdef size_t got, nz
    cdef Py_ssize_t i
    cdef bint big
    _replica_plan(rt, r, zones, &p)
    nz = <size_t>p.nzones
    big = p.nshards > SHR_STACK or nz > SHR_STACK
    if big:
        mark = <uint8_t *>calloc(p.nshards + nz, 1)
        skip = <int32_t *>calloc(p.nshards, sizeof(int32_t))
        scratch = <uint64_t *>calloc(p.nshards, sizeof(uint64_t))
        out = <int32_t *>calloc(p.nshards, sizeof(int32_t))
        if mark == NULL or skip == NULL or scratch == NULL or out == NULL:
            free(mark)
            free(skip)
            free(scratch)
            free(out)
            raise MemoryError()
    else:
        memset(mark, 0, p.nshards + nz)
    try:
        got = shr_one(&p, h, <size_t>r, mark, skip, scratch, out)
        if got < <size_t>r:
            raise _short_ring(rt, r, where)
        if ids:
            return [<object>PyTuple_GET_ITEM(rt._shards, out[i]) for i in range(r)]
        return [out[i] for i in range(r)]
    finally:
        if big:
            free(mark)
            free(skip)
            free(scratch)
            free(out)


def replicas_key(RouterCore router, key, n, ReplicaZones zones=None):
    """The replica list of ``key`` (shard ids), hashed as ``route`` hashes it."""
    return _replicas_key(router, key, n, zones)


cdef list _replicas_key(RouterCore router, object key, object n, ReplicaZones zones):
    cdef uint64_t h
    cdef Py_ssize_t r = _replica_count(n)
    if router._hasher is None:
        router._not_initialised()
    if router._keymode:
        raise TypeError(f"{type(router).__name__} has no replica lists")
    if router._prefix:
        key = _prefix_of(key, router._prefix)
    if not sh_route_fast_hash(key, router._int_xxh3, router._int_key, router._str_xxh3,
                              router._hasher._seed, &h):
        h = router._hasher.hash_one(key)
    return _replicas_of(router, h, r, zones, True, "this key")


def replicas_hash(RouterCore router, h, n, ReplicaZones zones=None):
    """The replica list (shard indices) of one 64-bit hash."""
    return _replicas_hash(router, h, n, zones)


cdef list _replicas_hash(RouterCore router, object h, object n, ReplicaZones zones):
    cdef Py_ssize_t r = _replica_count(n)
    if isinstance(h, bool) or not isinstance(h, (int, np.integer)):
        raise TypeError(f"hash must be an int, not {type(h).__name__}")
    h = int(h)
    if h < 0 or h > _U64_MAX:
        raise ValueError(f"hash {h} is outside [0, 2**64 - 1]")
    return _replicas_of(router, <uint64_t>h, r, zones, False, "this hash")


cdef ptrdiff_t _k_replicas(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """Replica rows [s, e) of job.data's hashes (job.ctx: a shr_plan; job.width: r)."""
    return shr_rows(<const shr_plan *>j.ctx, <const uint64_t *>j.data, <size_t>s, <size_t>e, j.width,
                    <int32_t *>j.out)


cdef object _replica_out(object out, Py_ssize_t n, Py_ssize_t r):
    if out is None:
        return np.empty((n, r), dtype=np.int32)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy int32 array, not {type(out).__name__}")
    if out.dtype != _DT_INT32 or not out.dtype.isnative:
        raise TypeError(f"out must have dtype int32, got {out.dtype}")
    if out.shape != (n, r):
        raise ValueError(f"out must have shape ({n}, {r}), got {out.shape}")
    check_out_layout(out, "out must be writable")
    return out


def replicas_hashes(RouterCore router, hashes, n, ReplicaZones zones=None, out=None, threads=None):
    """Replica lists of many hashes: an int32 array of shape (len(hashes), n)."""
    cdef Py_ssize_t r = _replica_count(n)
    cdef shr_plan p
    cdef sh_job job
    cdef ptrdiff_t bad
    _replica_plan(router, r, zones, &p)
    a = as_hashes(hashes)
    cdef Py_ssize_t m = a.shape[0]
    out = _replica_out(out, m, r)
    if np.may_share_memory(a, out):
        a = a.copy()
    if m == 0:
        resolve_threads(threads, 0)
        return out
    job.data = address(a)
    job.out = address(out)
    job.ctx = <const void *>&p
    job.width = <size_t>r
    bad = run(_k_replicas, &job, m, threads)
    if bad >= 0:
        raise _short_ring(router, r, f"hashes[{bad}]")
    return out


def replicas_keys(RouterCore router, keys, n, ReplicaZones zones=None, out=None, threads=None):
    """Replica lists of many keys, hashed as ``route_many`` hashes them."""
    cdef Py_ssize_t r = _replica_count(n)
    cdef shr_plan p
    _replica_plan(router, r, zones, &p)   # refuse early, before hashing
    if router._prefix:
        keys = _prefix_many(keys, router._prefix)
    hashes = router._hasher.hash_array(keys, threads=threads)
    try:
        return replicas_hashes(router, hashes, r, zones, out, threads)
    except ValueError as e:
        if str(e).endswith("replicas") and "hashes[" in str(e):
            raise ValueError(str(e).replace("hashes[", "keys[")) from None
        raise
