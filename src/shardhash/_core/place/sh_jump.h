/*
 * shardhash core: jump consistent hash (portable, SSE4.1, AVX2 and NEON kernels).
 *
 * Part of the placement kernels (sh_place.h): plain C99, no Python.h.
 */
#ifndef SH_JUMP_H
#define SH_JUMP_H

#include "sh_common.h"
#include "sh_cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Jump consistent hash (Lamping & Veach 2014), bit-exact with the paper's
 * reference code.  num_buckets must be >= 1.
 */
int32_t sh_jump(uint64_t key, int32_t num_buckets);
/* The paper's loop as written (sh_jump may take a faster, bit-exact path). */
int32_t sh_jump_reference(uint64_t key, int32_t num_buckets);
/* Same over a batch: out[i] = sh_jump(hashes[i], num_buckets).  Runs
 * sh_jump_batch_avx2 when sh_jump_avx2_available(), else sh_jump_batch_neon
 * where the build has it (SH_ARM_NEON), else sh_jump_batch_scalar; all give
 * identical outputs. */
void sh_jump_batch(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out);
/* Portable kernel: eight independent keys interleaved per iteration. */
void sh_jump_batch_scalar(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out);
/* Choose the SIMD kernels for this CPU (sh_cpu_detect: cpuid/xgetbv on
 * x86-64).  Call it once, before any thread runs a kernel (the Python
 * module calls it at import); until then sh_jump, sh_jump_batch and
 * sh_jump_batch_avx2 run the portable code (same outputs). */
void sh_place_init(void);
/* The SH_CPU_* bits sh_place_init chose (0 before it ran). */
unsigned sh_place_features(void);
/* sh_jump_avx2.c: 1 when this build has the AVX2 kernel (SH_X86_AVX2 in
 * sh_cpu.h) and sh_place_init found AVX2 on the CPU, else 0. */
int sh_jump_avx2_available(void);
/* The AVX2 kernel (twelve keys in flight, IEEE arithmetic identical to
 * sh_jump's); sh_jump_batch_scalar when sh_jump_avx2_available() is 0 or
 * for batches under 128 keys. */
void sh_jump_batch_avx2(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out);
/* sh_jump_neon.c: 1 when this build has the aarch64 NEON kernel (SH_ARM_NEON). */
int sh_jump_neon_available(void);
#ifdef SH_ARM_NEON
/* The NEON kernel (four keys in flight, their divisions two per fdiv;
 * arithmetic identical to sh_jump's; sh_jump_batch_scalar for batches under
 * 16 keys).  Defined only in builds that have it (sh_cpu.h). */
void sh_jump_batch_neon(const uint64_t *hashes, size_t n, int32_t num_buckets, int32_t *out);
#endif

#ifdef __cplusplus
}
#endif

#endif /* SH_JUMP_H */
