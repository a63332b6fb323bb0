/*
 * MD5 as specified by RFC 1321, written from the specification.
 *
 * The sine-derived constants T[i] = floor(|sin(i + 1)| * 2^32) and the
 * per-round shift amounts are those of RFC 1321 section 3.4.  Words are
 * read little-endian explicitly, so the result does not depend on the host.
 */
#include "sh_md5.h"

/* clang-format off */
static const uint32_t sh_md5_T[64] = {
    0xd76aa478u, 0xe8c7b756u, 0x242070dbu, 0xc1bdceeeu,
    0xf57c0fafu, 0x4787c62au, 0xa8304613u, 0xfd469501u,
    0x698098d8u, 0x8b44f7afu, 0xffff5bb1u, 0x895cd7beu,
    0x6b901122u, 0xfd987193u, 0xa679438eu, 0x49b40821u,
    0xf61e2562u, 0xc040b340u, 0x265e5a51u, 0xe9b6c7aau,
    0xd62f105du, 0x02441453u, 0xd8a1e681u, 0xe7d3fbc8u,
    0x21e1cde6u, 0xc33707d6u, 0xf4d50d87u, 0x455a14edu,
    0xa9e3e905u, 0xfcefa3f8u, 0x676f02d9u, 0x8d2a4c8au,
    0xfffa3942u, 0x8771f681u, 0x6d9d6122u, 0xfde5380cu,
    0xa4beea44u, 0x4bdecfa9u, 0xf6bb4b60u, 0xbebfbc70u,
    0x289b7ec6u, 0xeaa127fau, 0xd4ef3085u, 0x04881d05u,
    0xd9d4d039u, 0xe6db99e5u, 0x1fa27cf8u, 0xc4ac5665u,
    0xf4292244u, 0x432aff97u, 0xab9423a7u, 0xfc93a039u,
    0x655b59c3u, 0x8f0ccc92u, 0xffeff47du, 0x85845dd1u,
    0x6fa87e4fu, 0xfe2ce6e0u, 0xa3014314u, 0x4e0811a1u,
    0xf7537e82u, 0xbd3af235u, 0x2ad7d2bbu, 0xeb86d391u,
};
/* clang-format on */

#define SH_MD5_RF(x, y, z) (((x) & (y)) | (~(x) & (z)))
#define SH_MD5_RG(x, y, z) (((x) & (z)) | ((y) & ~(z)))
#define SH_MD5_RH(x, y, z) ((x) ^ (y) ^ (z))
#define SH_MD5_RI(x, y, z) ((y) ^ ((x) | ~(z)))

/* The scalar steps, written for latency: a step waits on b, the word the
 * previous step produced, so everything that does not need b (a, the message
 * word, the constant, the terms of c and d) is summed first, and b enters
 * last.  F and G are sums of two disjoint terms (so + equals |): G's term
 * without b goes in early; H is b ^ (c ^ d). */
#define SH_MD5_SF(a, b, c, d, xk, s, t)         \
    do {                                        \
        uint32_t e_ = (a) + (xk) + (t);         \
        (a) = e_ + ((d) ^ ((b) & ((c) ^ (d)))); \
        (a) = sh_rotl32((a), (s)) + (b);        \
    } while (0)
#define SH_MD5_SG(a, b, c, d, xk, s, t)                \
    do {                                               \
        uint32_t e_ = (a) + (xk) + (t) + ((c) & ~(d)); \
        (a) = e_ + ((b) & (d));                        \
        (a) = sh_rotl32((a), (s)) + (b);               \
    } while (0)
#define SH_MD5_SH(a, b, c, d, xk, s, t)  \
    do {                                 \
        uint32_t e_ = (a) + (xk) + (t);  \
        (a) = e_ + ((b) ^ ((c) ^ (d)));  \
        (a) = sh_rotl32((a), (s)) + (b); \
    } while (0)
#define SH_MD5_SI(a, b, c, d, xk, s, t)  \
    do {                                 \
        uint32_t e_ = (a) + (xk) + (t);  \
        (a) = e_ + ((c) ^ ((b) | ~(d))); \
        (a) = sh_rotl32((a), (s)) + (b); \
    } while (0)

/* The 64 steps of RFC 1321, in its order: STEP(f, a, b, c, d, k, s, t) for
 * each step, with f the round's function (F, G, H, I as named by the
 * caller), k the index of the message word, s the rotation and t the
 * constant T[i].  Round r takes steps i = 16r .. 16r + 15 with the word
 * k = (m * i + o) mod 16 (m, o = 1, 0; 5, 1; 3, 5; 7, 0) and rotations
 * s0..s3 in turn.  The scalar, the SSE2 and the portable lane transforms
 * below all expand this one schedule. */
/* clang-format off */
#define SH_MD5_ROUND(STEP, f, first, m, o, s0, s1, s2, s3)                               \
    for (i_ = (first); i_ < (first) + 16; i_ += 4) {                                     \
        STEP(f, a, b, c, d, ((m) * i_ + (o)) & 15, s0, sh_md5_T[i_]);                    \
        STEP(f, d, a, b, c, ((m) * (i_ + 1) + (o)) & 15, s1, sh_md5_T[i_ + 1]);          \
        STEP(f, c, d, a, b, ((m) * (i_ + 2) + (o)) & 15, s2, sh_md5_T[i_ + 2]);          \
        STEP(f, b, c, d, a, ((m) * (i_ + 3) + (o)) & 15, s3, sh_md5_T[i_ + 3]);          \
    }
#define SH_MD5_SCHEDULE(STEP, F, G, H, I)                                                \
    do {                                                                                 \
        int i_;                                                                          \
        SH_MD5_ROUND(STEP, F, 0, 1, 0, 7, 12, 17, 22)                                    \
        SH_MD5_ROUND(STEP, G, 16, 5, 1, 5, 9, 14, 20)                                    \
        SH_MD5_ROUND(STEP, H, 32, 3, 5, 4, 11, 16, 23)                                   \
        SH_MD5_ROUND(STEP, I, 48, 7, 0, 6, 10, 15, 21)                                   \
    } while (0)
/* clang-format on */

/* A scalar step on the message word X[k]. */
#define SH_MD5_XSTEP(f, a, b, c, d, k, s, t) f(a, b, c, d, X[k], s, t)

/* The 64 steps of RFC 1321 on the message words X into the state s[4]. */
SH_FORCE_INLINE void sh_md5_words(uint32_t s[4], const uint32_t X[16])
{
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3];
    SH_MD5_SCHEDULE(SH_MD5_XSTEP, SH_MD5_SF, SH_MD5_SG, SH_MD5_SH, SH_MD5_SI);
    s[0] += a;
    s[1] += b;
    s[2] += c;
    s[3] += d;
}

/* Process one 64-byte block into the state s[4]. */
void sh_md5_block(uint32_t s[4], const uint8_t *p)
{
    uint32_t X[16];
    int i;
    for (i = 0; i < 16; i++) X[i] = sh_read32le(p + 4 * i);
    sh_md5_words(s, X);
}

/* The padded block of a message of at most 55 bytes, as its 16 words. */
SH_FORCE_INLINE void sh_md5_short_words(uint32_t X[16], const uint8_t *p, size_t len)
{
    size_t full = len >> 2, w, r = len & 3u;
    uint32_t last = 0x80u << (8 * r);
    for (w = 0; w < full; w++) X[w] = sh_read32le(p + 4 * w);
    /* the partial word: the remaining bytes, then the 0x80 terminator */
    if (r >= 1) last |= (uint32_t)p[4 * full];
    if (r >= 2) last |= (uint32_t)p[4 * full + 1] << 8;
    if (r >= 3) last |= (uint32_t)p[4 * full + 2] << 16;
    X[full] = last;
    for (w = full + 1; w < 14; w++) X[w] = 0;
    X[14] = (uint32_t)(len << 3);
    X[15] = 0;
}

/* Digest state after the whole message (padding included). */
static void sh_md5_state(const void *data, size_t len, uint32_t s[4])
{
    const uint8_t *p = (const uint8_t *)data;
    uint8_t tail[128];
    size_t rem, padded, i;
    uint64_t bits = (uint64_t)len * 8u;

    s[0] = 0x67452301u;
    s[1] = 0xefcdab89u;
    s[2] = 0x98badcfeu;
    s[3] = 0x10325476u;
    if (len <= 55) { /* one block, built as words (no byte buffer) */
        uint32_t X[16];
        sh_md5_short_words(X, p, len);
        sh_md5_words(s, X);
        return;
    }
    while (len >= 64) {
        sh_md5_block(s, p);
        p += 64;
        len -= 64;
    }
    /* Padding: 0x80, zeros up to 56 mod 64, then the bit length (LE64). */
    rem = len;
    if (rem) memcpy(tail, p, rem);
    tail[rem] = 0x80u;
    padded = (rem < 56) ? 64 : 128;
    memset(tail + rem + 1, 0, padded - rem - 1);
    for (i = 0; i < 8; i++) tail[padded - 8 + i] = (uint8_t)(bits >> (8 * i));
    sh_md5_block(s, tail);
    if (padded == 128) sh_md5_block(s, tail + 64);
}

void sh_md5(const void *data, size_t len, uint8_t out[16])
{
    uint32_t s[4];
    int i, j;
    sh_md5_state(data, len, s);
    for (i = 0; i < 4; i++)
        for (j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(s[i] >> (8 * j));
}

uint32_t sh_md5_u32le(const void *data, size_t len)
{
    uint32_t s[4];
    sh_md5_state(data, len, s);
    return s[0]; /* digest bytes 0..3 are s[0] in little-endian order */
}

/* Multi-lane MD5 for short messages (at most 55 bytes: one padded block).
 * SH_MD5_LANES independent messages advance in lock step; the per-lane
 * loops are plain C that compilers turn into SIMD (SSE2 / NEON) without any
 * target-specific code. */
#define SH_MD5_LSTEP(f, a, b, c, d, k, s, t)                               \
    do {                                                                   \
        int l_;                                                            \
        for (l_ = 0; l_ < SH_MD5_LANES; l_++) {                            \
            uint32_t v_ = a[l_] + f(b[l_], c[l_], d[l_]) + X[k][l_] + (t); \
            a[l_] = ((v_ << (s)) | (v_ >> (32 - (s)))) + b[l_];            \
        }                                                                  \
    } while (0)

#if (defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)) && !defined(SH_NO_SIMD)
#  include <emmintrin.h>
#  define SH_MD5_SSE2 1
#endif

#if defined(SH_MD5_SSE2)
/* The same lane loop written with SSE2 (baseline on every x86-64 target):
 * four groups of four lanes interleaved for instruction-level parallelism. */
#  define SH_V_ROTL(v, s) _mm_or_si128(_mm_slli_epi32((v), (s)), _mm_srli_epi32((v), 32 - (s)))
#  define SH_V_F(x, y, z) _mm_xor_si128((z), _mm_and_si128((x), _mm_xor_si128((y), (z))))
#  define SH_V_G(x, y, z) _mm_xor_si128((y), _mm_and_si128((z), _mm_xor_si128((x), (y))))
#  define SH_V_H(x, y, z) _mm_xor_si128(_mm_xor_si128((x), (y)), (z))
#  define SH_V_I(x, y, z) _mm_xor_si128((y), _mm_or_si128((x), _mm_xor_si128((z), ones)))
#  define SH_V_ONE(f, a, b, c, d, k, s, g)                                                                  \
      do {                                                                                                  \
          __m128i v_ = _mm_add_epi32(_mm_add_epi32(a##g, f(b##g, c##g, d##g)), _mm_add_epi32(X##g[k], t_)); \
          a##g = _mm_add_epi32(SH_V_ROTL(v_, s), b##g);                                                     \
      } while (0)
#  define SH_V_STEP(f, a, b, c, d, k, s, t)      \
      do {                                       \
          __m128i t_ = _mm_set1_epi32((int)(t)); \
          SH_V_ONE(f, a, b, c, d, k, s, 0);      \
          SH_V_ONE(f, a, b, c, d, k, s, 1);      \
          SH_V_ONE(f, a, b, c, d, k, s, 2);      \
          SH_V_ONE(f, a, b, c, d, k, s, 3);      \
      } while (0)

/* out: first digest word of each lane; out_b (may be NULL): the second. */
void sh_md5_lanes(uint32_t X[16][SH_MD5_LANES], uint32_t out[SH_MD5_LANES], uint32_t *out_b)
{
    __m128i X0[16], X1[16], X2[16], X3[16];
    const __m128i ones = _mm_set1_epi32(-1);
    __m128i a0 = _mm_set1_epi32((int)0x67452301u), b0 = _mm_set1_epi32((int)0xefcdab89u);
    __m128i c0 = _mm_set1_epi32((int)0x98badcfeu), d0 = _mm_set1_epi32((int)0x10325476u);
    __m128i a1 = a0, b1 = b0, c1 = c0, d1 = d0, a2 = a0, b2 = b0, c2 = c0, d2 = d0;
    __m128i a3 = a0, b3 = b0, c3 = c0, d3 = d0;
    int i;
    for (i = 0; i < 16; i++) {
        X0[i] = _mm_loadu_si128((const __m128i *)(const void *)&X[i][0]);
        X1[i] = _mm_loadu_si128((const __m128i *)(const void *)&X[i][4]);
        X2[i] = _mm_loadu_si128((const __m128i *)(const void *)&X[i][8]);
        X3[i] = _mm_loadu_si128((const __m128i *)(const void *)&X[i][12]);
    }
    SH_MD5_SCHEDULE(SH_V_STEP, SH_V_F, SH_V_G, SH_V_H, SH_V_I);
    {
        const __m128i init = _mm_set1_epi32((int)0x67452301u);
        _mm_storeu_si128((__m128i *)(void *)&out[0], _mm_add_epi32(a0, init));
        _mm_storeu_si128((__m128i *)(void *)&out[4], _mm_add_epi32(a1, init));
        _mm_storeu_si128((__m128i *)(void *)&out[8], _mm_add_epi32(a2, init));
        _mm_storeu_si128((__m128i *)(void *)&out[12], _mm_add_epi32(a3, init));
        if (out_b) {
            const __m128i init_b = _mm_set1_epi32((int)0xefcdab89u);
            _mm_storeu_si128((__m128i *)(void *)&out_b[0], _mm_add_epi32(b0, init_b));
            _mm_storeu_si128((__m128i *)(void *)&out_b[4], _mm_add_epi32(b1, init_b));
            _mm_storeu_si128((__m128i *)(void *)&out_b[8], _mm_add_epi32(b2, init_b));
            _mm_storeu_si128((__m128i *)(void *)&out_b[12], _mm_add_epi32(b3, init_b));
        }
    }
}
#else
/* out: first digest word of each lane; out_b (may be NULL): the second. */
void sh_md5_lanes(uint32_t X[16][SH_MD5_LANES], uint32_t out[SH_MD5_LANES], uint32_t *out_b)
{
    uint32_t a[SH_MD5_LANES], b[SH_MD5_LANES], c[SH_MD5_LANES], d[SH_MD5_LANES];
    int l;
    for (l = 0; l < SH_MD5_LANES; l++) {
        a[l] = 0x67452301u;
        b[l] = 0xefcdab89u;
        c[l] = 0x98badcfeu;
        d[l] = 0x10325476u;
    }
    SH_MD5_SCHEDULE(SH_MD5_LSTEP, SH_MD5_RF, SH_MD5_RG, SH_MD5_RH, SH_MD5_RI);
    for (l = 0; l < SH_MD5_LANES; l++) out[l] = a[l] + 0x67452301u;
    if (out_b)
        for (l = 0; l < SH_MD5_LANES; l++) out_b[l] = b[l] + 0xefcdab89u;
}
#endif

void sh_md5_u32le_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint32_t *out)
{
    uint32_t X[16][SH_MD5_LANES], h[SH_MD5_LANES], W[16];
    size_t idx[SH_MD5_LANES];
    size_t i;
    int fill = 0, l, w;
    for (i = 0; i < n; i++) {
        size_t len = (size_t)(offsets[i + 1] - offsets[i]);
        if (len > 55) {
            out[i] = sh_md5_u32le(data + offsets[i], len);
            continue;
        }
        /* built as one block, then stored into its lane: word w at X[w][fill] */
        sh_md5_short_words(W, data + offsets[i], len);
        for (w = 0; w < 16; w++) X[w][fill] = W[w];
        idx[fill++] = i;
        if (fill == SH_MD5_LANES) {
            sh_md5_lanes(X, h, NULL);
            for (l = 0; l < SH_MD5_LANES; l++) out[idx[l]] = h[l];
            fill = 0;
        }
    }
    for (l = 0; l < fill; l++) {
        int64_t a = offsets[idx[l]], b = offsets[idx[l] + 1];
        out[idx[l]] = sh_md5_u32le(data + a, (size_t)(b - a));
    }
}
