/*
 * shardhash core: XXH32, XXH64 and XXH3-64 (seeded) over a byte buffer.
 *
 * Written from the xxHash specification (doc/xxhash_spec.md, v0.2.0, in the
 * xxHash project by Yann Collet); bit-exact with the reference library.
 * Scalar C99 only: the XXH3 long-input loop is written as plain loops over
 * 8 independent 64-bit lanes so that optimising compilers vectorise it.
 * All loads are explicitly little-endian.
 */
#include "sh_xxhash.h"

/* The default secret, from the specification. */
const uint8_t sh_xxh3_default_secret[SH_XXH3_SECRET_SIZE] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

/* ======================================================================== */
/* XXH32                                                                    */
/* ======================================================================== */

uint32_t sh_xxh32(const void *data, size_t len, uint32_t seed)
{
    const uint8_t *p = (const uint8_t *)data;
    size_t rem = len;
    uint32_t acc;

    if (len >= 16) {
        SH_XXH_STRIPES(uint32_t, SH_XXH_PRIME32_1, SH_XXH_PRIME32_2, sh_xxh32_round, sh_read32le, sh_rotl32,
                       4);
    } else {
        acc = seed + SH_XXH_PRIME32_5;
    }
    acc += (uint32_t)len;
    for (; rem >= 4; p += 4, rem -= 4) acc = sh_xxh32_step4(acc, sh_read32le(p));
    for (; rem > 0; p++, rem--) acc = sh_rotl32(acc + (uint32_t)*p * SH_XXH_PRIME32_5, 11) * SH_XXH_PRIME32_1;
    return sh_xxh32_avalanche(acc);
}

/* ======================================================================== */
/* XXH64                                                                    */
/* ======================================================================== */

SH_FORCE_INLINE uint64_t xxh64_merge(uint64_t acc, uint64_t a)
{
    acc ^= sh_xxh64_round(0, a);
    return acc * SH_XXH_PRIME64_1 + SH_XXH_PRIME64_4;
}

/* XXH64's 32-byte stripes of p[0 .. len), len >= 32, and their merge: the
 * accumulator the steps after the stripes start from. */
SH_FORCE_INLINE uint64_t xxh64_stripes(const uint8_t *p, size_t len, uint64_t seed)
{
    size_t rem = len;
    uint64_t acc;
    SH_XXH_STRIPES(uint64_t, SH_XXH_PRIME64_1, SH_XXH_PRIME64_2, sh_xxh64_round, sh_read64le, sh_rotl64, 8);
    acc = xxh64_merge(acc, a1);
    acc = xxh64_merge(acc, a2);
    acc = xxh64_merge(acc, a3);
    return xxh64_merge(acc, a4);
}

uint64_t sh_xxh64_stripes(const uint8_t *p, size_t len, uint64_t seed)
{
    return xxh64_stripes(p, len, seed);
}

/* The whole of XXH64; inlined where the length is a constant (the batch
 * kernel below), so that every length-dependent branch folds away. */
SH_FORCE_INLINE uint64_t xxh64_body(const uint8_t *p, size_t len, uint64_t seed)
{
    size_t rem = len;
    uint64_t acc;

    if (len >= 32) {
        acc = xxh64_stripes(p, len, seed);
        p += len & ~(size_t)31;
        rem = len & 31;
    } else {
        acc = seed + SH_XXH_PRIME64_5;
    }
    acc += (uint64_t)len;
    for (; rem >= 8; p += 8, rem -= 8) acc = sh_xxh64_step8(acc, sh_read64le(p));
    if (rem >= 4) {
        acc = sh_rotl64(acc ^ (uint64_t)sh_read32le(p) * SH_XXH_PRIME64_1, 23) * SH_XXH_PRIME64_2 +
              SH_XXH_PRIME64_3;
        p += 4;
        rem -= 4;
    }
    for (; rem > 0; p++, rem--) acc = sh_rotl64(acc ^ (uint64_t)*p * SH_XXH_PRIME64_5, 11) * SH_XXH_PRIME64_1;
    return sh_xxh64_avalanche(acc);
}

uint64_t sh_xxh64(const void *data, size_t len, uint64_t seed)
{
    return xxh64_body((const uint8_t *)data, len, seed);
}

/* ---- XXH64 over many keys (Arrow layout) ------------------------------ */
/*
 * sh_xxh64's steps depend on the length (how many 32-byte stripes and 8-byte
 * steps, whether a 4-byte step, how many byte steps), and keys of mixed
 * lengths taken in order mispredict those branches on nearly every key.  So
 * the keys are read in order and each waits in the queue of its length;
 * a queue that holds SH_XXH64_QUEUE keys is hashed at once by a copy of
 * xxh64_body compiled for that one length (a switch over lengths 0..63),
 * which has no length-dependent branch left.  The queued keys were read a
 * moment ago, so their bytes are still in the cache.  Keys of 64 bytes and
 * more, and the keys left in the queues at the end, are hashed one by one.
 * Each key's arithmetic is exactly sh_xxh64's.
 */
#define SH_XXH64_QUEUE   8
#define SH_XXH64_GROUPED 64

/* Hash a full queue of keys of length len < SH_XXH64_GROUPED: out[at[l]] is
 * the hash of p[l][0 .. len). */
static void xxh64_queue_run(const uint8_t *const *p, const size_t *at, size_t len, uint64_t seed,
                            uint64_t *out)
{
    size_t l;
    /* clang-format off */
#define SH_XXH64_CASE(L) \
    case (L): for (l = 0; l < SH_XXH64_QUEUE; l++) out[at[l]] = xxh64_body(p[l], (L), seed); break;
#define SH_XXH64_CASE8(b) \
    SH_XXH64_CASE(b) SH_XXH64_CASE(b + 1) SH_XXH64_CASE(b + 2) SH_XXH64_CASE(b + 3) \
    SH_XXH64_CASE(b + 4) SH_XXH64_CASE(b + 5) SH_XXH64_CASE(b + 6) SH_XXH64_CASE(b + 7)
    switch (len) {
    SH_XXH64_CASE8(0) SH_XXH64_CASE8(8) SH_XXH64_CASE8(16) SH_XXH64_CASE8(24)
    SH_XXH64_CASE8(32) SH_XXH64_CASE8(40) SH_XXH64_CASE8(48) SH_XXH64_CASE8(56)
    default:
        for (l = 0; l < SH_XXH64_QUEUE; l++) out[at[l]] = sh_xxh64(p[l], len, seed);
        break;
    }
#undef SH_XXH64_CASE8
#undef SH_XXH64_CASE
    /* clang-format on */
}

void sh_xxh64_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed, uint64_t *out)
{
    struct {
        const uint8_t *p[SH_XXH64_QUEUE];
        size_t at[SH_XXH64_QUEUE];
        size_t n;
    } q[SH_XXH64_GROUPED];
    size_t i, c, l;
    for (c = 0; c < SH_XXH64_GROUPED; c++) q[c].n = 0;
    for (i = 0; i < n; i++) {
        uint64_t len = (uint64_t)(offsets[i + 1] - offsets[i]);
        if (len >= SH_XXH64_GROUPED) {
            out[i] = sh_xxh64(data + offsets[i], (size_t)len, seed);
            continue;
        }
        c = (size_t)len;
        q[c].p[q[c].n] = data + offsets[i];
        q[c].at[q[c].n] = i;
        if (++q[c].n == SH_XXH64_QUEUE) {
            xxh64_queue_run(q[c].p, q[c].at, c, seed, out);
            q[c].n = 0;
        }
    }
    for (c = 0; c < SH_XXH64_GROUPED; c++)
        for (l = 0; l < q[c].n; l++) out[q[c].at[l]] = sh_xxh64(q[c].p[l], c, seed);
}

/* ======================================================================== */
/* XXH3-64                                                                  */
/* ======================================================================== */

SH_FORCE_INLINE uint64_t xxh3_avalanche(uint64_t x)
{
    x ^= x >> 37;
    x *= SH_XXH_PRIME_MX1;
    x ^= x >> 32;
    return x;
}

/* lo ^ hi of the full 128-bit product */
SH_FORCE_INLINE uint64_t xxh3_fold64(uint64_t a, uint64_t b)
{
    uint64_t hi;
    uint64_t lo = sh_mul128(a, b, &hi);
    return lo ^ hi;
}

/* 16 bytes of input against 16 bytes of secret, the seed folded in. */
SH_FORCE_INLINE uint64_t xxh3_mix16(const uint8_t *in, const uint8_t *sec, uint64_t seed)
{
    return xxh3_fold64(sh_read64le(in) ^ (sh_read64le(sec) + seed),
                       sh_read64le(in + 8) ^ (sh_read64le(sec + 8) - seed));
}

static uint64_t xxh3_len_0to16(const uint8_t *p, size_t len, uint64_t seed)
{
    const uint8_t *s = sh_xxh3_default_secret;
    if (len > 8) {
        uint64_t lo = ((sh_read64le(s + 24) ^ sh_read64le(s + 32)) + seed) ^ sh_read64le(p);
        uint64_t hi = ((sh_read64le(s + 40) ^ sh_read64le(s + 48)) - seed) ^ sh_read64le(p + len - 8);
        uint64_t v = (uint64_t)len + sh_swap64(lo) + hi + xxh3_fold64(lo, hi);
        return xxh3_avalanche(v);
    }
    if (len >= 4) {
        uint64_t first = sh_read32le(p);
        uint64_t last = sh_read32le(p + len - 4);
        uint64_t mod = seed ^ ((uint64_t)sh_swap32((uint32_t)seed) << 32);
        uint64_t x = ((sh_read64le(s + 8) ^ sh_read64le(s + 16)) - mod) ^ (last | (first << 32));
        x ^= sh_rotl64(x, 49) ^ sh_rotl64(x, 24);
        x *= SH_XXH_PRIME_MX2;
        x ^= (x >> 35) + (uint64_t)len;
        x *= SH_XXH_PRIME_MX2;
        x ^= x >> 28;
        return x;
    }
    if (len > 0) {
        uint32_t combined = (uint32_t)p[len - 1] | ((uint32_t)len << 8) | ((uint32_t)p[0] << 16) |
                            ((uint32_t)p[len >> 1] << 24);
        uint64_t k = (uint64_t)(sh_read32le(s) ^ sh_read32le(s + 4)) + seed;
        return sh_xxh64_avalanche(k ^ (uint64_t)combined);
    }
    return sh_xxh64_avalanche(seed ^ sh_read64le(s + 56) ^ sh_read64le(s + 64));
}

static uint64_t xxh3_len_17to128(const uint8_t *p, size_t len, uint64_t seed)
{
    const uint8_t *s = sh_xxh3_default_secret;
    uint64_t acc = (uint64_t)len * SH_XXH_PRIME64_1;
    /* rounds i = 0 .. ((len - 1) >> 5): chunk i from the front and from the
     * back; the additions commute, so the order is free */
    if (len > 32) {
        if (len > 64) {
            if (len > 96) {
                acc += xxh3_mix16(p + 48, s + 96, seed);
                acc += xxh3_mix16(p + len - 64, s + 112, seed);
            }
            acc += xxh3_mix16(p + 32, s + 64, seed);
            acc += xxh3_mix16(p + len - 48, s + 80, seed);
        }
        acc += xxh3_mix16(p + 16, s + 32, seed);
        acc += xxh3_mix16(p + len - 32, s + 48, seed);
    }
    acc += xxh3_mix16(p, s, seed);
    acc += xxh3_mix16(p + len - 16, s + 16, seed);
    return xxh3_avalanche(acc);
}

static uint64_t xxh3_len_129to240(const uint8_t *p, size_t len, uint64_t seed)
{
    const uint8_t *s = sh_xxh3_default_secret;
    uint64_t acc = (uint64_t)len * SH_XXH_PRIME64_1;
    size_t nchunks = len >> 4;
    size_t i;
    for (i = 0; i < 8; i++) acc += xxh3_mix16(p + 16 * i, s + 16 * i, seed);
    acc = xxh3_avalanche(acc);
    for (i = 8; i < nchunks; i++) acc += xxh3_mix16(p + 16 * i, s + 16 * (i - 8) + 3, seed);
    acc += xxh3_mix16(p + len - 16, s + 119, seed);
    return xxh3_avalanche(acc);
}

/* ---- long inputs (> 240 bytes) ---------------------------------------- */
/* The secret is always 192 bytes here (default or seed-derived), so a block
 * is 16 stripes of 64 bytes. */
#define XXH3_STRIPE            64
#define XXH3_STRIPES_PER_BLOCK ((SH_XXH3_SECRET_SIZE - 64) / 8)
#define XXH3_BLOCK             (XXH3_STRIPE * XXH3_STRIPES_PER_BLOCK)

/* One stripe: 8 independent lanes, each adding the 32x32->64 product of the
 * keyed input word's halves plus the neighbouring raw input word (lane i ^ 1).
 * The loads are spelled out one per word (XXH3_LOAD8) and the arithmetic is
 * two simple lane loops: the shape that both gcc and clang -O3 compile best
 * (measured; a rolled load loop keeps clang from vectorising and slows gcc). */
/* clang-format off */
#define XXH3_LOAD8(w, src)                                                                \
    do {                                                                                  \
        w[0] = sh_read64le(src);      w[1] = sh_read64le(src + 8);                        \
        w[2] = sh_read64le(src + 16); w[3] = sh_read64le(src + 24);                       \
        w[4] = sh_read64le(src + 32); w[5] = sh_read64le(src + 40);                       \
        w[6] = sh_read64le(src + 48); w[7] = sh_read64le(src + 56);                       \
    } while (0)
/* clang-format on */
SH_FORCE_INLINE void xxh3_accumulate_stripe(uint64_t *SH_RESTRICT acc, const uint8_t *SH_RESTRICT in,
                                            const uint8_t *SH_RESTRICT sec)
{
    uint64_t d[8];
    uint64_t k[8];
    int i;
    XXH3_LOAD8(d, in);
    XXH3_LOAD8(k, sec);
    for (i = 0; i < 8; i++) {
        uint64_t x = d[i] ^ k[i];
        acc[i] += (x & 0xFFFFFFFFu) * (x >> 32);
    }
    for (i = 0; i < 8; i += 2) {
        acc[i] += d[i + 1];
        acc[i + 1] += d[i];
    }
}

SH_FORCE_INLINE void xxh3_scramble(uint64_t *SH_RESTRICT acc, const uint8_t *SH_RESTRICT sec)
{
    int i;
    for (i = 0; i < 8; i++) {
        uint64_t a = acc[i];
        a ^= a >> 47;
        a ^= sh_read64le(sec + 8 * i);
        acc[i] = a * SH_XXH_PRIME32_1;
    }
}

static uint64_t xxh3_long(const uint8_t *p, size_t len, const uint8_t *SH_RESTRICT sec)
{
    uint64_t acc[8];
    size_t nblocks = (len - 1) / XXH3_BLOCK; /* full blocks before the last (partial or full) one */
    size_t b, n, last, nstripes;
    uint64_t result;
    int i;

    acc[0] = SH_XXH_PRIME32_3;
    acc[1] = SH_XXH_PRIME64_1;
    acc[2] = SH_XXH_PRIME64_2;
    acc[3] = SH_XXH_PRIME64_3;
    acc[4] = SH_XXH_PRIME64_4;
    acc[5] = SH_XXH_PRIME32_2;
    acc[6] = SH_XXH_PRIME64_5;
    acc[7] = SH_XXH_PRIME32_1;

    for (b = 0; b < nblocks; b++) {
        const uint8_t *blk = p + b * XXH3_BLOCK;
        for (n = 0; n < XXH3_STRIPES_PER_BLOCK; n++)
            xxh3_accumulate_stripe(acc, blk + n * XXH3_STRIPE, sec + 8 * n);
        xxh3_scramble(acc, sec + SH_XXH3_SECRET_SIZE - 64);
    }

    /* the last block: its full stripes except the very last stripe, then the
     * final 64 bytes of the input as a stripe (possibly overlapping) */
    last = len - nblocks * XXH3_BLOCK;
    nstripes = (last - 1) / XXH3_STRIPE;
    {
        const uint8_t *blk = p + nblocks * XXH3_BLOCK;
        for (n = 0; n < nstripes; n++) xxh3_accumulate_stripe(acc, blk + n * XXH3_STRIPE, sec + 8 * n);
    }
    xxh3_accumulate_stripe(acc, p + len - XXH3_STRIPE, sec + SH_XXH3_SECRET_SIZE - 71);

    /* final merge with secret bytes 11..75 */
    result = (uint64_t)len * SH_XXH_PRIME64_1;
    for (i = 0; i < 4; i++) {
        result += xxh3_fold64(acc[2 * i] ^ sh_read64le(sec + 11 + 16 * i),
                              acc[2 * i + 1] ^ sh_read64le(sec + 11 + 16 * i + 8));
    }
    return xxh3_avalanche(result);
}

uint64_t sh_xxh3_64(const void *data, size_t len, uint64_t seed)
{
    const uint8_t *p = (const uint8_t *)data;
    if (len <= 16) return xxh3_len_0to16(p, len, seed);
    if (len <= 128) return xxh3_len_17to128(p, len, seed);
    if (len <= 240) return xxh3_len_129to240(p, len, seed);
    if (seed == 0) return xxh3_long(p, len, sh_xxh3_default_secret);
    {
        /* secret derived from the seed: the default secret read as 24 words,
         * seed added to the even ones and subtracted from the odd ones */
        uint8_t secret[SH_XXH3_SECRET_SIZE];
        int i;
        for (i = 0; i < SH_XXH3_SECRET_SIZE / 16; i++) {
            const uint8_t *d = sh_xxh3_default_secret + 16 * i;
            sh_write64le(secret + 16 * i, sh_read64le(d) + seed);
            sh_write64le(secret + 16 * i + 8, sh_read64le(d + 8) - seed);
        }
        return xxh3_long(p, len, secret);
    }
}
