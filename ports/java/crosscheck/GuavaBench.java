import com.google.common.hash.HashFunction;
import com.google.common.hash.Hashing;
import io.shardhash.Hashes;
import io.shardhash.Router;

/**
 * The Java port's jump and MurmurHash3 against Guava's, one call at a time (System.nanoTime, warm-up
 * first): java -cp shardhash.jar:guava.jar:. GuavaBench
 */
public final class GuavaBench {
    private GuavaBench() {}

    static volatile long sink;

    interface Op {
        long apply(long i);
    }

    static double ns(Op op, int n) {
        long s = 0;
        for (int r = 0; r < 5; r++) for (long i = 0; i < n; i++) s += op.apply(i);
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) s += op.apply(i);
        sink += s;
        return (System.nanoTime() - t0) / (double) n;
    }

    public static void main(String[] args) {
        int n = 2_000_000;
        HashFunction m128 = Hashing.murmur3_128(0);
        byte[] key = new byte[16];
        System.out.printf("Router.jump(h, 10)                   %6.1f ns%n", ns(i -> Router.jump(i * 0x9e3779b97f4a7c15L, 10), n));
        System.out.printf("Hashing.consistentHash(h, 10)        %6.1f ns%n",
                ns(i -> Hashing.consistentHash(i * 0x9e3779b97f4a7c15L, 10), n));
        System.out.printf("Hashes.murmur3_128(16 bytes)[0]      %6.1f ns%n", ns(i -> {
            key[0] = (byte) i;
            return Hashes.murmur3_128(key, 0)[0];
        }, n));
        System.out.printf("Guava murmur3_128.hashBytes(16 bytes) %6.1f ns%n", ns(i -> {
            key[0] = (byte) i;
            return m128.hashBytes(key).asLong();
        }, n));
    }
}
