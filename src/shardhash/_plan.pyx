# distutils: sources = [src/shardhash/_core/place/sh_plan.c]
"""Compiled counting kernels for shardhash.plan (private)."""

from libc.stdint cimport int32_t, int64_t

from shardhash._common cimport sh_job, run_chunks, chunk_bounds, address, SH_OK

import numpy as np

__all__ = ["count_moves"]


cdef extern from "sh_plan.h" nogil:
    int64_t sh_plan_count(const int32_t *old_idx, const int32_t *new_idx, size_t n,
                          int32_t n_old, int32_t n_new, int64_t *matrix)
    int64_t sh_plan_count_weighted(const int32_t *old_idx, const int32_t *new_idx,
                                   const double *weights, size_t n,
                                   int32_t n_old, int32_t n_new,
                                   int64_t *matrix, double *wmatrix)


ctypedef struct _moves:
    const int32_t *old_idx
    const int32_t *new_idx
    const double *weights     # NULL: unweighted
    int32_t n_old
    int32_t n_new


cdef ptrdiff_t _k_count(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """Count pairs [s, e) into chunk c's own matrix (job.out) and weight
    matrix (job.scratch); the binding adds the chunks up afterwards."""
    cdef const _moves *mv = <const _moves *>j.ctx
    cdef size_t cells = <size_t>mv.n_old * <size_t>mv.n_new
    cdef int64_t *m = <int64_t *>j.out + <size_t>c * cells
    cdef int64_t bad
    if mv.weights != NULL:
        bad = sh_plan_count_weighted(mv.old_idx + s, mv.new_idx + s, mv.weights + s, <size_t>(e - s),
                                     mv.n_old, mv.n_new, m, <double *>j.scratch + <size_t>c * cells)
    else:
        bad = sh_plan_count(mv.old_idx + s, mv.new_idx + s, <size_t>(e - s), mv.n_old, mv.n_new, m)
    return s + bad if bad >= 0 else SH_OK


def count_moves(const int32_t[::1] old_idx not None, const int32_t[::1] new_idx not None,
                int64_t[:, ::1] matrix not None, const double[::1] weights=None,
                double[:, ::1] wmatrix=None, threads=None):
    """Add the (old, new) pairs to ``matrix`` (and weights to ``wmatrix``).

    ``matrix`` is n_old x n_new int64; indices outside it raise ValueError
    naming the position.  Runs on several threads for large inputs.
    """
    cdef Py_ssize_t n = old_idx.shape[0]
    if new_idx.shape[0] != n:
        raise ValueError(f"old and new index arrays differ in length ({n} vs {new_idx.shape[0]})")
    cdef int32_t n_old = <int32_t>matrix.shape[0]
    cdef int32_t n_new = <int32_t>matrix.shape[1]
    if weights is not None:
        if weights.shape[0] != n:
            raise ValueError(f"weights has {weights.shape[0]} values for {n} keys")
        if wmatrix is None or wmatrix.shape[0] != n_old or wmatrix.shape[1] != n_new:
            raise ValueError("wmatrix must be given with the same shape as matrix when weights are")
    bounds = chunk_bounds(n, threads)
    if n == 0:
        return
    cdef _moves mv
    mv.old_idx = &old_idx[0]
    mv.new_idx = &new_idx[0]
    mv.weights = &weights[0] if weights is not None else NULL
    mv.n_old = n_old
    mv.n_new = n_new
    # One matrix per chunk, so that no two threads add into the same cells.
    parts = np.zeros((len(bounds), n_old, n_new), dtype=np.int64)
    wparts = np.zeros((len(bounds), n_old, n_new), dtype=np.float64) if weights is not None else None
    cdef sh_job job
    job.ctx = &mv
    job.out = address(parts.reshape(-1))
    job.scratch = address(wparts.reshape(-1)) if wparts is not None else NULL
    cdef ptrdiff_t bad = run_chunks(_k_count, &job, bounds)
    if bad >= 0:
        raise ValueError(
            f"shard index out of range at position {bad}: old={old_idx[bad]} (of {n_old}), "
            f"new={new_idx[bad]} (of {n_new})")
    mat_np = np.asarray(matrix)
    mat_np += parts.sum(axis=0)
    if wparts is not None:
        wmat_np = np.asarray(wmatrix)
        wmat_np += wparts.sum(axis=0)
