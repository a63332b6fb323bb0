/*
 * shardhash core: CRC16-XMODEM.
 *
 * Polynomial 0x1021, initial value 0, most significant bit first, no
 * reflection, no final xor (check value of "123456789": 0x31C3).  Redis
 * Cluster's key slots (sh_redis.h) are built on it.
 */
#ifndef SH_CRC16_H
#define SH_CRC16_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

uint16_t sh_crc16_xmodem(const void *data, size_t len);

/* The slicing tables (sh_crc16.c): table[k][b] is the register after byte
 * b followed by k zero bytes, from 0. */
extern const uint16_t sh_crc16_table[8][256];

/* The CRC of p[0 .. len), inline, slicing by four and a byte tail (reads only
 * the message). */
SH_FORCE_INLINE uint16_t sh_crc16_xmodem_inline(const uint8_t *p, size_t len)
{
    uint32_t crc = 0;
    while (len >= 4) {
        uint32_t x = crc ^ (((uint32_t)p[0] << 8) | p[1]);
        crc = (uint32_t)sh_crc16_table[3][x >> 8] ^ sh_crc16_table[2][x & 0xffu] ^ sh_crc16_table[1][p[2]] ^
              sh_crc16_table[0][p[3]];
        p += 4;
        len -= 4;
    }
    while (len--) {
        crc = ((crc << 8) ^ sh_crc16_table[0][((crc >> 8) ^ *p++) & 0xffu]) & 0xffffu;
    }
    return (uint16_t)crc;
}

/* The register after one 8-byte step; w holds the 8 message bytes
 * big-endian (the first byte in the top bits). */
SH_FORCE_INLINE uint32_t sh_crc16_step8(uint32_t crc, uint64_t w)
{
    uint32_t x = crc ^ (uint32_t)(w >> 48);
    return (uint32_t)sh_crc16_table[7][x >> 8] ^ sh_crc16_table[6][x & 0xffu] ^
           sh_crc16_table[5][(w >> 40) & 0xffu] ^ sh_crc16_table[4][(w >> 32) & 0xffu] ^
           sh_crc16_table[3][(w >> 24) & 0xffu] ^ sh_crc16_table[2][(w >> 16) & 0xffu] ^
           sh_crc16_table[1][(w >> 8) & 0xffu] ^ sh_crc16_table[0][w & 0xffu];
}

/* The CRC of the len bytes that end at `end`, when the 7 bytes before them
 * are readable too (their values do not matter).  The register starts at 0,
 * so zero bytes in front of a message leave its CRC unchanged: the message
 * is taken as ceil(len / 8) whole 8-byte words, the first one with the
 * bytes before the message masked to zero.  No byte loop: on keys of mixed
 * lengths that loop's exit is mispredicted on nearly every key. */
SH_FORCE_INLINE uint16_t sh_crc16_xmodem_before(const uint8_t *end, size_t len)
{
    size_t steps = (len + 7) / 8, k;
    const uint8_t *q = end - 8 * steps;
    uint32_t crc = 0;
    if (steps == 0) return 0;
    crc = sh_crc16_step8(crc, sh_read64be(q) & (~UINT64_C(0) >> (8 * (8 * steps - len))));
    for (k = 1; k < steps; k++) crc = sh_crc16_step8(crc, sh_read64be(q + 8 * k));
    return (uint16_t)crc;
}

#ifdef __cplusplus
}
#endif

#endif /* SH_CRC16_H */
