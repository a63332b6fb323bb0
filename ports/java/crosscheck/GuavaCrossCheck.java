import com.google.common.hash.Hashing;
import io.shardhash.Hashes;
import io.shardhash.Router;

/**
 * The Java port against Guava (libguava-java): jump against Hashing.consistentHash(long, int) on
 * 200,000 (key, buckets) pairs, and MurmurHash3 x86_32 / x64_128 against Hashing.murmur3_32_fixed /
 * murmur3_128 on every length 0..600 of a fixed buffer, seeded. Guava's murmur3_128 sign-extends its int
 * seed into h1 and h2, so for seeds of 2^31 and above it is not MurmurHash3_x64_128 (the reference and
 * the Python mmh3 package zero-extend): the 128-bit comparison uses seeds below 2^31.
 *
 * <pre>javac -cp shardhash.jar:guava.jar GuavaCrossCheck.java; java -cp shardhash.jar:guava.jar:. GuavaCrossCheck</pre>
 */
public final class GuavaCrossCheck {
    private GuavaCrossCheck() {}

    public static void main(String[] args) {
        int bad = 0;
        long x = 0x9e3779b97f4a7c15L;
        int pairs = 200_000;
        for (int k = 0; k < pairs; k++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            int buckets = 1 + (int) ((x >>> 40) % (k % 3 == 0 ? 100_000 : 1000));
            long key = x * 0x9e3779b97f4a7c15L;
            if (Router.jump(key, buckets) != Hashing.consistentHash(key, buckets)) {
                System.out.println("jump(" + Long.toUnsignedString(key) + ", " + buckets + ") differs");
                bad++;
            }
        }
        byte[] buf = new byte[600];
        for (int i = 0; i < buf.length; i++) buf[i] = (byte) ((i * 2654435761L + 1013904223L) >>> 24);
        int lengths = 0;
        for (int n = 0; n <= buf.length; n++, lengths++) {
            byte[] p = java.util.Arrays.copyOf(buf, n);
            int seed = n * 0x9e3779b1;
            if (Hashes.murmur3_32(p, seed) != Hashing.murmur3_32_fixed(seed).hashBytes(p).asInt()) {
                System.out.println("murmur3_32 of " + n + " bytes differs");
                bad++;
            }
            // Guava's 128-bit value as bytes: h1 then h2, little-endian; asLong() is h1
            int seed31 = seed & 0x7fffffff;
            byte[] g = Hashing.murmur3_128(seed31).hashBytes(p).asBytes();
            long[] h = Hashes.murmur3_128(p, seed31);
            long g1 = java.nio.ByteBuffer.wrap(g, 0, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
            long g2 = java.nio.ByteBuffer.wrap(g, 8, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
            if (h[0] != g1 || h[1] != g2) {
                System.out.println("murmur3_128 of " + n + " bytes differs");
                bad++;
            }
        }
        if (bad > 0) System.exit(1);
        System.out.println(pairs + " jump pairs and " + lengths + " lengths x 2 murmur3 hashes agree");
    }
}
