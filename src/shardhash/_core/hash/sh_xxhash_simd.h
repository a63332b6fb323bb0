/*
 * shardhash core: XXH64 of many variable-length keys in vector lanes,
 * written in the vector operations of sh_cv_avx512.h (which lists them).
 * Included only by sh_xxhash_avx512.c (eight 64-bit lanes; an AVX2 build of
 * it was slower than the scalar kernel, see sh_xxhash_batch.c); bit-exact
 * with sh_xxh64.
 *
 * XXH64 is 64-bit multiplies, rotations, additions and xors, so SH_CV_LANES
 * consecutive keys run side by side, each lane doing exactly sh_xxh64's
 * steps; no branch depends on one key's length:
 *
 *  - the 32-byte stripes: the group runs as many stripe rounds as its
 *    longest key has stripes, and a lane whose key has fewer keeps its state
 *    (a select); a key of fewer than 32 bytes takes seed + PRIME64_5 instead
 *    of the merged stripes (another select);
 *  - the 8-byte words after the stripes (0 to 3 of them), the 4-byte word
 *    (0 or 1) and the single bytes (0 to 3): each step is computed for every
 *    lane and kept where the key has it.  The group runs as many steps of a
 *    kind as the key with the most of them needs (with lengths mixed, that
 *    is the most there can be in nearly every group, so the branch is
 *    predicted; with one length, only the steps that length has);
 *  - the 4-byte word and the bytes are cut out of the key's last 8 bytes
 *    with per-lane shifts.
 *
 * Loads.  Every load is 16 bytes, transposed into words by SH_CV_LOAD16_ABS
 * from the keys' addresses (AVX-512's hardware gathers were three times
 * slower on AMD Zen 4).  Every load ends inside its key or at its end and
 * starts at most 32 bytes before the key's end: a word that does not have
 * 16 bytes of its key after its start is read as the second half of the 16
 * bytes that end with it, and a lane with no step to do reads its key's
 * last 16 bytes (and ignores them).  So the caller vouches that the 32 bytes
 * before each key's end are readable: in Arrow data the keys that end less
 * than 32 bytes into the buffer (only the first few) take the scalar path;
 * keys by pointer are Python bytes and str objects' data, which 32 bytes of
 * the object's header precede on a 64-bit build.
 *
 * A group with one long key among short ones would run the long key's
 * stripes in every lane for one; such a group takes the scalar path
 * (sh_xxv_lanes_worth).
 */
typedef char sh_xxv_pointer_check[sizeof(void *) == 8 ? 1 : -1]; /* a pointer's bits are a 64-bit lane */

#ifndef SH_CV_LANES
#  error "sh_xxhash_simd.h is included by the kernels that define its vector operations"
#endif

#include "sh_xxhash.h"

/* times one of XXH64's 64-bit primes */
/* keys sorted into classes at a time (sh_xxh64_offsets below) */
#define SH_XXV_BLOCK 256

#define SH_XXV_MUL(v, c) SH_CV_MULC((v), (uint32_t)((c) >> 32), (uint32_t)((c) & 0xffffffffu))

/* A uint64 as the int64 with its bits (a conversion would be
 * implementation-defined above INT64_MAX). */
SH_CV_INLINE int64_t SH_CV_NAME(sh_xxv_i64)(uint64_t u)
{
    int64_t s;
    memcpy(&s, &u, sizeof s);
    return s;
}

#define SH_XXV_SET1(u) SH_CV_SET1(SH_CV_NAME(sh_xxv_i64)(u))

SH_CV_INLINE SH_CV SH_CV_NAME(sh_xxv_round)(SH_CV acc, SH_CV lane)
{
    acc = SH_CV_ADD(acc, SH_XXV_MUL(lane, SH_XXH_PRIME64_2));
    return SH_XXV_MUL(SH_CV_ROTL(acc, 31), SH_XXH_PRIME64_1);
}

/* round(0, a) */
SH_CV_INLINE SH_CV SH_CV_NAME(sh_xxv_round0)(SH_CV a)
{
    return SH_XXV_MUL(SH_CV_ROTL(SH_XXV_MUL(a, SH_XXH_PRIME64_2), 31), SH_XXH_PRIME64_1);
}

SH_CV_INLINE SH_CV SH_CV_NAME(sh_xxv_merge)(SH_CV acc, SH_CV a)
{
    acc = SH_CV_XOR(acc, SH_CV_NAME(sh_xxv_round0)(a));
    return SH_CV_ADD(SH_XXV_MUL(acc, SH_XXH_PRIME64_1), SH_XXV_SET1(SH_XXH_PRIME64_4));
}

/* the step of one 8-byte word w */
SH_CV_INLINE SH_CV SH_CV_NAME(sh_xxv_word)(SH_CV acc, SH_CV w)
{
    acc = SH_CV_XOR(acc, SH_CV_NAME(sh_xxv_round0)(w));
    return SH_CV_ADD(SH_XXV_MUL(SH_CV_ROTL(acc, 27), SH_XXH_PRIME64_1), SH_XXV_SET1(SH_XXH_PRIME64_4));
}

/* the step of the 4-byte word x (zero-extended) */
SH_CV_INLINE SH_CV SH_CV_NAME(sh_xxv_word32)(SH_CV acc, SH_CV x)
{
    acc = SH_CV_XOR(acc, SH_XXV_MUL(x, SH_XXH_PRIME64_1));
    return SH_CV_ADD(SH_XXV_MUL(SH_CV_ROTL(acc, 23), SH_XXH_PRIME64_2), SH_XXV_SET1(SH_XXH_PRIME64_3));
}

/* the step of one byte b (zero-extended) */
SH_CV_INLINE SH_CV SH_CV_NAME(sh_xxv_byte)(SH_CV acc, SH_CV b)
{
    acc = SH_CV_XOR(acc, SH_XXV_MUL(b, SH_XXH_PRIME64_5));
    return SH_XXV_MUL(SH_CV_ROTL(acc, 11), SH_XXH_PRIME64_1);
}

/* The number of bits set in x < 256. */
SH_CV_INLINE unsigned SH_CV_NAME(sh_xxv_pop8)(unsigned x)
{
    x = x - ((x >> 1) & 0x55u);
    x = (x & 0x33u) + ((x >> 2) & 0x33u);
    return (x + (x >> 4)) & 0x0fu;
}

/* Whether a group of long keys (32 bytes and more) of lengths len[0 ..
 * SH_CV_LANES) runs its stripes side by side: up to two stripes in the
 * longest key always; beyond, the lanes must be busy for at least half of
 * the stripe rounds (else one long key among short ones would run its
 * stripes in every lane for one). */
SH_CV_INLINE int SH_CV_NAME(sh_xxv_lanes_worth)(const int64_t *len)
{
    int64_t maxns = 0, sumns = 0;
    int l;
    for (l = 0; l < SH_CV_LANES; l++) {
        int64_t ns = len[l] >> 5;
        sumns += ns;
        maxns = ns > maxns ? ns : maxns;
    }
    return maxns <= 2 || SH_CV_LANES * maxns <= 2 * sumns;
}

/* The stripes of the SH_CV_LANES keys of at least 32 bytes at addresses
 * start[l] .. start[l] + len[l] and their merge: the accumulators after them, to
 * acc[0 .. SH_CV_LANES).  Round j mixes stripe j of the keys that have one
 * (every key has stripe 0); the others load their stripe 0 again (and
 * ignore it). */
SH_CV_INLINE void SH_CV_NAME(sh_xxv_stripes)(const int64_t *start, const int64_t *len, uint64_t seed,
                                             uint64_t *acc)
{
    int64_t ix[SH_CV_LANES];
    const SH_CV vstart = SH_CV_LOADU(start), ns = SH_CV_SRLI(SH_CV_LOADU(len), 5);
    SH_CV a1 = SH_XXV_SET1(seed + SH_XXH_PRIME64_1 + SH_XXH_PRIME64_2);
    SH_CV a2 = SH_XXV_SET1(seed + SH_XXH_PRIME64_2);
    SH_CV a3 = SH_XXV_SET1(seed);
    SH_CV a4 = SH_XXV_SET1(seed - SH_XXH_PRIME64_1);
    SH_CV w0, w1, w2, w3, x;
    int64_t maxns = 0, j;
    int l;
    for (l = 0; l < SH_CV_LANES; l++) maxns = (len[l] >> 5) > maxns ? len[l] >> 5 : maxns;
    /* stripe 0: every key has it */
    SH_CV_LOAD16_ABS(start, 0, &w0, &w1);
    SH_CV_LOAD16_ABS(start, 16, &w2, &w3);
    a1 = SH_CV_NAME(sh_xxv_round)(a1, w0);
    a2 = SH_CV_NAME(sh_xxv_round)(a2, w1);
    a3 = SH_CV_NAME(sh_xxv_round)(a3, w2);
    a4 = SH_CV_NAME(sh_xxv_round)(a4, w3);
    for (j = 1; j < maxns; j++) {
        SH_CV_MASK m = SH_CV_GT(ns, SH_CV_SET1(j));
        SH_CV at = SH_CV_SELECT(m, vstart, SH_CV_ADD(vstart, SH_CV_SET1(32 * j)));
        SH_CV_STOREU(ix, at);
        SH_CV_LOAD16_ABS(ix, 0, &w0, &w1);
        SH_CV_LOAD16_ABS(ix, 16, &w2, &w3);
        a1 = SH_CV_SELECT(m, a1, SH_CV_NAME(sh_xxv_round)(a1, w0));
        a2 = SH_CV_SELECT(m, a2, SH_CV_NAME(sh_xxv_round)(a2, w1));
        a3 = SH_CV_SELECT(m, a3, SH_CV_NAME(sh_xxv_round)(a3, w2));
        a4 = SH_CV_SELECT(m, a4, SH_CV_NAME(sh_xxv_round)(a4, w3));
    }
    x = SH_CV_ADD(SH_CV_ADD(SH_CV_ROTL(a1, 1), SH_CV_ROTL(a2, 7)),
                  SH_CV_ADD(SH_CV_ROTL(a3, 12), SH_CV_ROTL(a4, 18)));
    x = SH_CV_NAME(sh_xxv_merge)(x, a1);
    x = SH_CV_NAME(sh_xxv_merge)(x, a2);
    x = SH_CV_NAME(sh_xxv_merge)(x, a3);
    x = SH_CV_NAME(sh_xxv_merge)(x, a4);
    SH_CV_STOREU(acc, x);
}

/* (lo >> 8 (8 - e)) | (hi << 8e): the 8 bytes that start e bytes before
 * hi's first (e = 0..7; a shift by 64 gives 0). */
SH_CV_INLINE SH_CV SH_CV_NAME(sh_xxv_funnel)(SH_CV lo, SH_CV hi, SH_CV e8)
{
    return SH_CV_OR(SH_CV_SRLV(lo, SH_CV_SUB(SH_CV_SET1(64), e8)), SH_CV_SLLV(hi, e8));
}

/* XXH64 of the SH_CV_LANES keys at addresses base + start[l] .. base +
 * start[l] + len[l] (base in every lane), whose 32 bytes before their ends
 * are readable, from the accumulator acc
 * (the stripes' for keys of 32 bytes and more, seed + PRIME64_5 for the
 * others), to out[0 .. SH_CV_LANES).  No key has more than maxnw 8-byte
 * words after its stripes, more than maxnb single bytes, or a 4-byte word
 * unless any4.
 *
 * What follows the stripes is the key's last r = len % 32 bytes: the last r
 * bytes of its last 32 ("the window", words W0..W3).  With r = 8 nw + e,
 * 8-byte word j (j < nw) starts at window byte 8 (4 - nw + j) - e: it is
 * V[4 - nw + j], where V[q] is the 8 bytes that start e bytes before W[q]'s
 * first.  Then the 4-byte word and the single bytes, cut out of W3. */
SH_CV_INLINE void SH_CV_NAME(sh_xxv_rest)(SH_CV base, const int64_t *start, const int64_t *len, SH_CV acc,
                                          unsigned maxnw, unsigned maxnb, unsigned any4, uint64_t *out)
{
    int64_t ix[SH_CV_LANES];
    const SH_CV vlen = SH_CV_LOADU(len), vend = SH_CV_ADD(SH_CV_ADD(base, SH_CV_LOADU(start)), vlen);
    SH_CV w0, w1, w2, w3, x;
    unsigned j;

    acc = SH_CV_ADD(acc, vlen);
    SH_CV_STOREU(ix, SH_CV_SUB(vend, SH_CV_SET1(32)));
    SH_CV_LOAD16_ABS(ix, 0, &w0, &w1);
    SH_CV_LOAD16_ABS(ix, 16, &w2, &w3);

    if (maxnw > 0) {
        const SH_CV e8 = SH_CV_SLLI(SH_CV_AND(vlen, SH_CV_SET1(7)), 3);
        const SH_CV nw = SH_CV_SRLI(SH_CV_AND(vlen, SH_CV_SET1(31)), 3);
        const SH_CV_MASK three = SH_CV_EQ(nw, SH_CV_SET1(3)), two = SH_CV_EQ(nw, SH_CV_SET1(2));
        SH_CV v3 = SH_CV_NAME(sh_xxv_funnel)(w2, w3, e8);
        SH_CV v2 = SH_CV_NAME(sh_xxv_funnel)(w1, w2, e8);
        /* word 0: V1, V2 or V3 for nw = 3, 2, 1 */
        x = SH_CV_SELECT(two, v3, v2);
        if (maxnw == 3) x = SH_CV_SELECT(three, x, SH_CV_NAME(sh_xxv_funnel)(w0, w1, e8));
        acc = SH_CV_SELECT(SH_CV_GT(nw, SH_CV_ZERO()), acc, SH_CV_NAME(sh_xxv_word)(acc, x));
        if (maxnw > 1) { /* word 1: V2 or V3 for nw = 3, 2 */
            x = SH_CV_SELECT(three, v3, v2);
            acc = SH_CV_SELECT(SH_CV_GT(nw, SH_CV_SET1(1)), acc, SH_CV_NAME(sh_xxv_word)(acc, x));
        }
        if (maxnw > 2) /* word 2: V3 */
            acc = SH_CV_SELECT(three, acc, SH_CV_NAME(sh_xxv_word)(acc, v3));
    }

    /* the rest, e = len % 8 bytes, the end of W3 (byte len - 8 + i in bits
     * 8i..8i+7): the 4-byte word when e >= 4 (at len - e: bits 8 (8 - e)
     * up), then the b = len % 4 single bytes (byte t at len - b + t: bits
     * 8 (8 - b + t) up) */
    if (any4) {
        const SH_CV e = SH_CV_AND(vlen, SH_CV_SET1(7));
        x = SH_CV_AND(SH_CV_SRLV(w3, SH_CV_SLLI(SH_CV_SUB(SH_CV_SET1(8), e), 3)),
                      SH_CV_SET1(INT64_C(0xffffffff)));
        acc = SH_CV_SELECT(SH_CV_GT(e, SH_CV_SET1(3)), acc, SH_CV_NAME(sh_xxv_word32)(acc, x));
    }
    if (maxnb > 0) {
        const SH_CV b = SH_CV_AND(vlen, SH_CV_SET1(3));
        const SH_CV s = SH_CV_SLLI(SH_CV_SUB(SH_CV_SET1(8), b), 3);
        for (j = 0; j < maxnb; j++) {
            x = SH_CV_AND(SH_CV_SRLV(w3, SH_CV_ADD(s, SH_CV_SET1(8 * (int64_t)j))), SH_CV_SET1(0xff));
            acc = SH_CV_SELECT(SH_CV_GT(b, SH_CV_SET1((int64_t)j)), acc, SH_CV_NAME(sh_xxv_byte)(acc, x));
        }
    }

    /* the avalanche */
    acc = SH_CV_XOR(acc, SH_CV_SRLI(acc, 33));
    acc = SH_XXV_MUL(acc, SH_XXH_PRIME64_2);
    acc = SH_CV_XOR(acc, SH_CV_SRLI(acc, 29));
    acc = SH_XXV_MUL(acc, SH_XXH_PRIME64_3);
    acc = SH_CV_XOR(acc, SH_CV_SRLI(acc, 32));
    SH_CV_STOREU(out, acc);
}

/* A block of b keys (b a multiple of SH_CV_LANES, at most SH_XXV_BLOCK):
 * key k at addresses base + start[k] .. base + start[k] + len[k] (base in
 * every lane), its 32 bytes before its end readable, its hash to out[k].  Two passes.  First the block's long
 * keys (32 bytes and more) are listed (compressed out of each group of
 * SH_CV_LANES) and their stripes run SH_CV_LANES long keys at a time; their
 * accumulators wait, in order, in acc.  Then the block's keys run in groups
 * as they come, each lane from its accumulator (expanded from acc into the
 * lanes of the group's long keys; seed + PRIME64_5 for a short key).  So a
 * group of short and long keys runs no stripe round, and no merge, for its
 * short keys. */
SH_CV_INLINE void SH_CV_NAME(sh_xxv_block)(SH_CV base, const int64_t *start, const int64_t *len, size_t b,
                                           uint64_t seed, uint64_t *out)
{
    /* the block's long keys, in order: their starts, lengths and (after the
     * stripes) accumulators; SH_CV_LANES entries of room after the last */
    int64_t lstart[SH_XXV_BLOCK + SH_CV_LANES], llen[SH_XXV_BLOCK + SH_CV_LANES], orlen[SH_CV_LANES], any = 0;
    uint64_t acc[SH_XXV_BLOCK + SH_CV_LANES];
    const SH_CV init = SH_XXV_SET1(seed + SH_XXH_PRIME64_5), thirty_one = SH_CV_SET1(31);
    SH_CV vor = SH_CV_ZERO();
    size_t nl = 0, at, g, k;
    unsigned maxnw, maxnb, any4;
    int l;
    for (g = 0; g < b; g += SH_CV_LANES) {
        SH_CV vlen = SH_CV_LOADU(len + g);
        SH_CV_MASK m = SH_CV_GT(vlen, thirty_one);
        vor = SH_CV_OR(vor, vlen);
        if (SH_CV_MASK_BITS(m)) {
            SH_CV_STOREU(lstart + nl, SH_CV_COMPRESS(m, SH_CV_ADD(base, SH_CV_LOADU(start + g))));
            SH_CV_STOREU(llen + nl, SH_CV_COMPRESS(m, vlen));
            nl += SH_CV_NAME(sh_xxv_pop8)(SH_CV_MASK_BITS(m));
        }
    }
    /* the steps the groups run (the or of the block's lengths bounds the
     * most words and bytes any key has; with one length, it is exact) */
    SH_CV_STOREU(orlen, vor);
    for (l = 0; l < SH_CV_LANES; l++) any |= orlen[l];
    maxnw = (unsigned)(any & 31) >> 3;
    maxnb = (unsigned)(any & 3);
    any4 = (unsigned)(any & 4);
    if (!nl) {
        for (g = 0; g < b; g += SH_CV_LANES)
            SH_CV_NAME(sh_xxv_rest)(base, start + g, len + g, init, maxnw, maxnb, any4, out + g);
        return;
    }
    /* a last group of fewer long keys repeats its last key */
    for (k = nl; k % SH_CV_LANES; k++) {
        lstart[k] = lstart[nl - 1];
        llen[k] = llen[nl - 1];
    }
    for (g = 0; g < nl; g += SH_CV_LANES) {
        if (SH_CV_NAME(sh_xxv_lanes_worth)(llen + g))
            SH_CV_NAME(sh_xxv_stripes)(lstart + g, llen + g, seed, acc + g);
        else
            for (k = g; k < g + SH_CV_LANES; k++)
                acc[k] = sh_xxh64_stripes((const uint8_t *)(uintptr_t)lstart[k], (size_t)llen[k], seed);
    }
    for (g = 0, at = 0; g < b; g += SH_CV_LANES) {
        SH_CV_MASK m = SH_CV_GT(SH_CV_LOADU(len + g), thirty_one);
        SH_CV_NAME(sh_xxv_rest)(base, start + g, len + g, SH_CV_EXPAND_LOADU(init, m, acc + at), maxnw, maxnb,
                                any4, out + g);
        at += SH_CV_NAME(sh_xxv_pop8)(SH_CV_MASK_BITS(m));
    }
}

/* Arrow-style keys: the keys that end at least 32 bytes into the buffer, a
 * block at a time (their addresses: the buffer's plus their offsets). */
SH_CV_FN void SH_CV_NAME(sh_xxh64_offsets)(const uint8_t *data, const int64_t *offsets, size_t n,
                                           uint64_t seed, uint64_t *out)
{
    int64_t len[SH_XXV_BLOCK];
    const SH_CV base = SH_CV_SET1((int64_t)(uintptr_t)data);
    size_t i = 0, k, b, g;
    /* the keys that end less than 32 bytes into the buffer */
    while (i < n && offsets[i + 1] < 32) i++;
    for (k = 0; k < i; k++) out[k] = sh_xxh64(data + offsets[k], (size_t)(offsets[k + 1] - offsets[k]), seed);
    for (; i + SH_CV_LANES <= n; i += b) {
        b = n - i < SH_XXV_BLOCK ? (n - i) & ~(size_t)(SH_CV_LANES - 1) : SH_XXV_BLOCK;
        for (g = 0; g < b; g += SH_CV_LANES)
            SH_CV_STOREU(len + g, SH_CV_SUB(SH_CV_LOADU(offsets + i + g + 1), SH_CV_LOADU(offsets + i + g)));
        SH_CV_NAME(sh_xxv_block)(base, offsets + i, len, b, seed, out + i);
    }
    for (; i < n; i++) out[i] = sh_xxh64(data + offsets[i], (size_t)(offsets[i + 1] - offsets[i]), seed);
}

/* Keys by pointer, whose 32 bytes before ptrs[i] are readable (a block at a
 * time; a pointer's bits are its address, read as a 64-bit lane). */
SH_CV_FN void SH_CV_NAME(sh_xxh64_ptrs32)(const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                                          uint64_t seed, uint64_t *out)
{
    size_t i = 0, b;
    for (; i + SH_CV_LANES <= n; i += b) {
        b = n - i < SH_XXV_BLOCK ? (n - i) & ~(size_t)(SH_CV_LANES - 1) : SH_XXV_BLOCK;
        SH_CV_NAME(sh_xxv_block)(SH_CV_ZERO(), (const int64_t *)(const void *)(ptrs + i), lens + i, b, seed,
                                 out + i);
    }
    for (; i < n; i++) out[i] = sh_xxh64(ptrs[i], (size_t)lens[i], seed);
}
