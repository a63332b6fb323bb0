/*
 * shardhash core: branch-light loads of a key's last bytes, shared by the
 * batch kernels of variable-length keys (sh_cassandra.c, sh_pg.c).
 *
 * "The window" of a key is the 16 bytes that end where the key ends, as two
 * little-endian words: lo = bytes 0..7, hi = bytes 8..15.  A hash whose tail
 * is the last len % B bytes cuts it out of the window with shifts instead of
 * a switch on the length (an indirect jump mispredicted on nearly every key
 * when lengths vary).  In Arrow data the window of a key that ends at least
 * 16 bytes into the buffer is two plain loads (bytes before the key belong to
 * other keys and are shifted out); otherwise sh_window_inside() assembles it
 * from loads inside the key, the bytes before the key being zero.
 *
 * Plain C99, explicit little-endian loads, no reads outside [p, p + len).
 */
#ifndef SH_WINDOW_H
#define SH_WINDOW_H

#include "sh_common.h"

/* x >> s and x << s for s in 0..64 (a shift by 64 is undefined in C). */
SH_FORCE_INLINE uint64_t sh_shr64_upto64(uint64_t x, unsigned s)
{
    return s < 64 ? x >> s : 0;
}

SH_FORCE_INLINE uint64_t sh_shl64_upto64(uint64_t x, unsigned s)
{
    return s < 64 ? x << s : 0;
}

/* The window of the key p[0 .. len), reading only inside it; the bytes of
 * the window before the key are zero. */
SH_FORCE_INLINE void sh_window_inside(const uint8_t *p, size_t len, uint64_t *lo, uint64_t *hi)
{
    if (len >= 8) {
        /* lo: the 8 bytes before the last 8, or (len < 16) the key's first 8
         * bytes moved up to where they belong; selects, not branches, so
         * that keys of 8 bytes and more of any length take one path */
        int whole = len >= 16;
        size_t lo_at = whole ? len - 16 : 0;
        unsigned up = whole ? 0u : 8u * (unsigned)(16 - len); /* 8..64 */
        *lo = sh_shl64_upto64(sh_read64le(p + lo_at), up);
        *hi = sh_read64le(p + len - 8);
    } else if (len >= 4) {
        *lo = 0;
        *hi = ((uint64_t)sh_read32le(p + len - 4) << 32) |
              ((uint64_t)sh_read32le(p) << (8u * (unsigned)(8 - len)));
    } else if (len > 0) {
        *lo = 0;
        *hi = ((uint64_t)p[0] << (8u * (unsigned)(8 - len))) |
              ((uint64_t)p[len / 2] << (8u * (unsigned)(8 - len + len / 2))) | ((uint64_t)p[len - 1] << 56);
    } else {
        *lo = 0;
        *hi = 0;
    }
}

/* The window of key i of Arrow-style data (key = data[a .. b)). */
SH_FORCE_INLINE void sh_window_arrow(const uint8_t *data, int64_t a, int64_t b, uint64_t *lo, uint64_t *hi)
{
    if (b >= 16) {
        *lo = sh_read64le(data + b - 16);
        *hi = sh_read64le(data + b - 8);
    } else {
        sh_window_inside(data + a, (size_t)(b - a), lo, hi);
    }
}

/* The window of a key whose 16 bytes before p are readable (their values
 * are shifted out): two loads, whatever the length.  For callers that can
 * vouch for those bytes (a Python bytes object's header precedes its data). */
SH_FORCE_INLINE void sh_window_padded(const uint8_t *p, size_t len, uint64_t *lo, uint64_t *hi)
{
    *lo = sh_read64le(p + len - 16);
    *hi = sh_read64le(p + len - 8);
}

/* The last t bytes of the window (t in 0..15) as a 128-bit little-endian
 * number: *w0 = its bytes 0..7, *w1 = its bytes 8..14 (zero above t). */
SH_FORCE_INLINE void sh_window_tail(uint64_t lo, uint64_t hi, unsigned t, uint64_t *w0, uint64_t *w1)
{
    unsigned s = 8u * (16u - t); /* window bits before the tail: 8..128 */
    *w1 = sh_shr64_upto64(hi, s);
    *w0 = s >= 64 ? sh_shr64_upto64(hi, s - 64) : (lo >> s) | (hi << (64 - s));
}

#endif /* SH_WINDOW_H */
