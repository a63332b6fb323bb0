/*
 * shardhash core: portable helpers shared by every C file.
 *
 * Plain C99, no Python.h.  Every multi-byte load is explicitly little-endian
 * so that no output depends on the host's byte order.  64x64->128
 * multiplication uses the compiler's native support where it exists and a
 * portable four-multiply fallback everywhere else.
 */
#ifndef SH_COMMON_H
#define SH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(_MSC_VER)
#  include <stdlib.h>
#  include <intrin.h>
#  define SH_INLINE       static __inline
#  define SH_FORCE_INLINE static __forceinline
#  define SH_RESTRICT     __restrict
#else
#  define SH_INLINE       static inline
#  define SH_FORCE_INLINE static inline __attribute__((always_inline))
#  define SH_RESTRICT     __restrict__
#endif

#ifdef __cplusplus
extern "C" {
#endif

SH_FORCE_INLINE uint32_t sh_rotl32(uint32_t x, unsigned r)
{
    r &= 31u;
    return (x << r) | (x >> ((32u - r) & 31u));
}

SH_FORCE_INLINE uint64_t sh_rotl64(uint64_t x, unsigned r)
{
    r &= 63u;
    return (x << r) | (x >> ((64u - r) & 63u));
}

SH_FORCE_INLINE uint32_t sh_swap32(uint32_t x)
{
    return ((x << 24) & 0xff000000u) | ((x << 8) & 0x00ff0000u) | ((x >> 8) & 0x0000ff00u) |
           ((x >> 24) & 0x000000ffu);
}

SH_FORCE_INLINE uint64_t sh_swap64(uint64_t x)
{
    return ((uint64_t)sh_swap32((uint32_t)x) << 32) | (uint64_t)sh_swap32((uint32_t)(x >> 32));
}

/* The xor-shift-multiply finaliser that MurmurHash3 (fmix32, fmix64) and
 * xxHash (the XXH32 and XXH64 avalanches) share, on a variable x of the
 * hash's width: x ^= x >> s1; x *= m1; x ^= x >> s2; x *= m2; x ^= x >> s3. */
#define SH_XORSHIFT_MUL2(x, s1, m1, s2, m2, s3) \
    do {                                        \
        (x) ^= (x) >> (s1);                     \
        (x) *= (m1);                            \
        (x) ^= (x) >> (s2);                     \
        (x) *= (m2);                            \
        (x) ^= (x) >> (s3);                     \
    } while (0)

/* Explicit little-endian loads, assembled byte by byte; compilers turn these
 * into single loads on little-endian targets. */
SH_FORCE_INLINE uint32_t sh_read32le(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
}

SH_FORCE_INLINE uint64_t sh_read64le(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint64_t)b[0] | ((uint64_t)b[1] << 8) | ((uint64_t)b[2] << 16) | ((uint64_t)b[3] << 24) |
           ((uint64_t)b[4] << 32) | ((uint64_t)b[5] << 40) | ((uint64_t)b[6] << 48) | ((uint64_t)b[7] << 56);
}

SH_FORCE_INLINE uint32_t sh_read32be(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | (uint32_t)b[3];
}

SH_FORCE_INLINE uint64_t sh_read64be(const void *p)
{
    return ((uint64_t)sh_read32be(p) << 32) | (uint64_t)sh_read32be((const uint8_t *)p + 4);
}

/* Host-order loads from possibly unaligned memory (for values, not bytes). */
SH_FORCE_INLINE uint64_t sh_load_u64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

SH_FORCE_INLINE void sh_write64le(void *p, uint64_t v)
{
    uint8_t *b = (uint8_t *)p;
    int i;
    for (i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
}

/* First position in [lo, hi) of the ascending values v[] whose value is
 * >= x (hi when none is): the binary search of the ring walks and the
 * override lookups. */
SH_FORCE_INLINE size_t sh_lower_bound_u64(const uint64_t *v, size_t lo, size_t hi, uint64_t x)
{
    while (lo < hi) {
        size_t mid = lo + ((hi - lo) >> 1);
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Full 64x64 -> 128-bit product, returned as (lo, hi). */
SH_FORCE_INLINE uint64_t sh_mul128(uint64_t a, uint64_t b, uint64_t *hi)
{
#if defined(__SIZEOF_INT128__) && !defined(SH_NO_INT128)
    __uint128_t p = (__uint128_t)a * (__uint128_t)b;
    *hi = (uint64_t)(p >> 64);
    return (uint64_t)p;
#elif defined(_MSC_VER) && defined(_M_X64) && !defined(SH_NO_INT128)
    return _umul128(a, b, hi);
#elif defined(_MSC_VER) && defined(_M_ARM64) && !defined(SH_NO_INT128)
    *hi = __umulh(a, b);
    return a * b;
#else
    /* Portable fallback: four 32x32 products. */
    uint64_t a_lo = (uint32_t)a, a_hi = a >> 32;
    uint64_t b_lo = (uint32_t)b, b_hi = b >> 32;
    uint64_t lo_lo = a_lo * b_lo;
    uint64_t hi_lo = a_hi * b_lo;
    uint64_t lo_hi = a_lo * b_hi;
    uint64_t hi_hi = a_hi * b_hi;
    uint64_t cross = (lo_lo >> 32) + (uint32_t)hi_lo + lo_hi;
    *hi = (hi_lo >> 32) + (cross >> 32) + hi_hi;
    return (cross << 32) | (uint32_t)lo_lo;
#endif
}

/* Upper 64 bits of a 64x64 product: maps a uniform 64-bit hash onto [0, n)
 * without a division (Lemire's multiply-shift reduction). */
SH_FORCE_INLINE uint64_t sh_mulhi64(uint64_t a, uint64_t b)
{
    uint64_t hi;
    (void)sh_mul128(a, b, &hi);
    return hi;
}

/* The 128-bit a_hi:a_lo divided by d >= 1, by binary long division (run at
 * set-up, never per key): the low word of the quotient; *q_hi its high word,
 * *rem the remainder. */
SH_INLINE uint64_t sh_div128(uint64_t a_hi, uint64_t a_lo, uint64_t d, uint64_t *q_hi, uint64_t *rem)
{
    uint64_t qh = 0, ql = 0, r = 0;
    int bit;
    for (bit = 127; bit >= 0; bit--) {
        uint64_t top = r >> 63; /* remainder about to overflow 64 bits */
        uint64_t next = bit >= 64 ? (a_hi >> (bit - 64)) & 1u : (a_lo >> bit) & 1u;
        r = (r << 1) | next;
        if (top || r >= d) {
            r -= d;
            if (bit >= 64)
                qh |= (uint64_t)1 << (bit - 64);
            else
                ql |= (uint64_t)1 << bit;
        }
    }
    *q_hi = qh;
    *rem = r;
    return ql;
}

#ifdef __cplusplus
}
#endif

#endif /* SH_COMMON_H */
