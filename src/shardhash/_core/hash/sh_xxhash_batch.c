/*
 * shardhash core: the choice of XXH64 batch kernel for this CPU: AVX-512
 * (sh_xxhash_avx512.c), else the scalar kernel (sh_xxh64_offsets,
 * sh_xxhash.c).  There is no AVX2 kernel: written from the same source
 * (sh_xxhash_simd.h, four lanes, each 64-bit multiply three 32-bit ones),
 * it was 10% slower than the scalar kernel on keys of mixed lengths and no
 * faster on keys of one length (1M keys of 4..40 bytes against 22 bytes).
 * Plain C99, no Python.h.
 */
#include "sh_cpu.h"
#include "sh_xxhash.h"

/* The SH_CPU_* flags found by sh_xxh64_batch_init; 0 (the scalar kernel)
 * until it runs.  Written only by sh_xxh64_batch_init, which the caller
 * runs once before any other thread can run a kernel (the Python module
 * does at import), so the kernels only ever read it. */
static unsigned sh_xxh_cpu = 0;

void sh_xxh64_batch_init(void)
{
    sh_xxh_cpu = sh_cpu_detect();
}

int sh_xxh64_avx512_available(void)
{
    return (sh_xxh_cpu & SH_CPU_AVX512) != 0;
}

const char *sh_xxh64_batch_kernel(void)
{
    return (sh_xxh_cpu & SH_CPU_AVX512) ? "avx512" : "scalar";
}

void sh_xxh64_offsets_batch(const uint8_t *data, const int64_t *offsets, size_t n, uint64_t seed,
                            uint64_t *out)
{
    SH_CPU_PICK(sh_xxh_cpu, SH_CPU_AVX512, sh_xxh64_offsets_avx512, sh_xxh64_offsets)(data, offsets, n, seed,
                                                                                      out);
}

void sh_xxh64_ptrs(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint64_t seed, uint64_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_xxh64(ptrs[i], (size_t)lens[i], seed);
}

void sh_xxh64_ptrs32_batch(const uint8_t *const *ptrs, const int64_t *lens, size_t n, uint64_t seed,
                           uint64_t *out)
{
    SH_CPU_PICK(sh_xxh_cpu, SH_CPU_AVX512, sh_xxh64_ptrs32_avx512, sh_xxh64_ptrs)(ptrs, lens, n, seed, out);
}
