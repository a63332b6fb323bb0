/*
 * shardhash core: placement kernels over 64-bit hash values.
 *
 * Plain C99, no Python.h.  Every function maps a key's 64-bit hash to the
 * index of a shard (int32_t).  The algorithms, mixing functions and constants
 * here are part of shardhash's routing protocol (docs/routers.md): changing
 * any of them changes where keys live.
 *
 * Batch kernels share one shape: (const uint64_t *hashes, size_t n, ..., int32_t *out).
 * None allocates memory; tables are built by the caller.
 */
#ifndef SH_PLACE_H
#define SH_PLACE_H

#include "sh_common.h"
#include "sh_cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Mixing: the SplitMix64 finaliser (Steele, Lea & Flood 2014; the constants of
 * Stafford's "Mix13").  A bijection on 64-bit words.
 */
SH_FORCE_INLINE uint64_t sh_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* ---------------------------------------------------------------------------
 * Jump consistent hash (Lamping & Veach 2014), bit-exact with the paper's
 * reference code.  num_buckets must be >= 1.
 */
int32_t sh_jump(uint64_t key, int32_t num_buckets);
/* The paper's loop as written (sh_jump may take a faster, bit-exact path). */
int32_t sh_jump_reference(uint64_t key, int32_t num_buckets);
/* Same over a batch: out[i] = sh_jump(hashes[i], num_buckets).  Runs
 * sh_jump_batch_avx2 when sh_jump_avx2_available(), else sh_jump_batch_neon
 * (sh_jump_batch_scalar where there is no NEON kernel); all give identical
 * outputs. */
void sh_jump_batch(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out);
/* Portable kernel: eight independent keys interleaved per iteration. */
void sh_jump_batch_scalar(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out);
/* Choose the SIMD kernels for this CPU (sh_cpu_detect: cpuid/xgetbv on
 * x86-64).  Call it once, before any thread runs a kernel (the Python
 * module calls it at import); until then sh_jump, sh_jump_batch and
 * sh_jump_batch_avx2 run the portable code (same outputs). */
void sh_place_init(void);
/* The SH_CPU_* bits sh_place_init chose (0 before it ran). */
unsigned sh_place_features(void);
/* sh_jump_avx2.c: 1 when this build has the AVX2 kernel (SH_X86_AVX2 in
 * sh_cpu.h) and sh_place_init found AVX2 on the CPU, else 0. */
int sh_jump_avx2_available(void);
/* The AVX2 kernel (twelve keys in flight, IEEE arithmetic identical to
 * sh_jump's); sh_jump_batch_scalar when sh_jump_avx2_available() is 0 or
 * for batches under 128 keys. */
void sh_jump_batch_avx2(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out);
/* sh_jump_neon.c: 1 when this build has the aarch64 NEON kernel (SH_ARM_NEON). */
int sh_jump_neon_available(void);
/* The NEON kernel (four keys in flight, their divisions two per fdiv;
 * arithmetic identical to sh_jump's); sh_jump_batch_scalar where there is
 * no NEON kernel and for batches under 16 keys. */
void sh_jump_batch_neon(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out);

/* ---------------------------------------------------------------------------
 * Exact 64-bit modulo by a fixed divisor without a division instruction
 * (Lemire, Kaser & Kurz 2019, "Faster remainder by direct computation"):
 * M = floor((2^128 - 1) / d) + 1 taken mod 2^128; a % d = ((M * a) mod 2^128) * d >> 128.
 */
typedef struct {
    uint64_t m_lo, m_hi;  /* the 128-bit constant M */
    uint64_t d;           /* divisor, >= 1 */
} sh_fastmod;

void sh_fastmod_init(sh_fastmod *f, uint64_t d);

SH_FORCE_INLINE uint64_t sh_fastmod_u64(uint64_t a, const sh_fastmod *f)
{
    uint64_t lb_hi, lb_lo, p_hi, q_hi, q_lo, carry;
    /* lowbits = M * a mod 2^128 */
    lb_lo = sh_mul128(f->m_lo, a, &lb_hi);
    lb_hi += f->m_hi * a;
    /* (lowbits * d) >> 128 */
    (void)sh_mul128(lb_lo, f->d, &p_hi);
    q_lo = sh_mul128(lb_hi, f->d, &q_hi);
    carry = (q_lo + p_hi) < q_lo;
    return q_hi + carry;
}

/* Bucket routing: out[i] = placement[hashes[i] % f->d]. */
void sh_bucket_batch(const uint64_t *hashes, size_t n, const sh_fastmod *f,
                     const int32_t *placement, int32_t *out);

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
#define SH_RING_EMPTY UINT32_C(0x80000000)
#define SH_RING_MAX_BITS 22

typedef struct {
    const uint64_t *tokens;
    const int32_t *owners;
    size_t ntokens;
    const uint32_t *index;
    uint64_t index_last;   /* 2^bits - 1: largest prefix */
    unsigned shift;        /* width - bits */
} sh_ring;

/* Number of prefix bits used for ntokens tokens over a `width`-bit space. */
unsigned sh_ring_index_bits(size_t ntokens, unsigned width);
/* Fill index[0 .. 2^bits - 1] (tokens/owners with their sentinels). */
void sh_ring_build_index(const uint64_t *tokens, const int32_t *owners, size_t ntokens,
                         unsigned shift, unsigned bits, uint32_t *index);
int32_t sh_ring_lookup(const sh_ring *r, uint64_t h);
void sh_ring_batch(const sh_ring *r, const uint64_t *hashes, size_t n, int32_t *out);

/* A compact copy of a ring for one key at a time (scalar route): 16-bit
 * index entries and 16-bit owners, about SH_RING16_PER_TOKEN prefixes per
 * token, so that the index of a ring of ten thousand tokens stays in the
 * level-2 cache between calls instead of missing to memory.  Usable when
 * ntokens < 2^15 and every owner < 2^15 (sh_ring16_fits); the answers are
 * exactly sh_ring_lookup's.  tokens/ntokens are the ring's own arrays. */
#define SH_RING16_EMPTY 0x8000u
#define SH_RING16_PER_TOKEN 4

typedef struct {
    const uint64_t *tokens;   /* the ring's tokens, with the sentinel */
    const uint16_t *owners;   /* owners[0 .. ntokens], with the sentinel */
    const uint16_t *index;    /* SH_RING16_EMPTY | owner, or a token position */
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
    size_t lo, hi;
    int k;
    if (p > r->index_last) p = r->index_last;
    e = r->index[p];
    if (e & SH_RING16_EMPTY) return (int32_t)(e & (SH_RING16_EMPTY - 1u));
    lo = e;
    for (k = 0; k < 4; k++, lo++)
        if (tokens[lo] >= h) return r->owners[lo];
    hi = r->ntokens;
    while (lo < hi) {
        size_t mid = lo + ((hi - lo) >> 1);
        if (tokens[mid] < h) lo = mid + 1;
        else hi = mid;
    }
    return r->owners[lo];
}

/* ---------------------------------------------------------------------------
 * Maglev (Eisenbud et al. 2016).  shard_hashes[i] is shard i's identity hash;
 * offset_i = mix64(shard_hash ^ SH_MAGLEV_OFFSET_SALT) % m,
 * skip_i = mix64(shard_hash ^ SH_MAGLEV_SKIP_SALT) % (m - 1) + 1.
 * weights: NULL for equal weights, else relative weights in (0, 1] (each
 * shard's weight divided by the largest).  m must be prime and >= nshards.
 * Workspaces: pos (nshards uint64) and credit (nshards doubles).
 * Returns 0 on success, -1 on bad arguments.
 */
#define SH_MAGLEV_OFFSET_SALT UINT64_C(0x6f66667365743a31) /* "offset:1" */
#define SH_MAGLEV_SKIP_SALT   UINT64_C(0x736b69703a312121) /* "skip:1!!" */
int sh_maglev_populate(const uint64_t *shard_hashes, const double *weights, size_t nshards,
                       uint64_t m, int32_t *table, uint64_t *pos, double *credit);

/* ---------------------------------------------------------------------------
 * Rendezvous (highest random weight).  seeds[i] = mix64(shard i's identity
 * hash); the draw of shard i for key hash h is x = mix64(h ^ seeds[i]).
 * Unweighted: the shard with the largest x wins.  Weighted (logarithmic
 * method): u = ((x >> 11) + 0.5) / 2^53 in (0, 1), score = -w_i / ln(u),
 * largest score wins.  Ties go to the lowest index.
 */
int32_t sh_rendezvous(uint64_t h, const uint64_t *seeds, const double *weights, size_t nshards);
void sh_rendezvous_batch(const uint64_t *hashes, size_t n, const uint64_t *seeds,
                         const double *weights, size_t nshards, int32_t *out);

/* ---------------------------------------------------------------------------
 * Overrides (directory routing): ohashes sorted strictly increasing;
 * a hash equal to ohashes[j] routes to oshards[j].
 */
int32_t sh_override_find(const uint64_t *ohashes, const int32_t *oshards, size_t m, uint64_t h);
void sh_override_batch(const uint64_t *ohashes, const int32_t *oshards, size_t m,
                       const uint64_t *hashes, size_t n, int32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_PLACE_H */
