/*
 * shardhash core: consistent-hash ring lookup (see sh_ring.h and docs/routers.md).
 */
#include "sh_ring.h"

/* ------------------------------------------------------------------------ */
/* Ring                                                                      */

unsigned sh_ring_index_bits(size_t ntokens, unsigned width)
{
    /* About eight prefixes per token: seven in eight prefixes then hold no
     * token and answer from the index alone (4 bytes per prefix, so at most
     * 2^SH_RING_MAX_BITS * 4 bytes). */
    unsigned bits = 1;
    unsigned cap = width < SH_RING_MAX_BITS ? width : SH_RING_MAX_BITS;
    while (bits < cap && ((size_t)1 << bits) < 8 * ntokens) bits++;
    return bits;
}

void sh_ring_build_index(const uint64_t *tokens, const int32_t *owners, size_t ntokens, unsigned shift,
                         unsigned bits, uint32_t *index)
{
    uint64_t p, count = (uint64_t)1 << bits, last = count - 1;
    size_t i = 0;
    for (p = 0; p < count; p++) {
        uint64_t pref = 0;
        while (i < ntokens) {
            pref = shift >= 64 ? 0 : tokens[i] >> shift;
            if (pref > last) pref = last;
            if (pref >= p) break;
            i++;
        }
        if (i == ntokens || pref > p) /* no token in this prefix: store its owner */
            index[p] = SH_RING_EMPTY | (uint32_t)owners[i];
        else
            index[p] = (uint32_t)i;
    }
}

SH_FORCE_INLINE int32_t sh_ring_lookup_inline(const uint64_t *SH_RESTRICT tokens,
                                              const int32_t *SH_RESTRICT owners, size_t ntokens,
                                              const uint32_t *SH_RESTRICT index, uint64_t last,
                                              unsigned shift, uint64_t h)
{
    uint64_t p = shift >= 64 ? 0 : h >> shift;
    uint32_t e;
    size_t lo;
    int k;
    if (p > last) p = last;
    e = index[p];
    if (e & SH_RING_EMPTY) return (int32_t)(e & ~SH_RING_EMPTY);
    lo = e;
    /* tokens[ntokens] is UINT64_MAX, so the scan always stops. */
    for (k = 0; k < 4; k++, lo++)
        if (tokens[lo] >= h) return owners[lo];
    /* A crowded prefix: binary search the rest of the ring. */
    return owners[sh_lower_bound_u64(tokens, lo, ntokens, h)];
}

int32_t sh_ring_lookup(const sh_ring *r, uint64_t h)
{
    return sh_ring_lookup_inline(r->tokens, r->owners, r->ntokens, r->index, r->index_last, r->shift, h);
}

void sh_ring_batch(const sh_ring *r, const uint64_t *hashes, size_t n, int32_t *out)
{
    size_t i;
    const uint64_t *tokens = r->tokens;
    const int32_t *owners = r->owners;
    const uint32_t *index = r->index;
    const size_t ntokens = r->ntokens;
    const uint64_t last = r->index_last;
    const unsigned shift = r->shift;
    for (i = 0; i < n; i++)
        out[i] = sh_ring_lookup_inline(tokens, owners, ntokens, index, last, shift, hashes[i]);
}

int sh_ring16_fits(size_t ntokens, const int32_t *owners)
{
    size_t i;
    if (ntokens >= SH_RING16_EMPTY) return 0;
    for (i = 0; i <= ntokens; i++)
        if (owners[i] < 0 || (uint32_t)owners[i] >= SH_RING16_EMPTY) return 0;
    return 1;
}

unsigned sh_ring16_index_bits(size_t ntokens, unsigned width)
{
    unsigned bits = 1;
    unsigned cap = width < 16 ? width : 16;
    while (bits < cap && ((size_t)1 << bits) < SH_RING16_PER_TOKEN * ntokens) bits++;
    return bits;
}
