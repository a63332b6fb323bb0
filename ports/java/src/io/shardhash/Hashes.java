package io.shardhash;

/** The protocol's hash functions (docs/protocol.md section 1); 64-bit values are unsigned in a long. */
public final class Hashes {
    private Hashes() {}

    private static final int P32_1 = 0x9E3779B1, P32_2 = 0x85EBCA77, P32_3 = 0xC2B2AE3D, P32_4 = 0x27D4EB2F,
            P32_5 = 0x165667B1;
    private static final long P64_1 = 0x9E3779B185EBCA87L, P64_2 = 0xC2B2AE3D27D4EB4FL,
            P64_3 = 0x165667B19E3779F9L, P64_4 = 0x85EBCA77C2B2AE63L, P64_5 = 0x27D4EB2F165667C5L;
    private static final long MX1 = 0x165667919E3779F9L, MX2 = 0x9FB21C651E98DF25L;
    private static final byte[] SECRET = hex(
            "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671fcb79e64eccc0e578825ad07dccff7221b808"
            + "4674f743248ee03590e6813a264c3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8a8fa763fe3"
            + "9c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49"
            + "d316552629d4689e2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e");

    static byte[] hex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    static int r32(byte[] p, int i) {
        return (p[i] & 0xff) | (p[i + 1] & 0xff) << 8 | (p[i + 2] & 0xff) << 16 | (p[i + 3] & 0xff) << 24;
    }

    static long r64(byte[] p, int i) {
        return (r32(p, i) & 0xffffffffL) | ((long) r32(p, i + 4)) << 32;
    }

    /** The high 64 bits of the unsigned 128-bit product. */
    static long mulHigh(long a, long b) {
        return Math.multiplyHigh(a, b) + ((a >> 63) & b) + ((b >> 63) & a);
    }

    public static int xxh32(byte[] p, int seed) {
        int n = p.length;
        int i = 0;
        int acc;
        if (n >= 16) {
            int a1 = seed + P32_1 + P32_2, a2 = seed + P32_2, a3 = seed, a4 = seed - P32_1;
            for (; n - i >= 16; i += 16) {
                a1 = Integer.rotateLeft(a1 + r32(p, i) * P32_2, 13) * P32_1;
                a2 = Integer.rotateLeft(a2 + r32(p, i + 4) * P32_2, 13) * P32_1;
                a3 = Integer.rotateLeft(a3 + r32(p, i + 8) * P32_2, 13) * P32_1;
                a4 = Integer.rotateLeft(a4 + r32(p, i + 12) * P32_2, 13) * P32_1;
            }
            acc = Integer.rotateLeft(a1, 1) + Integer.rotateLeft(a2, 7) + Integer.rotateLeft(a3, 12)
                    + Integer.rotateLeft(a4, 18);
        } else {
            acc = seed + P32_5;
        }
        acc += n;
        for (; n - i >= 4; i += 4) acc = Integer.rotateLeft(acc + r32(p, i) * P32_3, 17) * P32_4;
        for (; i < n; i++) acc = Integer.rotateLeft(acc + (p[i] & 0xff) * P32_5, 11) * P32_1;
        acc ^= acc >>> 15;
        acc *= P32_2;
        acc ^= acc >>> 13;
        acc *= P32_3;
        acc ^= acc >>> 16;
        return acc;
    }

    private static long round64(long acc, long lane) {
        return Long.rotateLeft(acc + lane * P64_2, 31) * P64_1;
    }

    private static long merge64(long acc, long a) {
        return (acc ^ round64(0, a)) * P64_1 + P64_4;
    }

    private static long avalanche64(long h) {
        h ^= h >>> 33;
        h *= P64_2;
        h ^= h >>> 29;
        h *= P64_3;
        return h ^ (h >>> 32);
    }

    public static long xxh64(byte[] p, long seed) {
        int n = p.length;
        int i = 0;
        long acc;
        if (n >= 32) {
            long a1 = seed + P64_1 + P64_2, a2 = seed + P64_2, a3 = seed, a4 = seed - P64_1;
            for (; n - i >= 32; i += 32) {
                a1 = round64(a1, r64(p, i));
                a2 = round64(a2, r64(p, i + 8));
                a3 = round64(a3, r64(p, i + 16));
                a4 = round64(a4, r64(p, i + 24));
            }
            acc = Long.rotateLeft(a1, 1) + Long.rotateLeft(a2, 7) + Long.rotateLeft(a3, 12) + Long.rotateLeft(a4, 18);
            acc = merge64(merge64(merge64(merge64(acc, a1), a2), a3), a4);
        } else {
            acc = seed + P64_5;
        }
        acc += n;
        for (; n - i >= 8; i += 8) acc = Long.rotateLeft(acc ^ round64(0, r64(p, i)), 27) * P64_1 + P64_4;
        if (n - i >= 4) {
            acc = Long.rotateLeft(acc ^ (r32(p, i) & 0xffffffffL) * P64_1, 23) * P64_2 + P64_3;
            i += 4;
        }
        for (; i < n; i++) acc = Long.rotateLeft(acc ^ (p[i] & 0xff) * P64_5, 11) * P64_1;
        return avalanche64(acc);
    }

    private static long avalanche3(long x) {
        x ^= x >>> 37;
        x *= MX1;
        return x ^ (x >>> 32);
    }

    private static long fold64(long a, long b) {
        return (a * b) ^ mulHigh(a, b);
    }

    private static long mix16(byte[] p, int i, byte[] s, int j, long seed) {
        return fold64(r64(p, i) ^ (r64(s, j) + seed), r64(p, i + 8) ^ (r64(s, j + 8) - seed));
    }

    public static long xxh3(byte[] p, long seed) {
        int n = p.length;
        byte[] s = SECRET;
        if (n > 240) return xxh3Long(p, seed);
        if (n > 128) {
            long acc = n * P64_1;
            for (int k = 0; k < 8; k++) acc += mix16(p, 16 * k, s, 16 * k, seed);
            acc = avalanche3(acc);
            for (int k = 8; k < n >> 4; k++) acc += mix16(p, 16 * k, s, 16 * (k - 8) + 3, seed);
            acc += mix16(p, n - 16, s, 119, seed);
            return avalanche3(acc);
        }
        if (n > 16) {
            long acc = n * P64_1;
            for (int r = (n - 1) >> 5; r >= 0; r--) {
                acc += mix16(p, 16 * r, s, 32 * r, seed) + mix16(p, n - 16 * (r + 1), s, 32 * r + 16, seed);
            }
            return avalanche3(acc);
        }
        if (n > 8) {
            long lo = ((r64(s, 24) ^ r64(s, 32)) + seed) ^ r64(p, 0);
            long hi = ((r64(s, 40) ^ r64(s, 48)) - seed) ^ r64(p, n - 8);
            return avalanche3(n + Long.reverseBytes(lo) + hi + fold64(lo, hi));
        }
        if (n >= 4) {
            long first = r32(p, 0) & 0xffffffffL, last = r32(p, n - 4) & 0xffffffffL;
            long mod = seed ^ ((Integer.reverseBytes((int) seed) & 0xffffffffL) << 32);
            long x = ((r64(s, 8) ^ r64(s, 16)) - mod) ^ (last | first << 32);
            x ^= Long.rotateLeft(x, 49) ^ Long.rotateLeft(x, 24);
            x *= MX2;
            x ^= (x >>> 35) + n;
            x *= MX2;
            return x ^ (x >>> 28);
        }
        if (n > 0) {
            int combined = (p[n - 1] & 0xff) | n << 8 | (p[0] & 0xff) << 16 | (p[n >> 1] & 0xff) << 24;
            long k = ((r32(s, 0) ^ r32(s, 4)) & 0xffffffffL) + seed;
            return avalanche64(k ^ (combined & 0xffffffffL));
        }
        return avalanche64(seed ^ r64(s, 56) ^ r64(s, 64));
    }

    private static final long XXH3_8 = r64(SECRET, 8) ^ r64(SECRET, 16);

    /** xxh3 of the 8 little-endian bytes of v (an le64 integer key), without building the bytes. */
    public static long xxh3Int(long v, long seed) {
        long first = v & 0xffffffffL;
        long last = v >>> 32;
        long mod = seed ^ ((Integer.reverseBytes((int) seed) & 0xffffffffL) << 32);
        long x = (XXH3_8 - mod) ^ (last | first << 32);
        x ^= Long.rotateLeft(x, 49) ^ Long.rotateLeft(x, 24);
        x *= MX2;
        x ^= (x >>> 35) + 8;
        x *= MX2;
        return x ^ (x >>> 28);
    }

    private static void put64(byte[] b, int i, long v) {
        for (int k = 0; k < 8; k++) b[i + k] = (byte) (v >>> (8 * k));
    }

    private static long xxh3Long(byte[] p, long seed) {
        byte[] s = SECRET;
        if (seed != 0) {
            s = new byte[192];
            for (int k = 0; k < 12; k++) {
                put64(s, 16 * k, r64(SECRET, 16 * k) + seed);
                put64(s, 16 * k + 8, r64(SECRET, 16 * k + 8) - seed);
            }
        }
        int n = p.length;
        long[] acc = {P32_3 & 0xffffffffL, P64_1, P64_2, P64_3, P64_4, P32_2 & 0xffffffffL, P64_5,
            P32_1 & 0xffffffffL};
        final int block = 64 * 16;
        int nblocks = (n - 1) / block;
        for (int b = 0; b < nblocks; b++) {
            for (int j = 0; j < 16; j++) stripe(acc, p, b * block + 64 * j, s, 8 * j);
            for (int k = 0; k < 8; k++) {
                long a = acc[k];
                a ^= a >>> 47;
                a ^= r64(s, 128 + 8 * k);
                acc[k] = a * (P32_1 & 0xffffffffL);
            }
        }
        int nstripes = (n - nblocks * block - 1) / 64;
        for (int j = 0; j < nstripes; j++) stripe(acc, p, nblocks * block + 64 * j, s, 8 * j);
        stripe(acc, p, n - 64, s, 192 - 71);
        long result = n * P64_1;
        for (int k = 0; k < 4; k++) {
            result += fold64(acc[2 * k] ^ r64(s, 11 + 16 * k), acc[2 * k + 1] ^ r64(s, 11 + 16 * k + 8));
        }
        return avalanche3(result);
    }

    private static void stripe(long[] acc, byte[] p, int off, byte[] s, int so) {
        long[] d = new long[8];
        for (int k = 0; k < 8; k++) d[k] = r64(p, off + 8 * k);
        for (int k = 0; k < 8; k++) {
            long x = d[k] ^ r64(s, so + 8 * k);
            acc[k] += (x & 0xffffffffL) * (x >>> 32) + d[k ^ 1];
        }
    }

    public static int murmur3_32(byte[] p, int seed) {
        final int c1 = 0xcc9e2d51, c2 = 0x1b873593;
        int h = seed;
        int n = p.length;
        int nb = n / 4;
        for (int b = 0; b < nb; b++) {
            int k = Integer.rotateLeft(r32(p, 4 * b) * c1, 15) * c2;
            h = Integer.rotateLeft(h ^ k, 13) * 5 + 0xe6546b64;
        }
        int k = 0;
        for (int t = n & 3; t > 0; t--) k = k << 8 | (p[4 * nb + t - 1] & 0xff);
        if ((n & 3) != 0) h ^= Integer.rotateLeft(k * c1, 15) * c2;
        h ^= n;
        h ^= h >>> 16;
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        h *= 0xc2b2ae35;
        return h ^ (h >>> 16);
    }

    private static long fmix64(long k) {
        k ^= k >>> 33;
        k *= 0xff51afd7ed558ccdL;
        k ^= k >>> 33;
        k *= 0xc4ceb9fe1a85ec53L;
        return k ^ (k >>> 33);
    }

    /** MurmurHash3_x64_128: {h1, h2}; the routing value is h1. */
    public static long[] murmur3_128(byte[] p, int seed) {
        final long c1 = 0x87c37b91114253d5L, c2 = 0x4cf5ad432745937fL;
        long h1 = seed & 0xffffffffL, h2 = seed & 0xffffffffL;
        int n = p.length;
        int nb = n / 16;
        for (int b = 0; b < nb; b++) {
            h1 ^= Long.rotateLeft(r64(p, 16 * b) * c1, 31) * c2;
            h1 = (Long.rotateLeft(h1, 27) + h2) * 5 + 0x52dce729;
            h2 ^= Long.rotateLeft(r64(p, 16 * b + 8) * c2, 33) * c1;
            h2 = (Long.rotateLeft(h2, 31) + h1) * 5 + 0x38495ab5;
        }
        int t = 16 * nb, rem = n & 15;
        long k1 = 0, k2 = 0;
        for (int i = rem; i > 8; i--) k2 = k2 << 8 | (p[t + i - 1] & 0xff);
        for (int i = Math.min(rem, 8); i > 0; i--) k1 = k1 << 8 | (p[t + i - 1] & 0xff);
        if (rem > 8) h2 ^= Long.rotateLeft(k2 * c2, 33) * c1;
        if (rem > 0) h1 ^= Long.rotateLeft(k1 * c1, 31) * c2;
        h1 ^= n;
        h2 ^= n;
        h1 += h2;
        h2 += h1;
        h1 = fmix64(h1);
        h2 = fmix64(h2);
        h1 += h2;
        h2 += h1;
        return new long[] {h1, h2};
    }

    public static int fnv1a32(byte[] p) {
        int h = 0x811c9dc5;
        for (byte b : p) h = (h ^ (b & 0xff)) * 0x01000193;
        return h;
    }

    public static long fnv1a64(byte[] p) {
        long h = 0xcbf29ce484222325L;
        for (byte b : p) h = (h ^ (b & 0xff)) * 0x100000001b3L;
        return h;
    }

    /** The widest seed of an algorithm (unsigned), or -2 for an unknown name. */
    static long widestSeed(String algorithm) {
        switch (algorithm) {
            case "xxh3_64": case "xxh64": return -1L;
            case "xxh32": case "murmur3_32": case "murmur3_128": return 0xffffffffL;
            case "fnv1a_32": case "fnv1a_64": return 0;
            default: return -2;
        }
    }

    /** The 64-bit routing value of data (seed already checked for the algorithm). */
    public static long hashBytes(byte[] data, String algorithm, long seed) {
        switch (algorithm) {
            case "xxh3_64": return xxh3(data, seed);
            case "xxh64": return xxh64(data, seed);
            case "xxh32": return xxh32(data, (int) seed) & 0xffffffffL;
            case "murmur3_32": return murmur3_32(data, (int) seed) & 0xffffffffL;
            case "murmur3_128": return murmur3_128(data, (int) seed)[0];
            case "fnv1a_32": return fnv1a32(data) & 0xffffffffL;
            case "fnv1a_64": return fnv1a64(data);
            default: throw ShardhashException.value("unknown algorithm " + algorithm);
        }
    }
}
