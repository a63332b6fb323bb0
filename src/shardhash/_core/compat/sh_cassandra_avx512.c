/*
 * shardhash core: Cassandra Murmur3Partitioner tokens of many
 * variable-length keys with AVX-512, eight keys per vector (x86-64, chosen
 * at run time), bit-exact with sh_cassandra_token.
 *
 * Plain C99, no Python.h.  The AVX-512 code is compiled where sh_cpu.h
 * defines SH_X86_AVX512, through SH_TARGET("avx512f,avx512dq"), so the rest
 * of the build needs no -mavx512f; sh_cassandra_init chooses it when cpuid
 * and xgetbv report AVX512F, AVX512DQ and the ZMM state.  Everywhere else,
 * and on CPUs without them, the *_avx512 entry points run the scalar
 * kernels.
 *
 * MurmurHash3_x64_128 is 64-bit multiplies, rotations, additions and xors:
 * AVX512DQ's vpmullq and AVX512F's vprolq do each of them in eight 64-bit
 * lanes, so eight keys run side by side, each lane doing exactly the scalar
 * operations (sh_cassandra.c):
 *
 *  - the 16-byte blocks: the group runs as many block rounds as its longest
 *    key has blocks, and a lane whose key has fewer keeps its state (a mask
 *    move), so keys of different lengths share a vector without a branch on
 *    any key's length;
 *  - the tail: cut out of the 16 bytes that end where the key ends ("the
 *    window") with variable shifts (a shift by 64 or more gives 0 in
 *    vpsrlvq/vpsllvq, which is exactly the cut), then Cassandra's sign
 *    extension of the tail bytes as a prefix parity of their sign bits (one
 *    multiply, as in the scalar batch kernels);
 *  - the finalisation, and the token rules (INT64_MIN -> INT64_MAX, the
 *    empty key -> INT64_MIN) as mask moves.
 *
 * Loads.  Each key's window and blocks are 16-byte loads, four keys'
 * 16 bytes inserted into one 512-bit register and the words of eight keys
 * picked out of two registers with one permute each (the hardware gathers
 * were three times slower on AMD Zen 4).  Every load ends inside the key's
 * 16 bytes before its end or inside the key: a lane past its last block
 * loads its window again (and ignores it).  The caller vouches that the 16
 * bytes before each key's end are readable: in Arrow data the keys that end
 * less than 16 bytes into the buffer (only the first few) take the scalar
 * path; a Python bytes object's header precedes its data.
 *
 * A group whose keys' block counts differ a lot (one long key among short
 * ones) would run the long key's rounds in eight lanes for one; such a
 * group takes the scalar path instead (sh_cassandra_lanes_worth).
 */
#include "sh_cassandra.h"
#include "sh_cpu.h"

#ifdef SH_X86_AVX512

#  include <immintrin.h>

#  define SH_CASS512_FN SH_TARGET("avx512f,avx512dq")
#  if defined(__GNUC__) || defined(__clang__)
#    define SH_CASS512_INLINE static inline __attribute__((always_inline, target("avx512f,avx512dq")))
#  else
#    define SH_CASS512_INLINE static __forceinline
#  endif

/* MurmurHash3_x64_128's constants as int64 values (the same bits; the
 * intrinsics take signed 64-bit integers). */
#  define SH_C1    INT64_C(-0x783c846eeebdac2b) /* 0x87c37b91114253d5 */
#  define SH_C2    INT64_C(0x4cf5ad432745937f)
#  define SH_FMIX1 INT64_C(-0xae502812aa7333)   /* 0xff51afd7ed558ccd */
#  define SH_FMIX2 INT64_C(-0x3b314601e57a13ad) /* 0xc4ceb9fe1a85ec53 */

SH_CASS512_INLINE __m512i sh_cass512_scramble_k1(__m512i k)
{
    k = _mm512_mullo_epi64(k, _mm512_set1_epi64(SH_C1));
    k = _mm512_rol_epi64(k, 31);
    return _mm512_mullo_epi64(k, _mm512_set1_epi64(SH_C2));
}

SH_CASS512_INLINE __m512i sh_cass512_scramble_k2(__m512i k)
{
    k = _mm512_mullo_epi64(k, _mm512_set1_epi64(SH_C2));
    k = _mm512_rol_epi64(k, 33);
    return _mm512_mullo_epi64(k, _mm512_set1_epi64(SH_C1));
}

SH_CASS512_INLINE __m512i sh_cass512_fmix64(__m512i k)
{
    k = _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
    k = _mm512_mullo_epi64(k, _mm512_set1_epi64(SH_FMIX1));
    k = _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
    k = _mm512_mullo_epi64(k, _mm512_set1_epi64(SH_FMIX2));
    return _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
}

/* x * 5 + c */
SH_CASS512_INLINE __m512i sh_cass512_mul5_add(__m512i x, __m512i c)
{
    return _mm512_add_epi64(_mm512_add_epi64(x, _mm512_slli_epi64(x, 2)), c);
}

/* sh_cass_sext_bytes of sh_cassandra.c in every lane: the xor of the word's
 * bytes sign-extended to 64 bits and shifted to their places. */
SH_CASS512_INLINE __m512i sh_cass512_sext_bytes(__m512i w)
{
    const __m512i ones = _mm512_set1_epi64(INT64_C(0x0101010101010101));
    __m512i s = _mm512_and_si512(_mm512_srli_epi64(w, 7), ones);
    __m512i p = _mm512_and_si512(_mm512_mullo_epi64(s, _mm512_set1_epi64(INT64_C(0x0101010101010100))), ones);
    return _mm512_xor_si512(w, _mm512_sub_epi64(_mm512_slli_epi64(p, 8), p)); /* p * 0xff */
}

/* The 16 bytes at q[0] .. q[7] as two words per key: *w0 = bytes 0..7 and
 * *w1 = bytes 8..15 (little-endian), key l in lane l. */
SH_CASS512_INLINE void sh_cass512_load16x8(const uint8_t *const q[8], __m512i *w0, __m512i *w1)
{
    __m512i z0 = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)q[0]));
    __m512i z1 = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)q[4]));
    z0 = _mm512_inserti32x4(z0, _mm_loadu_si128((const __m128i *)(const void *)q[1]), 1);
    z1 = _mm512_inserti32x4(z1, _mm_loadu_si128((const __m128i *)(const void *)q[5]), 1);
    z0 = _mm512_inserti32x4(z0, _mm_loadu_si128((const __m128i *)(const void *)q[2]), 2);
    z1 = _mm512_inserti32x4(z1, _mm_loadu_si128((const __m128i *)(const void *)q[6]), 2);
    z0 = _mm512_inserti32x4(z0, _mm_loadu_si128((const __m128i *)(const void *)q[3]), 3);
    z1 = _mm512_inserti32x4(z1, _mm_loadu_si128((const __m128i *)(const void *)q[7]), 3);
    *w0 = _mm512_permutex2var_epi64(z0, _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), z1);
    *w1 = _mm512_permutex2var_epi64(z0, _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1), z1);
}

/* Tokens of the eight keys p[l][0 .. len[l]), len[l] >= 0, whose 16 bytes
 * before p[l] + len[l] are readable, to out[0..7]. */
SH_CASS512_INLINE void sh_cass512_lanes8(const uint8_t *const p[8], const int64_t len[8], int64_t *out)
{
    const uint8_t *q[8];
    const __m512i vlen = _mm512_loadu_si512((const void *)len);
    const __m512i nb = _mm512_srli_epi64(vlen, 4);
    const __m512i c1 = _mm512_set1_epi64(0x52dce729), c2 = _mm512_set1_epi64(0x38495ab5);
    __m512i h1 = _mm512_setzero_si512(), h2 = _mm512_setzero_si512();
    __m512i lo, hi, s, w0, w1;
    int64_t maxnb = 0, j;
    int l;

    for (l = 0; l < 8; l++)
        if (len[l] / 16 > maxnb) maxnb = len[l] / 16;

    /* the blocks: round j mixes block j of the keys that have one */
    for (j = 0; j < maxnb; j++) {
        __mmask8 m = _mm512_cmpgt_epi64_mask(nb, _mm512_set1_epi64(j));
        __m512i k1, k2, x1, x2;
        for (l = 0; l < 8; l++) q[l] = 16 * (j + 1) <= len[l] ? p[l] + 16 * j : p[l] + len[l] - 16;
        sh_cass512_load16x8(q, &k1, &k2);
        x1 = _mm512_xor_si512(h1, sh_cass512_scramble_k1(k1));
        x1 = _mm512_rol_epi64(x1, 27);
        x1 = sh_cass512_mul5_add(_mm512_add_epi64(x1, h2), c1);
        x2 = _mm512_xor_si512(h2, sh_cass512_scramble_k2(k2));
        x2 = _mm512_rol_epi64(x2, 31);
        x2 = sh_cass512_mul5_add(_mm512_add_epi64(x2, x1), c2);
        h1 = _mm512_mask_mov_epi64(h1, m, x1);
        h2 = _mm512_mask_mov_epi64(h2, m, x2);
    }

    /* the tail: the last len % 16 bytes of the window, t = len % 16 and
     * s = 8 * (16 - t) bits (8..128) of the window before it:
     * w1 = hi >> s, w0 = lo >> s | hi << (64 - s) | hi >> (s - 64), where
     * every shift count outside 0..63 (as an unsigned 64-bit count) gives 0 */
    for (l = 0; l < 8; l++) q[l] = p[l] + len[l] - 16;
    sh_cass512_load16x8(q, &lo, &hi);
    s = _mm512_slli_epi64(
        _mm512_sub_epi64(_mm512_set1_epi64(16), _mm512_and_si512(vlen, _mm512_set1_epi64(15))), 3);
    w1 = _mm512_srlv_epi64(hi, s);
    w0 = _mm512_or_si512(_mm512_srlv_epi64(lo, s),
                         _mm512_or_si512(_mm512_sllv_epi64(hi, _mm512_sub_epi64(_mm512_set1_epi64(64), s)),
                                         _mm512_srlv_epi64(hi, _mm512_sub_epi64(s, _mm512_set1_epi64(64)))));
    h2 = _mm512_xor_si512(h2, sh_cass512_scramble_k2(sh_cass512_sext_bytes(w1)));
    h1 = _mm512_xor_si512(h1, sh_cass512_scramble_k1(sh_cass512_sext_bytes(w0)));

    /* the finalisation and the token rules */
    h1 = _mm512_xor_si512(h1, vlen);
    h2 = _mm512_xor_si512(h2, vlen);
    h1 = _mm512_add_epi64(h1, h2);
    h2 = _mm512_add_epi64(h2, h1);
    h1 = sh_cass512_fmix64(h1);
    h2 = sh_cass512_fmix64(h2);
    h1 = _mm512_add_epi64(h1, h2);
    h1 = _mm512_mask_mov_epi64(h1, _mm512_cmpeq_epi64_mask(h1, _mm512_set1_epi64(INT64_MIN)),
                               _mm512_set1_epi64(INT64_MAX));
    h1 = _mm512_mask_mov_epi64(h1, _mm512_cmpeq_epi64_mask(vlen, _mm512_setzero_si512()),
                               _mm512_set1_epi64(INT64_MIN));
    _mm512_storeu_si512((void *)out, h1);
}

SH_CASS512_FN void sh_cassandra_token_offsets_avx512(const uint8_t *data, const int64_t *offsets, size_t n,
                                                     int64_t *out)
{
    const uint8_t *p[8];
    int64_t len[8];
    size_t i = 0, head;
    int l;
    /* the keys that end less than 16 bytes into the buffer */
    while (i < n && offsets[i + 1] < 16) i++;
    head = i;
    if (head) sh_cassandra_token_offsets_scalar(data, offsets, head, out);
    for (; i + 8 <= n; i += 8) {
        for (l = 0; l < 8; l++) {
            p[l] = data + offsets[i + (size_t)l];
            len[l] = offsets[i + (size_t)l + 1] - offsets[i + (size_t)l];
        }
        if (sh_cassandra_lanes_worth(len, 8))
            sh_cass512_lanes8(p, len, out + i);
        else
            sh_cassandra_token_offsets_scalar(data, offsets + i, 8, out + i);
    }
    if (i < n) sh_cassandra_token_offsets_scalar(data, offsets + i, n - i, out + i);
}

SH_CASS512_FN void sh_cassandra_token_ptrs16_avx512(const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                                                    int64_t *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        if (sh_cassandra_lanes_worth(lens + i, 8))
            sh_cass512_lanes8(ptrs + i, lens + i, out + i);
        else
            sh_cassandra_token_ptrs16_scalar(ptrs + i, lens + i, 8, out + i);
    }
    if (i < n) sh_cassandra_token_ptrs16_scalar(ptrs + i, lens + i, n - i, out + i);
}

#else /* no AVX-512 kernels in this build */

void sh_cassandra_token_offsets_avx512(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)
{
    sh_cassandra_token_offsets_scalar(data, offsets, n, out);
}

void sh_cassandra_token_ptrs16_avx512(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out)
{
    sh_cassandra_token_ptrs16_scalar(ptrs, lens, n, out);
}

#endif
