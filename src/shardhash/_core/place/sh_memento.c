/*
 * shardhash core: MementoHash lookups and record building (see sh_memento.h
 * and docs/strategies-draft.md).
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

int32_t sh_memento_bucket(const sh_memento *m, uint64_t h)
{
    int32_t b = sh_jump(h, m->n);
    if (m->nremoved == 0) return b;
    return sh_memento_resolve(m->replacer, b, h);
}

void sh_memento_batch(const sh_memento *m, const uint64_t *hashes, size_t n, const int32_t *map,
                      int32_t *out)
{
    size_t i;
    const int32_t *replacer = m->replacer;
    /* Jump first, over the whole batch (its SIMD kernels), then one pass that
     * resolves the keys that met a removed bucket (about nremoved / n of
     * them, starting from jump's answer) and applies the map. */
    sh_jump_batch(hashes, n, m->n, out);
    if (m->nremoved != 0 && map != NULL) {
        for (i = 0; i < n; i++) {
            int32_t b = out[i];
            if (replacer[b] >= 0) b = sh_memento_resolve(replacer, b, hashes[i]);
            out[i] = map[b];
        }
    } else if (m->nremoved != 0) {
        for (i = 0; i < n; i++)
            if (replacer[out[i]] >= 0) out[i] = sh_memento_resolve(replacer, out[i], hashes[i]);
    } else if (map != NULL) {
        for (i = 0; i < n; i++) out[i] = map[out[i]];
    }
}

int sh_memento_init(sh_memento_state *s, int32_t *replacer, int32_t *prev, int32_t capacity,
                    int32_t n)
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
