/*
 * shardhash core: XXH64 of many variable-length keys with AVX-512, eight
 * keys per vector (x86-64, chosen at run time by sh_xxhash_batch.c),
 * bit-exact with sh_xxh64.  The kernel itself is sh_xxhash_simd.h (read its
 * comment); this file gives it AVX-512's vector operations
 * (sh_cv_avx512.h: AVX512DQ's vpmullq multiplies, AVX512F's vprolq
 * rotates, mask registers).
 *
 * Plain C99, no Python.h.  Compiled where sh_cpu.h defines SH_X86_AVX512,
 * through SH_TARGET("avx512f,avx512dq"), so the rest of the build needs no
 * -mavx512f.  Elsewhere the entry points run the scalar kernels (on a CPU
 * without AVX-512 they must not be called).
 */
#include "sh_cpu.h"
#include "sh_xxhash.h"

#ifdef SH_X86_AVX512

#  include "sh_cv_avx512.h"
#  include "sh_xxhash_simd.h"

#else /* no AVX-512 kernel in this build */

void sh_xxh64_offsets_avx512(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                             uint64_t *out)
{
    sh_xxh64_offsets(data, offsets, n, seed, out);
}

void sh_xxh64_ptrs32_avx512(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint64_t seed,
                            uint64_t *out)
{
    sh_xxh64_ptrs(ptrs, lens, n, seed, out);
}

#endif
