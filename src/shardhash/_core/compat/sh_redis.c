/*
 * Redis Cluster key slots: CRC16-XMODEM of the key's {hash tag} (or of the
 * whole key) modulo 16384, written from the Redis Cluster specification.
 */
#include "sh_redis.h"
#include "sh_crc16.h"

size_t sh_redis_hash_part(const uint8_t *key, size_t len, size_t *start)
{
    const uint8_t *open, *close;
    size_t s;
    *start = 0;
    open = len ? (const uint8_t *)memchr(key, '{', len) : NULL;
    if (open == NULL) return len;
    s = (size_t)(open - key) + 1;
    close = (const uint8_t *)memchr(key + s, '}', len - s);
    if (close == NULL || close == key + s) return len; /* no '}' or empty tag */
    *start = s;
    return (size_t)(close - (key + s));
}

uint16_t sh_redis_keyslot(const void *key, size_t len)
{
    const uint8_t *k = (const uint8_t *)key;
    size_t start, n = sh_redis_hash_part(k, len, &start);
    return (uint16_t)(sh_crc16_xmodem(k + start, n) & (SH_REDIS_SLOTS - 1));
}

void sh_redis_keyslot_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint16_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        int64_t a = offsets[i], b = offsets[i + 1];
        out[i] = sh_redis_keyslot(data + a, (size_t)(b - a));
    }
}

void sh_redis_keyslot_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint16_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_redis_keyslot(ptrs[i], (size_t)lens[i]);
}
