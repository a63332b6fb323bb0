/*
 * shardhash core: batch hashing kernels over the memory layouts the Python
 * layer hands us (numpy integer arrays, fixed-width bytes and UCS-4 arrays,
 * Arrow offset and view layouts).  Plain C, no Python.h; every kernel is
 * safe to run without the GIL on disjoint output slices.
 *
 * Every key is hashed exactly as the scalar path hashes its encoded bytes
 * (docs/protocol.md): integers as 8 little-endian bytes (or decimal ASCII
 * text when the codec asks for it), strings as UTF-8, bytes as they are.
 * The result is the algorithm's value widened to 64 bits (32-bit algorithms
 * zero-extended, murmur3_128 its first word h1).
 */
#ifndef SH_BATCH_H
#define SH_BATCH_H

#include "sh_hash.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Integer value -> its 8 little-endian bytes -> hash. `words` holds values
 * (host order); `stride` is in bytes. */
void sh_hash_words(int algo, uint64_t seed, const uint64_t *words, size_t n, uint64_t *out);
void sh_hash_words_strided(int algo, uint64_t seed, const char *base, ptrdiff_t stride, size_t n,
                           uint64_t *out);

/* Integer value -> decimal ASCII text ("-12", "18446744073709551615") -> hash.
 * `is_unsigned` says whether the 64-bit values are uint64 or int64. */
void sh_hash_decimal_strided(int algo, uint64_t seed, const char *base, ptrdiff_t stride, size_t n,
                             int is_unsigned, uint64_t *out);
/* Format one value as decimal text into buf (>= 21 bytes); returns length. */
size_t sh_format_decimal(uint64_t v, int is_unsigned, char *buf);

/* Arrow variable-length layouts: element i is data[offsets[i] .. offsets[i+1]). */
void sh_hash_offsets32(int algo, uint64_t seed, const uint8_t *data, const int32_t *offsets, size_t n,
                       uint64_t *out);
void sh_hash_offsets64(int algo, uint64_t seed, const uint8_t *data, const int64_t *offsets, size_t n,
                       uint64_t *out);

/* Arrow binary/string views: 16-byte views; inline when length <= 12, else
 * (prefix, buffer index, offset) into buffers[]. Returns -1, or the index of
 * the first view that points outside its buffer. */
ptrdiff_t sh_hash_views(int algo, uint64_t seed, const uint8_t *views, const uint8_t *const *buffers,
                        const int64_t *buffer_sizes, size_t n_buffers, size_t n, uint64_t *out);

/* numpy 'S' arrays: fixed-width items, trailing NUL bytes stripped. */
void sh_hash_fixed_bytes(int algo, uint64_t seed, const char *base, size_t itemsize, ptrdiff_t stride,
                         size_t n, uint64_t *out);

/* numpy 'U' arrays: `nchars` UCS-4 code points (host order) per item,
 * trailing NUL code points stripped, encoded to UTF-8 in `scratch` (at least
 * 4 * nchars bytes). Returns -1, or the index of the first item holding a
 * code point that is not a Unicode scalar value (surrogate or > 0x10FFFF). */
ptrdiff_t sh_hash_ucs4(int algo, uint64_t seed, const char *base, size_t nchars, ptrdiff_t stride, size_t n,
                       uint8_t *scratch, uint64_t *out);

/* Encode UCS-4 to UTF-8; returns the byte length or (size_t)-1 on an invalid
 * code point. `dst` needs 4 * n bytes. */
size_t sh_ucs4_to_utf8(const uint32_t *src, size_t n, uint8_t *dst);

#ifdef __cplusplus
}
#endif

#endif /* SH_BATCH_H */
