/*
 * shardhash core: xxHash (XXH32, XXH64, XXH3-64) shared constants and
 * single-word fast paths.
 *
 * Written from the xxHash specification (doc/xxhash_spec.md, v0.2.0, in the
 * xxHash project by Yann Collet).  The one-shot functions over a byte buffer
 * are declared in sh_hash.h and defined in sh_xxhash.c.
 *
 * The *_word functions hash one 64-bit integer as its 8 little-endian bytes.
 * Each returns exactly what the general function returns for that 8-byte
 * buffer; they are the specialised length-8 paths, with every quantity that
 * depends only on the (default) secret folded into a constant, so a batch
 * loop that inlines them does a handful of multiplies per key and no loads.
 */
#ifndef SH_XXHASH_H
#define SH_XXHASH_H

#include "sh_common.h"
#include "sh_hash.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Prime constants of the specification. */
#define SH_XXH_PRIME32_1 0x9E3779B1u
#define SH_XXH_PRIME32_2 0x85EBCA77u
#define SH_XXH_PRIME32_3 0xC2B2AE3Du
#define SH_XXH_PRIME32_4 0x27D4EB2Fu
#define SH_XXH_PRIME32_5 0x165667B1u

#define SH_XXH_PRIME64_1 UINT64_C(0x9E3779B185EBCA87)
#define SH_XXH_PRIME64_2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define SH_XXH_PRIME64_3 UINT64_C(0x165667B19E3779F9)
#define SH_XXH_PRIME64_4 UINT64_C(0x85EBCA77C2B2AE63)
#define SH_XXH_PRIME64_5 UINT64_C(0x27D4EB2F165667C5)

#define SH_XXH_PRIME_MX1 UINT64_C(0x165667919E3779F9)
#define SH_XXH_PRIME_MX2 UINT64_C(0x9FB21C651E98DF25)

/* XXH3's 192-byte default secret (defined in sh_xxhash.c). */
#define SH_XXH3_SECRET_SIZE 192
extern const uint8_t sh_xxh3_default_secret[SH_XXH3_SECRET_SIZE];

/* XXH3's 4..8-byte path reads the secret words at offsets 8 and 16; their
 * xor, for the default secret, is this constant (checked against the secret
 * bytes by the tests of the word paths). */
#define SH_XXH3_SECRET_8_XOR_16 UINT64_C(0xC73AB174C5ECD5A2)

/* XXH64 of n keys in Arrow layout (key i is data[offsets[i] .. offsets[i+1]),
 * offsets non-decreasing): out[i] = sh_xxh64(key i, seed).  Keys of one
 * length are hashed eight at a time by code compiled for that length (see
 * sh_xxhash.c); only the keys' own bytes are read. */
void sh_xxh64_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed, uint64_t *out);

/* XXH64's accumulator after the 32-byte stripes of p[0 .. len), len >= 32,
 * and their merge (for the vector kernels' long keys). */
uint64_t sh_xxh64_stripes(const uint8_t *p, size_t len, uint64_t seed);

/* The same, with eight keys per AVX-512 vector where the build and the CPU
 * have AVX512F and AVX512DQ (sh_xxhash_avx512.c, the kernel written in
 * sh_xxhash_simd.h); chosen by sh_xxh64_batch_init, which runs once before
 * any thread calls it (until then, and on other CPUs, sh_xxh64_offsets).
 * The vector kernel reads up to 32 bytes before a key's end, so every byte
 * of data[0 .. offsets[n]) must be readable (the bytes before offsets[0]
 * are read, and ignored). */
void sh_xxh64_offsets_batch(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                            uint64_t *out);
void sh_xxh64_batch_init(void);
/* XXH64 of n keys by pointer: out[i] = sh_xxh64(ptrs[i][0 .. lens[i]), seed).
 * sh_xxh64_ptrs reads only the keys' own bytes.  sh_xxh64_ptrs32_batch
 * needs the 32 bytes before each ptrs[i] readable too (as the header of a
 * Python bytes or str object is, on a 64-bit build): it runs the AVX-512
 * kernel where sh_xxh64_batch_init found the CPU's AVX-512, else
 * sh_xxh64_ptrs. */
void sh_xxh64_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint64_t seed, uint64_t *out);
void sh_xxh64_ptrs32_batch(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint64_t seed,
                           uint64_t *out);

/* The kernel sh_xxh64_offsets_batch runs: "avx512" or "scalar". */
const char *sh_xxh64_batch_kernel(void);
/* 1 when this build has the AVX-512 kernel and sh_xxh64_batch_init found
 * the CPU's AVX512F and AVX512DQ, else 0. */
int sh_xxh64_avx512_available(void);
/* The AVX-512 kernels themselves (sh_xxh64_offsets and sh_xxh64_ptrs where
 * the build has no AVX-512 code; on a CPU without AVX-512 it must not be called). */
void sh_xxh64_offsets_avx512(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                             uint64_t *out);
void sh_xxh64_ptrs32_avx512(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint64_t seed,
                            uint64_t *out);

/* ---- the steps of XXH32 and XXH64 (shared with sh_xxhash.c) ----------- */
/* One lane of a stripe (16 bytes for XXH32, 32 for XXH64). */
SH_FORCE_INLINE uint32_t sh_xxh32_round(uint32_t acc, uint32_t lane)
{
    return sh_rotl32(acc + lane * SH_XXH_PRIME32_2, 13) * SH_XXH_PRIME32_1;
}

SH_FORCE_INLINE uint64_t sh_xxh64_round(uint64_t acc, uint64_t lane)
{
    return sh_rotl64(acc + lane * SH_XXH_PRIME64_2, 31) * SH_XXH_PRIME64_1;
}

/* The four lanes' accumulators a1..a4 (declared here, type T, seeded from
 * seed), the stripes of W bytes a lane from p while rem >= 4 * W (at least
 * one), and their convergence into acc (the caller's seed, p, rem and acc):
 * the same for XXH32 (W = 4) and
 * XXH64 (W = 8). */
#define SH_XXH_STRIPES(T, PRIME_1, PRIME_2, round, read, rotl, W)                         \
    T a1 = seed + PRIME_1 + PRIME_2, a2 = seed + PRIME_2, a3 = seed, a4 = seed - PRIME_1; \
    do {                                                                                  \
        a1 = round(a1, read(p));                                                          \
        a2 = round(a2, read(p + (W)));                                                    \
        a3 = round(a3, read(p + 2 * (W)));                                                \
        a4 = round(a4, read(p + 3 * (W)));                                                \
        p += 4 * (W);                                                                     \
        rem -= 4 * (W);                                                                   \
    } while (rem >= 4 * (W));                                                             \
    acc = rotl(a1, 1) + rotl(a2, 7) + rotl(a3, 12) + rotl(a4, 18)

/* After the stripes: a 4-byte step of XXH32, an 8-byte step of XXH64. */
SH_FORCE_INLINE uint32_t sh_xxh32_step4(uint32_t acc, uint32_t word)
{
    return sh_rotl32(acc + word * SH_XXH_PRIME32_3, 17) * SH_XXH_PRIME32_4;
}

SH_FORCE_INLINE uint64_t sh_xxh64_step8(uint64_t acc, uint64_t word)
{
    return sh_rotl64(acc ^ sh_xxh64_round(0, word), 27) * SH_XXH_PRIME64_1 + SH_XXH_PRIME64_4;
}

SH_FORCE_INLINE uint32_t sh_xxh32_avalanche(uint32_t h)
{
    SH_XORSHIFT_MUL2(h, 15, SH_XXH_PRIME32_2, 13, SH_XXH_PRIME32_3, 16);
    return h;
}

SH_FORCE_INLINE uint64_t sh_xxh64_avalanche(uint64_t h)
{
    SH_XORSHIFT_MUL2(h, 33, SH_XXH_PRIME64_2, 29, SH_XXH_PRIME64_3, 32);
    return h;
}

/* ---- XXH32 and XXH64 of one 8-byte little-endian word ------------------- */
/* Fewer than 16 (32) bytes: a single accumulator, the length added, then
 * the word's steps and the final avalanche. */
SH_FORCE_INLINE uint32_t sh_xxh32_word(uint64_t v, uint32_t seed)
{
    uint32_t acc = seed + SH_XXH_PRIME32_5 + 8u;
    acc = sh_xxh32_step4(acc, (uint32_t)v);
    acc = sh_xxh32_step4(acc, (uint32_t)(v >> 32));
    return sh_xxh32_avalanche(acc);
}

SH_FORCE_INLINE uint64_t sh_xxh64_word(uint64_t v, uint64_t seed)
{
    return sh_xxh64_avalanche(sh_xxh64_step8(seed + SH_XXH_PRIME64_5 + 8u, v));
}

/* ---- XXH3-64 of one 8-byte little-endian word -------------------------- */
/* The 4..8-byte path at length 8: with v's first 4 bytes moved high,
 *     x = (secret[8:16] ^ secret[16:24]) - modified_seed ^ rotl(v, 32)
 *     x ^= rotl(x, 49) ^ rotl(x, 24)
 * and since rotation distributes over xor, the seed-only term and its two
 * rotations fold into one per-seed key:
 *     x = key ^ rotl(v, 32) ^ rotl(v, 17) ^ rotl(v, 56).
 * A loop with a fixed seed computes the key once when these are inlined. */
SH_FORCE_INLINE uint64_t sh_xxh3_word_key(uint64_t seed)
{
    uint64_t mod = seed ^ ((uint64_t)sh_swap32((uint32_t)seed) << 32);
    uint64_t k = SH_XXH3_SECRET_8_XOR_16 - mod;
    return k ^ sh_rotl64(k, 49) ^ sh_rotl64(k, 24);
}

/* The length-8 path given the per-seed key from sh_xxh3_word_key(). */
SH_FORCE_INLINE uint64_t sh_xxh3_64_word_keyed(uint64_t v, uint64_t key)
{
    uint64_t x = key ^ sh_rotl64(v, 32) ^ sh_rotl64(v, 17) ^ sh_rotl64(v, 56);
    x *= SH_XXH_PRIME_MX2;
    x ^= (x >> 35) + 8u;
    x *= SH_XXH_PRIME_MX2;
    x ^= x >> 28;
    return x;
}

SH_FORCE_INLINE uint64_t sh_xxh3_64_word(uint64_t v, uint64_t seed)
{
    return sh_xxh3_64_word_keyed(v, sh_xxh3_word_key(seed));
}

#ifdef __cplusplus
}
#endif

#endif /* SH_XXHASH_H */
