/*
 * The list-hashing pipeline (sh_pipe.c): with 0 to SH_PIPE_HELPERS helper
 * threads, every key is hashed exactly once into its own output item,
 * whatever the number of keys (empty, one chunk, many chunks, a partial last
 * chunk) and the output item size; a pipe finished early hashes no chunk it
 * was not given.  The "hash" is the key's first byte plus its length, and a
 * counter of kernel calls per key checks that no key is hashed twice.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sh_check.h"
#include "sh_pipe.h"

typedef struct {
    unsigned char *seen; /* one counter per key (the key's byte is its index mod 251) */
    const uint8_t *base;
} ctx_t;

static void kernel64(const void *ctx, const uint8_t *const *ptrs, const int64_t *lens, size_t n, void *out)
{
    const ctx_t *c = (const ctx_t *)ctx;
    int64_t *o = (int64_t *)out;
    size_t i;
    for (i = 0; i < n; i++) {
        o[i] = (int64_t)ptrs[i][0] * 1000 + lens[i];
        c->seen[ptrs[i] - c->base]++;
    }
}

static void kernel16(const void *ctx, const uint8_t *const *ptrs, const int64_t *lens, size_t n, void *out)
{
    const ctx_t *c = (const ctx_t *)ctx;
    uint16_t *o = (uint16_t *)out;
    size_t i;
    for (i = 0; i < n; i++) {
        o[i] = (uint16_t)(ptrs[i][0] + lens[i]);
        c->seen[ptrs[i] - c->base]++;
    }
}

/* Run n keys through a pipe with `helpers` helpers; key i is byte i of data
 * (its value i % 251) with length i % 7 + 1.  Returns the number of errors. */
static int run(size_t n, int helpers, int wide, size_t stop_after)
{
    uint8_t *data = (uint8_t *)malloc(n + 8);
    unsigned char *seen = (unsigned char *)calloc(n + 1, 1);
    void *out = malloc((n + 1) * (wide ? 8 : 2));
    ctx_t ctx;
    sh_pipe *q;
    size_t c, i, nchunks = (n + SH_PIPE_CHUNK - 1) / SH_PIPE_CHUNK, hashed;
    int errors = 0;
    if (!data || !seen || !out) {
        free(data);
        free(seen);
        free(out);
        return 1;
    }
    for (i = 0; i < n; i++) data[i] = (uint8_t)(i % 251);
    ctx.seen = seen;
    ctx.base = data;
    q = sh_pipe_new(n, out, wide ? 8 : 2, wide ? kernel64 : kernel16, &ctx, helpers);
    if (q == NULL) {
        free(data);
        free(seen);
        free(out);
        return 1;
    }
    if (helpers > 0 && sh_pipe_started(q) == 0) fprintf(stderr, "note: no helper thread could be started\n");
    if (stop_after < nchunks) nchunks = stop_after;
    for (c = 0; c < nchunks; c++) {
        const uint8_t **ptrs;
        int64_t *lens;
        size_t start = c * SH_PIPE_CHUNK, m = n - start < SH_PIPE_CHUNK ? n - start : SH_PIPE_CHUNK;
        sh_pipe_slot(q, c);
        ptrs = sh_pipe_ptrs(q, c);
        lens = sh_pipe_lens(q, c);
        for (i = 0; i < m; i++) {
            ptrs[i] = data + start + i;
            lens[i] = (int64_t)((start + i) % 7 + 1);
        }
        sh_pipe_publish(q, c);
    }
    sh_pipe_finish(q, 1);
    hashed = nchunks * SH_PIPE_CHUNK < n ? nchunks * SH_PIPE_CHUNK : n;
    for (i = 0; i < n; i++) {
        int want_seen = i < hashed;
        if (seen[i] != want_seen) {
            errors++;
            continue;
        }
        if (!want_seen) continue;
        if (wide) {
            if (((int64_t *)out)[i] != (int64_t)(i % 251) * 1000 + (int64_t)(i % 7 + 1)) errors++;
        } else if (((uint16_t *)out)[i] != (uint16_t)(i % 251 + i % 7 + 1)) {
            errors++;
        }
    }
    free(data);
    free(seen);
    free(out);
    return errors;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {
        0, 1, SH_PIPE_CHUNK - 1, SH_PIPE_CHUNK, SH_PIPE_CHUNK + 1, SH_PIPE_CHUNK * SH_PIPE_SLOTS * 3 + 17};
    int helpers;
    size_t k;
    (void)argc;
    (void)argv;
    for (helpers = 0; helpers <= SH_PIPE_HELPERS + 1; helpers += (helpers < 3 ? 1 : 5)) {
        for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            CHECK(run(sizes[k], helpers, 1, (size_t)-1) == 0, "n=%lu helpers=%d int64 output",
                  (unsigned long)sizes[k], helpers);
            CHECK(run(sizes[k], helpers, 0, (size_t)-1) == 0, "n=%lu helpers=%d uint16 output",
                  (unsigned long)sizes[k], helpers);
        }
        /* a producer that stops after 3 chunks (an error while reading keys) */
        CHECK(run(SH_PIPE_CHUNK * 20, helpers, 1, 3) == 0, "stopped early, helpers=%d", helpers);
    }
    printf("test_pipe: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
