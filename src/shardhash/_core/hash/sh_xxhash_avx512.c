/*
 * shardhash core: XXH64 over many keys with AVX-512, eight keys of one
 * length per vector (x86-64, chosen at run time), bit-exact with sh_xxh64.
 *
 * sh_xxh64_offsets (sh_xxhash.c) queues the keys by length and hashes each
 * queue of eight with a copy of XXH64 compiled for that length.  Here the
 * same queues (sh_xxh64_offsets_queued) hand a full queue of keys of 4..63
 * bytes to the eight 64-bit lanes of one vector instead (AVX512DQ's vpmullq
 * multiplies, AVX512F's vprolq rotates): the lanes share the length, so the
 * 32-byte stripes and 8-byte words run for all of them; the 4-byte word and
 * the last bytes, cut out of the key's last four bytes with shifts, are
 * computed for every queue and kept by a mask (a branch on what is left of
 * the length would be mispredicted between queues of different lengths).
 * Other lengths, and the keys left in the queues at the end, are hashed one
 * by one.  Every load is inside its key.
 *
 * Plain C99, no Python.h.  Compiled where sh_cpu.h defines SH_X86_AVX512,
 * through SH_TARGET("avx512f,avx512dq"); sh_xxh64_batch_init chooses it when
 * the CPU has AVX512F and AVX512DQ.  Elsewhere sh_xxh64_offsets_batch runs
 * sh_xxh64_offsets.
 */
#include "sh_cpu.h"
#include "sh_xxhash.h"

static unsigned sh_xxh_cpu = 0; /* written once by sh_xxh64_batch_init, before any kernel runs */

void sh_xxh64_batch_init(void)
{
    sh_xxh_cpu = sh_cpu_detect();
}

int sh_xxh64_batch_avx512(void)
{
    return (sh_xxh_cpu & SH_CPU_AVX512) != 0;
}

#ifdef SH_X86_AVX512

#  include "sh_avx512.h"

#  define SH_X512_FN     SH_TARGET("avx512f,avx512dq")
#  define SH_X512_INLINE SH_AVX512_INLINE

#  define SH_X512_SET1(u) _mm512_set1_epi64(sh_avx512_i64(u))

/* The 8 little-endian bytes at p[l] + off, key l in lane l. */
SH_X512_INLINE __m512i sh_x512_words(const uint8_t *const *p, size_t off)
{
    return _mm512_set_epi64(sh_avx512_i64(sh_read64le(p[7] + off)), sh_avx512_i64(sh_read64le(p[6] + off)),
                            sh_avx512_i64(sh_read64le(p[5] + off)), sh_avx512_i64(sh_read64le(p[4] + off)),
                            sh_avx512_i64(sh_read64le(p[3] + off)), sh_avx512_i64(sh_read64le(p[2] + off)),
                            sh_avx512_i64(sh_read64le(p[1] + off)), sh_avx512_i64(sh_read64le(p[0] + off)));
}

/* The 4 little-endian bytes at p[l] + off, zero-extended. */
SH_X512_INLINE __m512i sh_x512_words32(const uint8_t *const *p, size_t off)
{
    return _mm512_set_epi64((int64_t)sh_read32le(p[7] + off), (int64_t)sh_read32le(p[6] + off),
                            (int64_t)sh_read32le(p[5] + off), (int64_t)sh_read32le(p[4] + off),
                            (int64_t)sh_read32le(p[3] + off), (int64_t)sh_read32le(p[2] + off),
                            (int64_t)sh_read32le(p[1] + off), (int64_t)sh_read32le(p[0] + off));
}

SH_X512_INLINE __m512i sh_x512_round(__m512i acc, __m512i lane)
{
    acc = _mm512_add_epi64(acc, _mm512_mullo_epi64(lane, SH_X512_SET1(SH_XXH_PRIME64_2)));
    return _mm512_mullo_epi64(_mm512_rol_epi64(acc, 31), SH_X512_SET1(SH_XXH_PRIME64_1));
}

SH_X512_INLINE __m512i sh_x512_merge(__m512i acc, __m512i a)
{
    acc = _mm512_xor_si512(acc, sh_x512_round(_mm512_setzero_si512(), a));
    return _mm512_add_epi64(_mm512_mullo_epi64(acc, SH_X512_SET1(SH_XXH_PRIME64_1)),
                            SH_X512_SET1(SH_XXH_PRIME64_4));
}

/* XXH64 of the eight keys p[l][0 .. len), 4 <= len, to out8[0..7]. */
SH_X512_INLINE void sh_x512_lanes(const uint8_t *const *p, size_t len, uint64_t seed, uint64_t *out8)
{
    size_t off = 0, rem = len, t;
    __m512i acc, tail;
    if (len >= 32) {
        __m512i a1 = SH_X512_SET1(seed + SH_XXH_PRIME64_1 + SH_XXH_PRIME64_2);
        __m512i a2 = SH_X512_SET1(seed + SH_XXH_PRIME64_2);
        __m512i a3 = SH_X512_SET1(seed);
        __m512i a4 = SH_X512_SET1(seed - SH_XXH_PRIME64_1);
        do {
            __m512i w0, w1, w2, w3;
            sh_avx512_load16x8(p, off, &w0, &w1);
            sh_avx512_load16x8(p, off + 16, &w2, &w3);
            a1 = sh_x512_round(a1, w0);
            a2 = sh_x512_round(a2, w1);
            a3 = sh_x512_round(a3, w2);
            a4 = sh_x512_round(a4, w3);
            off += 32;
            rem -= 32;
        } while (rem >= 32);
        acc = _mm512_add_epi64(_mm512_add_epi64(_mm512_rol_epi64(a1, 1), _mm512_rol_epi64(a2, 7)),
                               _mm512_add_epi64(_mm512_rol_epi64(a3, 12), _mm512_rol_epi64(a4, 18)));
        acc = sh_x512_merge(acc, a1);
        acc = sh_x512_merge(acc, a2);
        acc = sh_x512_merge(acc, a3);
        acc = sh_x512_merge(acc, a4);
    } else {
        acc = SH_X512_SET1(seed + SH_XXH_PRIME64_5);
    }
    acc = _mm512_add_epi64(acc, SH_X512_SET1((uint64_t)len));
    while (rem >= 16) {
        __m512i w0, w1;
        sh_avx512_load16x8(p, off, &w0, &w1);
        acc = _mm512_xor_si512(acc, sh_x512_round(_mm512_setzero_si512(), w0));
        acc = _mm512_add_epi64(_mm512_mullo_epi64(_mm512_rol_epi64(acc, 27), SH_X512_SET1(SH_XXH_PRIME64_1)),
                               SH_X512_SET1(SH_XXH_PRIME64_4));
        acc = _mm512_xor_si512(acc, sh_x512_round(_mm512_setzero_si512(), w1));
        acc = _mm512_add_epi64(_mm512_mullo_epi64(_mm512_rol_epi64(acc, 27), SH_X512_SET1(SH_XXH_PRIME64_1)),
                               SH_X512_SET1(SH_XXH_PRIME64_4));
        off += 16;
        rem -= 16;
    }
    while (rem >= 8) {
        acc = _mm512_xor_si512(acc, sh_x512_round(_mm512_setzero_si512(), sh_x512_words(p, off)));
        acc = _mm512_add_epi64(_mm512_mullo_epi64(_mm512_rol_epi64(acc, 27), SH_X512_SET1(SH_XXH_PRIME64_1)),
                               SH_X512_SET1(SH_XXH_PRIME64_4));
        off += 8;
        rem -= 8;
    }
    /* the last rem < 8 bytes: a 4-byte word when rem >= 4, then single
     * bytes, all within the key's last four bytes once the word is taken
     * (len >= 4).  Both steps are computed whatever rem is and kept or not
     * by a mask (rem varies from queue to queue: a branch on it would be
     * mispredicted when the lengths are mixed); a step not kept reads the
     * key's last four bytes, which are inside it. */
    {
        __mmask8 keep = (__mmask8)(0u - (unsigned)(rem >= 4)); /* all lanes or none */
        __m512i x = sh_x512_words32(p, rem >= 4 ? off : len - 4), a;
        a = _mm512_xor_si512(acc, _mm512_mullo_epi64(x, SH_X512_SET1(SH_XXH_PRIME64_1)));
        a = _mm512_add_epi64(_mm512_mullo_epi64(_mm512_rol_epi64(a, 23), SH_X512_SET1(SH_XXH_PRIME64_2)),
                             SH_X512_SET1(SH_XXH_PRIME64_3));
        acc = _mm512_mask_mov_epi64(acc, keep, a);
        rem &= 3;
        tail = sh_x512_words32(p, len - 4); /* byte t of the rem left is byte 4 - rem + t of it */
        for (t = 0; t < 3; t++) {
            __m512i b =
                _mm512_and_si512(_mm512_srlv_epi64(tail, _mm512_set1_epi64((int64_t)(8 * (4 - rem + t)))),
                                 _mm512_set1_epi64(0xff));
            keep = (__mmask8)(0u - (unsigned)(t < rem));
            a = _mm512_xor_si512(acc, _mm512_mullo_epi64(b, SH_X512_SET1(SH_XXH_PRIME64_5)));
            a = _mm512_mullo_epi64(_mm512_rol_epi64(a, 11), SH_X512_SET1(SH_XXH_PRIME64_1));
            acc = _mm512_mask_mov_epi64(acc, keep, a);
        }
    }
    /* the avalanche */
    acc = _mm512_xor_si512(acc, _mm512_srli_epi64(acc, 33));
    acc = _mm512_mullo_epi64(acc, SH_X512_SET1(SH_XXH_PRIME64_2));
    acc = _mm512_xor_si512(acc, _mm512_srli_epi64(acc, 29));
    acc = _mm512_mullo_epi64(acc, SH_X512_SET1(SH_XXH_PRIME64_3));
    acc = _mm512_xor_si512(acc, _mm512_srli_epi64(acc, 32));
    _mm512_storeu_si512((void *)out8, acc);
}

/* A full queue of sh_xxh64_offsets_queued: eight keys of one length, 4 ..
 * 63 bytes. */
SH_X512_FN static void sh_x512_queue_run(const uint8_t *const *p, const size_t *at, size_t len, uint64_t seed,
                                         uint64_t *out)
{
    uint64_t h[8];
    size_t l;
    sh_x512_lanes(p, len, seed, h);
    for (l = 0; l < 8; l++) out[at[l]] = h[l];
}

typedef char sh_x512_queue_check[SH_XXH64_QUEUE == 8 ? 1 : -1]; /* one vector per queue */

void sh_xxh64_offsets_batch(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                            uint64_t *out)
{
    if (sh_xxh_cpu & SH_CPU_AVX512)
        sh_xxh64_offsets_queued(data, offsets, n, seed, out, 4, sh_x512_queue_run);
    else
        sh_xxh64_offsets(data, offsets, n, seed, out);
}

#else /* no AVX-512 kernel in this build */

void sh_xxh64_offsets_batch(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                            uint64_t *out)
{
    sh_xxh64_offsets(data, offsets, n, seed, out);
}

#endif
