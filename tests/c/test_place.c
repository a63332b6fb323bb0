/*
 * Plain-C tests of the placement kernels (sh_place.c), no Python involved:
 * published jump values, exact fast modulo, batch == scalar for every
 * kernel, the indexed ring == a linear search, Maglev fills every slot.
 * Usage: test_place <vectors dir>   (the directory is not needed here)
 */
#include <stdio.h>
#include <stdlib.h>

#include "sh_cpu.h"
#include "sh_place.h"

#include "sh_check.h"

/* The NEON jump kernel exists only in builds that have it (sh_cpu.h:
 * SH_ARM_NEON); elsewhere its slot runs the portable kernel again, so that
 * every platform prints the same number of checks. */
#ifdef SH_ARM_NEON
#  define JUMP_NEON_OR_SCALAR      sh_jump_batch_neon
#  define JUMP_NEON_OR_SCALAR_NAME "sh_jump_batch_neon"
#else
#  define JUMP_NEON_OR_SCALAR      sh_jump_batch_scalar
#  define JUMP_NEON_OR_SCALAR_NAME "sh_jump_batch_scalar (no NEON kernel in this build)"
#endif

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void)
{
    rng_state = rng_state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return sh_mix64(rng_state);
}

static void test_jump(void)
{
    /* Guava Hashing.consistentHash(i, 100), i = 0..19. */
    static const int32_t guava[20] = {0,  55, 62, 8,  45, 59, 86, 97, 82, 59,
                                      73, 37, 17, 56, 86, 21, 90, 37, 38, 83};
    uint64_t keys[1000];
    int32_t out[1000];
    int i, n;
    for (i = 0; i < 20; i++) CHECK(sh_jump((uint64_t)i, 100) == guava[i], "jump(%d, 100)", i);
    for (i = 0; i < 1000; i++) keys[i] = rnd();
    for (n = 1; n < 3000000; n = n * 7 + 1) {
        int bad = 0;
        size_t m;
        for (m = 0; m < 40; m++) { /* every tail length of the lane loop */
            sh_jump_batch(keys, m, n, out);
            for (i = 0; i < (int)m; i++) bad += out[i] != sh_jump(keys[i], n);
        }
        sh_jump_batch(keys, 1000, n, out);
        for (i = 0; i < 1000; i++) bad += out[i] != sh_jump(keys[i], n) || out[i] < 0 || out[i] >= n;
        CHECK(bad == 0, "jump batch != scalar for %d buckets (%d mismatches)", n, bad);
    }
    /* No bucket at all: the reference loop runs no step and answers -1, for
     * every kernel and batch length (the Python layer refuses such counts). */
    for (n = -1; n <= 0; n++) {
        int bad = 0;
        size_t m;
        for (m = 0; m < 1000; m = m * 3 + 1) {
            sh_jump_batch(keys, m, n, out);
            for (i = 0; i < (int)m; i++) bad += out[i] != -1;
            sh_jump_batch_scalar(keys, m, n, out);
            for (i = 0; i < (int)m; i++) bad += out[i] != -1;
            sh_jump_batch_avx2(keys, m, n, out);
            for (i = 0; i < (int)m; i++) bad += out[i] != -1;
            JUMP_NEON_OR_SCALAR(keys, m, n, out);
            for (i = 0; i < (int)m; i++) bad += out[i] != -1;
        }
        bad += sh_jump(keys[0], n) != -1 || sh_jump_reference(keys[0], n) != -1;
        CHECK(bad == 0, "jump with %d buckets answers -1 (%d mismatches)", n, bad);
    }
}

/* The batch kernels (the one sh_jump_batch picks, the portable one and the
 * AVX2 one, which is the portable one where this build or CPU lacks AVX2)
 * and the scalar sh_jump against the paper's loop (sh_jump_reference), key
 * by key.  Every bucket count is one CHECK per kernel (and one for sh_jump),
 * so the printed counts are the same on every platform; the number of keys
 * is 2^20 where the AVX2 kernel runs (2^16 elsewhere: emulated runs are
 * slow, and there the kernels under test are the portable one). */
static void test_jump_kernels(void)
{
    static const int32_t nbs[] = {1, 2, 3, 7, 100, 1000, 65536, 2147483647};
    void (*const kernels[4])(const uint64_t *, size_t, int32_t, int32_t *) = {
        sh_jump_batch, sh_jump_batch_scalar, sh_jump_batch_avx2, JUMP_NEON_OR_SCALAR};
    static const char *const names[4] = {"sh_jump_batch", "sh_jump_batch_scalar", "sh_jump_batch_avx2",
                                         JUMP_NEON_OR_SCALAR_NAME};
    const size_t nkeys = sh_jump_avx2_available() ? (size_t)1 << 20 : (size_t)1 << 16;
    uint64_t *keys = (uint64_t *)malloc(nkeys * sizeof *keys);
    int32_t *ref = (int32_t *)malloc(nkeys * sizeof *ref);
    int32_t *out = (int32_t *)malloc((nkeys + 1) * sizeof *out);
    size_t i, n, b;
    int kern;
    if (!keys || !ref || !out) {
        CHECK(0, "out of memory");
        free(keys);
        free(ref);
        free(out);
        return;
    }
    for (i = 0; i < nkeys; i++) keys[i] = rnd();
    /* extreme keys at the ends and inside */
    keys[0] = 0;
    keys[1] = UINT64_MAX;
    keys[777] = 0;
    keys[778] = UINT64_MAX;
    keys[nkeys - 2] = UINT64_MAX;
    keys[nkeys - 1] = 0;
    {
        /* keys whose first step lands exactly on the bucket count: for
         * n = 2^e, (k * M + 1) >> 33 = 2^(31 - e) - 1 gives d = 2^31 / n and
         * p = n, where the key must stop (p >= n, not p > n) */
        const uint64_t mult = UINT64_C(2862933555777941757);
        uint64_t inv = mult;
        int e, t;
        for (t = 0; t < 6; t++) inv *= 2 - mult * inv; /* mult^-1 mod 2^64 */
        for (e = 0; e <= 16; e++) {
            uint64_t k1 = ((((uint64_t)1 << (31 - e)) - 1) << 33) | (rnd() >> 31);
            keys[100 + (size_t)e] = (k1 - 1) * inv;
            keys[nkeys - 40 + (size_t)e] = (k1 - 1) * inv;
        }
    }
    for (b = 0; b < sizeof nbs / sizeof nbs[0]; b++) {
        const int32_t nb = nbs[b];
        long sbad = 0;
        for (i = 0; i < nkeys; i++) {
            ref[i] = sh_jump_reference(keys[i], nb);
            sbad += sh_jump(keys[i], nb) != ref[i]; /* the scalar fast path, if any */
        }
        CHECK(sbad == 0, "sh_jump != sh_jump_reference for %ld buckets (%ld mismatches)", (long)nb, sbad);
        for (kern = 0; kern < 4; kern++) {
            long bad = 0;
            /* the whole array; every short length (each tail path of the
             * lanes and streams); lengths around the SIMD threshold and the
             * buffer size, at odd offsets */
            out[nkeys] = 0x5a5a5a5a;
            kernels[kern](keys, nkeys, nb, out);
            for (i = 0; i < nkeys; i++) bad += out[i] != ref[i];
            bad += out[nkeys] != 0x5a5a5a5a;
            for (n = 0; n <= 600; n++) {
                const size_t off = (n * 37) % 1000;
                out[n] = 0x5a5a5a5a;
                kernels[kern](keys + off, n, nb, out);
                for (i = 0; i < n; i++) bad += out[i] != ref[off + i];
                bad += out[n] != 0x5a5a5a5a;
            }
            for (n = 1000; n <= 9000; n += 1999) {
                kernels[kern](keys + nkeys - n, n, nb, out);
                for (i = 0; i < n; i++) bad += out[i] != ref[nkeys - n + i];
            }
            CHECK(bad == 0, "%s != sh_jump_reference for %ld buckets (%ld mismatches)", names[kern], (long)nb,
                  bad);
        }
    }
    free(keys);
    free(ref);
    free(out);
}

static void test_fastmod(void)
{
    static const uint64_t ds[] = {1,
                                  2,
                                  3,
                                  7,
                                  10,
                                  97,
                                  1000,
                                  4096,
                                  65537,
                                  1000003,
                                  UINT64_C(4294967295),
                                  UINT64_C(4294967296),
                                  UINT64_C(123456789012345),
                                  UINT64_C(0x8000000000000001),
                                  UINT64_C(0xFFFFFFFFFFFFFFFE),
                                  UINT64_C(0xFFFFFFFFFFFFFFFF)};
    size_t k;
    for (k = 0; k < sizeof ds / sizeof ds[0]; k++) {
        sh_fastmod f;
        long bad = 0;
        int i;
        sh_fastmod_init(&f, ds[k]);
        for (i = 0; i < 200000; i++) {
            uint64_t a = i < 1000 ? (uint64_t)i : i < 2000 ? UINT64_MAX - (uint64_t)(i - 1000) : rnd();
            bad += sh_fastmod_u64(a, &f) != a % ds[k];
        }
        CHECK(bad == 0, "fastmod by %llu: %ld mismatches", (unsigned long long)ds[k], bad);
    }
}

static int32_t ring_linear(const uint64_t *t, const int32_t *o, size_t n, uint64_t h)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (t[i] >= h) return o[i];
    return o[0];
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_ring(unsigned width, size_t n, int clustered)
{
    uint64_t *t = malloc((n + 1) * sizeof *t), probe;
    int32_t *o = malloc((n + 1) * sizeof *o), out[64];
    unsigned bits = sh_ring_index_bits(n, width);
    uint32_t *idx = malloc(((size_t)1 << bits) * sizeof *idx);
    uint64_t mask = width == 64 ? UINT64_MAX : (((uint64_t)1 << width) - 1);
    uint64_t hs[64];
    sh_ring r;
    size_t i, m;
    long bad = 0;
    for (i = 0; i < n; i++) t[i] = clustered ? (rnd() & 0xFFFF) : (rnd() & mask);
    qsort(t, n, sizeof *t, cmp_u64);
    for (i = m = 0; i < n; i++)
        if (m == 0 || t[i] != t[m - 1]) t[m++] = t[i];
    n = m;
    for (i = 0; i < n; i++) o[i] = (int32_t)(rnd() % 13);
    t[n] = UINT64_MAX;
    o[n] = o[0];
    sh_ring_build_index(t, o, n, width - bits, bits, idx);
    r.tokens = t;
    r.owners = o;
    r.ntokens = n;
    r.index = idx;
    r.index_last = ((uint64_t)1 << bits) - 1;
    r.shift = width - bits;
    for (i = 0; i < 20000; i++) {
        switch (i % 4) {
        case 0: probe = rnd() & mask; break;
        case 1: probe = t[rnd() % n]; break;
        case 2: probe = t[rnd() % n] + 1; break;
        default: probe = rnd(); break; /* beyond the ring's width */
        }
        bad += sh_ring_lookup(&r, probe) != ring_linear(t, o, n, probe);
    }
    for (i = 0; i < 64; i++) hs[i] = i % 2 ? rnd() & mask : t[i % n];
    sh_ring_batch(&r, hs, 64, out);
    for (i = 0; i < 64; i++) bad += out[i] != ring_linear(t, o, n, hs[i]);
    CHECK(bad == 0, "ring width %u, %zu tokens%s: %ld mismatches", width, n, clustered ? " (clustered)" : "",
          bad);
    free(t);
    free(o);
    free(idx);
}

static void test_maglev_rendezvous_overrides(void)
{
    uint64_t ids[5], seeds[5], pos[5], hs[500], oh[4] = {3, 10, 500, UINT64_MAX};
    double credit[5], w[5] = {1.0, 0.5, 0.25, 1.0, 0.75}, weights[5] = {2, 1, 1, 3, 0.5};
    int32_t table[1009], out[500], os[4] = {4, 3, 2, 1};
    int counts[5] = {0, 0, 0, 0, 0}, i, empty = 0;
    for (i = 0; i < 5; i++) {
        ids[i] = rnd();
        seeds[i] = sh_mix64(ids[i]);
    }
    CHECK(sh_maglev_populate(ids, NULL, 5, 1009, table, pos, credit) == 0, "maglev populate");
    for (i = 0; i < 1009; i++) {
        if (table[i] < 0 || table[i] > 4)
            empty++;
        else
            counts[table[i]]++;
    }
    CHECK(empty == 0, "maglev left %d slots empty", empty);
    for (i = 0; i < 5; i++) CHECK(counts[i] == 201 || counts[i] == 202, "maglev count %d", counts[i]);
    CHECK(sh_maglev_populate(ids, w, 5, 1009, table, pos, credit) == 0, "weighted maglev");
    CHECK(sh_maglev_populate(ids, NULL, 5, 3, table, pos, credit) == -1, "maglev m < n is an error");
    for (i = 0; i < 500; i++) hs[i] = i < 10 ? (uint64_t)i : rnd();
    sh_rendezvous_batch(hs, 500, seeds, NULL, 5, out);
    for (i = 0; i < 500; i++) CHECK(out[i] == sh_rendezvous(hs[i], seeds, NULL, 5), "rendezvous %d", i);
    sh_rendezvous_batch(hs, 500, seeds, weights, 5, out);
    for (i = 0; i < 500; i++) CHECK(out[i] == sh_rendezvous(hs[i], seeds, weights, 5), "weighted %d", i);
    for (i = 0; i < 500; i++) out[i] = -7;
    hs[0] = 3;
    hs[1] = 4;
    hs[2] = UINT64_MAX;
    sh_override_batch(oh, os, 4, hs, 500, out);
    CHECK(out[0] == 4 && out[1] == -7 && out[2] == 1, "override batch");
    CHECK(sh_override_find(oh, os, 4, 500) == 2 && sh_override_find(oh, os, 4, 501) == -1, "override find");
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    /* choose the SIMD kernels this CPU runs (cpuid/xgetbv on x86-64; NEON
     * on aarch64 needs no check), as the Python module does at import */
    sh_place_init();
    test_jump();
    test_jump_kernels();
    test_fastmod();
    test_ring(64, 25600, 0);
    test_ring(64, 300, 1);
    test_ring(32, 5000, 0);
    test_ring(64, 1, 0);
    test_ring(20, 3, 0);
    test_maglev_rendezvous_overrides();
    /* which vector jump kernel test_jump_kernels ran (sh_jump_batch_avx2 is the
     * portable kernel where the CPU lacks AVX2): a target fact, compared with
     * the CPU's flags by tests/c/test_c_core.py */
#ifdef SH_ARM_NEON
    printf("core: vector kernels run: jump-neon\n");
#else
    printf("core: vector kernels run: %s\n", sh_jump_avx2_available() ? "jump-avx2" : "none");
#endif
    printf("test_place: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
