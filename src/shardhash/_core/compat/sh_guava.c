/*
 * shardhash core: Guava's consistentHash.  See sh_guava.h.
 */
#include "sh_guava.h"

#define SH_GUAVA_LCG_MUL UINT64_C(2862933555777941757)

/* Java's (int) of a double: NaN -> 0, saturating at the int range,
 * otherwise truncation toward zero. */
SH_FORCE_INLINE int32_t sh_java_d2i(double x)
{
    if (x != x) return 0;
    if (x >= 2147483647.0) return INT32_MAX;
    if (x <= -2147483648.0) return INT32_MIN;
    return (int32_t)x;
}

int32_t sh_guava_consistent_hash(int64_t input, int32_t buckets)
{
    uint64_t state = (uint64_t)input;
    int32_t candidate = 0;
    for (;;) {
        int32_t top, next;
        double d;
        state = SH_GUAVA_LCG_MUL * state + 1u;
        top = (int32_t)(state >> 33); /* < 2^31: exact */
        /* Java: ((double) ((int) (state >>> 33) + 1)) / 0x1.0p31, in int
         * arithmetic, so INT_MAX + 1 wraps to INT_MIN. */
        if (top == INT32_MAX)
            d = -1.0; /* (double) INT_MIN / 2^31 */
        else
            d = (double)(top + 1) / 2147483648.0;
        next = sh_java_d2i((double)(candidate + 1) / d);
        if (next >= 0 && next < buckets)
            candidate = next;
        else
            return candidate;
    }
}

/* Batches run SH_GUAVA_LANES keys side by side: each key's loop is a chain
 * of dependent divisions, and interleaving independent keys hides their
 * latency.  A lane that has finished keeps its candidate and only idles
 * until every lane is done; the results equal the scalar function's. */
#define SH_GUAVA_LANES 4

void sh_guava_consistent_hash_batch(const int64_t *keys, size_t n, int32_t buckets, int32_t *out)
{
    size_t i = 0;
    for (; i + SH_GUAVA_LANES <= n; i += SH_GUAVA_LANES) {
        uint64_t state[SH_GUAVA_LANES];
        int32_t cand[SH_GUAVA_LANES];
        int live[SH_GUAVA_LANES];
        int any, j;
        for (j = 0; j < SH_GUAVA_LANES; j++) {
            state[j] = (uint64_t)keys[i + j];
            cand[j] = 0;
            live[j] = 1;
        }
        do {
            any = 0;
            for (j = 0; j < SH_GUAVA_LANES; j++) {
                int32_t top, next;
                double d;
                int ok;
                state[j] = SH_GUAVA_LCG_MUL * state[j] + 1u;
                top = (int32_t)(state[j] >> 33);
                d = (top == INT32_MAX) ? -1.0 : (double)(top + 1) / 2147483648.0;
                next = sh_java_d2i((double)(cand[j] + 1) / d);
                ok = live[j] & (next >= 0) & (next < buckets);
                cand[j] = ok ? next : cand[j];
                live[j] = ok;
                any |= ok;
            }
        } while (any);
        for (j = 0; j < SH_GUAVA_LANES; j++) out[i + j] = cand[j];
    }
    for (; i < n; i++) out[i] = sh_guava_consistent_hash(keys[i], buckets);
}
