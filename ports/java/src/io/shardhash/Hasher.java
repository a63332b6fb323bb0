package io.shardhash;

import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/** A key's 64-bit routing value under a shardhash.hasher/1 document. */
public final class Hasher {
    public final String algorithm;
    public final long seed;
    public final KeyCodec codec;

    private Hasher(String algorithm, long seed, KeyCodec codec) {
        this.algorithm = algorithm;
        this.seed = seed;
        this.codec = codec;
    }

    /** Checks a seed against an algorithm's range. */
    static long checkSeed(String algorithm, BigInteger seed) {
        long widest = Hashes.widestSeed(algorithm);
        if (widest == -2) throw ShardhashException.value("unknown algorithm " + algorithm);
        if (seed.signum() < 0) throw ShardhashException.value("seed must be >= 0");
        BigInteger max = widest == -1L ? BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE) : BigInteger.valueOf(widest);
        if (seed.compareTo(max) > 0) {
            if (widest == 0) throw ShardhashException.value(algorithm + " takes no seed");
            throw ShardhashException.overflow("seed " + seed + " is too wide for " + algorithm);
        }
        return seed.longValue();
    }

    public static Hasher fromDocument(Object v) {
        Map<String, Object> doc = Router.fields(v, List.of("format", "algorithm", "seed", "codec"), List.of(),
                "hasher document");
        if (!"shardhash.hasher/1".equals(doc.get("format"))) {
            throw ShardhashException.value("hasher format must be \"shardhash.hasher/1\"");
        }
        if (!(doc.get("algorithm") instanceof String)) throw ShardhashException.value("unknown algorithm");
        if (!(doc.get("seed") instanceof BigInteger)) throw ShardhashException.type("seed must be an integer");
        String alg = (String) doc.get("algorithm");
        long seed = checkSeed(alg, (BigInteger) doc.get("seed"));
        return new Hasher(alg, seed, KeyCodec.fromDocument(doc.get("codec")));
    }

    /** hash(key) for an integer key, without boxing it. */
    public long hash(long key) {
        if (!codec.decimal && algorithm.equals("xxh3_64")) return Hashes.xxh3Int(key, seed);
        return hash((Object) key);
    }

    /** The key's 64-bit routing value (unsigned, in a long). */
    public long hash(Object key) {
        return Hashes.hashBytes(codec.encode(key), algorithm, seed);
    }
}
