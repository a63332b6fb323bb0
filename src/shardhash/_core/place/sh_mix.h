/*
 * shardhash core: the SplitMix64 finaliser that placement kernels mix with.
 *
 * Part of the placement kernels (sh_place.h): plain C99, no Python.h.
 */
#ifndef SH_MIX_H
#define SH_MIX_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Mixing: the SplitMix64 finaliser (Steele, Lea & Flood 2014; the constants of
 * Stafford's "Mix13").  A bijection on 64-bit words.
 */
SH_FORCE_INLINE uint64_t sh_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

#ifdef __cplusplus
}
#endif

#endif /* SH_MIX_H */
