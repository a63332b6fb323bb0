/*
 * Plain-C tests of the placement strategies under _core/place/ (MementoHash,
 * bounded loads, multi-probe, replica lists), no Python involved: known
 * values (by hand, or from the pure-Python references in
 * shardhash._reference), batch == scalar, and the properties each strategy
 * promises.  Build: every core .c file plus those of _core/place/, with -I for both
 * directories.
 * Usage: test_strategies [vectors dir]   (the directory is not needed here)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sh_bounded.h"
#include "sh_memento.h"
#include "sh_multiprobe.h"
#include "sh_replicas.h"

#include "sh_check.h"

static uint64_t rng_state = UINT64_C(0x243f6a8885a308d3);
static uint64_t rnd(void)
{
    rng_state = rng_state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return sh_mix64(rng_state);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* n distinct sorted random tokens, owners[i] = i (one token per shard,
 * owners then relabelled by the token's rank: shard i owns tokens[i]). */
static void random_tokens(uint64_t *tokens, int32_t *owners, size_t n)
{
    size_t i;
    int again = 1;
    while (again) {
        again = 0;
        for (i = 0; i < n; i++) tokens[i] = rnd();
        qsort(tokens, n, sizeof *tokens, cmp_u64);
        for (i = 1; i < n; i++) again |= tokens[i] == tokens[i - 1];
    }
    for (i = 0; i < n; i++) owners[i] = (int32_t)i;
}

/* ------------------------------------------------------------------------ */
/* MementoHash                                                               */

#define MEM_KEYS 1000000

static void test_memento(void)
{
    /* shardhash._reference.memento: Memento(10), remove 3, 7, 0; h = 0..11 */
    static const int32_t known[12] = {8, 6, 6, 8, 1, 4, 9, 2, 4, 1, 6, 5};
    int32_t rep[128], prev[128], map[128];
    sh_memento_state st;
    sh_memento m;
    uint64_t *hs = malloc(MEM_KEYS * sizeof *hs);
    int32_t *a = malloc(MEM_KEYS * sizeof *a), *b = malloc(MEM_KEYS * sizeof *b);
    int32_t *c = malloc(MEM_KEYS * sizeof *c);
    long bad, moved, on;
    size_t i;
    int k, n;
    if (!hs || !a || !b || !c) {
        CHECK(0, "out of memory");
        return;
    }
    for (i = 0; i < MEM_KEYS; i++) hs[i] = rnd();

    /* no removal: exactly jump, scalar and batch, for several sizes */
    for (n = 1; n <= 1000; n = n * 3 + 1) {
        CHECK(sh_memento_init(&st, rep, prev, 128, n < 128 ? n : 127) == 0, "init %d", n);
        m = sh_memento_view(&st);
        sh_memento_batch(&m, hs, MEM_KEYS, NULL, a);
        sh_jump_batch(hs, MEM_KEYS, m.n, b);
        bad = 0;
        for (i = 0; i < MEM_KEYS; i++) bad += a[i] != b[i];
        for (i = 0; i < 20000; i++) bad += sh_memento_bucket(&m, hs[i]) != sh_jump_reference(hs[i], m.n);
        CHECK(bad == 0, "memento without removals != jump for n=%d (%ld)", m.n, bad);
    }

    /* known values */
    sh_memento_init(&st, rep, prev, 128, 10);
    CHECK(sh_memento_remove(&st, 3) == 0 && sh_memento_remove(&st, 7) == 0 && sh_memento_remove(&st, 0) == 0,
          "remove 3, 7, 0");
    m = sh_memento_view(&st);
    for (k = 0; k < 12; k++)
        CHECK(sh_memento_bucket(&m, (uint64_t)k) == known[k], "memento known h=%d: %d", k,
              sh_memento_bucket(&m, (uint64_t)k));
    CHECK(sh_memento_remove(&st, 3) == -1, "removing a removed bucket is refused");
    CHECK(sh_memento_remove(&st, 10) == -1 && sh_memento_remove(&st, -1) == -1, "range");

    /* removing a middle bucket of 100 moves exactly its keys */
    sh_memento_init(&st, rep, prev, 128, 100);
    m = sh_memento_view(&st);
    sh_memento_batch(&m, hs, MEM_KEYS, NULL, a);
    CHECK(sh_memento_remove(&st, 50) == 0, "remove 50");
    m = sh_memento_view(&st);
    sh_memento_batch(&m, hs, MEM_KEYS, NULL, b);
    bad = moved = on = 0;
    for (i = 0; i < MEM_KEYS; i++) {
        on += a[i] == 50;
        moved += a[i] != b[i];
        bad += (a[i] != 50 && a[i] != b[i]) || b[i] == 50;
        bad += sh_memento_bucket(&m, hs[i]) != b[i];
        bad += sh_memento_resolve_from(&m, sh_jump(hs[i], m.n), hs[i]) != b[i];
    }
    CHECK(bad == 0 && moved == on, "remove 50 of 100: %ld bad, moved %ld of %ld", bad, moved, on);

    /* a random sequence of removals and restores: each removal moves only
     * the removed bucket's keys, each restore gives the earlier answers back,
     * and the load stays balanced */
    sh_memento_init(&st, rep, prev, 128, 60);
    m = sh_memento_view(&st);
    sh_memento_batch(&m, hs, MEM_KEYS, NULL, a);
    for (k = 0; k < 40; k++) {
        int32_t victim;
        long count[128] = {0}, mx = 0;
        int working = 0;
        do victim = (int32_t)(rnd() % (uint64_t)st.n);
        while (st.replacer[victim] >= 0);
        CHECK(sh_memento_remove(&st, victim) == 0, "remove %d", victim);
        m = sh_memento_view(&st);
        sh_memento_batch(&m, hs, 200000, NULL, b);
        bad = 0;
        for (i = 0; i < 200000; i++) {
            bad += (a[i] != victim && a[i] != b[i]) || b[i] == victim || b[i] < 0 || b[i] >= st.n ||
                   st.replacer[b[i]] >= 0;
            count[b[i]]++;
        }
        CHECK(bad == 0, "step %d: removing %d moved other keys (%ld)", k, victim, bad);
        for (n = 0; n < st.n; n++) {
            if (st.replacer[n] < 0) working++;
            if (count[n] > mx) mx = count[n];
        }
        CHECK((double)mx / (200000.0 / working) < 1.12, "step %d: max/mean %.3f", k,
              (double)mx / (200000.0 / working));
        if (k % 7 == 6) { /* restore the last removal: the earlier answers come back */
            CHECK(sh_memento_restore(&st) == victim, "restore %d", victim);
            m = sh_memento_view(&st);
            sh_memento_batch(&m, hs, 200000, NULL, c);
            bad = 0;
            for (i = 0; i < 200000; i++) bad += c[i] != a[i];
            CHECK(bad == 0, "restore %d differs on %ld keys", victim, bad);
        } else {
            memcpy(a, b, 200000 * sizeof *a);
        }
    }
    /* the bucket -> shard map */
    for (k = 0; k < 128; k++) map[k] = k < st.n && st.replacer[k] >= 0 ? -1 : 1000 + k;
    sh_memento_batch(&m, hs, 1000, map, c);
    bad = 0;
    for (i = 0; i < 1000; i++) bad += c[i] != 1000 + sh_memento_bucket(&m, hs[i]);
    CHECK(bad == 0, "memento map");
    /* removing the last bucket with nothing recorded shrinks the b-array */
    sh_memento_init(&st, rep, prev, 128, 10);
    CHECK(sh_memento_remove(&st, 9) == 0 && st.n == 9 && st.nremoved == 0, "shrink");
    CHECK(sh_memento_restore(&st) == 9 && st.n == 10, "grow back");
    CHECK(sh_memento_restore(&st) == 10 && st.n == 11, "grow");
    sh_memento_init(&st, rep, prev, 2, 2);
    CHECK(sh_memento_remove(&st, 0) == 0 && sh_memento_remove(&st, 1) == -1, "keep one bucket");
    CHECK(sh_memento_init(&st, rep, prev, 2, 3) == -1, "n > capacity");
    free(hs);
    free(a);
    free(b);
    free(c);
}

/* ------------------------------------------------------------------------ */
/* Multi-probe                                                               */

static int32_t mprobe_brute(const uint64_t *tokens, const int32_t *owners, size_t nt, unsigned k, uint64_t h)
{
    uint64_t bd = 0;
    int32_t bo = -1;
    unsigned i;
    size_t j;
    for (i = 0; i < k; i++) {
        uint64_t p = sh_mprobe_probe(h, i);
        for (j = 0; j < nt; j++) {
            uint64_t d = tokens[j] - p;
            if (bo < 0 || d < bd || (d == bd && owners[j] < bo)) {
                bd = d;
                bo = owners[j];
            }
        }
    }
    return bo;
}

/* tokens: room for nt + 2 entries; the two sentinels are written here */
static void build_mprobe(sh_mprobe *m, uint64_t *tokens, const int32_t *owners, size_t nt, unsigned k,
                         uint32_t *index)
{
    unsigned bits = sh_mprobe_index_bits(nt);
    tokens[nt] = tokens[nt + 1] = UINT64_MAX;
    sh_mprobe_build_index(tokens, nt, bits, index);
    m->tokens = tokens;
    m->owners = owners;
    m->ntokens = nt;
    m->index = index;
    m->shift = 64u - bits;
    m->probes = k;
}

static void test_multiprobe(void)
{
    /* shardhash._reference.multiprobe, tokens 100, 12345678901234567, 2^63,
     * 2^64 - 5 owned by 0..3, 21 probes, h = 0..7 */
    static const int32_t known[8] = {2, 3, 2, 2, 2, 3, 2, 2};
    uint64_t ktok[6] = {100, UINT64_C(12345678901234567), UINT64_C(1) << 63, UINT64_MAX - 4};
    static const int32_t kown[4] = {0, 1, 2, 3};
    static const size_t sizes[3] = {10, 100, 1000};
    uint32_t *index = malloc(((1u << SH_MPROBE_MAX_BITS) + 1) * sizeof *index);
    uint64_t *tokens = malloc(1002 * sizeof *tokens), *hs = malloc(2000000 * sizeof *hs);
    int32_t *owners = malloc(1000 * sizeof *owners), *out = malloc(2000000 * sizeof *out);
    long *count = malloc(1000 * sizeof *count);
    sh_mprobe m;
    size_t i, z;
    int k;
    if (!index || !tokens || !hs || !owners || !out || !count) {
        CHECK(0, "out of memory");
        return;
    }
    build_mprobe(&m, ktok, kown, 4, 21, index);
    for (k = 0; k < 8; k++) CHECK(sh_mprobe_lookup(&m, (uint64_t)k) == known[k], "multiprobe known h=%d", k);
    for (i = 0; i < 2000000; i++) hs[i] = rnd();
    for (z = 0; z < 3; z++) {
        size_t ns = sizes[z], nkeys = ns == 1000 ? 2000000 : 1000000;
        long mx = 0, bad = 0;
        double pm, allow;
        random_tokens(tokens, owners, ns);
        build_mprobe(&m, tokens, owners, ns, 21, index);
        sh_mprobe_batch(&m, hs, nkeys, out);
        for (i = 0; i < ns; i++) count[i] = 0;
        for (i = 0; i < nkeys; i++) count[out[i]]++;
        for (i = 0; i < ns; i++)
            if (count[i] > mx) mx = count[i];
        for (i = 0; i < 3000; i++) {
            bad += out[i] != sh_mprobe_lookup(&m, hs[i]);
            bad += out[i] != mprobe_brute(tokens, owners, ns, 21, hs[i]);
        }
        CHECK(bad == 0, "multiprobe %zu shards: batch/scalar/brute force disagree (%ld)", ns, bad);
        pm = (double)mx / ((double)nkeys / (double)ns);
        /* the paper's peak/mean ~1.05 plus four standard deviations of sampling */
        allow = 1.06 + 4.0 / sqrt((double)nkeys / (double)ns);
        printf("  multiprobe 21 probes, %4zu shards, %zu keys: max/mean %.4f\n", ns, nkeys, pm);
        CHECK(pm <= allow, "multiprobe %zu shards: max/mean %.4f > %.4f", ns, pm, allow);
    }
    /* every probe count, and a probe exactly on a token (distance 0) */
    random_tokens(tokens, owners, 37);
    for (k = 1; k <= SH_MPROBE_MAX_PROBES; k += 9) {
        long bad = 0;
        build_mprobe(&m, tokens, owners, 37, (unsigned)k, index);
        for (i = 0; i < 2000; i++)
            bad += sh_mprobe_lookup(&m, hs[i]) != mprobe_brute(tokens, owners, 37, (unsigned)k, hs[i]);
        CHECK(bad == 0, "multiprobe %d probes (%ld)", k, bad);
    }
    tokens[0] = sh_mprobe_probe(12345, 0);
    qsort(tokens, 37, sizeof *tokens, cmp_u64);
    build_mprobe(&m, tokens, owners, 37, 1, index);
    CHECK(sh_mprobe_lookup(&m, 12345) == mprobe_brute(tokens, owners, 37, 1, 12345), "probe on token");
    /* one token */
    build_mprobe(&m, tokens, owners, 1, 21, index);
    CHECK(sh_mprobe_lookup(&m, 99) == 0, "one token");
    free(index);
    free(tokens);
    free(hs);
    free(owners);
    free(out);
    free(count);
}

/* ------------------------------------------------------------------------ */
/* Bounded loads                                                             */

static void test_bounded(void)
{
    enum { NS = 11, VN = 256, NK = 1000000 };
    static const uint32_t factors[2] = {105, 125};
    uint64_t *tokens = malloc(NS * VN * sizeof *tokens), *hs = malloc(NK * sizeof *hs);
    int32_t *owners = malloc(NS * VN * sizeof *owners), *out = malloc(NK * sizeof *out);
    int32_t *out2 = malloc(NK * sizeof *out2);
    uint64_t caps[NS], load[NS], sizes[2000];
    size_t order[2000], i, f, ov;
    if (!tokens || !hs || !owners || !out || !out2) {
        CHECK(0, "out of memory");
        return;
    }
    CHECK(sh_bounded_capacity(1000000, 10, 105) == 105000, "cap exact");
    CHECK(sh_bounded_capacity(10, 3, 100) == 4, "cap 10/3");
    CHECK(sh_bounded_capacity(7, 2, 125) == 5, "cap 7*125/200 = 4.375 -> 5");
    CHECK(sh_bounded_capacity(0, 5, 125) == 0, "cap 0");
    CHECK(sh_bounded_capacity(UINT64_MAX, 1, 200) == UINT64_MAX, "cap saturates");
    CHECK(sh_bounded_capacity(UINT64_MAX, 2, 200) == UINT64_MAX, "cap 2^64-1 exactly");
    CHECK(sh_bounded_capacity(UINT64_MAX - 1, 4, 100) == UINT64_C(0x4000000000000000), "cap ceil");
    /* a ring of 11 shards x 256 tokens (owners by token order are random) */
    for (i = 0; i < NS * VN; i++) tokens[i] = rnd();
    qsort(tokens, NS * VN, sizeof *tokens, cmp_u64);
    for (i = 0; i < NS * VN; i++) owners[i] = (int32_t)(sh_mix64(tokens[i]) % NS);
    for (i = 0; i < NK; i++) hs[i] = rnd();
    for (f = 0; f < 2; f++) {
        uint64_t cap = sh_bounded_capacity(NK, NS, factors[f]), mx = 0;
        for (i = 0; i < NS; i++) {
            caps[i] = cap;
            load[i] = 0;
        }
        ov = sh_bounded_assign(tokens, owners, NS * VN, hs, NULL, NULL, NULL, NK, caps, NS, load, out);
        for (i = 0; i < NS; i++)
            if (load[i] > mx) mx = load[i];
        CHECK(ov == 0 && mx <= cap, "bounded f=%u: max %llu > cap %llu (overflows %zu)", (unsigned)factors[f],
              (unsigned long long)mx, (unsigned long long)cap, ov);
        printf("  bounded f=%u, 11 shards, 1M keys: cap %llu, max/mean %.4f\n", (unsigned)factors[f],
               (unsigned long long)cap, (double)mx / ((double)NK / NS));
    }
    /* a small case by hand: ring 10->A(0), 20->B(1), 30->C(2); cap 2 each;
     * keys 5, 6, 7, 8, 25: 5 -> A, 6 -> A, 7 -> B (A full), 8 -> B, 25 -> C */
    {
        static const uint64_t t3[3] = {10, 20, 30};
        static const int32_t o3[3] = {0, 1, 2};
        static const uint64_t k5[5] = {5, 6, 7, 8, 25};
        static const int32_t want[5] = {0, 0, 1, 1, 2};
        uint64_t c3[3] = {2, 2, 2}, l3[3] = {0, 0, 0};
        int32_t o5[5];
        int ok = 1;
        ov = sh_bounded_assign(t3, o3, 3, k5, NULL, NULL, NULL, 5, c3, 3, l3, o5);
        for (i = 0; i < 5; i++) ok &= o5[i] == want[i];
        CHECK(ok && ov == 0, "bounded by hand");
        /* and a sixth key when all is full: the least loaded (C), an overflow */
        l3[0] = 2;
        l3[1] = 2;
        l3[2] = 1;
        ov = sh_bounded_assign(t3, o3, 3, k5, NULL, NULL, NULL, 1, c3, 3, l3, o5);
        CHECK(ov == 0 && o5[0] == 2, "walk to the last room");
        ov = sh_bounded_assign(t3, o3, 3, k5, NULL, NULL, NULL, 1, c3, 3, l3, o5);
        CHECK(ov == 1 && o5[0] == 0 && l3[0] == 3, "overflow to the least loaded, smallest index");
    }
    /* weighted items, largest first, then re-placed after adding a shard:
     * items stay where they fit, the cap holds, few move */
    {
        uint64_t total = 0, cap10, cap11, mx = 0, movedw = 0;
        size_t moved = 0, j;
        for (i = 0; i < 2000; i++) {
            sizes[i] = 1 + (rnd() % 1000);
            total += sizes[i];
            order[i] = i;
        }
        for (i = 1; i < 2000; i++) /* insertion sort by size, descending, stable */
            for (j = i; j > 0 && sizes[order[j]] > sizes[order[j - 1]]; j--) {
                size_t tmp = order[j];
                order[j] = order[j - 1];
                order[j - 1] = tmp;
            }
        cap10 = sh_bounded_capacity(total, 10, 105);
        cap11 = sh_bounded_capacity(total, 11, 105);
        for (i = 0; i < NS; i++) {
            caps[i] = i < 10 ? cap10 : 0; /* shard 10 does not exist yet */
            load[i] = 0;
        }
        ov = sh_bounded_assign(tokens, owners, NS * VN, hs, sizes, order, NULL, 2000, caps, NS, load, out);
        for (i = 0; i < NS; i++)
            if (load[i] > mx) mx = load[i];
        CHECK(ov == 0 && mx <= cap10 && load[10] == 0, "weighted: max %llu cap %llu ov %zu",
              (unsigned long long)mx, (unsigned long long)cap10, ov);
        for (i = 0; i < NS; i++) {
            caps[i] = cap11;
            load[i] = 0;
        }
        ov = sh_bounded_assign(tokens, owners, NS * VN, hs, sizes, order, out, 2000, caps, NS, load, out2);
        mx = 0;
        for (i = 0; i < NS; i++)
            if (load[i] > mx) mx = load[i];
        for (i = 0; i < 2000; i++)
            if (out[i] != out2[i]) {
                moved++;
                movedw += sizes[i];
                CHECK(out2[i] == 10 || load[out[i]] + sizes[i] > cap11, "item %zu moved needlessly", i);
            }
        printf("  weighted 2000 items, 10 -> 11 shards: moved %.4f of the weight (ideal 1/11 = "
               "%.4f), max/mean %.4f\n",
               (double)movedw / (double)total, 1.0 / 11, (double)mx / ((double)total / 11));
        CHECK(ov == 0 && mx <= cap11, "weighted after add: max %llu cap %llu", (unsigned long long)mx,
              (unsigned long long)cap11);
        CHECK((double)movedw / (double)total < 2.0 / 11, "weighted moved share %.4f",
              (double)movedw / (double)total);
        (void)moved;
    }
    free(tokens);
    free(hs);
    free(owners);
    free(out);
    free(out2);
}

/* ------------------------------------------------------------------------ */
/* Replica lists                                                             */

static void test_replicas(void)
{
    /* the ring of docs/routers.md: A=20, B=50, C=80, D=40 (A..D = 0..3) */
    static const uint64_t t4[4] = {20, 40, 50, 80};
    static const int32_t o4[4] = {0, 3, 1, 2};
    static const int32_t zones_a[4] = {0, 0, 1, 1}; /* A, B in zone 0; C, D in zone 1 */
    static const int32_t zones_b[4] = {0, 1, 1, 1}; /* A alone in zone 0 */
    uint8_t mark[1000] = {0}, zmark[16] = {0};
    int32_t skip[1000], out[16], rows[4000], zones[1000];
    uint64_t seeds[1000], scratch[1000], tokens[1002];
    double weights[1000];
    int32_t owners[1000];
    uint32_t *index = malloc(((1u << SH_MPROBE_MAX_BITS) + 1) * sizeof *index);
    sh_replica_work w = {NULL, 0, mark, zmark, skip};
    sh_mprobe m;
    size_t i, got, ns = 200;
    long bad = 0;
    int j, clean = 1;
    if (!index) {
        CHECK(0, "out of memory");
        return;
    }
    /* h = 35: successor 40 (D), then B, C, A */
    got = sh_ring_replicas(t4, o4, 4, 4, 35, 4, &w, out);
    CHECK(got == 4 && out[0] == 3 && out[1] == 1 && out[2] == 2 && out[3] == 0, "ring D,B,C,A");
    got = sh_ring_replicas(t4, o4, 4, 4, 81, 2, &w, out); /* wraps: A, D */
    CHECK(got == 2 && out[0] == 0 && out[1] == 3, "ring wraps");
    w.zones = zones_a;
    w.nzones = 2;
    got = sh_ring_replicas(t4, o4, 4, 4, 35, 3, &w, out); /* D(z1), B(z0), C */
    CHECK(got == 3 && out[0] == 3 && out[1] == 1 && out[2] == 2, "ring zones a");
    w.zones = zones_b;
    got = sh_ring_replicas(t4, o4, 4, 4, 35, 3, &w, out); /* D(z1), B skip, C skip, A(z0), B */
    CHECK(got == 3 && out[0] == 3 && out[1] == 0 && out[2] == 1, "ring zones b");
    got = sh_ring_replicas(t4, o4, 4, 4, 35, 4, &w, out);
    CHECK(got == 4 && out[0] == 3 && out[1] == 0 && out[2] == 1 && out[3] == 2, "ring zones b, 4");
    /* a shard with no token: the list is short, padded with -1 */
    w.zones = NULL;
    got = sh_ring_replicas(t4, o4, 4, 5, 35, 5, &w, out);
    CHECK(got == 4 && out[4] == -1, "ring short list");

    /* random ring of 1000 tokens over 200 shards; rendezvous; multi-probe */
    for (i = 0; i < 1000; i++) tokens[i] = rnd();
    qsort(tokens, 1000, sizeof *tokens, cmp_u64);
    for (i = 0; i < 1000; i++) owners[i] = (int32_t)(i % ns);
    for (i = 0; i < ns; i++) {
        seeds[i] = sh_mix64(rnd());
        weights[i] = 0.5 + (double)(rnd() % 1000) / 500.0;
        zones[i] = (int32_t)(rnd() % 5);
    }
    for (i = 0; i < 5; i++) zones[i] = (int32_t)i; /* every zone has a shard */
    build_mprobe(&m, tokens, owners, 1000, 21, index);
    for (j = 0; j < 2; j++) {
        w.zones = j ? zones : NULL;
        w.nzones = j ? 5 : 0;
        sh_ring_replicas_batch(tokens, owners, 1000, ns, (const uint64_t *)seeds, 1000 / 4, 4, &w, rows);
        for (i = 0; i < 1000 / 4; i++) {
            int a, b;
            bad += rows[i * 4] != owners[sh_mprobe_successor(&m, seeds[i])];
            for (a = 0; a < 4; a++)
                for (b = 0; b < a; b++) {
                    bad += rows[i * 4 + a] == rows[i * 4 + b];
                    if (j) bad += zones[rows[i * 4 + a]] == zones[rows[i * 4 + b]];
                }
        }
        CHECK(bad == 0, "ring replicas (zones %d): %ld", j, bad);
        for (i = 0; i < 300; i++) {
            uint64_t h = rnd();
            int a, b;
            got = sh_rendezvous_replicas(seeds, j ? weights : NULL, ns, h, 4, &w, scratch, out);
            bad += got != 4 || out[0] != sh_rendezvous(h, seeds, j ? weights : NULL, ns);
            for (a = 0; a < 4; a++)
                for (b = 0; b < a; b++) bad += out[a] == out[b] || (j && zones[out[a]] == zones[out[b]]);
            got = sh_mprobe_replicas(&m, ns, h, 4, &w, out);
            bad += got != 4;
            if (!j) bad += out[0] != sh_mprobe_lookup(&m, h);
            for (a = 0; a < 4; a++)
                for (b = 0; b < a; b++) bad += out[a] == out[b] || (j && zones[out[a]] == zones[out[b]]);
        }
        CHECK(bad == 0, "rendezvous / multiprobe replicas (zones %d): %ld", j, bad);
    }
    /* batch forms == scalar forms */
    w.zones = zones;
    w.nzones = 5;
    sh_mprobe_replicas_batch(&m, ns, seeds, 100, 7, &w, rows);
    for (i = 0; i < 100; i++) {
        sh_mprobe_replicas(&m, ns, seeds[i], 7, &w, out);
        for (j = 0; j < 7; j++) bad += out[j] != rows[i * 7 + j];
    }
    sh_rendezvous_replicas_batch(seeds, weights, ns, seeds, 100, 7, &w, scratch, rows);
    for (i = 0; i < 100; i++) {
        sh_rendezvous_replicas(seeds, weights, ns, seeds[i], 7, &w, scratch, out);
        for (j = 0; j < 7; j++) bad += out[j] != rows[i * 7 + j];
    }
    CHECK(bad == 0, "replica batch == scalar (%ld)", bad);
    /* rehash walk: memento with removals (through its bucket -> shard map) and a
     * table; the first replica is the route, the list distinct and zone-clean */
    {
        int32_t rep[64], prev[64], map[64], table[97], nw = 0;
        sh_memento_state st;
        sh_memento mm;
        sh_memento_init(&st, rep, prev, 64, 40);
        sh_memento_remove(&st, 7);
        sh_memento_remove(&st, 20);
        sh_memento_remove(&st, 3);
        mm = sh_memento_view(&st);
        for (j = 0; j < 40; j++) map[j] = rep[j] < 0 ? nw++ : -1;
        for (i = 0; i < 97; i++) table[i] = (int32_t)(rnd() % 37);
        for (i = 0; i < 37; i++) table[i] = (int32_t)i;
        w.zones = zones;
        w.nzones = 5;
        for (i = 0; i < 300; i++) {
            uint64_t h = rnd();
            int a, b, zz;
            for (zz = 0; zz < 2; zz++) {
                w.zones = zz ? zones : NULL;
                got = sh_memento_replicas(&mm, map, (size_t)nw, h, 5, &w, out);
                bad += got != 5 || (!zz && out[0] != map[sh_memento_bucket(&mm, h)]);
                for (a = 0; a < 5; a++)
                    for (b = 0; b < a; b++) bad += out[a] == out[b] || (zz && zones[out[a]] == zones[out[b]]);
                got = sh_table_replicas(table, 97, 37, h, 5, &w, out);
                bad += got != 5 || (!zz && out[0] != table[h % 97]);
                for (a = 0; a < 5; a++)
                    for (b = 0; b < a; b++) bad += out[a] == out[b] || (zz && zones[out[a]] == zones[out[b]]);
            }
        }
        CHECK(bad == 0, "rehash-walk replicas (%ld)", bad);
        got = sh_memento_replicas(&mm, map, (size_t)nw, 99, (size_t)nw, &w, rows);
        CHECK(got == (size_t)nw, "memento full list");
        got = sh_table_replicas(table, 97, 37, 99, 37, &w, rows);
        CHECK(got == 37, "table full list");
    }
    /* every replica: the whole preference order (r = nshards) is a permutation */
    got = sh_mprobe_replicas(&m, ns, 42, ns, &w, rows);
    CHECK(got == ns, "multiprobe full list");
    for (i = 0; i < ns; i++) clean &= mark[i] == 0;
    for (i = 0; i < 16; i++) clean &= zmark[i] == 0;
    CHECK(clean, "workspaces left zeroed");
    free(index);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    sh_place_init();
    test_memento();
    test_multiprobe();
    test_bounded();
    test_replicas();
    printf("test_strategies: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
