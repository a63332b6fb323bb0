/*
 * shardhash core: multi-probe consistent hashing (see sh_multiprobe.h and
 * docs/routers.md 2.15).
 */
#include "sh_multiprobe.h"

unsigned sh_mprobe_index_bits(size_t ntokens)
{
    unsigned bits = 1;
    while (bits < SH_MPROBE_MAX_BITS && ((size_t)1 << bits) < 4 * ntokens) bits++;
    return bits;
}

void sh_mprobe_build_index(const uint64_t *tokens, size_t ntokens, unsigned bits, uint32_t *index)
{
    const unsigned shift = 64u - bits;
    const uint64_t count = (uint64_t)1 << bits;
    uint64_t p;
    size_t j = 0;
    for (p = 0; p <= count; p++) {
        while (j < ntokens && (tokens[j] >> shift) < p) j++;
        index[p] = (uint32_t)j;
    }
}

SH_FORCE_INLINE int32_t sh_mprobe_lookup_inline(const sh_mprobe *m, uint64_t h)
{
    const unsigned k = m->probes;
    unsigned i;
    uint64_t best_d;
    int32_t best;
    /* Keep the best (distance, owner); compare without a
     * data-dependent branch (a probe improves on the best about H_k / k of
     * the time, at random). */
    {
        uint64_t p = sh_mprobe_probe(h, 0);
        size_t j = sh_mprobe_successor(m, p);
        best_d = m->tokens[j] - p;
        best = m->owners[j];
    }
    for (i = 1; i < k; i++) {
        uint64_t p = sh_mprobe_probe(h, i);
        size_t j = sh_mprobe_successor(m, p);
        uint64_t d = m->tokens[j] - p;
        int32_t o = m->owners[j];
        int better = (d < best_d) | ((d == best_d) & (o < best));
        best_d = better ? d : best_d;
        best = better ? o : best;
    }
    return best;
}

int32_t sh_mprobe_lookup(const sh_mprobe *m, uint64_t h)
{
    return sh_mprobe_lookup_inline(m, h);
}

void sh_mprobe_batch(const sh_mprobe *m, const uint64_t *hashes, size_t n, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_mprobe_lookup_inline(m, hashes[i]);
}
