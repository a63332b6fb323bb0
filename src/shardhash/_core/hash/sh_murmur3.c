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
    const uint8_t *p = (const uint8_t *)data;
    size_t nblocks = len / 16;
    size_t i;
    uint64_t h1 = (uint64_t)seed;
    uint64_t h2 = (uint64_t)seed;
    uint64_t k1 = 0;
    uint64_t k2 = 0;
    size_t rem;
    const uint8_t *tail;

    sh_murmur3_128_blocks(p, nblocks, &h1, &h2);

    /* 1..15 trailing bytes: the first 8 (little-endian) feed k1, the rest
     * feed k2.  Each lane is mixed only if it received at least one byte. */
    tail = p + 16 * nblocks;
    rem = len & 15u;
    for (i = rem; i > 8; i--) {
        k2 = (k2 << 8) | (uint64_t)tail[i - 1];
    }
    for (i = (rem < 8 ? rem : 8); i > 0; i--) {
        k1 = (k1 << 8) | (uint64_t)tail[i - 1];
    }
    if (rem > 8) {
        h2 ^= sh_murmur3_scramble_k2(k2);
    }
    if (rem > 0) {
        h1 ^= sh_murmur3_scramble_k1(k1);
    }

    /* The full length is mixed in (as the PyPI `mmh3` package does; the
     * original code took an `int` length and so never saw 4 GiB or more). */
    sh_murmur3_128_final(&h1, &h2, len);
    out[0] = h1;
    out[1] = h2;
}
