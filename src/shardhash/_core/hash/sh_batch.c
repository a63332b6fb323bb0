/* shardhash core: dispatch and batch hashing kernels.  See sh_batch.h. */
#include "sh_batch.h"
#include "sh_xxhash.h"
#include "sh_murmur3.h"
#include "sh_fnv.h"

uint64_t sh_hash64(int algo, const void *data, size_t len, uint64_t seed)
{
    switch (algo) {
    case SH_ALGO_XXH3_64: return sh_xxh3_64(data, len, seed);
    case SH_ALGO_XXH64: return sh_xxh64(data, len, seed);
    case SH_ALGO_XXH32: return sh_xxh32(data, len, (uint32_t)seed);
    case SH_ALGO_MURMUR3_32: return sh_murmur3_32(data, len, (uint32_t)seed);
    case SH_ALGO_MURMUR3_128: {
        uint64_t h[2];
        sh_murmur3_128(data, len, (uint32_t)seed, h);
        return h[0];
    }
    case SH_ALGO_FNV1A_32: return sh_fnv1a_32(data, len);
    case SH_ALGO_FNV1A_64: return sh_fnv1a_64(data, len);
    default: return 0;
    }
}

/* One loop per algorithm, with the word hash inlined into it.  Keys are
 * independent, so the main loop takes eight per iteration: the word hashes
 * are short multiply chains, and with the loop bookkeeping spread over
 * eight keys the chains of neighbouring keys overlap better (measured with
 * gcc -O3 on x86-64: xxh3_64 about 10% and xxh64/xxh32/fnv1a_64 10-25% fewer
 * ns per key than one key per iteration).  The tail takes the rest one by
 * one.  Each key is loaded before its own slot is written, so hashing in
 * place (out aliasing the keys element for element) stays correct. */
/* clang-format off */
#define SH_WORD_ONE(J, EXPR)                                             \
    {                                                                    \
        const uint64_t v = LOAD(i + (J));                                \
        out[i + (J)] = (uint64_t)(EXPR);                                 \
    }

#define SH_WORD_LOOP(EXPR)                                               \
    for (i = 0; n - i >= 8; i += 8) {                                    \
        SH_WORD_ONE(0, EXPR) SH_WORD_ONE(1, EXPR)                        \
        SH_WORD_ONE(2, EXPR) SH_WORD_ONE(3, EXPR)                        \
        SH_WORD_ONE(4, EXPR) SH_WORD_ONE(5, EXPR)                        \
        SH_WORD_ONE(6, EXPR) SH_WORD_ONE(7, EXPR)                        \
    }                                                                    \
    for (; i < n; i++) SH_WORD_ONE(0, EXPR)
/* clang-format on */

#define SH_WORD_DISPATCH()                                                            \
    switch (algo) {                                                                   \
    case SH_ALGO_XXH3_64: SH_WORD_LOOP(sh_xxh3_64_word(v, seed)); break;              \
    case SH_ALGO_XXH64: SH_WORD_LOOP(sh_xxh64_word(v, seed)); break;                  \
    case SH_ALGO_XXH32: SH_WORD_LOOP(sh_xxh32_word(v, seed32)); break;                \
    case SH_ALGO_MURMUR3_32: SH_WORD_LOOP(sh_murmur3_32_word(v, seed32)); break;      \
    case SH_ALGO_MURMUR3_128: SH_WORD_LOOP(sh_murmur3_128_word_h1(v, seed32)); break; \
    case SH_ALGO_FNV1A_32: SH_WORD_LOOP(sh_fnv1a_32_word(v)); break;                  \
    case SH_ALGO_FNV1A_64: SH_WORD_LOOP(sh_fnv1a_64_word(v)); break;                  \
    default:                                                                          \
        for (i = 0; i < n; i++) out[i] = 0;                                           \
        break;                                                                        \
    }

/* XXH3-64 over contiguous words, the hottest batch path.  On x86-64 half of
 * each group of eight keys goes through SSE2 (two keys per register; the
 * 64-bit multiply is built from three 32x32->64 multiplies) while the other
 * half takes the scalar path: the two halves run on different execution
 * units, so together they finish sooner than eight scalar hashes (about 30%
 * fewer ns per key measured with gcc -O3).  Every other target, or a build
 * with SH_NO_SIMD defined, uses the plain C loop, which gives the same
 * results.  Keys are read before their own slots are written, as above. */
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(SH_NO_SIMD)
#  define SH_XXH3_SSE2 1
#  include <emmintrin.h>

/* Low 64 bits of a * c in each lane, given c's 32-bit halves in clo, chi. */
static __m128i sh_mul64_sse2(__m128i a, __m128i clo, __m128i chi)
{
    const __m128i lo = _mm_mul_epu32(a, clo);
    const __m128i mid = _mm_add_epi64(_mm_mul_epu32(_mm_srli_epi64(a, 32), clo), _mm_mul_epu32(a, chi));
    return _mm_add_epi64(lo, _mm_slli_epi64(mid, 32));
}

/* sh_xxh3_64_word_keyed for two keys; rotl(v, 32) is a swap of halves. */
static __m128i sh_xxh3_word2_sse2(__m128i v, __m128i key, __m128i clo, __m128i chi, __m128i eight)
{
    __m128i x = _mm_xor_si128(key, _mm_shuffle_epi32(v, 0xB1));
    x = _mm_xor_si128(x, _mm_or_si128(_mm_slli_epi64(v, 17), _mm_srli_epi64(v, 47)));
    x = _mm_xor_si128(x, _mm_or_si128(_mm_slli_epi64(v, 56), _mm_srli_epi64(v, 8)));
    x = sh_mul64_sse2(x, clo, chi);
    x = _mm_xor_si128(x, _mm_add_epi64(_mm_srli_epi64(x, 35), eight));
    x = sh_mul64_sse2(x, clo, chi);
    return _mm_xor_si128(x, _mm_srli_epi64(x, 28));
}
#endif

static void sh_xxh3_words_contiguous(uint64_t seed, const char *base, size_t n, uint64_t *out)
{
    const uint64_t key = sh_xxh3_word_key(seed);
    size_t i = 0;
#ifdef SH_XXH3_SSE2
    const __m128i vkey = _mm_set1_epi64x((long long)key);
    const __m128i clo = _mm_set1_epi64x((long long)(SH_XXH_PRIME_MX2 & 0xFFFFFFFFu));
    const __m128i chi = _mm_set1_epi64x((long long)(SH_XXH_PRIME_MX2 >> 32));
    const __m128i eight = _mm_set1_epi64x(8);
    for (; n - i >= 8; i += 8) {
        const char *p = base + i * 8;
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        _mm_storeu_si128((__m128i *)(void *)(out + i), sh_xxh3_word2_sse2(v, vkey, clo, chi, eight));
        v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
        _mm_storeu_si128((__m128i *)(void *)(out + i + 2), sh_xxh3_word2_sse2(v, vkey, clo, chi, eight));
        out[i + 4] = sh_xxh3_64_word_keyed(sh_load_u64(p + 32), key);
        out[i + 5] = sh_xxh3_64_word_keyed(sh_load_u64(p + 40), key);
        out[i + 6] = sh_xxh3_64_word_keyed(sh_load_u64(p + 48), key);
        out[i + 7] = sh_xxh3_64_word_keyed(sh_load_u64(p + 56), key);
    }
#else
    for (; n - i >= 8; i += 8) {
        const char *p = base + i * 8;
        size_t j;
        for (j = 0; j < 8; j++) out[i + j] = sh_xxh3_64_word_keyed(sh_load_u64(p + 8 * j), key);
    }
#endif
    for (; i < n; i++) out[i] = sh_xxh3_64_word_keyed(sh_load_u64(base + i * 8), key);
}

void sh_hash_words(int algo, uint64_t seed, const uint64_t *words, size_t n, uint64_t *out)
{
    size_t i;
    const uint32_t seed32 = (uint32_t)seed;
    if (algo == SH_ALGO_XXH3_64) {
        sh_xxh3_words_contiguous(seed, (const char *)words, n, out);
        return;
    }
#define LOAD(i) (words[i])
    SH_WORD_DISPATCH()
#undef LOAD
}

void sh_hash_words_strided(int algo, uint64_t seed, const char *base, ptrdiff_t stride, size_t n,
                           uint64_t *out)
{
    size_t i;
    const uint32_t seed32 = (uint32_t)seed;
    if (stride == (ptrdiff_t)sizeof(uint64_t)) {
        /* The contiguous case; memcpy keeps unaligned buffers legal. */
        if (algo == SH_ALGO_XXH3_64) {
            sh_xxh3_words_contiguous(seed, base, n, out);
            return;
        }
#define LOAD(i) sh_load_u64(base + (i) * 8)
        SH_WORD_DISPATCH()
#undef LOAD
        return;
    }
#define LOAD(i) sh_load_u64(base + (ptrdiff_t)(i) * stride)
    SH_WORD_DISPATCH()
#undef LOAD
}

size_t sh_format_decimal(uint64_t v, int is_unsigned, char *buf)
{
    char tmp[24];
    size_t len = 0, k = 0;
    uint64_t mag = v;
    int neg = 0;
    if (!is_unsigned && (int64_t)v < 0) {
        neg = 1;
        mag = (uint64_t)0 - v; /* two's complement magnitude, exact for INT64_MIN */
    }
    do {
        tmp[k++] = (char)('0' + (int)(mag % 10u));
        mag /= 10u;
    } while (mag != 0);
    if (neg) buf[len++] = '-';
    while (k > 0) buf[len++] = tmp[--k];
    return len;
}

void sh_hash_decimal_strided(int algo, uint64_t seed, const char *base, ptrdiff_t stride, size_t n,
                             int is_unsigned, uint64_t *out)
{
    size_t i;
    char buf[24];
    for (i = 0; i < n; i++) {
        const uint64_t v = sh_load_u64(base + (ptrdiff_t)i * stride);
        const size_t len = sh_format_decimal(v, is_unsigned, buf);
        out[i] = sh_hash64(algo, buf, len, seed);
    }
}

/* The Arrow offset layouts, 32- and 64-bit offsets: one loop, defined for
 * each offset type T. */
#define SH_HASH_OFFSETS_FN(name, T)                                                                    \
    void name(int algo, uint64_t seed, const uint8_t *data, const T *offsets, size_t n, uint64_t *out) \
    {                                                                                                  \
        size_t i;                                                                                      \
        for (i = 0; i < n; i++) {                                                                      \
            const T a = offsets[i], b = offsets[i + 1];                                                \
            out[i] = sh_hash64(algo, data + a, (size_t)(b - a), seed);                                 \
        }                                                                                              \
    }
SH_HASH_OFFSETS_FN(sh_hash_offsets32, int32_t)
SH_HASH_OFFSETS_FN(sh_hash_offsets64, int64_t)
#undef SH_HASH_OFFSETS_FN

ptrdiff_t sh_hash_views(int algo, uint64_t seed, const uint8_t *views, const uint8_t *const *buffers,
                        const int64_t *buffer_sizes, size_t n_buffers, size_t n, uint64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const uint8_t *v = views + 16 * i;
        const int32_t len = (int32_t)sh_read32le(v); /* Arrow buffers are little-endian here */
        if (len < 0) return (ptrdiff_t)i;
        if (len <= 12) {
            out[i] = sh_hash64(algo, v + 4, (size_t)len, seed);
        } else {
            const int32_t buf = (int32_t)sh_read32le(v + 8);
            const int32_t off = (int32_t)sh_read32le(v + 12);
            if (buf < 0 || (size_t)buf >= n_buffers || off < 0 ||
                (int64_t)off + (int64_t)len > buffer_sizes[buf])
                return (ptrdiff_t)i;
            out[i] = sh_hash64(algo, buffers[buf] + off, (size_t)len, seed);
        }
    }
    return -1;
}

void sh_hash_fixed_bytes(int algo, uint64_t seed, const char *base, size_t itemsize, ptrdiff_t stride,
                         size_t n, uint64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const char *p = base + (ptrdiff_t)i * stride;
        size_t len = itemsize;
        while (len > 0 && p[len - 1] == 0) len--;
        out[i] = sh_hash64(algo, p, len, seed);
    }
}

size_t sh_ucs4_to_utf8(const uint32_t *src, size_t n, uint8_t *dst)
{
    size_t i, o = 0;
    for (i = 0; i < n; i++) {
        uint32_t c;
        memcpy(&c, src + i, sizeof c);
        if (c < 0x80u) {
            dst[o++] = (uint8_t)c;
        } else if (c < 0x800u) {
            dst[o++] = (uint8_t)(0xC0u | (c >> 6));
            dst[o++] = (uint8_t)(0x80u | (c & 0x3Fu));
        } else if (c < 0x10000u) {
            if (c >= 0xD800u && c <= 0xDFFFu) return (size_t)-1;
            dst[o++] = (uint8_t)(0xE0u | (c >> 12));
            dst[o++] = (uint8_t)(0x80u | ((c >> 6) & 0x3Fu));
            dst[o++] = (uint8_t)(0x80u | (c & 0x3Fu));
        } else if (c <= 0x10FFFFu) {
            dst[o++] = (uint8_t)(0xF0u | (c >> 18));
            dst[o++] = (uint8_t)(0x80u | ((c >> 12) & 0x3Fu));
            dst[o++] = (uint8_t)(0x80u | ((c >> 6) & 0x3Fu));
            dst[o++] = (uint8_t)(0x80u | (c & 0x3Fu));
        } else {
            return (size_t)-1;
        }
    }
    return o;
}

ptrdiff_t sh_hash_ucs4(int algo, uint64_t seed, const char *base, size_t nchars, ptrdiff_t stride, size_t n,
                       uint8_t *scratch, uint64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const char *p = base + (ptrdiff_t)i * stride;
        size_t len = nchars, nbytes;
        uint32_t c;
        while (len > 0) {
            memcpy(&c, p + 4 * (len - 1), sizeof c);
            if (c != 0) break;
            len--;
        }
        nbytes = sh_ucs4_to_utf8((const uint32_t *)(const void *)p, len, scratch);
        if (nbytes == (size_t)-1) return (ptrdiff_t)i;
        out[i] = sh_hash64(algo, scratch, nbytes, seed);
    }
    return -1;
}
