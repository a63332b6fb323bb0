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
        top = (int32_t)(state >> 33);          /* < 2^31: exact */
        /* Java: ((double) ((int) (state >>> 33) + 1)) / 0x1.0p31, in int
         * arithmetic, so INT_MAX + 1 wraps to INT_MIN. */
        if (top == INT32_MAX)
            d = -1.0;                          /* (double) INT_MIN / 2^31 */
        else
            d = (double)(top + 1) / 2147483648.0;
        next = sh_java_d2i((double)(candidate + 1) / d);
        if (next >= 0 && next < buckets)
            candidate = next;
        else
            return candidate;
    }
}

void sh_guava_consistent_hash_batch(const int64_t *keys, size_t n, int32_t buckets, int32_t *out)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = sh_guava_consistent_hash(keys[i], buckets);
}
