/*
 * shardhash core: MurmurHash3_x86_32 and MurmurHash3_x64_128.
 *
 * Written from the algorithm's description (Austin Appleby's SMHasher,
 * public domain).  All block loads are explicit little-endian, so the result
 * is the same on every host; it matches the reference implementation on
 * little-endian machines (and the PyPI `mmh3` package everywhere).
 */
#include "sh_murmur3.h"

uint32_t sh_murmur3_32(const void *data, size_t len, uint32_t seed)
{
    const uint8_t *p = (const uint8_t *)data;
    size_t nblocks = len / 4;
    size_t i;
    uint32_t h = seed;
    uint32_t k = 0;
    const uint8_t *tail;

    for (i = 0; i < nblocks; i++) {
        h = sh_murmur3_round32(h, sh_read32le(p + 4 * i));
    }

    /* 1..3 trailing bytes, assembled little-endian. */
    tail = p + 4 * nblocks;
    for (i = len & 3u; i > 0; i--) {
        k = (k << 8) | (uint32_t)tail[i - 1];
    }
    if (len & 3u) {
        h ^= sh_murmur3_scramble32(k);
    }

    /* The length is mixed in modulo 2^32, as in the reference. */
    h ^= (uint32_t)len;
    return sh_murmur3_fmix32(h);
}

void sh_murmur3_128(const void *data, size_t len, uint32_t seed, uint64_t out[2])
{
    sh_murmur3_128_hash((const uint8_t *)data, len, (uint64_t)seed, 0, &out[0], &out[1]);
}
