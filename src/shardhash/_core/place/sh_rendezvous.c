/*
 * shardhash core: rendezvous (highest random weight) hashing (see sh_rendezvous.h and docs/routers.md).
 */
#include "sh_rendezvous.h"
#include "sh_mix.h"

#include <math.h>

/* ------------------------------------------------------------------------ */
/* Rendezvous                                                                */

SH_FORCE_INLINE int32_t sh_rendezvous_inline(uint64_t h, const uint64_t *seeds, const double *weights,
                                             size_t nshards)
{
    size_t i, best = 0;
    if (weights == NULL) {
        uint64_t bx = sh_mix64(h ^ seeds[0]);
        for (i = 1; i < nshards; i++) {
            uint64_t x = sh_mix64(h ^ seeds[i]);
            if (x > bx) {
                bx = x;
                best = i;
            }
        }
    } else {
        double bs = -1.0;
        for (i = 0; i < nshards; i++) {
            uint64_t x = sh_mix64(h ^ seeds[i]);
            /* u in (0, 1): an odd 53-bit integer over 2^53, exact in a double. */
            double u = (double)((x >> 11) | 1u) * (1.0 / 9007199254740992.0);
            double s = -weights[i] / log(u);
            if (s > bs) {
                bs = s;
                best = i;
            }
        }
    }
    return (int32_t)best;
}

int32_t sh_rendezvous(uint64_t h, const uint64_t *seeds, const double *weights, size_t nshards)
{
    return sh_rendezvous_inline(h, seeds, weights, nshards);
}

void sh_rendezvous_batch(const uint64_t *hashes, size_t n, const uint64_t *seeds, const double *weights,
                         size_t nshards, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_rendezvous_inline(hashes[i], seeds, weights, nshards);
}
