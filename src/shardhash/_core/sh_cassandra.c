/*
 * Cassandra's MurmurHash3_x64_128 variant and Murmur3Partitioner tokens,
 * written from the algorithm's description and Cassandra's documented
 * behaviour (MurmurHash.hash3_x64_128, Murmur3Partitioner.getToken).
 */
#include "sh_cassandra.h"

#define SH_CASS_C1 UINT64_C(0x87c37b91114253d5)
#define SH_CASS_C2 UINT64_C(0x4cf5ad432745937f)

SH_FORCE_INLINE uint64_t sh_cass_fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    return k;
}

/* A Java byte widened to long: sign-extended, as a uint64 bit pattern. */
SH_FORCE_INLINE uint64_t sh_cass_sbyte(uint8_t b)
{
    return (b & 0x80u) ? (UINT64_C(0xffffffffffffff00) | b) : (uint64_t)b;
}

uint64_t sh_cassandra_murmur_h1(const void *data, size_t len)
{
    const uint8_t *p = (const uint8_t *)data;
    size_t nblocks = len / 16, i;
    const uint8_t *tail;
    uint64_t h1 = 0, h2 = 0, k1, k2;

    for (i = 0; i < nblocks; i++) {
        k1 = sh_read64le(p + 16 * i);
        k2 = sh_read64le(p + 16 * i + 8);
        k1 *= SH_CASS_C1; k1 = sh_rotl64(k1, 31); k1 *= SH_CASS_C2; h1 ^= k1;
        h1 = sh_rotl64(h1, 27); h1 += h2; h1 = h1 * 5 + 0x52dce729u;
        k2 *= SH_CASS_C2; k2 = sh_rotl64(k2, 33); k2 *= SH_CASS_C1; h2 ^= k2;
        h2 = sh_rotl64(h2, 31); h2 += h1; h2 = h2 * 5 + 0x38495ab5u;
    }

    tail = p + 16 * nblocks;
    k1 = 0;
    k2 = 0;
    switch (len & 15u) {
    case 15: k2 ^= sh_cass_sbyte(tail[14]) << 48; /* fall through */
    case 14: k2 ^= sh_cass_sbyte(tail[13]) << 40; /* fall through */
    case 13: k2 ^= sh_cass_sbyte(tail[12]) << 32; /* fall through */
    case 12: k2 ^= sh_cass_sbyte(tail[11]) << 24; /* fall through */
    case 11: k2 ^= sh_cass_sbyte(tail[10]) << 16; /* fall through */
    case 10: k2 ^= sh_cass_sbyte(tail[9]) << 8;   /* fall through */
    case 9:
        k2 ^= sh_cass_sbyte(tail[8]);
        k2 *= SH_CASS_C2; k2 = sh_rotl64(k2, 33); k2 *= SH_CASS_C1; h2 ^= k2;
        /* fall through */
    case 8: k1 ^= sh_cass_sbyte(tail[7]) << 56; /* fall through */
    case 7: k1 ^= sh_cass_sbyte(tail[6]) << 48; /* fall through */
    case 6: k1 ^= sh_cass_sbyte(tail[5]) << 40; /* fall through */
    case 5: k1 ^= sh_cass_sbyte(tail[4]) << 32; /* fall through */
    case 4: k1 ^= sh_cass_sbyte(tail[3]) << 24; /* fall through */
    case 3: k1 ^= sh_cass_sbyte(tail[2]) << 16; /* fall through */
    case 2: k1 ^= sh_cass_sbyte(tail[1]) << 8;  /* fall through */
    case 1:
        k1 ^= sh_cass_sbyte(tail[0]);
        k1 *= SH_CASS_C1; k1 = sh_rotl64(k1, 31); k1 *= SH_CASS_C2; h1 ^= k1;
        break;
    default:
        break;
    }

    h1 ^= (uint64_t)len;
    h2 ^= (uint64_t)len;
    h1 += h2;
    h2 += h1;
    h1 = sh_cass_fmix64(h1);
    h2 = sh_cass_fmix64(h2);
    h1 += h2;
    return h1;
}

/* Bit pattern -> int64 without implementation-defined conversion. */
SH_FORCE_INLINE int64_t sh_cass_as_signed(uint64_t u)
{
    int64_t s;
    memcpy(&s, &u, sizeof s);
    return s;
}

SH_FORCE_INLINE int64_t sh_cass_token_of(uint64_t h1)
{
    int64_t t = sh_cass_as_signed(h1);
    return t == INT64_MIN ? INT64_MAX : t;
}

int64_t sh_cassandra_token(const void *data, size_t len)
{
    if (len == 0) return INT64_MIN;
    return sh_cass_token_of(sh_cassandra_murmur_h1(data, len));
}

void sh_cassandra_token_offsets(const int64_t *offsets, const uint8_t *data, size_t n, int64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        int64_t a = offsets[i], b = offsets[i + 1];
        out[i] = sh_cassandra_token(data + a, (size_t)(b - a));
    }
}

void sh_cassandra_token_bigint(const int64_t *values, size_t n, int64_t *out)
{
    uint8_t buf[8];
    size_t i;
    int j;
    for (i = 0; i < n; i++) {
        uint64_t u = (uint64_t)values[i];
        for (j = 0; j < 8; j++) buf[j] = (uint8_t)(u >> (56 - 8 * j));
        out[i] = sh_cass_token_of(sh_cassandra_murmur_h1(buf, 8));
    }
}

void sh_cassandra_token_int(const int32_t *values, size_t n, int64_t *out)
{
    uint8_t buf[4];
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t u = (uint32_t)values[i];
        buf[0] = (uint8_t)(u >> 24); buf[1] = (uint8_t)(u >> 16);
        buf[2] = (uint8_t)(u >> 8);  buf[3] = (uint8_t)u;
        out[i] = sh_cass_token_of(sh_cassandra_murmur_h1(buf, 4));
    }
}

void sh_cassandra_ring_index(const int64_t *ring, size_t m, const int64_t *tokens, size_t n, int64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        int64_t t = tokens[i];
        size_t lo = 0, hi = m; /* lower_bound: first ring[k] >= t */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ring[mid] < t) lo = mid + 1; else hi = mid;
        }
        out[i] = (int64_t)(lo == m ? 0 : lo);
    }
}
