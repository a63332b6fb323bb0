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

/* Final avalanche of the 32-bit variant, and of the 128-bit variant
 * (applied to each lane). */
SH_FORCE_INLINE uint32_t sh_murmur3_fmix32(uint32_t h)
{
    SH_XORSHIFT_MUL2(h, 16, 0x85ebca6bu, 13, 0xc2b2ae35u, 16);
    return h;
}

SH_FORCE_INLINE uint64_t sh_murmur3_fmix64(uint64_t k)
{
    SH_XORSHIFT_MUL2(k, 33, UINT64_C(0xff51afd7ed558ccd), 33, UINT64_C(0xc4ceb9fe1a85ec53), 33);
    return k;
}

/* Scramble one input word before it is mixed into the state: the 32-bit
 * variant's words, and the first (k1) and second (k2) 64-bit lane inputs. */
SH_FORCE_INLINE uint32_t sh_murmur3_scramble32(uint32_t k)
{
    return sh_rotl32(k * SH_MM3_32_C1, 15) * SH_MM3_32_C2;
}

SH_FORCE_INLINE uint64_t sh_murmur3_scramble_k1(uint64_t k1)
{
    return sh_rotl64(k1 * SH_MM3_128_C1, 31) * SH_MM3_128_C2;
}

SH_FORCE_INLINE uint64_t sh_murmur3_scramble_k2(uint64_t k2)
{
    return sh_rotl64(k2 * SH_MM3_128_C2, 33) * SH_MM3_128_C1;
}

/* Mix one full 4-byte block into the 32-bit state. */
SH_FORCE_INLINE uint32_t sh_murmur3_round32(uint32_t h, uint32_t k)
{
    h ^= sh_murmur3_scramble32(k);
    h = sh_rotl32(h, 13);
    return h * 5u + 0xe6546b64u;
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

/* The x64_128 tail, the t = len % 16 bytes after the blocks: byte i goes
 * to bits 8 * (i % 8) of k1 (i < 8) or k2 (i >= 8), and each lane's k is
 * scrambled into it (a lane with no byte has k = 0, whose scramble is 0).
 * The reference algorithm takes the bytes unsigned; Cassandra (java_bytes
 * nonzero) sign-extends each to 64 bits first, as Java's byte -> long does. */
SH_FORCE_INLINE void sh_murmur3_128_tail(const uint8_t *tail, size_t t, int java_bytes, uint64_t *h1p,
                                         uint64_t *h2p)
{
    uint64_t k[2] = {0, 0};
    size_t i;
    for (i = 0; i < t; i++) {
        uint64_t b = tail[i];
        if (java_bytes && b >= 0x80u) b |= UINT64_C(0xffffffffffffff00);
        k[i >> 3] ^= b << (8 * (i & 7u));
    }
    *h2p ^= sh_murmur3_scramble_k2(k[1]);
    *h1p ^= sh_murmur3_scramble_k1(k[0]);
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

/* The whole of MurmurHash3_x64_128 of p[0 .. len): *h1p and *h2p become
 * the two words of the hash (java_bytes: see sh_murmur3_128_tail).  The
 * full length is mixed in (as the PyPI `mmh3` package does; the original
 * code took an `int` length and so never saw 4 GiB or more). */
SH_FORCE_INLINE void sh_murmur3_128_hash(const uint8_t *p, size_t len, uint64_t seed, int java_bytes,
                                         uint64_t *h1p, uint64_t *h2p)
{
    size_t nblocks = len / 16;
    *h1p = *h2p = seed;
    sh_murmur3_128_blocks(p, nblocks, h1p, h2p);
    sh_murmur3_128_tail(p + 16 * nblocks, len & 15u, java_bytes, h1p, h2p);
    sh_murmur3_128_final(h1p, h2p, len);
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
