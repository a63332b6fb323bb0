/*
 * shardhash core: the DES block cipher (FIPS 46-3), single block, ECB.
 *
 * Used by the Vitess `hash` vindex, which maps an id to its keyspace id as
 * DES_encrypt(key = 8 zero bytes, block = the id as 8 big-endian bytes).
 * Blocks are passed as uint64 values whose big-endian bytes are the DES
 * block, so unsigned comparison of the results equals byte-wise comparison
 * of the keyspace ids.  Not for security: DES is broken.
 */
#ifndef SH_DES_H
#define SH_DES_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Expanded key plus the S-boxes fused with P (2 KiB); built once by
 * sh_des_setkey and read-only afterwards, so it may be shared by threads. */
typedef struct {
    uint64_t subkey[16]; /* 48-bit round keys, K1..K16 */
    uint32_t sp[8][64];  /* S-box i followed by the permutation P */
} sh_des_ctx;

/* key: 8 bytes (parity bits ignored, as in the standard). */
void sh_des_setkey(sh_des_ctx *ctx, const uint8_t key[8]);

uint64_t sh_des_encrypt(const sh_des_ctx *ctx, uint64_t block);
uint64_t sh_des_decrypt(const sh_des_ctx *ctx, uint64_t block);

void sh_des_encrypt_batch(const sh_des_ctx *ctx, const uint64_t *in, size_t n, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_DES_H */
