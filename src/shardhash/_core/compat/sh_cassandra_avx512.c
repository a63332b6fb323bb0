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

#  include "sh_cv_avx512.h"
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
