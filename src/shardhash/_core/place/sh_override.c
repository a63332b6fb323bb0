/*
 * shardhash core: per-key overrides (directory routing) (see sh_override.h and docs/routers.md).
 */
#include "sh_override.h"

/* ------------------------------------------------------------------------ */
/* Overrides                                                                 */

int32_t sh_override_find(const uint64_t *ohashes, const int32_t *oshards, size_t m, uint64_t h)
{
    size_t lo = sh_lower_bound_u64(ohashes, 0, m, h);
    if (lo < m && ohashes[lo] == h) return oshards[lo];
    return -1;
}

void sh_override_batch(const uint64_t *ohashes, const int32_t *oshards, size_t m, const uint64_t *hashes,
                       size_t n, int32_t *out)
{
    size_t i;
    if (m == 0) return;
    for (i = 0; i < n; i++) {
        uint64_t h = hashes[i];
        int32_t s;
        if (h < ohashes[0] || h > ohashes[m - 1]) continue;
        s = sh_override_find(ohashes, oshards, m, h);
        if (s >= 0) out[i] = s;
    }
}
