/*
 * shardhash core: per-key overrides (directory routing).
 *
 * Part of the placement kernels (sh_place.h): plain C99, no Python.h.
 */
#ifndef SH_OVERRIDE_H
#define SH_OVERRIDE_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Overrides (directory routing): ohashes sorted strictly increasing;
 * a hash equal to ohashes[j] routes to oshards[j].
 */
int32_t sh_override_find(const uint64_t *ohashes, const int32_t *oshards, size_t m, uint64_t h);
void sh_override_batch(const uint64_t *ohashes, const int32_t *oshards, size_t m, const uint64_t *hashes,
                       size_t n, int32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_OVERRIDE_H */
