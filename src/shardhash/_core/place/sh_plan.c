/* shardhash core: counting kernels for migration plans (see sh_plan.h). */
#include <stdlib.h>

#include "sh_plan.h"

/* Consecutive keys often land in the same cell; four interleaved copies of
 * the matrix break the store-to-load dependency between them.  Only worth it
 * (and only done) for matrices that fit in cache. */
#define SH_PLAN_LANES          4
#define SH_PLAN_LANE_MAX_CELLS 4096

static int64_t sh_plan_count_1(const int32_t *old_idx, const int32_t *new_idx, size_t n, uint32_t uo,
                               uint32_t un, int64_t *matrix)
{
    size_t i;
    for (i = 0; i < n; i++) {
        /* Casting to unsigned folds the negative check into one compare. */
        uint32_t o = (uint32_t)old_idx[i], w = (uint32_t)new_idx[i];
        if (o >= uo || w >= un) {
            return (int64_t)i;
        }
        matrix[(size_t)o * un + w] += 1;
    }
    return -1;
}

int64_t sh_plan_count(const int32_t *old_idx, const int32_t *new_idx, size_t n, int32_t n_old, int32_t n_new,
                      int64_t *matrix)
{
    const uint32_t uo = (uint32_t)n_old, un = (uint32_t)n_new;
    const size_t cells = (size_t)uo * un;
    int64_t *lanes;
    size_t i, c, blocks;
    int64_t bad = -1;

    if (n_old <= 0 || n_new <= 0) {
        return n ? 0 : -1;
    }
    if (n < 1024 || cells > SH_PLAN_LANE_MAX_CELLS) {
        return sh_plan_count_1(old_idx, new_idx, n, uo, un, matrix);
    }
    lanes = (int64_t *)calloc(cells * SH_PLAN_LANES, sizeof(int64_t));
    if (lanes == NULL) {
        return sh_plan_count_1(old_idx, new_idx, n, uo, un, matrix);
    }
    blocks = n / SH_PLAN_LANES;
    for (i = 0; i < blocks; i++) {
        size_t j = i * SH_PLAN_LANES;
        uint32_t o0 = (uint32_t)old_idx[j], w0 = (uint32_t)new_idx[j];
        uint32_t o1 = (uint32_t)old_idx[j + 1], w1 = (uint32_t)new_idx[j + 1];
        uint32_t o2 = (uint32_t)old_idx[j + 2], w2 = (uint32_t)new_idx[j + 2];
        uint32_t o3 = (uint32_t)old_idx[j + 3], w3 = (uint32_t)new_idx[j + 3];
        if ((o0 >= uo) | (w0 >= un) | (o1 >= uo) | (w1 >= un) | (o2 >= uo) | (w2 >= un) | (o3 >= uo) |
            (w3 >= un)) {
            /* Redo this block one by one to find the exact position. */
            bad = sh_plan_count_1(old_idx + j, new_idx + j, SH_PLAN_LANES, uo, un, matrix);
            bad += (int64_t)j;
            break;
        }
        lanes[(size_t)o0 * un + w0] += 1;
        lanes[cells + (size_t)o1 * un + w1] += 1;
        lanes[2 * cells + (size_t)o2 * un + w2] += 1;
        lanes[3 * cells + (size_t)o3 * un + w3] += 1;
    }
    for (c = 0; c < cells; c++) {
        matrix[c] += lanes[c] + lanes[cells + c] + lanes[2 * cells + c] + lanes[3 * cells + c];
    }
    free(lanes);
    if (bad >= 0) {
        return bad;
    }
    i = blocks * SH_PLAN_LANES;
    bad = sh_plan_count_1(old_idx + i, new_idx + i, n - i, uo, un, matrix);
    return bad < 0 ? -1 : bad + (int64_t)i;
}

int64_t sh_plan_count_weighted(const int32_t *old_idx, const int32_t *new_idx, const double *weights,
                               size_t n, int32_t n_old, int32_t n_new, int64_t *matrix, double *wmatrix)
{
    size_t i;
    const uint32_t uo = (uint32_t)n_old, un = (uint32_t)n_new;
    if (n_old <= 0 || n_new <= 0) {
        return n ? 0 : -1;
    }
    for (i = 0; i < n; i++) {
        uint32_t o = (uint32_t)old_idx[i], w = (uint32_t)new_idx[i];
        size_t cell;
        if (o >= uo || w >= un) {
            return (int64_t)i;
        }
        cell = (size_t)o * un + w;
        matrix[cell] += 1;
        wmatrix[cell] += weights[i];
    }
    return -1;
}
