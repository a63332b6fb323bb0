/*
 * ketama continuum lookup (libketama, libmemcached, twemproxy, uhashring)
 * and the fused key-hash + lookup batch kernel, written from the
 * continuum's documented behaviour.
 */
#include "sh_ketama.h"
#include "sh_md5.h"
#include "sh_twemproxy.h"

/* First continuum index whose point is >= h (upper == 0) or > h (upper != 0),
 * wrapping to 0 past the end. */
SH_FORCE_INLINE size_t sh_ketama_find(const uint32_t *points, size_t m, int upper, uint32_t h)
{
    /* Branch-free binary search (conditional moves, no mispredictions). */
    const uint32_t *base = points;
    size_t n = m, i;
    if (upper) {
        while (n > 1) {
            size_t half = n / 2;
            base = (base[half - 1] <= h) ? base + half : base;
            n -= half;
        }
        i = (size_t)(base - points) + (*base <= h);
    } else {
        while (n > 1) {
            size_t half = n / 2;
            base = (base[half - 1] < h) ? base + half : base;
            n -= half;
        }
        i = (size_t)(base - points) + (*base < h);
    }
    return i == m ? 0 : i;
}

void sh_ketama_bucket_index(const uint32_t *points, size_t m, int bits, int32_t *index)
{
    size_t b, nb = (size_t)1 << bits, k = 0;
    int shift = 32 - bits;
    for (b = 0; b < nb; b++) {
        uint32_t lo = (uint32_t)b << shift;
        while (k < m && points[k] < lo) k++;
        index[b] = (int32_t)k;
    }
    index[nb] = (int32_t)m;
}

/* The answer for h lies in [index[b], index[b + 1]] with b = h's top bits:
 * scan that (short) stretch.  Reaching m means wrapping to point 0. */
SH_FORCE_INLINE size_t sh_ketama_find_indexed(const uint32_t *points, size_t m, int upper,
                                              const int32_t *index, int bits, uint32_t h)
{
    size_t b = (size_t)(h >> (32 - bits));
    size_t i = (size_t)index[b], end = (size_t)index[b + 1];
    if (upper) {
        while (i < end && points[i] <= h) i++;
    } else {
        while (i < end && points[i] < h) i++;
    }
    return i == m ? 0 : i;
}

void sh_ketama_lookup(const uint32_t *points, const int32_t *owners, size_t m, int upper,
                      const int32_t *index, int bits, const uint32_t *hashes, size_t n, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = owners[index ? sh_ketama_find_indexed(points, m, upper, index, bits, hashes[i])
                              : sh_ketama_find(points, m, upper, hashes[i])];
}

void sh_ketama_route_offsets(const uint8_t *data, const int64_t *offsets, size_t n, const uint32_t *points,
                             const int32_t *owners, size_t m, int upper, const int32_t *index, int bits,
                             int key_hash, int32_t *out)
{
    uint32_t h[256];
    size_t i, k, chunk;
    for (i = 0; i < n; i += chunk) {
        chunk = n - i < 256 ? n - i : 256;
        if (key_hash == SH_KETAMA_KEY_FNV1A_64_TWEMPROXY)
            sh_twemproxy_fnv1a_64_offsets(data, offsets + i, chunk, h);
        else
            sh_md5_u32le_offsets(data, offsets + i, chunk, h);
        if (index) {
            for (k = 0; k < chunk; k++)
                out[i + k] = owners[sh_ketama_find_indexed(points, m, upper, index, bits, h[k])];
        } else {
            for (k = 0; k < chunk; k++) out[i + k] = owners[sh_ketama_find(points, m, upper, h[k])];
        }
    }
}
