/*
 * shardhash core: MongoDB hashed shard keys (the hashed-index value of a
 * number: MD5 of seed, canonical type and value, see sh_md5.h).
 */
#ifndef SH_MONGO_H
#define SH_MONGO_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#endif /* SH_MONGO_H */
