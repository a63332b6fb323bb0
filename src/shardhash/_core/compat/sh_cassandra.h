/*
 * shardhash core: Cassandra Murmur3Partitioner tokens.
 *
 * Cassandra's MurmurHash3_x64_128 (seed 0) differs from the reference
 * algorithm in one place: the tail bytes (the last len % 16) are Java
 * signed bytes, so each one is sign-extended before it is shifted and
 * xored into k1/k2.  The token is h1 as a signed 64-bit integer, with
 * INT64_MIN replaced by INT64_MAX, and the empty key's token is INT64_MIN.
 */
#ifndef SH_CASSANDRA_H
#define SH_CASSANDRA_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* h1 of Cassandra's MurmurHash3_x64_128 variant (seed 0), as raw bits. */
uint64_t sh_cassandra_murmur_h1(const void *data, size_t len);

/* Murmur3Partitioner token of a serialized partition key. */
int64_t sh_cassandra_token(const void *data, size_t len);

/* Batch over Arrow-style binary data: key i is data[offsets[i] .. offsets[i+1]).
 * Every byte of data[0 .. offsets[n]) must be readable (the bytes before
 * offsets[0] are read, and ignored, by the vector kernel). */
void sh_cassandra_token_offsets(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out);

/* Batch over separate keys: key i is ptrs[i][0 .. lens[i]) (lens[i] >= 0;
 * ptrs[i] may be anything readable when lens[i] == 0).  Only the keys' own
 * bytes are read. */
void sh_cassandra_token_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out);

/* The same, for keys whose 16 bytes before ptrs[i] are readable too (their
 * values do not matter: a Python bytes object's header precedes its data):
 * the tail of every key is then two loads, whatever its length. */
void sh_cassandra_token_ptrs16(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out);

/* The kernels behind the two above: sh_cassandra_token_offsets and
 * sh_cassandra_token_ptrs16 run the AVX-512 ones (sh_cassandra_avx512.c,
 * eight keys per vector) where the build has them and sh_cassandra_init
 * found the CPU's AVX512F and AVX512DQ, else the scalar ones.  The *_avx512
 * functions run the scalar kernels where the build has no AVX-512 code; on a
 * CPU without AVX-512 they must not be called. */
void sh_cassandra_token_offsets_scalar(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out);
void sh_cassandra_token_offsets_avx512(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out);
void sh_cassandra_token_ptrs16_scalar(const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                                      int64_t *out);
void sh_cassandra_token_ptrs16_avx512(const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                                      int64_t *out);

/* The same kernels with AVX2, four keys per vector (sh_cassandra_avx2.c;
 * the 64-bit multiplies are three 32-bit ones), for CPUs without AVX-512;
 * the scalar kernels where the build has no AVX2 code. */
void sh_cassandra_token_offsets_avx2(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out);
void sh_cassandra_token_ptrs16_avx2(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out);

/* For the vector kernels: whether a group of `lanes` keys of lengths
 * len[0 .. lanes) runs side by side.  The group runs as many block rounds
 * as its longest key has blocks; unless that is at most four, the lanes
 * must be busy for at least half of the rounds, else the scalar kernel
 * costs less (one long key among short ones). */
SH_FORCE_INLINE int sh_cassandra_lanes_worth(const int64_t *len, int lanes)
{
    int64_t maxnb = 0, sumnb = 0;
    int l;
    for (l = 0; l < lanes; l++) {
        int64_t nb = len[l] / 16;
        sumnb += nb;
        if (nb > maxnb) maxnb = nb;
    }
    return maxnb <= 4 || lanes * maxnb <= 2 * sumnb;
}

/* Chooses the kernels for this CPU; run once before any thread runs a
 * kernel (until then the scalar kernels run). */
void sh_cassandra_init(void);
/* The kernels sh_cassandra_init chose: "avx512", "avx2" or "scalar". */
const char *sh_cassandra_kernel(void);
/* 1 when this build has the AVX-512 kernels and sh_cassandra_init found the
 * CPU's AVX-512, else 0; the same for AVX2. */
int sh_cassandra_avx512_available(void);
int sh_cassandra_avx2_available(void);

/* Tokens of CQL bigint keys (8-byte big-endian) and int keys (4-byte
 * big-endian). */
void sh_cassandra_token_bigint(const int64_t *values, size_t n, int64_t *out);
void sh_cassandra_token_int(const int32_t *values, size_t n, int64_t *out);

/* Ring lookup: the index of the first ring token >= t, wrapping to 0.
 * `ring` is sorted ascending, m >= 1. */
void sh_cassandra_ring_index(const int64_t *ring, size_t m, const int64_t *tokens, size_t n, int64_t *out);
/* owners[the same index] for each token (owners: m shard indices). */
void sh_cassandra_ring_owner(const int64_t *ring, const int32_t *owners, size_t m, const int64_t *tokens,
                             size_t n, int32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_CASSANDRA_H */
