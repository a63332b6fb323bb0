/*
 * DES written from FIPS 46-3 ("Data Encryption Standard"), appendix tables.
 *
 * Bit numbering follows the standard: bit 1 is the most significant bit of
 * the block.  The tables below are the standard's P, PC-1, PC-2, the
 * key-schedule shifts and S1..S8.  At key set-up the S-boxes are fused with
 * P (sp tables).  The block permutations IP and IP^-1 are bit networks: a
 * product of five "swap the bits under a mask between the two 32-bit
 * halves" steps, so they need no memory (byte-indexed tables of them, 32 KiB,
 * missed the cache when one key is routed at a time from Python).  The
 * networks were checked against the standard's IP and IP^-1 tables on the 64
 * single-bit blocks, which decide, both being linear over xor; the Vitess
 * vectors check the whole cipher.  The expansion E is not tabled: its k-th
 * 6-bit group is bits 4k .. 4k+5 of R (circularly), i.e. rotl(R, 4k+5) & 63.
 */
#include "sh_des.h"

/* clang-format off */
static const uint8_t sh_des_P[32] = {
    16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10,
    2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25,
};
/* clang-format on */

/* clang-format off */
static const uint8_t sh_des_PC1[56] = {
    57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18,
    10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36,
    63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22,
    14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4,
};
/* clang-format on */

/* clang-format off */
static const uint8_t sh_des_PC2[48] = {
    14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10,
    23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2,
    41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48,
    44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32,
};
/* clang-format on */

static const uint8_t sh_des_shifts[16] = {1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1};

/* S[box][row][column]. */
/* clang-format off */
static const uint8_t sh_des_S[8][4][16] = {
    {{14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7},
     {0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8},
     {4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0},
     {15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13}},
    {{15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10},
     {3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5},
     {0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15},
     {13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9}},
    {{10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8},
     {13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1},
     {13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7},
     {1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12}},
    {{7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15},
     {13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9},
     {10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4},
     {3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14}},
    {{2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9},
     {14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6},
     {4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14},
     {11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3}},
    {{12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11},
     {10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8},
     {9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6},
     {4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13}},
    {{4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1},
     {13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6},
     {1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2},
     {6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12}},
    {{13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7},
     {1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2},
     {7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8},
     {2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11}},
};
/* clang-format on */

/* Generic permutation: output bit j (1 = MSB of an n-bit result) is input
 * bit tab[j-1] (1 = MSB of an in_bits-wide input). */
static uint64_t sh_des_permute(uint64_t in, int in_bits, const uint8_t *tab, int n)
{
    uint64_t out = 0;
    int j;
    for (j = 0; j < n; j++) out = (out << 1) | ((in >> (in_bits - tab[j])) & 1u);
    return out;
}

/* Rotate a 28-bit half left by r. */
static uint32_t sh_des_rot28(uint32_t x, int r)
{
    return ((x << r) | (x >> (28 - r))) & 0x0fffffffu;
}

void sh_des_setkey(sh_des_ctx *ctx, const uint8_t key[8])
{
    uint64_t k = 0, cd;
    uint32_t c, d;
    int i, b, v;

    for (i = 0; i < 8; i++) k = (k << 8) | key[i];
    cd = sh_des_permute(k, 64, sh_des_PC1, 56);
    c = (uint32_t)(cd >> 28) & 0x0fffffffu;
    d = (uint32_t)cd & 0x0fffffffu;
    for (i = 0; i < 16; i++) {
        c = sh_des_rot28(c, sh_des_shifts[i]);
        d = sh_des_rot28(d, sh_des_shifts[i]);
        ctx->subkey[i] = sh_des_permute(((uint64_t)c << 28) | d, 56, sh_des_PC2, 48);
    }

    /* S-box b's 4-bit output occupies bits 4b+1 .. 4b+4 before P. */
    for (b = 0; b < 8; b++) {
        for (v = 0; v < 64; v++) {
            int row = ((v >> 4) & 2) | (v & 1);
            int col = (v >> 1) & 15;
            uint64_t s = (uint64_t)sh_des_S[b][row][col] << (28 - 4 * b);
            ctx->sp[b][v] = (uint32_t)sh_des_permute(s, 32, sh_des_P, 32);
        }
    }
}

/* Exchange the bits of b under mask m with the bits of a n places higher. */
#define SH_DES_SWAP(a, b, n, m)                   \
    do {                                          \
        uint32_t t_ = (((a) >> (n)) ^ (b)) & (m); \
        (b) ^= t_;                                \
        (a) ^= t_ << (n);                         \
    } while (0)

/* IP of the block (hi, lo) = bits 1..32, 33..64: *l = L0, *r = R0. */
SH_FORCE_INLINE void sh_des_ip(uint64_t block, uint32_t *l, uint32_t *r)
{
    uint32_t x = (uint32_t)(block >> 32), y = (uint32_t)block, t;
    SH_DES_SWAP(x, y, 4, 0x0f0f0f0fu);
    SH_DES_SWAP(x, y, 16, 0x0000ffffu);
    SH_DES_SWAP(y, x, 2, 0x33333333u);
    SH_DES_SWAP(y, x, 8, 0x00ff00ffu);
    y = sh_rotl32(y, 1);
    t = (x ^ y) & 0xaaaaaaaau;
    x ^= t;
    y ^= t;
    /* x is L0, y is R0 rotated left by one */
    *l = x;
    *r = sh_rotl32(y, 31);
}

/* IP^-1 of the pre-output block R16 L16 (the steps of sh_des_ip reversed). */
SH_FORCE_INLINE uint64_t sh_des_fp(uint32_t r, uint32_t l)
{
    uint32_t x = r, y = sh_rotl32(l, 1), t;
    t = (x ^ y) & 0xaaaaaaaau;
    x ^= t;
    y ^= t;
    y = sh_rotl32(y, 31);
    SH_DES_SWAP(y, x, 8, 0x00ff00ffu);
    SH_DES_SWAP(y, x, 2, 0x33333333u);
    SH_DES_SWAP(x, y, 16, 0x0000ffffu);
    SH_DES_SWAP(x, y, 4, 0x0f0f0f0fu);
    return ((uint64_t)x << 32) | y;
}

SH_FORCE_INLINE uint32_t sh_des_f(const sh_des_ctx *ctx, uint32_t r, uint64_t k)
{
    uint32_t out = 0;
    int b;
    for (b = 0; b < 8; b++) {
        uint32_t e = sh_rotl32(r, (unsigned)(4 * b + 5)) & 63u;
        uint32_t kb = (uint32_t)(k >> (42 - 6 * b)) & 63u;
        out |= ctx->sp[b][e ^ kb];
    }
    return out;
}

/* One Feistel round with subkey k: (L, R) becomes (R, L ^ f(R, k)). */
#define SH_DES_ROUND(l, r, k)                \
    do {                                     \
        uint32_t t_ = (r);                   \
        (r) = (l) ^ sh_des_f(ctx, (r), (k)); \
        (l) = t_;                            \
    } while (0)

SH_FORCE_INLINE uint64_t sh_des_crypt(const sh_des_ctx *ctx, uint64_t block, int decrypt)
{
    uint32_t l, r;
    int i;
    sh_des_ip(block, &l, &r);
    for (i = 0; i < 16; i++) SH_DES_ROUND(l, r, ctx->subkey[decrypt ? 15 - i : i]);
    /* The pre-output block is R16 L16. */
    return sh_des_fp(r, l);
}

uint64_t sh_des_encrypt(const sh_des_ctx *ctx, uint64_t block)
{
    return sh_des_crypt(ctx, block, 0);
}
uint64_t sh_des_decrypt(const sh_des_ctx *ctx, uint64_t block)
{
    return sh_des_crypt(ctx, block, 1);
}

/* Two blocks in one pass: their rounds are independent chains, so the CPU
 * overlaps them (one block alone waits on each round's table lookups). */
SH_FORCE_INLINE void sh_des_crypt2(const sh_des_ctx *ctx, const uint64_t *in, uint64_t *out, int decrypt)
{
    uint32_t l0, r0, l1, r1;
    int i;
    sh_des_ip(in[0], &l0, &r0);
    sh_des_ip(in[1], &l1, &r1);
    for (i = 0; i < 16; i++) {
        uint64_t k = ctx->subkey[decrypt ? 15 - i : i];
        SH_DES_ROUND(l0, r0, k);
        SH_DES_ROUND(l1, r1, k);
    }
    out[0] = sh_des_fp(r0, l0);
    out[1] = sh_des_fp(r1, l1);
}

void sh_des_encrypt_batch(const sh_des_ctx *ctx, const uint64_t *in, size_t n, uint64_t *out)
{
    size_t i;
    for (i = 0; i + 2 <= n; i += 2) sh_des_crypt2(ctx, in + i, out + i, 0);
    if (i < n) out[i] = sh_des_crypt(ctx, in[i], 0);
}
