/*
 * shardhash core: ketama continuums (libketama, libmemcached, twemproxy,
 * uhashring): lookup of a key hash on the sorted points, and the fused
 * key hash (MD5, sh_md5.h, or twemproxy's FNV, sh_twemproxy.h) + lookup.
 */
#ifndef SH_KETAMA_H
#define SH_KETAMA_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ketama continuum lookup.  points[0..m) sorted ascending (m >= 1), owners[k]
 * the server of point k.  A key hash h goes to the first point >= h
 * (upper == 0: libketama, libmemcached, twemproxy) or the first point > h
 * (upper != 0: uhashring's bisect_right), wrapping to point 0.
 *
 * Optional acceleration: index (2**bits + 1 entries, 1 <= bits <= 24, built
 * by sh_ketama_bucket_index) holds for each value of a hash's top `bits`
 * bits the first point at or above that bucket; with it a lookup scans a
 * short stretch instead of a binary search.  Pass index = NULL to search. */
void sh_ketama_bucket_index(const uint32_t *points, size_t m, int bits, int32_t *index);
void sh_ketama_lookup(const uint32_t *points, const int32_t *owners, size_t m, int upper,
                      const int32_t *index, int bits, const uint32_t *hashes, size_t n, int32_t *out);

#define SH_KETAMA_KEY_MD5                0
#define SH_KETAMA_KEY_FNV1A_64_TWEMPROXY 1

/* Key hash (key_hash: SH_KETAMA_KEY_*) and lookup fused, over Arrow-style
 * binary data. */
void sh_ketama_route_offsets(const uint8_t *data, const int64_t *offsets, size_t n, const uint32_t *points,
                             const int32_t *owners, size_t m, int upper, const int32_t *index, int bits,
                             int key_hash, int32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_KETAMA_H */
