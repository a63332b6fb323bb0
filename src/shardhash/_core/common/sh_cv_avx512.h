/*
 * shardhash core: the 64-bit-lane vector operations (SH_CV_*) of the
 * kernels written once for any vector width (compat/sh_cassandra_simd.h,
 * hash/sh_xxhash_simd.h), for AVX-512: eight lanes, AVX512DQ's vpmullq
 * multiplies, AVX512F's vprolq rotates, and a lane condition is a mask
 * register.  Include only where sh_cpu.h defines SH_X86_AVX512, once per
 * file, before the kernel's header; its functions are compiled for
 * AVX512F and AVX512DQ, so call them only from SH_CV_FN functions.
 *
 * The operations (the AVX2 header, sh_cv_avx2.h, defines the same):
 *   SH_CV (the vector type), SH_CV_LANES, SH_CV_MASK (a per-lane
 *   condition), SH_CV_FN (an entry point compiled for the ISA),
 *   SH_CV_INLINE (forced inline, compiled for the ISA), SH_CV_NAME(f) (f
 *   with the ISA's suffix);
 *   SH_CV_SET1(int64), SH_CV_ZERO(), SH_CV_LOADU(p), SH_CV_STOREU(p, v);
 *   SH_CV_XOR, SH_CV_OR, SH_CV_AND, SH_CV_ADD, SH_CV_SUB (lane-wise);
 *   SH_CV_SLLI(v, n), SH_CV_SRLI(v, n) (constant shifts), SH_CV_SLLV(v, n),
 *   SH_CV_SRLV(v, n) (per-lane shifts, 0 for counts of 64 and more),
 *   SH_CV_ROTL(v, r) (constant r), SH_CV_MULC(v, hi, lo) (times the
 *   constant (hi << 32) | lo, mod 2^64);
 *   SH_CV_GT(a, b), SH_CV_EQ(a, b) (signed comparisons, as SH_CV_MASK),
 *   SH_CV_SELECT(m, a, b) (b where m, else a);
 *   SH_CV_LOAD16(q, w0, w1): the 16 bytes at q[l] for every lane l, as
 *   bytes 0..7 (*w0) and 8..15 (*w1) read little-endian, key l in lane l;
 *   and for the kernels that run on AVX-512 only (sh_xxhash_simd.h):
 *   SH_CV_LOAD16_ABS(addr, off, w0, w1): the same for the 16 bytes at the
 *   addresses addr[l] + off (addr: SH_CV_LANES int64, pointers' bits);
 *   SH_CV_MASK_BITS(m): the condition as bits (lane l in bit l);
 *   SH_CV_COMPRESS(m, v): v's lanes where m, in order, in the first lanes
 *   (the others unspecified); SH_CV_EXPAND_LOADU(src, m, p): src with the
 *   lanes where m replaced, in order, by p[0], p[1], ... (it reads p[0 ..
 *   SH_CV_LANES) whatever m is).
 */
#ifndef SH_CV_AVX512_H
#define SH_CV_AVX512_H

#include "sh_avx512.h"

#define SH_CV         __m512i
#define SH_CV_LANES   8
#define SH_CV_MASK    __mmask8
#define SH_CV_FN      SH_TARGET("avx512f,avx512dq")
#define SH_CV_INLINE  SH_AVX512_INLINE
#define SH_CV_NAME(f) f##_avx512

#define SH_CV_SET1(x)      _mm512_set1_epi64(x)
#define SH_CV_ZERO()       _mm512_setzero_si512()
#define SH_CV_LOADU(p)     _mm512_loadu_si512((const void *)(p))
#define SH_CV_STOREU(p, v) _mm512_storeu_si512((void *)(p), (v))
#define SH_CV_XOR(a, b)    _mm512_xor_si512((a), (b))
#define SH_CV_OR(a, b)     _mm512_or_si512((a), (b))
#define SH_CV_AND(a, b)    _mm512_and_si512((a), (b))
#define SH_CV_ADD(a, b)    _mm512_add_epi64((a), (b))
#define SH_CV_SUB(a, b)    _mm512_sub_epi64((a), (b))
#define SH_CV_SLLI(v, n)   _mm512_slli_epi64((v), (n))
#define SH_CV_SRLI(v, n)   _mm512_srli_epi64((v), (n))
#define SH_CV_SLLV(v, n)   _mm512_sllv_epi64((v), (n))
#define SH_CV_SRLV(v, n)   _mm512_srlv_epi64((v), (n))
#define SH_CV_ROTL(v, r)   _mm512_rol_epi64((v), (r))
#define SH_CV_MULC(v, hi, lo) \
    _mm512_mullo_epi64((v), _mm512_set1_epi64(sh_avx512_i64(((uint64_t)(hi) << 32) | (lo))))
#define SH_CV_GT(a, b)                      _mm512_cmpgt_epi64_mask((a), (b))
#define SH_CV_EQ(a, b)                      _mm512_cmpeq_epi64_mask((a), (b))
#define SH_CV_SELECT(m, a, b)               _mm512_mask_mov_epi64((a), (m), (b))
#define SH_CV_LOAD16(q, w0, w1)             sh_avx512_load16x8(q, 0, w0, w1)
#define SH_CV_LOAD16_ABS(addr, off, w0, w1) sh_avx512_load16x8_abs(addr, off, w0, w1)
#define SH_CV_MASK_BITS(m)                  ((unsigned)(m))
#define SH_CV_COMPRESS(m, v)                _mm512_maskz_compress_epi64((m), (v))
#define SH_CV_EXPAND_LOADU(src, m, p) \
    _mm512_mask_expand_epi64((src), (m), _mm512_loadu_si512((const void *)(p)))

#endif /* SH_CV_AVX512_H */
