/*
 * shardhash core: FNV-1a, 32- and 64-bit.
 *
 * Written from the FNV specification (draft-eastlake-fnv): state starts at
 * the offset basis; per byte, state ^= byte, then state *= prime (mod 2^w).
 * Byte-at-a-time by definition, so the result never depends on the host.
 */
#include "sh_fnv.h"

uint32_t sh_fnv1a_32(const void *data, size_t len)
{
    const uint8_t *p = (const uint8_t *)data;
    uint32_t h = SH_FNV32_OFFSET;
    size_t i;
    for (i = 0; i < len; i++) {
        h ^= (uint32_t)p[i];
        h *= SH_FNV32_PRIME;
    }
    return h;
}

uint64_t sh_fnv1a_64(const void *data, size_t len)
{
    const uint8_t *p = (const uint8_t *)data;
    uint64_t h = SH_FNV64_OFFSET;
    size_t i;
    for (i = 0; i < len; i++) {
        h ^= (uint64_t)p[i];
        h *= SH_FNV64_PRIME;
    }
    return h;
}
