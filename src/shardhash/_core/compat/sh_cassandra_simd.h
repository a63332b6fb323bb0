/*
 * shardhash core: the body of Cassandra's vector kernels, written once for
 * any vector width.  Included only by sh_cassandra_avx512.c (eight 64-bit
 * lanes) and sh_cassandra_avx2.c (four), each of which first defines the
 * vector operations below for its instruction set; bit-exact with
 * sh_cassandra_token.
 *
 * MurmurHash3_x64_128 is 64-bit multiplies, rotations, additions and xors,
 * so SH_CV_LANES keys run side by side, each lane doing exactly the scalar
 * operations (sh_cassandra.c):
 *
 *  - the 16-byte blocks: the group runs as many block rounds as its longest
 *    key has blocks, and a lane whose key has fewer keeps its state (a
 *    select), so keys of different lengths share a vector without a branch
 *    on any key's length;
 *  - the tail: cut out of the 16 bytes that end where the key ends ("the
 *    window") with variable shifts (a shift by 64 or more gives 0 in
 *    vpsrlvq/vpsllvq, which is exactly the cut), then Cassandra's sign
 *    extension of the tail bytes as a prefix parity of their sign bits
 *    (three shift-and-xor steps);
 *  - the finalisation, and the token rules (INT64_MIN -> INT64_MAX, the
 *    empty key -> INT64_MIN) as selects.
 *
 * Loads.  Each key's window and blocks are 16-byte loads, transposed into
 * words by SH_CV_LOAD16 (the hardware gathers were three times slower on
 * AMD Zen 4).  Every load ends inside the key or at its end, and starts at
 * most 16 bytes before its end: a lane past its last block loads its window
 * again (and ignores it).  The caller vouches that the 16 bytes before each
 * key's end are readable: in Arrow data the keys that end less than 16
 * bytes into the buffer (only the first few) take the scalar path; a Python
 * bytes object's header precedes its data.
 *
 * A group whose keys' block counts differ a lot (one long key among short
 * ones) would run the long key's rounds in every lane for one; such a group
 * takes the scalar path instead (sh_cassandra_lanes_worth).
 *
 * The including file first includes the vector operations of its
 * instruction set (sh_cv_avx512.h or sh_cv_avx2.h, which list them).
 */
#ifndef SH_CV_LANES
#  error "sh_cassandra_simd.h is included by the kernels that define its vector operations"
#endif

/* MurmurHash3_x64_128's multipliers, as (high, low) 32-bit halves. */
#ifndef SH_CASS_C1_HI
#  define SH_CASS_C1_HI    0x87c37b91u
#  define SH_CASS_C1_LO    0x114253d5u
#  define SH_CASS_C2_HI    0x4cf5ad43u
#  define SH_CASS_C2_LO    0x2745937fu
#  define SH_CASS_FMIX1_HI 0xff51afd7u
#  define SH_CASS_FMIX1_LO 0xed558ccdu
#  define SH_CASS_FMIX2_HI 0xc4ceb9feu
#  define SH_CASS_FMIX2_LO 0x1a85ec53u
#endif

SH_CV_INLINE SH_CV SH_CV_NAME(sh_cass_v_scramble_k1)(SH_CV k)
{
    k = SH_CV_MULC(k, SH_CASS_C1_HI, SH_CASS_C1_LO);
    k = SH_CV_ROTL(k, 31);
    return SH_CV_MULC(k, SH_CASS_C2_HI, SH_CASS_C2_LO);
}

SH_CV_INLINE SH_CV SH_CV_NAME(sh_cass_v_scramble_k2)(SH_CV k)
{
    k = SH_CV_MULC(k, SH_CASS_C2_HI, SH_CASS_C2_LO);
    k = SH_CV_ROTL(k, 33);
    return SH_CV_MULC(k, SH_CASS_C1_HI, SH_CASS_C1_LO);
}

SH_CV_INLINE SH_CV SH_CV_NAME(sh_cass_v_fmix64)(SH_CV k)
{
    k = SH_CV_XOR(k, SH_CV_SRLI(k, 33));
    k = SH_CV_MULC(k, SH_CASS_FMIX1_HI, SH_CASS_FMIX1_LO);
    k = SH_CV_XOR(k, SH_CV_SRLI(k, 33));
    k = SH_CV_MULC(k, SH_CASS_FMIX2_HI, SH_CASS_FMIX2_LO);
    return SH_CV_XOR(k, SH_CV_SRLI(k, 33));
}

/* x * 5 + c */
SH_CV_INLINE SH_CV SH_CV_NAME(sh_cass_v_mul5_add)(SH_CV x, SH_CV c)
{
    return SH_CV_ADD(SH_CV_ADD(x, SH_CV_SLLI(x, 2)), c);
}

/* The xor of the word's bytes sign-extended to 64 bits and shifted to their
 * places: byte j of the correction is 0xff when an odd number of bytes below
 * j are negative (p: the prefix xor of the sign bits, moved up one byte). */
SH_CV_INLINE SH_CV SH_CV_NAME(sh_cass_v_sext_bytes)(SH_CV w)
{
    SH_CV p = SH_CV_SLLI(SH_CV_AND(SH_CV_SRLI(w, 7), SH_CV_SET1(INT64_C(0x0101010101010101))), 8);
    p = SH_CV_XOR(p, SH_CV_SLLI(p, 8));
    p = SH_CV_XOR(p, SH_CV_SLLI(p, 16));
    p = SH_CV_XOR(p, SH_CV_SLLI(p, 32));
    return SH_CV_XOR(w, SH_CV_SUB(SH_CV_SLLI(p, 8), p)); /* p * 0xff */
}

/* Tokens of the SH_CV_LANES keys p[l][0 .. len[l]), len[l] >= 0, whose 16
 * bytes before p[l] + len[l] are readable, to out[0 .. SH_CV_LANES). */
SH_CV_INLINE void SH_CV_NAME(sh_cass_v_lanes)(const uint8_t *const *p, const int64_t *len, int64_t *out)
{
    const uint8_t *q[SH_CV_LANES];
    const SH_CV vlen = SH_CV_LOADU(len);
    const SH_CV nb = SH_CV_SRLI(vlen, 4);
    const SH_CV c1 = SH_CV_SET1(0x52dce729), c2 = SH_CV_SET1(0x38495ab5);
    SH_CV h1 = SH_CV_ZERO(), h2 = SH_CV_ZERO();
    SH_CV lo, hi, s, w0, w1;
    int64_t maxnb = 0, j;
    int l;

    for (l = 0; l < SH_CV_LANES; l++)
        if (len[l] / 16 > maxnb) maxnb = len[l] / 16;

    /* the blocks: round j mixes block j of the keys that have one */
    for (j = 0; j < maxnb; j++) {
        SH_CV_MASK m = SH_CV_GT(nb, SH_CV_SET1(j));
        SH_CV k1, k2, x1, x2;
        for (l = 0; l < SH_CV_LANES; l++) q[l] = 16 * (j + 1) <= len[l] ? p[l] + 16 * j : p[l] + len[l] - 16;
        SH_CV_LOAD16(q, &k1, &k2);
        x1 = SH_CV_XOR(h1, SH_CV_NAME(sh_cass_v_scramble_k1)(k1));
        x1 = SH_CV_ROTL(x1, 27);
        x1 = SH_CV_NAME(sh_cass_v_mul5_add)(SH_CV_ADD(x1, h2), c1);
        x2 = SH_CV_XOR(h2, SH_CV_NAME(sh_cass_v_scramble_k2)(k2));
        x2 = SH_CV_ROTL(x2, 31);
        x2 = SH_CV_NAME(sh_cass_v_mul5_add)(SH_CV_ADD(x2, x1), c2);
        h1 = SH_CV_SELECT(m, h1, x1);
        h2 = SH_CV_SELECT(m, h2, x2);
    }

    /* the tail: the last t = len % 16 bytes of the window, after its first
     * s = 8 * (16 - t) bits (8..128): w1 = hi >> s and
     * w0 = lo >> s | hi << (64 - s) | hi >> (s - 64), where every shift count
     * outside 0..63 (as an unsigned 64-bit count) gives 0 */
    for (l = 0; l < SH_CV_LANES; l++) q[l] = p[l] + len[l] - 16;
    SH_CV_LOAD16(q, &lo, &hi);
    s = SH_CV_SLLI(SH_CV_SUB(SH_CV_SET1(16), SH_CV_AND(vlen, SH_CV_SET1(15))), 3);
    w1 = SH_CV_SRLV(hi, s);
    w0 = SH_CV_OR(SH_CV_SRLV(lo, s), SH_CV_OR(SH_CV_SLLV(hi, SH_CV_SUB(SH_CV_SET1(64), s)),
                                              SH_CV_SRLV(hi, SH_CV_SUB(s, SH_CV_SET1(64)))));
    h2 = SH_CV_XOR(h2, SH_CV_NAME(sh_cass_v_scramble_k2)(SH_CV_NAME(sh_cass_v_sext_bytes)(w1)));
    h1 = SH_CV_XOR(h1, SH_CV_NAME(sh_cass_v_scramble_k1)(SH_CV_NAME(sh_cass_v_sext_bytes)(w0)));

    /* the finalisation and the token rules */
    h1 = SH_CV_XOR(h1, vlen);
    h2 = SH_CV_XOR(h2, vlen);
    h1 = SH_CV_ADD(h1, h2);
    h2 = SH_CV_ADD(h2, h1);
    h1 = SH_CV_NAME(sh_cass_v_fmix64)(h1);
    h2 = SH_CV_NAME(sh_cass_v_fmix64)(h2);
    h1 = SH_CV_ADD(h1, h2);
    h1 = SH_CV_SELECT(SH_CV_EQ(h1, SH_CV_SET1(INT64_MIN)), h1, SH_CV_SET1(INT64_MAX));
    h1 = SH_CV_SELECT(SH_CV_EQ(vlen, SH_CV_ZERO()), h1, SH_CV_SET1(INT64_MIN));
    SH_CV_STOREU(out, h1);
}

SH_CV_FN void SH_CV_NAME(sh_cassandra_token_offsets)(const uint8_t *data, const int64_t *offsets, size_t n,
                                                     int64_t *out)
{
    const uint8_t *p[SH_CV_LANES];
    int64_t len[SH_CV_LANES];
    size_t i = 0, head;
    int l;
    /* the keys that end less than 16 bytes into the buffer */
    while (i < n && offsets[i + 1] < 16) i++;
    head = i;
    if (head) sh_cassandra_token_offsets_scalar(data, offsets, head, out);
    for (; i + SH_CV_LANES <= n; i += SH_CV_LANES) {
        for (l = 0; l < SH_CV_LANES; l++) {
            p[l] = data + offsets[i + (size_t)l];
            len[l] = offsets[i + (size_t)l + 1] - offsets[i + (size_t)l];
        }
        if (sh_cassandra_lanes_worth(len, SH_CV_LANES))
            SH_CV_NAME(sh_cass_v_lanes)(p, len, out + i);
        else
            sh_cassandra_token_offsets_scalar(data, offsets + i, SH_CV_LANES, out + i);
    }
    if (i < n) sh_cassandra_token_offsets_scalar(data, offsets + i, n - i, out + i);
}

SH_CV_FN void SH_CV_NAME(sh_cassandra_token_ptrs16)(const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                                                    int64_t *out)
{
    size_t i = 0;
    for (; i + SH_CV_LANES <= n; i += SH_CV_LANES) {
        if (sh_cassandra_lanes_worth(lens + i, SH_CV_LANES))
            SH_CV_NAME(sh_cass_v_lanes)(ptrs + i, lens + i, out + i);
        else
            sh_cassandra_token_ptrs16_scalar(ptrs + i, lens + i, SH_CV_LANES, out + i);
    }
    if (i < n) sh_cassandra_token_ptrs16_scalar(ptrs + i, lens + i, n - i, out + i);
}
