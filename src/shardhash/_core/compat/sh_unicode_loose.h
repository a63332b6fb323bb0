/*
 * shardhash core: the collation key of Vitess's unicode_loose_md5 /
 * unicode_loose_xxhash vindexes (the primary weights of golang.org/x/text's
 * collate, English, Loose), folded in C.
 *
 * The weight tables are not compiled in: the caller builds them once from
 * the Python tables (shardhash/compat/_unicode_loose_table.py, the single
 * source of the data) with sh_uloose_new, and the rules are those of
 * shardhash/compat/_unicode_loose.py (the reference these functions are
 * tested against): each code point weighs as its explicit collation elements,
 * a contraction starter takes the longest contraction that follows it
 * (contiguous, or skipping combining marks of a lower class, which are
 * weighed after it), a Hangul syllable weighs as its jamo, any other code
 * point gets an implicit weight; runs of combining elements out of canonical
 * order are put in order as colltab's iterator does; the non-zero primaries
 * are written as 2 big-endian bytes, or 3 with the top bit set above 0x7FFF.
 *
 * Input: UTF-8 (checked as Python's strict decoder checks it: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or the code units of a
 * Python str (1, 2 or 4 bytes each; a surrogate is an error, as it has no
 * UTF-8 form).  Trailing U+0020 spaces are dropped first.
 *
 * Memory: a key of n code points needs n uint32 for its code points and at
 * most E * n collation elements (4 bytes each, the key's bytes are written
 * over them: 3 bytes at most per element), E = sh_uloose_max_elems() (the
 * most elements one code point or contraction yields: 18 with the current
 * tables).  The buffers in sh_uloose_buf start at 2n + 16 elements and grow
 * (doubling, up to that bound) only for keys that need it.
 *
 * Fast paths, as the Python rules' str.translate path: all-ASCII text, and text
 * of "simple" characters only (in no contraction's suffix, first element and
 * decomposition of class 0), weigh character by character, encoded straight
 * from the tables.
 */
#ifndef SH_UNICODE_LOOSE_H
#define SH_UNICODE_LOOSE_H

#include "sh_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest contraction suffix (code points after the starter) the tables may hold. */
#define SH_ULOOSE_MAX_SUFFIX 4
/* Columns of one contraction row given to sh_uloose_new:
 * starter, suffix length, SH_ULOOSE_MAX_SUFFIX suffix code points, element offset, element count. */
#define SH_ULOOSE_CON_COLS   (4 + SH_ULOOSE_MAX_SUFFIX)

typedef struct sh_uloose sh_uloose;

/* Tables from flat arrays (copied; the arrays may be freed after):
 *  - elems[nelems]: a pool of collation elements, each (primary << 8) | combining class;
 *  - exp_cp/exp_off/exp_cnt[nexp]: the code points with explicit elements, ascending,
 *    each with its elements' offset and count in the pool;
 *  - ideo[2 * nideo]: inclusive, ascending ranges of ideographs with implicit weights;
 *  - ccc_cp/ccc_lead/ccc_trail[nccc]: the code points (ascending) whose canonical
 *    decomposition starts or ends with a combining class other than 0, and those classes;
 *  - con[SH_ULOOSE_CON_COLS * ncon]: the contractions (elements in the pool);
 *  - max_combining: colltab's maxCombiningCharacters (30).
 * NULL if the tables are inconsistent or memory runs out. */
sh_uloose *sh_uloose_new(const uint32_t *elems, size_t nelems, const uint32_t *exp_cp,
                         const uint32_t *exp_off, const uint8_t *exp_cnt, size_t nexp, const uint32_t *ideo,
                         size_t nideo, const uint32_t *ccc_cp, const uint8_t *ccc_lead,
                         const uint8_t *ccc_trail, size_t nccc, const uint32_t *con, size_t ncon,
                         int max_combining);
void sh_uloose_free(sh_uloose *t);
/* E of the memory bound above. */
size_t sh_uloose_max_elems(const sh_uloose *t);

/* Scratch buffers, reused from key to key (zero-initialise; sh_uloose_buf_free after). */
typedef struct {
    uint32_t *cps;
    size_t cps_cap;
    uint32_t *el;
    size_t el_cap;
} sh_uloose_buf;
void sh_uloose_buf_free(sh_uloose_buf *b);

/* Results of the fold functions (>= 0: the key's length in bytes). */
#define SH_ULOOSE_BAD_INPUT (-1) /* invalid UTF-8, or a surrogate */
#define SH_ULOOSE_NOMEM     (-2)

/* The collation key of `len` units of `data` (kind 0: UTF-8 bytes; 1, 2, 4:
 * the code units of a Python str), at *key (inside b, valid until the next
 * call with b). */
ptrdiff_t sh_uloose_fold(const sh_uloose *t, const void *data, size_t len, int kind, sh_uloose_buf *b,
                         const uint8_t **key);

/* Keyspace ids of n keys (ptrs[i], lens[i], kinds[i] as in sh_uloose_fold):
 * with md5, the first 8 bytes of the MD5 of each key, else its xxh64 (seed 0)
 * written little-endian; either read as a big-endian uint64 into out[i].
 * Returns -1, the index of the first bad key (out[i] undefined from there),
 * or -2 when memory runs out. */
ptrdiff_t sh_uloose_ksids(const sh_uloose *t, const void *const *ptrs, const int64_t *lens,
                          const uint8_t *kinds, size_t n, int md5, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* SH_UNICODE_LOOSE_H */
