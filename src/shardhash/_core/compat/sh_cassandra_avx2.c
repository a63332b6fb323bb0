/*
 * shardhash core: Cassandra Murmur3Partitioner tokens of many
 * variable-length keys with AVX2, four keys per vector (x86-64 CPUs without
 * AVX-512, chosen at run time), bit-exact with sh_cassandra_token.
 *
 * The same kernel as sh_cassandra_avx512.c (read its comment first: block
 * rounds shared by the group with masked updates, the tail cut out of the
 * window with variable shifts, the sign extension as a prefix parity,
 * 16-byte loads only, the same callers' promise about the 16 bytes before
 * each key's end), in four 64-bit lanes.  AVX2 has neither 64-bit
 * multiplies nor rotations:
 *
 *  - a * c (mod 2^64) for a constant c is three 32 x 32 -> 64-bit multiplies
 *    (vpmuludq): lo(a) * lo(c) + ((hi(a) * lo(c) + lo(a) * hi(c)) << 32);
 *  - a rotation is two shifts and an or;
 *  - the prefix parity of the sign bits is three shift-and-xor steps
 *    instead of a multiply.
 *
 * Compiled where sh_cpu.h defines SH_X86_AVX2, through SH_TARGET("avx2");
 * elsewhere the entry points run the scalar kernels.
 */
#include "sh_cassandra.h"
#include "sh_cpu.h"

#ifdef SH_X86_AVX2

#  include <immintrin.h>

#  define SH_CASS256_FN SH_TARGET("avx2")
#  if defined(__GNUC__) || defined(__clang__)
#    define SH_CASS256_INLINE static inline __attribute__((always_inline, target("avx2")))
#  else
#    define SH_CASS256_INLINE static __forceinline
#  endif

/* MurmurHash3_x64_128's constants, as (high, low) 32-bit halves. */
#  define SH_C1_HI    0x87c37b91
#  define SH_C1_LO    0x114253d5
#  define SH_C2_HI    0x4cf5ad43
#  define SH_C2_LO    0x2745937f
#  define SH_FMIX1_HI 0xff51afd7
#  define SH_FMIX1_LO 0xed558ccd
#  define SH_FMIX2_HI 0xc4ceb9fe
#  define SH_FMIX2_LO 0x1a85ec53

/* a * c mod 2^64 in every lane, c = (chi << 32) | clo */
SH_CASS256_INLINE __m256i sh_cass256_mul(__m256i a, uint32_t chi, uint32_t clo)
{
    const __m256i vlo = _mm256_set1_epi64x((long long)clo), vhi = _mm256_set1_epi64x((long long)chi);
    __m256i ll = _mm256_mul_epu32(a, vlo);
    __m256i cross =
        _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), vlo), _mm256_mul_epu32(a, vhi));
    return _mm256_add_epi64(ll, _mm256_slli_epi64(cross, 32));
}

#  define SH_CASS256_ROTL(x, r) _mm256_or_si256(_mm256_slli_epi64((x), (r)), _mm256_srli_epi64((x), 64 - (r)))

SH_CASS256_INLINE __m256i sh_cass256_scramble_k1(__m256i k)
{
    k = sh_cass256_mul(k, SH_C1_HI, SH_C1_LO);
    k = SH_CASS256_ROTL(k, 31);
    return sh_cass256_mul(k, SH_C2_HI, SH_C2_LO);
}

SH_CASS256_INLINE __m256i sh_cass256_scramble_k2(__m256i k)
{
    k = sh_cass256_mul(k, SH_C2_HI, SH_C2_LO);
    k = SH_CASS256_ROTL(k, 33);
    return sh_cass256_mul(k, SH_C1_HI, SH_C1_LO);
}

SH_CASS256_INLINE __m256i sh_cass256_fmix64(__m256i k)
{
    k = _mm256_xor_si256(k, _mm256_srli_epi64(k, 33));
    k = sh_cass256_mul(k, SH_FMIX1_HI, SH_FMIX1_LO);
    k = _mm256_xor_si256(k, _mm256_srli_epi64(k, 33));
    k = sh_cass256_mul(k, SH_FMIX2_HI, SH_FMIX2_LO);
    return _mm256_xor_si256(k, _mm256_srli_epi64(k, 33));
}

/* x * 5 + c */
SH_CASS256_INLINE __m256i sh_cass256_mul5_add(__m256i x, __m256i c)
{
    return _mm256_add_epi64(_mm256_add_epi64(x, _mm256_slli_epi64(x, 2)), c);
}

/* The xor of the word's bytes sign-extended to 64 bits and shifted to their
 * places: byte j of the correction is 0xff when an odd number of bytes below
 * j are negative (p: the prefix xor of the sign bits, moved up one byte). */
SH_CASS256_INLINE __m256i sh_cass256_sext_bytes(__m256i w)
{
    __m256i p = _mm256_slli_epi64(_mm256_and_si256(_mm256_srli_epi64(w, 7), _mm256_set1_epi8(1)), 8);
    p = _mm256_xor_si256(p, _mm256_slli_epi64(p, 8));
    p = _mm256_xor_si256(p, _mm256_slli_epi64(p, 16));
    p = _mm256_xor_si256(p, _mm256_slli_epi64(p, 32));
    return _mm256_xor_si256(w, _mm256_sub_epi64(_mm256_slli_epi64(p, 8), p)); /* p * 0xff */
}

/* The 16 bytes at q[0] .. q[3] as two words per key (bytes 0..7, 8..15). */
SH_CASS256_INLINE void sh_cass256_load16x4(const uint8_t *const q[4], __m256i *w0, __m256i *w1)
{
    __m256i a =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)q[0])),
                                _mm_loadu_si128((const __m128i *)(const void *)q[2]), 1);
    __m256i b =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)q[1])),
                                _mm_loadu_si128((const __m128i *)(const void *)q[3]), 1);
    *w0 = _mm256_unpacklo_epi64(a, b);
    *w1 = _mm256_unpackhi_epi64(a, b);
}

/* Tokens of the four keys p[l][0 .. len[l]), len[l] >= 0, whose 16 bytes
 * before p[l] + len[l] are readable, to out[0..3]. */
SH_CASS256_INLINE void sh_cass256_lanes4(const uint8_t *const p[4], const int64_t len[4], int64_t *out)
{
    const uint8_t *q[4];
    const __m256i vlen = _mm256_loadu_si256((const __m256i *)(const void *)len);
    const __m256i nb = _mm256_srli_epi64(vlen, 4);
    const __m256i c1 = _mm256_set1_epi64x(0x52dce729), c2 = _mm256_set1_epi64x(0x38495ab5);
    __m256i h1 = _mm256_setzero_si256(), h2 = _mm256_setzero_si256();
    __m256i lo, hi, s, w0, w1;
    int64_t maxnb = 0, j;
    int l;

    for (l = 0; l < 4; l++)
        if (len[l] / 16 > maxnb) maxnb = len[l] / 16;

    for (j = 0; j < maxnb; j++) {
        __m256i m = _mm256_cmpgt_epi64(nb, _mm256_set1_epi64x(j));
        __m256i k1, k2, x1, x2;
        for (l = 0; l < 4; l++) q[l] = 16 * (j + 1) <= len[l] ? p[l] + 16 * j : p[l] + len[l] - 16;
        sh_cass256_load16x4(q, &k1, &k2);
        x1 = _mm256_xor_si256(h1, sh_cass256_scramble_k1(k1));
        x1 = SH_CASS256_ROTL(x1, 27);
        x1 = sh_cass256_mul5_add(_mm256_add_epi64(x1, h2), c1);
        x2 = _mm256_xor_si256(h2, sh_cass256_scramble_k2(k2));
        x2 = SH_CASS256_ROTL(x2, 31);
        x2 = sh_cass256_mul5_add(_mm256_add_epi64(x2, x1), c2);
        h1 = _mm256_blendv_epi8(h1, x1, m);
        h2 = _mm256_blendv_epi8(h2, x2, m);
    }

    for (l = 0; l < 4; l++) q[l] = p[l] + len[l] - 16;
    sh_cass256_load16x4(q, &lo, &hi);
    s = _mm256_slli_epi64(
        _mm256_sub_epi64(_mm256_set1_epi64x(16), _mm256_and_si256(vlen, _mm256_set1_epi64x(15))), 3);
    w1 = _mm256_srlv_epi64(hi, s);
    w0 = _mm256_or_si256(_mm256_srlv_epi64(lo, s),
                         _mm256_or_si256(_mm256_sllv_epi64(hi, _mm256_sub_epi64(_mm256_set1_epi64x(64), s)),
                                         _mm256_srlv_epi64(hi, _mm256_sub_epi64(s, _mm256_set1_epi64x(64)))));
    h2 = _mm256_xor_si256(h2, sh_cass256_scramble_k2(sh_cass256_sext_bytes(w1)));
    h1 = _mm256_xor_si256(h1, sh_cass256_scramble_k1(sh_cass256_sext_bytes(w0)));

    h1 = _mm256_xor_si256(h1, vlen);
    h2 = _mm256_xor_si256(h2, vlen);
    h1 = _mm256_add_epi64(h1, h2);
    h2 = _mm256_add_epi64(h2, h1);
    h1 = sh_cass256_fmix64(h1);
    h2 = sh_cass256_fmix64(h2);
    h1 = _mm256_add_epi64(h1, h2);
    h1 = _mm256_blendv_epi8(h1, _mm256_set1_epi64x(INT64_MAX),
                            _mm256_cmpeq_epi64(h1, _mm256_set1_epi64x(INT64_MIN)));
    h1 = _mm256_blendv_epi8(h1, _mm256_set1_epi64x(INT64_MIN),
                            _mm256_cmpeq_epi64(vlen, _mm256_setzero_si256()));
    _mm256_storeu_si256((__m256i *)(void *)out, h1);
}

SH_CASS256_FN void sh_cassandra_token_offsets_avx2(const uint8_t *data, const int64_t *offsets, size_t n,
                                                   int64_t *out)
{
    const uint8_t *p[4];
    int64_t len[4];
    size_t i = 0, head;
    int l;
    /* the keys that end less than 16 bytes into the buffer */
    while (i < n && offsets[i + 1] < 16) i++;
    head = i;
    if (head) sh_cassandra_token_offsets_scalar(data, offsets, head, out);
    for (; i + 4 <= n; i += 4) {
        for (l = 0; l < 4; l++) {
            p[l] = data + offsets[i + (size_t)l];
            len[l] = offsets[i + (size_t)l + 1] - offsets[i + (size_t)l];
        }
        if (sh_cassandra_lanes_worth(len, 4))
            sh_cass256_lanes4(p, len, out + i);
        else
            sh_cassandra_token_offsets_scalar(data, offsets + i, 4, out + i);
    }
    if (i < n) sh_cassandra_token_offsets_scalar(data, offsets + i, n - i, out + i);
}

SH_CASS256_FN void sh_cassandra_token_ptrs16_avx2(const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                                                  int64_t *out)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        if (sh_cassandra_lanes_worth(lens + i, 4))
            sh_cass256_lanes4(ptrs + i, lens + i, out + i);
        else
            sh_cassandra_token_ptrs16_scalar(ptrs + i, lens + i, 4, out + i);
    }
    if (i < n) sh_cassandra_token_ptrs16_scalar(ptrs + i, lens + i, n - i, out + i);
}

#else /* no AVX2 kernels in this build */

void sh_cassandra_token_offsets_avx2(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)
{
    sh_cassandra_token_offsets_scalar(data, offsets, n, out);
}

void sh_cassandra_token_ptrs16_avx2(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out)
{
    sh_cassandra_token_ptrs16_scalar(ptrs, lens, n, out);
}

#endif
