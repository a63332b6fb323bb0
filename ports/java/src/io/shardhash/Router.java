package io.shardhash;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A router loaded from a shardhash.router/1 document: {@code Router.fromJson(text).route(key)}.
 * Immutable and safe to share between threads once built.
 */
public final class Router {
    private static final long GOLDEN = 0x9e3779b97f4a7c15L;
    private static final long REHASH_SALT = 0x7265706c69636131L;
    private static final List<String> TOP_REQUIRED = List.of("format", "type", "version", "shards", "hasher", "params");
    private static final List<String> TOP_OPTIONAL = List.of("key_prefix", "zones", "fingerprint", "key_type");
    private static final List<String> KEY_TYPES = List.of("int", "str", "bytes", "uuid");

    private enum Kind { JUMP, TABLE, RING, RENDEZVOUS, HASH_RANGE, RANGE, DIRECTORY, WATERMARK, MEMENTO, MULTIPROBE, HOT }

    public final String type;
    private final List<String> shards;
    public final Hasher hasher;
    public final String fingerprint;
    public final int keyPrefix; // 0 when unused
    private final Map<String, String> zones; // null when unused
    final Map<String, Object> document; // normalised, with its fingerprint

    private Kind kind;
    private int[] table;
    private long[] tokens;
    private int[] owners;
    private long[] seeds;
    private double[] weights;
    private long[] splits;
    private int[] rangeOwners;
    private List<Object> keySplits;
    private Router base;
    private Map<Long, Integer> overrides;
    private Router oldRouter;
    private Router newRouter;
    private BigInteger watermark;
    private int mementoN;
    private Map<Integer, Integer> replacer;
    private int[] bucketShard;
    private int probes;
    private long balanceFactor;
    private Map<Object, Integer> hot; // hot key (BigInteger or String) -> fan-out
    private int[] ringIdx; // ringIdx[p]: the first token whose top bits are >= p
    private int ringShift;
    private List<String> derivedShards;

    /** Loads and verifies a router document from JSON text. */
    public static Router fromJson(String json) {
        return fromDocument(Json.parse(json));
    }

    /** Loads and verifies a parsed document (as Json.parse returns it). */
    public static Router fromDocument(Object v) {
        return new Router(v);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> fields(Object v, List<String> required, List<String> optional, String what) {
        if (!(v instanceof Map)) throw ShardhashException.type(what + " must be an object");
        Map<String, Object> doc = (Map<String, Object>) v;
        for (String k : doc.keySet()) {
            if (!required.contains(k) && !optional.contains(k)) {
                throw ShardhashException.value("unknown field \"" + k + "\" in " + what);
            }
        }
        for (String k : required) {
            if (!doc.containsKey(k)) throw ShardhashException.value("missing field \"" + k + "\" in " + what);
        }
        return doc;
    }

    private static long intField(Object v, String what, long lo, long hi) {
        if (!(v instanceof BigInteger)) throw ShardhashException.type(what + " must be an integer");
        BigInteger b = (BigInteger) v;
        if (b.bitLength() > 63 || b.longValue() < lo || b.longValue() > hi) {
            throw ShardhashException.value(what + " must be in [" + lo + ", " + hi + "]");
        }
        return b.longValue();
    }

    private static long uint64Field(Object v, String what) {
        if (!(v instanceof BigInteger)) throw ShardhashException.type(what + " must be an integer");
        BigInteger b = (BigInteger) v;
        if (b.signum() < 0 || b.bitLength() > 64) throw ShardhashException.value(what + " must be in [0, 2**64-1]");
        return b.longValue();
    }

    private static String shardId(Object v, String what) {
        if (!(v instanceof String) || ((String) v).isEmpty()) {
            throw ShardhashException.value(what + " must be a non-empty string");
        }
        return (String) v;
    }

    @SuppressWarnings("unchecked")
    private Router(Object v) {
        Map<String, Object> doc = fields(v, TOP_REQUIRED, TOP_OPTIONAL, "router document");
        if (!"shardhash.router/1".equals(doc.get("format"))) {
            throw ShardhashException.value("format must be \"shardhash.router/1\"");
        }
        if (!(doc.get("version") instanceof BigInteger)) throw ShardhashException.type("version must be an integer");
        if (((BigInteger) doc.get("version")).signum() < 0) throw ShardhashException.value("version must be >= 0");
        type = doc.get("type") instanceof String ? (String) doc.get("type") : "";
        hasher = Hasher.fromDocument(doc.get("hasher"));
        keyPrefix = doc.containsKey("key_prefix") ? (int) intField(doc.get("key_prefix"), "key_prefix", 1,
                Integer.MAX_VALUE) : 0;
        if (doc.containsKey("key_type")) {
            Map<String, Object> kt = fields(doc.get("key_type"), List.of("format", "type"), List.of(), "key_type");
            if (!"shardhash.keytype/1".equals(kt.get("format"))) {
                throw ShardhashException.value("key_type format must be shardhash.keytype/1");
            }
            Object t = kt.get("type");
            boolean good = t instanceof String && KEY_TYPES.contains(t);
            if (t instanceof List) {
                List<Object> l = (List<Object>) t;
                good = l.size() >= 2 && l.stream().allMatch(x -> x instanceof String && KEY_TYPES.contains(x));
            }
            if (!good) throw ShardhashException.value("unknown key_type type");
        }
        if (!(doc.get("shards") instanceof List)) throw ShardhashException.type("shards must be a list");
        List<Object> list = (List<Object>) doc.get("shards");
        if (list.isEmpty()) throw ShardhashException.value("shards must not be empty");
        List<String> ids = new ArrayList<>();
        for (Object x : list) {
            String s = shardId(x, "shards entry");
            if (ids.contains(s)) throw ShardhashException.value("duplicate shard id " + s);
            ids.add(s);
        }
        if (!(doc.get("params") instanceof Map)) throw ShardhashException.type("params must be an object");
        Map<String, Object> params = (Map<String, Object>) doc.get("params");
        Map<String, Router> nested = new LinkedHashMap<>();
        derivedShards = ids;
        build(params, ids, nested, doc);
        if (!derivedShards.equals(ids)) throw ShardhashException.value("shards do not match the parameters");
        shards = Collections.unmodifiableList(ids);
        if (doc.containsKey("zones")) {
            Map<String, Object> z = fields(doc.get("zones"), ids, List.of(), "zones");
            Map<String, String> zz = new HashMap<>();
            for (String s : ids) zz.put(s, shardId(z.get(s), "zone name"));
            zones = Collections.unmodifiableMap(zz);
        } else {
            zones = null;
        }
        Map<String, Object> norm = new LinkedHashMap<>(doc);
        norm.remove("fingerprint");
        Map<String, Object> np = new LinkedHashMap<>(params);
        if (np.get("weights") instanceof Map) {
            Map<String, Object> w = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : ((Map<String, Object>) np.get("weights")).entrySet()) {
                Object x = e.getValue();
                w.put(e.getKey(), x instanceof BigInteger ? new Json.Num(((BigInteger) x).doubleValue()) : x);
            }
            np.put("weights", w);
        }
        if ("hot".equals(type) && np.get("bucket_seconds") instanceof BigInteger) {
            np.put("bucket_seconds", new Json.Num(((BigInteger) np.get("bucket_seconds")).doubleValue()));
        }
        for (Map.Entry<String, Router> e : nested.entrySet()) np.put(e.getKey(), e.getValue().document);
        norm.put("params", np);
        String canon = Json.canonical(norm);
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(canon.getBytes(StandardCharsets.UTF_8));
            StringBuilder b = new StringBuilder();
            for (byte x : d) b.append(String.format("%02x", x & 0xff));
            fingerprint = b.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        if (doc.containsKey("fingerprint") && !fingerprint.equals(doc.get("fingerprint"))) {
            throw ShardhashException.value("fingerprint mismatch: the document says " + doc.get("fingerprint")
                    + ", its content hashes to " + fingerprint);
        }
        norm.put("fingerprint", fingerprint);
        document = norm;
    }

    /** The shard ids, in index order. */
    public List<String> shards() {
        return shards;
    }

    /** The failure domain of each shard, or null. */
    public Map<String, String> zones() {
        return zones;
    }

    private static double[] weightsOf(Object v, List<String> shards) {
        double[] full = new double[shards.size()];
        Arrays.fill(full, 1.0);
        if (v == null) return full;
        Map<String, Object> w = fields(v, List.of(), shards, "weights");
        for (Map.Entry<String, Object> e : w.entrySet()) {
            Object x = e.getValue();
            double f;
            if (x instanceof Json.Num) f = ((Json.Num) x).value;
            else if (x instanceof BigInteger) f = ((BigInteger) x).doubleValue();
            else throw ShardhashException.type("weight of " + e.getKey() + " must be a number");
            if (Double.isNaN(f) || Double.isInfinite(f) || f <= 0) {
                throw ShardhashException.value("weight of " + e.getKey() + " must be finite and > 0");
            }
            full[shards.indexOf(e.getKey())] = f;
        }
        return full;
    }

    private static boolean allEqual(double[] f) {
        for (double x : f) if (x != f[0]) return false;
        return true;
    }

    private static boolean isPrime(long n) {
        if (n < 2) return false;
        for (long d = 2; d * d <= n; d++) if (n % d == 0) return false;
        return true;
    }

    private void setOwners(Object v, int count) {
        if (!(v instanceof List) || ((List<?>) v).size() != count) {
            throw ShardhashException.value("owners must have one entry per range");
        }
        List<String> ids = new ArrayList<>();
        rangeOwners = new int[count];
        int i = 0;
        for (Object x : (List<?>) v) {
            String s = shardId(x, "owner");
            if (!ids.contains(s)) ids.add(s);
            rangeOwners[i++] = ids.indexOf(s);
        }
        derivedShards = ids;
    }

    private static int compareKeys(Object a, Object b) {
        if (a instanceof BigInteger) return ((BigInteger) a).compareTo((BigInteger) b);
        return Json.CODE_POINT_ORDER.compare((String) a, (String) b);
    }

    private static final class Entry {
        final long pos;
        final String shard;
        final int i;

        Entry(long pos, String shard, int i) {
            this.pos = pos;
            this.shard = shard;
            this.i = i;
        }
    }

    @SuppressWarnings("unchecked")
    private void build(Map<String, Object> p, List<String> shards, Map<String, Router> nested, Map<String, Object> doc) {
        int n = shards.size();
        String what = type + " params";
        switch (type) {
            case "modulo":
            case "jump":
                fields(p, List.of(), List.of(), what);
                if (type.equals("jump")) {
                    kind = Kind.JUMP;
                } else {
                    kind = Kind.TABLE;
                    table = new int[n];
                    for (int i = 0; i < n; i++) table[i] = i;
                }
                break;
            case "ring":
            case "bounded": {
                List<String> req = new ArrayList<>(p.containsKey("tokens") ? List.of("tokens", "collisions")
                        : List.of("vnodes", "weights", "collisions"));
                if (type.equals("bounded")) req.add("balance_factor");
                fields(p, req, List.of(), what);
                if (type.equals("bounded")) {
                    balanceFactor = intField(p.get("balance_factor"), "balance_factor", 100, Integer.MAX_VALUE);
                }
                Object coll = p.get("collisions");
                if (!"error".equals(coll) && !"first".equals(coll)) {
                    throw ShardhashException.value("collisions must be error or first");
                }
                List<Entry> entries = new ArrayList<>();
                if (p.containsKey("tokens")) {
                    Map<String, Object> td = fields(p.get("tokens"), shards, List.of(), "tokens");
                    for (String s : shards) {
                        if (!(td.get(s) instanceof List) || ((List<?>) td.get(s)).isEmpty()) {
                            throw ShardhashException.value("shard " + s + " needs at least one token");
                        }
                        int i = 0;
                        for (Object x : (List<?>) td.get(s)) entries.add(new Entry(uint64Field(x, "token"), s, i++));
                    }
                } else {
                    long vnodes = intField(p.get("vnodes"), "vnodes", 1, 1 << 20);
                    double[] w = weightsOf(p.get("weights"), shards);
                    long total = 0;
                    for (int k = 0; k < n; k++) {
                        String s = shards.get(k);
                        int count = (int) Math.max(1, Math.floor(vnodes * w[k] + 0.5));
                        total += count;
                        if (total > (1 << 22)) throw ShardhashException.value("too many ring tokens (limit 2**22)");
                        for (int i = 0; i < count; i++) entries.add(new Entry(hasher.hash(s + ":" + i), s, i));
                    }
                }
                entries.sort((x, y) -> {
                    int c = Long.compareUnsigned(x.pos, y.pos);
                    if (c != 0) return c;
                    c = Json.CODE_POINT_ORDER.compare(x.shard, y.shard);
                    return c != 0 ? c : Integer.compare(x.i, y.i);
                });
                long[] toks = new long[entries.size()];
                int[] own = new int[entries.size()];
                int m = 0;
                for (int k = 0; k < entries.size(); k++) {
                    Entry e = entries.get(k);
                    if (m > 0 && toks[m - 1] == e.pos) {
                        if (coll.equals("error") || entries.get(k - 1).shard.equals(e.shard)) {
                            throw ShardhashException.value("two tokens at position " + Long.toUnsignedString(e.pos));
                        }
                        continue;
                    }
                    toks[m] = e.pos;
                    own[m++] = shards.indexOf(e.shard);
                }
                tokens = Arrays.copyOf(toks, m);
                owners = Arrays.copyOf(own, m);
                kind = Kind.RING;
                buildRingIndex();
                break;
            }
            case "rendezvous": {
                fields(p, List.of("weights"), List.of(), what);
                double[] w = weightsOf(p.get("weights"), shards);
                seeds = new long[n];
                for (int i = 0; i < n; i++) seeds[i] = mix64(hasher.hash(shards.get(i)));
                weights = allEqual(w) ? null : w;
                kind = Kind.RENDEZVOUS;
                break;
            }
            case "maglev": {
                fields(p, List.of("table_size", "weights"), List.of(), what);
                long m = intField(p.get("table_size"), "table_size", 1, 1 << 24);
                if (!isPrime(m) || m < n) throw ShardhashException.value("table_size must be a prime >= the shard count");
                double[] w = weightsOf(p.get("weights"), shards);
                double[] rel = null;
                if (!allEqual(w)) {
                    double mx = Arrays.stream(w).max().getAsDouble();
                    rel = new double[n];
                    for (int i = 0; i < n; i++) rel[i] = w[i] / mx;
                }
                long[] ids = new long[n];
                for (int i = 0; i < n; i++) ids[i] = hasher.hash(shards.get(i));
                table = maglevTable(ids, rel, (int) m);
                kind = Kind.TABLE;
                break;
            }
            case "bucket": {
                fields(p, List.of("placement"), List.of(), what);
                Object pl = p.get("placement");
                if (!(pl instanceof List) || ((List<?>) pl).isEmpty() || ((List<?>) pl).size() > (1 << 24)) {
                    throw ShardhashException.value("placement must be a non-empty list");
                }
                List<Object> l = (List<Object>) pl;
                table = new int[l.size()];
                for (int i = 0; i < table.length; i++) table[i] = (int) intField(l.get(i), "placement entry", 0, n - 1);
                kind = Kind.TABLE;
                break;
            }
            case "hash_range": {
                fields(p, List.of("splits", "owners"), List.of(), what);
                if (!(p.get("splits") instanceof List)) throw ShardhashException.type("splits must be a list");
                List<Object> sp = (List<Object>) p.get("splits");
                splits = new long[sp.size()];
                for (int i = 0; i < splits.length; i++) {
                    splits[i] = uint64Field(sp.get(i), "split");
                    if (splits[i] == 0 || (i > 0 && Long.compareUnsigned(splits[i], splits[i - 1]) <= 0)) {
                        throw ShardhashException.value("splits must increase strictly, from 1");
                    }
                }
                setOwners(p.get("owners"), splits.length + 1);
                kind = Kind.HASH_RANGE;
                break;
            }
            case "range": {
                fields(p, List.of("splits", "owners"), List.of(), what);
                if (!(p.get("splits") instanceof List)) throw ShardhashException.type("splits must be a list");
                List<Object> sp = (List<Object>) p.get("splits");
                boolean allInt = sp.stream().allMatch(x -> x instanceof BigInteger);
                boolean allStr = sp.stream().allMatch(x -> x instanceof String);
                if (!allInt && !allStr) throw ShardhashException.type("range splits must be all integers or all strings");
                for (int i = 1; i < sp.size(); i++) {
                    if (compareKeys(sp.get(i), sp.get(i - 1)) <= 0) {
                        throw ShardhashException.value("splits must increase strictly");
                    }
                }
                keySplits = sp;
                setOwners(p.get("owners"), sp.size() + 1);
                kind = Kind.RANGE;
                break;
            }
            case "directory": {
                fields(p, List.of("base", "overrides"), List.of(), what);
                base = new Router(p.get("base"));
                if (base.kind == Kind.RANGE || base.kind == Kind.WATERMARK) {
                    throw ShardhashException.value("a directory's base must route hashes");
                }
                nested.put("base", base);
                List<String> ids = new ArrayList<>(base.shards);
                overrides = new HashMap<>();
                if (!(p.get("overrides") instanceof List)) throw ShardhashException.type("overrides must be a list");
                for (Object o : (List<Object>) p.get("overrides")) {
                    if (!(o instanceof List) || ((List<?>) o).size() != 2) {
                        throw ShardhashException.value("an override is a [key, shard] pair");
                    }
                    Object key = ((List<?>) o).get(0);
                    if (!(key instanceof BigInteger) && !(key instanceof String)) {
                        throw ShardhashException.value("override keys are integers or strings");
                    }
                    String s = shardId(((List<?>) o).get(1), "override shard");
                    if (!ids.contains(s)) ids.add(s);
                    long h = hasher.hash(key);
                    if (overrides.containsKey(h)) throw ShardhashException.value("two override keys share a hash");
                    overrides.put(h, ids.indexOf(s));
                }
                derivedShards = ids;
                kind = Kind.DIRECTORY;
                break;
            }
            case "watermark": {
                fields(p, List.of("old", "new", "watermark"), List.of(), what);
                oldRouter = new Router(p.get("old"));
                newRouter = new Router(p.get("new"));
                nested.put("old", oldRouter);
                nested.put("new", newRouter);
                if (!(p.get("watermark") instanceof BigInteger)) throw ShardhashException.type("watermark must be an integer");
                watermark = (BigInteger) p.get("watermark");
                List<String> ids = new ArrayList<>(oldRouter.shards);
                for (String s : newRouter.shards) if (!ids.contains(s)) ids.add(s);
                derivedShards = ids;
                kind = Kind.WATERMARK;
                break;
            }
            case "memento": {
                fields(p, List.of("buckets", "removed"), List.of(), what);
                long nb = intField(p.get("buckets"), "buckets", 1, Integer.MAX_VALUE);
                if (!(p.get("removed") instanceof List)) throw ShardhashException.type("removed must be a list");
                List<Object> rm = (List<Object>) p.get("removed");
                mementoN = (int) nb;
                replacer = new HashMap<>();
                int k = 0;
                for (Object x : rm) {
                    int b = (int) intField(x, "removed bucket", 0, nb - 1);
                    if (replacer.containsKey(b)) throw ShardhashException.value("bucket " + b + " removed twice");
                    replacer.put(b, (int) nb - k - 1);
                    k++;
                }
                if (rm.size() >= nb || nb - rm.size() != n) {
                    throw ShardhashException.value("buckets - removed must equal the number of shards");
                }
                bucketShard = new int[mementoN];
                int s = 0;
                for (int b = 0; b < mementoN; b++) bucketShard[b] = replacer.containsKey(b) ? -1 : s++;
                kind = Kind.MEMENTO;
                break;
            }
            case "multiprobe": {
                fields(p, List.of("probes"), List.of(), what);
                probes = (int) intField(p.get("probes"), "probes", 1, 64);
                long[][] toks = new long[n][];
                for (int i = 0; i < n; i++) toks[i] = new long[] {mix64(hasher.hash(shards.get(i))), i};
                Arrays.sort(toks, (x, y) -> Long.compareUnsigned(x[0], y[0]));
                tokens = new long[n];
                owners = new int[n];
                for (int i = 0; i < n; i++) {
                    if (i > 0 && toks[i][0] == toks[i - 1][0]) throw ShardhashException.value("two shards share a token");
                    tokens[i] = toks[i][0];
                    owners[i] = (int) toks[i][1];
                }
                kind = Kind.MULTIPROBE;
                break;
            }
            case "hot": {
                fields(p, List.of("base", "hot", "write", "bucket_seconds"), List.of(), what);
                base = new Router(p.get("base"));
                if (base.kind == Kind.RANGE || base.kind == Kind.WATERMARK || base.kind == Kind.HOT) {
                    throw ShardhashException.type("a hot-key router's base must be a hash router");
                }
                nested.put("base", base);
                Object baseHasher = ((Map<String, Object>) p.get("base")).get("hasher");
                if (!Json.canonical(doc.get("hasher")).equals(Json.canonical(baseHasher)) || keyPrefix != base.keyPrefix) {
                    throw ShardhashException.value("hot document: 'hasher'/'key_prefix' differ from the base router's");
                }
                Object write = p.get("write");
                if (!List.of("random", "round_robin", "time").contains(write)) {
                    throw ShardhashException.value("write must be random, round_robin or time");
                }
                Object bs = p.get("bucket_seconds");
                if ("time".equals(write)) {
                    double v = bs instanceof Json.Num ? ((Json.Num) bs).value
                            : bs instanceof BigInteger ? ((BigInteger) bs).doubleValue() : Double.NaN;
                    if (!(v >= 1e-6) || Double.isInfinite(v) || Double.isInfinite(253402300799.0 / v)) {
                        throw ShardhashException.value("write='time' needs bucket_seconds, a finite number >= 1e-06");
                    }
                } else if (bs != null) {
                    throw ShardhashException.value("bucket_seconds only applies to write='time'");
                }
                if (!(p.get("hot") instanceof List)) throw ShardhashException.value("hot must be a list of [key, fan_out] pairs");
                hot = new HashMap<>();
                for (Object x : (List<Object>) p.get("hot")) {
                    if (!(x instanceof List) || ((List<?>) x).size() != 2) {
                        throw ShardhashException.value("hot must be a list of [key, fan_out] pairs");
                    }
                    Object k = ((List<?>) x).get(0);
                    if (!(k instanceof BigInteger) && !(k instanceof String)) {
                        throw ShardhashException.type("hot keys must be int or str");
                    }
                    if (hot.containsKey(k)) throw ShardhashException.value("hot key " + k + " given twice");
                    hot.put(k, (int) intField(((List<?>) x).get(1), "fan_out", 2, 1024));
                }
                derivedShards = base.shards;
                kind = Kind.HOT;
                break;
            }
            default:
                throw ShardhashException.value("unknown router type \"" + type + "\"");
        }
    }

    /** Indexes the sorted tokens by their top bits (about two prefixes per token). */
    private void buildRingIndex() {
        int bits = 1;
        while ((1 << bits) < 2 * tokens.length && bits < 20) bits++;
        ringShift = 64 - bits;
        ringIdx = new int[(1 << bits) + 1];
        int j = 0;
        for (int p = 0; p <= (1 << bits); p++) {
            while (j < tokens.length && (p == (1 << bits) || (tokens[j] >>> ringShift) < p)) j++;
            ringIdx[p] = j;
        }
    }

    /** The SplitMix64 finaliser. */
    public static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** Jump consistent hash of a 64-bit hash over n buckets (Guava's Hashing.consistentHash). */
    public static int jump(long h, int n) {
        long b = -1;
        long j = 0;
        while (j < n) {
            b = j;
            h = h * 2862933555777941757L + 1;
            j = (long) ((b + 1) * (2147483648.0 / (double) ((h >>> 33) + 1)));
        }
        return (int) b;
    }

    private static int[] maglevTable(long[] ids, double[] rel, int m) {
        int n = ids.length;
        int[] pos = new int[n];
        int[] skip = new int[n];
        for (int i = 0; i < n; i++) {
            pos[i] = (int) Long.remainderUnsigned(mix64(ids[i] ^ 0x6f66667365743a31L), m);
            skip[i] = (int) Long.remainderUnsigned(mix64(ids[i] ^ 0x736b69703a312121L), m - 1) + 1;
        }
        double[] credit = new double[n];
        int[] table = new int[m];
        Arrays.fill(table, -1);
        int filled = 0;
        for (;;) {
            for (int i = 0; i < n; i++) {
                if (rel != null) {
                    credit[i] += rel[i];
                    if (credit[i] < 1.0) continue;
                    credit[i] -= 1.0;
                }
                int c = pos[i];
                while (table[c] >= 0) c = (int) (((long) c + skip[i]) % m);
                table[c] = i;
                pos[i] = (int) (((long) c + skip[i]) % m);
                if (++filled == m) return table;
            }
        }
    }

    private static int lowerBound(long[] a, long x) {
        int lo = 0;
        int hi = a.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(a[mid], x) < 0) lo = mid + 1;
            else hi = mid;
        }
        return lo;
    }

    private double score(long x, int i) {
        double u = (double) ((x >>> 11) | 1) / 9007199254740992.0;
        return -weights[i] / Math.log(u);
    }

    /** The shard index of a 64-bit hash (unsigned, in a long). */
    public int routeHash(long h) {
        switch (kind) {
            case JUMP:
                return jump(h, shards.size());
            case TABLE:
                return table[(int) Long.remainderUnsigned(h, table.length)];
            case RING: {
                int p = (int) (h >>> ringShift);
                int lo = ringIdx[p];
                int hi = ringIdx[p + 1];
                while (lo < hi) {
                    int mid = (lo + hi) >>> 1;
                    if (Long.compareUnsigned(tokens[mid], h) < 0) lo = mid + 1;
                    else hi = mid;
                }
                return owners[lo < tokens.length ? lo : 0];
            }
            case RENDEZVOUS: {
                int best = 0;
                long bestX = 0;
                double bestScore = 0;
                for (int i = 0; i < seeds.length; i++) {
                    long x = mix64(h ^ seeds[i]);
                    if (weights == null) {
                        if (i == 0 || Long.compareUnsigned(x, bestX) > 0) {
                            best = i;
                            bestX = x;
                        }
                    } else {
                        double s = score(x, i);
                        if (i == 0 || s > bestScore) {
                            best = i;
                            bestScore = s;
                        }
                    }
                }
                return best;
            }
            case HASH_RANGE: {
                int lo = 0;
                int hi = splits.length;
                while (lo < hi) {
                    int mid = (lo + hi) >>> 1;
                    if (Long.compareUnsigned(splits[mid], h) <= 0) lo = mid + 1;
                    else hi = mid;
                }
                return rangeOwners[lo];
            }
            case MEMENTO:
                return bucketShard[mementoBucket(h)];
            case MULTIPROBE: {
                int best = -1;
                long bestD = 0;
                for (int i = 0; i < probes; i++) {
                    long pr = mix64(h + (i + 1) * GOLDEN);
                    int j = lowerBound(tokens, pr);
                    if (j == tokens.length) j = 0;
                    long d = tokens[j] - pr;
                    int c = best < 0 ? -1 : Long.compareUnsigned(d, bestD);
                    if (c < 0 || (c == 0 && owners[j] < best)) {
                        best = owners[j];
                        bestD = d;
                    }
                }
                return best;
            }
            case DIRECTORY: {
                Integer o = overrides.get(h);
                return o != null ? o : base.routeHash(h);
            }
            case HOT:
                return base.routeHash(h);
            default:
                throw ShardhashException.type(type + " routers do not route hashes");
        }
    }

    private int mementoBucket(long h) {
        int b = jump(h, mementoN);
        int c = replacer.getOrDefault(b, -1);
        while (c >= 0) {
            long x = mix64((h ^ 0x6d656d656e746f31L) + b * GOLDEN);
            b = (int) Hashes.mulHigh(x, c);
            int nx = replacer.getOrDefault(b, -1);
            while (nx >= c) {
                b = nx;
                nx = replacer.getOrDefault(b, -1);
            }
            c = nx;
        }
        return b;
    }

    /** False for range and watermark routers (they place the raw key). */
    public boolean routesOnHash() {
        return kind != Kind.RANGE && kind != Kind.WATERMARK;
    }

    private static BigInteger toBig(Object key) {
        if (key instanceof BigInteger) return (BigInteger) key;
        if (key instanceof Long || key instanceof Integer || key instanceof Short || key instanceof Byte) {
            return BigInteger.valueOf(((Number) key).longValue());
        }
        return null;
    }

    /** The shard index of a key (see KeyCodec for the key types; a List is a compound key). */
    public int routeIndex(Object key) {
        if (keyPrefix > 0) {
            if (key instanceof List) {
                List<?> t = (List<?>) key;
                if (keyPrefix == 1) key = t.get(0);
                else if (t.size() > keyPrefix) key = t.subList(0, keyPrefix);
            } else if (keyPrefix > 1) {
                throw ShardhashException.type("key_prefix " + keyPrefix + " needs a tuple key");
            }
        }
        if (kind == Kind.RANGE) {
            Object k;
            if (keySplits.get(0) instanceof String) {
                if (!(key instanceof String)) throw ShardhashException.type("this range router's keys are strings");
                k = key;
            } else {
                k = toBig(key);
                if (k == null) throw ShardhashException.type("this range router's keys are integers");
            }
            int lo = 0;
            int hi = keySplits.size();
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (compareKeys(keySplits.get(mid), k) <= 0) lo = mid + 1;
                else hi = mid;
            }
            return rangeOwners[lo];
        }
        if (kind == Kind.WATERMARK) {
            BigInteger b = toBig(key);
            if (b == null) throw ShardhashException.type("watermark keys must be integers");
            if (b.compareTo(watermark) >= 0) return shards.indexOf(newRouter.route(key));
            return oldRouter.routeIndex(key);
        }
        if (kind == Kind.HOT) return base.routeIndex(key);
        return routeHash(hasher.hash(key));
    }

    /**
     * A hot-key router's reads: every {shard index, sub-key} holding rows of key, in sub-key order
     * (sub-key 0 is the key itself, sub-key i the string "key#i"); a cold key has only sub-key 0.
     */
    public List<int[]> routeRead(Object key) {
        if (kind != Kind.HOT) throw ShardhashException.type("routeRead is for hot-key routers");
        BigInteger b = toBig(key);
        Object id = b != null ? b : key instanceof String ? key : null;
        Integer n = id == null ? null : hot.get(id);
        List<int[]> out = new ArrayList<>();
        if (n == null) {
            out.add(new int[] {routeIndex(key), 0});
            return out;
        }
        for (int i = 0; i < n; i++) out.add(new int[] {base.routeIndex(i == 0 ? key : id + "#" + i), i});
        return out;
    }

    /** routeIndex for an integer key, without boxing it. */
    public int routeIndex(long key) {
        if (keyPrefix > 1 || kind == Kind.RANGE || kind == Kind.WATERMARK) return routeIndex((Object) key);
        return routeHash(hasher.hash(key));
    }

    /** route for an integer key, without boxing it. */
    public String route(long key) {
        return shards.get(routeIndex(key));
    }

    /** The shard id of a key. */
    public String route(Object key) {
        return shards.get(routeIndex(key));
    }

    private List<Integer> walk(long[] toks, int[] own, long h) {
        int n = shards.size();
        int j = lowerBound(toks, h);
        if (j == toks.length) j = 0;
        List<Integer> out = new ArrayList<>();
        Set<Integer> seen = new HashSet<>();
        for (int s = 0; s < toks.length && out.size() < n; s++) {
            int o = own[(j + s) % toks.length];
            if (seen.add(o)) out.add(o);
        }
        return out;
    }

    /** The preference order P(h) (docs/routers.md 2.17). */
    public List<Integer> preference(long h) {
        int n = shards.size();
        switch (kind) {
            case RING:
                return walk(tokens, owners, h);
            case HASH_RANGE: {
                long[] toks = new long[splits.length + 1];
                for (int i = 0; i < splits.length; i++) toks[i] = splits[i] - 1;
                toks[splits.length] = -1L;
                return walk(toks, rangeOwners, h);
            }
            case RENDEZVOUS: {
                long[] xs = new long[n];
                double[] sc = new double[n];
                List<Integer> idx = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    xs[i] = mix64(h ^ seeds[i]);
                    if (weights != null) sc[i] = score(xs[i], i);
                    idx.add(i);
                }
                idx.sort((a, b) -> {
                    int c = weights == null ? Long.compareUnsigned(xs[b], xs[a]) : Double.compare(sc[b], sc[a]);
                    return c != 0 ? c : Integer.compare(a, b);
                });
                return idx;
            }
            case MULTIPROBE: {
                long[] score = new long[tokens.length];
                for (int j = 0; j < tokens.length; j++) {
                    for (int i = 0; i < probes; i++) {
                        long d = tokens[j] - mix64(h + (i + 1) * GOLDEN);
                        if (i == 0 || Long.compareUnsigned(d, score[j]) < 0) score[j] = d;
                    }
                }
                List<Integer> idx = new ArrayList<>();
                for (int j = 0; j < tokens.length; j++) idx.add(j);
                idx.sort((a, b) -> {
                    int c = Long.compareUnsigned(score[a], score[b]);
                    return c != 0 ? c : Integer.compare(owners[a], owners[b]);
                });
                List<Integer> out = new ArrayList<>();
                for (int j : idx) out.add(owners[j]);
                return out;
            }
            case JUMP:
            case TABLE:
            case MEMENTO: {
                List<Integer> out = new ArrayList<>();
                boolean[] seen = new boolean[n];
                for (int a = 0; a < 8 * n && out.size() < n; a++) {
                    long x = a == 0 ? h : mix64((h ^ REHASH_SALT) + a * GOLDEN);
                    int s = routeHash(x);
                    if (!seen[s]) {
                        seen[s] = true;
                        out.add(s);
                    }
                }
                for (int s = 0; s < n; s++) if (!seen[s]) out.add(s);
                return out;
            }
            default:
                throw ShardhashException.type(type + " routers have no replica lists");
        }
    }

    /** The n replicas (shard indices) of a hash; zones (shard id -> zone) overrides the router's own, null keeps them. */
    public int[] replicasHash(long h, int n, Map<String, String> zoneMap) {
        if (n < 1 || n > shards.size()) throw ShardhashException.value("n must be in 1.." + shards.size());
        List<Integer> pref = preference(h);
        Map<String, String> z = zoneMap != null ? zoneMap : zones;
        List<Integer> out = new ArrayList<>();
        if (z == null) {
            out = pref.subList(0, n);
        } else {
            Set<String> all = new HashSet<>();
            for (String s : shards) all.add(z.get(s));
            Set<String> used = new HashSet<>();
            List<Integer> skipped = new ArrayList<>();
            for (int s : pref) {
                if (out.size() == n) break;
                String zone = z.get(shards.get(s));
                if (used.size() == all.size()) {
                    out.add(s);
                } else if (used.contains(zone)) {
                    skipped.add(s);
                } else {
                    used.add(zone);
                    out.add(s);
                    if (used.size() == all.size()) {
                        for (int k : skipped) if (out.size() < n) out.add(k);
                        skipped.clear();
                    }
                }
            }
            for (int k : skipped) if (out.size() < n) out.add(k);
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Bounded loads (unit sizes): one batch of hashes placed in order under cap = ceil(T * f / (100 * N)). */
    public int[] assignHashes(long[] hashes) {
        if (!type.equals("bounded")) throw ShardhashException.type("assign is for bounded routers");
        long n = shards.size();
        long cap = (hashes.length * balanceFactor + 100 * n - 1) / (100 * n);
        long[] load = new long[(int) n];
        int[] out = new int[hashes.length];
        for (int k = 0; k < hashes.length; k++) {
            int j = lowerBound(tokens, hashes[k]);
            if (j == tokens.length) j = 0;
            out[k] = -1;
            for (int s = 0; s < tokens.length; s++) {
                int o = owners[(j + s) % tokens.length];
                if (load[o] + 1 <= cap) {
                    load[o]++;
                    out[k] = o;
                    break;
                }
            }
        }
        return out;
    }
}
