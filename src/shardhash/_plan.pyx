# distutils: sources = [src/shardhash/_core/place/sh_plan.c]
"""Compiled counting kernels for shardhash.plan (private)."""

from libc.stdint cimport int32_t, int64_t

import numpy as np

from shardhash._parallel import parallel_for


cdef extern from "sh_plan.h" nogil:
    int64_t sh_plan_count(const int32_t *old_idx, const int32_t *new_idx, size_t n,
                          int32_t n_old, int32_t n_new, int64_t *matrix)
    int64_t sh_plan_count_weighted(const int32_t *old_idx, const int32_t *new_idx,
                                   const double *weights, size_t n,
                                   int32_t n_old, int32_t n_new,
                                   int64_t *matrix, double *wmatrix)


def count_moves(const int32_t[::1] old_idx, const int32_t[::1] new_idx,
                int64_t[:, ::1] matrix, const double[::1] weights=None,
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
    if n == 0:
        return
    parts = []
    errors = []
    mat_np = np.asarray(matrix)
    wmat_np = None if wmatrix is None else np.asarray(wmatrix)

    def body(Py_ssize_t start, Py_ssize_t stop):
        cdef int64_t[:, ::1] m = np.zeros((n_old, n_new), dtype=np.int64)
        cdef double[:, ::1] wm
        cdef int64_t bad
        if weights is not None:
            wm = np.zeros((n_old, n_new), dtype=np.float64)
            with nogil:
                bad = sh_plan_count_weighted(&old_idx[start], &new_idx[start], &weights[start],
                                             <size_t>(stop - start), n_old, n_new,
                                             &m[0, 0], &wm[0, 0])
            parts.append((np.asarray(m), np.asarray(wm)))
        else:
            with nogil:
                bad = sh_plan_count(&old_idx[start], &new_idx[start], <size_t>(stop - start),
                                    n_old, n_new, &m[0, 0])
            parts.append((np.asarray(m), None))
        if bad >= 0:
            errors.append(start + bad)

    parallel_for(n, threads, body)
    if errors:
        pos = min(errors)
        raise ValueError(
            f"shard index out of range at position {pos}: old={old_idx[pos]} (of {n_old}), "
            f"new={new_idx[pos]} (of {n_new})")
    for m_part, w_part in parts:
        mat_np += m_part
        if w_part is not None:
            wmat_np += w_part
