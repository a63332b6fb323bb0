/*
 * twemproxy's key hashes that differ from their namesakes, written from
 * twemproxy's documented behaviour.
 */
#include "sh_twemproxy.h"

uint32_t sh_twemproxy_fnv1a_64(const void *data, size_t len)
{
    /* twemproxy's "fnv1a_64": a 32-bit state with the 64-bit constants
     * truncated, and each byte a (signed) char widened to uint32. */
    const uint8_t *p = (const uint8_t *)data;
    uint32_t h = 0x84222325u;
    size_t i;
    for (i = 0; i < len; i++) {
        uint32_t c = p[i] & 0x80u ? (0xffffff00u | p[i]) : (uint32_t)p[i];
        h ^= c;
        h *= 0x000001b3u;
    }
    return h;
}

void sh_twemproxy_fnv1a_64_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = sh_twemproxy_fnv1a_64(data + offsets[i], (size_t)(offsets[i + 1] - offsets[i]));
}
