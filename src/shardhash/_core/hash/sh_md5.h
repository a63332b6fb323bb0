/*
 * shardhash core: MD5 (RFC 1321), one-shot and multi-lane.
 *
 * MD5 is used here only as the placement hash of real systems (ketama
 * continuums: sh_ketama.h; MongoDB hashed shard keys: sh_mongo.h), never
 * for security.
 */
#ifndef SH_MD5_H
#define SH_MD5_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One-shot MD5 digest of `len` bytes into out[16]. */
void sh_md5(const void *data, size_t len, uint8_t out[16]);

/* ketama key hash: the first four digest bytes as a little-endian uint32. */
uint32_t sh_md5_u32le(const void *data, size_t len);

/* Batch ketama key hash over Arrow-style binary data: key i is
 * data[offsets[i] .. offsets[i+1]).  Offsets are validated by the caller
 * (monotonic, within the buffer). */
void sh_md5_u32le_offsets(const uint8_t *data, const int64_t *offsets, size_t n, uint32_t *out);

/* The MD5 compression function: one 64-byte block into the state s[4]
 * (start from 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476). */
void sh_md5_block(uint32_t s[4], const uint8_t *p);

/* Multi-lane MD5 of SH_MD5_LANES one-block messages advancing in lock step:
 * X[w][l] is word w of lane l's padded block.  out[l] gets the first digest
 * word of lane l; out_b (may be NULL) the second. */
#define SH_MD5_LANES 16
void sh_md5_lanes(uint32_t X[16][SH_MD5_LANES], uint32_t out[SH_MD5_LANES], uint32_t *out_b);

#ifdef __cplusplus
}
#endif

#endif /* SH_MD5_H */
