/*
 * shardhash core: bucket routing through a fixed table, with a division-free modulo (see sh_bucket.h and docs/routers.md).
 */
#include "sh_bucket.h"

/* ------------------------------------------------------------------------ */
/* Fast modulo                                                               */

void sh_fastmod_init(sh_fastmod *f, uint64_t d)
{
    /* M = floor((2^128 - 1) / d) + 1 (mod 2^128). */
    uint64_t q_hi, q_lo, r;
    if (d == 0) d = 1;
    q_lo = sh_div128(UINT64_MAX, UINT64_MAX, d, &q_hi, &r);
    q_lo += 1;
    if (q_lo == 0) q_hi += 1;
    f->m_lo = q_lo;
    f->m_hi = q_hi;
    f->d = d;
}

void sh_bucket_batch(const uint64_t *hashes, size_t n, const sh_fastmod *f, const int32_t *placement,
                     int32_t *out)
{
    size_t i;
    const sh_fastmod fm = *f;
    if ((fm.d & (fm.d - 1)) == 0) {
        const uint64_t mask = fm.d - 1; /* power of two: the remainder is a mask */
        for (i = 0; i < n; i++) out[i] = placement[hashes[i] & mask];
        return;
    }
    for (i = 0; i < n; i++) out[i] = placement[sh_fastmod_u64(hashes[i], &fm)];
}
