/*
 * shardhash core: jump consistent hash over a batch of keys with AVX2
 * (x86-64, chosen at run time), bit-exact with sh_jump (see sh_place.h).
 *
 * Plain C99, no Python.h.  The AVX2 kernel is compiled only for x86-64 with
 * gcc or clang (through __attribute__((target("avx2"))), so the rest of the
 * build needs no -mavx2); everywhere else, and on CPUs without AVX2,
 * sh_jump_batch_avx2 is the scalar kernel.  Windows (mingw) is left out:
 * gcc does not realign the stack for spilled 32-byte registers there.
 *
 * Exactness.  Per step the reference computes
 *     k = k * M + 1;  j = (int64_t)((double)(b + 1) * (2^31 / (double)((k >> 33) + 1)))
 * and stops when j >= n.  Every operand is an integer below 2^53, so each
 * lane here performs the very same IEEE binary64 operations:
 *   - d = (k >> 33) + 1 <= 2^31: the bits (k >> 33) | 0x4330000000000000 are
 *     the double 2^52 + (k >> 33); subtracting 2^52 - 1 (representable)
 *     leaves (k >> 33) + 1, representable, so the subtraction is exact;
 *   - q = 2^31 / d and p = B * q, with B = b + 1 held as a double, are one
 *     correctly rounded vdivpd and vmulpd each, as in the reference (no FMA:
 *     the target is "avx2" without "fma", and intrinsics are not contracted);
 *   - j >= n  <=>  trunc(p) >= n  <=>  p >= n, because n is an integer and
 *     p >= 0 (n <= 2^31 - 1 is exact as a double);
 *   - while the key runs, p < n <= 2^31, so the next B = trunc(p) + 1
 *     (vroundpd toward zero, then + 1.0) is exact and equals the reference's
 *     (double)(j + 1).
 * A lane that stops returns b = B - 1; B + (2^52 - 1) = 2^52 + b exactly, so
 * the low 32 bits of that double are b.
 */
#include "sh_place.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(SH_NO_SIMD) && \
    !defined(_WIN32) && !defined(__CYGWIN__)
#define SH_JUMP_AVX2 1
#endif

#ifdef SH_JUMP_AVX2

#include <immintrin.h>

#define SH_JUMP_MULT UINT64_C(2862933555777941757)
#define SH_AVX2_FN __attribute__((target("avx2,popcnt")))
#define SH_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,popcnt")))

/* Number of independent groups of four lanes stepped per round: one group's
 * step is a long dependency chain (LCG, division, compare, refill), so
 * several run side by side. */
#ifndef SH_JUMP_AVX2_GROUPS
#define SH_JUMP_AVX2_GROUPS 4
#endif
/* Results wait in a small buffer (index << 32 | bucket) before they are
 * written to out[]; it is emptied when fewer than a round's worth of slots
 * are left. */
#define SH_JUMP_BUF 1024
/* Largest batch one kernel call handles (indices fit 32 bits). */
#define SH_JUMP_CHUNK ((size_t)1 << 30)

/* vpermd indices.  expand[m]: the lanes set in m take the next popcount(m)
 * input keys, lowest lane first; compress[m]: the lanes set in m move to the
 * front, lowest lane first.  Entries not selected are don't-cares. */
static const int32_t sh_jump_expand[16][8] = {
    {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 0, 1, 4, 5, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 0, 1, 6, 7}, {0, 1, 2, 3, 2, 3, 6, 7},
    {0, 1, 0, 1, 2, 3, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 0, 1},
    {0, 1, 2, 3, 4, 5, 2, 3}, {0, 1, 0, 1, 4, 5, 2, 3}, {0, 1, 2, 3, 4, 5, 4, 5},
    {0, 1, 2, 3, 0, 1, 2, 3}, {0, 1, 2, 3, 2, 3, 4, 5}, {0, 1, 0, 1, 2, 3, 4, 5},
    {0, 1, 2, 3, 4, 5, 6, 7}};
static const int32_t sh_jump_compress[16][8] = {
    {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 3, 2, 3, 4, 5, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7}, {4, 5, 2, 3, 4, 5, 6, 7}, {0, 1, 4, 5, 4, 5, 6, 7},
    {2, 3, 4, 5, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}, {6, 7, 2, 3, 4, 5, 6, 7},
    {0, 1, 6, 7, 4, 5, 6, 7}, {2, 3, 6, 7, 4, 5, 6, 7}, {0, 1, 2, 3, 6, 7, 6, 7},
    {4, 5, 6, 7, 4, 5, 6, 7}, {0, 1, 4, 5, 6, 7, 6, 7}, {2, 3, 4, 5, 6, 7, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7}};

typedef struct {
    __m256i k;  /* LCG state of each lane's key */
    __m256d b;  /* b + 1 of each lane, as a double */
    __m256i i;  /* each lane's key index << 32 */
} sh_jump_lanes;

typedef struct {
    __m256i mlo, mhi, one;  /* M's low and high halves, 1 */
    __m256i magic;          /* bits of 2^52 */
    __m256i iota;           /* {0, 1, 2, 3} << 32 */
    __m256d magic_m1;       /* 2^52 - 1 */
    __m256d two31, nb, oned;
} sh_jump_consts;

/* One step of four lanes; lanes whose key stops emit (index, bucket) at *w and
 * take the next keys from hashes[*pos ...] (four keys must be readable). */
SH_AVX2_INLINE void sh_jump_avx2_step(sh_jump_lanes *s, const sh_jump_consts *c,
                                      const uint64_t *hashes, size_t *pos, uint64_t **w)
{
    __m256i k = s->k, khi, cross, res, e, nk, ni, stopi;
    __m256d d, q, p, stop, nextb;
    unsigned m, cnt;

    /* k = k * M + 1 (mod 2^64) from three 32x32->64 products */
    khi = _mm256_srli_epi64(k, 32);
    cross = _mm256_add_epi64(_mm256_mul_epu32(khi, c->mlo), _mm256_mul_epu32(k, c->mhi));
    k = _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epu32(k, c->mlo), _mm256_slli_epi64(cross, 32)),
                         c->one);
    /* d = (k >> 33) + 1, exactly */
    d = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(k, 33), c->magic)),
                      c->magic_m1);
    q = _mm256_div_pd(c->two31, d);
    p = _mm256_mul_pd(s->b, q);
    stop = _mm256_cmp_pd(p, c->nb, _CMP_GE_OQ);
    m = (unsigned)_mm256_movemask_pd(stop);
    cnt = (unsigned)__builtin_popcount(m);

    /* emit (index << 32 | b) of the stopped lanes */
    res = _mm256_blend_epi32(_mm256_castpd_si256(_mm256_add_pd(s->b, c->magic_m1)), s->i, 0xAA);
    res = _mm256_permutevar8x32_epi32(res, _mm256_loadu_si256((const __m256i *)sh_jump_compress[m]));
    _mm256_storeu_si256((__m256i *)*w, res);
    *w += cnt;

    /* refill the stopped lanes with the next keys */
    e = _mm256_loadu_si256((const __m256i *)sh_jump_expand[m]);
    nk = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(hashes + *pos)), e);
    ni = _mm256_permutevar8x32_epi32(
        _mm256_add_epi64(_mm256_set1_epi64x((long long)((uint64_t)*pos << 32)), c->iota), e);
    *pos += cnt;
    stopi = _mm256_castpd_si256(stop);
    nextb = _mm256_add_pd(_mm256_round_pd(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), c->oned);
    s->k = _mm256_blendv_epi8(k, nk, stopi);
    s->i = _mm256_blendv_epi8(s->i, ni, stopi);
    s->b = _mm256_blendv_pd(nextb, c->oned, stop);
}

SH_AVX2_INLINE void sh_jump_avx2_init(sh_jump_lanes *s, const uint64_t *hashes, size_t *pos,
                                      const sh_jump_consts *c)
{
    s->k = _mm256_loadu_si256((const __m256i *)(hashes + *pos));
    s->b = c->oned;
    s->i = _mm256_add_epi64(_mm256_set1_epi64x((long long)((uint64_t)*pos << 32)), c->iota);
    *pos += 4;
}

/* Finish the four keys in flight one by one, from their state. */
SH_AVX2_INLINE void sh_jump_avx2_drain(const sh_jump_lanes *s, int64_t nb, int32_t *out)
{
    uint64_t k[4], idx[4];
    double b1[4];
    int l;
    _mm256_storeu_si256((__m256i *)k, s->k);
    _mm256_storeu_si256((__m256i *)idx, s->i);
    _mm256_storeu_pd(b1, s->b);
    for (l = 0; l < 4; l++) {
        uint64_t key = k[l];
        int64_t b = (int64_t)b1[l] - 1, j;
        for (;;) {
            key = key * SH_JUMP_MULT + 1;
            j = (int64_t)((double)(b + 1) * (2147483648.0 / (double)((key >> 33) + 1)));
            if (j >= nb) break;
            b = j;
        }
        out[idx[l] >> 32] = (int32_t)b;
    }
}

static void sh_jump_flush(const uint64_t *buf, size_t w, int32_t *out)
{
    size_t t;
    for (t = 0; t < w; t++) out[buf[t] >> 32] = (int32_t)(uint32_t)buf[t];
}

#define SH_JUMP_G SH_JUMP_AVX2_GROUPS

/* n >= 8 * SH_JUMP_G keys, n <= SH_JUMP_CHUNK, num_buckets >= 1. */
static SH_AVX2_FN void sh_jump_avx2_chunk(const uint64_t *hashes, size_t n, int32_t num_buckets,
                                          int32_t *out)
{
    uint64_t buf[SH_JUMP_BUF];
    uint64_t *w = buf;
    size_t pos = 0;
    sh_jump_consts c;
    sh_jump_lanes s[SH_JUMP_G];
    int g;
    c.mlo = _mm256_set1_epi64x((long long)(SH_JUMP_MULT & 0xffffffffu));
    c.mhi = _mm256_set1_epi64x((long long)(SH_JUMP_MULT >> 32));
    c.one = _mm256_set1_epi64x(1);
    c.magic = _mm256_set1_epi64x(0x4330000000000000LL);
    c.iota = _mm256_set_epi64x(3LL << 32, 2LL << 32, 1LL << 32, 0);
    c.magic_m1 = _mm256_set1_pd(4503599627370495.0);
    c.two31 = _mm256_set1_pd(2147483648.0);
    c.nb = _mm256_set1_pd((double)num_buckets);
    c.oned = _mm256_set1_pd(1.0);

    for (g = 0; g < SH_JUMP_G; g++) sh_jump_avx2_init(&s[g], hashes, &pos, &c);
    while (pos + 4 * SH_JUMP_G <= n) {
        if (w - buf > SH_JUMP_BUF - 4 * SH_JUMP_G) {
            sh_jump_flush(buf, (size_t)(w - buf), out);
            w = buf;
        }
        for (g = 0; g < SH_JUMP_G; g++) sh_jump_avx2_step(&s[g], &c, hashes, &pos, &w);
    }
    sh_jump_flush(buf, (size_t)(w - buf), out);
    for (g = 0; g < SH_JUMP_G; g++) sh_jump_avx2_drain(&s[g], num_buckets, out);
    sh_jump_batch_scalar(hashes + pos, n - pos, num_buckets, out + pos);
}

static int sh_jump_avx2_cpu = -1;

int sh_jump_avx2_available(void)
{
    int have = sh_jump_avx2_cpu;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
        sh_jump_avx2_cpu = have;
    }
    return have;
}

void sh_jump_batch_avx2(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out)
{
    if (num_buckets < 1 || n < 16 * SH_JUMP_G || !sh_jump_avx2_available()) {
        sh_jump_batch_scalar(hashes, n, num_buckets, out);
        return;
    }
    while (n >= 16 * SH_JUMP_G) {
        size_t m = n < SH_JUMP_CHUNK ? n : SH_JUMP_CHUNK;
        sh_jump_avx2_chunk(hashes, m, num_buckets, out);
        hashes += m;
        out += m;
        n -= m;
    }
    sh_jump_batch_scalar(hashes, n, num_buckets, out);
}

#else /* no AVX2 kernel in this build */

int sh_jump_avx2_available(void)
{
    return 0;
}

void sh_jump_batch_avx2(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out)
{
    sh_jump_batch_scalar(hashes, n, num_buckets, out);
}

#endif
