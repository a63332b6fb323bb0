import io.shardhash.Router;
import java.util.HashMap;

/**
 * One key's route (long keys, 10 shards) against a HashMap lookup of the same key:
 * java -cp build/shardhash.jar:build/bench Bench
 */
public final class Bench {
    private Bench() {}

    static volatile long sink;

    static Router router(String type, String params) {
        StringBuilder shards = new StringBuilder("\"s0\"");
        for (int i = 1; i < 10; i++) shards.append(", \"s").append(i).append('"');
        return Router.fromJson("{\"format\": \"shardhash.router/1\", \"type\": \"" + type + "\", \"version\": 1,"
                + " \"shards\": [" + shards + "], \"hasher\": {\"format\": \"shardhash.hasher/1\","
                + " \"algorithm\": \"xxh3_64\", \"seed\": 0, \"codec\": {\"format\": \"shardhash.codec/1\","
                + " \"int_encoding\": \"le64\", \"normalization\": null, \"casefold\": false, \"strip\": false}},"
                + " \"params\": " + params + "}");
    }

    interface Op {
        int apply(long key);
    }

    static double nsPerOp(Op op, int n) {
        long s = 0;
        for (int round = 0; round < 5; round++) { // warm-up: let the JIT compile the loop
            for (long i = 0; i < n; i++) s += op.apply(i);
        }
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) s += op.apply(i);
        long t1 = System.nanoTime();
        sink += s;
        return (t1 - t0) / (double) n;
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
        StringBuilder pl = new StringBuilder("[0");
        for (int i = 1; i < 4096; i++) pl.append(", ").append(i * 10 / 4096);
        Router jump = router("jump", "{}");
        Router bucket = router("bucket", "{\"placement\": " + pl + "]}");
        Router ring = router("ring", "{\"vnodes\": 256, \"weights\": null, \"collisions\": \"error\"}");
        HashMap<Long, Integer> map = new HashMap<>();
        for (long i = 0; i < (1 << 20); i++) map.put(i, (int) (i % 10));
        System.out.printf("jump.routeIndex(long)    %6.1f ns%n", nsPerOp(jump::routeIndex, n));
        System.out.printf("bucket.routeIndex(long)  %6.1f ns%n", nsPerOp(bucket::routeIndex, n));
        System.out.printf("ring.routeIndex(long)    %6.1f ns%n", nsPerOp(ring::routeIndex, n));
        System.out.printf("HashMap<Long,Integer>.get (1M keys) %6.1f ns%n",
                nsPerOp(k -> map.get(k & ((1 << 20) - 1)), n));
    }
}
