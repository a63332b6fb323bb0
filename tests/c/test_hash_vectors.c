/*
 * Plain-C check of the core hash functions against the frozen golden vectors
 * (no Python involved, so it also runs cross-compiled, e.g. under qemu).
 *
 * Usage: test_hash_vectors <vectors-dir>
 * Reads <vectors-dir>/hashes.tsv (format: see tests/vectors/README.md),
 * rebuilds the documented 2048-byte input buffer and, for every row, hashes
 * the first `length` bytes with the row's algorithm and seed:
 *   - from an exactly-sized heap copy (so an over-read shows under ASan), and
 *   - from an odd address (so no result depends on alignment);
 * rows of length 8 also go through the inline single-word fast path.
 * Then every 8-byte window of the buffer is hashed through each word fast
 * path and through the general function, which must agree, and a few
 * independently published values are checked.
 * Prints "N passed, M failed" and exits 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sh_hash.h"
#include "sh_fnv.h"
#include "sh_murmur3.h"
#include "sh_xxhash.h"

#define BUF_LEN      2048
#define MAX_LINE     512
#define MAX_REPORTED 25

static uint8_t g_buf[BUF_LEN];
static uint8_t g_odd[BUF_LEN + 1];
static unsigned long g_passed, g_failed;

static const char *const k_names[SH_ALGO_COUNT] = {"xxh3_64",     "xxh64",    "xxh32",   "murmur3_32",
                                                   "murmur3_128", "fnv1a_32", "fnv1a_64"};

/* byte[i] = ((i * 2654435761 + 1013904223) mod 2^32) >> 24 */
static void make_buffer(void)
{
    uint32_t i;
    for (i = 0; i < BUF_LEN; i++) {
        g_buf[i] = (uint8_t)((uint32_t)(i * 2654435761u + 1013904223u) >> 24);
    }
    memcpy(g_odd + 1, g_buf, BUF_LEN);
}

static void hex64(uint64_t v, char out[17])
{
    static const char digits[] = "0123456789abcdef";
    int i;
    for (i = 15; i >= 0; i--) {
        out[i] = digits[v & 15u];
        v >>= 4;
    }
    out[16] = '\0';
}

static void check(int ok, unsigned long lineno, const char *what, const char *algo, uint64_t seed, size_t len,
                  uint64_t got_hi, uint64_t got_lo)
{
    if (ok) {
        g_passed++;
        return;
    }
    g_failed++;
    if (g_failed <= MAX_REPORTED) {
        char s[17], h[17], l[17];
        hex64(seed, s);
        hex64(got_hi, h);
        hex64(got_lo, l);
        fprintf(stderr, "FAIL line %lu: %s %s seed=0x%s len=%lu got=%s%s\n", lineno, what, algo, s,
                (unsigned long)len, h, l);
    }
}

/* The general one-shot function: result as (hi, lo); hi is 0 except for
 * murmur3_128 (hi = h2, lo = h1). */
static void hash_general(int algo, const uint8_t *p, size_t len, uint64_t seed, uint64_t *hi, uint64_t *lo)
{
    uint64_t o[2];
    *hi = 0;
    switch (algo) {
    case SH_ALGO_XXH3_64: *lo = sh_xxh3_64(p, len, seed); break;
    case SH_ALGO_XXH64: *lo = sh_xxh64(p, len, seed); break;
    case SH_ALGO_XXH32: *lo = sh_xxh32(p, len, (uint32_t)seed); break;
    case SH_ALGO_MURMUR3_32: *lo = sh_murmur3_32(p, len, (uint32_t)seed); break;
    case SH_ALGO_MURMUR3_128:
        sh_murmur3_128(p, len, (uint32_t)seed, o);
        *lo = o[0];
        *hi = o[1];
        break;
    case SH_ALGO_FNV1A_32: *lo = sh_fnv1a_32(p, len); break;
    default: *lo = sh_fnv1a_64(p, len); break;
    }
}

/* The inline word fast path (64-bit result; murmur3_128 gives h1). */
static uint64_t hash_word(int algo, uint64_t v, uint64_t seed)
{
    switch (algo) {
    case SH_ALGO_XXH3_64: return sh_xxh3_64_word(v, seed);
    case SH_ALGO_XXH64: return sh_xxh64_word(v, seed);
    case SH_ALGO_XXH32: return sh_xxh32_word(v, (uint32_t)seed);
    case SH_ALGO_MURMUR3_32: return sh_murmur3_32_word(v, (uint32_t)seed);
    case SH_ALGO_MURMUR3_128: return sh_murmur3_128_word_h1(v, (uint32_t)seed);
    case SH_ALGO_FNV1A_32: return sh_fnv1a_32_word(v);
    default: return sh_fnv1a_64_word(v);
    }
}

static int algo_index(const char *name)
{
    int a;
    for (a = 0; a < SH_ALGO_COUNT; a++) {
        if (strcmp(name, k_names[a]) == 0) return a;
    }
    return -1;
}

/* Parses up to 32 lowercase/uppercase hex digits into (hi, lo). */
static int parse_hex128(const char *s, uint64_t *hi, uint64_t *lo)
{
    size_t n = strlen(s), i;
    *hi = 0;
    *lo = 0;
    if (n == 0 || n > 32) return 0;
    for (i = 0; i < n; i++) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return 0;
        *hi = (*hi << 4) | (*lo >> 60);
        *lo = (*lo << 4) | (uint64_t)d;
    }
    return 1;
}

static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (*s == '\0') return 0;
    for (; *s; s++) {
        unsigned d;
        if (*s < '0' || *s > '9') return 0;
        d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10u) return 0;
        v = v * 10u + d;
    }
    *out = v;
    return 1;
}

/* Splits line into exactly four tab-separated fields (in place). */
static int split4(char *line, char *f[4])
{
    int i;
    f[0] = line;
    for (i = 1; i < 4; i++) {
        char *t = strchr(f[i - 1], '\t');
        if (!t) return 0;
        *t = '\0';
        f[i] = t + 1;
    }
    return strchr(f[3], '\t') == NULL;
}

static void check_row(unsigned long lineno, int algo, uint64_t seed, size_t len, uint64_t exp_hi,
                      uint64_t exp_lo)
{
    const char *name = k_names[algo];
    uint64_t hi, lo;
    uint8_t *copy = (uint8_t *)malloc(len ? len : 1);

    if (!copy) {
        check(0, lineno, "malloc", name, seed, len, 0, 0);
        return;
    }
    memcpy(copy, g_buf, len);
    hash_general(algo, copy, len, seed, &hi, &lo);
    check(hi == exp_hi && lo == exp_lo, lineno, "general", name, seed, len, hi, lo);
    free(copy);

    hash_general(algo, g_odd + 1, len, seed, &hi, &lo);
    check(hi == exp_hi && lo == exp_lo, lineno, "unaligned", name, seed, len, hi, lo);

    if (len == 8) {
        uint64_t w = hash_word(algo, sh_read64le(g_buf), seed);
        check(w == exp_lo, lineno, "word", name, seed, len, 0, w);
    }
}

/* Word fast path == general function on every 8-byte window of the buffer. */
static void check_word_windows(void)
{
    static const uint64_t seeds[] = {0u, 1u, 0xffffffffu, UINT64_C(0xffffffffffffffff),
                                     UINT64_C(0x9e3779b97f4a7c15)};
    int algo;
    size_t s, off;
    for (algo = 0; algo < SH_ALGO_COUNT; algo++) {
        for (s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
            uint64_t seed = seeds[s];
            unsigned long bad = 0;
            if (algo == SH_ALGO_XXH32 || algo == SH_ALGO_MURMUR3_32 || algo == SH_ALGO_MURMUR3_128) {
                seed &= 0xffffffffu;
            }
            for (off = 0; off + 8 <= BUF_LEN; off++) {
                uint64_t hi, lo, w = hash_word(algo, sh_read64le(g_buf + off), seed);
                hash_general(algo, g_buf + off, 8, seed, &hi, &lo);
                if (w != lo) {
                    if (bad == 0) {
                        check(0, 0, "word-window", k_names[algo], seed, off, hi, lo);
                    }
                    bad++;
                }
            }
            if (bad == 0) check(1, 0, "", "", 0, 0, 0, 0);
        }
    }
}

/* A few values published independently of any package, so the checker does
 * not rest on the vector file alone.
 * FNV-1a: the FNV specification's test vectors (draft-eastlake-fnv; also
 *   test_fnv.c of the FNV reference code).
 * MurmurHash3_x86_32: the widely cited test values for the reference code
 *   ("" with seeds 0, 1, 0xffffffff; strings with seed 0x9747b28c).
 * XXH32 / XXH64 / XXH3_64 of the empty input, seed 0 (xxHash documentation). */
static void check_published(void)
{
    static const struct {
        int algo;
        const char *text;
        uint64_t seed;
        uint64_t expected;
    } pub[] = {
        {SH_ALGO_FNV1A_32, "", 0, 0x811c9dc5u},
        {SH_ALGO_FNV1A_32, "a", 0, 0xe40c292cu},
        {SH_ALGO_FNV1A_32, "foobar", 0, 0xbf9cf968u},
        {SH_ALGO_FNV1A_64, "", 0, UINT64_C(0xcbf29ce484222325)},
        {SH_ALGO_FNV1A_64, "a", 0, UINT64_C(0xaf63dc4c8601ec8c)},
        {SH_ALGO_FNV1A_64, "foobar", 0, UINT64_C(0x85944171f73967e8)},
        {SH_ALGO_MURMUR3_32, "", 0, 0u},
        {SH_ALGO_MURMUR3_32, "", 1, 0x514e28b7u},
        {SH_ALGO_MURMUR3_32, "", 0xffffffffu, 0x81f16f39u},
        {SH_ALGO_MURMUR3_32, "Hello, world!", 0x9747b28cu, 0x24884cbau},
        {SH_ALGO_MURMUR3_32, "The quick brown fox jumps over the lazy dog", 0x9747b28cu, 0x2fa826cdu},
        {SH_ALGO_XXH32, "", 0, 0x02cc5d05u},
        {SH_ALGO_XXH64, "", 0, UINT64_C(0xef46db3751d8e999)},
        {SH_ALGO_XXH3_64, "", 0, UINT64_C(0x2d06800538d394c2)},
    };
    size_t i;
    for (i = 0; i < sizeof pub / sizeof pub[0]; i++) {
        uint64_t hi, lo;
        size_t len = strlen(pub[i].text);
        hash_general(pub[i].algo, (const uint8_t *)pub[i].text, len, pub[i].seed, &hi, &lo);
        check(hi == 0 && lo == pub[i].expected, 0, "published", k_names[pub[i].algo], pub[i].seed, len, hi,
              lo);
    }
}

int main(int argc, char **argv)
{
    char path[4096];
    char line[MAX_LINE];
    unsigned long lineno = 0, rows = 0;
    unsigned long per_algo[SH_ALGO_COUNT] = {0};
    int saw_header = 0, a;
    FILE *fp;

    if (argc != 2) {
        fprintf(stderr, "usage: %s <vectors-dir>\n", argv[0]);
        return 2;
    }
    if (strlen(argv[1]) + sizeof "/hashes.tsv" > sizeof path) {
        fprintf(stderr, "vectors directory path too long\n");
        return 2;
    }
    sprintf(path, "%s/hashes.tsv", argv[1]);
    fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        return 2;
    }
    make_buffer();

    while (fgets(line, sizeof line, fp)) {
        char *f[4];
        size_t n = strlen(line);
        uint64_t seed, len, exp_hi, exp_lo;
        int algo;

        lineno++;
        if (n == sizeof line - 1 && line[n - 1] != '\n') {
            check(0, lineno, "line too long", "", 0, 0, 0, 0);
            break;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n == 0 || line[0] == '#') continue;
        if (!saw_header) {
            /* The first non-comment line names the columns. */
            if (strcmp(line, "algorithm\tseed\tlength\texpected") != 0) {
                check(0, lineno, "bad column header", "", 0, 0, 0, 0);
                break;
            }
            saw_header = 1;
            continue;
        }
        if (!split4(line, f) || (algo = algo_index(f[0])) < 0 || !parse_u64(f[1], &seed) ||
            !parse_u64(f[2], &len) || len > BUF_LEN || !parse_hex128(f[3], &exp_hi, &exp_lo)) {
            check(0, lineno, "malformed row", "", 0, 0, 0, 0);
            continue;
        }
        if ((algo == SH_ALGO_XXH32 || algo == SH_ALGO_MURMUR3_32 || algo == SH_ALGO_MURMUR3_128) &&
            seed > 0xffffffffu) {
            check(0, lineno, "seed out of range", f[0], seed, (size_t)len, 0, 0);
            continue;
        }
        rows++;
        per_algo[algo]++;
        check_row(lineno, algo, seed, (size_t)len, exp_hi, exp_lo);
    }
    fclose(fp);

    /* A truncated or empty file must not pass quietly. */
    for (a = 0; a < SH_ALGO_COUNT; a++) {
        if (per_algo[a] == 0) {
            fprintf(stderr, "no rows for %s in %s\n", k_names[a], path);
            g_failed++;
        }
    }
    check_word_windows();
    check_published();

    printf("test_hash_vectors: %lu rows from %s\n", rows, path);
    printf("%lu passed, %lu failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
