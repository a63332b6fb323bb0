/*
 * shardhash core: PostgreSQL's lookup3 (hash_bytes, hash_bytes_extended)
 * over many variable-length keys with AVX2, eight keys per vector (x86-64,
 * chosen at run time), bit-exact with sh_pg_hash_bytes and
 * sh_pg_hash_bytes_extended.
 *
 * Plain C99, no Python.h.  The AVX2 code is compiled where sh_cpu.h defines
 * SH_X86_AVX2 (it explains why gcc on Windows is left out) through
 * SH_TARGET("avx2"), so the rest of the build needs no -mavx2; sh_pg_init
 * chooses it when cpuid and xgetbv report AVX2.  Everywhere else, and on
 * CPUs without AVX2, the *_avx2 entry points run the scalar kernels.
 *
 * lookup3 is 32-bit additions, subtractions, xors and rotations only, so
 * eight keys run in the eight 32-bit lanes of a vector, each lane doing
 * exactly the scalar operations.  The lanes of one vector must take the same
 * number of 12-byte blocks: the keys are read in order and each waits in the
 * queue of its block count; a queue that holds eight keys is hashed at once
 * (their bytes were read a moment ago and are still in the cache; sorting a
 * chunk of keys by block count instead, and hashing them in that order, was
 * slower: the keys' bytes were then read out of order).  The keys left in
 * the queues at the end fill a vector each, their spare lanes repeating a
 * key.
 *
 * Loads.  Block j of a key (bytes 12j .. 12j+11) is the last 12 bytes of the
 * 16 that end where it ends; the tail (the last len % 12 bytes) is cut out of
 * the 16 bytes that end where the key ends with one byte shuffle, which also
 * places tail bytes 8..10 at bits 8..31 of c's word.  Every load ends inside
 * the key, and starts at most 16 bytes before its end: the keys that start
 * less than 16 bytes into the buffer (only the first few) take the scalar
 * path, so nothing outside the buffer [data, data + offsets[n]) is read.
 * Four keys' 16 bytes (lanes l and l + 4 in one register) are transposed
 * into words with unpacks.
 */
#include "sh_cpu.h"
#include "sh_pg.h"

#ifdef SH_X86_AVX2

#  include <immintrin.h>

#  define SH_PG_AVX2_FN SH_TARGET("avx2")
#  if defined(__GNUC__) || defined(__clang__)
#    define SH_PG_AVX2_INLINE static inline __attribute__((always_inline, target("avx2")))
#  else
#    define SH_PG_AVX2_INLINE static __forceinline
#  endif

/* Block counts taken by the lanes (0 .. SH_PG_NB - 1: keys up to
 * 12 * SH_PG_NB - 1 bytes); longer keys take the scalar path. */
#  define SH_PG_NB    8
#  define SH_PG_LANES 8

/* The byte shuffle that cuts a tail of t bytes (row t) out of the 16 bytes
 * ending at the key's end: bytes 0..7 of the result are tail bytes 0..7 (the
 * words added to a and b), bytes 9..11 tail bytes 8..10 (c's word), the rest
 * zero (Z: the shuffle's "zero this byte"). */
#  define Z 0x80
static const uint8_t sh_pg_tail_shuffle[12][16] = {
    {Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z},
    {15, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z},
    {14, 15, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z},
    {13, 14, 15, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z},
    {12, 13, 14, 15, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z},
    {11, 12, 13, 14, 15, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z},
    {10, 11, 12, 13, 14, 15, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z},
    {9, 10, 11, 12, 13, 14, 15, Z, Z, Z, Z, Z, Z, Z, Z, Z},
    {8, 9, 10, 11, 12, 13, 14, 15, Z, Z, Z, Z, Z, Z, Z, Z},
    {7, 8, 9, 10, 11, 12, 13, 14, Z, 15, Z, Z, Z, Z, Z, Z},
    {6, 7, 8, 9, 10, 11, 12, 13, Z, 14, 15, Z, Z, Z, Z, Z},
    {5, 6, 7, 8, 9, 10, 11, 12, Z, 13, 14, 15, Z, Z, Z, Z},
};
#  undef Z

/* Two unaligned 128-bit loads into one register (lo: lanes 0-3, hi: lanes
 * 4-7), as gcc and clang define _mm256_loadu2_m128i (which older gcc and
 * MSVC lack). */
#  define SH_PG_LOAD2(hi, lo)                                                                 \
      _mm256_insertf128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(lo))), \
                              _mm_loadu_si128((const __m128i *)(hi)), 1)

#  define SH_PG_ROTL(x, r) _mm256_or_si256(_mm256_slli_epi32((x), (r)), _mm256_srli_epi32((x), 32 - (r)))

typedef struct {
    __m256i rot8, rot16, rot24; /* byte shuffles that rotate each word left */
} sh_pg_rots;

/* clang-format off */
#  define SH_PG_VMIX(a, b, c, k)                                                                          \
      do {                                                                                                \
          a = _mm256_sub_epi32(a, c); a = _mm256_xor_si256(a, SH_PG_ROTL(c, 4)); c = _mm256_add_epi32(c, b); \
          b = _mm256_sub_epi32(b, a); b = _mm256_xor_si256(b, SH_PG_ROTL(a, 6)); a = _mm256_add_epi32(a, c); \
          c = _mm256_sub_epi32(c, b); c = _mm256_xor_si256(c, _mm256_shuffle_epi8(b, (k)->rot8));          \
          b = _mm256_add_epi32(b, a);                                                                     \
          a = _mm256_sub_epi32(a, c); a = _mm256_xor_si256(a, _mm256_shuffle_epi8(c, (k)->rot16));         \
          c = _mm256_add_epi32(c, b);                                                                     \
          b = _mm256_sub_epi32(b, a); b = _mm256_xor_si256(b, SH_PG_ROTL(a, 19)); a = _mm256_add_epi32(a, c); \
          c = _mm256_sub_epi32(c, b); c = _mm256_xor_si256(c, SH_PG_ROTL(b, 4)); b = _mm256_add_epi32(b, a); \
      } while (0)

#  define SH_PG_VFINAL(a, b, c, k)                                                              \
      do {                                                                                      \
          c = _mm256_xor_si256(c, b); c = _mm256_sub_epi32(c, SH_PG_ROTL(b, 14));               \
          a = _mm256_xor_si256(a, c); a = _mm256_sub_epi32(a, SH_PG_ROTL(c, 11));               \
          b = _mm256_xor_si256(b, a); b = _mm256_sub_epi32(b, SH_PG_ROTL(a, 25));               \
          c = _mm256_xor_si256(c, b); c = _mm256_sub_epi32(c, _mm256_shuffle_epi8(b, (k)->rot16)); \
          a = _mm256_xor_si256(a, c); a = _mm256_sub_epi32(a, SH_PG_ROTL(c, 4));                \
          b = _mm256_xor_si256(b, a); b = _mm256_sub_epi32(b, SH_PG_ROTL(a, 14));               \
          c = _mm256_xor_si256(c, b); c = _mm256_sub_epi32(c, _mm256_shuffle_epi8(b, (k)->rot24)); \
      } while (0)
/* clang-format on */

/* Rows r0..r3 hold 16 bytes of keys l (low half) and l + 4 (high half);
 * w0..w3 get word 0..3 of every key, key l in lane l. */
SH_PG_AVX2_INLINE void sh_pg_transpose(__m256i r0, __m256i r1, __m256i r2, __m256i r3, __m256i *w0,
                                       __m256i *w1, __m256i *w2, __m256i *w3)
{
    __m256i t0 = _mm256_unpacklo_epi32(r0, r1); /* k0w0 k1w0 k0w1 k1w1 */
    __m256i t1 = _mm256_unpackhi_epi32(r0, r1); /* k0w2 k1w2 k0w3 k1w3 */
    __m256i t2 = _mm256_unpacklo_epi32(r2, r3);
    __m256i t3 = _mm256_unpackhi_epi32(r2, r3);
    *w0 = _mm256_unpacklo_epi64(t0, t2);
    *w1 = _mm256_unpackhi_epi64(t0, t2);
    *w2 = _mm256_unpacklo_epi64(t1, t3);
    *w3 = _mm256_unpackhi_epi64(t1, t3);
}

/* Row l of a block (l = 0..3): the 16 bytes ending where block j ends, of
 * keys l (low half) and l + 4 (high half); row l of the tail: the 16 bytes
 * ending where the keys end, shuffled so that the tail bytes are in place
 * (sh_pg_tail_shuffle) and the rest zero. */
#  define SH_PG_BLOCK_ROW(l) SH_PG_LOAD2(p[(l) + 4] + at, p[l] + at)
#  define SH_PG_TAIL_ROW(l)              \
      _mm256_shuffle_epi8(               \
          SH_PG_LOAD2(e[(l) + 4], e[l]), \
          SH_PG_LOAD2(sh_pg_tail_shuffle[len[(l) + 4] - base], sh_pg_tail_shuffle[len[l] - base]))

/* lookup3 of eight keys p[l][0 .. len[l]) that all have nb whole blocks;
 * b and c of each key's final state to ob[l], oc[l].  ext: the seeded
 * initial step of hash_bytes_extended (seed != 0). */
SH_PG_AVX2_INLINE void sh_pg_lanes8(const uint8_t *const *p, const uint32_t *len, unsigned nb, int ext,
                                    uint64_t seed, const sh_pg_rots *k, uint32_t *ob, uint32_t *oc)
{
    __m256i a, b, c, w0, w1, w2, w3;
    unsigned j;
    const uint8_t *e[SH_PG_LANES];
    int l;
    a = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)len),
                         _mm256_set1_epi32((int)(SH_PG_INIT + SH_PG_INIT_EXTRA)));
    b = a;
    c = a;
    if (ext) {
        a = _mm256_add_epi32(a, _mm256_set1_epi32((int)(uint32_t)(seed >> 32)));
        b = _mm256_add_epi32(b, _mm256_set1_epi32((int)(uint32_t)seed));
        SH_PG_VMIX(a, b, c, k);
    }
    for (j = 0; j < nb; j++) {
        /* the 16 bytes ending where block j ends: words 1..3 are the block */
        ptrdiff_t at = 12 * (ptrdiff_t)j - 4;
        sh_pg_transpose(SH_PG_BLOCK_ROW(0), SH_PG_BLOCK_ROW(1), SH_PG_BLOCK_ROW(2), SH_PG_BLOCK_ROW(3), &w0,
                        &w1, &w2, &w3);
        a = _mm256_add_epi32(a, w1);
        b = _mm256_add_epi32(b, w2);
        c = _mm256_add_epi32(c, w3);
        SH_PG_VMIX(a, b, c, k);
    }
    for (l = 0; l < SH_PG_LANES; l++) e[l] = p[l] + len[l] - 16;
    {
        unsigned base = 12u * nb;
        sh_pg_transpose(SH_PG_TAIL_ROW(0), SH_PG_TAIL_ROW(1), SH_PG_TAIL_ROW(2), SH_PG_TAIL_ROW(3), &w0, &w1,
                        &w2, &w3);
        a = _mm256_add_epi32(a, w0);
        b = _mm256_add_epi32(b, w1);
        c = _mm256_add_epi32(c, w2);
    }
    SH_PG_VFINAL(a, b, c, k);
    _mm256_storeu_si256((__m256i *)ob, b);
    _mm256_storeu_si256((__m256i *)oc, c);
}

/* One key the scalar way (long keys, keys near the buffer's start). */
SH_PG_AVX2_INLINE void sh_pg_one(const uint8_t *data, const int64_t *o, size_t i, uint64_t seed,
                                 int32_t *out32, uint64_t *out64)
{
    size_t len = (size_t)(o[i + 1] - o[i]);
    if (out64 != NULL) {
        out64[i] = sh_pg_hash_bytes_extended(data + o[i], len, seed);
    } else {
        uint32_t h = sh_pg_hash_bytes(data + o[i], len);
        memcpy(&out32[i], &h, sizeof(int32_t));
    }
}

/* Keys waiting for a vector: up to eight keys of one block count. */
typedef struct {
    const uint8_t *p[SH_PG_LANES];
    uint32_t len[SH_PG_LANES];
    size_t at[SH_PG_LANES];
    size_t n;
} sh_pg_queue;

/* Hash the first `live` keys of a queue (the lanes above repeat its last
 * key) and write their results. */
SH_PG_AVX2_INLINE void sh_pg_flush(sh_pg_queue *q, size_t live, unsigned nb, int ext, uint64_t seed,
                                   const sh_pg_rots *k, int32_t *out32, uint64_t *out64)
{
    uint32_t ob[SH_PG_LANES], oc[SH_PG_LANES];
    size_t l;
    for (l = live; l < SH_PG_LANES; l++) {
        q->p[l] = q->p[live - 1];
        q->len[l] = q->len[live - 1];
    }
    sh_pg_lanes8(q->p, q->len, nb, ext, seed, k, ob, oc);
    if (out64 != NULL) {
        for (l = 0; l < live; l++) out64[q->at[l]] = ((uint64_t)ob[l] << 32) | (uint64_t)oc[l];
    } else {
        for (l = 0; l < live; l++) memcpy(&out32[q->at[l]], &oc[l], sizeof(int32_t));
    }
}

/* out64 != NULL: hash_bytes_extended(key, seed) to out64; else hash_bytes
 * to out32.  The keys are read in order; each goes to the queue of its
 * block count, and a queue that holds eight keys is hashed at once, so the
 * keys' bytes are still in the cache and every lane of a vector runs the
 * same number of blocks. */
static SH_PG_AVX2_FN void sh_pg_varlen_lanes(const uint8_t *data, const int64_t *offsets, size_t n,
                                             uint64_t seed, int32_t *out32, uint64_t *out64)
{
    sh_pg_queue q[SH_PG_NB];
    sh_pg_rots k;
    size_t i = 0;
    unsigned c;
    int ext = out64 != NULL && seed != 0;
    k.rot8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3, 0, 1, 2, 7, 4, 5, 6,
                              11, 8, 9, 10, 15, 12, 13, 14);
    k.rot16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1, 6, 7, 4, 5,
                               10, 11, 8, 9, 14, 15, 12, 13);
    k.rot24 = _mm256_setr_epi8(1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12, 1, 2, 3, 0, 5, 6, 7, 4,
                               9, 10, 11, 8, 13, 14, 15, 12);
    for (c = 0; c < SH_PG_NB; c++) q[c].n = 0;
    /* keys starting in the buffer's first 16 bytes: the lanes' loads could
     * start before the buffer */
    while (i < n && offsets[i] < 16) sh_pg_one(data, offsets, i++, seed, out32, out64);
    for (; i < n; i++) {
        uint64_t len = (uint64_t)(offsets[i + 1] - offsets[i]);
        uint64_t nb = len / 12u;
        sh_pg_queue *qc;
        if (nb >= SH_PG_NB) {
            sh_pg_one(data, offsets, i, seed, out32, out64);
            continue;
        }
        qc = &q[nb];
        qc->p[qc->n] = data + offsets[i];
        qc->len[qc->n] = (uint32_t)len;
        qc->at[qc->n] = i;
        if (++qc->n == SH_PG_LANES) {
            sh_pg_flush(qc, SH_PG_LANES, (unsigned)nb, ext, seed, &k, out32, out64);
            qc->n = 0;
        }
    }
    for (c = 0; c < SH_PG_NB; c++)
        if (q[c].n) sh_pg_flush(&q[c], q[c].n, c, ext, seed, &k, out32, out64);
}

void sh_pg_varlen_extended_avx2(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                                uint64_t *out)
{
    if (sh_pg_avx2_available())
        sh_pg_varlen_lanes(data, offsets, n, seed, NULL, out);
    else
        sh_pg_varlen_extended_scalar(data, offsets, n, seed, out);
}

void sh_pg_varlen_32_avx2(const uint8_t *data, const int64_t *offsets, size_t n, int32_t *out)
{
    if (sh_pg_avx2_available())
        sh_pg_varlen_lanes(data, offsets, n, 0, out, NULL);
    else
        sh_pg_varlen_32_scalar(data, offsets, n, out);
}

#else /* no AVX2 kernel in this build */

void sh_pg_varlen_extended_avx2(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                                uint64_t *out)
{
    sh_pg_varlen_extended_scalar(data, offsets, n, seed, out);
}

void sh_pg_varlen_32_avx2(const uint8_t *data, const int64_t *offsets, size_t n, int32_t *out)
{
    sh_pg_varlen_32_scalar(data, offsets, n, out);
}

#endif
