/*
 * shardhash core: jump consistent hash over a batch of keys with AVX2
 * (x86-64, chosen at run time), bit-exact with sh_jump (see sh_place.h).
 *
 * Plain C99, no Python.h.  The AVX2 kernel is compiled where sh_cpu.h
 * defines SH_X86_AVX2 (x86-64 with clang, MSVC, or gcc outside Windows; it
 * explains why gcc on Windows is left out) through SH_TARGET("avx2"), so the
 * rest of the build needs no -mavx2; sh_place_init chooses it when cpuid
 * and xgetbv report AVX2.  Everywhere else, and on CPUs without AVX2,
 * sh_jump_batch_avx2 is the scalar kernel.
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
 *
 * A lane whose key stops in the first of a round's two steps keeps its B
 * through the second (blend), so the b it returns is the one of its stop.
 *
 * Layout.  Three groups of four 64-bit lanes (twelve keys in flight) are
 * stepped in turn, so that their divisions and dependency chains overlap;
 * each round makes two steps of every lane.  A lane whose key stopped takes
 * a new key at the end of the round, without a branch.
 * Each 128-bit half of a group reads its own stream of consecutive keys, so
 * the refill only moves elements within a half (vpermilpd).  Every round
 * stores the (index, b) pairs of a group's lanes 0 .. h (h: the highest lane
 * that stops) to a small buffer, which is then replayed into out[] in order:
 * a lane that has not stopped writes an intermediate b of its own key, and
 * the key's final write comes later.  When a stream runs short, the keys in
 * flight and the rest of the streams go through the scalar code.
 */
#include "sh_jump.h"

#ifdef SH_X86_AVX2
#  define SH_JUMP_AVX2 1
#endif

#ifdef SH_JUMP_AVX2

#  include <immintrin.h>

#  define SH_JUMP_MULT UINT64_C(2862933555777941757)
#  define SH_AVX2_FN   SH_TARGET("avx2")
#  if defined(__GNUC__) || defined(__clang__)
#    define SH_AVX2_INLINE static inline __attribute__((always_inline, target("avx2")))
#  else
#    define SH_AVX2_INLINE static __forceinline
#  endif

/* Two unaligned 128-bit loads into one register (lo: lanes 0-1, hi: lanes
 * 2-3), as gcc and clang define _mm256_loadu2_m128i (which older gcc and
 * MSVC lack). */
#  define SH_LOAD2(hi, lo) \
      _mm256_insertf128_si256(_mm256_castsi128_si256(_mm_loadu_si128(lo)), _mm_loadu_si128(hi), 1)

/* Number of groups of four lanes stepped per round: one group's round is a
 * long dependency chain (LCG, division, compare, refill), so several run side
 * by side (3 was the fastest on Zen 3; more groups spill registers). */
#  ifndef SH_JUMP_AVX2_GROUPS
#    define SH_JUMP_AVX2_GROUPS 3
#  endif
#  define SH_JUMP_G     SH_JUMP_AVX2_GROUPS
/* (index << 32 | bucket) pairs wait in a small buffer before they are
 * written to out[]; it is replayed when fewer than a round's worth of slots
 * are left. */
#  define SH_JUMP_BUF   1024
/* Largest batch one kernel call handles (indices fit 32 bits). */
#  define SH_JUMP_CHUNK ((size_t)1 << 30)
/* Smaller batches go to the portable kernel: the start and the finish (keys
 * in flight, uneven ends of the streams) cost about a microsecond, and below
 * ~100 keys (100 and 1000 buckets) the AVX2 kernel was slower. */
#  define SH_JUMP_MIN   128

/* Each 128-bit half of a group (two lanes) has its own input stream, so
 * that refilling only moves 64-bit elements within a half (vpermilpd, cheap)
 * instead of across the register (vpermd: ~8 cycles of latency on Zen 3).
 * sh_jump_count[m]: for the stop mask m of a group (bit l = lane l),
 * the number of keys each half takes, << 32, in both lanes of the half. */
/* clang-format off */
#define SH_JC(lo, hi) {(int64_t)(lo) << 32, (int64_t)(lo) << 32, (int64_t)(hi) << 32, (int64_t)(hi) << 32}
static const int64_t sh_jump_count[16][4] = {
    SH_JC(0, 0), SH_JC(1, 0), SH_JC(1, 0), SH_JC(2, 0), SH_JC(0, 1), SH_JC(1, 1), SH_JC(1, 1), SH_JC(2, 1),
    SH_JC(0, 1), SH_JC(1, 1), SH_JC(1, 1), SH_JC(2, 1), SH_JC(0, 2), SH_JC(1, 2), SH_JC(1, 2), SH_JC(2, 2)};
/* clang-format on */
#  undef SH_JC
/* For a stop mask m: keys taken by the low and high half; 1 + the highest
 * lane set (0 for none). */
static const uint8_t sh_jump_lo[16] = {0, 1, 1, 2, 0, 1, 1, 2, 0, 1, 1, 2, 0, 1, 1, 2};
static const uint8_t sh_jump_hi[16] = {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2};
static const uint8_t sh_jump_upto[16] = {0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4};

typedef struct {
    __m256i k;     /* LCG state of each lane's key */
    __m256d b;     /* b + 1 of each lane, as a double */
    __m256i i;     /* each lane's key index << 32 */
    __m256i ibase; /* indices << 32 of the next two keys of each half's stream */
} sh_jump_lanes;

typedef struct {
    __m256i mlo, mhi, one; /* M's low and high halves, 1 */
    __m256i magic;         /* bits of 2^52 */
    __m256d magic_m1;      /* 2^52 - 1 */
    __m256d two31, nb, oned;
} sh_jump_consts;

/* k * M + 1 (mod 2^64) from three 32x32->64 products */
SH_AVX2_INLINE __m256i sh_jump_lcg(__m256i k, const sh_jump_consts *c)
{
    __m256i cross =
        _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(k, 32), c->mlo), _mm256_mul_epu32(k, c->mhi));
    return _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epu32(k, c->mlo), _mm256_slli_epi64(cross, 32)),
                            c->one);
}

/* 2^31 / ((k >> 33) + 1), each operation exact except the correctly rounded
 * division (the reference's) */
SH_AVX2_INLINE __m256d sh_jump_q(__m256i k, const sh_jump_consts *c)
{
    __m256d d =
        _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(k, 33), c->magic)), c->magic_m1);
    return _mm256_div_pd(c->two31, d);
}

/* One round of a group: two steps of every lane.  A lane whose key stops in
 * the first step keeps its b through the second (which is wasted, half a
 * step per key on average); lanes whose key stopped emit (index << 32 | b)
 * at *w and take the next keys of their half's stream.  The refill and the
 * emission cost as much as the arithmetic of a step, so they are done once
 * per two steps.  in[0] and in[1] are the positions of the low and high
 * half's streams (four keys readable from each). */
SH_AVX2_INLINE void sh_jump_avx2_round(sh_jump_lanes *s, const sh_jump_consts *c, const uint64_t *hashes,
                                       size_t *in, uint64_t **w)
{
    __m256i k1, k2, res, stopi, ctl, next;
    __m256d q1, q2, p1, p2, stop1, stop, b1;
    unsigned m;

    /* the LCG and the divisions of both steps do not depend on b */
    k1 = sh_jump_lcg(s->k, c);
    k2 = sh_jump_lcg(k1, c);
    q1 = sh_jump_q(k1, c);
    q2 = sh_jump_q(k2, c);
    /* first step: b + 1 becomes trunc(p1) + 1, unless the key stops */
    p1 = _mm256_mul_pd(s->b, q1);
    stop1 = _mm256_cmp_pd(p1, c->nb, _CMP_GE_OQ);
    b1 = _mm256_blendv_pd(_mm256_add_pd(_mm256_round_pd(p1, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), c->oned),
                          s->b, stop1);
    /* second step */
    p2 = _mm256_mul_pd(b1, q2);
    stop = _mm256_or_pd(_mm256_cmp_pd(p2, c->nb, _CMP_GE_OQ), stop1);
    stopi = _mm256_castpd_si256(stop);
    m = (unsigned)_mm256_movemask_pd(stop);

    /* emit (index << 32 | b) of lanes 0 .. h, h the highest stopping lane
     * (none when no lane stops): the lanes below h that do not stop write an
     * intermediate b for their own key, which their final write (later in
     * the buffer) replaces */
    res = _mm256_blend_epi32(_mm256_castpd_si256(_mm256_add_pd(b1, c->magic_m1)), s->i, 0xAA);
    _mm256_storeu_si256((__m256i *)*w, res);
    *w += sh_jump_upto[m];

    /* continue with b + 1 = trunc(p2) + 1, or refill: within each half, the
     * low lane takes the stream's first key, the high lane its second if the
     * low lane stopped too, else its first */
    ctl = _mm256_bslli_epi128(stopi, 8);
    next = SH_LOAD2((const __m128i *)(hashes + in[1]), (const __m128i *)(hashes + in[0]));
    s->b = _mm256_blendv_pd(
        _mm256_add_pd(_mm256_round_pd(p2, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), c->oned), c->oned, stop);
    s->k = _mm256_castpd_si256(_mm256_blendv_pd(_mm256_castsi256_pd(k2),
                                                _mm256_permutevar_pd(_mm256_castsi256_pd(next), ctl), stop));
    s->i = _mm256_castpd_si256(_mm256_blendv_pd(
        _mm256_castsi256_pd(s->i), _mm256_permutevar_pd(_mm256_castsi256_pd(s->ibase), ctl), stop));
    s->ibase = _mm256_add_epi64(s->ibase, _mm256_loadu_si256((const __m256i *)sh_jump_count[m]));
    in[0] += sh_jump_lo[m];
    in[1] += sh_jump_hi[m];
}

/* Start a group with the first two keys of each of its streams. */
SH_AVX2_INLINE void sh_jump_avx2_init(sh_jump_lanes *s, const uint64_t *hashes, size_t *in,
                                      const sh_jump_consts *c)
{
    s->k = SH_LOAD2((const __m128i *)(hashes + in[1]), (const __m128i *)(hashes + in[0]));
    s->b = c->oned;
    s->i = _mm256_set_epi64x((long long)((uint64_t)(in[1] + 1) << 32), (long long)((uint64_t)in[1] << 32),
                             (long long)((uint64_t)(in[0] + 1) << 32), (long long)((uint64_t)in[0] << 32));
    in[0] += 2;
    in[1] += 2;
    s->ibase = _mm256_add_epi64(s->i, _mm256_set1_epi64x(2LL << 32));
}

/* Take a group's lanes out to scalars: key state, b and index per lane. */
SH_AVX2_INLINE void sh_jump_avx2_save(const sh_jump_lanes *s, uint64_t *k, int64_t *b, size_t *idx)
{
    uint64_t kk[4], ii[4];
    double bb[4];
    int l;
    _mm256_storeu_si256((__m256i *)kk, s->k);
    _mm256_storeu_si256((__m256i *)ii, s->i);
    _mm256_storeu_pd(bb, s->b);
    for (l = 0; l < 4; l++) {
        k[l] = kk[l];
        b[l] = (int64_t)bb[l] - 1;
        idx[l] = (size_t)(ii[l] >> 32);
    }
}

/* Finish the keys in flight (key state k, current b >= 0), all lanes in
 * turn so that their steps overlap; b = -1 marks a finished lane. */
static void sh_jump_finish_lanes(uint64_t *k, int64_t *b, const size_t *idx, int nlanes, int64_t nb,
                                 int32_t *out)
{
    int l, running = nlanes;
    while (running) {
        for (l = 0; l < nlanes; l++) {
            int64_t j;
            if (b[l] < 0) continue;
            k[l] = k[l] * SH_JUMP_MULT + 1;
            j = (int64_t)((double)(b[l] + 1) * (2147483648.0 / (double)((k[l] >> 33) + 1)));
            if (j >= nb) {
                out[idx[l]] = (int32_t)b[l];
                b[l] = -1;
                running--;
            } else {
                b[l] = j;
            }
        }
    }
}

/* The keys left in the streams, [in[s], end[s]), gathered into a small
 * buffer so that even short leftovers run eight at a time through the
 * portable kernel. */
static void sh_jump_leftovers(const uint64_t *hashes, const size_t *in, const size_t *end, int nstreams,
                              int32_t num_buckets, int32_t *out)
{
    uint64_t keys[256];
    int32_t res[256];
    size_t at[256], m = 0, i, t;
    int g;
    for (g = 0; g < nstreams; g++) {
        for (i = in[g]; i < end[g]; i++) {
            keys[m] = hashes[i];
            at[m] = i;
            if (++m == 256) {
                sh_jump_batch_scalar(keys, m, num_buckets, res);
                for (t = 0; t < m; t++) out[at[t]] = res[t];
                m = 0;
            }
        }
    }
    sh_jump_batch_scalar(keys, m, num_buckets, res);
    for (t = 0; t < m; t++) out[at[t]] = res[t];
}

static void sh_jump_flush(const uint64_t *buf, size_t w, int32_t *out)
{
    size_t t;
    for (t = 0; t < w; t++) out[buf[t] >> 32] = (int32_t)(uint32_t)buf[t];
}

/* n >= SH_JUMP_MIN >= 16 * SH_JUMP_G keys, n <= SH_JUMP_CHUNK, num_buckets >= 1.  The keys
 * are cut into 2 * SH_JUMP_G streams of consecutive keys; the rounds run
 * while every stream has four keys left, then the keys in flight and the
 * streams' remainders are finished by the scalar code. */
static SH_AVX2_FN void sh_jump_avx2_chunk(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out)
{
    uint64_t buf[SH_JUMP_BUF];
    uint64_t *w = buf;
    size_t in[2 * SH_JUMP_G], end[2 * SH_JUMP_G], rounds, len;
    sh_jump_consts c;
    sh_jump_lanes s[SH_JUMP_G];
    uint64_t lk[4 * SH_JUMP_G];
    int64_t lb[4 * SH_JUMP_G];
    size_t lidx[4 * SH_JUMP_G];
    int g;

    c.mlo = _mm256_set1_epi64x((long long)(SH_JUMP_MULT & 0xffffffffu));
    c.mhi = _mm256_set1_epi64x((long long)(SH_JUMP_MULT >> 32));
    c.one = _mm256_set1_epi64x(1);
    c.magic = _mm256_set1_epi64x(0x4330000000000000LL);
    c.magic_m1 = _mm256_set1_pd(4503599627370495.0);
    c.two31 = _mm256_set1_pd(2147483648.0);
    c.nb = _mm256_set1_pd((double)num_buckets);
    c.oned = _mm256_set1_pd(1.0);

    /* streams of len keys (the last takes the rest); when len * 8 bytes is
     * near a multiple of 4 KiB, len is shortened by 72 keys (9 cache lines)
     * so that the streams do not all fall in the same L1 sets */
    len = n / (2 * SH_JUMP_G);
    if (len >= 1024 && ((len + 64) & 511) < 128) len -= 72;
    for (g = 0; g < 2 * SH_JUMP_G; g++) {
        in[g] = len * (size_t)g;
        end[g] = g + 1 < 2 * SH_JUMP_G ? len * (size_t)(g + 1) : n;
    }
    for (g = 0; g < SH_JUMP_G; g++) sh_jump_avx2_init(&s[g], hashes, &in[2 * g], &c);
    for (;;) {
        /* a round reads two keys of each stream and takes at most two */
        rounds = SIZE_MAX;
        for (g = 0; g < 2 * SH_JUMP_G; g++) {
            size_t left = end[g] - in[g];
            size_t r = left / 2;
            if (r < rounds) rounds = r;
        }
        if (rounds == 0) break;
        for (; rounds; rounds--) {
            if (w - buf > SH_JUMP_BUF - 4 * SH_JUMP_G) {
                sh_jump_flush(buf, (size_t)(w - buf), out);
                w = buf;
            }
            for (g = 0; g < SH_JUMP_G; g++) sh_jump_avx2_round(&s[g], &c, hashes, &in[2 * g], &w);
        }
    }
    sh_jump_flush(buf, (size_t)(w - buf), out);
    for (g = 0; g < SH_JUMP_G; g++) sh_jump_avx2_save(&s[g], &lk[4 * g], &lb[4 * g], &lidx[4 * g]);
    sh_jump_finish_lanes(lk, lb, lidx, 4 * SH_JUMP_G, num_buckets, out);
    sh_jump_leftovers(hashes, in, end, 2 * SH_JUMP_G, num_buckets, out);
}

int sh_jump_avx2_available(void)
{
    return (sh_place_features() & SH_CPU_AVX2) != 0;
}

void sh_jump_batch_avx2(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out)
{
    if (num_buckets < 1 || n < SH_JUMP_MIN || !sh_jump_avx2_available()) {
        sh_jump_batch_scalar(hashes, n, num_buckets, out);
        return;
    }
    while (n >= SH_JUMP_MIN) {
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
