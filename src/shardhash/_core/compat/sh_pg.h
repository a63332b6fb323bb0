/*
 * shardhash core: PostgreSQL's hash functions, as used by declarative hash
 * partitioning (the seeded 64-bit "extended" hashes) and by Citus (the
 * unseeded 32-bit hashes).
 *
 * Written from PostgreSQL's documented behaviour: Bob Jenkins' lookup3 as
 * PostgreSQL has it in src/common/hashfn.c (hash_bytes, hash_bytes_extended,
 * hash_bytes_uint32, hash_bytes_uint32_extended, hash_combine64) and the
 * per-type rules of src/backend/access/hash/hashfunc.c and the date,
 * timestamp, float8 and uuid hash functions.
 *
 * Byte order: PostgreSQL loads 32-bit words in host order, so the hashes of
 * byte strings (text, bytea, uuid, float8) differ between little-endian and
 * big-endian servers.  These functions always load little-endian and so
 * reproduce x86-64 / arm64 servers on every host.  Integer types hash their
 * value, not their bytes, and agree everywhere.
 *
 * Plain C99, no Python.h.
 */
#ifndef SH_PG_H
#define SH_PG_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* HASH_PARTITION_SEED of src/include/catalog/partition.h */
#define SH_PG_HASH_PARTITION_SEED UINT64_C(0x7A5B22367996DCFD)

/* lookup3's initial value: 0x9e3779b9 (golden ratio) + 3923095. */
#define SH_PG_INIT       UINT32_C(0x9e3779b9)
#define SH_PG_INIT_EXTRA UINT32_C(3923095)

/* clang-format off */
#define SH_PG_MIX(a, b, c)                                  \
    do {                                                    \
        a -= c; a ^= sh_rotl32(c, 4);  c += b;              \
        b -= a; b ^= sh_rotl32(a, 6);  a += c;              \
        c -= b; c ^= sh_rotl32(b, 8);  b += a;              \
        a -= c; a ^= sh_rotl32(c, 16); c += b;              \
        b -= a; b ^= sh_rotl32(a, 19); a += c;              \
        c -= b; c ^= sh_rotl32(b, 4);  b += a;              \
    } while (0)

#define SH_PG_FINAL(a, b, c)                                \
    do {                                                    \
        c ^= b; c -= sh_rotl32(b, 14);                      \
        a ^= c; a -= sh_rotl32(c, 11);                      \
        b ^= a; b -= sh_rotl32(a, 25);                      \
        c ^= b; c -= sh_rotl32(b, 16);                      \
        a ^= c; a -= sh_rotl32(c, 4);                       \
        b ^= a; b -= sh_rotl32(a, 14);                      \
        c ^= b; c -= sh_rotl32(b, 24);                      \
    } while (0)
/* clang-format on */

/* State of hash_bytes_uint32_extended after the seed step, which does not
 * depend on the hashed value: computed once per seed for batch loops. */
typedef struct {
    uint32_t a, b, c;
} sh_pg_u32state;

SH_INLINE sh_pg_u32state sh_pg_u32state_init(uint64_t seed)
{
    sh_pg_u32state s;
    uint32_t a, b, c;
    a = b = c = SH_PG_INIT + 4u + SH_PG_INIT_EXTRA;
    if (seed != 0) {
        a += (uint32_t)(seed >> 32);
        b += (uint32_t)seed;
        SH_PG_MIX(a, b, c);
    }
    s.a = a;
    s.b = b;
    s.c = c;
    return s;
}

/* hash_bytes_uint32_extended(k, seed) given the precomputed seed state. */
SH_FORCE_INLINE uint64_t sh_pg_u32ext_from(sh_pg_u32state s, uint32_t k)
{
    uint32_t a = s.a + k, b = s.b, c = s.c;
    SH_PG_FINAL(a, b, c);
    return ((uint64_t)b << 32) | (uint64_t)c;
}

/* hash_uint32_extended / hash_bytes_uint32_extended */
SH_INLINE uint64_t sh_pg_hash_uint32_extended(uint32_t k, uint64_t seed)
{
    return sh_pg_u32ext_from(sh_pg_u32state_init(seed), k);
}

/* hash_uint32 / hash_bytes_uint32 (unseeded, 32-bit result) */
SH_FORCE_INLINE uint32_t sh_pg_hash_uint32(uint32_t k)
{
    uint32_t a, b, c;
    a = b = c = SH_PG_INIT + 4u + SH_PG_INIT_EXTRA;
    a += k;
    SH_PG_FINAL(a, b, c);
    return c;
}

/* hashint8's fold of a 64-bit integer to 32 bits: the high half is xored
 * into the low half, complemented for negative values so that every value
 * that fits in int32 folds to itself. */
SH_FORCE_INLINE uint32_t sh_pg_fold_int8(int64_t v)
{
    /* lo ^ (v >= 0 ? hi : ~hi), branch-free so that batch loops vectorise */
    uint64_t u = (uint64_t)v;
    uint32_t lo = (uint32_t)u, hi = (uint32_t)(u >> 32);
    uint32_t neg = 0u - (uint32_t)(u >> 63);
    return lo ^ hi ^ neg;
}

/* hash_combine64 of src/include/common/hashfn.h */
SH_FORCE_INLINE uint64_t sh_pg_hash_combine64(uint64_t a, uint64_t b)
{
    a ^= b + UINT64_C(0x49a0f4dd15e5a8e3) + (a << 54) + (a >> 7);
    return a;
}

/* hash_bytes_extended (hash_any_extended) and hash_bytes (hash_any). */
uint64_t sh_pg_hash_bytes_extended(const void *data, size_t len, uint64_t seed);
uint32_t sh_pg_hash_bytes(const void *data, size_t len);

/* hashfloat8extended / hashfloat8: +-0 give the seed (0 for the 32-bit
 * hash), every NaN is hashed as the canonical 0x7ff8000000000000, other
 * values as their 8 IEEE-754 bytes.  (float4 widens to float8 first.) */
uint64_t sh_pg_hash_float8_extended(double v, uint64_t seed);
uint32_t sh_pg_hash_float8(double v);

/* ---- batch kernels (no allocation, no error paths) ---- */

/* Integer columns: int2/int4/date hash their (sign-extended) value, int8
 * and timestamp their fold.  `out` gets the extended (seeded) hash. */
void sh_pg_int2_extended(const int16_t *v, size_t n, uint64_t seed, uint64_t *out);
void sh_pg_int4_extended(const int32_t *v, size_t n, uint64_t seed, uint64_t *out);
void sh_pg_int8_extended(const int64_t *v, size_t n, uint64_t seed, uint64_t *out);
void sh_pg_float8_extended(const double *v, size_t n, uint64_t seed, uint64_t *out);
/* n keys of `width` bytes each, packed (uuid: width 16). */
void sh_pg_fixed_extended(const uint8_t *data, size_t width, size_t n, uint64_t seed, uint64_t *out);
/* Variable-length keys in Arrow layout: key i is data[offsets[i] .. offsets[i+1]),
 * offsets non-decreasing, data the start of the buffer (offsets count from
 * it).  The kernels may read up to 16 bytes before a key (never before data)
 * and never past its end. */
void sh_pg_varlen_extended(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                           uint64_t *out);

/* The same for the unseeded 32-bit hashes (hashint2, hashint4, hashint8,
 * hashfloat8, uuid_hash, hashtext, hashvarlena), results as int32. */
void sh_pg_int2_32(const int16_t *v, size_t n, int32_t *out);
void sh_pg_int4_32(const int32_t *v, size_t n, int32_t *out);
void sh_pg_int8_32(const int64_t *v, size_t n, int32_t *out);
void sh_pg_float8_32(const double *v, size_t n, int32_t *out);
void sh_pg_fixed_32(const uint8_t *data, size_t width, size_t n, int32_t *out);
void sh_pg_varlen_32(const uint8_t *data, const int64_t *offsets, size_t n, int32_t *out);

/* The kernels sh_pg_varlen_extended and sh_pg_varlen_32 choose between: one
 * key after another (sh_pg.c), and eight keys per AVX2 vector, grouped by
 * block count (sh_pg_avx2.c; the scalar kernel where the build or the CPU
 * lacks AVX2).  Same outputs; the tests run both. */
void sh_pg_varlen_extended_scalar(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                                  uint64_t *out);
void sh_pg_varlen_32_scalar(const uint8_t *data, const int64_t *offsets, size_t n, int32_t *out);
void sh_pg_varlen_extended_avx2(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                                uint64_t *out);
void sh_pg_varlen_32_avx2(const uint8_t *data, const int64_t *offsets, size_t n, int32_t *out);

/* Choose the SIMD kernels for this CPU (sh_cpu_detect); call once, before
 * any kernel runs in another thread.  Until then the scalar kernels run. */
void sh_pg_init(void);
/* 1 when this build has the AVX2 kernel and sh_pg_init found AVX2, else 0. */
int sh_pg_avx2_available(void);

/* Multi-column row hash, one column at a time:
 *     acc[i] = hash_combine64(acc[i], h[i])   unless isnull != NULL && isnull[i]
 * (PostgreSQL skips NULL columns).  Start from acc = 0. */
void sh_pg_combine64(uint64_t *acc, const uint64_t *h, const uint8_t *isnull, size_t n);

/* Remainder of each row hash modulo `modulus` (unsigned 64-bit modulo, as
 * in get_partition_for_tuple).  modulus must be > 0. */
void sh_pg_remainder(const uint64_t *rowhash, size_t n, uint64_t modulus, int64_t *out);

/* ---- range and multirange types (hash_range, hash_multirange) ----
 *
 * A range of an integer-like element type (int4, int8, date as days,
 * timestamp / timestamptz as microseconds since 2000-01-01) is its flags
 * byte (rangetypes.h: RANGE_EMPTY, RANGE_LB_INC, ...) and its two bounds as
 * int64; a missing (infinite) bound's value is ignored.  `wide`: the
 * element's hash folds 64 bits (int8, timestamp) instead of taking the low
 * 32 bits (int4, date). */
#define SH_PG_RANGE_EMPTY  0x01u
#define SH_PG_RANGE_LB_INC 0x02u
#define SH_PG_RANGE_UB_INC 0x04u
#define SH_PG_RANGE_LB_INF 0x08u
#define SH_PG_RANGE_UB_INF 0x10u

/* range_serialize's checks and canonical form of one range given as written
 * (flags: EMPTY, or LB_INF / UB_INF for a missing bound and LB_INC / UB_INC
 * for '[' / ']'): lower > upper is an error; equal bounds not both inclusive
 * make it empty; a discrete range (discrete != 0) becomes [lower, upper),
 * where lower + 1 or upper + 1 must not pass `vmax`.  Infinite bounds lose
 * their inclusive flag, an empty range keeps only RANGE_EMPTY (bounds 0).
 * Returns 0, or -1 (the caller reports the error; the range is unchanged). */
int sh_pg_range_canonical(int discrete, int64_t vmax, uint8_t *flags, int64_t *lower, int64_t *upper);

/* multirange_canonicalize of k canonical, non-empty ranges (in place): sorted
 * by range_cmp_bounds of the lower, then the upper bounds, and merged where
 * they overlap or touch.  Returns the number of ranges left, at the start. */
size_t sh_pg_multirange_canonical(uint8_t *flags, int64_t *lower, int64_t *upper, size_t k);

/* hash_range_extended / hash_range of n canonical ranges. */
void sh_pg_range_extended(const uint8_t *flags, const int64_t *lower, const int64_t *upper, size_t n,
                          int wide, uint64_t seed, uint64_t *out);
void sh_pg_range_32(const uint8_t *flags, const int64_t *lower, const int64_t *upper, size_t n, int wide,
                    int32_t *out);

/* hash_multirange_extended / hash_multirange of n multiranges: multirange i
 * is the canonical ranges [offsets[i], offsets[i + 1]) of the range arrays
 * (as sh_pg_multirange_canonical leaves them). */
void sh_pg_multirange_extended(const uint8_t *flags, const int64_t *lower, const int64_t *upper,
                               const int64_t *offsets, size_t n, int wide, uint64_t seed, uint64_t *out);
void sh_pg_multirange_32(const uint8_t *flags, const int64_t *lower, const int64_t *upper,
                         const int64_t *offsets, size_t n, int wide, int32_t *out);

/* hash_record / hash_array's fold, one field or element column at a time:
 *     acc[i] = acc[i] * 31 + (isnull && isnull[i] ? 0 : h[i])   (mod 2**64)
 * (the 32-bit hashes: keep the low half of the result). */
void sh_pg_fold31(uint64_t *acc, const uint64_t *h, const uint8_t *isnull, size_t n);

/* hash_numeric(_extended) of a numeric: lookup3 over its base-10000 digits
 * (int16, little-endian) without leading and trailing zero digits, xor its
 * weight (the first digit's power of 10000); the sign is not hashed; zero
 * hashes to seed - 1 (32-bit: 0xFFFFFFFF), NaN and infinities to the seed
 * (32-bit: 0).  wide: the extended hash with seed, else the 32-bit hash
 * (unsigned) in *out.
 *
 * sh_pg_numeric_text reads the decimal text of a Python int or Decimal:
 * [sign] digits [. digits] [(E|e) [sign] up to 18 digits], or [sign] NaN
 * [digits] or [sign] Infinity; it returns 0, or -1 (out untouched) for any
 * other text (a signalling NaN included: the caller's slow path judges it). */
int sh_pg_numeric_text(const char *s, size_t len, int wide, uint64_t seed, uint64_t *out);
/* The same for a value that fits in int64. */
void sh_pg_numeric_int64(int64_t v, int wide, uint64_t seed, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_PG_H */
