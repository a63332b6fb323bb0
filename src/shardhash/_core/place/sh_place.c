/*
 * shardhash core: placement kernels (see sh_place.h and docs/routers.md).
 */
#include "sh_place.h"

#include <math.h>

/* ------------------------------------------------------------------------ */
/* Jump consistent hash                                                      */

#define SH_JUMP_MULT UINT64_C(2862933555777941757)

/* One key at a time the cost is latency: each step's bucket b feeds the
 * next step through int -> double -> int conversions.  With SSE4.1 (chosen
 * at run time on x86-64 by sh_place_init, see sh_cpu.h) the loop keeps b + 1
 * as a double and truncates with roundsd, a shorter chain, and is bit-exact:
 * while the key runs, p < num_buckets <= 2^31, so trunc(p) + 1 is exact and
 * equals the reference's (double)(j + 1); j >= n <=> p >= n since n is an
 * integer and p >= 0; and (b + 1) * q is the same correctly rounded product. */
#ifdef SH_X86_SSE41
#include <smmintrin.h>

SH_TARGET("sse4.1")
static int32_t sh_jump_sse41(uint64_t key, int32_t num_buckets)
{
    const double n = (double)num_buckets;
    double bp1 = 1.0, p;  /* b + 1, after the first step's b = 0 */
    __m128d v;
    for (;;) {
        key = key * SH_JUMP_MULT + 1;
        p = bp1 * (2147483648.0 / (double)((key >> 33) + 1));
        if (p >= n) return (int32_t)(bp1 - 1.0);
        v = _mm_set_sd(p);
        bp1 = _mm_cvtsd_f64(_mm_round_sd(v, v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)) + 1.0;
    }
}
#endif

/* The SH_CPU_* kernels chosen by sh_place_init; 0 (the portable kernels)
 * until it runs.  Written only by sh_place_init, which the caller runs once
 * before any other thread can run a kernel (the Python module does at
 * import), so the kernels only ever read it. */
static unsigned sh_place_cpu = 0;

void sh_place_init(void)
{
    sh_place_cpu = sh_cpu_detect();
}

unsigned sh_place_features(void)
{
    return sh_place_cpu;
}

int32_t sh_jump_reference(uint64_t key, int32_t num_buckets)
{
    int64_t b = -1, j = 0;
    while (j < num_buckets) {
        b = j;
        key = key * SH_JUMP_MULT + 1;
        j = (int64_t)((double)(b + 1) * (2147483648.0 / (double)((key >> 33) + 1)));
    }
    return (int32_t)b;
}

int32_t sh_jump(uint64_t key, int32_t num_buckets)
{
#ifdef SH_X86_SSE41
    if ((sh_place_cpu & SH_CPU_SSE41) && num_buckets >= 1) return sh_jump_sse41(key, num_buckets);
#endif
    return sh_jump_reference(key, num_buckets);
}

#define SH_JUMP_LANES 8

#define SH_JUMP_STEP(k, b, j)                                                            \
    do {                                                                                 \
        (b) = (j);                                                                       \
        (k) = (k) * SH_JUMP_MULT + 1;                                                    \
        (j) = (int64_t)((double)((b) + 1) * (2147483648.0 / (double)(((k) >> 33) + 1))); \
    } while (0)

void sh_jump_batch(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out)
{
    /* sh_jump_avx2.c: the AVX2 kernel where the build and the CPU have it;
     * sh_jump_neon.c: the NEON kernel on aarch64; else sh_jump_batch_scalar. */
    if (sh_place_cpu & SH_CPU_AVX2)
        sh_jump_batch_avx2(hashes, n, num_buckets, out);
    else
        sh_jump_batch_neon(hashes, n, num_buckets, out);
}

void sh_jump_batch_scalar(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out)
{
    /* Eight independent keys are in flight at once, so their divisions
     * overlap in the pipeline.  A lane whose key is finished writes its
     * bucket and takes the next key at once (no lane waits for the slowest
     * key of a group).  The arithmetic of each step is exactly sh_jump's. */
    uint64_t k[SH_JUMP_LANES];
    int64_t b[SH_JUMP_LANES], j[SH_JUMP_LANES];
    size_t at[SH_JUMP_LANES], next;
    const int64_t nb = num_buckets;
    int l, m;
    if (num_buckets < 1) {  /* the reference's answer: no step runs, b stays -1 */
        for (next = 0; next < n; next++) out[next] = -1;
        return;
    }
    if (n < 2 * SH_JUMP_LANES) {
        for (next = 0; next < n; next++) out[next] = sh_jump(hashes[next], num_buckets);
        return;
    }
    for (l = 0; l < SH_JUMP_LANES; l++) {
        k[l] = hashes[l];
        b[l] = -1;
        j[l] = 0;
        at[l] = (size_t)l;
    }
    next = SH_JUMP_LANES;
    for (;;) {
        for (l = 0; l < SH_JUMP_LANES; l++) {
            if (j[l] >= nb) {
                out[at[l]] = (int32_t)b[l];
                if (next == n) goto drain;
                at[l] = next;
                k[l] = hashes[next++];
                b[l] = -1;
                j[l] = 0;
            }
            SH_JUMP_STEP(k[l], b[l], j[l]);
        }
    }
drain:
    /* Lane l is written and no key is left: finish the others one by one. */
    for (m = 0; m < SH_JUMP_LANES; m++) {
        if (m == l) continue;
        while (j[m] < nb) SH_JUMP_STEP(k[m], b[m], j[m]);
        out[at[m]] = (int32_t)b[m];
    }
}

/* ------------------------------------------------------------------------ */
/* Fast modulo                                                               */

void sh_fastmod_init(sh_fastmod *f, uint64_t d)
{
    /* M = floor((2^128 - 1) / d) + 1 (mod 2^128), by binary long division. */
    uint64_t q_hi = 0, q_lo = 0, r = 0;
    int bit;
    if (d == 0) d = 1;
    for (bit = 127; bit >= 0; bit--) {
        uint64_t top = r >> 63;  /* remainder about to overflow 64 bits */
        r = (r << 1) | 1u;       /* every bit of 2^128 - 1 is one */
        if (top || r >= d) {
            r -= d;
            if (bit >= 64) q_hi |= (uint64_t)1 << (bit - 64);
            else q_lo |= (uint64_t)1 << bit;
        }
    }
    q_lo += 1;
    if (q_lo == 0) q_hi += 1;
    f->m_lo = q_lo;
    f->m_hi = q_hi;
    f->d = d;
}

void sh_bucket_batch(const uint64_t *hashes, size_t n, const sh_fastmod *f,
                     const int32_t *placement, int32_t *out)
{
    size_t i;
    const sh_fastmod fm = *f;
    if ((fm.d & (fm.d - 1)) == 0) {
        const uint64_t mask = fm.d - 1;  /* power of two: the remainder is a mask */
        for (i = 0; i < n; i++) out[i] = placement[hashes[i] & mask];
        return;
    }
    for (i = 0; i < n; i++) out[i] = placement[sh_fastmod_u64(hashes[i], &fm)];
}

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

void sh_ring_build_index(const uint64_t *tokens, const int32_t *owners, size_t ntokens,
                         unsigned shift, unsigned bits, uint32_t *index)
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
        if (i == ntokens || pref > p)  /* no token in this prefix: store its owner */
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
    size_t lo, hi;
    int k;
    if (p > last) p = last;
    e = index[p];
    if (e & SH_RING_EMPTY) return (int32_t)(e & ~SH_RING_EMPTY);
    lo = e;
    /* tokens[ntokens] is UINT64_MAX, so the scan always stops. */
    for (k = 0; k < 4; k++, lo++)
        if (tokens[lo] >= h) return owners[lo];
    /* A crowded prefix: binary search the rest of the ring. */
    hi = ntokens;
    while (lo < hi) {
        size_t mid = lo + ((hi - lo) >> 1);
        if (tokens[mid] < h) lo = mid + 1;
        else hi = mid;
    }
    return owners[lo];
}

int32_t sh_ring_lookup(const sh_ring *r, uint64_t h)
{
    return sh_ring_lookup_inline(r->tokens, r->owners, r->ntokens, r->index, r->index_last,
                                 r->shift, h);
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

/* ------------------------------------------------------------------------ */
/* Maglev                                                                    */

int sh_maglev_populate(const uint64_t *shard_hashes, const double *weights, size_t nshards,
                       uint64_t m, int32_t *table, uint64_t *pos, double *credit)
{
    uint64_t filled = 0, c;
    size_t i;
    if (nshards == 0 || m < 2 || m < nshards) return -1;
    /* pos[] holds each shard's next candidate slot; skips are recomputed
     * from the shard hash (cheap) to avoid a third workspace. */
    for (c = 0; c < m; c++) table[c] = -1;
    for (i = 0; i < nshards; i++) {
        pos[i] = sh_mix64(shard_hashes[i] ^ SH_MAGLEV_OFFSET_SALT) % m;
        credit[i] = 0.0;
    }
    for (;;) {
        for (i = 0; i < nshards; i++) {
            uint64_t p, s;
            if (weights) {
                credit[i] += weights[i];
                if (credit[i] < 1.0) continue;
                credit[i] -= 1.0;
            }
            s = sh_mix64(shard_hashes[i] ^ SH_MAGLEV_SKIP_SALT) % (m - 1) + 1;
            p = pos[i];
            while (table[p] >= 0) {
                p += s;
                if (p >= m) p -= m;
            }
            table[p] = (int32_t)i;
            p += s;
            if (p >= m) p -= m;
            pos[i] = p;
            if (++filled == m) return 0;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Rendezvous                                                                */

SH_FORCE_INLINE int32_t sh_rendezvous_inline(uint64_t h, const uint64_t *seeds,
                                             const double *weights, size_t nshards)
{
    size_t i, best = 0;
    if (weights == NULL) {
        uint64_t bx = sh_mix64(h ^ seeds[0]);
        for (i = 1; i < nshards; i++) {
            uint64_t x = sh_mix64(h ^ seeds[i]);
            if (x > bx) {
                bx = x;
                best = i;
            }
        }
    } else {
        double bs = -1.0;
        for (i = 0; i < nshards; i++) {
            uint64_t x = sh_mix64(h ^ seeds[i]);
            /* u in (0, 1): an odd 53-bit integer over 2^53, exact in a double. */
            double u = (double)((x >> 11) | 1u) * (1.0 / 9007199254740992.0);
            double s = -weights[i] / log(u);
            if (s > bs) {
                bs = s;
                best = i;
            }
        }
    }
    return (int32_t)best;
}

int32_t sh_rendezvous(uint64_t h, const uint64_t *seeds, const double *weights, size_t nshards)
{
    return sh_rendezvous_inline(h, seeds, weights, nshards);
}

void sh_rendezvous_batch(const uint64_t *hashes, size_t n, const uint64_t *seeds,
                         const double *weights, size_t nshards, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_rendezvous_inline(hashes[i], seeds, weights, nshards);
}

/* ------------------------------------------------------------------------ */
/* Overrides                                                                 */

int32_t sh_override_find(const uint64_t *ohashes, const int32_t *oshards, size_t m, uint64_t h)
{
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + ((hi - lo) >> 1);
        if (ohashes[mid] < h) lo = mid + 1;
        else hi = mid;
    }
    if (lo < m && ohashes[lo] == h) return oshards[lo];
    return -1;
}

void sh_override_batch(const uint64_t *ohashes, const int32_t *oshards, size_t m,
                       const uint64_t *hashes, size_t n, int32_t *out)
{
    size_t i;
    if (m == 0) return;
    for (i = 0; i < n; i++) {
        uint64_t h = hashes[i];
        int32_t s;
        if (h < ohashes[0] || h > ohashes[m - 1]) continue;
        s = sh_override_find(ohashes, oshards, m, h);
        if (s >= 0) out[i] = s;
    }
}
