/*
 * shardhash core: helpers shared by the AVX-512 kernels (sh_cassandra_avx512.c,
 * sh_xxhash_avx512.c).  Include only where sh_cpu.h defines SH_X86_AVX512;
 * the functions are compiled for AVX512F and AVX512DQ, so call them only
 * from functions compiled for them (SH_TARGET("avx512f,avx512dq")).
 */
#ifndef SH_AVX512_H
#define SH_AVX512_H

#include <immintrin.h>

#include "sh_common.h"

#if defined(__GNUC__) || defined(__clang__)
#  define SH_AVX512_INLINE static inline __attribute__((always_inline, target("avx512f,avx512dq")))
#else
#  define SH_AVX512_INLINE static __forceinline
#endif

/* The bits of u as an int64 (the intrinsics take signed integers; a
 * conversion would be implementation-defined above INT64_MAX). */
SH_FORCE_INLINE int64_t sh_avx512_i64(uint64_t u)
{
    int64_t s;
    memcpy(&s, &u, sizeof s);
    return s;
}

/* The 16 bytes at q[l] + off for l = 0..7 as two words per key, read
 * little-endian: *w0 = bytes 0..7, *w1 = bytes 8..15, key l in lane l.  Four
 * keys' 16 bytes go into each of two registers and the words are picked out
 * with one permute each (AVX-512's hardware gathers were about three times
 * slower on AMD Zen 4). */
SH_AVX512_INLINE void sh_avx512_load16x8(const uint8_t *const *q, size_t off, __m512i *w0, __m512i *w1)
{
    __m512i z0 = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)(q[0] + off)));
    __m512i z1 = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)(q[4] + off)));
    z0 = _mm512_inserti32x4(z0, _mm_loadu_si128((const __m128i *)(const void *)(q[1] + off)), 1);
    z1 = _mm512_inserti32x4(z1, _mm_loadu_si128((const __m128i *)(const void *)(q[5] + off)), 1);
    z0 = _mm512_inserti32x4(z0, _mm_loadu_si128((const __m128i *)(const void *)(q[2] + off)), 2);
    z1 = _mm512_inserti32x4(z1, _mm_loadu_si128((const __m128i *)(const void *)(q[6] + off)), 2);
    z0 = _mm512_inserti32x4(z0, _mm_loadu_si128((const __m128i *)(const void *)(q[3] + off)), 3);
    z1 = _mm512_inserti32x4(z1, _mm_loadu_si128((const __m128i *)(const void *)(q[7] + off)), 3);
    *w0 = _mm512_permutex2var_epi64(z0, _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), z1);
    *w1 = _mm512_permutex2var_epi64(z0, _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1), z1);
}

/* The same for the 16 bytes at the addresses addr[l] + off (pointers' bits
 * as integers). */
SH_AVX512_INLINE void sh_avx512_load16x8_abs(const int64_t *addr, size_t off, __m512i *w0, __m512i *w1)
{
    const uint8_t *q[8];
    int l;
    for (l = 0; l < 8; l++) q[l] = (const uint8_t *)(uintptr_t)addr[l];
    sh_avx512_load16x8(q, off, w0, w1);
}

#endif /* SH_AVX512_H */
