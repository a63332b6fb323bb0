/*
 * shardhash core: the 64-bit-lane vector operations (SH_CV_*) of the
 * kernels written once for any vector width (compat/sh_cassandra_simd.h),
 * for AVX2: four lanes.  The list of operations is
 * in sh_cv_avx512.h, up to SH_CV_LOAD16 (the ones after it are AVX-512's
 * only).  AVX2 has neither 64-bit multiplies nor rotations:
 *
 *  - a * c (mod 2^64) for a constant c is three 32 x 32 -> 64-bit multiplies
 *    (vpmuludq): lo(a) * lo(c) + ((hi(a) * lo(c) + lo(a) * hi(c)) << 32);
 *  - a rotation is two shifts and an or;
 *  - a lane condition is a vector of all-ones or zero lanes, and a select a
 *    byte blend.
 *
 * Include only where sh_cpu.h defines SH_X86_AVX2, once per file, before the
 * kernel's header; call its functions only from SH_CV_FN functions.
 */
#ifndef SH_CV_AVX2_H
#define SH_CV_AVX2_H

#include <immintrin.h>

#include "sh_common.h"

#define SH_CV       __m256i
#define SH_CV_LANES 4
#define SH_CV_MASK  __m256i
#define SH_CV_FN    SH_TARGET("avx2")
#if defined(__GNUC__) || defined(__clang__)
#  define SH_CV_INLINE static inline __attribute__((always_inline, target("avx2")))
#else
#  define SH_CV_INLINE static __forceinline
#endif
#define SH_CV_NAME(f) f##_avx2

#define SH_CV_SET1(x)           _mm256_set1_epi64x(x)
#define SH_CV_ZERO()            _mm256_setzero_si256()
#define SH_CV_LOADU(p)          _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define SH_CV_STOREU(p, v)      _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define SH_CV_XOR(a, b)         _mm256_xor_si256((a), (b))
#define SH_CV_OR(a, b)          _mm256_or_si256((a), (b))
#define SH_CV_AND(a, b)         _mm256_and_si256((a), (b))
#define SH_CV_ADD(a, b)         _mm256_add_epi64((a), (b))
#define SH_CV_SUB(a, b)         _mm256_sub_epi64((a), (b))
#define SH_CV_SLLI(v, n)        _mm256_slli_epi64((v), (n))
#define SH_CV_SRLI(v, n)        _mm256_srli_epi64((v), (n))
#define SH_CV_SLLV(v, n)        _mm256_sllv_epi64((v), (n))
#define SH_CV_SRLV(v, n)        _mm256_srlv_epi64((v), (n))
#define SH_CV_ROTL(v, r)        _mm256_or_si256(_mm256_slli_epi64((v), (r)), _mm256_srli_epi64((v), 64 - (r)))
#define SH_CV_MULC(v, hi, lo)   sh_cv256_mulc((v), (hi), (lo))
#define SH_CV_GT(a, b)          _mm256_cmpgt_epi64((a), (b))
#define SH_CV_EQ(a, b)          _mm256_cmpeq_epi64((a), (b))
#define SH_CV_SELECT(m, a, b)   _mm256_blendv_epi8((a), (b), (m))
#define SH_CV_LOAD16(q, w0, w1) sh_cv256_load16(q, w0, w1)

/* v * ((hi << 32) | lo) mod 2^64 in every lane */
SH_CV_INLINE __m256i sh_cv256_mulc(__m256i v, uint32_t hi, uint32_t lo)
{
    const __m256i vlo = _mm256_set1_epi64x((long long)lo), vhi = _mm256_set1_epi64x((long long)hi);
    __m256i ll = _mm256_mul_epu32(v, vlo);
    __m256i cross =
        _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(v, 32), vlo), _mm256_mul_epu32(v, vhi));
    return _mm256_add_epi64(ll, _mm256_slli_epi64(cross, 32));
}

/* Keys 0 and 2, 1 and 3 in one register each; their words picked out with
 * one unpack each. */
SH_CV_INLINE void sh_cv256_load16(const uint8_t *const *q, __m256i *w0, __m256i *w1)
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

#endif /* SH_CV_AVX2_H */
