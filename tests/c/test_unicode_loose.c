/*
 * Plain-C tests of the unicode_loose folding kernel (sh_unicode_loose.h) on a
 * small hand-made table, no Python involved: explicit and ignorable weights,
 * a contraction taken contiguously and across a skipped lower-class mark (the
 * mark weighed after it), combining elements put in canonical order, Hangul
 * as jamo, the implicit weights (CJK, other ideographs, the rest) with their
 * 3-byte encoding, trailing spaces, every input width, the UTF-8 and
 * surrogate errors, and the keyspace ids of the batch entry point against
 * MD5 / XXH64 of the folded keys.  (The real tables are held to the Python
 * rules by tests/compat/test_vitess_unicode_loose_native.py.)
 * Usage: test_unicode_loose <vectors dir>   (the directory is not needed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sh_hash.h"
#include "sh_md5.h"
#include "sh_unicode_loose.h"

#include "sh_check.h"

static uint32_t pool[512];
static size_t npool;
static uint32_t ecp[128], eoff[128];
static uint8_t ecnt[128];
static size_t nexp;

/* one explicit entry (code points must come in ascending order): n (primary, class) pairs */
static void add_explicit(uint32_t cp, size_t n, const uint32_t *pc)
{
    size_t i;
    ecp[nexp] = cp;
    eoff[nexp] = (uint32_t)npool;
    ecnt[nexp++] = (uint8_t)n;
    for (i = 0; i < n; i++) pool[npool++] = pc[2 * i] << 8 | pc[2 * i + 1];
}

static void one(uint32_t cp, uint32_t primary, uint32_t ccc)
{
    uint32_t pc[2];
    pc[0] = primary;
    pc[1] = ccc;
    add_explicit(cp, 1, pc);
}

static sh_uloose *make_tables(void)
{
    static const uint32_t e_acute[] = {0x1003, 0, 0, 230};
    static const uint32_t fdfa[] = {0x2000, 0, 0x2001, 0, 0x2002, 0, 0x2003, 0, 0x2004, 0};
    static const uint32_t ideo[] = {0x3400, 0x4DBF, 0x4E00, 0x9FFF};
    static const uint32_t ccc_cp[] = {0x301, 0x316, 0x363};
    static const uint8_t ccc_lead[] = {230, 220, 230}, ccc_trail[] = {230, 220, 230};
    uint32_t con[2 * SH_ULOOSE_CON_COLS];
    uint32_t j;
    one(0x00, 0, 0); /* ignorable */
    one(0x20, 0x209, 0);
    one(0x61, 0x1000, 0);
    one(0x62, 0x1001, 0);
    one(0x6C, 0x1002, 0); /* a contraction starter */
    one(0xB7, 0x300, 0);
    add_explicit(0xE9, 2, e_acute);
    one(0x301, 0, 230);
    one(0x316, 0x500, 220);
    one(0x363, 0x600, 230);
    for (j = 0x1100; j <= 0x1112; j++) one(j, 0x3000 + j - 0x1100, 0);
    for (j = 0x1161; j <= 0x1175; j++) one(j, 0x3100 + j - 0x1161, 0);
    for (j = 0x11A8; j <= 0x11C2; j++) one(j, 0x3200 + j - 0x11A8, 0);
    add_explicit(0xFDFA, 5, fdfa);
    /* l + U+00B7 -> 0x1100; l + U+0301 -> 0x1101 */
    memset(con, 0, sizeof con);
    pool[npool] = 0x1100u << 8;
    pool[npool + 1] = 0x1101u << 8;
    con[0] = 0x6C;
    con[1] = 1;
    con[2] = 0xB7;
    con[2 + SH_ULOOSE_MAX_SUFFIX] = (uint32_t)npool;
    con[3 + SH_ULOOSE_MAX_SUFFIX] = 1;
    con[SH_ULOOSE_CON_COLS] = 0x6C;
    con[SH_ULOOSE_CON_COLS + 1] = 1;
    con[SH_ULOOSE_CON_COLS + 2] = 0x301;
    con[SH_ULOOSE_CON_COLS + 2 + SH_ULOOSE_MAX_SUFFIX] = (uint32_t)npool + 1;
    con[SH_ULOOSE_CON_COLS + 3 + SH_ULOOSE_MAX_SUFFIX] = 1;
    npool += 2;
    return sh_uloose_new(pool, npool, ecp, eoff, ecnt, nexp, ideo, 2, ccc_cp, ccc_lead, ccc_trail, 3, con, 2,
                         30);
}

static sh_uloose_buf buf;

/* the key of data (kind as sh_uloose_fold) as hex, or "BAD" / "NOMEM" */
static const char *fold_hex(const sh_uloose *t, const void *data, size_t len, int kind)
{
    static char out[2 * 8192 + 1];
    const uint8_t *key;
    ptrdiff_t n = sh_uloose_fold(t, data, len, kind, &buf, &key), i;
    if (n == SH_ULOOSE_BAD_INPUT) return "BAD";
    if (n < 0) return "NOMEM";
    if (n > 8192) return "TOO LONG";
    for (i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", key[i]);
    out[2 * n] = 0;
    return out;
}

static void check_utf8(const sh_uloose *t, const char *s, const char *want)
{
    const char *got = fold_hex(t, s, strlen(s), 0);
    CHECK(strcmp(got, want) == 0, "UTF-8 key of \"%s\": got %s, want %s", s, got, want);
}

static void check_ucs4(const sh_uloose *t, const uint32_t *s, size_t n, const char *want)
{
    const char *got = fold_hex(t, s, n, 4);
    CHECK(strcmp(got, want) == 0, "UCS-4 key (first U+%04X, %u units): got %.80s (%u), want %.80s (%u)",
          n ? (unsigned)s[0] : 0, (unsigned)n, got, (unsigned)strlen(got), want, (unsigned)strlen(want));
}

int main(int argc, char **argv)
{
    sh_uloose *t;
    (void)argc;
    (void)argv;
    t = make_tables();
    CHECK(t != NULL, "the tables build");
    if (t == NULL) return 1;
    CHECK(sh_uloose_max_elems(t) == 5, "max elements %u, want 5 (U+FDFA)", (unsigned)sh_uloose_max_elems(t));

    /* explicit weights, ignorables, trailing (not leading) spaces: the ASCII path */
    check_utf8(t, "ab", "10001001");
    check_utf8(t, "ab   ", "10001001");
    check_utf8(t, " a", "02091000");
    check_utf8(t, "   ", "");
    check_utf8(t, "", "");
    check_utf8(t, "la", "10021000");
    {
        const char nul[] = {'a', 0, 'b'};
        const char *got = fold_hex(t, nul, 3, 0);
        CHECK(strcmp(got, "10001001") == 0, "a NUL weighs nothing: %s", got);
    }
    /* the same ASCII, as 1-, 2- and 4-byte code units */
    {
        const uint8_t u1[] = {'a', 'b', ' '};
        const uint16_t u2[] = {'a', 'b', ' '};
        const uint32_t u4[] = {'a', 'b', ' '};
        CHECK(strcmp(fold_hex(t, u1, 3, 1), "10001001") == 0, "UCS-1");
        CHECK(strcmp(fold_hex(t, u2, 3, 2), "10001001") == 0, "UCS-2");
        CHECK(strcmp(fold_hex(t, u4, 3, 4), "10001001") == 0, "UCS-4");
    }
    /* a precomposed letter: its mark element weighs nothing at primary strength */
    check_utf8(t,
               "\xc3\xa9"
               "a",
               "10031000");
    /* contractions: contiguous, then across a lower-class mark (weighed after it) */
    check_utf8(t, "l\xc2\xb7", "1100");
    check_utf8(t, "l\xcc\x81", "1101");
    check_utf8(t, "l\xcc\x96\xcc\x81", "11010500");
    /* a higher-class mark blocks the lower-class continuation: no contraction */
    check_utf8(t, "l\xcc\x81\xcc\x96", "11010500");
    check_utf8(t, "l\xcd\xa3\xcc\x81", "10020600");
    {
        const uint8_t u1[] = {'l', 0xB7};
        CHECK(strcmp(fold_hex(t, u1, 2, 1), "1100") == 0, "UCS-1 contraction");
    }
    /* combining elements out of canonical order are put in order */
    check_utf8(t, "a\xcd\xa3\xcc\x96", "100005000600");
    check_utf8(t, "a\xcc\x96\xcd\xa3", "100005000600");
    /* Hangul as jamo (LV and LVT), expansions */
    check_utf8(t, "\xea\xb0\x80", "30003100");
    check_utf8(t, "\xea\xb0\x81", "300031003200");
    check_utf8(t, "\xef\xb7\xba", "20002001200220032004");
    /* implicit weights: CJK unified + 0x10000, other ideographs + 0x20000, the rest + 0x50000 */
    check_utf8(t, "\xe4\xb8\x80", "814e00");
    check_utf8(t, "\xe3\x90\x80", "823400");
    check_utf8(t, "\xc4\x80", "850100");
    {
        const uint32_t s[] = {0x10FFFD, 0x4E00, 0x20, 0x20};
        check_ucs4(t, s, 4, "95fffd814e00");
    }
    /* errors: overlong, surrogate, above U+10FFFF, truncated, stray continuation */
    check_utf8(t, "\xc0\xaf", "BAD");
    check_utf8(t, "\xed\xa0\x80", "BAD");
    check_utf8(t, "\xf4\x90\x80\x80", "BAD");
    check_utf8(t, "a\xe4\xb8", "BAD");
    check_utf8(t, "\x80", "BAD");
    check_utf8(t, "\xf4\x8f\xbf\xbd", "95fffd");
    {
        const uint16_t s2[] = {'a', 0xD800};
        const uint32_t s4[] = {0xDFFF};
        CHECK(strcmp(fold_hex(t, s2, 2, 2), "BAD") == 0, "UCS-2 lone surrogate");
        CHECK(strcmp(fold_hex(t, s4, 1, 4), "BAD") == 0, "UCS-4 lone surrogate");
    }
    /* a long run of marks: the buffers grow */
    {
        static uint32_t s[3001];
        char want[2 * 2 * 3001 + 1];
        size_t i;
        s[0] = 'a';
        strcpy(want, "1000");
        for (i = 1; i < 3001; i++) {
            s[i] = 0x316;
            strcpy(want + 4 * i, "0500");
        }
        check_ucs4(t, s, 3001, want);
    }
    /* the batch entry point: keyspace ids of the folded keys; the first bad key's index */
    {
        const char *keys[] = {"ab", "l\xc2\xb7", "", "\xe4\xb8\x80 "};
        const uint8_t folded[][3] = {{0x10, 0x00}, {0x11, 0x00}, {0}, {0x81, 0x4e, 0x00}};
        const size_t flen[] = {4, 2, 0, 3};
        const void *ptrs[5];
        int64_t lens[5];
        uint8_t kinds[5] = {0, 0, 0, 0, 0}, dig[16];
        uint64_t out[5];
        uint8_t ab[4] = {0x10, 0x00, 0x10, 0x01};
        size_t i;
        for (i = 0; i < 4; i++) {
            ptrs[i] = keys[i];
            lens[i] = (int64_t)strlen(keys[i]);
        }
        CHECK(sh_uloose_ksids(t, ptrs, lens, kinds, 4, 1, out) == -1, "md5 batch ok");
        for (i = 0; i < 4; i++) {
            sh_md5(i == 0 ? ab : folded[i], flen[i], dig);
            CHECK(out[i] == sh_read64be(dig), "md5 keyspace id %u", (unsigned)i);
        }
        CHECK(sh_uloose_ksids(t, ptrs, lens, kinds, 4, 0, out) == -1, "xxh64 batch ok");
        for (i = 0; i < 4; i++)
            CHECK(out[i] == sh_swap64(sh_xxh64(i == 0 ? ab : folded[i], flen[i], 0)), "xxh64 keyspace id %u",
                  (unsigned)i);
        ptrs[4] = "\xff";
        lens[4] = 1;
        ptrs[2] = "\xc3";
        lens[2] = 1;
        CHECK(sh_uloose_ksids(t, ptrs, lens, kinds, 5, 0, out) == 2, "the first bad key is reported");
    }
    sh_uloose_buf_free(&buf);
    sh_uloose_free(t);
    printf("test_unicode_loose: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
