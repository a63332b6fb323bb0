/*
 * shardhash core: jump consistent hash over a batch of keys with aarch64
 * NEON, bit-exact with sh_jump_reference (see sh_place.h).
 *
 * Plain C99, no Python.h.  Compiled where sh_cpu.h defines SH_ARM_NEON
 * (aarch64 with gcc or clang: NEON is part of the architecture, so there is
 * no run-time check); elsewhere this file defines only
 * sh_jump_neon_available, which answers 0, and there is no
 * sh_jump_batch_neon (sh_jump_batch runs the portable kernel instead).
 *
 * A key's steps form one long dependency chain whose slowest link is the
 * double division 2^31 / d.  Four keys are in flight; their 64-bit LCG steps
 * run in general registers (NEON has no 64x64-bit multiply) and their
 * divisions two per fdiv (float64x2), so two divisions cost about one.
 *
 * Exactness, per step (as in sh_jump_avx2.c):
 *   - d = (k >> 33) + 1 <= 2^31 is an integer add, then an exact conversion
 *     (ucvtf of a value below 2^53);
 *   - q = 2^31 / d and p = B * q, with B = b + 1 held as a double, are one
 *     correctly rounded fdiv and fmul each, as in the reference (separate
 *     intrinsics, never fused: there is no add after the multiply);
 *   - j >= n  <=>  p >= n, because n is an integer and p >= 0;
 *   - while the key runs, p < n <= 2^31, so the next B = trunc(p) + 1
 *     (frintz, then + 1.0) is exact and equals the reference's (double)(j + 1).
 * A key that stops returns B - 1, exact.
 */
#include "sh_jump.h"

#ifdef SH_ARM_NEON

#  include <arm_neon.h>

#  define SH_JUMP_MULT  UINT64_C(2862933555777941757)
#  define SH_NEON_LANES 4

int sh_jump_neon_available(void)
{
    return 1;
}

/* Finish one key from its state: k (before the next step's LCG), B = b + 1. */
static int32_t sh_jump_neon_finish(uint64_t k, double bp1, double nd)
{
    double p;
    for (;;) {
        k = k * SH_JUMP_MULT + 1;
        p = bp1 * (2147483648.0 / (double)((k >> 33) + 1));
        if (p >= nd) return (int32_t)(bp1 - 1.0);
        bp1 = (double)(int64_t)p + 1.0; /* p < 2^31: truncation is exact */
    }
}

void sh_jump_batch_neon(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out)
{
    uint64_t k[SH_NEON_LANES];
    double bp[SH_NEON_LANES], p[SH_NEON_LANES], nbp[SH_NEON_LANES];
    size_t at[SH_NEON_LANES], next;
    const double nd = (double)num_buckets;
    const float64x2_t two31 = vdupq_n_f64(2147483648.0), oned = vdupq_n_f64(1.0);
    const uint64x2_t one = vdupq_n_u64(1);
    int l, m, v;

    if (num_buckets < 1 || n < 4 * SH_NEON_LANES) {
        sh_jump_batch_scalar(hashes, n, num_buckets, out);
        return;
    }
    for (l = 0; l < SH_NEON_LANES; l++) {
        k[l] = hashes[l];
        bp[l] = 1.0;
        at[l] = (size_t)l;
    }
    next = SH_NEON_LANES;
    for (;;) {
        /* one step of every lane: LCG in scalar, division and product in
         * pairs; p and trunc(p) + 1 go back to memory for the lane logic */
        for (l = 0; l < SH_NEON_LANES; l++) k[l] = k[l] * SH_JUMP_MULT + 1;
        for (v = 0; v < SH_NEON_LANES; v += 2) {
            const uint64x2_t kv = vld1q_u64(&k[v]);
            const float64x2_t d = vcvtq_f64_u64(vaddq_u64(vshrq_n_u64(kv, 33), one));
            const float64x2_t pv = vmulq_f64(vld1q_f64(&bp[v]), vdivq_f64(two31, d));
            vst1q_f64(&p[v], pv);
            vst1q_f64(&nbp[v], vaddq_f64(vrndq_f64(pv), oned));
        }
        for (l = 0; l < SH_NEON_LANES; l++) {
            if (p[l] >= nd) {
                out[at[l]] = (int32_t)(bp[l] - 1.0);
                if (next == n) goto drain;
                at[l] = next;
                k[l] = hashes[next++];
                bp[l] = 1.0;
            } else {
                bp[l] = nbp[l];
            }
        }
    }
drain:
    /* Lane l is written and no key is left.  Lanes below l have taken this
     * step; lanes above it computed it (p, nbp) but have not applied it. */
    for (m = 0; m < SH_NEON_LANES; m++) {
        if (m == l) continue;
        if (m > l) {
            if (p[m] >= nd) {
                out[at[m]] = (int32_t)(bp[m] - 1.0);
                continue;
            }
            bp[m] = nbp[m];
        }
        out[at[m]] = sh_jump_neon_finish(k[m], bp[m], nd);
    }
}

#else /* no NEON kernel in this build */

int sh_jump_neon_available(void)
{
    return 0;
}

#endif
