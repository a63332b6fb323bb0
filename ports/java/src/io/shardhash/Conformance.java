package io.shardhash;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Runs the Java port against the conformance kit: reads shardhash.conformance/1 cases (stdin, or the
 * file named by the first argument) and writes one result line per case.
 *
 * <pre>java -cp shardhash.jar io.shardhash.Conformance &lt; conformance/cases.jsonl</pre>
 */
public final class Conformance {
    private Conformance() {}

    private static final class Rejected {}

    @SuppressWarnings("unchecked")
    static Object untag(Object t) {
        List<Object> pair = (List<Object>) t;
        Object v = pair.get(1);
        switch ((String) pair.get(0)) {
            case "int": return new BigInteger((String) v);
            case "str": return v;
            case "bytes": return Hashes.hex((String) v);
            case "uuid": return UUID.fromString((String) v);
            case "tuple": {
                List<Object> out = new ArrayList<>();
                for (Object x : (List<Object>) v) out.add(untag(x));
                return out;
            }
            case "bool": return v;
            case "none": return null;
            case "float": return Double.valueOf((String) v);
            default: throw new IllegalArgumentException("unknown key tag " + pair.get(0));
        }
    }

    private static String hex64(long h) {
        String s = Long.toHexString(h);
        return "0".repeat(16 - s.length()) + s;
    }

    private static long u64(Object s) {
        return Long.parseUnsignedLong((String) s);
    }

    private static String hexBytes(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x & 0xff));
        return sb.toString();
    }

    private static List<Object> list(Object v) {
        @SuppressWarnings("unchecked")
        List<Object> l = (List<Object>) v;
        return l;
    }

    static Map<String, Object> run(Map<String, Object> c) {
        Map<String, Object> out = new LinkedHashMap<>();
        switch ((String) c.get("op")) {
            case "hash": {
                String alg = (String) c.get("algorithm");
                long seed = Hasher.checkSeed(alg, new BigInteger((String) c.get("seed")));
                out.put("hash", hex64(Hashes.hashBytes(Hashes.hex((String) c.get("data")), alg, seed)));
                break;
            }
            case "encode":
                out.put("encoded", hexBytes(KeyCodec.fromDocument(c.get("codec")).encode(untag(c.get("key")))));
                break;
            case "hash_key": {
                Hasher h = Hasher.fromDocument(c.get("hasher"));
                List<Object> hs = new ArrayList<>();
                for (Object k : list(c.get("keys"))) hs.add(hex64(h.hash(untag(k))));
                out.put("hashes", hs);
                break;
            }
            case "jump": {
                int n = ((BigInteger) c.get("n")).intValue();
                List<Object> b = new ArrayList<>();
                for (Object h : list(c.get("hashes"))) b.add(Router.jump(u64(h), n));
                out.put("buckets", b);
                break;
            }
            case "load": {
                Router r = Router.fromDocument(c.get("document"));
                out.put("fingerprint", r.fingerprint);
                out.put("shards", new ArrayList<Object>(r.shards()));
                break;
            }
            case "route": {
                Router r = Router.fromDocument(c.get("document"));
                List<Object> routes = new ArrayList<>();
                List<Object> ids = new ArrayList<>();
                List<Object> keyHashes = new ArrayList<>();
                for (Object t : list(c.get("keys"))) {
                    Object key = untag(t);
                    try {
                        int i = r.routeIndex(key);
                        routes.add(i);
                        ids.add(r.shards().get(i));
                        keyHashes.add(r.routesOnHash() ? hex64(r.hasher.hash(key)) : null);
                    } catch (ShardhashException e) {
                        routes.add("!" + e.kind());
                        ids.add(null);
                        keyHashes.add(null);
                    }
                }
                List<Object> hashRoutes = new ArrayList<>();
                for (Object h : list(c.get("hashes"))) hashRoutes.add(r.routeHash(u64(h)));
                out.put("shards", new ArrayList<Object>(r.shards()));
                out.put("key_hashes", keyHashes);
                out.put("routes", routes);
                out.put("ids", ids);
                out.put("hash_routes", hashRoutes);
                break;
            }
            case "replicas": {
                Router r = Router.fromDocument(c.get("document"));
                Map<String, String> zones = null;
                if (c.get("zones") instanceof Map) {
                    zones = new HashMap<>();
                    @SuppressWarnings("unchecked")
                    Map<String, Object> z = (Map<String, Object>) c.get("zones");
                    for (Map.Entry<String, Object> e : z.entrySet()) zones.put(e.getKey(), (String) e.getValue());
                }
                int n = ((BigInteger) c.get("n")).intValue();
                List<Object> lists = new ArrayList<>();
                for (Object h : list(c.get("hashes"))) lists.add(r.replicasHash(u64(h), n, zones));
                out.put("lists", lists);
                break;
            }
            case "assign": {
                Router r = Router.fromDocument(c.get("document"));
                List<Object> hs = list(c.get("hashes"));
                long[] a = new long[hs.size()];
                for (int i = 0; i < a.length; i++) a[i] = u64(hs.get(i));
                out.put("routes", r.assignHashes(a));
                break;
            }
            case "hot_read": {
                Router r = Router.fromDocument(c.get("document"));
                List<Object> reads = new ArrayList<>();
                for (Object k : list(c.get("keys"))) reads.add(new ArrayList<Object>(r.routeRead(untag(k))));
                out.put("reads", reads);
                break;
            }
            default:
                out.put("unsupported", "op " + c.get("op"));
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws IOException {
        BufferedReader in = args.length > 0
                ? Files.newBufferedReader(Paths.get(args[0]), StandardCharsets.UTF_8)
                : new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, Object> c = (Map<String, Object>) Json.parse(line);
            if (!c.containsKey("op")) continue; // the header
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("id", c.get("id"));
            try {
                res.putAll(run(c));
            } catch (ShardhashException e) {
                res.put("error", e.kind());
            }
            out.write(Json.dump(res));
            out.write('\n');
        }
        out.flush();
    }
}
