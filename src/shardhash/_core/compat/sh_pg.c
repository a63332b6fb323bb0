/*
 * shardhash core: PostgreSQL's lookup3 hashes and per-type rules.
 * See sh_pg.h for what is reproduced and where it comes from.
 */
#include "sh_pg.h"
#include "sh_cpu.h"
#include "sh_window.h"

/* The SH_CPU_* kernels chosen by sh_pg_init; 0 (the scalar kernels) until it
 * runs.  Written only by sh_pg_init, which the caller runs once before any
 * other thread can run a kernel (the Python module does at import), so the
 * kernels only ever read it. */
static unsigned sh_pg_cpu = 0;

void sh_pg_init(void)
{
    sh_pg_cpu = sh_cpu_detect();
}

int sh_pg_avx2_available(void)
{
    return (sh_pg_cpu & SH_CPU_AVX2) != 0;
}

/* lookup3's 12-byte blocks of k[0 .. *len) into (*pa, *pb, *pc): returns
 * where the tail starts, *len becoming its length (len % 12). */
SH_FORCE_INLINE const uint8_t *sh_pg_lookup3_blocks(const uint8_t *k, size_t *len, uint32_t *pa, uint32_t *pb,
                                                    uint32_t *pc)
{
    uint32_t a = *pa, b = *pb, c = *pc;
    size_t rest = *len;
    for (; rest >= 12; k += 12, rest -= 12) {
        a += sh_read32le(k);
        b += sh_read32le(k + 4);
        c += sh_read32le(k + 8);
        SH_PG_MIX(a, b, c);
    }
    *pa = a;
    *pb = b;
    *pc = c;
    *len = rest;
    return k;
}

/* lookup3 over a byte string, with PostgreSQL's little-endian tail layout:
 * the bytes left after the 12-byte blocks go, in order, into the low bytes
 * of a, then b, then bytes 9..11 into c's upper three bytes (its low byte is
 * reserved for the length).  `final` is applied unconditionally. */
SH_FORCE_INLINE void sh_pg_lookup3_body(const uint8_t *k, size_t len, uint32_t *pa, uint32_t *pb,
                                        uint32_t *pc)
{
    uint32_t a, b, c;
    k = sh_pg_lookup3_blocks(k, &len, pa, pb, pc);
    a = *pa;
    b = *pb;
    c = *pc;
    switch (len) {
    case 11: c += (uint32_t)k[10] << 24; /* fall through */
    case 10: c += (uint32_t)k[9] << 16;  /* fall through */
    case 9: c += (uint32_t)k[8] << 8;    /* fall through */
    case 8: b += (uint32_t)k[7] << 24;   /* fall through */
    case 7: b += (uint32_t)k[6] << 16;   /* fall through */
    case 6: b += (uint32_t)k[5] << 8;    /* fall through */
    case 5: b += (uint32_t)k[4];         /* fall through */
    case 4: a += (uint32_t)k[3] << 24;   /* fall through */
    case 3: a += (uint32_t)k[2] << 16;   /* fall through */
    case 2: a += (uint32_t)k[1] << 8;    /* fall through */
    case 1: a += (uint32_t)k[0];         /* fall through */
    default: break;
    }
    SH_PG_FINAL(a, b, c);
    *pa = a;
    *pb = b;
    *pc = c;
}

uint64_t sh_pg_hash_bytes_extended(const void *data, size_t len, uint64_t seed)
{
    uint32_t a, b, c;
    /* PostgreSQL passes the length as an int; it wraps the same way. */
    a = b = c = SH_PG_INIT + (uint32_t)len + SH_PG_INIT_EXTRA;
    if (seed != 0) {
        a += (uint32_t)(seed >> 32);
        b += (uint32_t)seed;
        SH_PG_MIX(a, b, c);
    }
    sh_pg_lookup3_body((const uint8_t *)data, len, &a, &b, &c);
    return ((uint64_t)b << 32) | (uint64_t)c;
}

uint32_t sh_pg_hash_bytes(const void *data, size_t len)
{
    uint32_t a, b, c;
    a = b = c = SH_PG_INIT + (uint32_t)len + SH_PG_INIT_EXTRA;
    sh_pg_lookup3_body((const uint8_t *)data, len, &a, &b, &c);
    return c;
}

/* The 8 bytes PostgreSQL hashes for a float8 (little-endian host), after
 * canonicalising NaN.  Returns 0 for +-0, which the callers special-case. */
SH_FORCE_INLINE int sh_pg_float8_bytes(double v, uint8_t out[8])
{
    uint64_t bits;
    if (v == 0.0) return 0;
    if (v != v) {
        bits = UINT64_C(0x7ff8000000000000);
    } else {
        memcpy(&bits, &v, sizeof bits);
    }
    sh_write64le(out, bits);
    return 1;
}

uint64_t sh_pg_hash_float8_extended(double v, uint64_t seed)
{
    uint8_t buf[8];
    if (!sh_pg_float8_bytes(v, buf)) return seed;
    return sh_pg_hash_bytes_extended(buf, 8, seed);
}

uint32_t sh_pg_hash_float8(double v)
{
    uint8_t buf[8];
    if (!sh_pg_float8_bytes(v, buf)) return 0;
    return sh_pg_hash_bytes(buf, 8);
}

/* ---- batch kernels ---- */

void sh_pg_int2_extended(const int16_t *v, size_t n, uint64_t seed, uint64_t *out)
{
    sh_pg_u32state s = sh_pg_u32state_init(seed);
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_u32ext_from(s, (uint32_t)(int32_t)v[i]);
}

void sh_pg_int4_extended(const int32_t *v, size_t n, uint64_t seed, uint64_t *out)
{
    sh_pg_u32state s = sh_pg_u32state_init(seed);
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_u32ext_from(s, (uint32_t)v[i]);
}

void sh_pg_int8_extended(const int64_t *v, size_t n, uint64_t seed, uint64_t *out)
{
    sh_pg_u32state s = sh_pg_u32state_init(seed);
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_u32ext_from(s, sh_pg_fold_int8(v[i]));
}

void sh_pg_float8_extended(const double *v, size_t n, uint64_t seed, uint64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_hash_float8_extended(v[i], seed);
}

void sh_pg_fixed_extended(const uint8_t *data, size_t width, size_t n, uint64_t seed, uint64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_hash_bytes_extended(data + i * width, width, seed);
}

/*
 * Batch kernels over variable-length keys.  lookup3's tail (len % 12 bytes,
 * added into a, b and the upper bytes of c) is cut out of the key's 16-byte
 * window with shifts (see sh_window.h) instead of the switch above, whose
 * indirect jump is mispredicted on nearly every key when lengths vary.  The
 * tail bytes occupy disjoint bytes of a, b and c, so adding the tail's
 * little-endian words is adding its bytes one by one.
 */
SH_FORCE_INLINE void sh_pg_lookup3_window(const uint8_t *k, size_t len, uint64_t lo, uint64_t hi,
                                          uint32_t *pa, uint32_t *pb, uint32_t *pc)
{
    uint32_t a, b, c;
    uint64_t w0, w1;
    size_t rest = len;
    k = sh_pg_lookup3_blocks(k, &rest, pa, pb, pc);
    a = *pa;
    b = *pb;
    c = *pc;
    sh_window_tail(lo, hi, (unsigned)rest, &w0, &w1);
    a += (uint32_t)w0;
    b += (uint32_t)(w0 >> 32);
    c += ((uint32_t)w1 & 0xffffffu) << 8;
    SH_PG_FINAL(a, b, c);
    *pa = a;
    *pb = b;
    *pc = c;
}

void sh_pg_varlen_extended(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                           uint64_t *out)
{
    /* sh_pg_avx2.c: eight keys per vector where the build and the CPU have AVX2 */
    SH_CPU_PICK(sh_pg_cpu, SH_CPU_AVX2, sh_pg_varlen_extended_avx2,
                sh_pg_varlen_extended_scalar)(data, offsets, n, seed, out);
}

/* lookup3's (b, c) for key i of Arrow data: hash_bytes_extended's with a
 * seed, hash_bytes's (c) with seed 0 (the two differ only in the seed's
 * mix). */
SH_FORCE_INLINE void sh_pg_varlen_key(const uint8_t *data, const int64_t *offsets, size_t i, uint64_t seed,
                                      uint32_t *pb, uint32_t *pc)
{
    int64_t start = offsets[i], stop = offsets[i + 1];
    size_t len = (size_t)(stop - start);
    uint32_t a, b, c;
    uint64_t lo, hi;
    sh_window_arrow(data, start, stop, &lo, &hi);
    a = b = c = SH_PG_INIT + (uint32_t)len + SH_PG_INIT_EXTRA;
    if (seed != 0) {
        a += (uint32_t)(seed >> 32);
        b += (uint32_t)seed;
        SH_PG_MIX(a, b, c);
    }
    sh_pg_lookup3_window(data + start, len, lo, hi, &a, &b, &c);
    *pb = b;
    *pc = c;
}

void sh_pg_varlen_extended_scalar(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                                  uint64_t *out)
{
    size_t i;
    uint32_t b, c;
    for (i = 0; i < n; i++) {
        sh_pg_varlen_key(data, offsets, i, seed, &b, &c);
        out[i] = ((uint64_t)b << 32) | (uint64_t)c;
    }
}

/* uint32 -> int32 without implementation-defined conversion */
SH_FORCE_INLINE int32_t sh_pg_as_int32(uint32_t x)
{
    return x <= UINT32_C(0x7fffffff) ? (int32_t)x : (int32_t)(x - UINT32_C(0x80000000)) + INT32_MIN;
}

void sh_pg_int2_32(const int16_t *v, size_t n, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_as_int32(sh_pg_hash_uint32((uint32_t)(int32_t)v[i]));
}

void sh_pg_int4_32(const int32_t *v, size_t n, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_as_int32(sh_pg_hash_uint32((uint32_t)v[i]));
}

void sh_pg_int8_32(const int64_t *v, size_t n, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_as_int32(sh_pg_hash_uint32(sh_pg_fold_int8(v[i])));
}

void sh_pg_float8_32(const double *v, size_t n, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_as_int32(sh_pg_hash_float8(v[i]));
}

void sh_pg_fixed_32(const uint8_t *data, size_t width, size_t n, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_as_int32(sh_pg_hash_bytes(data + i * width, width));
}

void sh_pg_varlen_32(const uint8_t *data, const int64_t *offsets, size_t n, int32_t *out)
{
    SH_CPU_PICK(sh_pg_cpu, SH_CPU_AVX2, sh_pg_varlen_32_avx2, sh_pg_varlen_32_scalar)(data, offsets, n, out);
}

void sh_pg_varlen_32_scalar(const uint8_t *data, const int64_t *offsets, size_t n, int32_t *out)
{
    size_t i;
    uint32_t b, c;
    for (i = 0; i < n; i++) {
        sh_pg_varlen_key(data, offsets, i, 0, &b, &c);
        out[i] = sh_pg_as_int32(c);
    }
}

void sh_pg_combine64(uint64_t *acc, const uint64_t *h, const uint8_t *isnull, size_t n)
{
    size_t i;
    if (isnull == NULL) {
        for (i = 0; i < n; i++) acc[i] = sh_pg_hash_combine64(acc[i], h[i]);
    } else {
        for (i = 0; i < n; i++)
            if (!isnull[i]) acc[i] = sh_pg_hash_combine64(acc[i], h[i]);
    }
}

void sh_pg_remainder(const uint64_t *rowhash, size_t n, uint64_t modulus, int64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = (int64_t)(rowhash[i] % modulus);
}
