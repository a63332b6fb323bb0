/*
 * shardhash core: FNV-1a inline helpers and 64-bit word fast paths.
 *
 * FNV-1a (Fowler/Noll/Vo): for each byte, xor it into the state, then
 * multiply by the FNV prime.  Offset bases and primes are those of the FNV
 * specification (draft-eastlake-fnv).  The one-shot functions are declared
 * in sh_hash.h and defined in sh_fnv.c; the *_word functions hash one uint64
 * as its eight little-endian bytes, bit-identical to the general functions.
 * FNV has no seed.
 */
#ifndef SH_FNV_H
#define SH_FNV_H

#include "sh_common.h"
#include "sh_hash.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SH_FNV32_OFFSET 0x811c9dc5u
#define SH_FNV32_PRIME  0x01000193u
#define SH_FNV64_OFFSET UINT64_C(0xcbf29ce484222325)
#define SH_FNV64_PRIME  UINT64_C(0x00000100000001b3)

SH_FORCE_INLINE uint32_t sh_fnv1a_32_word(uint64_t v)
{
    uint32_t h = SH_FNV32_OFFSET;
    int i;
    for (i = 0; i < 8; i++) {
        h ^= (uint32_t)((v >> (8 * i)) & 0xffu);
        h *= SH_FNV32_PRIME;
    }
    return h;
}

SH_FORCE_INLINE uint64_t sh_fnv1a_64_word(uint64_t v)
{
    uint64_t h = SH_FNV64_OFFSET;
    int i;
    for (i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= SH_FNV64_PRIME;
    }
    return h;
}

#ifdef __cplusplus
}
#endif

#endif /* SH_FNV_H */
