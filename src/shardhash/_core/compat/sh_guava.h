/*
 * shardhash core: Guava's Hashing.consistentHash(long input, int buckets).
 *
 * Written from Guava's documented algorithm (com.google.common.hash.Hashing
 * and its LinearCongruentialGenerator): the jump-hash loop with Java's int
 * and double semantics reproduced exactly, including
 *   - the int overflow of `(int) (state >>> 33) + 1` when the top 31 bits of
 *     the state are all ones: the divisor becomes -1.0, the candidate
 *     negative, and the loop returns at once (consistentHash(
 *     2687259751451158933, 1000000007) == 195, where jump hash gives
 *     844379201);
 *   - Java's saturating double-to-int conversion.
 * Plain C99, no Python.h.
 */
#ifndef SH_GUAVA_H
#define SH_GUAVA_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* buckets must be >= 1 (Guava throws otherwise; callers validate). */
int32_t sh_guava_consistent_hash(int64_t input, int32_t buckets);

/* out[i] = consistent_hash(keys[i], buckets) */
void sh_guava_consistent_hash_batch(const int64_t *keys, size_t n, int32_t buckets, int32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_GUAVA_H */
