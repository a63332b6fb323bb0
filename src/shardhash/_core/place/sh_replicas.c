/*
 * shardhash core: replica lists over a preference order (see sh_replicas.h
 * and docs/routers.md 2.17).
 */
#include "sh_replicas.h"
#include "sh_ring.h"

#include <math.h>

/* The selection state for one key: shards are offered in preference order. */
typedef struct {
    const sh_replica_work *w;
    int32_t *out;
    size_t want, nout, nskip, skip_at, seen;
    int32_t zones_used;
} sh_sel;

static void sh_sel_start(sh_sel *s, const sh_replica_work *w, size_t want, int32_t *out)
{
    s->w = w;
    s->out = out;
    s->want = want;
    s->nout = s->nskip = s->skip_at = s->seen = 0;
    s->zones_used = 0;
}

/* Offer shard o (the next of P).  Returns 1 once the list is complete. */
static int sh_sel_offer(sh_sel *s, int32_t o)
{
    const sh_replica_work *w = s->w;
    if (w->mark[o]) return s->nout == s->want;
    w->mark[o] = 1;
    s->seen++;
    if (w->zones == NULL || s->zones_used == w->nzones) {
        s->out[s->nout++] = o;
    } else {
        int32_t z = w->zones[o];
        if (w->zmark[z]) {
            w->skip[s->nskip++] = o;
        } else {
            w->zmark[z] = 1;
            s->zones_used++;
            s->out[s->nout++] = o;
            if (s->zones_used == w->nzones) {
                while (s->skip_at < s->nskip && s->nout < s->want) s->out[s->nout++] = w->skip[s->skip_at++];
            }
        }
    }
    return s->nout == s->want;
}

/* P ended (or the list is complete): append what was skipped, pad with -1,
 * and clear every mark set.  Returns the count written. */
static size_t sh_sel_finish(sh_sel *s)
{
    const sh_replica_work *w = s->w;
    size_t i, written;
    while (s->skip_at < s->nskip && s->nout < s->want) s->out[s->nout++] = w->skip[s->skip_at++];
    written = s->nout;
    for (i = 0; i < s->nout; i++) {
        w->mark[s->out[i]] = 0;
        if (w->zones != NULL) w->zmark[w->zones[s->out[i]]] = 0;
    }
    for (i = 0; i < s->nskip; i++) w->mark[w->skip[i]] = 0;
    for (i = s->nout; i < s->want; i++) s->out[i] = -1;
    return written;
}

/* ------------------------------------------------------------------------ */
/* Ring                                                                      */

size_t sh_ring_replicas(const uint64_t *tokens, const int32_t *owners, size_t ntokens, size_t nshards,
                        uint64_t h, size_t r, const sh_replica_work *w, int32_t *out)
{
    sh_sel s;
    size_t j = sh_ring_successor(tokens, ntokens, h), step;
    sh_sel_start(&s, w, r, out);
    for (step = 0; step < ntokens && s.seen < nshards; step++) {
        if (sh_sel_offer(&s, owners[j])) break;
        if (++j == ntokens) j = 0;
    }
    return sh_sel_finish(&s);
}

void sh_ring_replicas_batch(const uint64_t *tokens, const int32_t *owners, size_t ntokens, size_t nshards,
                            const uint64_t *hashes, size_t n, size_t r, const sh_replica_work *w,
                            int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++)
        (void)sh_ring_replicas(tokens, owners, ntokens, nshards, hashes[i], r, w, out + i * r);
}

/* ------------------------------------------------------------------------ */
/* Rendezvous                                                                */

size_t sh_rendezvous_replicas(const uint64_t *seeds, const double *weights, size_t nshards, uint64_t h,
                              size_t r, const sh_replica_work *w, uint64_t *scratch, int32_t *out)
{
    sh_sel s;
    size_t i;
    for (i = 0; i < nshards; i++) {
        uint64_t x = sh_mix64(h ^ seeds[i]);
        if (weights != NULL) {
            /* The score of sh_rendezvous, a positive finite double: its bit
             * pattern orders as the value does. */
            double u = (double)((x >> 11) | 1u) * (1.0 / 9007199254740992.0);
            double sc = -weights[i] / log(u);
            memcpy(&x, &sc, sizeof x);
        }
        scratch[i] = x;
    }
    sh_sel_start(&s, w, r, out);
    while (s.seen < nshards) {
        /* next of P: the largest score among shards not yet met */
        size_t best = nshards;
        for (i = 0; i < nshards; i++) {
            if (w->mark[i]) continue;
            if (best == nshards || scratch[i] > scratch[best]) best = i;
        }
        if (sh_sel_offer(&s, (int32_t)best)) break;
    }
    return sh_sel_finish(&s);
}

void sh_rendezvous_replicas_batch(const uint64_t *seeds, const double *weights, size_t nshards,
                                  const uint64_t *hashes, size_t n, size_t r, const sh_replica_work *w,
                                  uint64_t *scratch, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++)
        (void)sh_rendezvous_replicas(seeds, weights, nshards, hashes[i], r, w, scratch, out + i * r);
}

/* ------------------------------------------------------------------------ */
/* Multi-probe                                                               */

size_t sh_mprobe_replicas(const sh_mprobe *m, size_t nshards, uint64_t h, size_t r, const sh_replica_work *w,
                          int32_t *out)
{
    /* A k-way merge of the probes' clockwise walks by distance: each probe
     * points at its next token; the pair with the smallest distance (ties:
     * smaller owner) is the next candidate, so shards come out in the order
     * (score, index) of the definition. */
    uint64_t probe[SH_MPROBE_MAX_PROBES];
    size_t pos[SH_MPROBE_MAX_PROBES], walked[SH_MPROBE_MAX_PROBES];
    const unsigned k = m->probes;
    unsigned i;
    sh_sel s;
    for (i = 0; i < k; i++) {
        probe[i] = sh_mprobe_probe(h, i);
        pos[i] = sh_mprobe_successor(m, probe[i]);
        walked[i] = 0;
    }
    sh_sel_start(&s, w, r, out);
    while (s.seen < nshards) {
        unsigned bi = k;
        uint64_t bd = 0;
        int32_t bo = 0;
        for (i = 0; i < k; i++) {
            uint64_t d;
            int32_t o;
            if (walked[i] == m->ntokens) continue;
            d = m->tokens[pos[i]] - probe[i];
            o = m->owners[pos[i]];
            if (bi == k || d < bd || (d == bd && o < bo)) {
                bi = i;
                bd = d;
                bo = o;
            }
        }
        if (bi == k) break; /* every probe went round the circle */
        if (++pos[bi] == m->ntokens) pos[bi] = 0;
        walked[bi]++;
        if (sh_sel_offer(&s, bo)) break;
    }
    return sh_sel_finish(&s);
}

void sh_mprobe_replicas_batch(const sh_mprobe *m, size_t nshards, const uint64_t *hashes, size_t n, size_t r,
                              const sh_replica_work *w, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) (void)sh_mprobe_replicas(m, nshards, hashes[i], r, w, out + i * r);
}

/* ------------------------------------------------------------------------ */
/* Rehash walk (jump, memento, tables)                                       */

/* Every shard not met yet, in index order (the end of a rehash walk). */
static void sh_sel_rest(sh_sel *s, size_t nshards)
{
    size_t i;
    for (i = 0; i < nshards && s->seen < nshards; i++)
        if (sh_sel_offer(s, (int32_t)i)) return;
}

size_t sh_memento_replicas(const sh_memento *m, const int32_t *map, size_t nshards, uint64_t h, size_t r,
                           const sh_replica_work *w, int32_t *out)
{
    sh_sel s;
    uint64_t a, attempts = (uint64_t)SH_REPLICA_ATTEMPTS * nshards;
    sh_sel_start(&s, w, r, out);
    for (a = 0; a < attempts && s.seen < nshards; a++) {
        int32_t b = sh_memento_bucket(m, sh_replica_rehash(h, a));
        if (sh_sel_offer(&s, map ? map[b] : b)) return sh_sel_finish(&s);
    }
    sh_sel_rest(&s, nshards);
    return sh_sel_finish(&s);
}

void sh_memento_replicas_batch(const sh_memento *m, const int32_t *map, size_t nshards,
                               const uint64_t *hashes, size_t n, size_t r, const sh_replica_work *w,
                               int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) (void)sh_memento_replicas(m, map, nshards, hashes[i], r, w, out + i * r);
}

size_t sh_table_replicas(const int32_t *table, uint64_t tsize, size_t nshards, uint64_t h, size_t r,
                         const sh_replica_work *w, int32_t *out)
{
    sh_sel s;
    uint64_t a, attempts = (uint64_t)SH_REPLICA_ATTEMPTS * nshards;
    sh_sel_start(&s, w, r, out);
    for (a = 0; a < attempts && s.seen < nshards; a++) {
        if (sh_sel_offer(&s, table[sh_replica_rehash(h, a) % tsize])) return sh_sel_finish(&s);
    }
    sh_sel_rest(&s, nshards);
    return sh_sel_finish(&s);
}

void sh_table_replicas_batch(const int32_t *table, uint64_t tsize, size_t nshards, const uint64_t *hashes,
                             size_t n, size_t r, const sh_replica_work *w, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) (void)sh_table_replicas(table, tsize, nshards, hashes[i], r, w, out + i * r);
}
