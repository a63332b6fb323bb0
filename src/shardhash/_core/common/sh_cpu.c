/*
 * shardhash core: run-time CPU feature check (see sh_cpu.h).
 */
#include "sh_cpu.h"

#if defined(SH_X86_SSE41) || defined(SH_X86_AVX2)

#  if defined(_MSC_VER) && !defined(__clang__)
#    include <intrin.h>
#    include <immintrin.h>

static void sh_cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
    int v[4];
    __cpuidex(v, (int)leaf, (int)sub);
    r[0] = (unsigned)v[0];
    r[1] = (unsigned)v[1];
    r[2] = (unsigned)v[2];
    r[3] = (unsigned)v[3];
}

#    ifdef SH_X86_AVX2
static uint64_t sh_xgetbv0(void)
{
    return (uint64_t)_xgetbv(0);
}
#    endif

#  else
#    include <cpuid.h>

static void sh_cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
    unsigned a, b, c, d;
    __cpuid_count(leaf, sub, a, b, c, d);
    r[0] = a;
    r[1] = b;
    r[2] = c;
    r[3] = d;
}

#    ifdef SH_X86_AVX2
/* XCR0 (xgetbv with ECX = 0); only called when cpuid reports OSXSAVE, so
 * the instruction exists and is enabled. */
static uint64_t sh_xgetbv0(void)
{
    unsigned lo, hi;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#    endif
#  endif

unsigned sh_cpu_detect(void)
{
    unsigned r[4], maxleaf, f = 0;
    sh_cpuid(0, 0, r);
    maxleaf = r[0];
    if (maxleaf < 1) return 0;
    sh_cpuid(1, 0, r);
#  ifdef SH_X86_SSE41
    if (r[2] & (1u << 19)) f |= SH_CPU_SSE41;
#  endif
#  ifdef SH_X86_AVX2
    /* AVX2 needs: the CPU's AVX (leaf 1 ECX bit 28) and AVX2 (leaf 7 EBX
     * bit 5), and the OS saving XMM and YMM state on context switches
     * (OSXSAVE, leaf 1 ECX bit 27, then XCR0 bits 1 and 2). */
    if ((r[2] & (1u << 27)) && (r[2] & (1u << 28)) && maxleaf >= 7) {
        uint64_t xcr0 = sh_xgetbv0();
        if ((xcr0 & 6) == 6) {
            sh_cpuid(7, 0, r);
            if (r[1] & (1u << 5)) f |= SH_CPU_AVX2;
#    ifdef SH_X86_AVX512
            /* AVX-512 needs, besides: AVX512F (leaf 7 EBX bit 16) and AVX512DQ
             * (bit 17), and the OS saving the opmask registers and all 512 bits
             * of the 32 ZMM registers (XCR0 bits 5, 6 and 7) */
            if ((r[1] & (1u << 16)) && (r[1] & (1u << 17)) && (xcr0 & 0xe0) == 0xe0) f |= SH_CPU_AVX512;
#    endif
        }
    }
#  endif
    return f;
}

#else

unsigned sh_cpu_detect(void)
{
    return 0;
}

#endif
