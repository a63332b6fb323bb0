/*
 * shardhash core: which SIMD kernels a build contains, and a run-time check
 * of the CPU (cpuid/xgetbv on x86-64) that chooses among them.
 *
 * Plain C99, no Python.h.  The check uses the compilers' own cpuid entry
 * points (<cpuid.h> with gcc and clang, __cpuidex/_xgetbv with MSVC) rather
 * than __builtin_cpu_supports, which Apple's toolchain lowers to a runtime
 * symbol (__cpu_model) it does not always provide, and which MSVC lacks.
 */
#ifndef SH_CPU_H
#define SH_CPU_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* SH_X86_SSE41: the SSE4.1 scalar jump is compiled (x86-64 with gcc, clang
 * or MSVC, on every OS; 16-byte vectors need no more stack alignment than
 * every x86-64 ABI guarantees).
 *
 * SH_X86_AVX2: the AVX2 jump batch kernel is compiled: x86-64 with clang
 * (every OS), MSVC, or gcc outside Windows.  gcc targeting Windows
 * (mingw-w64, Cygwin) is left out: the 64-bit Windows ABI guarantees only a
 * 16-byte aligned stack, and gcc does not realign the stack of a function
 * that spills 32-byte registers (GCC bug 54412), so a spilled __m256 is
 * stored with an aligned move (vmovapd/vmovdqa) to a 16-byte aligned slot
 * and the program faults.  No flag of that compiler makes the kernel safe
 * (-mstackrealign does not cover it), and the kernel cannot be written to
 * never spill, so mingw builds keep the portable kernel; clang and MSVC
 * realign the frame themselves.
 *
 * SH_X86_AVX512: the AVX-512 kernels (AVX512F and AVX512DQ: 64-bit
 * multiplies and rotations in eight lanes) are compiled, with the same
 * compilers as AVX2 and for the same reason (a spilled 64-byte register needs
 * a 64-byte aligned slot).
 *
 * SH_NO_SIMD turns every SIMD kernel off. */
#if !defined(SH_NO_SIMD) && (defined(__x86_64__) || defined(_M_X64)) && !defined(_M_ARM64EC)
#  if defined(__clang__) || defined(_MSC_VER) || defined(__GNUC__)
#    define SH_X86_SSE41 1
#  endif
#  if defined(__clang__) || defined(_MSC_VER) || \
      (defined(__GNUC__) && !defined(_WIN32) && !defined(__CYGWIN__))
#    define SH_X86_AVX2   1
#    define SH_X86_AVX512 1
#  endif
#endif

/* SH_ARM_NEON: the NEON jump batch kernel is compiled (aarch64 with gcc or
 * clang; NEON and its double-precision division are part of every aarch64
 * CPU, so no run-time check is needed). */
#if !defined(SH_NO_SIMD) && defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#  define SH_ARM_NEON 1
#endif

/* A function compiled for an instruction-set extension the rest of the build
 * does not assume (gcc and clang need the attribute to use its intrinsics;
 * MSVC allows them everywhere). */
#if defined(__GNUC__) || defined(__clang__)
#  define SH_TARGET(isa) __attribute__((target(isa)))
#else
#  define SH_TARGET(isa)
#endif

#define SH_CPU_SSE41  1u /* SSE4.1 */
#define SH_CPU_AVX2   2u /* AVX2, with the OS saving the YMM registers (XCR0) */
#define SH_CPU_AVX512 4u /* AVX512F and AVX512DQ, with the OS saving the ZMM and mask registers */

/* The kernel a dispatching entry point runs: fast where the SH_CPU_* flags
 * word cpu has flag, else slow (two functions of one type), e.g.
 *     SH_CPU_PICK(cpu, SH_CPU_AVX2, f_avx2, f_scalar)(args);
 * nested for more than two kernels. */
#define SH_CPU_PICK(cpu, flag, fast, slow) (((cpu) & (flag)) ? (fast) : (slow))

/* The SH_CPU_* features of this CPU that this build has kernels for (0 on
 * other architectures).  Runs cpuid every call: callers cache the answer. */
unsigned sh_cpu_detect(void);

#ifdef __cplusplus
}
#endif

#endif
