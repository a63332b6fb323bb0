/*
 * shardhash core: MementoHash lookups and record building (see sh_memento.h
 * and docs/routers.md 2.14).
 */
#include "sh_memento.h"

/* From jump's bucket b of key hash h to the working bucket. */
SH_FORCE_INLINE int32_t sh_memento_resolve(const int32_t *replacer, int32_t b, uint64_t h)
{
    int32_t c = replacer[b];
    while (c >= 0) {
        int32_t r;
        b = (int32_t)sh_mulhi64(sh_memento_rehash(h, b), (uint64_t)c);
        r = replacer[b];
        /* replacer values of earlier removals are larger (the working set
         * only shrinks), so this chain is finite. */
        while (r >= c) {
            b = r;
            r = replacer[b];
        }
        c = r;
    }
    return b;
}

int32_t sh_memento_resolve_from(const sh_memento *m, int32_t b, uint64_t h)
{
    return sh_memento_resolve(m->replacer, b, h);
}

int32_t sh_memento_bucket(const sh_memento *m, uint64_t h)
{
    int32_t b = sh_jump(h, m->n);
    if (m->nremoved == 0) return b;
    return sh_memento_resolve(m->replacer, b, h);
}

#define SH_MEMENTO_JUMP_CHUNK 16384 /* keys per jump call: out stays in L2 */
#define SH_MEMENTO_FIX_CHUNK  512   /* keys per fix-up list (on the stack) */

void sh_memento_batch(const sh_memento *m, const uint64_t *hashes, size_t n, const int32_t *map, int32_t *out)
{
    size_t i, c, d;
    const int32_t *replacer = m->replacer;
    if (m->nremoved == 0) {
        sh_jump_batch(hashes, n, m->n, out);
        if (map != NULL)
            for (i = 0; i < n; i++) out[i] = map[out[i]];
        return;
    }
    /* Chunk by chunk, while the chunk is in cache: jump (its SIMD kernels);
     * then, per sub-chunk, one pass that applies the map and notes, without
     * a branch, the keys that met a removed bucket (about nremoved / n of
     * them, at random: a branch there would mispredict), and a second pass
     * that resolves those from jump's bucket. */
    for (c = 0; c < n; c += SH_MEMENTO_JUMP_CHUNK) {
        size_t cend = n - c < SH_MEMENTO_JUMP_CHUNK ? n : c + SH_MEMENTO_JUMP_CHUNK;
        sh_jump_batch(hashes + c, cend - c, m->n, out + c);
        for (d = c; d < cend; d += SH_MEMENTO_FIX_CHUNK) {
            size_t fix_at[SH_MEMENTO_FIX_CHUNK];
            int32_t fix_b[SH_MEMENTO_FIX_CHUNK];
            size_t end = cend - d < SH_MEMENTO_FIX_CHUNK ? cend : d + SH_MEMENTO_FIX_CHUNK;
            size_t nfix = 0, f;
            if (map != NULL) { /* map[b] < 0 exactly for removed buckets: one load */
                for (i = d; i < end; i++) {
                    int32_t b = out[i], v = map[b];
                    fix_at[nfix] = i;
                    fix_b[nfix] = b;
                    nfix += v < 0;
                    out[i] = v;
                }
            } else {
                for (i = d; i < end; i++) {
                    int32_t b = out[i];
                    fix_at[nfix] = i;
                    fix_b[nfix] = b;
                    nfix += replacer[b] >= 0;
                }
            }
            for (f = 0; f < nfix; f++) {
                int32_t b = sh_memento_resolve(replacer, fix_b[f], hashes[fix_at[f]]);
                out[fix_at[f]] = map != NULL ? map[b] : b;
            }
        }
    }
}

int sh_memento_init(sh_memento_state *s, int32_t *replacer, int32_t *prev, int32_t capacity, int32_t n)
{
    int32_t i;
    if (n < 1 || n > capacity) return -1;
    for (i = 0; i < capacity; i++) {
        replacer[i] = -1;
        prev[i] = -1;
    }
    s->replacer = replacer;
    s->prev = prev;
    s->capacity = capacity;
    s->n = n;
    s->nremoved = 0;
    s->last_removed = n;
    return 0;
}

int sh_memento_remove(sh_memento_state *s, int32_t b)
{
    int32_t working = s->n - s->nremoved;
    if (b < 0 || b >= s->n || s->replacer[b] >= 0 || working <= 1) return -1;
    if (s->nremoved == 0 && b == s->n - 1) {
        /* Plain jump loses its last bucket: shrink, record nothing. */
        s->n = b;
        s->last_removed = b;
        return 0;
    }
    s->replacer[b] = working - 1;
    s->prev[b] = s->last_removed;
    s->last_removed = b;
    s->nremoved++;
    return 0;
}

int32_t sh_memento_restore(sh_memento_state *s)
{
    int32_t b = s->last_removed;
    if (b >= s->n) {
        /* Nothing recorded: grow the b-array, as jump does. */
        if (s->n >= s->capacity) return -1;
        b = s->n;
        s->n = b + 1;
        s->last_removed = b + 1;
        return b;
    }
    s->last_removed = s->prev[b];
    s->replacer[b] = -1;
    s->prev[b] = -1;
    s->nremoved--;
    return b;
}

sh_memento sh_memento_view(const sh_memento_state *s)
{
    sh_memento m;
    m.replacer = s->replacer;
    m.n = s->n;
    m.nremoved = s->nremoved;
    return m;
}
