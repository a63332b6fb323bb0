import io.shardhash.Json;
import io.shardhash.Router;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Map;

/**
 * What the conformance kit cannot see: routeIndex(long), the unboxed integer path, against
 * routeIndex(Object) with the same key as a BigInteger, on every router document of the kit.
 *
 * <pre>java -cp shardhash.jar:. SelfTest conformance/cases.jsonl</pre>
 */
public final class SelfTest {
    private SelfTest() {}

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        long[] keys = new long[207];
        long[] edges = {0, 1, -1, 42, 1L << 40, Long.MIN_VALUE, Long.MAX_VALUE};
        System.arraycopy(edges, 0, keys, 0, edges.length);
        long x = 0x9e3779b97f4a7c15L;
        for (int i = edges.length; i < keys.length; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            keys[i] = x;
        }
        int docs = 0;
        int checked = 0;
        for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
            if (!line.contains("\"op\":\"route\"")) continue;
            Map<String, Object> c = (Map<String, Object>) Json.parse(line);
            Router r = Router.fromDocument(c.get("document"));
            docs++;
            for (long k : keys) {
                String a;
                String b;
                try {
                    a = String.valueOf(r.routeIndex(k));
                } catch (RuntimeException e) {
                    a = "!" + e.getMessage();
                }
                try {
                    b = String.valueOf(r.routeIndex((Object) BigInteger.valueOf(k)));
                } catch (RuntimeException e) {
                    b = "!" + e.getMessage();
                }
                if (!a.equals(b)) {
                    System.out.println(c.get("id") + ": key " + k + ": routeIndex(long) " + a + ", routeIndex(Object) " + b);
                    System.exit(1);
                }
                checked++;
            }
        }
        if (docs < 50) {
            System.out.println("only " + docs + " route documents");
            System.exit(1);
        }
        System.out.println(checked + " integer keys on " + docs + " documents agree");
    }
}
