/*
 * shardhash core: MurmurHash3 inline helpers and 64-bit word fast paths.
 *
 * MurmurHash3 (Austin Appleby, public domain algorithm) in two variants:
 *   x86_32  -- 32-bit state, 4-byte blocks          (sh_murmur3_32)
 *   x64_128 -- two 64-bit lanes, 16-byte blocks      (sh_murmur3_128)
 * The one-shot functions are declared in sh_hash.h and defined in
 * sh_murmur3.c.  The *_word functions below hash one uint64 as its eight
 * little-endian bytes and are bit-identical to the general functions on that
 * input; they exist so that batch loops can inline them.
 *
 * Tail bytes are treated as unsigned, as in the reference algorithm.
 * Cassandra sign-extends them: sh_cassandra.c builds that variant from the
 * body and finalisation helpers below.
 */
#ifndef SH_MURMUR3_H
#define SH_MURMUR3_H

#include "sh_common.h"
#include "sh_hash.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SH_MM3_32_C1  0xcc9e2d51u
#define SH_MM3_32_C2  0x1b873593u
#define SH_MM3_128_C1 UINT64_C(0x87c37b91114253d5)
#define SH_MM3_128_C2 UINT64_C(0x4cf5ad432745937f)

/* Final avalanche of the 32-bit variant. */
SH_FORCE_INLINE uint32_t sh_murmur3_fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* Final avalanche of the 128-bit variant (applied to each lane). */
SH_FORCE_INLINE uint64_t sh_murmur3_fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    return k;
}

/* Scramble one 32-bit input word before it is mixed into the state. */
SH_FORCE_INLINE uint32_t sh_murmur3_scramble32(uint32_t k)
{
    k *= SH_MM3_32_C1;
    k = sh_rotl32(k, 15);
    k *= SH_MM3_32_C2;
    return k;
}

/* Mix one full 4-byte block into the 32-bit state. */
SH_FORCE_INLINE uint32_t sh_murmur3_round32(uint32_t h, uint32_t k)
{
    h ^= sh_murmur3_scramble32(k);
    h = sh_rotl32(h, 13);
    return h * 5u + 0xe6546b64u;
}

/* Scramble of the first (k1) and second (k2) 64-bit lane inputs. */
SH_FORCE_INLINE uint64_t sh_murmur3_scramble_k1(uint64_t k1)
{
    k1 *= SH_MM3_128_C1;
    k1 = sh_rotl64(k1, 31);
    k1 *= SH_MM3_128_C2;
    return k1;
}

SH_FORCE_INLINE uint64_t sh_murmur3_scramble_k2(uint64_t k2)
{
    k2 *= SH_MM3_128_C2;
    k2 = sh_rotl64(k2, 33);
    k2 *= SH_MM3_128_C1;
    return k2;
}

/* The x64_128 body: mix the 16-byte blocks p[0 .. 16 * nblocks) into the
 * lanes (*h1, *h2). */
SH_FORCE_INLINE void sh_murmur3_128_blocks(const uint8_t *p, size_t nblocks, uint64_t *h1p, uint64_t *h2p)
{
    uint64_t h1 = *h1p, h2 = *h2p;
    size_t i;
    for (i = 0; i < nblocks; i++) {
        const uint8_t *b = p + 16 * i;
        h1 ^= sh_murmur3_scramble_k1(sh_read64le(b));
        h1 = sh_rotl64(h1, 27);
        h1 += h2;
        h1 = h1 * 5u + 0x52dce729u;

        h2 ^= sh_murmur3_scramble_k2(sh_read64le(b + 8));
        h2 = sh_rotl64(h2, 31);
        h2 += h1;
        h2 = h2 * 5u + 0x38495ab5u;
    }
    *h1p = h1;
    *h2p = h2;
}

/* The x64_128 finalisation, after the tail: the length is mixed in and both
 * lanes avalanched; *h1 and *h2 become the two words of the hash. */
SH_FORCE_INLINE void sh_murmur3_128_final(uint64_t *h1p, uint64_t *h2p, size_t len)
{
    uint64_t h1 = *h1p, h2 = *h2p;
    h1 ^= (uint64_t)len;
    h2 ^= (uint64_t)len;
    h1 += h2;
    h2 += h1;
    h1 = sh_murmur3_fmix64(h1);
    h2 = sh_murmur3_fmix64(h2);
    h1 += h2;
    h2 += h1;
    *h1p = h1;
    *h2p = h2;
}

/* MurmurHash3_x86_32 of the 8 little-endian bytes of v: two full blocks,
 * no tail, length 8. */
SH_FORCE_INLINE uint32_t sh_murmur3_32_word(uint64_t v, uint32_t seed)
{
    uint32_t h = seed;
    h = sh_murmur3_round32(h, (uint32_t)v);
    h = sh_murmur3_round32(h, (uint32_t)(v >> 32));
    h ^= 8u;
    return sh_murmur3_fmix32(h);
}

/* h1 of MurmurHash3_x64_128 of the 8 little-endian bytes of v: no full
 * block, an 8-byte tail that goes entirely into k1, length 8. */
SH_FORCE_INLINE uint64_t sh_murmur3_128_word_h1(uint64_t v, uint32_t seed)
{
    uint64_t h1 = (uint64_t)seed;
    uint64_t h2 = (uint64_t)seed;
    h1 ^= sh_murmur3_scramble_k1(v);
    h1 ^= 8u;
    h2 ^= 8u;
    h1 += h2;
    h2 += h1;
    h1 = sh_murmur3_fmix64(h1);
    h2 = sh_murmur3_fmix64(h2);
    return h1 + h2;
}

#ifdef __cplusplus
}
#endif

#endif /* SH_MURMUR3_H */
