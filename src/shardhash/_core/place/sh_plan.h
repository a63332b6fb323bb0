/*
 * shardhash core: counting kernels for migration plans.
 *
 * Given, for each key, its shard index under the old topology and under the
 * new one, fill the old x new move matrix (row-major, n_old x n_new) and,
 * optionally, the same matrix summed over per-key weights.  One pass, no
 * temporaries, indices checked on the way.
 */
#ifndef SH_PLAN_H
#define SH_PLAN_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds to matrix[old[i] * n_new + new_[i]] for i < n.  Returns -1 on success,
 * or the position of the first index outside [0, n_old) x [0, n_new) (the
 * counts before that position have been added). */
int64_t sh_plan_count(const int32_t *old_idx, const int32_t *new_idx, size_t n, int32_t n_old, int32_t n_new,
                      int64_t *matrix);

/* The same, also adding weights[i] to wmatrix. */
int64_t sh_plan_count_weighted(const int32_t *old_idx, const int32_t *new_idx, const double *weights,
                               size_t n, int32_t n_old, int32_t n_new, int64_t *matrix, double *wmatrix);

#ifdef __cplusplus
}
#endif

#endif /* SH_PLAN_H */
