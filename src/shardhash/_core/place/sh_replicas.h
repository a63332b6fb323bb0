/*
 * shardhash core: replica (preference) lists.
 *
 * Plain C99, no Python.h, no allocation.  Each strategy defines a preference
 * order P(h) = (p1, p2, ...) of distinct shards for a key hash h; a replica
 * list of length r is taken from it (docs/routers.md 2.17):
 *
 *   ring:        owners of the tokens met walking clockwise from the
 *                successor of h (first token >= h, wrapping), each shard
 *                the first time it is met;  p1 is the ring's route;
 *   rendezvous:  shards by descending draw (unweighted: x_i = mix64(h ^
 *                seed_i); weighted: score_i = -w_i / ln(u_i), as sh_place.h),
 *                ties to the smaller index;  p1 is sh_rendezvous's answer;
 *   multi-probe: shards by ascending score_s = min over probes i and tokens t
 *                of s of (t - probe_i) mod 2^64, ties to the smaller index;
 *                p1 is sh_mprobe_lookup's answer;
 *   rehash walk (jump, memento, Maglev, bucket tables): the routes of
 *                x_0 = h, x_a = mix64((h ^ SH_REPLICA_SALT) + a * SH_GOLDEN64)
 *                for a = 1 .. SH_REPLICA_ATTEMPTS * nshards - 1, each shard
 *                the first time it appears, then every shard not met, in
 *                index order;  p1 is the route.
 *
 * Without zones the list is the first r shards of P.  With a zone per shard
 * (zones[s] in [0, nzones)), the rule of Cassandra's
 * NetworkTopologyStrategy: walk P; a shard whose zone is not yet in the list
 * is taken; a shard whose zone is already in it is set aside (skipped);
 * the moment every one of the nzones zones is in the list, the skipped
 * shards are appended in the order they were met, and from then on every
 * shard is taken as met.  If P ends first, the skipped shards are appended
 * in order.  So no two replicas share a zone while r <= nzones.
 *
 * Common arguments and preconditions (validation is the binding's job):
 *   nshards >= 1; 1 <= r <= nshards; every shard index < nshards;
 *   zones: NULL, or nshards entries in [0, nzones) with nzones >= 1;
 *   mark: nshards bytes, all zero on entry, left all zero on return;
 *   zmark: nzones bytes, all zero on entry, left all zero (NULL without zones);
 *   skip: nshards entries of workspace (NULL without zones);
 *   out: r entries (batch: n * r, row i at out + i * r).
 * Each call returns the number of shards written, r unless P has fewer
 * shards (a ring where some shard owns no token): then the rest of the row
 * is -1.
 */
#ifndef SH_REPLICAS_H
#define SH_REPLICAS_H

#include "sh_common.h"
#include "sh_memento.h"
#include "sh_multiprobe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const int32_t *zones; /* NULL: no constraint */
    int32_t nzones;
    uint8_t *mark;  /* nshards */
    uint8_t *zmark; /* nzones */
    int32_t *skip;  /* nshards */
} sh_replica_work;

/* Ring: tokens strictly increasing, ntokens >= 1, owners in [0, nshards). */
size_t sh_ring_replicas(const uint64_t *tokens, const int32_t *owners, size_t ntokens, size_t nshards,
                        uint64_t h, size_t r, const sh_replica_work *w, int32_t *out);
void sh_ring_replicas_batch(const uint64_t *tokens, const int32_t *owners, size_t ntokens, size_t nshards,
                            const uint64_t *hashes, size_t n, size_t r, const sh_replica_work *w,
                            int32_t *out);

/* Rendezvous: seeds and weights as sh_rendezvous (weights NULL or every
 * weight > 0 and finite).  scratch: nshards uint64 of workspace. */
size_t sh_rendezvous_replicas(const uint64_t *seeds, const double *weights, size_t nshards, uint64_t h,
                              size_t r, const sh_replica_work *w, uint64_t *scratch, int32_t *out);
void sh_rendezvous_replicas_batch(const uint64_t *seeds, const double *weights, size_t nshards,
                                  const uint64_t *hashes, size_t n, size_t r, const sh_replica_work *w,
                                  uint64_t *scratch, int32_t *out);

/* Multi-probe: m as sh_mprobe_lookup, owners in [0, nshards). */
size_t sh_mprobe_replicas(const sh_mprobe *m, size_t nshards, uint64_t h, size_t r, const sh_replica_work *w,
                          int32_t *out);
void sh_mprobe_replicas_batch(const sh_mprobe *m, size_t nshards, const uint64_t *hashes, size_t n, size_t r,
                              const sh_replica_work *w, int32_t *out);

/* Rehash walk.  The a-th probe of key hash h (a = 0 is h itself). */
#define SH_REPLICA_SALT     UINT64_C(0x7265706c69636131) /* "replica1" */
#define SH_REPLICA_ATTEMPTS 8

SH_FORCE_INLINE uint64_t sh_replica_rehash(uint64_t h, uint64_t a)
{
    return a == 0 ? h : sh_mix64((h ^ SH_REPLICA_SALT) + a * SH_GOLDEN64);
}

/* Jump / MementoHash: routes through sh_memento_bucket, then map (bucket ->
 * shard index, n entries; NULL only when nothing is removed, the shards then
 * being the buckets); nshards = the number of working buckets. */
size_t sh_memento_replicas(const sh_memento *m, const int32_t *map, size_t nshards, uint64_t h, size_t r,
                           const sh_replica_work *w, int32_t *out);
void sh_memento_replicas_batch(const sh_memento *m, const int32_t *map, size_t nshards,
                               const uint64_t *hashes, size_t n, size_t r, const sh_replica_work *w,
                               int32_t *out);

/* Maglev and bucket tables: route(x) = table[x mod tsize] (tsize >= 1,
 * entries in [0, nshards)). */
size_t sh_table_replicas(const int32_t *table, uint64_t tsize, size_t nshards, uint64_t h, size_t r,
                         const sh_replica_work *w, int32_t *out);
void sh_table_replicas_batch(const int32_t *table, uint64_t tsize, size_t nshards, const uint64_t *hashes,
                             size_t n, size_t r, const sh_replica_work *w, int32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_REPLICAS_H */
