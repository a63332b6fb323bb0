/*
 * shardhash core: Cassandra Murmur3Partitioner tokens of many
 * variable-length keys with AVX2, four keys per vector (x86-64 CPUs without
 * AVX-512, chosen at run time), bit-exact with sh_cassandra_token.  The
 * kernel itself is sh_cassandra_simd.h (read its comment); this file gives
 * it AVX2's vector operations.  AVX2 has neither 64-bit multiplies nor
 * rotations:
 *
 *  - a * c (mod 2^64) for a constant c is three 32 x 32 -> 64-bit multiplies
 *    (vpmuludq): lo(a) * lo(c) + ((hi(a) * lo(c) + lo(a) * hi(c)) << 32);
 *  - a rotation is two shifts and an or;
 *  - a lane condition is a vector of all-ones or zero lanes, and a select a
 *    byte blend.
 *
 * Plain C99, no Python.h.  Compiled where sh_cpu.h defines SH_X86_AVX2,
 * through SH_TARGET("avx2"); elsewhere the entry points run the scalar
 * kernels (on a CPU without AVX2 they must not be called).
 */
#include "sh_cassandra.h"
#include "sh_cpu.h"

#ifdef SH_X86_AVX2

#  include "sh_cv_avx2.h"
#  include "sh_cassandra_simd.h"

#else /* no AVX2 kernels in this build */

void sh_cassandra_token_offsets_avx2(const uint8_t *data, const int64_t *offsets, size_t n, int64_t *out)
{
    sh_cassandra_token_offsets_scalar(data, offsets, n, out);
}

void sh_cassandra_token_ptrs16_avx2(const uint8_t *const *ptrs, const int64_t *lens, size_t n, int64_t *out)
{
    sh_cassandra_token_ptrs16_scalar(ptrs, lens, n, out);
}

#endif
