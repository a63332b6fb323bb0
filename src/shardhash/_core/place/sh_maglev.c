/*
 * shardhash core: Maglev lookup-table population (see sh_maglev.h and docs/routers.md).
 */
#include "sh_maglev.h"
#include "sh_mix.h"

/* ------------------------------------------------------------------------ */
/* Maglev                                                                    */

int sh_maglev_populate(const uint64_t *shard_hashes, const double *weights, size_t nshards, uint64_t m,
                       int32_t *table, uint64_t *pos, double *credit)
{
    uint64_t filled = 0, c;
    size_t i;
    if (nshards == 0 || m < 2 || m < nshards) return -1;
    /* pos[] holds each shard's next candidate slot; skips are recomputed
     * from the shard hash (cheap) to avoid a third workspace. */
    for (c = 0; c < m; c++) table[c] = -1;
    for (i = 0; i < nshards; i++) {
        pos[i] = sh_mix64(shard_hashes[i] ^ SH_MAGLEV_OFFSET_SALT) % m;
        credit[i] = 0.0;
    }
    for (;;) {
        for (i = 0; i < nshards; i++) {
            uint64_t p, s;
            if (weights) {
                credit[i] += weights[i];
                if (credit[i] < 1.0) continue;
                credit[i] -= 1.0;
            }
            s = sh_mix64(shard_hashes[i] ^ SH_MAGLEV_SKIP_SALT) % (m - 1) + 1;
            p = pos[i];
            while (table[p] >= 0) {
                p += s;
                if (p >= m) p -= m;
            }
            table[p] = (int32_t)i;
            p += s;
            if (p >= m) p -= m;
            pos[i] = p;
            if (++filled == m) return 0;
        }
    }
}
