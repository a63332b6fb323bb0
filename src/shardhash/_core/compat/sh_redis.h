/*
 * shardhash core: Redis Cluster key slots.
 *
 * Redis Cluster maps a key to slot CRC16(k) & 16383 (CRC16-XMODEM,
 * sh_crc16.h), where k is the {hash tag} when the key has a non-empty one
 * (first '{', then the next '}' after it), and the whole key otherwise.
 */
#ifndef SH_REDIS_H
#define SH_REDIS_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SH_REDIS_SLOTS 16384

uint16_t sh_redis_keyslot(const void *key, size_t len);

/* Batch over Arrow-style binary data: key i is data[offsets[i] .. offsets[i+1]). */
void sh_redis_keyslot_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint16_t *out);

/* Batch over separate keys: key i is ptrs[i][0 .. lens[i]) (lens[i] >= 0).
 * Only the keys' own bytes are read. */
void sh_redis_keyslot_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint16_t *out);

/* The same, for keys whose 16 bytes before ptrs[i] are readable too (their
 * values do not matter: a Python bytes or str object's header precedes its
 * data); the CRC then runs in whole 8-byte words (sh_crc16.h). */
void sh_redis_keyslot_ptrs16(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint16_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_REDIS_H */
