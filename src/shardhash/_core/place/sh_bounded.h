/*
 * shardhash core: consistent hashing with bounded loads (Mirrokni, Thorup &
 * Zadimoghaddam 2018, "Consistent Hashing with Bounded Loads", arXiv
 * 1608.01350; HAProxy's hash-balance-factor and Envoy's hash_balance_factor
 * use the same rule).
 *
 * Plain C99, no Python.h, no allocation.  Items (keys, or weighted items
 * such as tenants with sizes) are placed one at a time on a ring; an item
 * starts at its successor token (the first token >= its hash, wrapping) and
 * walks the tokens clockwise until it meets a shard whose load plus the
 * item's size stays within that shard's capacity.  The definition
 * (docs/routers.md 2.16):
 *
 *   capacity, balance factor f (percent, f >= 100, i.e. 1 + eps = f / 100),
 *   total size T over N shards:  cap = ceil(T * f / (100 * N))
 *       computed exactly in integers (sh_bounded_capacity); per-shard caps
 *       are allowed (weighted shards; cap 0 for a shard being drained);
 *   order: items in `order` (default: input order); with a previous
 *       placement, pass 1 keeps every item whose previous shard still has
 *       room (in order), pass 2 places the others (in order);
 *   walk: positions j0, j0+1, ... (mod ntokens), j0 = successor of the hash;
 *       the first shard s with load[s] + size <= cap[s] takes the item;
 *   overflow: when no shard has room after a full circle, the item goes to
 *       the shard with the smallest load (ties: smallest index) and counts
 *       as an overflow (never happens for unit sizes when the sum of caps
 *       is at least the number of items).
 */
#ifndef SH_BOUNDED_H
#define SH_BOUNDED_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ceil(total * factor_percent / (100 * nshards)) with a 128-bit product;
 * UINT64_MAX when the result does not fit.  Preconditions: nshards >= 1,
 * factor_percent >= 100 (not checked; 0 shards answers UINT64_MAX). */
uint64_t sh_bounded_capacity(uint64_t total, uint64_t nshards, uint32_t factor_percent);

/* Position of the successor token of h: first token >= h, 0 past the last. */
size_t sh_bounded_successor(const uint64_t *tokens, size_t ntokens, uint64_t h);

/* Place n items.
 *   tokens[ntokens]  strictly increasing ring positions, ntokens >= 1
 *   owners[ntokens]  shard index of each token, in [0, nshards)
 *   hashes[n]        the items' 64-bit hashes
 *   sizes[n]         the items' sizes, or NULL for 1 each
 *   order[n]         a permutation of 0..n-1 (the placement order), or NULL
 *   prev[n]          previous shard of each item (-1: none), or NULL;
 *                    every entry < nshards
 *   caps[nshards]    capacities
 *   load[nshards]    in: loads already present (zeros for a fresh batch);
 *                    out: plus this batch.  The sum of loads and sizes must
 *                    stay below 2^64.
 *   out[n]           the shard of each item
 * Returns the number of overflows (items placed above a cap). */
size_t sh_bounded_assign(const uint64_t *tokens, const int32_t *owners, size_t ntokens,
                         const uint64_t *hashes, const uint64_t *sizes, const size_t *order,
                         const int32_t *prev, size_t n, const uint64_t *caps, size_t nshards, uint64_t *load,
                         int32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_BOUNDED_H */
