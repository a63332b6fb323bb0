/*
 * Redis Cluster key slots: CRC16-XMODEM of the key's {hash tag} (or of the
 * whole key) modulo 16384, written from the Redis Cluster specification.
 */
#include "sh_redis.h"
#include "sh_crc16.h"

/* The part of the key Redis hashes (see sh_redis.h), inline in the batch
 * loops. */
SH_FORCE_INLINE size_t sh_redis_part(const uint8_t *key, size_t len, size_t *start)
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

SH_FORCE_INLINE uint16_t sh_redis_slot(const uint8_t *k, size_t len)
{
    size_t start, n = sh_redis_part(k, len, &start);
    return (uint16_t)(sh_crc16_xmodem_inline(k + start, n) & (SH_REDIS_SLOTS - 1));
}

uint16_t sh_redis_keyslot(const void *key, size_t len)
{
    return sh_redis_slot((const uint8_t *)key, len);
}

/* Batch kernels: the hashed part's CRC by sh_crc16_xmodem_before when the 7
 * bytes before it are readable -- in Arrow data, whenever it ends at least 8
 * bytes per word into the buffer (the bytes before it belong to earlier
 * keys); for sh_redis_keyslot_ptrs16, always. */
void sh_redis_keyslot_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint16_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        int64_t a = offsets[i], b = offsets[i + 1];
        size_t start, len = sh_redis_part(data + a, (size_t)(b - a), &start);
        const uint8_t *end = data + a + start + len;
        uint16_t crc = (size_t)(end - data) >= 8 * ((len + 7) / 8) ? sh_crc16_xmodem_before(end, len)
                                                                   : sh_crc16_xmodem_inline(end - len, len);
        out[i] = (uint16_t)(crc & (SH_REDIS_SLOTS - 1));
    }
}

void sh_redis_keyslot_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint16_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_redis_slot(ptrs[i], (size_t)lens[i]);
}

void sh_redis_keyslot_ptrs16(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint16_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        size_t start, len = sh_redis_part(ptrs[i], (size_t)lens[i], &start);
        out[i] = (uint16_t)(sh_crc16_xmodem_before(ptrs[i] + start + len, len) & (SH_REDIS_SLOTS - 1));
    }
}
