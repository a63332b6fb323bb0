# distutils: sources = [src/shardhash/_core/place/sh_replicas.c, src/shardhash/_core/place/sh_memento.c, src/shardhash/_core/place/sh_multiprobe.c, src/shardhash/_core/place/sh_jump.c, src/shardhash/_core/place/sh_jump_avx2.c, src/shardhash/_core/place/sh_jump_neon.c, src/shardhash/_core/common/sh_cpu.c]
"""Replica (preference) lists over raw strategy tables (private).

The routers give replica lists through ``routing._kernels.replicas_hashes``
(one router's tables, its checks).  These bindings run the batch kernels of
``_core/place/sh_replicas`` on tables given as arrays, for the strategy
tests that hold every kernel to its pure-Python reference
(``shardhash._reference.replicas``), including what only the raw kernels
show: a ring where some shard owns no token ends its rows with -1.

Every input is checked here (the kernels check nothing): ``nshards >= 1``,
``1 <= r <= nshards``, every shard index in ``[0, nshards)``, and ``zones``
None or one zone in ``[0, nzones)`` per shard.  The result is an int32
array of shape ``(len(hashes), r)``.
"""

from libc.math cimport isfinite
from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t

import numpy as np

__all__ = ["ring_replicas", "rendezvous_replicas", "mprobe_replicas", "memento_replicas", "table_replicas"]

cdef extern from "sh_jump.h" nogil:
    void sh_place_init()

from shardhash.routing._place cimport (sh_memento, sh_mprobe, SH_MPROBE_MAX_PROBES, sh_mprobe_index_bits,
                                     sh_mprobe_build_index)

cdef extern from "sh_replicas.h" nogil:
    ctypedef struct sh_replica_work:
        const int32_t *zones
        int32_t nzones
        uint8_t *mark
        uint8_t *zmark
        int32_t *skip
    void sh_ring_replicas_batch(const uint64_t *tokens, const int32_t *owners, size_t ntokens, size_t nshards,
                                const uint64_t *hashes, size_t n, size_t r, const sh_replica_work *w,
                                int32_t *out)
    void sh_rendezvous_replicas_batch(const uint64_t *seeds, const double *weights, size_t nshards,
                                      const uint64_t *hashes, size_t n, size_t r, const sh_replica_work *w,
                                      uint64_t *scratch, int32_t *out)
    void sh_mprobe_replicas_batch(const sh_mprobe *m, size_t nshards, const uint64_t *hashes, size_t n,
                                  size_t r, const sh_replica_work *w, int32_t *out)
    void sh_memento_replicas_batch(const sh_memento *m, const int32_t *map, size_t nshards,
                                   const uint64_t *hashes, size_t n, size_t r, const sh_replica_work *w,
                                   int32_t *out)
    void sh_table_replicas_batch(const int32_t *table, uint64_t tsize, size_t nshards, const uint64_t *hashes,
                                 size_t n, size_t r, const sh_replica_work *w, int32_t *out)

sh_place_init()


cdef class _Work:
    """The kernels' workspace and zone rule (sh_replica_work), checked, and
    the output array."""
    cdef sh_replica_work w
    cdef object keep
    cdef object out
    cdef int32_t *o
    cdef size_t nshards, r, n

    def __cinit__(self, Py_ssize_t nshards, Py_ssize_t r, const uint64_t[::1] hashes, zones, Py_ssize_t nzones):
        cdef const int32_t[::1] zv
        if nshards < 1:
            raise ValueError(f"nshards must be >= 1, got {nshards}")
        if not 1 <= r <= nshards:
            raise ValueError(f"r must be in [1, nshards = {nshards}], got {r}")
        mark = np.zeros(nshards, np.uint8)
        zmark = np.zeros(max(nzones, 1), np.uint8)
        skip = np.zeros(nshards, np.int32)
        self.keep = [mark, zmark, skip]
        cdef uint8_t[::1] mv = mark
        cdef uint8_t[::1] zmv = zmark
        cdef int32_t[::1] sv = skip
        self.w.zones = NULL
        self.w.nzones = 0
        self.w.mark = &mv[0]
        self.w.zmark = NULL
        self.w.skip = NULL
        if zones is not None:
            z = _int32s(zones, "zones", nshards)
            if nzones < 1:
                raise ValueError(f"nzones must be >= 1 with zones, got {nzones}")
            _in_range(z, nzones, "zones")
            self.keep.append(z)
            zv = z
            self.w.zones = &zv[0]
            self.w.nzones = <int32_t>nzones
            self.w.zmark = &zmv[0]
            self.w.skip = &sv[0]
        self.nshards = <size_t>nshards
        self.r = <size_t>r
        self.n = <size_t>hashes.shape[0]
        self.out = np.empty((hashes.shape[0], r), np.int32)
        self.o = <int32_t *><size_t>self.out.ctypes.data


cdef object _int32s(object a, str name, Py_ssize_t n=-1):
    """a as a C-contiguous int32 array (n entries when n >= 0)."""
    arr = np.ascontiguousarray(a, dtype=np.int32)
    if arr.ndim != 1 or (n >= 0 and arr.shape[0] != n):
        raise ValueError(f"{name} must be a 1-D array of {n if n >= 0 else 'some'} entries, got shape {arr.shape}")
    return arr


cdef int _in_range(const int32_t[::1] v, Py_ssize_t hi, str name, Py_ssize_t lo=0) except -1:
    cdef Py_ssize_t i
    for i in range(v.shape[0]):
        if not lo <= v[i] < hi:
            raise ValueError(f"{name}[{i}] = {v[i]} is outside [{lo}, {hi})")
    return 0


cdef int _increasing(const uint64_t[::1] t, str name) except -1:
    cdef Py_ssize_t i
    if t.shape[0] == 0:
        raise ValueError(f"{name} must not be empty")
    for i in range(1, t.shape[0]):
        if t[i] <= t[i - 1]:
            raise ValueError(f"{name} must be strictly increasing (position {i})")
    return 0


cdef inline const uint64_t *_h(const uint64_t[::1] hashes) noexcept:
    return &hashes[0] if hashes.shape[0] else NULL


def ring_replicas(const uint64_t[::1] tokens not None, owners, Py_ssize_t nshards,
                  const uint64_t[::1] hashes not None, Py_ssize_t r, zones=None, Py_ssize_t nzones=0):
    """Ring: the owners met walking clockwise from each hash's successor."""
    cdef _Work k = _Work(nshards, r, hashes, zones, nzones)
    _increasing(tokens, "tokens")
    o = _int32s(owners, "owners", tokens.shape[0])
    _in_range(o, nshards, "owners")
    cdef const int32_t[::1] ov = o
    cdef const uint64_t *hp = _h(hashes)
    with nogil:
        sh_ring_replicas_batch(&tokens[0], &ov[0], <size_t>tokens.shape[0], k.nshards, hp, k.n, k.r,
                               &k.w, k.o)
    return k.out


def rendezvous_replicas(const uint64_t[::1] seeds not None, weights, const uint64_t[::1] hashes not None,
                        Py_ssize_t r, zones=None, Py_ssize_t nzones=0):
    """Rendezvous: shards by descending draw (weights None, or one finite
    weight > 0 per shard)."""
    cdef Py_ssize_t i, ns = seeds.shape[0]
    cdef _Work k = _Work(ns, r, hashes, zones, nzones)
    cdef const double[::1] wv
    cdef const double *wp = NULL
    if weights is not None:
        w = np.ascontiguousarray(weights, dtype=np.float64)
        if w.ndim != 1 or w.shape[0] != ns:
            raise ValueError(f"weights must be a 1-D array of {ns} entries, got shape {w.shape}")
        wv = w
        for i in range(ns):
            if not (isfinite(wv[i]) and wv[i] > 0):
                raise ValueError(f"weights[{i}] = {wv[i]} is not a finite number > 0")
        wp = &wv[0]
    scratch = np.empty(ns, np.uint64)
    cdef uint64_t[::1] sc = scratch
    cdef const uint64_t *hp = _h(hashes)
    with nogil:
        sh_rendezvous_replicas_batch(&seeds[0], wp, k.nshards, hp, k.n, k.r, &k.w, &sc[0], k.o)
    return k.out


def mprobe_replicas(const uint64_t[::1] tokens not None, owners, int probes, Py_ssize_t nshards,
                    const uint64_t[::1] hashes not None, Py_ssize_t r, zones=None, Py_ssize_t nzones=0):
    """Multi-probe: shards by ascending probe distance (probes in 1..64)."""
    cdef _Work k = _Work(nshards, r, hashes, zones, nzones)
    cdef sh_mprobe m
    _increasing(tokens, "tokens")
    if not 1 <= probes <= SH_MPROBE_MAX_PROBES:
        raise ValueError(f"probes must be in [1, {SH_MPROBE_MAX_PROBES}], got {probes}")
    o = _int32s(owners, "owners", tokens.shape[0])
    _in_range(o, nshards, "owners")
    cdef size_t nt = <size_t>tokens.shape[0]
    # the kernel reads two sentinel tokens (2**64 - 1) after the last one
    t = np.full(nt + 2, np.iinfo(np.uint64).max, np.uint64)
    t[:nt] = tokens
    cdef unsigned bits = sh_mprobe_index_bits(nt)
    index = np.zeros((1 << bits) + 1, np.uint32)
    cdef const uint64_t[::1] tv = t
    cdef const int32_t[::1] ov = o
    cdef uint32_t[::1] iv = index
    sh_mprobe_build_index(&tv[0], nt, bits, &iv[0])
    m.tokens = &tv[0]
    m.owners = &ov[0]
    m.ntokens = nt
    m.index = &iv[0]
    m.shift = 64 - bits
    m.probes = <unsigned>probes
    cdef const uint64_t *hp = _h(hashes)
    with nogil:
        sh_mprobe_replicas_batch(&m, k.nshards, hp, k.n, k.r, &k.w, k.o)
    return k.out


def memento_replicas(replacer, bucket_map, const uint64_t[::1] hashes not None, Py_ssize_t r, zones=None,
                     Py_ssize_t nzones=0):
    """Jump / MementoHash (the rehash walk): ``replacer`` has one entry per
    bucket of the b-array, -1 for a working bucket, else the working count
    after its removal (0 <= c < the bucket's count); ``bucket_map`` the shard
    of every working bucket (-1 for the removed ones)."""
    rep = _int32s(replacer, "replacer")
    cdef Py_ssize_t i, nb = rep.shape[0], nremoved = 0
    if not 1 <= nb <= 0x7FFFFFFF:
        raise ValueError(f"replacer must have 1 .. 2**31 - 1 entries, got {nb}")
    bm = _int32s(bucket_map, "bucket_map", nb)
    cdef const int32_t[::1] rv = rep
    cdef const int32_t[::1] bv = bm
    for i in range(nb):
        if rv[i] >= 0:
            nremoved += 1
    cdef Py_ssize_t nshards = nb - nremoved
    for i in range(nb):
        if rv[i] >= nb or rv[i] < -1:
            raise ValueError(f"replacer[{i}] = {rv[i]} is outside [-1, {nb})")
        if rv[i] < 0 and not 0 <= bv[i] < nshards:
            raise ValueError(f"bucket_map[{i}] = {bv[i]} is not a shard in [0, {nshards})")
    cdef _Work k = _Work(nshards, r, hashes, zones, nzones)
    cdef sh_memento m
    m.replacer = &rv[0]
    m.n = <int32_t>nb
    m.nremoved = <int32_t>nremoved
    cdef const uint64_t *hp = _h(hashes)
    with nogil:
        sh_memento_replicas_batch(&m, &bv[0], k.nshards, hp, k.n, k.r, &k.w, k.o)
    return k.out


def table_replicas(table, Py_ssize_t nshards, const uint64_t[::1] hashes not None, Py_ssize_t r, zones=None,
                   Py_ssize_t nzones=0):
    """Maglev and bucket tables: route(x) = table[x mod len(table)]."""
    cdef _Work k = _Work(nshards, r, hashes, zones, nzones)
    t = _int32s(table, "table")
    if t.shape[0] == 0:
        raise ValueError("table must not be empty")
    _in_range(t, nshards, "table")
    cdef const int32_t[::1] tv = t
    cdef const uint64_t *hp = _h(hashes)
    with nogil:
        sh_table_replicas_batch(&tv[0], <uint64_t>tv.shape[0], k.nshards, hp, k.n, k.r, &k.w, k.o)
    return k.out
