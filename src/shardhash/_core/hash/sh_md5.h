/*
 * shardhash core: MD5 (RFC 1321) and the MD5-based placement hashes.
 *
 * MD5 is used here only as the placement hash of real systems (ketama
 * continuums, MongoDB hashed shard keys), never for security.
 */
#ifndef SH_MD5_H
#define SH_MD5_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One-shot MD5 digest of `len` bytes into out[16]. */
void sh_md5(const void *data, size_t len, uint8_t out[16]);

/* ketama key hash: the first four digest bytes as a little-endian uint32. */
uint32_t sh_md5_u32le(const void *data, size_t len);

/* Batch ketama key hash over Arrow-style binary data: key i is
 * data[offsets[i] .. offsets[i+1]).  Offsets are validated by the caller
 * (monotonic, within the buffer). */
void sh_md5_u32le_offsets(const int64_t *offsets, const uint8_t *data, size_t n, uint32_t *out);

/* ketama continuum lookup.  points[0..m) sorted ascending (m >= 1), owners[k]
 * the server of point k.  A key hash h goes to the first point >= h
 * (upper == 0: libketama, libmemcached, twemproxy) or the first point > h
 * (upper != 0: uhashring's bisect_right), wrapping to point 0.
 *
 * Optional acceleration: index (2**bits + 1 entries, 1 <= bits <= 24, built
 * by sh_ketama_bucket_index) holds for each value of a hash's top `bits`
 * bits the first point at or above that bucket; with it a lookup scans a
 * short stretch instead of a binary search.  Pass index = NULL to search. */
void sh_ketama_bucket_index(const uint32_t *points, size_t m, int bits, int32_t *index);
void sh_ketama_lookup(const uint32_t *points, const int32_t *owners, size_t m, int upper,
                      const int32_t *index, int bits, const uint32_t *hashes, size_t n, int32_t *out);
/* twemproxy's "fnv1a_64" key hash (its default): a 32-bit FNV-1a state
 * with truncated constants (offset 0x84222325, prime 0x1b3) and each byte
 * sign-extended as a C char. */
uint32_t sh_twemproxy_fnv1a_64(const void *data, size_t len);
void sh_twemproxy_fnv1a_64_offsets(const int64_t *offsets, const uint8_t *data, size_t n, uint32_t *out);

#define SH_KETAMA_KEY_MD5 0
#define SH_KETAMA_KEY_FNV1A_64_TWEMPROXY 1

/* Key hash (key_hash: SH_KETAMA_KEY_*) and lookup fused, over Arrow-style
 * binary data. */
void sh_ketama_route_offsets(const int64_t *offsets, const uint8_t *data, size_t n,
                             const uint32_t *points, const int32_t *owners, size_t m, int upper,
                             const int32_t *index, int bits, int key_hash, int32_t *out);

/* MongoDB hashed-index value of a number already reduced to int64
 * (seed 0): md5(LE32(0) || LE32(10) || LE64(v)), first 8 digest bytes as a
 * little-endian int64, returned as its two's-complement bit pattern. */
uint64_t sh_mongo_hash_int64(int64_t v);
void sh_mongo_hash_int64_batch(const int64_t *values, size_t n, uint64_t *out);

/* MongoDB safeNumberLongForHash for a double: NaN -> 0, exactly 2^63 ->
 * INT64_MIN, above -> INT64_MAX, below -2^63 -> INT64_MIN, otherwise
 * truncation toward zero. */
int64_t sh_mongo_double_to_long(double d);
void sh_mongo_hash_double_batch(const double *values, size_t n, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_MD5_H */
