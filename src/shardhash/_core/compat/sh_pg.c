/*
 * shardhash core: PostgreSQL's lookup3 hashes and per-type rules.
 * See sh_pg.h for what is reproduced and where it comes from.
 */
#include "sh_pg.h"
#include "sh_cpu.h"
#include "sh_window.h"

#include <stdlib.h>
#include <string.h>

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

/* ---- range and multirange types ---- */

int sh_pg_range_canonical(int discrete, int64_t vmax, uint8_t *flags, int64_t *lower, int64_t *upper)
{
    unsigned f = *flags;
    int64_t lo = *lower, hi = *upper;
    int lo_inf, hi_inf, lo_inc, hi_inc;
    if (f & SH_PG_RANGE_EMPTY) goto empty;
    lo_inf = (f & SH_PG_RANGE_LB_INF) != 0;
    hi_inf = (f & SH_PG_RANGE_UB_INF) != 0;
    lo_inc = !lo_inf && (f & SH_PG_RANGE_LB_INC) != 0;
    hi_inc = !hi_inf && (f & SH_PG_RANGE_UB_INC) != 0;
    if (lo_inf) lo = 0;
    if (hi_inf) hi = 0;
    if (!lo_inf && !hi_inf) {
        if (lo > hi) return -1; /* lower bound must be less than or equal to upper */
        if (lo == hi && !(lo_inc && hi_inc)) goto empty;
    }
    if (discrete) { /* [lower, upper) */
        if (!lo_inf && !lo_inc) {
            if (lo >= vmax) return -1; /* lower + 1 leaves the element type */
            lo++;
            lo_inc = 1;
        }
        if (!hi_inf && hi_inc) {
            if (hi >= vmax) return -1;
            hi++;
            hi_inc = 0;
        }
        if (!lo_inf && !hi_inf && lo == hi) goto empty;
    }
    *flags = (uint8_t)((lo_inf   ? SH_PG_RANGE_LB_INF
                        : lo_inc ? SH_PG_RANGE_LB_INC
                                 : 0u) |
                       (hi_inf   ? SH_PG_RANGE_UB_INF
                        : hi_inc ? SH_PG_RANGE_UB_INC
                                 : 0u));
    *lower = lo;
    *upper = hi;
    return 0;
empty:
    *flags = (uint8_t)SH_PG_RANGE_EMPTY;
    *lower = 0;
    *upper = 0;
    return 0;
}

/* One bound of a range, as range_cmp_bounds sees it. */
typedef struct {
    int64_t v;
    int inf, inc, lower;
} sh_pg_bound;

/* The lower (lower = 1) or upper bound of a range with flags f. */
SH_FORCE_INLINE sh_pg_bound sh_pg_bound_of(unsigned f, int64_t v, int lower)
{
    sh_pg_bound b;
    b.v = v;
    b.inf = (f & (lower ? SH_PG_RANGE_LB_INF : SH_PG_RANGE_UB_INF)) != 0;
    b.inc = (f & (lower ? SH_PG_RANGE_LB_INC : SH_PG_RANGE_UB_INC)) != 0;
    b.lower = lower;
    return b;
}

#define sh_pg_lower_of(f, v) sh_pg_bound_of((f), (v), 1)
#define sh_pg_upper_of(f, v) sh_pg_bound_of((f), (v), 0)

/* range_cmp_bounds */
static int sh_pg_cmp_bounds(sh_pg_bound a, sh_pg_bound b)
{
    if (a.inf && b.inf) return a.lower == b.lower ? 0 : (a.lower ? -1 : 1);
    if (a.inf) return a.lower ? -1 : 1;
    if (b.inf) return b.lower ? 1 : -1;
    if (a.v != b.v) return a.v < b.v ? -1 : 1;
    if (!a.inc && !b.inc) return a.lower == b.lower ? 0 : (a.lower ? 1 : -1);
    if (!a.inc) return a.lower ? 1 : -1;
    if (!b.inc) return b.lower ? -1 : 1;
    return 0;
}

/* range_cmp: lower bounds, then upper bounds */
static int sh_pg_cmp_ranges(const uint8_t *f, const int64_t *lo, const int64_t *hi, size_t i, size_t j)
{
    int c = sh_pg_cmp_bounds(sh_pg_lower_of(f[i], lo[i]), sh_pg_lower_of(f[j], lo[j]));
    return c ? c : sh_pg_cmp_bounds(sh_pg_upper_of(f[i], hi[i]), sh_pg_upper_of(f[j], hi[j]));
}

static void sh_pg_swap_ranges(uint8_t *f, int64_t *lo, int64_t *hi, size_t i, size_t j)
{
    uint8_t tf = f[i];
    int64_t tl = lo[i], th = hi[i];
    f[i] = f[j];
    lo[i] = lo[j];
    hi[i] = hi[j];
    f[j] = tf;
    lo[j] = tl;
    hi[j] = th;
}

/* heapsort's sift-down of node i in a heap of k ranges */
static void sh_pg_sift_ranges(uint8_t *f, int64_t *lo, int64_t *hi, size_t i, size_t k)
{
    for (;;) {
        size_t big = i, l = 2 * i + 1, r = l + 1;
        if (l < k && sh_pg_cmp_ranges(f, lo, hi, l, big) > 0) big = l;
        if (r < k && sh_pg_cmp_ranges(f, lo, hi, r, big) > 0) big = r;
        if (big == i) return;
        sh_pg_swap_ranges(f, lo, hi, i, big);
        i = big;
    }
}

static void sh_pg_sort_ranges(uint8_t *f, int64_t *lo, int64_t *hi, size_t k)
{
    size_t i, j;
    if (k <= 16) { /* insertion sort: a multirange usually holds a few ranges */
        for (i = 1; i < k; i++)
            for (j = i; j > 0 && sh_pg_cmp_ranges(f, lo, hi, j - 1, j) > 0; j--)
                sh_pg_swap_ranges(f, lo, hi, j - 1, j);
        return;
    }
    for (i = k / 2; i-- > 0;) sh_pg_sift_ranges(f, lo, hi, i, k);
    for (i = k - 1; i > 0; i--) {
        sh_pg_swap_ranges(f, lo, hi, 0, i);
        sh_pg_sift_ranges(f, lo, hi, 0, i);
    }
}

size_t sh_pg_multirange_canonical(uint8_t *flags, int64_t *lower, int64_t *upper, size_t k)
{
    size_t i, w = 0;
    sh_pg_sort_ranges(flags, lower, upper, k);
    for (i = 0; i < k; i++) {
        sh_pg_bound lu, pl, pu, ll, lo, hi;
        if (w == 0) {
            flags[0] = flags[i];
            lower[0] = lower[i];
            upper[0] = upper[i];
            w = 1;
            continue;
        }
        lu = sh_pg_upper_of(flags[w - 1], upper[w - 1]);
        pl = sh_pg_lower_of(flags[i], lower[i]);
        if (!(!lu.inf && !pl.inf && lu.v == pl.v && lu.inc != pl.inc) /* not adjacent */
            && sh_pg_cmp_bounds(lu, pl) < 0) {                        /* and a gap: a new range */
            flags[w] = flags[i];
            lower[w] = lower[i];
            upper[w] = upper[i];
            w++;
            continue;
        }
        /* overlapping or touching: the union */
        ll = sh_pg_lower_of(flags[w - 1], lower[w - 1]);
        pu = sh_pg_upper_of(flags[i], upper[i]);
        lo = sh_pg_cmp_bounds(ll, pl) <= 0 ? ll : pl;
        hi = sh_pg_cmp_bounds(lu, pu) >= 0 ? lu : pu;
        flags[w - 1] = (uint8_t)((lo.inf   ? SH_PG_RANGE_LB_INF
                                  : lo.inc ? SH_PG_RANGE_LB_INC
                                           : 0u) |
                                 (hi.inf   ? SH_PG_RANGE_UB_INF
                                  : hi.inc ? SH_PG_RANGE_UB_INC
                                           : 0u));
        lower[w - 1] = lo.inf ? 0 : lo.v;
        upper[w - 1] = hi.inf ? 0 : hi.v;
    }
    return w;
}

SH_FORCE_INLINE uint32_t sh_pg_elem_key(int64_t v, int wide)
{
    return wide ? sh_pg_fold_int8(v) : (uint32_t)(uint64_t)v;
}

/* ROTATE_HIGH_AND_LOW_32BITS */
SH_FORCE_INLINE uint64_t sh_pg_rot_halves(uint64_t r)
{
    return ((r << 1) & UINT64_C(0xFFFFFFFEFFFFFFFE)) | ((r >> 31) & UINT64_C(0x0000000100000001));
}

SH_FORCE_INLINE uint64_t sh_pg_range_ext1(sh_pg_u32state s, unsigned f, int64_t lo, int64_t hi, int wide)
{
    uint64_t r = sh_pg_u32ext_from(s, f);
    if (!(f & (SH_PG_RANGE_EMPTY | SH_PG_RANGE_LB_INF))) r ^= sh_pg_u32ext_from(s, sh_pg_elem_key(lo, wide));
    r = sh_pg_rot_halves(r);
    if (!(f & (SH_PG_RANGE_EMPTY | SH_PG_RANGE_UB_INF))) r ^= sh_pg_u32ext_from(s, sh_pg_elem_key(hi, wide));
    return r;
}

SH_FORCE_INLINE uint32_t sh_pg_range_321(unsigned f, int64_t lo, int64_t hi, int wide)
{
    uint32_t r = sh_pg_hash_uint32(f);
    if (!(f & (SH_PG_RANGE_EMPTY | SH_PG_RANGE_LB_INF))) r ^= sh_pg_hash_uint32(sh_pg_elem_key(lo, wide));
    r = sh_rotl32(r, 1);
    if (!(f & (SH_PG_RANGE_EMPTY | SH_PG_RANGE_UB_INF))) r ^= sh_pg_hash_uint32(sh_pg_elem_key(hi, wide));
    return r;
}

void sh_pg_range_extended(const uint8_t *flags, const int64_t *lower, const int64_t *upper, size_t n,
                          int wide, uint64_t seed, uint64_t *out)
{
    sh_pg_u32state s = sh_pg_u32state_init(seed);
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_range_ext1(s, flags[i], lower[i], upper[i], wide);
}

void sh_pg_range_32(const uint8_t *flags, const int64_t *lower, const int64_t *upper, size_t n, int wide,
                    int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_pg_as_int32(sh_pg_range_321(flags[i], lower[i], upper[i], wide));
}

void sh_pg_multirange_extended(const uint8_t *flags, const int64_t *lower, const int64_t *upper,
                               const int64_t *offsets, size_t n, int wide, uint64_t seed, uint64_t *out)
{
    sh_pg_u32state s = sh_pg_u32state_init(seed);
    size_t i;
    int64_t j;
    for (i = 0; i < n; i++) {
        uint64_t r = 1;
        for (j = offsets[i]; j < offsets[i + 1]; j++)
            r = r * 31u + sh_pg_range_ext1(s, flags[j], lower[j], upper[j], wide);
        out[i] = r;
    }
}

void sh_pg_multirange_32(const uint8_t *flags, const int64_t *lower, const int64_t *upper,
                         const int64_t *offsets, size_t n, int wide, int32_t *out)
{
    size_t i;
    int64_t j;
    for (i = 0; i < n; i++) {
        uint32_t r = 1;
        for (j = offsets[i]; j < offsets[i + 1]; j++)
            r = r * 31u + sh_pg_range_321(flags[j], lower[j], upper[j], wide);
        out[i] = sh_pg_as_int32(r);
    }
}

void sh_pg_fold31(uint64_t *acc, const uint64_t *h, const uint8_t *isnull, size_t n)
{
    size_t i;
    if (isnull == NULL) {
        for (i = 0; i < n; i++) acc[i] = acc[i] * 31u + h[i];
    } else {
        for (i = 0; i < n; i++) acc[i] = acc[i] * 31u + (isnull[i] ? 0u : h[i]);
    }
}

/* ------------------------------------------------------------------ numeric */

static int64_t sh_floordiv4(int64_t p)
{
    return p >= 0 ? p / 4 : -((-p + 3) / 4);
}

/* The hash of base-10000 digits g[0..k) (first and last non-zero) and weight. */
static uint64_t sh_numeric_digits_hash(const int16_t *g, size_t k, int64_t weight, int wide, uint64_t seed,
                                       uint8_t *buf)
{
    size_t i;
    for (i = 0; i < k; i++) {
        uint16_t u = (uint16_t)g[i];
        buf[2 * i] = (uint8_t)(u & 0xFFu);
        buf[2 * i + 1] = (uint8_t)(u >> 8);
    }
    if (wide) return sh_pg_hash_bytes_extended(buf, 2 * k, seed) ^ (uint64_t)weight;
    return (uint64_t)(sh_pg_hash_bytes(buf, 2 * k) ^ (uint32_t)(uint64_t)weight);
}

static void sh_numeric_special(int zero, int wide, uint64_t seed, uint64_t *out)
{
    if (zero)
        *out = wide ? seed - 1u : 0xFFFFFFFFu;
    else
        *out = wide ? seed : 0u;
}

void sh_pg_numeric_int64(int64_t v, int wide, uint64_t seed, uint64_t *out)
{
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int16_t rev[5], g[5];
    uint8_t buf[10];
    size_t k = 0, i, low = 0;
    if (u == 0) {
        sh_numeric_special(1, wide, seed, out);
        return;
    }
    while (u != 0) {
        rev[k++] = (int16_t)(u % 10000u);
        u /= 10000u;
    }
    while (rev[low] == 0) low++; /* trailing zero digits (the top one is not zero) */
    for (i = 0; i < k - low; i++) g[i] = rev[k - 1 - i];
    *out = sh_numeric_digits_hash(g, k - low, (int64_t)k - 1, wide, seed, buf);
}

int sh_pg_numeric_text(const char *s, size_t len, int wide, uint64_t seed, uint64_t *out)
{
    static const int16_t pow10[4] = {1, 10, 100, 1000};
    size_t i = 0, nd = 0, nfrac = 0, first, last, j, k;
    int64_t e = 0, exp10, top, weight, lowg;
    int16_t gstack[64], *g;
    uint8_t bstack[128], *buf;
    char dstack[256], *d;
    int saw_point = 0;
    if (i < len && (s[i] == '-' || s[i] == '+')) i++;
    if (len - i >= 3 && memcmp(s + i, "NaN", 3) == 0) {
        for (j = i + 3; j < len; j++)
            if (s[j] < '0' || s[j] > '9') return -1;
        sh_numeric_special(0, wide, seed, out);
        return 0;
    }
    if (len - i == 8 && memcmp(s + i, "Infinity", 8) == 0) {
        sh_numeric_special(0, wide, seed, out);
        return 0;
    }
    d = len <= sizeof dstack ? dstack : (char *)malloc(len);
    if (d == NULL) return -1;
    for (; i < len; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            d[nd++] = c;
            if (saw_point) nfrac++;
        } else if (c == '.' && !saw_point) {
            saw_point = 1;
        } else {
            break;
        }
    }
    if (nd == 0) goto bad;
    if (i < len) {
        int neg = 0;
        size_t ne = 0;
        if (s[i] != 'E' && s[i] != 'e') goto bad;
        i++;
        if (i < len && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
        for (; i < len; i++, ne++) {
            if (s[i] < '0' || s[i] > '9' || ne >= 18) goto bad;
            e = e * 10 + (s[i] - '0');
        }
        if (ne == 0) goto bad;
        if (neg) e = -e;
    }
    /* value = int(d[first..last]) * 10**exp10 */
    first = 0;
    while (first < nd && d[first] == '0') first++;
    if (first == nd) {
        if (d != dstack) free(d);
        sh_numeric_special(1, wide, seed, out);
        return 0;
    }
    last = nd - 1;
    while (d[last] == '0') last--;
    exp10 = e - (int64_t)nfrac + (int64_t)(nd - 1 - last);
    nd = last - first + 1;
    top = (int64_t)nd - 1 + exp10;
    weight = sh_floordiv4(top);
    lowg = sh_floordiv4(exp10);
    k = (size_t)(weight - lowg + 1);
    g = k <= 64 ? gstack : (int16_t *)calloc(k, sizeof *g);
    buf = k <= 64 ? bstack : (uint8_t *)malloc(2 * k);
    if (g == NULL || buf == NULL) {
        if (g != gstack) free(g);
        if (buf != bstack) free(buf);
        goto bad;
    }
    if (g == gstack) memset(g, 0, sizeof gstack);
    for (j = 0; j < nd; j++) {
        int64_t p = top - (int64_t)j, q = sh_floordiv4(p);
        g[weight - q] = (int16_t)(g[weight - q] + (d[first + j] - '0') * pow10[p - 4 * q]);
    }
    *out = sh_numeric_digits_hash(g, k, weight, wide, seed, buf);
    if (g != gstack) free(g);
    if (buf != bstack) free(buf);
    if (d != dstack) free(d);
    return 0;
bad:
    if (d != dstack) free(d);
    return -1;
}
