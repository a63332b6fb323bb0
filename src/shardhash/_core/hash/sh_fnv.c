/*
 * shardhash core: FNV-1a, 32- and 64-bit.
 *
 * Written from the FNV specification (draft-eastlake-fnv): state starts at
 * the offset basis; per byte, state ^= byte, then state *= prime (mod 2^w).
 * Byte-at-a-time by definition, so the result never depends on the host.
 */
#include "sh_fnv.h"

/* FNV-1a of p[0 .. len) in 64-bit arithmetic, from the offset basis h with
 * the given prime.  The 32-bit hash is the low half of the same steps with
 * its own basis and prime: xor and multiplication modulo 2^64 agree with
 * them modulo 2^32. */
SH_FORCE_INLINE uint64_t sh_fnv1a_bytes(const uint8_t *p, size_t len, uint64_t h, uint64_t prime)
{
    size_t i;
    for (i = 0; i < len; i++) h = (h ^ p[i]) * prime;
    return h;
}

uint32_t sh_fnv1a_32(const void *data, size_t len)
{
    return (uint32_t)sh_fnv1a_bytes((const uint8_t *)data, len, SH_FNV32_OFFSET, SH_FNV32_PRIME);
}

uint64_t sh_fnv1a_64(const void *data, size_t len)
{
    return sh_fnv1a_bytes((const uint8_t *)data, len, SH_FNV64_OFFSET, SH_FNV64_PRIME);
}
