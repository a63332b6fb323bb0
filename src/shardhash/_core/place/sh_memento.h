/*
 * shardhash core: MementoHash (Coluzzi, Brocco, Antonucci & Leidi 2023,
 * "MementoHash: a stateful, minimal memory, best performing consistent hash
 * algorithm", arXiv 2306.09783).
 *
 * Plain C99, no Python.h, no allocation.  Jump consistent hash over a
 * "b-array" of n buckets, plus a replacement record of the buckets removed
 * from it.  With no removal the answer is exactly sh_jump(h, n).  Removing any
 * working bucket moves only the keys that bucket held; restoring the last
 * removed bucket undoes the removal exactly.
 *
 * The record (the definition; docs/routers.md 2.14):
 *   replacer[b] = -1 for a working bucket b in [0, n);
 *   replacer[b] = w - 1 for a removed bucket, w being the number of working
 *                 buckets just before b was removed (so w - 1 is the number
 *                 of working buckets just after: the range a key of b is
 *                 re-hashed into).
 *
 * Lookup of a key hash h:
 *   b = jump(h, n);  c = replacer[b]
 *   while c >= 0:                       # b is removed
 *       b = mulhi64(rehash(h, b), c)    # uniform in [0, c)
 *       r = replacer[b]
 *       while r >= c:                   # b was removed before c's removal:
 *           b = r;  r = replacer[b]     #   bucket r stands in its place
 *       c = r
 *   return b
 * with rehash(h, b) = mix64((h ^ SH_MEMENTO_SALT) + b * SH_GOLDEN64) (uint64
 * arithmetic, b as an unsigned 64-bit integer) and mulhi64(x, c) the upper
 * 64 bits of the 128-bit product x * c.
 *
 * Removal (sh_memento_remove), of working bucket b, w working buckets:
 *   if nothing is recorded and b == n - 1: n = n - 1 (plain jump shrinks);
 *   else replacer[b] = w - 1.  Refused when w == 1 (no bucket would remain).
 */
#ifndef SH_MEMENTO_H
#define SH_MEMENTO_H

#include "sh_common.h"
#include "sh_place.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SH_MEMENTO_SALT UINT64_C(0x6d656d656e746f31) /* "memento1" */
#define SH_GOLDEN64     UINT64_C(0x9e3779b97f4a7c15) /* 2^64 / golden ratio, odd */

/* The re-hash of key hash h after it met removed bucket b. */
SH_FORCE_INLINE uint64_t sh_memento_rehash(uint64_t h, int32_t b)
{
    return sh_mix64((h ^ SH_MEMENTO_SALT) + (uint64_t)(uint32_t)b * SH_GOLDEN64);
}

/* A read-only view for lookups.  Preconditions (checked by the builder, not
 * here): 1 <= n <= 2^31 - 1; replacer has n entries, each -1 or in
 * [1, n - 1]; the recorded entries are exactly what a sequence of
 * sh_memento_remove calls produces (in particular the values >= 0 are
 * distinct and at least one bucket works); nremoved = number of entries
 * >= 0 (0 selects the plain jump path). */
typedef struct {
    const int32_t *replacer;
    int32_t n;
    int32_t nremoved;
} sh_memento;

/* The bucket of key hash h, in [0, n), always a working bucket. */
int32_t sh_memento_bucket(const sh_memento *m, uint64_t h);
/* The same, given b = sh_jump(h, n) already computed (for callers that
 * looked b up first and found it removed). */
int32_t sh_memento_resolve_from(const sh_memento *m, int32_t b, uint64_t h);

/* out[i] = map ? map[bucket(hashes[i])] : bucket(hashes[i]).  map (n
 * entries, NULL for the identity) turns buckets into shard indices; its
 * entries must be < 0 exactly for the removed buckets (they own no shard).
 * With nremoved == 0 and map == NULL this is sh_jump_batch. */
void sh_memento_batch(const sh_memento *m, const uint64_t *hashes, size_t n, const int32_t *map,
                      int32_t *out);

/* ---------------------------------------------------------------------------
 * Building a record: a mutable state over caller buffers.  replacer and prev
 * each hold `capacity` entries (capacity >= n: the largest b-array the
 * caller will grow to).  prev[b] links the removals for sh_memento_restore
 * (LIFO, as in the paper); last_removed is n when nothing is recorded.
 */
typedef struct {
    int32_t *replacer;
    int32_t *prev;
    int32_t capacity;
    int32_t n;
    int32_t nremoved;
    int32_t last_removed;
} sh_memento_state;

/* n working buckets, nothing removed.  Returns 0, or -1 when n < 1 or
 * n > capacity. */
int sh_memento_init(sh_memento_state *s, int32_t *replacer, int32_t *prev, int32_t capacity, int32_t n);
/* Remove working bucket b.  Returns 0, or -1 (state unchanged) when b is not
 * a working bucket or it is the only one. */
int sh_memento_remove(sh_memento_state *s, int32_t b);
/* Restore the most recently removed bucket (or grow the b-array by one when
 * nothing is recorded).  Returns the bucket that works again, or -1 (state
 * unchanged) when growing would exceed capacity. */
int32_t sh_memento_restore(sh_memento_state *s);
/* The lookup view of a state (valid while the state's buffers live). */
sh_memento sh_memento_view(const sh_memento_state *s);

#ifdef __cplusplus
}
#endif

#endif /* SH_MEMENTO_H */
