/*
 * shardhash core: bucket routing through a fixed table, with a division-free modulo.
 *
 * Part of the placement kernels (sh_place.h): plain C99, no Python.h.
 */
#ifndef SH_BUCKET_H
#define SH_BUCKET_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Exact 64-bit modulo by a fixed divisor without a division instruction
 * (Lemire, Kaser & Kurz 2019, "Faster remainder by direct computation"):
 * M = floor((2^128 - 1) / d) + 1 taken mod 2^128; a % d = ((M * a) mod 2^128) * d >> 128.
 */
typedef struct {
    uint64_t m_lo, m_hi; /* the 128-bit constant M */
    uint64_t d;          /* divisor, >= 1 */
} sh_fastmod;

void sh_fastmod_init(sh_fastmod *f, uint64_t d);

SH_FORCE_INLINE uint64_t sh_fastmod_u64(uint64_t a, const sh_fastmod *f)
{
    uint64_t lb_hi, lb_lo, p_hi, q_hi, q_lo, carry;
    /* lowbits = M * a mod 2^128 */
    lb_lo = sh_mul128(f->m_lo, a, &lb_hi);
    lb_hi += f->m_hi * a;
    /* (lowbits * d) >> 128 */
    (void)sh_mul128(lb_lo, f->d, &p_hi);
    q_lo = sh_mul128(lb_hi, f->d, &q_hi);
    carry = (q_lo + p_hi) < q_lo;
    return q_hi + carry;
}

/* Bucket routing: out[i] = placement[hashes[i] % f->d]. */
void sh_bucket_batch(const uint64_t *hashes, size_t n, const sh_fastmod *f, const int32_t *placement,
                     int32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_BUCKET_H */
