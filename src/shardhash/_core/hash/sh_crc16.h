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

#ifdef __cplusplus
}
#endif

#endif /* SH_CRC16_H */
