/*
 * shardhash core: twemproxy's key hashes that differ from their namesakes.
 */
#ifndef SH_TWEMPROXY_H
#define SH_TWEMPROXY_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* twemproxy's "fnv1a_64" key hash (its default): a 32-bit FNV-1a state
 * with truncated constants (offset 0x84222325, prime 0x1b3) and each byte
 * sign-extended as a C char. */
uint32_t sh_twemproxy_fnv1a_64(const void *data, size_t len);
void sh_twemproxy_fnv1a_64_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_TWEMPROXY_H */
