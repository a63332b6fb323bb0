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
 * And PostgreSQL's range, multirange, record/array fold and numeric kernels
 * against the server's hashes in tests/vectors/compat/postgres_*.tsv: cases
 * copied from those files (with the server's canonical text of each range),
 * then every row of the files read from the vectors directory.
 * Usage: test_compat_kernels <vectors dir>
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

/* ------------------------------------------------------------------------
 * PostgreSQL's range, multirange, hash_record / hash_array fold and numeric
 * kernels against the server's own hashes.  Every case is a row of one of
 * the frozen files tests/vectors/compat/postgres_*.tsv, copied verbatim
 * (columns: type, value, hash_*(v), then hash_*_extended(v, seed) for seeds
 * 0, 1 and HASH_PARTITION_SEED, all as the server printed them, signed;
 * values in the JSON of tests/vectors/README.md).  The values are handed to
 * the kernels as the Python binding (src/shardhash/compat/_native_postgres.pyx:
 * _int_of, _range_of, multirange_columns, numeric_hashes) hands them:
 *   - int4 / int8 bounds as their value; a date as its days since
 *     2000-01-01 (1999-12-31 is -1); a timestamp as its microseconds since
 *     2000-01-01 00:00:00 and a timestamptz as those of its UTC time;
 *   - a range's flags as written: '[' sets LB_INC, ']' UB_INC, a null bound
 *     LB_INF / UB_INF (with the inclusive flag of its bracket, which
 *     sh_pg_range_canonical drops), "empty" RANGE_EMPTY; then
 *     sh_pg_range_canonical (int4, int8 and date are discrete; vmax is the
 *     type's largest value: 2^31-1, 2^63-1, 2145031948 = 5874897-12-31);
 *   - a multirange's ranges each canonicalised, the empty ones dropped, then
 *     sh_pg_multirange_canonical;
 *   - a numeric as its text (Python's str of the Decimal or int: the TSV's
 *     value column), or as an int64 where it is an integer that fits.
 * The second string of a range or multirange case is the value as the server
 * prints it (PostgreSQL 15, SET TimeZone = 'UTC'; SELECT v::text), read here
 * and compared with the canonical form the kernels leave.
 */

static const uint64_t pg_seeds[3] = {0, 1, SH_PG_HASH_PARTITION_SEED};
/* modes 0..2: the extended hash with pg_seeds[mode]; 3: the 32-bit hash */
#define PG_MODES 4
static const char *const pg_mode_names[PG_MODES] = {"seed 0", "seed 1", "HASH_PARTITION_SEED", "32-bit"};

/* got (a uint64 extended hash, or a 32-bit hash in its low half) against a TSV column */
static int pg_same(uint64_t got, int64_t want, int mode)
{
    return mode < 3 ? got == (uint64_t)want : (uint32_t)got == (uint32_t)(uint64_t)want;
}

/* ---- a small reader of the TSVs' JSON (lists, strings, numbers, null) ---- */

enum { PGJ_NULL, PGJ_NUM, PGJ_STR, PGJ_LIST };
typedef struct {
    int kind;
    const char *s; /* PGJ_NUM: its text in the row; PGJ_STR: its bytes (UTF-8) */
    size_t len;
    int first, count; /* PGJ_LIST: the first item (-1: none) and the number of items */
    int next;         /* the next item of the list this node is in (-1: none) */
} pgj_node;

#define PGJ_NODES 1024
#define PGJ_TEXT  8192
static pgj_node pgj[PGJ_NODES];
static char pgj_text[PGJ_TEXT];
static int pgj_count;
static size_t pgj_used;

static void pgj_reset(void)
{
    pgj_count = 0;
    pgj_used = 0;
}

static int pgj_new(int kind)
{
    pgj_node *nd;
    if (pgj_count >= PGJ_NODES) return -1;
    nd = &pgj[pgj_count];
    nd->kind = kind;
    nd->s = NULL;
    nd->len = 0;
    nd->first = nd->next = -1;
    nd->count = 0;
    return pgj_count++;
}

/* Append code point c as UTF-8 to the string being read. */
static int pgj_put(uint32_t c)
{
    uint8_t b[4];
    size_t n, i;
    if (c < 0x80u) {
        b[0] = (uint8_t)c;
        n = 1;
    } else if (c < 0x800u) {
        b[0] = (uint8_t)(0xC0u | (c >> 6));
        b[1] = (uint8_t)(0x80u | (c & 0x3Fu));
        n = 2;
    } else if (c < 0x10000u) {
        b[0] = (uint8_t)(0xE0u | (c >> 12));
        b[1] = (uint8_t)(0x80u | ((c >> 6) & 0x3Fu));
        b[2] = (uint8_t)(0x80u | (c & 0x3Fu));
        n = 3;
    } else {
        b[0] = (uint8_t)(0xF0u | (c >> 18));
        b[1] = (uint8_t)(0x80u | ((c >> 12) & 0x3Fu));
        b[2] = (uint8_t)(0x80u | ((c >> 6) & 0x3Fu));
        b[3] = (uint8_t)(0x80u | (c & 0x3Fu));
        n = 4;
    }
    if (pgj_used + n > PGJ_TEXT) return 0;
    for (i = 0; i < n; i++) pgj_text[pgj_used++] = (char)b[i];
    return 1;
}

static int pgj_hex4(const char *p, const char *end, uint32_t *c)
{
    int i;
    *c = 0;
    if (end - p < 4) return 0;
    for (i = 0; i < 4; i++) {
        char h = p[i];
        uint32_t d = h >= '0' && h <= '9'   ? (uint32_t)(h - '0')
                     : h >= 'a' && h <= 'f' ? (uint32_t)(h - 'a' + 10)
                     : h >= 'A' && h <= 'F' ? (uint32_t)(h - 'A' + 10)
                                            : 16u;
        if (d > 15u) return 0;
        *c = *c * 16u + d;
    }
    return 1;
}

/* One JSON value at *pp (before end): its node, or -1; *pp moves past it. */
static int pgj_parse(const char **pp, const char *end)
{
    const char *p = *pp;
    int k;
    while (p < end && *p == ' ') p++;
    if (p >= end) return -1;
    if (*p == '[') {
        int last = -1, item;
        if ((k = pgj_new(PGJ_LIST)) < 0) return -1;
        p++;
        while (p < end && *p == ' ') p++;
        if (p < end && *p == ']') {
            *pp = p + 1;
            return k;
        }
        for (;;) {
            if ((item = pgj_parse(&p, end)) < 0) return -1;
            if (last < 0)
                pgj[k].first = item;
            else
                pgj[last].next = item;
            last = item;
            pgj[k].count++;
            while (p < end && *p == ' ') p++;
            if (p < end && *p == ',') {
                p++;
                continue;
            }
            if (p < end && *p == ']') {
                *pp = p + 1;
                return k;
            }
            return -1;
        }
    }
    if (*p == '"') {
        size_t start = pgj_used;
        if ((k = pgj_new(PGJ_STR)) < 0) return -1;
        for (p++; p < end && *p != '"';) {
            uint32_t c = (uint8_t)*p++;
            if (c == '\\') {
                if (p >= end) return -1;
                c = (uint8_t)*p++;
                if (c == 'n')
                    c = '\n';
                else if (c == 't')
                    c = '\t';
                else if (c == 'r')
                    c = '\r';
                else if (c == 'b')
                    c = '\b';
                else if (c == 'f')
                    c = '\f';
                else if (c == 'u') {
                    uint32_t lo;
                    if (!pgj_hex4(p, end, &c)) return -1;
                    p += 4;
                    if (c >= 0xD800u && c < 0xDC00u) { /* a surrogate pair */
                        if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !pgj_hex4(p + 2, end, &lo) ||
                            lo < 0xDC00u || lo >= 0xE000u)
                            return -1;
                        c = 0x10000u + ((c - 0xD800u) << 10) + (lo - 0xDC00u);
                        p += 6;
                    }
                    if (!pgj_put(c)) return -1;
                    continue;
                }
            } else if (c >= 0x80u) { /* a byte of UTF-8 text, as it is */
                if (pgj_used >= PGJ_TEXT) return -1;
                pgj_text[pgj_used++] = (char)c;
                continue;
            }
            if (!pgj_put(c)) return -1;
        }
        if (p >= end) return -1;
        pgj[k].s = pgj_text + start;
        pgj[k].len = pgj_used - start;
        *pp = p + 1;
        return k;
    }
    if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
        if ((k = pgj_new(PGJ_NULL)) < 0) return -1;
        *pp = p + 4;
        return k;
    } else {
        const char *q = p;
        while (q < end &&
               ((*q >= '0' && *q <= '9') || *q == '-' || *q == '+' || *q == '.' || *q == 'e' || *q == 'E'))
            q++;
        if (q == p || (k = pgj_new(PGJ_NUM)) < 0) return -1;
        pgj[k].s = p;
        pgj[k].len = (size_t)(q - p);
        *pp = q;
        return k;
    }
}

/* The item i of list node k (-1: none). */
static int pgj_item(int k, int i)
{
    int c = k >= 0 && pgj[k].kind == PGJ_LIST ? pgj[k].first : -1;
    while (c >= 0 && i-- > 0) c = pgj[c].next;
    return c;
}

static int pgj_is(int k, const char *text)
{
    return k >= 0 && pgj[k].kind == PGJ_STR && pgj[k].len == strlen(text) &&
           memcmp(pgj[k].s, text, pgj[k].len) == 0;
}

/* ---- values: integers, dates and timestamps as the binding reads them ---- */

/* A decimal int64 (optional sign, digits; nothing else). */
static int pg_int64_of(const char *s, size_t len, int64_t *v)
{
    uint64_t u = 0, lim;
    size_t i = 0;
    int neg = 0;
    if (i < len && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    if (i == len) return 0;
    lim = neg ? UINT64_C(9223372036854775808) : UINT64_C(9223372036854775807);
    for (; i < len; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d > 9u || u > (lim - d) / 10u) return 0;
        u = u * 10u + d;
    }
    /* (-u computed in unsigned arithmetic: no signed overflow at INT64_MIN) */
    *v = neg ? (u == UINT64_C(9223372036854775808) ? INT64_MIN : -(int64_t)u) : (int64_t)u;
    return 1;
}

/* Days from 2000-01-01 to year-month-day (proleptic Gregorian): the days
 * from 0000-03-01 (years counted from March, so that the leap day ends a
 * year), less those to 2000-01-01 (730425). */
static int64_t pg_days(int64_t y, int64_t m, int64_t d)
{
    int64_t era, yoe, doy;
    if (m <= 2) y--;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;                                   /* 0..399 */
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* 0..365, from March 1 */
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 730425;
}

/* n digits at s[*i] (n = 0: one or more), as a number. */
static int pg_digits(const char *s, size_t len, size_t *i, size_t n, int64_t *v)
{
    size_t k = 0;
    *v = 0;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9' && (n == 0 || k < n) && k < 9) {
        *v = *v * 10 + (s[*i] - '0');
        (*i)++;
        k++;
    }
    return n == 0 ? k > 0 : k == n;
}

/* "Y-MM-DD" (a date: days since 2000-01-01), or with with_time that date,
 * "T" or " ", "HH:MM:SS", up to six fraction digits and an optional offset
 * "+HH[:MM]" / "-HH[:MM]" (microseconds since 2000-01-01 00:00:00 UTC): as
 * the TSVs (Python's isoformat) and the server (in UTC) write them. */
static int pg_time_of(const char *s, size_t len, int with_time, int64_t *v)
{
    size_t i = 0;
    int64_t y, mo, d, h = 0, mi = 0, se = 0, us = 0, oh = 0, om = 0, scale = 100000, f;
    int neg = 0;
    if (!pg_digits(s, len, &i, 0, &y) || i >= len || s[i++] != '-' || !pg_digits(s, len, &i, 2, &mo) ||
        i >= len || s[i++] != '-' || !pg_digits(s, len, &i, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > 31)
        return 0;
    if (!with_time) {
        *v = pg_days(y, mo, d);
        return i == len;
    }
    if (i >= len || (s[i] != 'T' && s[i] != ' ')) return 0;
    i++;
    if (!pg_digits(s, len, &i, 2, &h) || i >= len || s[i++] != ':' || !pg_digits(s, len, &i, 2, &mi) ||
        i >= len || s[i++] != ':' || !pg_digits(s, len, &i, 2, &se))
        return 0;
    if (i < len && s[i] == '.') {
        for (i++; i < len && s[i] >= '0' && s[i] <= '9' && scale > 0; i++, scale /= 10)
            us += (s[i] - '0') * scale;
        if (scale == 100000) return 0; /* no digit */
    }
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        neg = s[i++] == '-';
        if (!pg_digits(s, len, &i, 2, &oh)) return 0;
        if (i < len && s[i] == ':') {
            i++;
            if (!pg_digits(s, len, &i, 2, &om)) return 0;
        }
    }
    if (i != len) return 0;
    f = (oh * 60 + om) * 60 * 1000000;
    *v = ((pg_days(y, mo, d) * 24 + h) * 60 + mi) * 60 * 1000000 + se * 1000000 + us - (neg ? -f : f);
    return 1;
}

/* The range element types (and their multirange types) the kernels take:
 * discrete ones canonicalise to [lower, upper) below vmax (their largest
 * value); wide ones (int8 and the timestamps) hash the 64-bit fold of a
 * bound, the others its low 32 bits. */
enum { PGK_INT, PGK_DATE, PGK_TS };
typedef struct {
    const char *range, *multirange;
    int kind, discrete, wide;
    int64_t vmax;
} pg_elem;
static const pg_elem pg_elems[] = {
    {"int4range", "int4multirange", PGK_INT, 1, 0, INT64_C(2147483647)},
    {"int8range", "int8multirange", PGK_INT, 1, 1, INT64_MAX},
    {"daterange", "datemultirange", PGK_DATE, 1, 0, INT64_C(2145031948)},
    {"tsrange", "tsmultirange", PGK_TS, 0, 1, INT64_MAX},
    {"tstzrange", "tstzmultirange", PGK_TS, 0, 1, INT64_MAX},
};
#define PG_NELEMS (sizeof pg_elems / sizeof pg_elems[0])

static int pg_bound_of(const pg_elem *e, const char *s, size_t len, int64_t *v)
{
    return e->kind == PGK_INT ? pg_int64_of(s, len, v) : pg_time_of(s, len, e->kind == PGK_TS, v);
}

/* A range of the TSVs' JSON ("empty" or [lower, upper, bounds]) as the
 * binding hands it to sh_pg_range_canonical. */
static int pg_range_json(int k, const pg_elem *e, uint8_t *flags, int64_t *lo, int64_t *hi)
{
    int l = pgj_item(k, 0), u = pgj_item(k, 1), b = pgj_item(k, 2);
    unsigned f;
    *lo = *hi = 0;
    if (pgj_is(k, "empty")) {
        *flags = (uint8_t)SH_PG_RANGE_EMPTY;
        return 1;
    }
    if (pgj[k].kind != PGJ_LIST || pgj[k].count != 3 || pgj[b].kind != PGJ_STR || pgj[b].len != 2) return 0;
    f = (pgj[b].s[0] == '[' ? SH_PG_RANGE_LB_INC : 0u) | (pgj[b].s[1] == ']' ? SH_PG_RANGE_UB_INC : 0u);
    if (pgj[l].kind == PGJ_NULL)
        f |= SH_PG_RANGE_LB_INF;
    else if (!pg_bound_of(e, pgj[l].s, pgj[l].len, lo))
        return 0;
    if (pgj[u].kind == PGJ_NULL)
        f |= SH_PG_RANGE_UB_INF;
    else if (!pg_bound_of(e, pgj[u].s, pgj[u].len, hi))
        return 0;
    *flags = (uint8_t)f;
    return 1;
}

/* One bound of a range as the server prints it: up to `stop` (or quoted). */
static int pg_text_bound(const char **pp, char stop1, char stop2, const char **s, size_t *len)
{
    const char *p = *pp;
    if (*p == '"') {
        *s = ++p;
        while (*p && *p != '"') p++;
        if (!*p) return 0;
        *len = (size_t)(p - *s);
        p++;
    } else {
        *s = p;
        while (*p && *p != stop1 && *p != stop2) p++;
        *len = (size_t)(p - *s);
    }
    *pp = p;
    return 1;
}

/* One range as the server prints it ("empty", "[1,5)", "(,\"2000-01-01
 * 00:00:00\"]"): the flags and bounds sh_pg_range_canonical should leave. */
static int pg_range_text(const char **pp, const pg_elem *e, uint8_t *flags, int64_t *lo, int64_t *hi)
{
    const char *p = *pp, *s;
    size_t len;
    unsigned f;
    *lo = *hi = 0;
    if (strncmp(p, "empty", 5) == 0) {
        *flags = (uint8_t)SH_PG_RANGE_EMPTY;
        *pp = p + 5;
        return 1;
    }
    if (*p != '[' && *p != '(') return 0;
    f = *p++ == '[' ? SH_PG_RANGE_LB_INC : 0u;
    if (!pg_text_bound(&p, ',', ',', &s, &len) || *p != ',') return 0;
    if (len == 0)
        f |= SH_PG_RANGE_LB_INF;
    else if (!pg_bound_of(e, s, len, lo))
        return 0;
    p++;
    if (!pg_text_bound(&p, ']', ')', &s, &len) || (*p != ']' && *p != ')')) return 0;
    if (len == 0)
        f |= SH_PG_RANGE_UB_INF;
    else if (!pg_bound_of(e, s, len, hi))
        return 0;
    if (*p++ == ']') f |= SH_PG_RANGE_UB_INC;
    *flags = (uint8_t)f;
    *pp = p;
    return 1;
}

/* ---- the rows ---- */

typedef struct {
    const char *type, *value;
    size_t type_len, value_len;
    int64_t want[PG_MODES]; /* the hashes, in the order of pg_mode_names */
} pg_row;

static int pg_row_of(const char *line, pg_row *r)
{
    const char *f[6], *p = line;
    size_t len[6];
    int i;
    for (i = 0; i < 6; i++) {
        f[i] = p;
        while (*p && *p != '\t' && *p != '\r' && *p != '\n') p++;
        len[i] = (size_t)(p - f[i]);
        if (i < 5 && *p++ != '\t') return 0;
    }
    r->type = f[0];
    r->type_len = len[0];
    r->value = f[1];
    r->value_len = len[1];
    /* columns: hash32, ext_seed0, ext_seed1, ext_partition_seed */
    return pg_int64_of(f[3], len[3], &r->want[0]) && pg_int64_of(f[4], len[4], &r->want[1]) &&
           pg_int64_of(f[5], len[5], &r->want[2]) && pg_int64_of(f[2], len[2], &r->want[3]);
}

static int pg_type_is(const pg_row *r, const char *name)
{
    return r->type_len == strlen(name) && memcmp(r->type, name, r->type_len) == 0;
}

/* The JSON value of a row (pgj_reset first), or -1. */
static int pg_row_json(const pg_row *r)
{
    const char *p = r->value;
    int k;
    pgj_reset();
    k = pgj_parse(&p, r->value + r->value_len);
    return p == r->value + r->value_len ? k : -1;
}

/* (A short form of a row for messages.) */
#define PG_SHOW(r) (int)((r)->value_len < 90 ? (r)->value_len : 90), (r)->value

typedef struct {
    const char *row, *server; /* a TSV row; the value as the server prints it */
} pg_case;

/* ---- ranges: sh_pg_range_canonical, sh_pg_range_extended, sh_pg_range_32 ---- */

#define PG_MAXR 8192
static uint8_t pgr_flags[PG_MAXR];
static int64_t pgr_lo[PG_MAXR], pgr_hi[PG_MAXR], pgr_off[PG_MAXR + 1];
static uint64_t pgr_out[PG_MAXR];
static int32_t pgr_out32[PG_MAXR];
static pg_row pgr_rows[PG_MAXR];

/* The kernels' hashes of the m ranges (offsets NULL) or multiranges in
 * pgr_* against the rows' columns, every mode. */
static void pg_check_range_hashes(const pg_elem *e, size_t m, const int64_t *offsets, const char *what)
{
    size_t i;
    int mode;
    for (mode = 0; mode < PG_MODES; mode++) {
        if (mode < 3 && offsets)
            sh_pg_multirange_extended(pgr_flags, pgr_lo, pgr_hi, offsets, m, e->wide, pg_seeds[mode],
                                      pgr_out);
        else if (mode < 3)
            sh_pg_range_extended(pgr_flags, pgr_lo, pgr_hi, m, e->wide, pg_seeds[mode], pgr_out);
        else if (offsets)
            sh_pg_multirange_32(pgr_flags, pgr_lo, pgr_hi, offsets, m, e->wide, pgr_out32);
        else
            sh_pg_range_32(pgr_flags, pgr_lo, pgr_hi, m, e->wide, pgr_out32);
        for (i = 0; i < m; i++) {
            uint64_t got = mode < 3 ? pgr_out[i] : (uint64_t)(uint32_t)pgr_out32[i];
            CHECK(pg_same(got, pgr_rows[i].want[mode], mode), "%s %s %.*s: %s hash %016llx != the server's",
                  what, e->range, PG_SHOW(&pgr_rows[i]), pg_mode_names[mode], (unsigned long long)got);
        }
    }
}

static void test_pg_ranges(const pg_case *cases, size_t n)
{
    size_t t, i, m;
    for (t = 0; t < PG_NELEMS; t++) {
        const pg_elem *e = &pg_elems[t];
        for (i = m = 0; i < n && m < PG_MAXR; i++) {
            pg_row r;
            uint8_t f = 0, sf = 0;
            int64_t lo = 0, hi = 0, slo = 0, shi = 0;
            const char *p = cases[i].server;
            int k, ok;
            if (!pg_row_of(cases[i].row, &r)) {
                CHECK(0, "unreadable case %s", cases[i].row);
                continue;
            }
            if (!pg_type_is(&r, e->range)) continue;
            k = pg_row_json(&r);
            ok = k >= 0 && pg_range_json(k, e, &f, &lo, &hi);
            ok = ok && sh_pg_range_canonical(e->discrete, e->vmax, &f, &lo, &hi) == 0;
            CHECK(ok, "%s %.*s: not read or sh_pg_range_canonical failed", e->range, PG_SHOW(&r));
            if (p != NULL)
                CHECK(pg_range_text(&p, e, &sf, &slo, &shi) && *p == '\0' && sf == f && slo == lo &&
                          shi == hi,
                      "%s %.*s: canonical flags %u [%lld, %lld] != the server's %s", e->range, PG_SHOW(&r),
                      (unsigned)f, (long long)lo, (long long)hi, cases[i].server);
            pgr_flags[m] = f;
            pgr_lo[m] = lo;
            pgr_hi[m] = hi;
            pgr_rows[m++] = r;
        }
        pg_check_range_hashes(e, m, NULL, "range");
    }
}

/* Ranges given by hand, not in the TSVs: sh_pg_range_canonical's answer
 * against the server's (PostgreSQL 15: SELECT int4range(5, 3, '[)')::text
 * and so on): an error (-1, the range unchanged) or its canonical text.
 * Bounds as in the TSVs; NULL: unbounded. */
typedef struct {
    int elem; /* index in pg_elems */
    const char *lower, *upper, *bounds, *server;
} pg_range_edge;

static void test_pg_range_edges(const pg_range_edge *c, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const pg_elem *e = &pg_elems[c[i].elem];
        unsigned f = (c[i].bounds[0] == '[' ? SH_PG_RANGE_LB_INC : 0u) |
                     (c[i].bounds[1] == ']' ? SH_PG_RANGE_UB_INC : 0u);
        int64_t lo = 0, hi = 0, slo = 0, shi = 0, lo0, hi0;
        uint8_t flags, sf = 0;
        const char *p = c[i].server;
        int ok = 1, rc;
        if (c[i].lower == NULL)
            f |= SH_PG_RANGE_LB_INF;
        else
            ok = pg_bound_of(e, c[i].lower, strlen(c[i].lower), &lo);
        if (c[i].upper == NULL)
            f |= SH_PG_RANGE_UB_INF;
        else
            ok = ok && pg_bound_of(e, c[i].upper, strlen(c[i].upper), &hi);
        flags = (uint8_t)f;
        lo0 = lo;
        hi0 = hi;
        rc = sh_pg_range_canonical(e->discrete, e->vmax, &flags, &lo, &hi);
        if (strncmp(c[i].server, "ERROR", 5) == 0)
            CHECK(ok && rc == -1 && flags == f && lo == lo0 && hi == hi0,
                  "%s(%s, %s, '%s'): sh_pg_range_canonical gave %d (flags %u [%lld, %lld]), the server %s",
                  e->range, c[i].lower ? c[i].lower : "NULL", c[i].upper ? c[i].upper : "NULL", c[i].bounds,
                  rc, (unsigned)flags, (long long)lo, (long long)hi, c[i].server);
        else
            CHECK(ok && rc == 0 && pg_range_text(&p, e, &sf, &slo, &shi) && *p == '\0' && sf == flags &&
                      slo == lo && shi == hi,
                  "%s(%s, %s, '%s'): sh_pg_range_canonical gave %d (flags %u [%lld, %lld]), the server %s",
                  e->range, c[i].lower ? c[i].lower : "NULL", c[i].upper ? c[i].upper : "NULL", c[i].bounds,
                  rc, (unsigned)flags, (long long)lo, (long long)hi, c[i].server);
    }
}

/* ---- multiranges: sh_pg_multirange_canonical, _extended, _32 ---- */

#define PG_MAXGIVEN 48

/* The ranges of multirange JSON value v, each canonical, the empty ones
 * left out (as multirange_columns gives them to sh_pg_multirange_canonical). */
static int pg_given_ranges(const pg_elem *e, int v, uint8_t *f, int64_t *lo, int64_t *hi, size_t *k)
{
    int item;
    *k = 0;
    if (v < 0 || pgj[v].kind != PGJ_LIST || pgj[v].count > PG_MAXGIVEN) return 0;
    for (item = pgj[v].first; item >= 0; item = pgj[item].next) {
        if (!pg_range_json(item, e, &f[*k], &lo[*k], &hi[*k]) ||
            sh_pg_range_canonical(e->discrete, e->vmax, &f[*k], &lo[*k], &hi[*k]) != 0)
            return 0;
        if (!(f[*k] & SH_PG_RANGE_EMPTY)) (*k)++;
    }
    return 1;
}

/* k canonical ranges against the server's text of the multirange. */
static int pg_same_as_server(const pg_elem *e, const char *server, const uint8_t *f, const int64_t *lo,
                             const int64_t *hi, size_t k)
{
    const char *p = server;
    size_t j = 0;
    if (*p++ != '{') return 0;
    while (*p != '}') {
        uint8_t sf = 0;
        int64_t slo = 0, shi = 0;
        if (j >= k || !pg_range_text(&p, e, &sf, &slo, &shi) || sf != f[j] || slo != lo[j] || shi != hi[j])
            return 0;
        j++;
        if (*p == ',') p++;
    }
    return j == k && p[1] == '\0';
}

/* Append given ranges gf/glo/ghi[0..kg) to pgr_* at *w, merge them with
 * sh_pg_multirange_canonical and compare with the k canonical ranges at
 * pgr_*[at..]; *w moves past the merged ranges. */
static int pg_merge_same(size_t *w, const uint8_t *gf, const int64_t *glo, const int64_t *ghi, size_t kg,
                         size_t at, size_t k)
{
    size_t start = *w, j, got;
    int same;
    for (j = 0; j < kg; j++) {
        pgr_flags[start + j] = gf[j];
        pgr_lo[start + j] = glo[j];
        pgr_hi[start + j] = ghi[j];
    }
    got = sh_pg_multirange_canonical(pgr_flags + start, pgr_lo + start, pgr_hi + start, kg);
    same = got == k;
    for (j = 0; same && j < k; j++)
        same = pgr_flags[start + j] == pgr_flags[at + j] && pgr_lo[start + j] == pgr_lo[at + j] &&
               pgr_hi[start + j] == pgr_hi[at + j];
    *w = start + got;
    return same;
}

static void test_pg_multiranges(const pg_case *cases, size_t n)
{
    size_t t, i, m, w, j, c;
    for (t = 0; t < PG_NELEMS; t++) {
        const pg_elem *e = &pg_elems[t];
        m = w = 0;
        pgr_off[0] = 0;
        for (i = 0; i < n; i++) {
            pg_row r;
            uint8_t gf[PG_MAXGIVEN], rf[4 * PG_MAXGIVEN];
            int64_t glo[PG_MAXGIVEN], ghi[PG_MAXGIVEN], rlo[4 * PG_MAXGIVEN], rhi[4 * PG_MAXGIVEN], mid;
            size_t kg = 0, k, at, copies, nr;
            int ok, closed;
            if (!pg_row_of(cases[i].row, &r)) {
                CHECK(0, "unreadable case %s", cases[i].row);
                continue;
            }
            if (!pg_type_is(&r, e->multirange)) continue;
            ok = m + 3 < PG_MAXR && w + 8 * PG_MAXGIVEN <= PG_MAXR &&
                 pg_given_ranges(e, pg_row_json(&r), gf, glo, ghi, &kg);
            CHECK(ok, "%s %.*s: not read, or a range failed sh_pg_range_canonical", e->multirange,
                  PG_SHOW(&r));
            if (!ok) continue;
            at = w;
            for (j = 0; j < kg; j++, w++) {
                pgr_flags[w] = gf[j];
                pgr_lo[w] = glo[j];
                pgr_hi[w] = ghi[j];
            }
            k = sh_pg_multirange_canonical(pgr_flags + at, pgr_lo + at, pgr_hi + at, kg);
            w = at + k;
            if (cases[i].server != NULL)
                CHECK(pg_same_as_server(e, cases[i].server, pgr_flags + at, pgr_lo + at, pgr_hi + at, k),
                      "%s %.*s: the %lu canonical ranges != the server's %s", e->multirange, PG_SHOW(&r),
                      (unsigned long)k, cases[i].server);
            pgr_rows[m++] = r;
            pgr_off[m] = (int64_t)w;
            if (kg == 0) continue;
            /* The same multirange written two more ways, so the same
             * canonical ranges and the server's hashes of the row:
             * (1) its ranges given several times over, in turn forwards and
             * backwards: more than 16 ranges, which sh_pg_multirange_canonical
             * sorts with its heapsort; */
            copies = 17 / kg + 1;
            for (c = nr = 0; c < copies; c++)
                for (j = 0; j < kg; j++, nr++) {
                    size_t g = c % 2 ? kg - 1 - j : j;
                    rf[nr] = gf[g];
                    rlo[nr] = glo[g];
                    rhi[nr] = ghi[g];
                }
            CHECK(pg_merge_same(&w, rf, rlo, rhi, nr, at, k),
                  "%s %.*s given %lu times: not the same canonical ranges", e->multirange, PG_SHOW(&r),
                  (unsigned long)copies);
            pgr_rows[m++] = r;
            pgr_off[m] = (int64_t)w;
            /* (2) its first range with two finite bounds at least 2 apart
             * split in the middle into two that touch: [lo, mid) and
             * [mid, hi), or for a continuous type, every other case,
             * [lo, mid] and (mid, hi) (brackets of lo and hi kept). */
            for (j = 0; j < kg; j++) /* (the width in unsigned arithmetic: it may pass INT64_MAX) */
                if (!(gf[j] & (SH_PG_RANGE_LB_INF | SH_PG_RANGE_UB_INF)) &&
                    (uint64_t)ghi[j] - (uint64_t)glo[j] >= 2u)
                    break;
            if (j == kg) continue;
            for (c = nr = 0; c < kg; c++, nr++) {
                rf[nr] = gf[c];
                rlo[nr] = glo[c];
                rhi[nr] = ghi[c];
            }
            mid = glo[j] + (int64_t)(((uint64_t)ghi[j] - (uint64_t)glo[j]) / 2u);
            closed = !e->discrete && i % 2; /* [lo, mid] and (mid, hi) */
            rf[j] = (uint8_t)((gf[j] & SH_PG_RANGE_LB_INC) | (closed ? SH_PG_RANGE_UB_INC : 0u));
            rhi[j] = mid;
            rf[nr] = (uint8_t)((gf[j] & SH_PG_RANGE_UB_INC) | (closed ? 0u : SH_PG_RANGE_LB_INC));
            rlo[nr] = mid;
            rhi[nr++] = ghi[j];
            CHECK(pg_merge_same(&w, rf, rlo, rhi, nr, at, k),
                  "%s %.*s with range %lu split at %lld: not the same canonical ranges", e->multirange,
                  PG_SHOW(&r), (unsigned long)j, (long long)mid);
            pgr_rows[m++] = r;
            pgr_off[m] = (int64_t)w;
        }
        pg_check_range_hashes(e, m, pgr_off, "multirange");
    }
}

/* Multiranges that are not in the TSVs (ranges that touch or not, in any
 * order): the type, the ranges as in the TSVs, and the server's text of
 * SELECT <type>(<range>, ...)::text (PostgreSQL 15). */
typedef struct {
    int elem; /* index in pg_elems */
    const char *value, *server;
} pg_multirange_edge;

static void test_pg_multirange_edges(const pg_multirange_edge *c, size_t n)
{
    size_t i, kg, k;
    for (i = 0; i < n; i++) {
        const pg_elem *e = &pg_elems[c[i].elem];
        uint8_t f[PG_MAXGIVEN];
        int64_t lo[PG_MAXGIVEN], hi[PG_MAXGIVEN];
        const char *p = c[i].value;
        int v, ok;
        pgj_reset();
        v = pgj_parse(&p, c[i].value + strlen(c[i].value));
        ok = pg_given_ranges(e, v, f, lo, hi, &kg);
        k = ok ? sh_pg_multirange_canonical(f, lo, hi, kg) : 0;
        CHECK(ok && pg_same_as_server(e, c[i].server, f, lo, hi, k),
              "%s %s: %lu canonical ranges, the server %s", e->multirange, c[i].value, (unsigned long)k,
              c[i].server);
    }
}

/* ---- numeric: sh_pg_numeric_text, sh_pg_numeric_int64 ---- */

#define PG_UNTOUCHED UINT64_C(0x5A5A5A5A5A5A5A5A)

/* out of sh_pg_numeric_* against a TSV column: the 32-bit hash is unsigned
 * in out (nothing in the high half). */
static int pg_numeric_same(uint64_t out, int64_t want, int mode)
{
    return mode < 3 ? out == (uint64_t)want : out == (uint64_t)(uint32_t)(uint64_t)want;
}

/* The value of a numeric's text when it is an integer that fits in int64
 * (1E+10, -0.000 and -8.52877587949E+14 are; 1.5, 1E+20 and NaN are not). */
static int pg_numeric_as_int64(const char *s, size_t len, int64_t *v)
{
    char dig[64];
    size_t i = 0, nd = 0, nfrac = 0, j;
    int neg = 0, point = 0, eneg = 0;
    int64_t e = 0, x;
    uint64_t u = 0, lim;
    if (i < len && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    for (; i < len; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            if (nd >= sizeof dig) return 0;
            dig[nd++] = s[i];
            nfrac += (size_t)point;
        } else if (s[i] == '.' && !point) {
            point = 1;
        } else {
            break;
        }
    }
    if (nd == 0) return 0;
    if (i < len) {
        if (s[i] != 'E' && s[i] != 'e') return 0;
        if (++i < len && (s[i] == '-' || s[i] == '+')) eneg = s[i++] == '-';
        if (i == len) return 0;
        for (; i < len; i++) {
            if (s[i] < '0' || s[i] > '9' || e > 1000) return 0;
            e = e * 10 + (s[i] - '0');
        }
    }
    x = (eneg ? -e : e) - (int64_t)nfrac; /* the value is dig * 10**x */
    for (; x < 0 && nd > 0; x++, nd--)
        if (dig[nd - 1] != '0') return 0;
    lim = neg ? UINT64_C(9223372036854775808) : UINT64_C(9223372036854775807);
    for (j = 0; j < nd; j++) {
        unsigned d = (unsigned)(dig[j] - '0');
        if (u > (lim - d) / 10u) return 0;
        u = u * 10u + d;
    }
    for (; x > 0 && u != 0; x--) {
        if (u > lim / 10u) return 0;
        u *= 10u;
    }
    *v = neg ? (u == UINT64_C(9223372036854775808) ? INT64_MIN : -(int64_t)u) : (int64_t)u;
    return 1;
}

/* The same finite value written with four leading zeros and its fraction
 * padded with 300 zeros ("-1.5E+3" -> "-00001.5000...0E+3"): more than the
 * kernel's 256-byte stack buffer for the digits. */
static size_t pg_numeric_padded(const char *s, size_t len, char *out)
{
    size_t i = 0, o = 0, z;
    int point = 0;
    if (len > 0 && (s[0] == '-' || s[0] == '+')) out[o++] = s[i++];
    for (z = 0; z < 4; z++) out[o++] = '0';
    for (; i < len && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'); i++) {
        point |= s[i] == '.';
        out[o++] = s[i];
    }
    if (!point) out[o++] = '.';
    for (z = 0; z < 300; z++) out[o++] = '0';
    memcpy(out + o, s + i, len - i); /* the exponent */
    return o + len - i;
}

static void test_pg_numeric(const char *const *rows, size_t n)
{
    static char padded[512];
    size_t i, plen;
    int mode;
    for (i = 0; i < n; i++) {
        pg_row r;
        int64_t iv = 0;
        int as_int, finite;
        if (!pg_row_of(rows[i], &r) || r.value_len > 150) {
            CHECK(0, "unreadable case %s", rows[i]);
            continue;
        }
        as_int = pg_numeric_as_int64(r.value, r.value_len, &iv);
        finite = r.value_len > 0 && r.value[r.value[0] == '-'] >= '0' && r.value[r.value[0] == '-'] <= '9';
        plen = finite ? pg_numeric_padded(r.value, r.value_len, padded) : 0;
        for (mode = 0; mode < PG_MODES; mode++) {
            int wide = mode < 3;
            uint64_t seed = wide ? pg_seeds[mode] : 0, out = PG_UNTOUCHED;
            int rc = sh_pg_numeric_text(r.value, r.value_len, wide, seed, &out);
            CHECK(rc == 0 && pg_numeric_same(out, r.want[mode], mode),
                  "numeric %.*s: sh_pg_numeric_text %s gave %d, %016llx != the server's", PG_SHOW(&r),
                  pg_mode_names[mode], rc, (unsigned long long)out);
            if (as_int) {
                out = PG_UNTOUCHED;
                sh_pg_numeric_int64(iv, wide, seed, &out);
                CHECK(pg_numeric_same(out, r.want[mode], mode),
                      "numeric %.*s: sh_pg_numeric_int64(%lld) %s %016llx != the server's", PG_SHOW(&r),
                      (long long)iv, pg_mode_names[mode], (unsigned long long)out);
            }
            if (finite) {
                out = PG_UNTOUCHED;
                rc = sh_pg_numeric_text(padded, plen, wide, seed, &out);
                CHECK(rc == 0 && pg_numeric_same(out, r.want[mode], mode),
                      "numeric %.*s padded with zeros to %lu characters: %s gave %d, %016llx != the server's",
                      PG_SHOW(&r), (unsigned long)plen, pg_mode_names[mode], rc, (unsigned long long)out);
            }
        }
    }
}

/* Texts sh_pg_numeric_text must refuse (-1, out untouched), so that the
 * caller's Python path judges them. */
static void test_pg_numeric_refused(void)
{
    static const char *const bad[] = {
        "",           "-",           "+",        ".",
        "-.",         "1.2.3",       "1e",       "1E+",
        "1e-",        "1e5x",        "1x",       "abc",
        "nan",        "NaNx",        "NaN-1",    "sNaN",
        "-sNaN",      "Inf",         "infinity", "Infinityx",
        "-Infinity1", " 1",          "1 ",       "1,5",
        "--1",        "+-1",         "1e+-5",    "1e1234567890123456789", /* more than 18 exponent digits */
        "0x10",       "\357\274\221" /* U+FF11, a full-width 1 */};
    size_t i;
    int wide;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (wide = 0; wide < 2; wide++) {
            uint64_t out = PG_UNTOUCHED;
            int rc = sh_pg_numeric_text(bad[i], strlen(bad[i]), wide, SH_PG_HASH_PARTITION_SEED, &out);
            CHECK(rc == -1 && out == PG_UNTOUCHED, "sh_pg_numeric_text(\"%s\", wide %d) gave %d, out %016llx",
                  bad[i], wide, rc, (unsigned long long)out);
        }
    }
}

/* ---- hash_array and hash_record's fold: sh_pg_fold31 ---- */

#define PG_MAXEL 2048
#define PG_JUNK  UINT64_C(0xDEADBEEFCAFEF00D) /* a NULL's hash slot: sh_pg_fold31 must not read it */

/* A column of values: their hashes in every mode, or NULL (isnull set, the
 * hash slots junk). */
typedef struct {
    size_t n;
    uint64_t h[PG_MODES][PG_MAXEL];
    uint8_t isnull[PG_MAXEL];
} pg_col;

/* Append the hashes of JSON value k as a value of type: '4' int4, '8' int8,
 * 't' text, 'd' date, 'n' numeric (its text), 'r' int4range; or NULL.  The
 * element hashes come from the sh_pg kernels checked against the server
 * (the scalar and batch ones in tests/compat, the numeric and range ones
 * above). */
static int pg_col_add(pg_col *c, int k, int type)
{
    size_t at = c->n;
    int mode;
    int64_t v = 0;
    int32_t v32, o32;
    if (at >= PG_MAXEL || k < 0) return 0;
    c->isnull[at] = pgj[k].kind == PGJ_NULL;
    for (mode = 0; mode < PG_MODES; mode++) c->h[mode][at] = PG_JUNK;
    if (pgj[k].kind == PGJ_NULL) {
        c->n++;
        return 1;
    }
    if (type == 't') {
        if (pgj[k].kind != PGJ_STR) return 0;
        for (mode = 0; mode < 3; mode++)
            c->h[mode][at] = sh_pg_hash_bytes_extended(pgj[k].s, pgj[k].len, pg_seeds[mode]);
        c->h[3][at] = sh_pg_hash_bytes(pgj[k].s, pgj[k].len);
    } else if (type == 'n') {
        if (pgj[k].kind != PGJ_STR) return 0;
        for (mode = 0; mode < PG_MODES; mode++)
            if (sh_pg_numeric_text(pgj[k].s, pgj[k].len, mode < 3, mode < 3 ? pg_seeds[mode] : 0,
                                   &c->h[mode][at]) != 0)
                return 0;
    } else if (type == 'r') {
        uint8_t f;
        int64_t lo, hi;
        int32_t r32;
        if (!pg_range_json(k, &pg_elems[0], &f, &lo, &hi) ||
            sh_pg_range_canonical(1, INT64_C(2147483647), &f, &lo, &hi) != 0)
            return 0;
        for (mode = 0; mode < 3; mode++)
            sh_pg_range_extended(&f, &lo, &hi, 1, 0, pg_seeds[mode], &c->h[mode][at]);
        sh_pg_range_32(&f, &lo, &hi, 1, 0, &r32);
        c->h[3][at] = (uint32_t)r32;
    } else if (type == '8') { /* hashint8: the value folded to 32 bits */
        if (pgj[k].kind != PGJ_NUM || !pg_int64_of(pgj[k].s, pgj[k].len, &v)) return 0;
        for (mode = 0; mode < 3; mode++) sh_pg_int8_extended(&v, 1, pg_seeds[mode], &c->h[mode][at]);
        sh_pg_int8_32(&v, 1, &o32);
        c->h[3][at] = (uint32_t)o32;
    } else { /* int4, or a date: hashint4 of its days since 2000-01-01 */
        if (type == 'd' ? pgj[k].kind != PGJ_STR || !pg_time_of(pgj[k].s, pgj[k].len, 0, &v)
                        : pgj[k].kind != PGJ_NUM || !pg_int64_of(pgj[k].s, pgj[k].len, &v))
            return 0;
        if (v < INT32_MIN || v > INT32_MAX) return 0;
        v32 = (int32_t)v;
        for (mode = 0; mode < 3; mode++) sh_pg_int4_extended(&v32, 1, pg_seeds[mode], &c->h[mode][at]);
        sh_pg_int4_32(&v32, 1, &o32);
        c->h[3][at] = (uint32_t)o32;
    }
    c->n++;
    return 1;
}

/* Append a non-NULL value whose hashes are filled in later. */
static int pg_col_add_later(pg_col *c)
{
    int mode;
    if (c->n >= PG_MAXEL) return 0;
    c->isnull[c->n] = 0;
    for (mode = 0; mode < PG_MODES; mode++) c->h[mode][c->n] = PG_JUNK;
    c->n++;
    return 1;
}

/* The elements of array value k (nested lists: more dimensions, read in
 * storage order) appended to c. */
static int pg_col_add_elements(pg_col *c, int k, int type)
{
    int item;
    if (k < 0 || pgj[k].kind != PGJ_LIST) return 0;
    for (item = pgj[k].first; item >= 0; item = pgj[item].next)
        if (!(pgj[item].kind == PGJ_LIST ? pg_col_add_elements(c, item, type) : pg_col_add(c, item, type)))
            return 0;
    return 1;
}

static int pg_col_has_null(const pg_col *c, size_t from, size_t to)
{
    size_t i;
    for (i = from; i < to; i++)
        if (c->isnull[i]) return 1;
    return 0;
}

/* hash_array(_extended) of m arrays whose elements are in el (array i:
 * start[i] .. start[i] + len[i] - 1): acc = 1, then sh_pg_fold31 one element
 * position at a time over the arrays that have it (isnull NULL where that
 * position holds no NULL). */
static void pg_fold_arrays(const pg_col *el, size_t m, const size_t *start, const size_t *len, int mode,
                           uint64_t *acc)
{
    static uint64_t sub[PG_MAXR], h[PG_MAXR];
    static uint8_t nul[PG_MAXR];
    static size_t idx[PG_MAXR];
    size_t i, j, c;
    int anynull;
    for (i = 0; i < m; i++) acc[i] = 1;
    for (j = 0;; j++) {
        for (i = c = 0, anynull = 0; i < m; i++)
            if (len[i] > j) {
                idx[c] = i;
                sub[c] = acc[i];
                h[c] = el->h[mode][start[i] + j];
                nul[c] = el->isnull[start[i] + j];
                anynull |= nul[c];
                c++;
            }
        if (c == 0) break;
        sh_pg_fold31(sub, h, anynull ? nul : NULL, c);
        for (i = 0; i < c; i++) acc[idx[i]] = sub[i];
    }
}

static pg_col pg_elements;
static size_t pg_start[PG_MAXR], pg_len[PG_MAXR];
static uint64_t pg_acc[PG_MAXR];

/* hash_array of int4[], int8[] and text[] values (rows of other types are
 * left out). */
static void test_pg_arrays(const char *const *rows, size_t n)
{
    size_t i, m = 0;
    int mode;
    pg_elements.n = 0;
    for (i = 0; i < n && m < PG_MAXR; i++) {
        pg_row r;
        int type, k;
        if (!pg_row_of(rows[i], &r)) {
            CHECK(0, "unreadable case %s", rows[i]);
            continue;
        }
        type = pg_type_is(&r, "int4[]")   ? '4'
               : pg_type_is(&r, "int8[]") ? '8'
               : pg_type_is(&r, "text[]") ? 't'
                                          : 0;
        if (!type) continue;
        k = pg_row_json(&r);
        pg_start[m] = pg_elements.n;
        if (!pg_col_add_elements(&pg_elements, k, type)) {
            CHECK(0, "%.*s %.*s: not read", (int)r.type_len, r.type, PG_SHOW(&r));
            pg_elements.n = pg_start[m];
            continue;
        }
        pg_len[m] = pg_elements.n - pg_start[m];
        pgr_rows[m++] = r;
    }
    for (mode = 0; mode < PG_MODES; mode++) {
        pg_fold_arrays(&pg_elements, m, pg_start, pg_len, mode, pg_acc);
        for (i = 0; i < m; i++)
            CHECK(pg_same(pg_acc[i], pgr_rows[i].want[mode], mode),
                  "%.*s %.*s: %s hash_array %016llx != the server's", (int)pgr_rows[i].type_len,
                  pgr_rows[i].type, PG_SHOW(&pgr_rows[i]), pg_mode_names[mode],
                  (unsigned long long)pg_acc[i]);
    }
}

/* hash_record of sh_outer values: (a int4, b text, c date, d numeric,
 * e int8[], f int4range, g sh_inner) with sh_inner (x int8, y text); acc =
 * 0, then sh_pg_fold31 one field at a time over all the rows, e's hash that
 * of hash_array, g's that of hash_record over its own fields. */
#define PG_COMPOSITE "(int4,text,date,numeric,int8[],int4range,(int8,text))"
static pg_col pg_fields[7], pg_inner[2];
static size_t pg_inner_row[PG_MAXR];
static uint64_t pg_inner_acc[PG_MAXR];

static void test_pg_composites(const char *const *rows, size_t n)
{
    static const int types[7] = {'4', 't', 'd', 'n', 0, 'r', 0};
    size_t i, m = 0, gm = 0, f;
    int mode;
    for (f = 0; f < 7; f++) pg_fields[f].n = 0;
    pg_inner[0].n = pg_inner[1].n = pg_elements.n = 0;
    for (i = 0; i < n && m < PG_MAXR; i++) {
        pg_row r;
        size_t saved[7], saved_el = pg_elements.n, saved_in = pg_inner[0].n;
        int k, ok, item;
        if (!pg_row_of(rows[i], &r)) {
            CHECK(0, "unreadable case %s", rows[i]);
            continue;
        }
        if (!pg_type_is(&r, PG_COMPOSITE)) continue;
        k = pg_row_json(&r);
        ok = k >= 0 && pgj[k].kind == PGJ_LIST && pgj[k].count == 7;
        pg_start[m] = pg_elements.n;
        pg_len[m] = 0;
        for (f = 0; f < 7; f++) saved[f] = pg_fields[f].n;
        for (f = 0; ok && f < 7; f++) {
            item = pgj_item(k, (int)f);
            if (types[f] || (item >= 0 && pgj[item].kind == PGJ_NULL)) {
                ok = pg_col_add(&pg_fields[f], item, types[f]);
            } else if (f == 4) { /* e: hash_array of its elements (below) */
                ok = pg_col_add_elements(&pg_elements, item, '8') && pg_col_add_later(&pg_fields[f]);
                pg_len[m] = pg_elements.n - pg_start[m];
            } else { /* g: hash_record of its two fields (below) */
                ok = item >= 0 && pgj[item].kind == PGJ_LIST && pgj[item].count == 2 &&
                     pg_col_add(&pg_inner[0], pgj_item(item, 0), '8') &&
                     pg_col_add(&pg_inner[1], pgj_item(item, 1), 't') && pg_col_add_later(&pg_fields[f]);
                pg_inner_row[gm++] = m;
            }
        }
        CHECK(ok, "composite %.*s: not read", PG_SHOW(&r));
        if (!ok) { /* (undo the row) */
            for (f = 0; f < 7; f++) pg_fields[f].n = saved[f];
            pg_elements.n = saved_el;
            pg_inner[0].n = pg_inner[1].n = saved_in;
            gm = saved_in;
            continue;
        }
        pgr_rows[m++] = r;
    }
    for (mode = 0; mode < PG_MODES; mode++) {
        uint64_t mask = mode < 3 ? ~(uint64_t)0 : UINT64_C(0xFFFFFFFF);
        /* e */
        pg_fold_arrays(&pg_elements, m, pg_start, pg_len, mode, pg_acc);
        for (i = 0; i < m; i++) pg_fields[4].h[mode][i] = pg_fields[4].isnull[i] ? PG_JUNK : pg_acc[i] & mask;
        /* g */
        for (i = 0; i < gm; i++) pg_inner_acc[i] = 0;
        for (f = 0; f < 2; f++)
            sh_pg_fold31(pg_inner_acc, pg_inner[f].h[mode],
                         pg_col_has_null(&pg_inner[f], 0, gm) ? pg_inner[f].isnull : NULL, gm);
        for (i = 0; i < gm; i++) pg_fields[6].h[mode][pg_inner_row[i]] = pg_inner_acc[i] & mask;
        /* the record */
        for (i = 0; i < m; i++) pg_acc[i] = 0;
        for (f = 0; f < 7; f++)
            sh_pg_fold31(pg_acc, pg_fields[f].h[mode],
                         pg_col_has_null(&pg_fields[f], 0, m) ? pg_fields[f].isnull : NULL, m);
        for (i = 0; i < m; i++)
            CHECK(pg_same(pg_acc[i], pgr_rows[i].want[mode], mode),
                  "composite %.*s: %s hash_record %016llx != the server's", PG_SHOW(&pgr_rows[i]),
                  pg_mode_names[mode], (unsigned long long)pg_acc[i]);
    }
}

/* ---- the cases ---- */

/* clang-format off */
/* tests/vectors/compat/postgres_ranges.tsv: int4range, int8range, daterange,
 * tsrange and tstzrange (empty, unbounded on either side or both, every
 * bracket, equal bounds); then the server's text of each value. */
static const pg_case pg_range_cases[] = {
    {"int4range\t\"empty\"\t484847245\t-7341197756718502259\t3205387485829051971\t-6508754750701711957",
     "empty"},
    {"int4range\t[-2140556301, 758104483, \"()\"]\t412434308\t-7278614688809271420\t-5542493249412542027\t"
      "5734468682842274037",
     "[-2140556300,758104483)"},
    {"int4range\t[-246412708, null, \"(]\"]\t205219329\t-222186771210082815\t5228849629899819628\t"
      "6402338544418801005",
     "[-246412707,)"},
    {"int4range\t[null, 8, \"[]\"]\t1749435351\t-7414666559781190697\t-5978509793773829467\t"
      "-4705066710964401441",
     "(,9)"},
    {"int4range\t[-7, -7, \"[]\"]\t-212669108\t157661836837317964\t-958572063410238779\t"
      "-3921199811159677622",
     "[-7,-6)"},
    {"int4range\t[null, null, \"[]\"]\t1061745599\t8453741880185254847\t6821302272563461216\t"
      "5321703002680977537",
     "(,)"},
    {"int4range\t[-5, -5, \"()\"]\t484847245\t-7341197756718502259\t3205387485829051971\t"
      "-6508754750701711957",
     "empty"},
    {"int8range\t[-7711914679052682914, 4176652058564219118, \"(]\"]\t251445618\t-8805222997146418830\t"
      "-5804516829016267703\t-3392280057487943079",
     "[-7711914679052682913,4176652058564219119)"},
    {"int8range\t[-1758631336199554391, null, \"(]\"]\t1519290382\t6587941175964895246\t"
      "-2634850782961825218\t2118672986682661353",
     "[-1758631336199554390,)"},
    {"int8range\t[null, null, \"(]\"]\t1061745599\t8453741880185254847\t6821302272563461216\t"
      "5321703002680977537",
     "(,)"},
    {"int8range\t[-7, -7, \"[]\"]\t-212669108\t157661836837317964\t-958572063410238779\t"
      "-3921199811159677622",
     "[-7,-6)"},
    {"int8range\t[-5948956048286883055, -5948956048286883055, \"[]\"]\t1738213516\t-3232694785288763252\t"
      "-6895219413241718910\t409518510764212930",
     "[-5948956048286883055,-5948956048286883054)"},
    {"int8range\t[null, 0, \"(]\"]\t-2053430449\t7194182502076588879\t-8693028698719994106\t"
      "-8899764581041601872",
     "(,1)"},
    {"int8range\t[null, -1, \"[]\"]\t-464063322\t-7534079464710933338\t1686278292297450270\t"
      "1461635350785791144",
     "(,0)"},
    {"daterange\t\"empty\"\t484847245\t-7341197756718502259\t3205387485829051971\t-6508754750701711957",
     "empty"},
    {"daterange\t[\"1995-12-01\", \"1996-09-06\", \"()\"]\t347137116\t-3540455895249918884\t"
      "-3728627275727958662\t-5428484027069875126",
     "[1995-12-02,1996-09-06)"},
    {"daterange\t[\"2000-01-25\", \"2000-01-25\", \"(]\"]\t484847245\t-7341197756718502259\t"
      "3205387485829051971\t-6508754750701711957",
     "empty"},
    {"daterange\t[\"1997-07-24\", null, \"()\"]\t696583082\t5175067754197484458\t-3501090889811892607\t"
      "2958338938363795133",
     "[1997-07-25,)"},
    {"daterange\t[null, \"1996-07-17\", \"()\"]\t-1960724216\t-3367448825258985208\t-4371857220257283664\t"
      "-3668828734488466539",
     "(,1996-07-17)"},
    {"daterange\t[\"1995-03-14\", \"1996-02-05\", \"[]\"]\t-1326776332\t4400807160136269812\t"
      "-6200709685323647709\t6140581052406911943",
     "[1995-03-14,1996-02-06)"},
    {"daterange\t[\"1993-11-26\", \"1993-11-26\", \"[]\"]\t1894306164\t-6785638607380491916\t"
      "3998378994642963523\t6854937141072504515",
     "[1993-11-26,1993-11-27)"},
    {"tsrange\t[\"1994-10-18T15:04:33.816522\", \"2005-02-22T03:32:14.341044\", \"[]\"]\t-372728227\t"
      "-3473595744935960995\t-6324864283025748442\t-6954661808658473276",
     "[\"1994-10-18 15:04:33.816522\",\"2005-02-22 03:32:14.341044\"]"},
    {"tsrange\t[null, \"2007-07-22T14:13:46.500033\", \"[)\"]\t1220706490\t-6231206197551005510\t"
      "6139242052966849803\t-37467246334863856",
     "(,\"2007-07-22 14:13:46.500033\")"},
    {"tsrange\t[\"1997-01-25T06:44:57.522786\", \"2004-11-11T21:35:11.039590\", \"()\"]\t-416233908\t"
      "-75956351017105844\t9000201472327178754\t2051451369359122784",
     "(\"1997-01-25 06:44:57.522786\",\"2004-11-11 21:35:11.03959\")"},
    {"tsrange\t[\"1992-08-31T15:54:25.444548\", null, \"[]\"]\t1519783714\t5548538465900433186\t"
      "1391892469081043579\t-9154097041362427701",
     "[\"1992-08-31 15:54:25.444548\",)"},
    {"tsrange\t[\"1997-06-24T11:45:32.097575\", \"2006-04-12T02:06:48.315060\", \"(]\"]\t-1983040682\t"
      "7299515131972367190\t-4915442994514597912\t-1626227726918933604",
     "(\"1997-06-24 11:45:32.097575\",\"2006-04-12 02:06:48.31506\"]"},
    {"tsrange\t[\"1992-12-03T22:53:46.413285\", \"1992-12-03T22:53:46.413285\", \"()\"]\t484847245\t"
      "-7341197756718502259\t3205387485829051971\t-6508754750701711957",
     "empty"},
    {"tsrange\t[\"1997-10-29T01:23:45.288606\", \"1997-10-29T01:23:45.288606\", \"[]\"]\t1819137913\t"
      "6466601199032194937\t-7016956129579904397\t-8972369487970301560",
     "[\"1997-10-29 01:23:45.288606\",\"1997-10-29 01:23:45.288606\"]"},
    {"tstzrange\t[\"1993-01-23T22:06:19.396336+00:00\", \"2007-02-04T10:20:07.500941+00:00\", \"()\"]\t"
      "-646141906\t-1788258970625071058\t8888767872761357174\t-8619976713739503664",
     "(\"1993-01-23 22:06:19.396336+00\",\"2007-02-04 10:20:07.500941+00\")"},
    {"tstzrange\t[null, null, \"[)\"]\t1061745599\t8453741880185254847\t6821302272563461216\t"
      "5321703002680977537",
     "(,)"},
    {"tstzrange\t[\"2002-08-17T23:01:34.254414+00:00\", \"2002-08-17T23:01:34.254414+00:00\", \"[]\"]\t"
      "579444455\t-4381646877984448793\t-7721168906039382940\t-8648963855913090413",
     "[\"2002-08-17 23:01:34.254414+00\",\"2002-08-17 23:01:34.254414+00\"]"},
    {"tstzrange\t[\"1993-12-26T11:08:30.327330+00:00\", \"1993-12-26T11:08:30.327330+00:00\", \"[)\"]\t"
      "484847245\t-7341197756718502259\t3205387485829051971\t-6508754750701711957",
     "empty"},
    {"tstzrange\t[null, \"1999-09-21T11:24:13.761770+00:00\", \"[]\"]\t1941466771\t-918733819530940781\t"
      "7767451169419591517\t-1487556342807285615",
     "(,\"1999-09-21 11:24:13.76177+00\"]"},
    {"tstzrange\t[\"1995-06-06T10:16:57.023858+00:00\", null, \"(]\"]\t1010853638\t7441355145721440006\t"
      "-7684465088757277170\t-6660373149987036349",
     "(\"1995-06-06 10:16:57.023858+00\",)"},
};

/* tests/vectors/compat/postgres_multiranges.tsv: the five multirange types
 * (no range, an empty one, unbounded, overlapping, touching and repeated
 * ranges given in any order); then the server's text of each value. */
static const pg_case pg_multirange_cases[] = {
    {"int4multirange\t[]\t1\t1\t1\t1",
     "{}"},
    {"int4multirange\t[\"empty\"]\t1\t1\t1\t1",
     "{}"},
    {"int4multirange\t[[null, null, \"[)\"]]\t1061745630\t8453741880185254878\t6821302272563461247\t"
      "5321703002680977568",
     "{(,)}"},
    {"int4multirange\t[[-50, -50, \"()\"], [109496330, 1855704098, \"[]\"], [12, 44, \"[]\"], [109496330, "
      "1855704098, \"[]\"], [-50, 173286404, \"[]\"]]\t-1489115537\t-3558564866480544145\t"
      "2143708008879452651\t2092102779946958544",
     "{[-50,1855704099)}"},
    {"int4multirange\t[[-8, -8, \"(]\"], [-1931206882, 37, \"[)\"], \"empty\", [-19, -19, \"()\"]]\t"
      "-1036466405\t716028797336995611\t4050135997519821180\t932251944198618623",
     "{[-1931206882,37)}"},
    {"int4multirange\t[[null, 28, \"()\"], [-2067936931, -50, \"(]\"], [106425523, 1149550826, \"[]\"], "
      "[16, 36, \"()\"], [607853133, null, \"[)\"], [-50, -50, \"()\"]]\t-1030337457\t"
      "-8465402437189612465\t1373704985942458308\t-1482277201684298324",
     "{(,36),[106425523,)}"},
    {"int4multirange\t[[-2067936931, -50, \"(]\"], [-1263027628, -1016009035, \"[]\"], [-27, 2071412782, "
      "\"()\"], [-40, 9, \"[)\"], [7, 1820662002, \"[)\"]]\t1394851825\t-8886800397937426447\t"
      "2759222616124597333\t233426418894763777",
     "{[-2067936930,-49),[-40,2071412782)}"},
    {"int4multirange\t[[null, -1, \"[)\"], [25, 311125351, \"[]\"]]\t1797097087\t2087380435802621567\t"
      "-838538140882220871\t8622833702846265889",
     "{(,-1),[25,311125352)}"},
    {"int4multirange\t[[7, 1820662002, \"[)\"], [null, -2144997778, \"[)\"], [7, 1820662002, \"[)\"]]\t"
      "1392249311\t-2481748702008702497\t6211823819189439044\t-2946075643742298684",
     "{(,-2144997778),[7,1820662002)}"},
    {"int4multirange\t[[-22, 893930219, \"[]\"], [-8, -8, \"(]\"], \"empty\", [607853133, null, \"[)\"], "
      "[-1937351978, -999701929, \"[)\"], [-780479950, -29, \"()\"]]\t1633649902\t1006727704317232366\t"
      "-2394284574023302395\t3650945346297077548",
     "{[-1937351978,-999701929),[-780479949,-29),[-22,)}"},
    {"int8multirange\t[[-3450666616376277715, -39, \"[]\"], [4, 30, \"[]\"], [-3450666616376277715, -39, "
      "\"[]\"], [-27, 1071746526757583754, \"[]\"], [-4671458581063199926, -39, \"()\"]]\t-876289080\t"
      "1528796902374826952\t-1135761613598461759\t2617436422115558757",
     "{[-4671458581063199925,-38),[-27,1071746526757583755)}"},
    {"int8multirange\t[[-27, 1071746526757583754, \"[]\"], [-27, 1071746526757583754, \"[]\"], "
      "[-3559198317499654633, -48, \"[]\"]]\t1259226225\t539510123417977969\t370027183688766274\t"
      "-8113945212429369389",
     "{[-3559198317499654633,-47),[-27,1071746526757583755)}"},
    {"int8multirange\t[[-6304903662975887613, -6304903662975887613, \"[)\"], [-5163939055349942165, "
      "-5163939055349942165, \"[)\"], [-4855577642501714472, -3064152872891143081, \"()\"], [-37, null, "
      "\"()\"], [-5163939055349942165, -5163939055349942165, \"[)\"]]\t1704533269\t-4608385635003589355\t"
      "-1766119660687508025\t-2532362457258169647",
     "{[-4855577642501714471,-3064152872891143081),[-36,)}"},
    {"int8multirange\t[[5434331667662655817, 8329714688111939127, \"(]\"], [-5722832663266433508, 17, "
      "\"(]\"], [-40, 16, \"()\"], [-23, 3098229793361771017, \"(]\"]]\t609258394\t-4413322042719302758\t"
      "5058648028284569427\t-6044569447997780614",
     "{[-5722832663266433507,3098229793361771018),[5434331667662655818,8329714688111939128)}"},
    {"int8multirange\t[[-11, -11, \"[)\"]]\t1\t1\t1\t1",
     "{}"},
    {"int8multirange\t[[-5163939055349942165, -5163939055349942165, \"[)\"], [-4648728363888348308, 17, "
      "\"()\"], [5, 37, \"()\"], [3424696382984390235, null, \"[)\"]]\t1277120729\t3945505191589007577\t"
      "-6459388046874924755\t1952369675705058658",
     "{[-4648728363888348307,37),[3424696382984390235,)}"},
    {"datemultirange\t[[\"2004-09-12\", \"2004-11-09\", \"[)\"], [\"1997-10-20\", \"2001-10-21\", \"()\"],"
      " [\"1995-07-23\", \"2001-03-29\", \"[)\"], [\"1992-11-28\", \"1992-11-28\", \"(]\"], "
      "[\"2000-09-01\", \"2001-11-15\", \"(]\"], [\"1992-03-18\", \"2003-01-01\", \"()\"]]\t1754280093\t"
      "-5163079497296105315\t3207077192553991955\t3860446420526445838",
     "{[1992-03-19,2003-01-01),[2004-09-12,2004-11-09)}"},
    {"datemultirange\t[[\"1996-05-20\", \"2000-03-17\", \"[]\"], [\"2001-10-01\", null, \"[]\"], "
      "[\"1992-11-28\", \"1992-11-28\", \"(]\"], [\"1996-03-14\", \"1997-06-22\", \"()\"]]\t1164906264\t"
      "-397760059738747112\t-161566464933838771\t-641202449170628895",
     "{[1996-03-15,2000-03-18),[2001-10-01,)}"},
    {"datemultirange\t[[\"1993-10-28\", \"1995-07-12\", \"()\"], [\"1996-03-14\", \"1997-06-22\", \"()\"],"
      " [\"2000-09-01\", \"2001-11-15\", \"(]\"], [\"1992-09-13\", \"2001-02-06\", \"[]\"], "
      "[\"2003-12-20\", \"2004-07-15\", \"(]\"]]\t-497056281\t-5229389233342413337\t-8687024617928060008\t"
      "8272905769301779877",
     "{[1992-09-13,2001-11-16),[2003-12-21,2004-07-16)}"},
    {"datemultirange\t[[\"1994-10-13\", \"1994-10-13\", \"()\"], [\"1996-03-14\", \"1997-06-22\", \"()\"],"
      " [\"1999-04-30\", \"2003-10-13\", \"[)\"]]\t-527665102\t5393408501434054706\t-7630119469022789844\t"
      "2592887407830012661",
     "{[1996-03-15,1997-06-22),[1999-04-30,2003-10-13)}"},
    {"datemultirange\t[[\"2004-09-12\", \"2004-11-09\", \"[)\"], [\"1996-03-14\", \"1997-06-22\", \"()\"],"
      " [\"1999-11-10\", \"2002-09-24\", \"(]\"], [\"1993-11-17\", \"1993-11-17\", \"()\"]]\t1058968695\t"
      "3346647799526495351\t-5245878704194403809\t-7274443014272712035",
     "{[1996-03-15,1997-06-22),[1999-11-11,2002-09-25),[2004-09-12,2004-11-09)}"},
    {"tsmultirange\t[[\"1992-03-08T19:56:20.503392\", \"2000-07-20T16:35:19.319443\", \"[)\"], "
      "[\"1997-09-25T11:16:39.335738\", \"2008-02-16T03:39:42.527232\", \"()\"]]\t1827100896\t"
      "-4933813232429737760\t-2975282006547194713\t-2058124818858115734",
     "{[\"1992-03-08 19:56:20.503392\",\"2008-02-16 03:39:42.527232\")}"},
    {"tsmultirange\t[[null, \"1993-06-06T01:31:12.993441\", \"[]\"], [\"2000-03-26T17:08:44.189076\", "
      "\"2004-08-13T05:01:40.252819\", \"[]\"], [\"1995-04-29T02:28:57.248969\", "
      "\"2002-07-14T21:42:16.662798\", \"[)\"], [\"2003-03-08T06:37:47.241583\", "
      "\"2004-05-26T06:54:04.989751\", \"()\"], [\"2000-10-19T15:30:57.694626\", null, \"[)\"]]\t"
      "377067918\t1492944367772080526\t4782476969851531436\t6297414874336980485",
     "{(,\"1993-06-06 01:31:12.993441\"],[\"1995-04-29 02:28:57.248969\",)}"},
    {"tsmultirange\t[[\"1992-03-08T19:56:20.503392\", \"2000-07-20T16:35:19.319443\", \"[)\"], "
      "[\"2000-03-26T17:08:44.189076\", \"2004-08-13T05:01:40.252819\", \"[]\"], "
      "[\"1993-10-06T22:06:43.847483\", \"1997-12-30T10:55:29.892715\", \"[]\"]]\t-608421761\t"
      "-1688301818750420865\t6074875346521885789\t3364497406412654658",
     "{[\"1992-03-08 19:56:20.503392\",\"2004-08-13 05:01:40.252819\"]}"},
    {"tsmultirange\t[[\"1993-06-16T10:52:25.313942\", \"1998-10-04T08:11:08.753436\", \"(]\"], "
      "[\"1999-05-18T13:45:28.173131\", null, \"[)\"]]\t-2045611838\t-2165321667133148990\t"
      "213531842425593529\t-3208889437565909940",
     "{(\"1993-06-16 10:52:25.313942\",\"1998-10-04 08:11:08.753436\"],[\"1999-05-18 13:45:28.173131\",)}"},
    {"tstzmultirange\t[[\"2006-08-17T05:46:31.125361+00:00\", \"2006-11-14T00:13:32.288742+00:00\", "
      "\"[]\"], [\"2001-01-06T19:26:35.294491+00:00\", \"2004-05-02T11:37:33.179766+00:00\", \"[)\"], "
      "[\"1996-08-09T18:01:11.564049+00:00\", \"1997-10-01T02:12:22.872615+00:00\", \"[)\"]]\t1408896855\t"
      "-337978658809835689\t6999355609272827236\t-7744772186158656763",
     "{[\"1996-08-09 18:01:11.564049+00\",\"1997-10-01 02:12:22.872615+00\"),"
      "[\"2001-01-06 19:26:35.294491+00\",\"2004-05-02 11:37:33.179766+00\"),"
      "[\"2006-08-17 05:46:31.125361+00\",\"2006-11-14 00:13:32.288742+00\"]}"},
    {"tstzmultirange\t[[\"2000-07-14T07:45:10.392581+00:00\", \"2005-10-03T08:02:47.888782+00:00\", "
      "\"()\"], [\"1996-07-30T20:59:53.577496+00:00\", \"1998-09-10T22:05:34.735082+00:00\", \"()\"], "
      "[\"1992-04-24T08:41:01.968009+00:00\", \"1993-10-04T20:35:00.005569+00:00\", \"[)\"]]\t1450971322\t"
      "-5767353852521344838\t-8191238332536939259\t3977994930880814293",
     "{[\"1992-04-24 08:41:01.968009+00\",\"1993-10-04 20:35:00.005569+00\"),"
      "(\"1996-07-30 20:59:53.577496+00\",\"1998-09-10 22:05:34.735082+00\"),"
      "(\"2000-07-14 07:45:10.392581+00\",\"2005-10-03 08:02:47.888782+00\")}"},
    {"tstzmultirange\t[[\"2001-09-04T00:17:55.628043+00:00\", \"2004-12-10T06:40:24.214348+00:00\", "
      "\"[]\"], [\"1998-06-15T21:40:14.215907+00:00\", \"2000-03-20T05:15:10.688296+00:00\", \"[]\"], "
      "[\"1996-06-26T20:38:13.900043+00:00\", \"1996-06-26T20:38:13.900043+00:00\", \"(]\"]]\t255898641\t"
      "4427485621660988433\t9082194161185631038\t-8817683159914742842",
     "{[\"1998-06-15 21:40:14.215907+00\",\"2000-03-20 05:15:10.688296+00\"],"
      "[\"2001-09-04 00:17:55.628043+00\",\"2004-12-10 06:40:24.214348+00\"]}"},
    {"tstzmultirange\t[[\"1994-11-24T11:37:50.675574+00:00\", \"1994-11-24T11:37:50.675574+00:00\", "
      "\"[]\"], [\"2001-11-13T14:39:21.542887+00:00\", \"2007-11-26T15:26:00.009156+00:00\", \"[)\"], "
      "[\"1994-11-24T11:37:50.675574+00:00\", \"1994-11-24T11:37:50.675574+00:00\", \"[]\"], "
      "[\"1995-12-23T04:42:30.748080+00:00\", \"2004-02-04T07:20:15.573520+00:00\", \"[]\"], "
      "[\"1995-01-03T14:01:53.710484+00:00\", \"2003-10-13T22:32:10.975376+00:00\", \"[]\"]]\t1932756211\t"
      "-4024274325947054861\t1919169571196947055\t6902833690821176943",
     "{[\"1994-11-24 11:37:50.675574+00\",\"1994-11-24 11:37:50.675574+00\"],"
      "[\"1995-01-03 14:01:53.710484+00\",\"2007-11-26 15:26:00.009156+00\")}"},
    {"tstzmultirange\t[[\"1994-11-17T07:22:13.805346+00:00\", \"1999-01-20T05:56:09.770053+00:00\", "
      "\"(]\"], [\"1994-07-16T16:42:21.465889+00:00\", \"1995-09-18T20:32:37.155496+00:00\", \"(]\"], "
      "[\"1999-06-28T16:58:23.597395+00:00\", \"1999-06-28T16:58:23.597395+00:00\", \"(]\"], "
      "[\"1997-12-12T00:45:28.279544+00:00\", \"1997-12-12T00:45:28.279544+00:00\", \"[]\"], "
      "[\"2004-07-02T16:39:34.704161+00:00\", \"2006-03-19T11:10:05.340652+00:00\", \"[]\"]]\t1998168494\t"
      "-8766022974917992018\t-5036865637297894062\t-1293011184484423716",
     "{(\"1994-07-16 16:42:21.465889+00\",\"1999-01-20 05:56:09.770053+00\"],"
      "[\"2004-07-02 16:39:34.704161+00\",\"2006-03-19 11:10:05.340652+00\"]}"},
    {"tstzmultirange\t[[\"1994-07-16T16:42:21.465889+00:00\", \"1995-09-18T20:32:37.155496+00:00\", "
      "\"(]\"], [\"2001-04-04T19:50:54.094981+00:00\", \"2005-05-28T00:27:20.729652+00:00\", \"[]\"], "
      "[\"2001-01-06T19:26:35.294491+00:00\", \"2004-05-02T11:37:33.179766+00:00\", \"[)\"]]\t1732248818\t"
      "-457511678553094926\t8767208646653791597\t6797831884914263958",
     "{(\"1994-07-16 16:42:21.465889+00\",\"1995-09-18 20:32:37.155496+00\"],"
      "[\"2001-01-06 19:26:35.294491+00\",\"2005-05-28 00:27:20.729652+00\"]}"},
};

/* Ranges that are not in the TSVs: the server's answer to
 * SELECT <type>(lower, upper, bounds)::text (PostgreSQL 15), an error (the
 * first line of its message) or the value. */
static const pg_range_edge pg_range_edges[] = {
    {0, "5", "3", "[)", "ERROR:  range lower bound must be less than or equal to range upper bound"},
    {0, "2147483647", NULL, "()", "ERROR:  integer out of range"},
    {0, "0", "2147483647", "[]", "ERROR:  integer out of range"},
    {0, NULL, "2147483647", "(]", "ERROR:  integer out of range"},
    {1, "0", "9223372036854775807", "[]", "ERROR:  bigint out of range"},
    {1, "9223372036854775807", NULL, "(]", "ERROR:  bigint out of range"},
    {1, "9223372036854775806", "9223372036854775807", "(]", "ERROR:  bigint out of range"},
    {2, "2000-01-01", "5874897-12-31", "[]", "ERROR:  date out of range"},
    {2, "5874897-12-31", NULL, "()", "ERROR:  date out of range"},
    {2, "5874897-12-30", "5874897-12-31", "(]", "ERROR:  date out of range"},
    {3, "2001-01-01T00:00:00", "2000-01-01T00:00:00", "[]",
     "ERROR:  range lower bound must be less than or equal to range upper bound"},
    {4, "2000-01-01T00:00:00.000001+00:00", "2000-01-01T00:00:00+00:00", "[]",
     "ERROR:  range lower bound must be less than or equal to range upper bound"},
    {0, "0", "2147483646", "[]", "[0,2147483647)"},
    {0, NULL, "2147483646", "(]", "(,2147483647)"},
    {0, "2147483646", "2147483647", "()", "empty"},
    {0, "2147483647", "2147483647", "(]", "empty"},
    {0, "-2147483648", "2147483647", "[)", "[-2147483648,2147483647)"},
    {0, "-2147483648", NULL, "()", "[-2147483647,)"},
    {0, "-2147483648", "-2147483648", "(]", "empty"},
    {1, "-9223372036854775808", "-9223372036854775808", "[]", "[-9223372036854775808,-9223372036854775807)"},
    {1, NULL, "9223372036854775807", "()", "(,9223372036854775807)"},
    {2, "5874897-12-30", "5874897-12-31", "[)", "[5874897-12-30,5874897-12-31)"},
    {2, "5874897-12-30", "5874897-12-30", "[]", "[5874897-12-30,5874897-12-31)"},
    {2, "1999-12-31", "2000-01-01", "(]", "[2000-01-01,2000-01-02)"},
    {3, "2000-01-01T00:00:00", "2000-01-01T00:00:00", "(]", "empty"},
    {3, "2001-01-01T00:00:00", "2001-01-01T00:00:00", "[]",
     "[\"2001-01-01 00:00:00\",\"2001-01-01 00:00:00\"]"},
    {4, "1999-12-31T23:00:00-01:00", "2000-01-01T00:00:00+00:00", "[]",
     "[\"2000-01-01 00:00:00+00\",\"2000-01-01 00:00:00+00\"]"},
};

/* Multiranges that are not in the TSVs: the server's answer to
 * SELECT <type>(<range>, ...)::text (PostgreSQL 15). */
static const pg_multirange_edge pg_multirange_edges[] = {
    {0, "[[1, 3, \"[)\"], [3, 5, \"[)\"]]", "{[1,5)}"},
    {0, "[[3, 5, \"[)\"], [1, 3, \"[)\"]]", "{[1,5)}"},
    {0, "[[1, 3, \"()\"], [3, 5, \"()\"]]", "{[2,3),[4,5)}"},
    {0, "[[1, 3, \"[]\"], [3, 5, \"()\"]]", "{[1,5)}"},
    {0, "[[1, 3, \"(]\"], [4, 5, \"[)\"]]", "{[2,5)}"},
    {0, "[[1, 10, \"[)\"], [2, 3, \"[)\"]]", "{[1,10)}"},
    {0, "[[null, 3, \"[)\"], [2, null, \"[)\"]]", "{(,)}"},
    {0, "[[null, 3, \"[)\"], [5, null, \"[)\"]]", "{(,3),[5,)}"},
    {0, "[[5, 9, \"[]\"], [1, 5, \"[)\"], [9, 12, \"(]\"]]", "{[1,13)}"},
    {0, "[[-2147483648, 2147483647, \"[)\"], "
        "[null, -2147483648, \"[)\"]]",
     "{(,2147483647)}"},
    {1, "[[null, null, \"[)\"], [1, 2, \"[)\"]]", "{(,)}"},
    {2, "[[\"2000-01-01\", \"2000-01-03\", \"[]\"], "
        "[\"2000-01-04\", \"2000-01-05\", \"[)\"]]",
     "{[2000-01-01,2000-01-05)}"},
    {3, "[[\"2000-01-01T00:00:00\", \"2000-01-03T00:00:00\", \"()\"], "
        "[\"2000-01-03T00:00:00\", \"2000-01-05T00:00:00\", \"()\"]]",
     "{(\"2000-01-01 00:00:00\",\"2000-01-03 00:00:00\"),(\"2000-01-03 00:00:00\",\"2000-01-05 00:00:00\")}"},
    {3, "[[\"2000-01-03T00:00:00\", \"2000-01-05T00:00:00\", \"()\"], "
        "[\"2000-01-01T00:00:00\", \"2000-01-03T00:00:00\", \"()\"]]",
     "{(\"2000-01-01 00:00:00\",\"2000-01-03 00:00:00\"),(\"2000-01-03 00:00:00\",\"2000-01-05 00:00:00\")}"},
    {3, "[[\"2000-01-01T00:00:00\", \"2000-01-03T00:00:00\", \"[)\"], "
        "[\"2000-01-03T00:00:00\", \"2000-01-05T00:00:00\", \"[)\"]]",
     "{[\"2000-01-01 00:00:00\",\"2000-01-05 00:00:00\")}"},
    {3, "[[\"2000-01-01T00:00:00\", \"2000-01-03T00:00:00\", \"(]\"], "
        "[\"2000-01-03T00:00:00\", \"2000-01-05T00:00:00\", \"()\"]]",
     "{(\"2000-01-01 00:00:00\",\"2000-01-05 00:00:00\")}"},
    {3, "[[\"2000-01-01T00:00:00\", \"2000-01-03T00:00:00\", \"[]\"], "
        "[\"2000-01-03T00:00:00\", \"2000-01-05T00:00:00\", \"[]\"]]",
     "{[\"2000-01-01 00:00:00\",\"2000-01-05 00:00:00\"]}"},
    {3, "[[\"2000-01-03T00:00:00\", \"2000-01-03T00:00:00\", \"[]\"], "
        "[\"2000-01-01T00:00:00\", \"2000-01-03T00:00:00\", \"()\"], "
        "[\"2000-01-03T00:00:00\", \"2000-01-05T00:00:00\", \"()\"]]",
     "{(\"2000-01-01 00:00:00\",\"2000-01-05 00:00:00\")}"},
    {3, "[[\"2000-01-01T00:00:00\", \"2000-01-05T00:00:00\", \"()\"], "
        "[\"2000-01-01T00:00:00\", \"2000-01-03T00:00:00\", \"[)\"]]",
     "{[\"2000-01-01 00:00:00\",\"2000-01-05 00:00:00\")}"},
    {3, "[[\"2000-01-01T00:00:00\", \"2000-01-05T00:00:00\", \"()\"], "
        "[\"2000-01-02T00:00:00\", \"2000-01-05T00:00:00\", \"(]\"]]",
     "{(\"2000-01-01 00:00:00\",\"2000-01-05 00:00:00\"]}"},
    {4, "[[null, \"2000-01-03T00:00:00+00:00\", \"()\"], "
        "[\"2000-01-03T00:00:00+00:00\", null, \"()\"]]",
     "{(,\"2000-01-03 00:00:00+00\"),(\"2000-01-03 00:00:00+00\",)}"},
    {4, "[[null, \"2000-01-03T00:00:00+00:00\", \"()\"], "
        "[\"2000-01-03T00:00:00+00:00\", null, \"[)\"]]",
     "{(,)}"},
};

/* tests/vectors/compat/postgres_numeric.tsv: its first 17 rows (zero, -0.000,
 * 1 and -1, 9999 and 10000, 1E+10, 1E-20, NaN, +-Infinity, trailing and
 * leading zeros, 40 digits), then integers, fractions and exponents. */
static const char *const pg_numeric_rows[] = {
    "numeric\t0\t-1\t-1\t0\t8816678312871386364",
    "numeric\t1\t1324868424\t-7507508252608306360\t90269248940323822\t-3231555093127941538",
    "numeric\t-1\t1324868424\t-7507508252608306360\t90269248940323822\t-3231555093127941538",
    "numeric\t10000\t1324868425\t-7507508252608306359\t90269248940323823\t-3231555093127941537",
    "numeric\t9999\t1699550555\t247439845080503643\t-5555785559100619096\t-992710135904545882",
    "numeric\t100000000000000000000\t1324868429\t-7507508252608306355\t90269248940323819\t"
     "-3231555093127941541",
    "numeric\t-9999999999999999999999999999999999999999\t110880732\t2659757836457469916\t"
     "7580865028345336957\t291514861267100328",
    "numeric\t0.0001\t-1324868425\t7507508252608306359\t-90269248940323823\t3231555093127941537",
    "numeric\t1.50\t692967894\t-8828336294488843818\t-5884919433362560192\t1234047083305210387",
    "numeric\t-0.000\t-1\t-1\t0\t8816678312871386364",
    "numeric\t1E+10\t1186574833\t2026427994494054897\t5539411768380730718\t-3879215986038224536",
    "numeric\t12345.678\t573919094\t-7224554725567017098\t8937381504604897645\t-4016348884958903928",
    "numeric\tNaN\t0\t0\t1\t8816678312871386365",
    "numeric\tInfinity\t0\t0\t1\t8816678312871386365",
    "numeric\t-Infinity\t0\t0\t1\t8816678312871386365",
    "numeric\t1E-20\t-1324868429\t7507508252608306355\t-90269248940323819\t3231555093127941541",
    "numeric\t123456789.123456789\t-1990724393\t-2236985051837893417\t6132057343271569029\t"
     "-4930741931914522185",
    "numeric\t-8.52877587949E+14\t1062604783\t5210080392385007599\t5792592816742157307\t"
     "-5574768830381172186",
    "numeric\t4.2E-12\t-293718831\t4422615974306264273\t1916190392292915044\t8095657415597060999",
    "numeric\t1.15658173392953941298063483E+40\t2073872804\t-7627018036152841820\t6912000292838909642\t"
     "5602914050902317276",
    "numeric\t-1.27709E+12\t815132341\t1733121202850229941\t-3171038030537609444\t-5672219244346236968",
    "numeric\t0.9\t511928306\t-2821163617351407630\t3800362802110839831\t-6367506826136699212",
    "numeric\t3326893.003819877\t-1704334975\t4726388792014530945\t-2528236055327210396\t"
     "-3528125479058399874",
    "numeric\t8.450E+23\t1684792425\t-1297813822380448663\t-1031404142152262104\t-1883674328974019358",
    "numeric\t4.925E+10\t1308306343\t7345484745758419879\t5766418671867951766\t8696866828230206928",
    "numeric\t-7.6E-33\t-1539785864\t7237391316697004920\t4117081451099389245\t-1240041249904869888",
    "numeric\t0.0111\t-1603037651\t3841781741395351085\t-880273174840672706\t-7018806762527388037",
    "numeric\t-1.7\t-1158429498\t-1479288532920711994\t3478395477212152711\t828192009461279720",
    "numeric\t2.9E+9\t-1249797151\t-7200870692877657119\t6310599933282892756\t4947845248774769111",
    "numeric\t4E+11\t1194348711\t2696035119892811943\t-6303142240611679929\t641279629510622329",
    "numeric\t5.7460871467492100E+20\t-915945270\t4457873532015593674\t5361164992902116561\t"
     "4240710528647108835",
    "numeric\t-1E+16\t1324868428\t-7507508252608306356\t90269248940323818\t-3231555093127941542",
    "numeric\t-0.00418160521020361412255860939\t1523977128\t4650101547476585384\t7448052166841474306\t"
     "-3245186592148807701",
};

/* tests/vectors/compat/postgres_arrays.tsv: int4[], int8[] and text[] (no
 * element, NULL elements, two dimensions, empty and non-ASCII texts). */
static const char *const pg_array_rows[] = {
    "int4[]\t[]\t1\t1\t1\t1",
    "int4[]\t[null]\t31\t31\t31\t31",
    "int4[]\t[[-1283005096, null], [1643189834, 434877978], [880972199, null]]\t-1328907565\t"
     "1149476505714850515\t1341191931338744972\t-1344913890232440701",
    "int4[]\t[-1805724849, 112842956, -80118343, 1074067302, -1675149520, 2006839154, 1141271342]\t"
     "-1661737703\t41931407566824729\t-5125686937848246206\t-1417370999940849812",
    "int4[]\t[[609735155], [-584544564]]\t-43280543\t-7327777685253679263\t-8547979272373336987\t"
     "-847612630156615059",
    "int8[]\t[null, null]\t961\t961\t961\t961",
    "int8[]\t[5485948239262227912, -3918706145724236717, 3293653039589400650, null, "
     "4848843869410033619]\t-1275277117\t4860552674438598851\t8994724925363314262\t-7256088944841799792",
    "int8[]\t[-3770334848711717253, null, 1456306985436331490, -2431862089138740368, "
     "-7676014155284403635, 7353363943485391208, 3178172254024807313, -3069296538542042031, "
     "4354797934488722217]\t1803008447\t8232842010562116031\t9115907615198889294\t3626918577292377294",
    "int8[]\t[-120005373697350680, 7309224041356437829, 1291270930606740400, 8195056309032286471, "
     "8380980362541579713, -1457705829151118244, 2709321747440399414, 2666944793169281988, "
     "8920075949741575256]\t182606034\t3220367715673987282\t4363521415838206550\t-8343201085793898430",
    "text[]\t[\"b\303\274c\303\251c\303\274ca'\", null, \"  b'c\303\274ccb\", \" \303\274'\303\274a'\", "
     "\"'b\"]\t1669179154\t-4949524746942437614\t-5914180257168258283\t8083512431544681752",
    "text[]\t[[\"'\303\251\303\274'\303\251b\303\274'\303\274\303\251\", \"cb\303\251\", \"\"]]\t"
     "4574910\t-6405834110119063874\t-2196175402025994781\t-9199979686176247741",
    "text[]\t[\"\", \" ac'\303\274 ' \", \" \303\251''b'\", \"a \303\274 \", "
     "\"''cbc'\303\274\303\251a\303\251\", \"\303\274b 'a\303\274'c\", \"'\", \"ba\303\251c\303\274 \"]\t"
     "-708844849\t-8508363397002173745\t-4735392063373753814\t2532353368986252777",
    "text[]\t[\"c\303\274\303\251'cb'aa\", \"c\303\251bc \303\251\"]\t1796786373\t-2900410246623606587\t"
     "-3211248459797731340\t5270202098661935288",
    "text[]\t[\"c'\303\251\303\251\303\251\", \"\303\251baa\", \"\303\274\", null]\t-1706450330\t"
     "8726234088941920870\t6562548356086804051\t-6778684003404599216",
};

/* tests/vectors/compat/postgres_composites.tsv: all fields NULL, zeros and
 * empty values, and NULLs in every field, the inner record's too. */
static const char *const pg_composite_rows[] = {
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[null, null, null, null, null, null, null]\t"
     "0\t0\t0\t0",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[0, \"\", \"2000-01-01\", \"0\", [], "
     "\"empty\", [null, null]]\t1652751046\t8444050132454013638\t-1643650869185745837\t8173438168795374705",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[-1, \"\\u00e9\\u00fc(\", \"2021-12-11\", "
     "null, [999848781648023973, 5755439171462275890], [-80, -78, \"()\"], [-6533549794146545225, null]]\t"
     "1713402876\t-7884233161035451396\t-1747094748963116193\t-5335209455797166836",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[-3, \"\", \"1968-11-09\", "
     "\"4682736344.26\", null, null, [-4046185314756736987, \"\\\\a('\"]]\t-556255006\t"
     "2773853723612952802\t6069941431033084107\t4345242076366998965",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[-5, \"c\\\\b,\\u00e9aaa\\\\\", "
     "\"2031-01-29\", \"-827789830550\", [null, -562353005693456898, -3122477640014766009], [80, 87, "
     "\"[)\"], [4206070197396348527, \" \"]]\t-22686011\t-3562967300981795131\t1802618402903527789\t"
     "-698500667159652669",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[1074099156, \"a\\u00e9\", \"2042-01-19\", "
     "null, [-5765071278396444247, -1561964218641789331, null], [-25, -23, \"(]\"], [null, \"','\"]]\t"
     "-1766713212\t638965834797160580\t4585297712801259198\t4969423236383323831",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[1388201044, \"\\\"c\\u00fca\", null, null, "
     "[null, 7660621932605585378, -1234387318083908136], [30, 38, \"[)\"], [2005306272915789245, null]]\t"
     "1602879476\t1169890436664918004\t3409034495050419077\t-2585929237998659834",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[-406629483, \"(\\\\\\u00e9\\u00e9\", "
     "\"2046-08-24\", null, [2666279971309784426], [-43, -38, \"[]\"], null]\t815277883\t"
     "6150774858135906107\t-189298115593562037\t2335833647511203112",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[892313839, null, \"1982-08-01\", "
     "\"31468330055.8\", [6006310267182225578], null, null]\t-694344206\t-1832646426885282318\t"
     "6418073304999967839\t8143744372149954233",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[null, \"((( \\\\b\", null, null, null, "
     "null, [4216556421949884681, null]]\t1818073044\t-4281959259876517932\t-7183020091528361977\t"
     "-8908229100018438208",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[-3, \"\\\\\\\\b \\\\c\\\\'\", "
     "\"2039-04-17\", \"66771188155.4\", [-7846800107474542461, -2011169354578570190, "
     "7950297066460802833], [30, 34, \"[]\"], [7462219399880871891, \")\\\\\\u00fc\"]]\t847058366\t"
     "-6397550143859780162\t1349811032065118805\t-6964332873722547522",
    "(int4,text,date,numeric,int8[],int4range,(int8,text))\t[-4, \"c\", null, \"19362620.4690\", "
     "[6590514123124841780], [3, 6, \"[]\"], [null, null]]\t242531287\t3472823754499079127\t"
     "5627907596259817738\t7307739199667284059",
};
/* clang-format on */

#define PG_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The rows of <dir>/compat/<name> (comments and the header left out) in
 * rows[0..*n), pointing into the returned buffer (free it); NULL when the
 * file cannot be read. */
static char *pg_read_rows(const char *dir, const char *name, const char **rows, size_t max, size_t *n)
{
    char path[1024], *buf, *p;
    FILE *fp;
    long size;
    *n = 0;
    if (strlen(dir) + strlen(name) + sizeof "/compat/" > sizeof path) return NULL;
    sprintf(path, "%s/compat/%s", dir, name);
    if ((fp = fopen(path, "rb")) == NULL) return NULL;
    if (fseek(fp, 0, SEEK_END) != 0 || (size = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0 ||
        (buf = (char *)malloc((size_t)size + 1)) == NULL) {
        fclose(fp);
        return NULL;
    }
    if (fread(buf, 1, (size_t)size, fp) != (size_t)size) {
        fclose(fp);
        free(buf);
        return NULL;
    }
    fclose(fp);
    buf[size] = '\0';
    for (p = buf; *p;) {
        char *line = p, *nl = strchr(p, '\n');
        size_t len;
        if (nl) {
            *nl = '\0';
            p = nl + 1;
        } else {
            p += strlen(p);
        }
        len = strlen(line);
        if (len > 0 && line[len - 1] == '\r') line[len - 1] = '\0';
        if (line[0] == '#' || line[0] == '\0' || strncmp(line, "type\t", 5) == 0) continue;
        if (*n < max) rows[(*n)++] = line;
    }
    return buf;
}

/* The server's canonical text of a row of postgres_multiranges_adjacent.tsv:
 * its seventh column (NULL when it has none). */
static const char *pg_seventh(const char *row)
{
    int tabs = 0;
    for (; *row; row++)
        if (*row == '\t' && ++tabs == 6) return row + 1;
    return NULL;
}

/* Every row of the six files, not only the cases above (the arrays'
 * bool[] and interval[] rows left out): read from the vectors directory the
 * program is given; only postgres_multiranges_adjacent.tsv holds the
 * server's canonical text to compare the canonical forms with. */
static void test_pg_files(const char *dir)
{
    static const char *const names[] = {"postgres_ranges.tsv",     "postgres_multiranges.tsv",
                                        "postgres_numeric.tsv",    "postgres_arrays.tsv",
                                        "postgres_composites.tsv", "postgres_multiranges_adjacent.tsv"};
    static const char *rows[PG_MAXR];
    static pg_case cases[PG_MAXR];
    size_t f, i, n;
    for (f = 0; f < PG_COUNT(names); f++) {
        char *buf = dir ? pg_read_rows(dir, names[f], rows, PG_MAXR, &n) : NULL;
        CHECK(buf != NULL && n > 0, "cannot read %s/compat/%s", dir ? dir : "(no vectors directory)",
              names[f]);
        if (buf == NULL) continue;
        for (i = 0; i < n; i++) {
            cases[i].row = rows[i];
            cases[i].server = f == 5 ? pg_seventh(rows[i]) : NULL;
            if (f == 5) CHECK(cases[i].server != NULL, "%s: row %zu has no canonical text", names[f], i);
        }
        if (f == 0) test_pg_ranges(cases, n);
        if (f == 1) test_pg_multiranges(cases, n);
        if (f == 2) test_pg_numeric(rows, n);
        if (f == 3) test_pg_arrays(rows, n);
        if (f == 4) test_pg_composites(rows, n);
        if (f == 5) test_pg_multiranges(cases, n);
        free(buf);
    }
}

static void test_pg_kernels(const char *vectors_dir)
{
    test_pg_ranges(pg_range_cases, PG_COUNT(pg_range_cases));
    test_pg_range_edges(pg_range_edges, PG_COUNT(pg_range_edges));
    test_pg_multiranges(pg_multirange_cases, PG_COUNT(pg_multirange_cases));
    test_pg_multirange_edges(pg_multirange_edges, PG_COUNT(pg_multirange_edges));
    test_pg_numeric(pg_numeric_rows, PG_COUNT(pg_numeric_rows));
    test_pg_numeric_refused();
    test_pg_arrays(pg_array_rows, PG_COUNT(pg_array_rows));
    test_pg_composites(pg_composite_rows, PG_COUNT(pg_composite_rows));
    test_pg_files(vectors_dir);
}

int main(int argc, char **argv)
{
    test_crc16();
    test_redis_tags();
    test_md5_vectors();
    test_cassandra_ints();
    test_cassandra_ring();
    test_pg_kernels(argc > 1 ? argv[1] : NULL);
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
