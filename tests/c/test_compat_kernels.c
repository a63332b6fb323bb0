/*
 * Plain-C tests of the compat batch kernels that take variable-length keys,
 * no Python involved: every batch kernel (Arrow offsets and separate
 * pointers) against the simple reference function, key by key, for every
 * length 0..N at every position in the buffer (so that both the loads that
 * start before a key and the loads kept inside it run), and on random
 * mixed-length keys drawn from alphabets that make the length-dependent
 * paths likely (bytes >= 0x80 for Cassandra's sign extension, '{', '}' and
 * their neighbours for Redis hash tags).  Also: the MD5 lane kernel,
 * PostgreSQL's lookup3 batch kernels (scalar, AVX2 where the CPU has it, and
 * the dispatching entry points), Cassandra's (scalar, AVX-512 and AVX2
 * where the CPU has them, and the dispatching entry points) and XXH64's
 * (scalar, AVX-512 where the CPU has it, and the dispatching entry point) against
 * their one-key functions, also on chunks of keys that all have one length.
 * Usage: test_compat_kernels <vectors dir>   (the directory is not needed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sh_cassandra.h"
#include "sh_crc16.h"
#include "sh_redis.h"
#include "sh_md5.h"
#include "sh_ketama.h"
#include "sh_mongo.h"
#include "sh_twemproxy.h"
#include "sh_pg.h"
#include "sh_xxhash.h"

#include "sh_check.h"

/* The vector kernels that ran (not a scalar stand-in), printed at the end as a
 * "core: vector kernels run:" line that tests/c/test_c_core.py compares, in CI,
 * with the CPU's flags: a kernel this CPU has must have run. */
static int ran_cass_avx512, ran_cass_avx2, ran_xxh64_avx512, ran_lookup3_avx2;

static uint64_t rng_state = UINT64_C(0x243F6A8885A308D3);
static uint32_t rnd(void)
{
    rng_state = rng_state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return (uint32_t)(rng_state >> 33);
}

/* A byte from one of the alphabets: 0 any byte, 1 mostly >= 0x80, 2 hash-tag
 * characters and their neighbours. */
static uint8_t rbyte(int alphabet)
{
    static const uint8_t tagchars[] = {'{',  '}',  'z',  '|',  'a',  0x7a, 0x7c,
                                       0x7d, 0x7b, 0x00, 0xff, 0x01, 0xfb};
    uint32_t r = rnd();
    if (alphabet == 1) return (uint8_t)((r & 3u) ? (0x80u | (r >> 8)) : (r >> 8));
    if (alphabet == 2) return (r & 1u) ? tagchars[(r >> 1) % sizeof tagchars] : (uint8_t)(r >> 8);
    return (uint8_t)(r >> 8);
}

/* Plain bit-at-a-time CRC16-XMODEM (the definition). */
static uint16_t crc16_bits(const uint8_t *p, size_t len)
{
    uint32_t crc = 0;
    size_t i;
    int b;
    for (i = 0; i < len; i++) {
        crc ^= (uint32_t)p[i] << 8;
        for (b = 0; b < 8; b++)
            crc = (crc & 0x8000u) ? ((crc << 1) ^ 0x1021u) & 0xffffu : (crc << 1) & 0xffffu;
    }
    return (uint16_t)crc;
}

#define MAXLEN 100
#define NKEYS  4000

/* Keys laid out Arrow-style in `data`, plus each key copied alone into its
 * own exactly-sized allocation (for the pointer kernels), and once more after
 * 32 bytes of noise (for the *_ptrs16 and *_ptrs32 kernels, which may read
 * them). */
typedef struct {
    size_t n;
    int64_t offsets[NKEYS + 1];
    uint8_t *data;
    const uint8_t *ptrs[NKEYS];
    const uint8_t *ptrs16[NKEYS];
    int64_t lens[NKEYS];
    uint8_t *own[NKEYS];
    uint8_t *own16[NKEYS];
} keyset;

static void keys_free(keyset *ks)
{
    size_t i;
    for (i = 0; i < ks->n; i++) {
        free(ks->own[i]);
        free(ks->own16[i]);
    }
    free(ks->data);
}

/* lengths[i] for i < n; the bytes from `alphabet`. */
static void keys_make(keyset *ks, const size_t *lengths, size_t n, int alphabet)
{
    size_t i, j, total = 0;
    ks->n = n;
    for (i = 0; i < n; i++) total += lengths[i];
    ks->data = (uint8_t *)malloc(total ? total : 1);
    ks->offsets[0] = 0;
    for (i = 0; i < n; i++) {
        uint8_t *k = ks->data + ks->offsets[i];
        for (j = 0; j < lengths[i]; j++) k[j] = rbyte(alphabet);
        ks->offsets[i + 1] = ks->offsets[i] + (int64_t)lengths[i];
        ks->own[i] = (uint8_t *)malloc(lengths[i] ? lengths[i] : 1);
        if (lengths[i]) memcpy(ks->own[i], k, lengths[i]);
        ks->ptrs[i] = ks->own[i];
        ks->own16[i] = (uint8_t *)malloc(32 + lengths[i]);
        for (j = 0; j < 32; j++) ks->own16[i][j] = rbyte(2);
        if (lengths[i]) memcpy(ks->own16[i] + 32, k, lengths[i]);
        ks->ptrs16[i] = ks->own16[i] + 32;
        ks->lens[i] = (int64_t)lengths[i];
    }
}

static int64_t tok_off[NKEYS], tok_ptr[NKEYS], tok_ptr16[NKEYS];
static uint16_t slot_off[NKEYS], slot_ptr[NKEYS], slot_ptr16[NKEYS];
static uint64_t pg_ext[NKEYS];
static int32_t pg_32[NKEYS];

static uint32_t md5_out[NKEYS];

static void check_md5(const keyset *ks, const char *what)
{
    size_t i, s = ks->n / 3;
    int bad = 0;
    sh_md5_u32le_offsets(ks->data, ks->offsets, ks->n, md5_out);
    for (i = 0; i < ks->n; i++)
        bad += md5_out[i] != sh_md5_u32le(ks->data + ks->offsets[i], (size_t)ks->lens[i]);
    sh_md5_u32le_offsets(ks->data, ks->offsets + s, ks->n - s, md5_out);
    for (i = s; i < ks->n; i++)
        bad += md5_out[i - s] != sh_md5_u32le(ks->data + ks->offsets[i], (size_t)ks->lens[i]);
    CHECK(bad == 0, "%s: sh_md5_u32le_offsets != sh_md5_u32le on %d keys", what, bad);
}

typedef void (*pg_ext_fn)(const uint8_t *, const int64_t *, size_t, uint64_t, uint64_t *);
typedef void (*pg_32_fn)(const uint8_t *, const int64_t *, size_t, int32_t *);

static void check_pg_kernels(const keyset *ks, const char *what, const char *name, pg_ext_fn ext,
                             pg_32_fn h32)
{
    static const uint64_t seeds[] = {0, SH_PG_HASH_PARTITION_SEED, 1, UINT64_C(0xffffffffffffffff)};
    size_t i, si, s;
    size_t starts[3];
    int bad = 0, sk;
    starts[0] = 0;
    starts[1] = ks->n / 3;
    starts[2] = ks->n > 5 ? ks->n - 5 : 0;
    for (si = 0; si < sizeof seeds / sizeof seeds[0]; si++) {
        for (sk = 0; sk < 3; sk++) {
            s = starts[sk];
            ext(ks->data, ks->offsets + s, ks->n - s, seeds[si], pg_ext);
            for (i = s; i < ks->n; i++)
                bad += pg_ext[i - s] !=
                       sh_pg_hash_bytes_extended(ks->data + ks->offsets[i], (size_t)ks->lens[i], seeds[si]);
        }
    }
    CHECK(bad == 0, "%s: %s extended != sh_pg_hash_bytes_extended on %d keys", what, name, bad);
    bad = 0;
    for (sk = 0; sk < 3; sk++) {
        s = starts[sk];
        h32(ks->data, ks->offsets + s, ks->n - s, pg_32);
        for (i = s; i < ks->n; i++) {
            uint32_t h = sh_pg_hash_bytes(ks->data + ks->offsets[i], (size_t)ks->lens[i]);
            bad += (uint32_t)pg_32[i - s] != h;
        }
    }
    CHECK(bad == 0, "%s: %s 32 != sh_pg_hash_bytes on %d keys", what, name, bad);
}

static void check_pg(const keyset *ks, const char *what)
{
    check_pg_kernels(ks, what, "sh_pg_varlen (dispatch)", sh_pg_varlen_extended, sh_pg_varlen_32);
    check_pg_kernels(ks, what, "sh_pg_varlen scalar", sh_pg_varlen_extended_scalar, sh_pg_varlen_32_scalar);
    /* the AVX2 kernel where the CPU has it (else its scalar fallback) */
    check_pg_kernels(ks, what, "sh_pg_varlen avx2", sh_pg_varlen_extended_avx2, sh_pg_varlen_32_avx2);
    if (sh_pg_avx2_available()) ran_lookup3_avx2 = 1;
}

static uint64_t xxh_out[NKEYS];

typedef void (*xxh_off_fn)(const uint8_t *, const int64_t *, size_t, uint64_t, uint64_t *);
typedef void (*xxh_ptr_fn)(const uint8_t *const *, const int64_t *, size_t, uint64_t, uint64_t *);

/* One XXH64 batch kernel, over Arrow offsets (off) or over pointers with 32
 * bytes readable before each key (ptr), against sh_xxh64, on batches that
 * start at the first key, a third of the way in, and so on. */
static void check_xxh64_kernel(const keyset *ks, const char *what, const char *name, xxh_off_fn off,
                               xxh_ptr_fn ptr)
{
    static const uint64_t seeds[] = {0, 1, UINT64_C(0x9E3779B185EBCA87)};
    size_t i, si, s;
    int bad = 0;
    for (si = 0; si < sizeof seeds / sizeof seeds[0]; si++) {
        for (s = 0; s < ks->n; s += ks->n / 3 + 1) {
            if (off)
                off(ks->data, ks->offsets + s, ks->n - s, seeds[si], xxh_out);
            else
                ptr(ks->ptrs16 + s, ks->lens + s, ks->n - s, seeds[si], xxh_out);
            for (i = s; i < ks->n; i++) {
                if (xxh_out[i - s] != sh_xxh64(ks->data + ks->offsets[i], (size_t)ks->lens[i], seeds[si])) {
                    if (bad++ < 3)
                        fprintf(stderr, "  %s: %s key %zu (length %zu)\n", what, name, i,
                                (size_t)ks->lens[i]);
                }
            }
        }
    }
    CHECK(bad == 0, "%s: %s != sh_xxh64 on %d keys", what, name, bad);
}

static void check_xxh64(const keyset *ks, const char *what)
{
    check_xxh64_kernel(ks, what, "sh_xxh64_ptrs", NULL, sh_xxh64_ptrs);
    check_xxh64_kernel(ks, what, "sh_xxh64_ptrs32_batch", NULL, sh_xxh64_ptrs32_batch);
    check_xxh64_kernel(ks, what, "sh_xxh64_offsets", sh_xxh64_offsets, NULL);
    check_xxh64_kernel(ks, what, "sh_xxh64_offsets_batch", sh_xxh64_offsets_batch, NULL);
    /* the AVX-512 kernels where the CPU has them, else the scalar ones again
     * (the same number of checks on every target) */
    if (sh_xxh64_avx512_available()) {
        check_xxh64_kernel(ks, what, "xxh64 ptrs32 avx512", NULL, sh_xxh64_ptrs32_avx512);
        check_xxh64_kernel(ks, what, "xxh64 avx512", sh_xxh64_offsets_avx512, NULL);
        ran_xxh64_avx512 = 1;
    } else {
        check_xxh64_kernel(ks, what, "sh_xxh64_ptrs", NULL, sh_xxh64_ptrs);
        check_xxh64_kernel(ks, what, "sh_xxh64_offsets", sh_xxh64_offsets, NULL);
    }
}

typedef void (*cass_off_fn)(const uint8_t *, const int64_t *, size_t, int64_t *);
typedef void (*cass_ptr_fn)(const uint8_t *const *, const int64_t *, size_t, int64_t *);

/* One pair of Cassandra kernels (Arrow offsets, padded pointers) against
 * sh_cassandra_token, on batches that start at the first key, a third of
 * the way in, and five keys before the end. */
static void check_cass_kernels(const keyset *ks, const char *what, const char *name, cass_off_fn off,
                               cass_ptr_fn ptr16)
{
    size_t i, s, sk;
    size_t starts[3];
    int bad = 0;
    starts[0] = 0;
    starts[1] = ks->n / 3;
    starts[2] = ks->n > 5 ? ks->n - 5 : 0;
    for (sk = 0; sk < 3; sk++) {
        s = starts[sk];
        off(ks->data, ks->offsets + s, ks->n - s, tok_off);
        ptr16(ks->ptrs16 + s, ks->lens + s, ks->n - s, tok_ptr16);
        for (i = s; i < ks->n; i++) {
            int64_t t = sh_cassandra_token(ks->data + ks->offsets[i], (size_t)ks->lens[i]);
            if (tok_off[i - s] != t || tok_ptr16[i - s] != t) {
                if (bad++ < 3)
                    fprintf(stderr, "  %s: %s key %zu (length %zu)\n", what, name, i, (size_t)ks->lens[i]);
            }
        }
    }
    CHECK(bad == 0, "%s: %s != sh_cassandra_token on %d keys", what, name, bad);
}

static void check_keyset(const keyset *ks, const char *what)
{
    size_t i, s;
    int bad_c = 0, bad_r = 0;
    sh_cassandra_token_offsets(ks->data, ks->offsets, ks->n, tok_off);
    sh_cassandra_token_ptrs(ks->ptrs, ks->lens, ks->n, tok_ptr);
    sh_redis_keyslot_offsets(ks->data, ks->offsets, ks->n, slot_off);
    sh_redis_keyslot_ptrs(ks->ptrs, ks->lens, ks->n, slot_ptr);
    sh_cassandra_token_ptrs16(ks->ptrs16, ks->lens, ks->n, tok_ptr16);
    sh_redis_keyslot_ptrs16(ks->ptrs16, ks->lens, ks->n, slot_ptr16);
    for (i = 0; i < ks->n; i++) {
        const uint8_t *k = ks->data + ks->offsets[i];
        size_t len = (size_t)ks->lens[i];
        int64_t t = sh_cassandra_token(k, len);
        uint16_t r = sh_redis_keyslot(k, len);
        if (tok_off[i] != t || tok_ptr[i] != t || tok_ptr16[i] != t) {
            if (bad_c++ < 3) fprintf(stderr, "  %s: cassandra key %zu (length %zu)\n", what, i, len);
        }
        if (slot_off[i] != r || slot_ptr[i] != r || slot_ptr16[i] != r) {
            if (bad_r++ < 3) fprintf(stderr, "  %s: redis key %zu (length %zu)\n", what, i, len);
        }
    }
    /* a batch that starts in the middle (as the threads' chunks do) */
    s = ks->n / 3;
    sh_cassandra_token_offsets(ks->data, ks->offsets + s, ks->n - s, tok_off);
    sh_redis_keyslot_offsets(ks->data, ks->offsets + s, ks->n - s, slot_off);
    for (i = s; i < ks->n; i++) {
        bad_c += tok_off[i - s] != tok_ptr[i];
        bad_r += slot_off[i - s] != slot_ptr[i];
    }
    CHECK(bad_c == 0, "%s: cassandra batch != sh_cassandra_token on %d keys", what, bad_c);
    CHECK(bad_r == 0, "%s: redis batch != sh_redis_keyslot on %d keys", what, bad_r);
    check_cass_kernels(ks, what, "cassandra scalar", sh_cassandra_token_offsets_scalar,
                       sh_cassandra_token_ptrs16_scalar);
    /* the vector kernels where the CPU has them, else the scalar ones again
     * (the same number of checks on every target: the portability check
     * compares the programs' output across targets) */
    if (sh_cassandra_avx512_available()) {
        check_cass_kernels(ks, what, "cassandra avx512", sh_cassandra_token_offsets_avx512,
                           sh_cassandra_token_ptrs16_avx512);
        ran_cass_avx512 = 1;
    } else
        check_cass_kernels(ks, what, "cassandra scalar", sh_cassandra_token_offsets_scalar,
                           sh_cassandra_token_ptrs16_scalar);
    if (sh_cassandra_avx2_available()) {
        check_cass_kernels(ks, what, "cassandra avx2", sh_cassandra_token_offsets_avx2,
                           sh_cassandra_token_ptrs16_avx2);
        ran_cass_avx2 = 1;
    } else
        check_cass_kernels(ks, what, "cassandra scalar", sh_cassandra_token_offsets_scalar,
                           sh_cassandra_token_ptrs16_scalar);
    check_pg(ks, what);
    check_xxh64(ks, what);
    check_md5(ks, what);
}

static void test_every_length(void)
{
    static size_t lengths[NKEYS];
    int alphabet, rep;
    size_t i, len;
    for (alphabet = 0; alphabet < 3; alphabet++) {
        for (rep = 0; rep < 4; rep++) {
            /* every length 0..MAXLEN, first in ascending order (short keys at
             * the start of the buffer), then each length after each other */
            keyset *ks = (keyset *)calloc(1, sizeof *ks);
            size_t n = 0;
            for (len = 0; len <= MAXLEN; len++) lengths[n++] = len;
            for (len = 0; len <= 20; len++)
                for (i = 0; i <= 20; i++) {
                    lengths[n++] = i;
                    lengths[n++] = len;
                }
            keys_make(ks, lengths, n, alphabet);
            check_keyset(ks, alphabet == 0   ? "every length, any bytes"
                             : alphabet == 1 ? "every length, high bytes"
                                             : "every length, tag bytes");
            keys_free(ks);
            free(ks);
        }
    }
}

static void test_random_mixed(void)
{
    static size_t lengths[NKEYS];
    int alphabet, rep;
    size_t i;
    for (alphabet = 0; alphabet < 3; alphabet++) {
        for (rep = 0; rep < 5; rep++) {
            keyset *ks = (keyset *)calloc(1, sizeof *ks);
            for (i = 0; i < NKEYS; i++) {
                uint32_t r = rnd();
                lengths[i] = (r & 7u) == 0   ? (r >> 3) % 300
                             : (r & 7u) == 1 ? (r >> 3) % 4
                                             : 4 + (r >> 3) % 37;
            }
            keys_make(ks, lengths, NKEYS, alphabet);
            check_keyset(ks, "random mixed lengths");
            keys_free(ks);
            free(ks);
        }
    }
}

/* Chunks whose keys all have one length (the kernels that group keys by
 * length or block count skip the sort then), and lengths 0..100 at random. */
static void test_uniform_and_random(void)
{
    static const size_t uniform[] = {0, 1, 4, 11, 12, 13, 22, 23, 24, 31, 32, 40, 63, 64, 95, 96, 100, 200};
    static size_t lengths[NKEYS];
    size_t u, i;
    char what[64];
    for (u = 0; u < sizeof uniform / sizeof uniform[0]; u++) {
        keyset *ks = (keyset *)calloc(1, sizeof *ks);
        size_t n = uniform[u] > 64 ? 1500 : 3000;
        for (i = 0; i < n; i++) lengths[i] = uniform[u];
        /* one odd key in the last chunk */
        lengths[n - 7] = uniform[u] + 1;
        keys_make(ks, lengths, n, (int)(u % 3));
        snprintf(what, sizeof what, "keys of length %zu", uniform[u]);
        check_keyset(ks, what);
        keys_free(ks);
        free(ks);
    }
    for (u = 0; u < 4; u++) {
        keyset *ks = (keyset *)calloc(1, sizeof *ks);
        for (i = 0; i < NKEYS; i++) lengths[i] = rnd() % 101;
        keys_make(ks, lengths, NKEYS, (int)(u % 3));
        check_keyset(ks, "random lengths 0..100");
        keys_free(ks);
        free(ks);
    }
}

static void test_crc16(void)
{
    uint8_t buf[300];
    size_t len, i;
    int bad = 0;
    CHECK(sh_crc16_xmodem("123456789", 9) == 0x31C3u, "check value");
    for (len = 0; len <= sizeof buf; len++) {
        for (i = 0; i < len; i++) buf[i] = rbyte((int)(len % 3));
        for (i = 0; i <= len && i < 16; i++) { /* also at unaligned addresses */
            uint16_t want = crc16_bits(buf + i, len - i);
            bad += sh_crc16_xmodem(buf + i, len - i) != want;
        }
    }
    CHECK(bad == 0, "CRC16 != the bitwise definition on %d inputs", bad);
    /* whole 8-byte words, the bytes before the message masked (any value) */
    bad = 0;
    for (len = 0; len + 8 <= sizeof buf; len++) {
        for (i = 0; i < len + 8; i++) buf[i] = rbyte((int)(len % 3));
        bad += sh_crc16_xmodem_before(buf + 8 + len, len) != crc16_bits(buf + 8, len);
    }
    CHECK(bad == 0, "sh_crc16_xmodem_before != the bitwise definition on %d inputs", bad);
}

static void test_md5_vectors(void)
{
    /* RFC 1321: MD5("abc") = 900150983cd24fb0..., first word little-endian */
    CHECK(sh_md5_u32le("abc", 3) == UINT32_C(0x98500190), "md5(abc)");
    CHECK(sh_md5_u32le("message digest", 14) == UINT32_C(0x7d696bf9), "md5(message digest)");
}

static void test_redis_tags(void)
{
    /* Documented examples of the hash-tag rule. */
    static const char *same[][2] = {
        {"{user1000}.following", "user1000"},
        {"{user1000}.followers", "user1000"},
        {"foo{bar}{zap}", "bar"},
        {"foo{{bar}}zap", "{bar"},
        {"x{y}", "y"},
    };
    static const char *whole[] = {"foo{}{bar}", "{", "}", "{}", "ab{", "ab}cd{", ""};
    const uint8_t *p[1];
    int64_t l[1];
    uint16_t out[1];
    size_t i;
    for (i = 0; i < sizeof same / sizeof same[0]; i++) {
        p[0] = (const uint8_t *)same[i][0];
        l[0] = (int64_t)strlen(same[i][0]);
        sh_redis_keyslot_ptrs(p, l, 1, out);
        CHECK(out[0] == (crc16_bits((const uint8_t *)same[i][1], strlen(same[i][1])) & 16383u), "slot of %s",
              same[i][0]);
    }
    for (i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        p[0] = (const uint8_t *)whole[i];
        l[0] = (int64_t)strlen(whole[i]);
        sh_redis_keyslot_ptrs(p, l, 1, out);
        CHECK(out[0] == (crc16_bits((const uint8_t *)whole[i], strlen(whole[i])) & 16383u), "slot of %s",
              whole[i]);
    }
}

/* The CQL bigint and int kernels (which serialise each value themselves)
 * against the token of the value's big-endian bytes. */
static void test_cassandra_ints(void)
{
    static int64_t v64[NKEYS], t64[NKEYS];
    static int32_t v32[NKEYS];
    static const int64_t edges[] = {0,   1,    -1,   INT64_MAX, INT64_MIN, 127,
                                    128, -128, -129, 255,       256,       0x80808080};
    uint8_t be[8];
    size_t i, n = NKEYS, ne = sizeof edges / sizeof edges[0];
    int j, bad64 = 0, bad32 = 0;
    for (i = 0; i < n; i++) {
        uint64_t r = ((uint64_t)rnd() << 32) | rnd();
        /* any value, values with bytes >= 0x80 in every position, small ones */
        v64[i] = i < ne ? edges[i]
                        : (int64_t)(i % 3 == 0   ? r
                                    : i % 3 == 1 ? (r | UINT64_C(0x8080808080808080))
                                                 : r % 300);
        v32[i] = (int32_t)(uint32_t)v64[i];
    }
    sh_cassandra_token_bigint(v64, n, t64);
    for (i = 0; i < n; i++) {
        for (j = 0; j < 8; j++) be[j] = (uint8_t)((uint64_t)v64[i] >> (56 - 8 * j));
        bad64 += t64[i] != sh_cassandra_token(be, 8);
    }
    sh_cassandra_token_int(v32, n, t64);
    for (i = 0; i < n; i++) {
        for (j = 0; j < 4; j++) be[j] = (uint8_t)((uint32_t)v32[i] >> (24 - 8 * j));
        bad32 += t64[i] != sh_cassandra_token(be, 4);
    }
    CHECK(bad64 == 0, "sh_cassandra_token_bigint != sh_cassandra_token on %d values", bad64);
    CHECK(bad32 == 0, "sh_cassandra_token_int != sh_cassandra_token on %d values", bad32);
}

/* The ring lookups (branch-free, four at a time) against a plain binary
 * search, on rings of 1..40 and 300 tokens with repeated tokens, for tokens
 * on, between and beyond the ring's. */
static void test_cassandra_ring(void)
{
    static int64_t ring[300], tokens[NKEYS], idx[NKEYS];
    static int32_t owners[300], own[NKEYS];
    size_t m, i, n;
    int bad = 0;
    for (m = 1; m <= 300; m = m < 40 ? m + 1 : 300) {
        for (i = 0; i < m; i++) {
            /* sorted, with runs of equal tokens */
            ring[i] = i == 0 ? -(int64_t)(rnd() % 1000) * 1000000
                             : ring[i - 1] + (rnd() % 3 == 0 ? 0 : (int64_t)(rnd() % 1000000));
            owners[i] = (int32_t)(rnd() % 7);
        }
        n = 0;
        for (i = 0; i < m && n + 3 <= NKEYS - 8; i++) {
            tokens[n++] = ring[i];
            tokens[n++] = ring[i] - 1;
            tokens[n++] = ring[i] + 1;
        }
        tokens[n++] = INT64_MIN;
        tokens[n++] = INT64_MAX;
        while (n < NKEYS) tokens[n++] = (int64_t)(((uint64_t)rnd() << 32) | rnd()) >> (rnd() % 40);
        sh_cassandra_ring_index(ring, m, tokens, n, idx);
        sh_cassandra_ring_owner(ring, owners, m, tokens, n, own);
        for (i = 0; i < n; i++) {
            size_t lo = 0, hi = m, want;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ring[mid] < tokens[i])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            want = lo == m ? 0 : lo;
            bad += idx[i] != (int64_t)want || own[i] != owners[want];
        }
        if (m == 300) break;
    }
    CHECK(bad == 0, "sh_cassandra_ring_index/owner != a binary search on %d tokens", bad);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    test_crc16();
    test_redis_tags();
    test_md5_vectors();
    test_cassandra_ints();
    test_cassandra_ring();
    test_every_length();
    test_random_mixed();
    test_uniform_and_random();
    /* again with the SIMD kernels this CPU has (the dispatching entry points
     * above ran the scalar kernels: sh_pg_init and sh_cassandra_init had not run) */
    sh_pg_init();
    sh_cassandra_init();
    sh_xxh64_batch_init();
    /* "core: " lines are target facts that the portability check leaves out of its comparison */
    printf("core: lookup3 AVX2 kernel: %s\n", sh_pg_avx2_available() ? "yes" : "no (scalar fallback)");
    printf("core: Cassandra kernel: %s\n", sh_cassandra_kernel());
    printf("core: XXH64 batch kernel: %s\n", sh_xxh64_batch_kernel());
    test_every_length();
    test_random_mixed();
    test_uniform_and_random();
    printf("core: vector kernels run:%s%s%s%s%s\n", ran_cass_avx512 ? " cassandra-avx512" : "",
           ran_cass_avx2 ? " cassandra-avx2" : "", ran_xxh64_avx512 ? " xxh64-avx512" : "",
           ran_lookup3_avx2 ? " lookup3-avx2" : "",
           ran_cass_avx512 || ran_cass_avx2 || ran_xxh64_avx512 || ran_lookup3_avx2 ? "" : " none");
    printf("test_compat_kernels: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
