/*
 * Cassandra's MurmurHash3_x64_128 variant and Murmur3Partitioner tokens,
 * written from the algorithm's description and Cassandra's documented
 * behaviour (MurmurHash.hash3_x64_128, Murmur3Partitioner.getToken).
 */
#include "sh_cassandra.h"
#include "sh_cpu.h"
#include "sh_murmur3.h"
#include "sh_window.h"

/* The SH_CPU_* kernels chosen by sh_cassandra_init; 0 (the scalar kernels)
 * until it runs.  Written only by sh_cassandra_init, which the caller runs
 * once before any other thread can run a kernel (the Python module does at
 * import), so the kernels only ever read it. */
static unsigned sh_cass_cpu = 0;

void sh_cassandra_init(void)
{
    sh_cass_cpu = sh_cpu_detect();
}

int sh_cassandra_avx512_available(void)
{
    return (sh_cass_cpu & SH_CPU_AVX512) != 0;
}

int sh_cassandra_avx2_available(void)
{
    return (sh_cass_cpu & SH_CPU_AVX2) != 0;
}

const char *sh_cassandra_kernel(void)
{
    return (sh_cass_cpu & SH_CPU_AVX512) ? "avx512" : (sh_cass_cpu & SH_CPU_AVX2) ? "avx2" : "scalar";
}

/* MurmurHash3_x64_128 (sh_murmur3.h) with seed 0 and the tail bytes
 * sign-extended, as Cassandra's Java code widens them. */

uint64_t sh_cassandra_murmur_h1(const void *data, size_t len)
{
    uint64_t h1, h2;
    sh_murmur3_128_hash((const uint8_t *)data, len, 0, 1, &h1, &h2);
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

/*
 * Batch kernels.
 *
 * On keys of mixed lengths the reference function above pays for its
 * byte-by-byte tail: a loop whose trip count changes with every key is
 * mispredicted almost every time, and each misprediction also throws away
 * the overlap between consecutive keys.  The batch kernels below compute the
 * same h1 without a per-length branch in the tail:
 *
 *  - the tail is cut out of the 16 bytes that end where the key ends ("the
 *    window", lo = bytes 0..7, hi = bytes 8..15, little-endian) with shifts;
 *  - Cassandra's sign extension of the tail bytes is applied to a whole
 *    64-bit word at once: xoring sign-extended byte i, shifted by 8*i, is the
 *    same as xoring the plain byte and then setting byte j (j > i) to 0xff
 *    for every negative byte i, i.e. byte j of the correction is the parity
 *    of the negative bytes below j (a prefix xor of the sign bits);
 *  - an empty half-tail gives k = 0, whose mix is 0, so both halves are
 *    mixed unconditionally.
 *
 * The window may start before the key: in Arrow data those bytes belong to
 * the previous keys and are shifted out, so a key whose end is at least 16
 * bytes into the buffer is read with two loads.  Other keys (and keys given
 * as separate pointers, which must not be read outside their own bytes) are
 * assembled from loads inside the key.  Only the loop over 16-byte blocks
 * still branches on the length.
 */

/* The xor of the word's bytes sign-extended to 64 bits and shifted to their
 * places: w with byte j set to 0xff when an odd number of bytes below j are
 * negative. */
SH_FORCE_INLINE uint64_t sh_cass_sext_bytes(uint64_t w)
{
    /* byte j of s * 0x0101010101010100 is the number of negative bytes below
     * j (at most 7: no carry into the next byte); its low bit is the parity */
    uint64_t s = (w >> 7) & UINT64_C(0x0101010101010101);
    uint64_t p = (s * UINT64_C(0x0101010101010100)) & UINT64_C(0x0101010101010101);
    return w ^ (p * 0xffu);
}

/* Token of the key p[0..len) whose last 16 bytes (those before p: any
 * value) are lo (bytes 0..7) and hi (bytes 8..15). */
SH_FORCE_INLINE int64_t sh_cass_token_window(const uint8_t *p, size_t len, uint64_t lo, uint64_t hi)
{
    size_t nblocks = len / 16;
    uint64_t h1 = 0, h2 = 0, k1, k2;

    sh_murmur3_128_blocks(p, nblocks, &h1, &h2);

    /* tail bytes 8..14 (k2) and 0..7 (k1), zero where the tail is shorter */
    sh_window_tail(lo, hi, (unsigned)(len & 15u), &k1, &k2);
    k1 = sh_cass_sext_bytes(k1);
    k2 = sh_cass_sext_bytes(k2);
    h2 ^= sh_murmur3_scramble_k2(k2);
    h1 ^= sh_murmur3_scramble_k1(k1);

    sh_murmur3_128_final(&h1, &h2, len);
    return len == 0 ? INT64_MIN : sh_cass_token_of(h1);
}

void sh_cassandra_token_offsets(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)
{
    /* sh_cassandra_avx512.c: eight keys per vector where the build and the
     * CPU have AVX-512; sh_cassandra_avx2.c: four, with AVX2 */
    SH_CPU_PICK(sh_cass_cpu, SH_CPU_AVX512, sh_cassandra_token_offsets_avx512,
                SH_CPU_PICK(sh_cass_cpu, SH_CPU_AVX2, sh_cassandra_token_offsets_avx2,
                            sh_cassandra_token_offsets_scalar))(data, offsets, n, out);
}

void sh_cassandra_token_offsets_scalar(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        int64_t a = offsets[i], b = offsets[i + 1];
        size_t len = (size_t)(b - a);
        uint64_t lo, hi;
        sh_window_arrow(data, a, b, &lo, &hi);
        out[i] = sh_cass_token_window(data + a, len, lo, hi);
    }
}

/* The tokens of keys given by pointer: each key's window read inside the
 * key, or (padded) with the two loads of sh_window_padded. */
SH_FORCE_INLINE void sh_cass_tokens_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                                         int padded, int64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        size_t len = (size_t)lens[i];
        uint64_t lo, hi;
        if (padded)
            sh_window_padded(ptrs[i], len, &lo, &hi);
        else
            sh_window_inside(ptrs[i], len, &lo, &hi);
        out[i] = sh_cass_token_window(ptrs[i], len, lo, hi);
    }
}

void sh_cassandra_token_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out)
{
    sh_cass_tokens_ptrs(ptrs, lens, n, 0, out);
}

void sh_cassandra_token_ptrs16(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out)
{
    SH_CPU_PICK(sh_cass_cpu, SH_CPU_AVX512, sh_cassandra_token_ptrs16_avx512,
                SH_CPU_PICK(sh_cass_cpu, SH_CPU_AVX2, sh_cassandra_token_ptrs16_avx2,
                            sh_cassandra_token_ptrs16_scalar))(ptrs, lens, n, out);
}

void sh_cassandra_token_ptrs16_scalar(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out)
{
    sh_cass_tokens_ptrs(ptrs, lens, n, 1, out);
}

/* The token of a key of at most 8 bytes, given as the little-endian word w
 * of its bytes (zero above them): the whole key is the tail, all in k1, and
 * h2 starts at 0.  A fixed length: no branch on it. */
SH_FORCE_INLINE int64_t sh_cass_token_short(uint64_t w, size_t len)
{
    uint64_t h1 = sh_murmur3_scramble_k1(sh_cass_sext_bytes(w)), h2 = 0;
    sh_murmur3_128_final(&h1, &h2, len);
    return sh_cass_token_of(h1);
}

void sh_cassandra_token_bigint(const int64_t *values, size_t n, int64_t *out)
{
    size_t i;
    /* the 8 big-endian bytes of v, read little-endian, are v byte-swapped */
    for (i = 0; i < n; i++) out[i] = sh_cass_token_short(sh_swap64((uint64_t)values[i]), 8);
}

void sh_cassandra_token_int(const int32_t *values, size_t n, int64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_cass_token_short((uint64_t)sh_swap32((uint32_t)values[i]), 4);
}

/* The first ring[k] >= t (m when there is none; m >= 1), without a branch
 * on the comparisons: each step moves the base of the range by half its
 * length or not (Khuong and Morin's branch-free lower bound).  Random
 * tokens took every other branch of the plain binary search the wrong way
 * (about 8 mispredictions per key on a ring of 256 tokens). */
SH_FORCE_INLINE size_t sh_cass_lower_bound(const int64_t *ring, size_t m, int64_t t)
{
    size_t base = 0, n = m;
    while (n > 1) {
        size_t half = n / 2;
        base += (size_t)(ring[base + half] < t) * half;
        n -= half;
    }
    return base + (size_t)(ring[base] < t);
}

/* The ring positions of tokens[0 .. SH_CASS_RING_WAYS): four searches side
 * by side (the same number of steps for any token, so their loads overlap),
 * each wrapped to 0 past the last ring token. */
#define SH_CASS_RING_WAYS 4

SH_FORCE_INLINE void sh_cass_ring_ways(const int64_t *ring, size_t m, const int64_t *tokens, size_t *pos)
{
    size_t k, len = m;
    for (k = 0; k < SH_CASS_RING_WAYS; k++) pos[k] = 0;
    while (len > 1) {
        size_t half = len / 2;
        for (k = 0; k < SH_CASS_RING_WAYS; k++) pos[k] += (size_t)(ring[pos[k] + half] < tokens[k]) * half;
        len -= half;
    }
    for (k = 0; k < SH_CASS_RING_WAYS; k++) {
        pos[k] += (size_t)(ring[pos[k]] < tokens[k]);
        if (pos[k] == m) pos[k] = 0;
    }
}

void sh_cassandra_ring_index(const int64_t *ring, size_t m, const int64_t *tokens, size_t n, int64_t *out)
{
    size_t i = 0, k, pos[SH_CASS_RING_WAYS];
    for (; i + SH_CASS_RING_WAYS <= n; i += SH_CASS_RING_WAYS) {
        sh_cass_ring_ways(ring, m, tokens + i, pos);
        for (k = 0; k < SH_CASS_RING_WAYS; k++) out[i + k] = (int64_t)pos[k];
    }
    for (; i < n; i++) {
        size_t lo = sh_cass_lower_bound(ring, m, tokens[i]);
        out[i] = (int64_t)(lo == m ? 0 : lo);
    }
}

void sh_cassandra_ring_owner(const int64_t *ring, const int32_t *owners, size_t m, const int64_t *tokens,
                             size_t n, int32_t *out)
{
    size_t i = 0, k, pos[SH_CASS_RING_WAYS];
    for (; i + SH_CASS_RING_WAYS <= n; i += SH_CASS_RING_WAYS) {
        sh_cass_ring_ways(ring, m, tokens + i, pos);
        for (k = 0; k < SH_CASS_RING_WAYS; k++) out[i + k] = owners[pos[k]];
    }
    for (; i < n; i++) {
        size_t lo = sh_cass_lower_bound(ring, m, tokens[i]);
        out[i] = owners[lo == m ? 0 : lo];
    }
}
