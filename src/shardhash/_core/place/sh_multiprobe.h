/*
 * shardhash core: multi-probe consistent hashing (Appleton & O'Reilly 2015,
 * "Multi-probe consistent hashing", arXiv 1505.00062).
 *
 * Plain C99, no Python.h, no allocation.  One token per shard on a 64-bit
 * circle (several are allowed: owners maps tokens to shards), k probes per
 * key.  The definition (docs/routers.md 2.15):
 *
 *   probe_i(h) = mix64(h + (i + 1) * SH_MPROBE_GAMMA),  i = 0 .. k-1
 *       (the first k outputs of SplitMix64 seeded with h; uint64 arithmetic)
 *   dist(p, t) = (t - p) mod 2^64        (clockwise distance, 0 when t == p)
 *   a key goes to the owner of the token t minimising min_i dist(probe_i, t);
 *   among equal distances, the smallest owner index wins.
 *
 * For each probe only its successor token (the first token >= p, wrapping
 * to the first token) can be the minimum, so a lookup is k successor
 * searches.
 *
 * Replica lists (sh_replicas.h) extend the rule: shard s's score is
 * min over probes and over s's tokens of dist(probe_i, t); the preference
 * order sorts shards by (score, shard index).
 */
#ifndef SH_MULTIPROBE_H
#define SH_MULTIPROBE_H

#include "sh_common.h"
#include "sh_place.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SH_MPROBE_GAMMA      UINT64_C(0x9e3779b97f4a7c15)
#define SH_MPROBE_MAX_PROBES 64
#define SH_MPROBE_MAX_BITS   20

/* Tokens and their index.  Preconditions (the builder checks them):
 * ntokens >= 1 and < 2^32 - 2; tokens strictly increasing, followed by two
 * sentinel entries tokens[ntokens] = tokens[ntokens + 1] = UINT64_MAX (so
 * the tokens array holds ntokens + 2 entries); owners[i] >= 0 (ntokens
 * entries);
 * 1 <= probes <= SH_MPROBE_MAX_PROBES; index from sh_mprobe_build_index with
 * the same tokens and bits (1 <= bits <= SH_MPROBE_MAX_BITS), shift = 64 - bits. */
typedef struct {
    const uint64_t *tokens;
    const int32_t *owners;
    size_t ntokens;
    const uint32_t *index; /* (1 << bits) + 1 entries */
    unsigned shift;
    unsigned probes;
} sh_mprobe;

SH_FORCE_INLINE uint64_t sh_mprobe_probe(uint64_t h, unsigned i)
{
    return sh_mix64(h + (uint64_t)(i + 1u) * SH_MPROBE_GAMMA);
}

/* Index bits for ntokens tokens: the smallest bits >= 1 with
 * 2^bits >= 4 * ntokens, at most SH_MPROBE_MAX_BITS. */
unsigned sh_mprobe_index_bits(size_t ntokens);
/* index[p] = the first position j with (tokens[j] >> (64 - bits)) >= p, for
 * p = 0 .. 2^bits (ntokens when there is none).  index: (1 << bits) + 1
 * entries. */
void sh_mprobe_build_index(const uint64_t *tokens, size_t ntokens, unsigned bits, uint32_t *index);

/* Position of the successor token of x: the first token >= x, or 0 (wrap)
 * when x is above every token. */
SH_FORCE_INLINE size_t sh_mprobe_successor(const sh_mprobe *m, uint64_t x)
{
    /* The index leaves at most a few tokens below x in x's prefix (about
     * one prefix in 500 holds three or more): count two without branches,
     * then a loop that almost never runs; the sentinels stop it. */
    const uint64_t *t = m->tokens;
    size_t j = m->index[x >> m->shift];
    j += (size_t)(t[j] < x) + (size_t)(t[j + 1] < x);
    while (t[j] < x) j++;
    return j == m->ntokens ? 0 : j;
}

/* Shard index of key hash h. */
int32_t sh_mprobe_lookup(const sh_mprobe *m, uint64_t h);
/* out[i] = sh_mprobe_lookup(m, hashes[i]). */
void sh_mprobe_batch(const sh_mprobe *m, const uint64_t *hashes, size_t n, int32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_MULTIPROBE_H */
