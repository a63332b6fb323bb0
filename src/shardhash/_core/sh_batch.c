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

#define SH_WORD_DISPATCH()                                                              \
    switch (algo) {                                                                     \
    case SH_ALGO_XXH3_64: SH_WORD_LOOP(sh_xxh3_64_word(v, seed)); break;                \
    case SH_ALGO_XXH64: SH_WORD_LOOP(sh_xxh64_word(v, seed)); break;                    \
    case SH_ALGO_XXH32: SH_WORD_LOOP(sh_xxh32_word(v, seed32)); break;                  \
    case SH_ALGO_MURMUR3_32: SH_WORD_LOOP(sh_murmur3_32_word(v, seed32)); break;        \
    case SH_ALGO_MURMUR3_128: SH_WORD_LOOP(sh_murmur3_128_word_h1(v, seed32)); break;   \
    case SH_ALGO_FNV1A_32: SH_WORD_LOOP(sh_fnv1a_32_word(v)); break;                    \
    case SH_ALGO_FNV1A_64: SH_WORD_LOOP(sh_fnv1a_64_word(v)); break;                    \
    default: for (i = 0; i < n; i++) out[i] = 0; break;                                 \
    }

void sh_hash_words(int algo, uint64_t seed, const uint64_t *words, size_t n, uint64_t *out)
{
    size_t i;
    const uint32_t seed32 = (uint32_t)seed;
#define LOAD(i) (words[i])
    SH_WORD_DISPATCH()
#undef LOAD
}

void sh_hash_words_strided(int algo, uint64_t seed, const char *base, ptrdiff_t stride,
                           size_t n, uint64_t *out)
{
    size_t i;
    const uint32_t seed32 = (uint32_t)seed;
    if (stride == (ptrdiff_t)sizeof(uint64_t)) {
        /* The contiguous case; memcpy keeps unaligned buffers legal. */
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

void sh_hash_decimal_strided(int algo, uint64_t seed, const char *base, ptrdiff_t stride,
                             size_t n, int is_unsigned, uint64_t *out)
{
    size_t i;
    char buf[24];
    for (i = 0; i < n; i++) {
        const uint64_t v = sh_load_u64(base + (ptrdiff_t)i * stride);
        const size_t len = sh_format_decimal(v, is_unsigned, buf);
        out[i] = sh_hash64(algo, buf, len, seed);
    }
}

void sh_hash_offsets32(int algo, uint64_t seed, const uint8_t *data, const int32_t *offsets,
                       size_t n, uint64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const int32_t a = offsets[i], b = offsets[i + 1];
        out[i] = sh_hash64(algo, data + a, (size_t)(b - a), seed);
    }
}

void sh_hash_offsets64(int algo, uint64_t seed, const uint8_t *data, const int64_t *offsets,
                       size_t n, uint64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const int64_t a = offsets[i], b = offsets[i + 1];
        out[i] = sh_hash64(algo, data + a, (size_t)(b - a), seed);
    }
}

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

ptrdiff_t sh_hash_ucs4(int algo, uint64_t seed, const char *base, size_t nchars, ptrdiff_t stride,
                       size_t n, uint8_t *scratch, uint64_t *out)
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
