/*
 * Vitess unicode_loose_* collation keys in C (see sh_unicode_loose.h): the
 * rules of shardhash/compat/_unicode_loose.py, function for function
 * (append_next, the contraction matcher with its scan, the segment walk of
 * elements, the weight encoding), over tables built from its Python tables.
 */
#include "sh_unicode_loose.h"
#include "sh_hash.h"
#include "sh_md5.h"

#include <stdlib.h>

#define NBLOCKS (0x110000u >> 8)

/* a code point's info word: pool offset (20 bits), element count (5 bits), kind, starter */
#define I_OFF_MASK   0xFFFFFu
#define I_CNT_SHIFT  20
#define I_CNT_MASK   0x1Fu
#define I_KIND_SHIFT 25
#define I_KIND_MASK  3u
#define K_OTHER      0u /* implicit: code point + 0x50000 */
#define K_EXPLICIT   1u /* elements in the pool */
#define K_HANGUL     2u /* a Hangul syllable: its jamo's elements */
#define K_IDEO       3u /* implicit ideograph: + 0x10000 (CJK unified / compatibility), + 0x20000 */
#define I_STARTER    (1u << 27)
/* "simple" (as _unicode_loose._fast_tables has it): in no contraction's suffix, its
 * first element of class 0, and so the first character of its decomposition.  A
 * string of simple characters weighs character by character: no contraction can
 * match, and each character's elements open a new segment, so nothing is reordered */
#define I_SIMPLE     (1u << 28)

/* how deep skipped marks may nest (each level a contraction inside the marks
 * another skipped); deeper keys are refused (SH_ULOOSE_BAD_INPUT), and the
 * caller folds them by the Python rules */
#define MAX_DEPTH  64
#define SKIP_STACK 32

struct sh_uloose {
    uint16_t stage1[NBLOCKS];
    uint32_t *blocks;
    uint32_t *pool;
    uint32_t *ccc_cp;
    uint8_t *ccc_lead;
    uint8_t *ccc_trail;
    size_t nccc;
    uint32_t *st_cp;  /* contraction starters, ascending */
    uint32_t *st_beg; /* their rows: [st_beg[k], st_beg[k + 1]) */
    size_t nst;
    uint32_t *con; /* rows of SH_ULOOSE_CON_COLS, grouped by starter */
    size_t max_elems;
    int max_combining;
    int ascii_fast; /* all-ASCII text weighs character by character */
    uint8_t ascii_len[128];
    uint8_t ascii_key[128][3];
};

SH_FORCE_INLINE uint32_t info_of(const sh_uloose *t, uint32_t cp)
{
    return t->blocks[((size_t)t->stage1[cp >> 8] << 8) | (cp & 0xFFu)];
}

static size_t find_u32(const uint32_t *v, size_t n, uint32_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo; /* n, or the first index with v[i] >= x */
}

/* _cccs: the combining classes of the first and last character of the NFD of cp */
static void cccs(const sh_uloose *t, uint32_t cp, uint8_t *lead, uint8_t *trail)
{
    size_t k = find_u32(t->ccc_cp, t->nccc, cp);
    if (k < t->nccc && t->ccc_cp[k] == cp) {
        *lead = t->ccc_lead[k];
        *trail = t->ccc_trail[k];
    } else {
        *lead = 0;
        *trail = 0;
    }
}

static uint8_t lead_ccc(const sh_uloose *t, uint32_t cp)
{
    uint8_t l, r;
    cccs(t, cp, &l, &r);
    return l;
}

void sh_uloose_free(sh_uloose *t)
{
    if (t == NULL) return;
    free(t->blocks);
    free(t->pool);
    free(t->ccc_cp);
    free(t->ccc_lead);
    free(t->ccc_trail);
    free(t->st_cp);
    free(t->st_beg);
    free(t->con);
    free(t);
}

size_t sh_uloose_max_elems(const sh_uloose *t)
{
    return t->max_elems;
}

static void *dup_mem(const void *p, size_t size)
{
    void *q = malloc(size ? size : 1);
    if (q != NULL && size) memcpy(q, p, size);
    return q;
}

/* the encoded bytes of one weight; returns their number */
SH_FORCE_INLINE size_t put_weight(uint8_t *o, uint32_t w)
{
    if (w <= 0x7FFFu) {
        o[0] = (uint8_t)(w >> 8);
        o[1] = (uint8_t)w;
        return 2;
    }
    w |= 0x800000u;
    o[0] = (uint8_t)(w >> 16);
    o[1] = (uint8_t)(w >> 8);
    o[2] = (uint8_t)w;
    return 3;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int build_blocks(sh_uloose *t, const uint32_t *exp_cp, const uint32_t *exp_off, const uint8_t *exp_cnt,
                        size_t nexp, const uint32_t *ideo, size_t nideo, const uint32_t *sfx, size_t nsfx)
{
    size_t ic = 0, isx = 0;
    uint32_t tmp[256];
    uint32_t uniform_val[16];
    uint16_t uniform_blk[16];
    size_t nuniform = 0, nblocks = 0, cap = 64, ie = 0, ii = 0, is = 0, b;
    t->blocks = (uint32_t *)malloc(cap * 256 * sizeof(uint32_t));
    if (t->blocks == NULL) return -1;
    for (b = 0; b < NBLOCKS; b++) {
        size_t j, u;
        int same = 1;
        for (j = 0; j < 256; j++) {
            uint32_t cp = (uint32_t)(b << 8 | j), info;
            while (ii < nideo && ideo[2 * ii + 1] < cp) ii++;
            if (ie < nexp && exp_cp[ie] == cp) {
                info = exp_off[ie] | (uint32_t)exp_cnt[ie] << I_CNT_SHIFT | K_EXPLICIT << I_KIND_SHIFT;
                ie++;
            } else if (cp >= 0xAC00u && cp <= 0xD7A3u) {
                info = K_HANGUL << I_KIND_SHIFT;
            } else if (ii < nideo && ideo[2 * ii] <= cp) {
                info = K_IDEO << I_KIND_SHIFT;
            } else {
                info = K_OTHER << I_KIND_SHIFT;
            }
            if (is < t->nst && t->st_cp[is] == cp) {
                info |= I_STARTER;
                is++;
            }
            while (ic < t->nccc && t->ccc_cp[ic] < cp) ic++;
            while (isx < nsfx && sfx[isx] < cp) isx++;
            if (!(isx < nsfx && sfx[isx] == cp) &&
                !(ic < t->nccc && t->ccc_cp[ic] == cp && t->ccc_lead[ic]) &&
                !((info >> I_KIND_SHIFT & I_KIND_MASK) == K_EXPLICIT && (t->pool[info & I_OFF_MASK] & 0xFFu)))
                info |= I_SIMPLE;
            tmp[j] = info;
            same &= tmp[j] == tmp[0];
        }
        if (same) {
            for (u = 0; u < nuniform && uniform_val[u] != tmp[0]; u++) {
            }
            if (u < nuniform) {
                t->stage1[b] = uniform_blk[u];
                continue;
            }
        }
        if (nblocks == cap) {
            uint32_t *nb = (uint32_t *)realloc(t->blocks, 2 * cap * 256 * sizeof(uint32_t));
            if (nb == NULL) return -1;
            t->blocks = nb;
            cap *= 2;
        }
        memcpy(t->blocks + nblocks * 256, tmp, sizeof tmp);
        if (same && nuniform < 16) {
            uniform_val[nuniform] = tmp[0];
            uniform_blk[nuniform++] = (uint16_t)nblocks;
        }
        t->stage1[b] = (uint16_t)nblocks++;
    }
    return ie == nexp && is == t->nst ? 0 : -1; /* every entry placed: ascending, in range */
}

sh_uloose *sh_uloose_new(const uint32_t *elems, size_t nelems, const uint32_t *exp_cp,
                         const uint32_t *exp_off, const uint8_t *exp_cnt, size_t nexp, const uint32_t *ideo,
                         size_t nideo, const uint32_t *ccc_cp, const uint8_t *ccc_lead,
                         const uint8_t *ccc_trail, size_t nccc, const uint32_t *con, size_t ncon,
                         int max_combining)
{
    sh_uloose *t;
    size_t i, k;
    if (nelems > I_OFF_MASK + 1) return NULL;
    t = (sh_uloose *)calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->max_combining = max_combining;
    t->nccc = nccc;
    t->pool = (uint32_t *)dup_mem(elems, nelems * sizeof(uint32_t));
    t->ccc_cp = (uint32_t *)dup_mem(ccc_cp, nccc * sizeof(uint32_t));
    t->ccc_lead = (uint8_t *)dup_mem(ccc_lead, nccc);
    t->ccc_trail = (uint8_t *)dup_mem(ccc_trail, nccc);
    t->con = (uint32_t *)dup_mem(con, ncon * SH_ULOOSE_CON_COLS * sizeof(uint32_t));
    t->st_cp = (uint32_t *)malloc((ncon + 1) * sizeof(uint32_t));
    t->st_beg = (uint32_t *)malloc((ncon + 1) * sizeof(uint32_t));
    if (!t->pool || !t->ccc_cp || !t->ccc_lead || !t->ccc_trail || !t->con || !t->st_cp || !t->st_beg)
        goto fail;
    for (i = 1; i < nccc; i++)
        if (ccc_cp[i] <= ccc_cp[i - 1]) goto fail;
    for (i = 0; i < nexp; i++) {
        if (exp_cnt[i] > I_CNT_MASK || exp_cnt[i] == 0 || exp_off[i] + (size_t)exp_cnt[i] > nelems) goto fail;
        if (exp_cp[i] > 0x10FFFFu || (i && exp_cp[i] <= exp_cp[i - 1])) goto fail;
        if (exp_cnt[i] > t->max_elems) t->max_elems = exp_cnt[i];
    }
    for (i = 0; i < nideo; i++)
        if (ideo[2 * i] > ideo[2 * i + 1] || (i && ideo[2 * i] <= ideo[2 * i - 1])) goto fail;
    /* contractions: grouped by starter (ascending) */
    for (i = 0; i < ncon; i++) {
        const uint32_t *row = con + i * SH_ULOOSE_CON_COLS;
        size_t len = row[1], off = row[2 + SH_ULOOSE_MAX_SUFFIX], cnt = row[3 + SH_ULOOSE_MAX_SUFFIX];
        if (len == 0 || len > SH_ULOOSE_MAX_SUFFIX || cnt == 0 || off + cnt > nelems) goto fail;
        if (cnt > t->max_elems) t->max_elems = cnt;
        if (t->nst == 0 || t->st_cp[t->nst - 1] != row[0]) {
            if (t->nst && row[0] < t->st_cp[t->nst - 1]) goto fail;
            t->st_cp[t->nst] = row[0];
            t->st_beg[t->nst++] = (uint32_t)i;
        }
    }
    t->st_beg[t->nst] = (uint32_t)ncon;
    {
        /* the code points of every suffix, sorted */
        uint32_t *sfx = (uint32_t *)malloc((ncon * SH_ULOOSE_MAX_SUFFIX + 1) * sizeof(uint32_t));
        size_t nsfx = 0;
        int bad;
        if (sfx == NULL) goto fail;
        for (i = 0; i < ncon; i++)
            for (k = 0; k < con[i * SH_ULOOSE_CON_COLS + 1]; k++)
                sfx[nsfx++] = con[i * SH_ULOOSE_CON_COLS + 2 + k];
        qsort(sfx, nsfx, sizeof(uint32_t), cmp_u32);
        bad = build_blocks(t, exp_cp, exp_off, exp_cnt, nexp, ideo, nideo, sfx, nsfx);
        free(sfx);
        if (bad) goto fail;
    }
    /* Hangul: every jamo must have explicit elements */
    {
        size_t most = 0, part;
        uint32_t j;
        for (j = 0x1100u; j < 0x1113u; j++) {
            uint32_t v = info_of(t, j), vv;
            if ((v >> I_KIND_SHIFT & I_KIND_MASK) != K_EXPLICIT) goto fail;
            for (k = 0x1161u; k < 0x1176u; k++) {
                vv = info_of(t, (uint32_t)k);
                if ((vv >> I_KIND_SHIFT & I_KIND_MASK) != K_EXPLICIT) goto fail;
                part = (v >> I_CNT_SHIFT & I_CNT_MASK) + (vv >> I_CNT_SHIFT & I_CNT_MASK);
                if (part > most) most = part;
            }
        }
        part = 0;
        for (j = 0x11A8u; j < 0x11C3u; j++) {
            uint32_t v = info_of(t, j);
            if ((v >> I_KIND_SHIFT & I_KIND_MASK) != K_EXPLICIT) goto fail;
            if ((v >> I_CNT_SHIFT & I_CNT_MASK) > part) part = v >> I_CNT_SHIFT & I_CNT_MASK;
        }
        if (most + part > t->max_elems) t->max_elems = most + part;
    }
    /* ASCII text weighs character by character when no ASCII character has a
     * combining element or more than one element, and no ASCII starter
     * contracts with an ASCII character (the marks after a starter that
     * contractions skip are never ASCII) */
    t->ascii_fast = 1;
    for (i = 0; i < 128; i++) {
        uint32_t v = info_of(t, (uint32_t)i), e;
        if ((v >> I_KIND_SHIFT & I_KIND_MASK) != K_EXPLICIT || (v >> I_CNT_SHIFT & I_CNT_MASK) != 1) {
            t->ascii_fast = 0;
            break;
        }
        e = t->pool[v & I_OFF_MASK];
        if (e & 0xFFu) t->ascii_fast = 0;
        t->ascii_len[i] = (uint8_t)((e >> 8) ? put_weight(t->ascii_key[i], e >> 8) : 0);
        if (v & I_STARTER) {
            size_t r;
            k = find_u32(t->st_cp, t->nst, (uint32_t)i);
            for (r = t->st_beg[k]; r < t->st_beg[k + 1]; r++)
                if (t->con[r * SH_ULOOSE_CON_COLS + 2] < 0x80u) t->ascii_fast = 0;
        }
    }
    return t;
fail:
    sh_uloose_free(t);
    return NULL;
}

void sh_uloose_buf_free(sh_uloose_buf *b)
{
    free(b->cps);
    free(b->el);
    b->cps = b->el = NULL;
    b->cps_cap = b->el_cap = 0;
}

/* -- the collation element iterator ------------------------------------------ */

typedef struct {
    const sh_uloose *t;
    sh_uloose_buf *b;
    size_t m; /* elements so far */
    int err;  /* SH_ULOOSE_NOMEM or SH_ULOOSE_BAD_INPUT (too deep) */
} iter;

static int reserve(iter *it, size_t k)
{
    sh_uloose_buf *b = it->b;
    if (it->m + k > b->el_cap) {
        size_t cap = 2 * b->el_cap > it->m + k ? 2 * b->el_cap : it->m + k;
        uint32_t *p = (uint32_t *)realloc(b->el, cap * sizeof(uint32_t));
        if (p == NULL) {
            it->err = SH_ULOOSE_NOMEM;
            return -1;
        }
        b->el = p;
        b->el_cap = cap;
    }
    return 0;
}

static int push_pool(iter *it, uint32_t off, size_t cnt)
{
    uint32_t *d;
    const uint32_t *src = it->t->pool + off;
    if (reserve(it, cnt)) return -1;
    d = it->b->el + it->m;
    it->m += cnt;
    /* mostly 1 to 3 elements: copied one by one (a memcpy call costs more) */
    d[0] = src[0];
    if (cnt > 1) {
        size_t i;
        d[1] = src[1];
        for (i = 2; i < cnt; i++) d[i] = src[i];
    }
    return 0;
}

/* _single: the elements of one code point, contractions aside */
static int push_single(iter *it, uint32_t r, uint32_t info)
{
    uint32_t kind = info >> I_KIND_SHIFT & I_KIND_MASK;
    if (kind == K_EXPLICIT) return push_pool(it, info & I_OFF_MASK, info >> I_CNT_SHIFT & I_CNT_MASK);
    if (kind == K_HANGUL) {
        uint32_t s = r - 0xAC00u, jamo[3], v;
        size_t nj = 2, j;
        jamo[0] = 0x1100u + s / 588u;
        jamo[1] = 0x1161u + (s % 588u) / 28u;
        if (s % 28u) jamo[nj++] = 0x11A7u + s % 28u;
        for (j = 0; j < nj; j++) {
            v = info_of(it->t, jamo[j]);
            if (push_pool(it, v & I_OFF_MASK, v >> I_CNT_SHIFT & I_CNT_MASK)) return -1;
        }
        return 0;
    }
    if (reserve(it, 1)) return -1;
    if (kind == K_IDEO)
        it->b->el[it->m++] =
            (r + ((r >= 0x4E00u && r <= 0x9FFFu) || (r >= 0xF900u && r <= 0xFAFFu) ? 0x10000u : 0x20000u))
            << 8;
    else
        it->b->el[it->m++] = (r + 0x50000u) << 8;
    return 0;
}

/* the contraction matcher's state (_contraction's closure) */
typedef struct {
    const uint32_t *rows; /* the starter's rows */
    size_t nrows;
    uint32_t state[SH_ULOOSE_MAX_SUFFIX];
    size_t slen;
    ptrdiff_t result; /* the row of the longest full match, or -1 */
    size_t pindex;
    int done;
} matcher;

static size_t scan(matcher *mt, const uint32_t *s, size_t start, size_t p, size_t limit)
{
    while (p < limit) {
        size_t nl = mt->slen + 1, i;
        ptrdiff_t full = -1;
        int prefix = 0;
        if (nl > SH_ULOOSE_MAX_SUFFIX) break; /* no suffix is that long */
        for (i = 0; i < mt->nrows; i++) {
            const uint32_t *row = mt->rows + i * SH_ULOOSE_CON_COLS;
            size_t len = row[1], j;
            if (len < nl) continue;
            for (j = 0; j < mt->slen && row[2 + j] == mt->state[j]; j++) {
            }
            if (j < mt->slen || row[2 + mt->slen] != s[p]) continue;
            if (len == nl)
                full = (ptrdiff_t)i;
            else
                prefix = 1;
        }
        if (full >= 0) {
            mt->result = full;
            mt->pindex = p + 1 - start;
        }
        if (prefix) {
            mt->state[mt->slen++] = s[p];
            p++;
            continue;
        }
        if (full >= 0) {
            mt->done = 1;
            return p + 1;
        }
        break;
    }
    return p;
}

static ptrdiff_t append_next(iter *it, const uint32_t *s, size_t i, size_t n, int depth);

/* _append_next for a contraction starter (its _contraction inline) */
static ptrdiff_t append_contraction(iter *it, const uint32_t *s, size_t i, size_t n, uint32_t info, int depth)
{
    const sh_uloose *t = it->t;
    uint32_t r = s[i], skip_stack[SKIP_STACK], *buf = skip_stack;
    size_t start = i + 1, end = n, p, blen = 0, bufp = 0, k, j;
    matcher mt;
    ptrdiff_t res = -1, u;
    k = find_u32(t->st_cp, t->nst, r);
    mt.rows = t->con + (size_t)t->st_beg[k] * SH_ULOOSE_CON_COLS;
    mt.nrows = t->st_beg[k + 1] - t->st_beg[k];
    mt.slen = 0;
    mt.result = -1;
    mt.pindex = 0;
    mt.done = 0;
    p = scan(&mt, s, start, start, end);
    if (!mt.done && p < end && s[p] >= 0x80u) {
        size_t p0 = p, limit;
        uint8_t lead, trail, prev;
        cccs(t, s[p], &lead, &trail);
        p++;
        if (lead != 0) {
            prev = trail;
            limit = p;
            while (limit < end && lead_ccc(t, s[limit]) != 0) limit++;
            if (end - start > SKIP_STACK) {
                buf = (uint32_t *)malloc((end - start) * sizeof(uint32_t));
                if (buf == NULL) {
                    it->err = SH_ULOOSE_NOMEM;
                    return -1;
                }
            }
            while (p < end && !mt.done && s[p] >= 0x80u) {
                size_t pp;
                cccs(t, s[p], &lead, &trail);
                if (lead == 0 || prev >= lead) break;
                prev = trail;
                pp = scan(&mt, s, start, p, limit);
                if (pp != p) {
                    memcpy(buf + blen, s + p0, (p - p0) * sizeof(uint32_t));
                    blen += p - p0;
                    if (mt.pindex == pp - start) bufp = blen;
                    p = p0 = pp;
                } else {
                    p++;
                }
            }
        }
    }
    if (mt.result >= 0) {
        const uint32_t *row = mt.rows + (size_t)mt.result * SH_ULOOSE_CON_COLS;
        if (push_pool(it, row[2 + SH_ULOOSE_MAX_SUFFIX], row[3 + SH_ULOOSE_MAX_SUFFIX])) goto out;
    } else if (push_single(it, r, info)) {
        goto out;
    }
    /* the skipped marks, weighed after the contraction */
    for (j = 0; j < bufp; j += (size_t)u) {
        u = append_next(it, buf, j, bufp, depth + 1);
        if (u < 0) goto out;
    }
    res = 1 + (ptrdiff_t)mt.pindex;
out:
    if (buf != skip_stack) free(buf);
    return res;
}

/* _append_next: the elements of the code point or contraction at s[i]; the code points it took, or -1 */
static ptrdiff_t append_next(iter *it, const uint32_t *s, size_t i, size_t n, int depth)
{
    uint32_t info = info_of(it->t, s[i]);
    if (!(info & I_STARTER)) return push_single(it, s[i], info) ? -1 : 1;
    if (depth >= MAX_DEPTH) {
        it->err = SH_ULOOSE_BAD_INPUT;
        return -1;
    }
    return append_contraction(it, s, i, n, info, depth);
}

#define CCC(e) ((e) & 0xFFu)

/* reverse el[a, b) */
static void reverse_el(uint32_t *el, size_t a, size_t b)
{
    while (a + 1 < b) {
        uint32_t x = el[a];
        el[a++] = el[--b];
        el[b] = x;
    }
}

/* elements(): the collation elements of s[0, n) into it->b->el[0, it->m) */
static int elements(iter *it, const uint32_t *s, size_t n)
{
    size_t pos = 0, seg = 0; /* seg: colltab's Iter.N */
    ptrdiff_t u;
    for (;;) {
        /* next_segment */
        uint32_t prev, ccc;
        if (seg == it->m) {
            if (pos >= n) return 0;
            if ((u = append_next(it, s, pos, n, 0)) < 0) return -1;
            pos += (size_t)u;
        }
        prev = CCC(it->b->el[it->m - 1]);
        if (prev == 0) {
            seg = it->m;
            continue;
        }
        if (CCC(it->b->el[seg]) == 0) {
            seg++;
            while (seg < it->m && CCC(it->b->el[seg]) == 0) seg++;
            continue;
        }
        for (;;) {
            size_t p = it->m, k;
            if (pos >= n) break;
            if ((u = append_next(it, s, pos, n, 0)) < 0) return -1;
            pos += (size_t)u;
            ccc = CCC(it->b->el[p]);
            if (ccc == 0 || it->m - seg > (size_t)it->t->max_combining) {
                seg = p;
                goto next;
            }
            if (ccc < prev) {
                /* colltab's doNorm: the new elements move back past higher classes */
                k = p;
                p -= 1;
                while (p > seg && ccc < CCC(it->b->el[p - 1])) p--;
                /* el[p:k] + el[k:m] -> el[k:m] + el[p:k] */
                reverse_el(it->b->el, p, k);
                reverse_el(it->b->el, k, it->m);
                reverse_el(it->b->el, p, it->m);
            } else {
                prev = ccc;
            }
        }
        if (it->m == seg) return 0; /* done = len(el) != n: False ends the walk */
        seg = it->m;
    next:;
    }
}

/* -- input -------------------------------------------------------------------- */

static int reserve_cps(sh_uloose_buf *b, size_t n)
{
    if (n > b->cps_cap) {
        size_t cap = 2 * b->cps_cap > n ? 2 * b->cps_cap : n + 16;
        uint32_t *p = (uint32_t *)realloc(b->cps, cap * sizeof(uint32_t));
        if (p == NULL) return -1;
        b->cps = p;
        b->cps_cap = cap;
    }
    return 0;
}

/* strict UTF-8 into cps; the number of code points, or -1 */
static ptrdiff_t decode_utf8(const uint8_t *s, size_t n, uint32_t *cps)
{
    size_t i = 0, k = 0;
    while (i < n) {
        uint32_t c = s[i];
        if (c < 0x80u) {
            cps[k++] = c;
            i++;
        } else if (c < 0xC2u) {
            return -1;
        } else if (c < 0xE0u) {
            if (i + 1 >= n || (s[i + 1] & 0xC0u) != 0x80u) return -1;
            cps[k++] = (c & 0x1Fu) << 6 | (s[i + 1] & 0x3Fu);
            i += 2;
        } else if (c < 0xF0u) {
            uint32_t lo = c == 0xE0u ? 0xA0u : 0x80u, hi = c == 0xEDu ? 0x9Fu : 0xBFu;
            if (i + 2 >= n || s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0u) != 0x80u) return -1;
            cps[k++] = (c & 0x0Fu) << 12 | (uint32_t)(s[i + 1] & 0x3Fu) << 6 | (s[i + 2] & 0x3Fu);
            i += 3;
        } else if (c < 0xF5u) {
            uint32_t lo = c == 0xF0u ? 0x90u : 0x80u, hi = c == 0xF4u ? 0x8Fu : 0xBFu;
            if (i + 3 >= n || s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0u) != 0x80u ||
                (s[i + 3] & 0xC0u) != 0x80u)
                return -1;
            cps[k++] = (c & 0x07u) << 18 | (uint32_t)(s[i + 1] & 0x3Fu) << 12 |
                       (uint32_t)(s[i + 2] & 0x3Fu) << 6 | (s[i + 3] & 0x3Fu);
            i += 4;
        } else {
            return -1;
        }
    }
    return (ptrdiff_t)k;
}

/* the key of simple characters, weighed one by one (the weights straight from the tables) */
static ptrdiff_t fold_simple(const sh_uloose *t, const uint32_t *cps, size_t n, sh_uloose_buf *b,
                             const uint8_t **key)
{
    size_t i, w = 0, cap = 4 * b->el_cap;
    uint8_t *o = (uint8_t *)b->el;
    for (i = 0; i < n; i++) {
        uint32_t r = cps[i], info = info_of(t, r), kind = info >> I_KIND_SHIFT & I_KIND_MASK;
        /* at most 3 jamo of I_CNT_MASK elements each, 3 bytes per element */
        if (w + 9 * I_CNT_MASK > cap) {
            size_t ncap = 2 * b->el_cap + 9 * I_CNT_MASK;
            uint32_t *p = (uint32_t *)realloc(b->el, ncap * sizeof(uint32_t));
            if (p == NULL) return SH_ULOOSE_NOMEM;
            b->el = p;
            b->el_cap = ncap;
            cap = 4 * ncap;
            o = (uint8_t *)p;
        }
        if (kind == K_EXPLICIT) {
            const uint32_t *e = t->pool + (info & I_OFF_MASK);
            size_t c = info >> I_CNT_SHIFT & I_CNT_MASK, j;
            for (j = 0; j < c; j++)
                if (e[j] >> 8) w += put_weight(o + w, e[j] >> 8);
        } else if (kind == K_HANGUL) {
            uint32_t s = r - 0xAC00u, jamo[3], v;
            size_t nj = 2, j, q;
            jamo[0] = 0x1100u + s / 588u;
            jamo[1] = 0x1161u + (s % 588u) / 28u;
            if (s % 28u) jamo[nj++] = 0x11A7u + s % 28u;
            for (j = 0; j < nj; j++) {
                const uint32_t *e;
                v = info_of(t, jamo[j]);
                e = t->pool + (v & I_OFF_MASK);
                for (q = 0; q < (v >> I_CNT_SHIFT & I_CNT_MASK); q++)
                    if (e[q] >> 8) w += put_weight(o + w, e[q] >> 8);
            }
        } else if (kind == K_IDEO) {
            w += put_weight(
                o + w,
                r + ((r >= 0x4E00u && r <= 0x9FFFu) || (r >= 0xF900u && r <= 0xFAFFu) ? 0x10000u : 0x20000u));
        } else {
            w += put_weight(o + w, r + 0x50000u);
        }
    }
    *key = o;
    return (ptrdiff_t)w;
}

ptrdiff_t sh_uloose_fold(const sh_uloose *t, const void *data, size_t len, int kind, sh_uloose_buf *b,
                         const uint8_t **key)
{
    size_t n, i, w;
    uint32_t *cps;
    iter it;
    if (kind == 0 || kind == 1) {
        const uint8_t *s = (const uint8_t *)data;
        uint8_t any = 0;
        for (i = 0; i < len; i++) any |= s[i];
        if (any < 0x80u && t->ascii_fast) {
            uint8_t *o;
            while (len && s[len - 1] == ' ') len--;
            if (b->el == NULL || 3 * len > 4 * b->el_cap) {
                uint32_t *p = (uint32_t *)realloc(b->el, (len + 16) * sizeof(uint32_t));
                if (p == NULL) return SH_ULOOSE_NOMEM;
                b->el = p;
                b->el_cap = len + 16;
            }
            o = (uint8_t *)b->el;
            for (i = w = 0; i < len; i++) {
                uint8_t c = s[i];
                memcpy(o + w, t->ascii_key[c], 3); /* el holds 4 bytes per character */
                w += t->ascii_len[c];
            }
            *key = o;
            return (ptrdiff_t)w;
        }
    }
    if (reserve_cps(b, len)) return SH_ULOOSE_NOMEM;
    cps = b->cps;
    if (kind == 0) {
        ptrdiff_t k = decode_utf8((const uint8_t *)data, len, cps);
        if (k < 0) return SH_ULOOSE_BAD_INPUT;
        n = (size_t)k;
    } else if (kind == 1) {
        const uint8_t *s = (const uint8_t *)data;
        for (i = 0; i < len; i++) cps[i] = s[i];
        n = len;
    } else if (kind == 2) {
        const uint16_t *s = (const uint16_t *)data;
        for (i = 0; i < len; i++) {
            if ((s[i] & 0xF800u) == 0xD800u) return SH_ULOOSE_BAD_INPUT;
            cps[i] = s[i];
        }
        n = len;
    } else if (kind == 4) {
        const uint32_t *s = (const uint32_t *)data;
        for (i = 0; i < len; i++) {
            if ((s[i] & 0xFFFFF800u) == 0xD800u || s[i] > 0x10FFFFu) return SH_ULOOSE_BAD_INPUT;
            cps[i] = s[i];
        }
        n = len;
    } else {
        return SH_ULOOSE_BAD_INPUT;
    }
    while (n && cps[n - 1] == 0x20u) n--;
    {
        uint32_t all = I_SIMPLE;
        for (i = 0; i < n; i++) all &= info_of(t, cps[i]);
        if (all) return fold_simple(t, cps, n, b, key);
    }
    it.t = t;
    it.b = b;
    it.m = 0;
    it.err = 0;
    if (b->el_cap < 2 * n + 16) {
        uint32_t *p = (uint32_t *)realloc(b->el, (2 * n + 16) * sizeof(uint32_t));
        if (p == NULL) return SH_ULOOSE_NOMEM;
        b->el = p;
        b->el_cap = 2 * n + 16;
    }
    if (elements(&it, cps, n) != 0) return it.err ? it.err : SH_ULOOSE_NOMEM;
    /* the non-zero primaries, encoded over the elements (3 bytes at most per 4) */
    {
        uint8_t *o = (uint8_t *)b->el;
        for (i = w = 0; i < it.m; i++) {
            uint32_t p = b->el[i] >> 8;
            if (p) w += put_weight(o + w, p);
        }
        *key = o;
    }
    return (ptrdiff_t)w;
}

ptrdiff_t sh_uloose_ksids(const sh_uloose *t, const void *const *ptrs, const int64_t *lens,
                          const uint8_t *kinds, size_t n, int md5, uint64_t *out)
{
    sh_uloose_buf b = {NULL, 0, NULL, 0};
    ptrdiff_t res = -1;
    size_t i;
    uint8_t dig[16];
    for (i = 0; i < n; i++) {
        const uint8_t *key;
        ptrdiff_t k = sh_uloose_fold(t, ptrs[i], (size_t)lens[i], kinds[i], &b, &key);
        if (k < 0) {
            res = k == SH_ULOOSE_NOMEM ? -2 : (ptrdiff_t)i;
            break;
        }
        if (md5) {
            sh_md5(key, (size_t)k, dig);
            out[i] = sh_read64be(dig);
        } else {
            out[i] = sh_swap64(sh_xxh64(key, (size_t)k, 0));
        }
    }
    sh_uloose_buf_free(&b);
    return res;
}
