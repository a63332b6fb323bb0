/*
 * shardhash core: rendezvous (highest random weight) hashing.
 *
 * Part of the placement kernels (sh_place.h): plain C99, no Python.h.
 */
#ifndef SH_RENDEZVOUS_H
#define SH_RENDEZVOUS_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Rendezvous (highest random weight).  seeds[i] = mix64(shard i's identity
 * hash); the draw of shard i for key hash h is x = mix64(h ^ seeds[i]).
 * Unweighted: the shard with the largest x wins.  Weighted (logarithmic
 * method): u = ((x >> 11) + 0.5) / 2^53 in (0, 1), score = -w_i / ln(u),
 * largest score wins.  Ties go to the lowest index.
 */
int32_t sh_rendezvous(uint64_t h, const uint64_t *seeds, const double *weights, size_t nshards);
void sh_rendezvous_batch(const uint64_t *hashes, size_t n, const uint64_t *seeds, const double *weights,
                         size_t nshards, int32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_RENDEZVOUS_H */
