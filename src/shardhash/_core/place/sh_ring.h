/*
 * shardhash core: consistent-hash ring lookup.
 *
 * Part of the placement kernels (sh_place.h): plain C99, no Python.h.
 */
#ifndef SH_RING_H
#define SH_RING_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Consistent-hash ring.  tokens[0 .. ntokens-1]: strictly increasing;
 * owners[i] owns the arc (tokens[i-1], tokens[i]]; the arc past the last
 * token wraps to tokens[0].  Both arrays carry one sentinel entry:
 * tokens[ntokens] = UINT64_MAX and owners[ntokens] = owners[0].
 *
 * The index has 2^bits entries, one per prefix p = h >> shift (clamped to
 * 2^bits - 1).  An entry is either SH_RING_EMPTY | owner, when no token has
 * prefix p (every hash with that prefix goes to the same token), or the
 * position of the first token with prefix p.  Owners and positions must be
 * < 2^31.
 */
#define SH_RING_EMPTY    UINT32_C(0x80000000)
#define SH_RING_MAX_BITS 22

typedef struct {
    const uint64_t *tokens;
    const int32_t *owners;
    size_t ntokens;
    const uint32_t *index;
    uint64_t index_last; /* 2^bits - 1: largest prefix */
    unsigned shift;      /* width - bits */
} sh_ring;

/* Position of h's successor token: the first token >= h, wrapping to 0
 * past the last. */
SH_INLINE size_t sh_ring_successor(const uint64_t *tokens, size_t ntokens, uint64_t h)
{
    size_t i = sh_lower_bound_u64(tokens, 0, ntokens, h);
    return i == ntokens ? 0 : i;
}

/* Number of prefix bits used for ntokens tokens over a `width`-bit space. */
unsigned sh_ring_index_bits(size_t ntokens, unsigned width);
/* Fill index[0 .. 2^bits - 1] (tokens/owners with their sentinels). */
void sh_ring_build_index(const uint64_t *tokens, const int32_t *owners, size_t ntokens, unsigned shift,
                         unsigned bits, uint32_t *index);
int32_t sh_ring_lookup(const sh_ring *r, uint64_t h);
void sh_ring_batch(const sh_ring *r, const uint64_t *hashes, size_t n, int32_t *out);

/* A compact copy of a ring for one key at a time (scalar route): 16-bit
 * index entries and 16-bit owners, about SH_RING16_PER_TOKEN prefixes per
 * token, so that the index of a ring of ten thousand tokens stays in the
 * level-2 cache between calls instead of missing to memory.  Usable when
 * ntokens < 2^15 and every owner < 2^15 (sh_ring16_fits); the answers are
 * exactly sh_ring_lookup's.  tokens/ntokens are the ring's own arrays. */
#define SH_RING16_EMPTY     0x8000u
#define SH_RING16_PER_TOKEN 4

typedef struct {
    const uint64_t *tokens; /* the ring's tokens, with the sentinel */
    const uint16_t *owners; /* owners[0 .. ntokens], with the sentinel */
    const uint16_t *index;  /* SH_RING16_EMPTY | owner, or a token position */
    size_t ntokens;
    uint64_t index_last;
    unsigned shift;
} sh_ring16;

int sh_ring16_fits(size_t ntokens, const int32_t *owners);
/* Number of prefix bits of the compact index (at most 16). */
unsigned sh_ring16_index_bits(size_t ntokens, unsigned width);
/* The index is sh_ring_build_index's with bits16 bits, each entry narrowed:
 * SH_RING_EMPTY | owner becomes SH_RING16_EMPTY | owner, a position stays. */

SH_FORCE_INLINE int32_t sh_ring16_lookup(const sh_ring16 *r, uint64_t h)
{
    uint64_t p = r->shift >= 64 ? 0 : h >> r->shift;
    const uint64_t *tokens = r->tokens;
    unsigned e;
    size_t lo;
    int k;
    if (p > r->index_last) p = r->index_last;
    e = r->index[p];
    if (e & SH_RING16_EMPTY) return (int32_t)(e & (SH_RING16_EMPTY - 1u));
    lo = e;
    for (k = 0; k < 4; k++, lo++)
        if (tokens[lo] >= h) return r->owners[lo];
    return r->owners[sh_lower_bound_u64(tokens, lo, r->ntokens, h)];
}

#ifdef __cplusplus
}
#endif

#endif /* SH_RING_H */
