/*
 * shardhash core: Maglev lookup-table population.
 *
 * Part of the placement kernels (sh_place.h): plain C99, no Python.h.
 */
#ifndef SH_MAGLEV_H
#define SH_MAGLEV_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Maglev (Eisenbud et al. 2016).  shard_hashes[i] is shard i's identity hash;
 * offset_i = mix64(shard_hash ^ SH_MAGLEV_OFFSET_SALT) % m,
 * skip_i = mix64(shard_hash ^ SH_MAGLEV_SKIP_SALT) % (m - 1) + 1.
 * weights: NULL for equal weights, else relative weights in (0, 1] (each
 * shard's weight divided by the largest).  m must be prime and >= nshards.
 * Workspaces: pos (nshards uint64) and credit (nshards doubles).
 * Returns 0 on success, -1 on bad arguments.
 */
#define SH_MAGLEV_OFFSET_SALT UINT64_C(0x6f66667365743a31) /* "offset:1" */
#define SH_MAGLEV_SKIP_SALT   UINT64_C(0x736b69703a312121) /* "skip:1!!" */
int sh_maglev_populate(const uint64_t *shard_hashes, const double *weights, size_t nshards, uint64_t m,
                       int32_t *table, uint64_t *pos, double *credit);

#ifdef __cplusplus
}
#endif

#endif /* SH_MAGLEV_H */
