/*
 * shardhash core: consistent hashing with bounded loads (see sh_bounded.h
 * and docs/routers.md 2.16).
 */
#include "sh_bounded.h"
#include "sh_ring.h"

uint64_t sh_bounded_capacity(uint64_t total, uint64_t nshards, uint32_t factor_percent)
{
    /* ceil(a / d) with a = total * f (128 bits) and d = 100 * nshards. */
    uint64_t a_hi, a_lo, d, q_hi, q_lo, r;
    if (nshards == 0 || nshards > UINT64_MAX / 100u) return UINT64_MAX;
    d = 100u * nshards;
    a_lo = sh_mul128(total, (uint64_t)factor_percent, &a_hi);
    q_lo = sh_div128(a_hi, a_lo, d, &q_hi, &r);
    if (q_hi != 0) return UINT64_MAX;
    if (r != 0) {
        if (q_lo == UINT64_MAX) return UINT64_MAX;
        q_lo++;
    }
    return q_lo;
}

size_t sh_bounded_successor(const uint64_t *tokens, size_t ntokens, uint64_t h)
{
    return sh_ring_successor(tokens, ntokens, h);
}

/* Walk from the hash's successor; the first shard with room, or the least
 * loaded shard (an overflow). */
static int32_t sh_bounded_place(const uint64_t *tokens, const int32_t *owners, size_t ntokens, uint64_t h,
                                uint64_t size, const uint64_t *caps, size_t nshards, uint64_t *load,
                                size_t *overflows)
{
    size_t j = sh_bounded_successor(tokens, ntokens, h), step, s, best = 0;
    for (step = 0; step < ntokens; step++) {
        int32_t o = owners[j];
        if (load[o] + size <= caps[o]) {
            load[o] += size;
            return o;
        }
        if (++j == ntokens) j = 0;
    }
    for (s = 1; s < nshards; s++)
        if (load[s] < load[best]) best = s;
    load[best] += size;
    (*overflows)++;
    return (int32_t)best;
}

size_t sh_bounded_assign(const uint64_t *tokens, const int32_t *owners, size_t ntokens,
                         const uint64_t *hashes, const uint64_t *sizes, const size_t *order,
                         const int32_t *prev, size_t n, const uint64_t *caps, size_t nshards, uint64_t *load,
                         int32_t *out)
{
    size_t t, overflows = 0;
    if (prev != NULL) {
        /* pass 1: keep whatever still fits where it was */
        for (t = 0; t < n; t++) {
            size_t i = order ? order[t] : t;
            uint64_t size = sizes ? sizes[i] : 1u;
            int32_t p = prev[i];
            out[i] = -1;
            if (p >= 0 && load[p] + size <= caps[p]) {
                load[p] += size;
                out[i] = p;
            }
        }
    }
    /* pass 2: everything not kept walks the ring */
    for (t = 0; t < n; t++) {
        size_t i = order ? order[t] : t;
        if (prev != NULL && out[i] >= 0) continue;
        out[i] = sh_bounded_place(tokens, owners, ntokens, hashes[i], sizes ? sizes[i] : 1u, caps, nshards,
                                  load, &overflows);
    }
    return overflows;
}
