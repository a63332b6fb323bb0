/*
 * shardhash core: the hash functions (one-shot, over a byte buffer).
 *
 * Each is written from its published specification and is bit-exact with
 * the reference implementations; tests/vectors/ freezes their outputs.
 * Definitions: sh_xxhash.c (xxh32, xxh64, xxh3_64), sh_murmur3.c
 * (murmur3_32, murmur3_128), sh_fnv.c (fnv1a_32, fnv1a_64).
 *
 * The *_word variants hash one 64-bit integer encoded as 8 little-endian
 * bytes (the default key encoding for integers).  They are static inline in
 * sh_xxhash.h / sh_murmur3.h / sh_fnv.h so that batch loops inline them.
 */
#ifndef SH_HASH_H
#define SH_HASH_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Algorithm identifiers: the order is the order of shardhash.ALGORITHMS and
 * is part of the C ABI between the core and the bindings. */
typedef enum {
    SH_ALGO_XXH3_64 = 0,
    SH_ALGO_XXH64 = 1,
    SH_ALGO_XXH32 = 2,
    SH_ALGO_MURMUR3_32 = 3,
    SH_ALGO_MURMUR3_128 = 4,
    SH_ALGO_FNV1A_32 = 5,
    SH_ALGO_FNV1A_64 = 6,
    SH_ALGO_COUNT = 7
} sh_algo;

uint32_t sh_xxh32(const void *data, size_t len, uint32_t seed);
uint64_t sh_xxh64(const void *data, size_t len, uint64_t seed);
uint64_t sh_xxh3_64(const void *data, size_t len, uint64_t seed);
uint32_t sh_murmur3_32(const void *data, size_t len, uint32_t seed);
/* out[0] = h1, out[1] = h2 (the two 64-bit words of MurmurHash3_x64_128). */
void sh_murmur3_128(const void *data, size_t len, uint32_t seed, uint64_t out[2]);
uint32_t sh_fnv1a_32(const void *data, size_t len);
uint64_t sh_fnv1a_64(const void *data, size_t len);

/* Dispatch: the algorithm's value widened to 64 bits (32-bit algorithms
 * zero-extended, murmur3_128 gives h1).  `seed` must already be validated
 * for the algorithm's width. */
uint64_t sh_hash64(int algo, const void *data, size_t len, uint64_t seed);

#ifdef __cplusplus
}
#endif

#endif /* SH_HASH_H */
