/*
 * shardhash core: Cassandra Murmur3Partitioner tokens of many
 * variable-length keys with AVX-512, eight keys per vector (x86-64, chosen
 * at run time), bit-exact with sh_cassandra_token.  The kernel itself is
 * sh_cassandra_simd.h (read its comment); this file gives it AVX-512's
 * vector operations: AVX512DQ's vpmullq multiplies and AVX512F's vprolq
 * rotates 64-bit lanes, and a lane condition is a mask register.
 *
 * Plain C99, no Python.h.  Compiled where sh_cpu.h defines SH_X86_AVX512,
 * through SH_TARGET("avx512f,avx512dq"), so the rest of the build needs no
 * -mavx512f; sh_cassandra_init chooses it when cpuid and xgetbv report
 * AVX512F, AVX512DQ and the ZMM state.  Everywhere else the entry points run
 * the scalar kernels (on a CPU without AVX-512 they must not be called).
 */
#include "sh_cassandra.h"
#include "sh_cpu.h"

#ifdef SH_X86_AVX512

#  include "sh_avx512.h"

#  define SH_CV         __m512i
#  define SH_CV_LANES   8
#  define SH_CV_MASK    __mmask8
#  define SH_CV_FN      SH_TARGET("avx512f,avx512dq")
#  define SH_CV_INLINE  SH_AVX512_INLINE
#  define SH_CV_NAME(f) f##_avx512

#  define SH_CV_SET1(x)      _mm512_set1_epi64(x)
#  define SH_CV_ZERO()       _mm512_setzero_si512()
#  define SH_CV_LOADU(p)     _mm512_loadu_si512((const void *)(p))
#  define SH_CV_STOREU(p, v) _mm512_storeu_si512((void *)(p), (v))
#  define SH_CV_XOR(a, b)    _mm512_xor_si512((a), (b))
#  define SH_CV_OR(a, b)     _mm512_or_si512((a), (b))
#  define SH_CV_AND(a, b)    _mm512_and_si512((a), (b))
#  define SH_CV_ADD(a, b)    _mm512_add_epi64((a), (b))
#  define SH_CV_SUB(a, b)    _mm512_sub_epi64((a), (b))
#  define SH_CV_SLLI(v, n)   _mm512_slli_epi64((v), (n))
#  define SH_CV_SRLI(v, n)   _mm512_srli_epi64((v), (n))
#  define SH_CV_SLLV(v, n)   _mm512_sllv_epi64((v), (n))
#  define SH_CV_SRLV(v, n)   _mm512_srlv_epi64((v), (n))
#  define SH_CV_ROTL(v, r)   _mm512_rol_epi64((v), (r))
#  define SH_CV_MULC(v, hi, lo) \
      _mm512_mullo_epi64((v), _mm512_set1_epi64(sh_avx512_i64(((uint64_t)(hi) << 32) | (lo))))
#  define SH_CV_GT(a, b)          _mm512_cmpgt_epi64_mask((a), (b))
#  define SH_CV_EQ(a, b)          _mm512_cmpeq_epi64_mask((a), (b))
#  define SH_CV_SELECT(m, a, b)   _mm512_mask_mov_epi64((a), (m), (b))
#  define SH_CV_LOAD16(q, w0, w1) sh_avx512_load16x8(q, 0, w0, w1)

#  include "sh_cassandra_simd.h"

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
