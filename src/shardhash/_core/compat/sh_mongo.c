/*
 * MongoDB hashed shard keys: the hashed-index value of a number (MD5 of its
 * canonical encoding), written from MongoDB's documented behaviour.
 */
#include "sh_mongo.h"
#include "sh_md5.h"

uint64_t sh_mongo_hash_int64(int64_t v)
{
    /* 16-byte message, always a single padded block. */
    uint8_t block[64];
    uint32_t s[4];
    uint64_t u = (uint64_t)v;
    int i;
    memset(block, 0, sizeof block);
    /* bytes 0..3: seed 0; bytes 4..7: canonical type 10 (number). */
    block[4] = 10u;
    for (i = 0; i < 8; i++) block[8 + i] = (uint8_t)(u >> (8 * i));
    block[16] = 0x80u;
    block[56] = 128u; /* 16 bytes = 128 bits */
    s[0] = 0x67452301u;
    s[1] = 0xefcdab89u;
    s[2] = 0x98badcfeu;
    s[3] = 0x10325476u;
    sh_md5_block(s, block);
    return (uint64_t)s[0] | ((uint64_t)s[1] << 32);
}

void sh_mongo_hash_int64_batch(const int64_t *values, size_t n, uint64_t *out)
{
    /* Sixteen values at a time through the multi-lane MD5: each message is
     * seed 0, type 10 and the value, one padded block of 16 bytes. */
    uint32_t X[16][SH_MD5_LANES], a[SH_MD5_LANES], b[SH_MD5_LANES];
    size_t i = 0;
    int l, w;
    for (w = 0; w < 16; w++)
        for (l = 0; l < SH_MD5_LANES; l++) X[w][l] = 0;
    for (l = 0; l < SH_MD5_LANES; l++) {
        X[1][l] = 10u;
        X[4][l] = 0x80u;
        X[14][l] = 128u;
    }
    for (; i + SH_MD5_LANES <= n; i += SH_MD5_LANES) {
        for (l = 0; l < SH_MD5_LANES; l++) {
            uint64_t u = (uint64_t)values[i + (size_t)l];
            X[2][l] = (uint32_t)u;
            X[3][l] = (uint32_t)(u >> 32);
        }
        sh_md5_lanes(X, a, b);
        for (l = 0; l < SH_MD5_LANES; l++) out[i + (size_t)l] = (uint64_t)a[l] | ((uint64_t)b[l] << 32);
    }
    for (; i < n; i++) out[i] = sh_mongo_hash_int64(values[i]);
}

int64_t sh_mongo_double_to_long(double d)
{
    /* 9223372036854775808.0 is 2^63, exactly representable. */
    if (d != d) return 0;
    if (d == 9223372036854775808.0) return INT64_MIN;
    if (d > 9223372036854775808.0) return INT64_MAX;
    if (d < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d; /* in range: C truncates toward zero */
}

void sh_mongo_hash_double_batch(const double *values, size_t n, uint64_t *out)
{
    int64_t buf[256];
    size_t i, k, chunk;
    for (i = 0; i < n; i += chunk) {
        chunk = n - i < 256 ? n - i : 256;
        for (k = 0; k < chunk; k++) buf[k] = sh_mongo_double_to_long(values[i + k]);
        sh_mongo_hash_int64_batch(buf, chunk, out + i);
    }
}
