/*
 * shardhash core: jump consistent hash (portable, SSE4.1, AVX2 and NEON kernels) (see sh_jump.h and docs/routers.md).
 */
#include "sh_jump.h"

/* ------------------------------------------------------------------------ */
/* Jump consistent hash                                                      */

#define SH_JUMP_MULT UINT64_C(2862933555777941757)

/* One key at a time the cost is latency: each step's bucket b feeds the
 * next step through int -> double -> int conversions.  With SSE4.1 (chosen
 * at run time on x86-64 by sh_place_init, see sh_cpu.h) the loop keeps b + 1
 * as a double and truncates with roundsd, a shorter chain, and is bit-exact:
 * while the key runs, p < num_buckets <= 2^31, so trunc(p) + 1 is exact and
 * equals the reference's (double)(j + 1); j >= n <=> p >= n since n is an
 * integer and p >= 0; and (b + 1) * q is the same correctly rounded product. */
#ifdef SH_X86_SSE41
#  include <smmintrin.h>

SH_TARGET("sse4.1")
static int32_t sh_jump_sse41(uint64_t key, int32_t num_buckets)
{
    const double n = (double)num_buckets;
    double bp1 = 1.0, p; /* b + 1, after the first step's b = 0 */
    __m128d v;
    for (;;) {
        key = key * SH_JUMP_MULT + 1;
        p = bp1 * (2147483648.0 / (double)((key >> 33) + 1));
        if (p >= n) return (int32_t)(bp1 - 1.0);
        v = _mm_set_sd(p);
        bp1 = _mm_cvtsd_f64(_mm_round_sd(v, v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)) + 1.0;
    }
}
#endif

/* The SH_CPU_* kernels chosen by sh_place_init; 0 (the portable kernels)
 * until it runs.  Written only by sh_place_init, which the caller runs once
 * before any other thread can run a kernel (the Python module does at
 * import), so the kernels only ever read it. */
static unsigned sh_place_cpu = 0;

void sh_place_init(void)
{
    sh_place_cpu = sh_cpu_detect();
}

unsigned sh_place_features(void)
{
    return sh_place_cpu;
}

int32_t sh_jump_reference(uint64_t key, int32_t num_buckets)
{
    int64_t b = -1, j = 0;
    while (j < num_buckets) {
        b = j;
        key = key * SH_JUMP_MULT + 1;
        j = (int64_t)((double)(b + 1) * (2147483648.0 / (double)((key >> 33) + 1)));
    }
    return (int32_t)b;
}

int32_t sh_jump(uint64_t key, int32_t num_buckets)
{
#ifdef SH_X86_SSE41
    if ((sh_place_cpu & SH_CPU_SSE41) && num_buckets >= 1) return sh_jump_sse41(key, num_buckets);
#endif
    return sh_jump_reference(key, num_buckets);
}

#define SH_JUMP_LANES 8

#define SH_JUMP_STEP(k, b, j)                                                            \
    do {                                                                                 \
        (b) = (j);                                                                       \
        (k) = (k) * SH_JUMP_MULT + 1;                                                    \
        (j) = (int64_t)((double)((b) + 1) * (2147483648.0 / (double)(((k) >> 33) + 1))); \
    } while (0)

void sh_jump_batch(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out)
{
    /* sh_jump_avx2.c: the AVX2 kernel where the build and the CPU have it;
     * sh_jump_neon.c: the NEON kernel on aarch64; else sh_jump_batch_scalar. */
    if (sh_place_cpu & SH_CPU_AVX2)
        sh_jump_batch_avx2(hashes, n, num_buckets, out);
    else
#ifdef SH_ARM_NEON
        sh_jump_batch_neon(hashes, n, num_buckets, out);
#else
        sh_jump_batch_scalar(hashes, n, num_buckets, out);
#endif
}

void sh_jump_batch_scalar(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out)
{
    /* Eight independent keys are in flight at once, so their divisions
     * overlap in the pipeline.  A lane whose key is finished writes its
     * bucket and takes the next key at once (no lane waits for the slowest
     * key of a group).  The arithmetic of each step is exactly sh_jump's. */
    uint64_t k[SH_JUMP_LANES];
    int64_t b[SH_JUMP_LANES], j[SH_JUMP_LANES];
    size_t at[SH_JUMP_LANES], next;
    const int64_t nb = num_buckets;
    int l, m;
    if (num_buckets < 1) { /* the reference's answer: no step runs, b stays -1 */
        for (next = 0; next < n; next++) out[next] = -1;
        return;
    }
    if (n < 2 * SH_JUMP_LANES) {
        for (next = 0; next < n; next++) out[next] = sh_jump(hashes[next], num_buckets);
        return;
    }
    for (l = 0; l < SH_JUMP_LANES; l++) {
        k[l] = hashes[l];
        b[l] = -1;
        j[l] = 0;
        at[l] = (size_t)l;
    }
    next = SH_JUMP_LANES;
    for (;;) {
        for (l = 0; l < SH_JUMP_LANES; l++) {
            if (j[l] >= nb) {
                out[at[l]] = (int32_t)b[l];
                if (next == n) goto drain;
                at[l] = next;
                k[l] = hashes[next++];
                b[l] = -1;
                j[l] = 0;
            }
            SH_JUMP_STEP(k[l], b[l], j[l]);
        }
    }
drain:
    /* Lane l is written and no key is left: finish the others one by one. */
    for (m = 0; m < SH_JUMP_LANES; m++) {
        if (m == l) continue;
        while (j[m] < nb) SH_JUMP_STEP(k[m], b[m], j[m]);
        out[at[m]] = (int32_t)b[m];
    }
}
