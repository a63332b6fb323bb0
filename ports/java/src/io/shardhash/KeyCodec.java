package io.shardhash;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.text.Normalizer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * The key codec (docs/protocol.md section 2). Keys: Long, Integer, Short, Byte, BigInteger (in
 * [-2^63, 2^64-1]), String, byte[], UUID, and List (a compound key). Booleans, floating-point
 * values and anything else are a TypeError.
 */
public final class KeyCodec {
    private static final List<String> FIELDS = List.of("format", "int_encoding", "normalization", "casefold", "strip");
    private static final BigInteger MIN = BigInteger.ONE.shiftLeft(63).negate();
    private static final BigInteger MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);
    private static final Map<Integer, String> FOLD = new HashMap<>();
    private static final Set<Integer> WHITESPACE = new HashSet<>();

    static {
        for (String e : CaseFoldTable.DATA.split(";")) {
            int colon = e.indexOf(':');
            StringBuilder b = new StringBuilder();
            for (String x : e.substring(colon + 1).split(" ")) b.appendCodePoint(Integer.parseInt(x, 16));
            FOLD.put(Integer.parseInt(e.substring(0, colon), 16), b.toString());
        }
        for (int c : CaseFoldTable.WHITESPACE) WHITESPACE.add(c);
    }

    final boolean decimal;
    final Normalizer.Form normalization;
    final boolean casefold;
    final boolean strip;

    private KeyCodec(boolean decimal, Normalizer.Form normalization, boolean casefold, boolean strip) {
        this.decimal = decimal;
        this.normalization = normalization;
        this.casefold = casefold;
        this.strip = strip;
    }

    /** From a shardhash.codec/1 document (as Json.parse reads it). */
    public static KeyCodec fromDocument(Object v) {
        Map<String, Object> doc = Router.fields(v, FIELDS, List.of(), "codec document");
        if (!"shardhash.codec/1".equals(doc.get("format"))) {
            throw ShardhashException.value("codec format must be \"shardhash.codec/1\"");
        }
        Object ie = doc.get("int_encoding");
        if (!"le64".equals(ie) && !"decimal".equals(ie)) throw ShardhashException.value("bad int_encoding");
        Object nf = doc.get("normalization");
        Normalizer.Form form = null;
        if (nf != null) {
            if (!(nf instanceof String) || !Arrays.asList("NFC", "NFD", "NFKC", "NFKD").contains(nf)) {
                throw ShardhashException.value("bad normalization");
            }
            form = Normalizer.Form.valueOf((String) nf);
        }
        if (!(doc.get("casefold") instanceof Boolean)) throw ShardhashException.type("casefold must be a boolean");
        if (!(doc.get("strip") instanceof Boolean)) throw ShardhashException.type("strip must be a boolean");
        return new KeyCodec("decimal".equals(ie), form, (Boolean) doc.get("casefold"), (Boolean) doc.get("strip"));
    }

    private static String pyStrip(String s) {
        int a = 0;
        int b = s.length();
        while (a < b && WHITESPACE.contains(s.codePointAt(a))) a += Character.charCount(s.codePointAt(a));
        while (b > a && WHITESPACE.contains(s.codePointBefore(b))) b -= Character.charCount(s.codePointBefore(b));
        return s.substring(a, b);
    }

    private static String casefold(String s) {
        StringBuilder b = new StringBuilder(s.length());
        s.codePoints().forEach(c -> {
            String f = FOLD.get(c);
            if (f == null) b.appendCodePoint(c);
            else b.append(f);
        });
        return b.toString();
    }

    byte[] encodeStr(String s) {
        if (!Json.wellFormed(s)) throw ShardhashException.value("string key is not valid UTF-8 (a lone surrogate)");
        if (strip) s = pyStrip(s);
        if (normalization != null) s = Normalizer.normalize(s, normalization);
        if (casefold) {
            s = casefold(s);
            if (normalization != null) s = Normalizer.normalize(s, normalization);
        }
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private byte[] encodeLong(long v, boolean unsigned) {
        if (decimal) {
            String t = unsigned ? Long.toUnsignedString(v) : Long.toString(v);
            return t.getBytes(StandardCharsets.US_ASCII);
        }
        byte[] out = new byte[8];
        for (int k = 0; k < 8; k++) out[k] = (byte) (v >>> (8 * k));
        return out;
    }

    /** The bytes hashed for a key. */
    public byte[] encode(Object key) {
        if (key instanceof String) return encodeStr((String) key);
        if (key instanceof byte[]) return (byte[]) key;
        if (key instanceof Boolean) throw ShardhashException.type("booleans are not keys");
        if (key instanceof Long || key instanceof Integer || key instanceof Short || key instanceof Byte) {
            return encodeLong(((Number) key).longValue(), false);
        }
        if (key instanceof BigInteger) {
            BigInteger b = (BigInteger) key;
            if (b.compareTo(MIN) < 0 || b.compareTo(MAX) > 0) {
                throw ShardhashException.overflow("integer key " + b + " is outside [-2**63, 2**64-1]");
            }
            return encodeLong(b.longValue(), b.signum() >= 0);
        }
        if (key instanceof UUID) {
            UUID u = (UUID) key;
            byte[] out = new byte[16];
            for (int k = 0; k < 8; k++) {
                out[k] = (byte) (u.getMostSignificantBits() >>> (56 - 8 * k));
                out[8 + k] = (byte) (u.getLeastSignificantBits() >>> (56 - 8 * k));
            }
            return out;
        }
        if (key instanceof List) {
            List<?> parts = (List<?>) key;
            if (parts.isEmpty()) throw ShardhashException.value("the empty tuple is not a key");
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (Object part : parts) {
                byte[] b = encode(part);
                int n = b.length;
                out.write(n);
                out.write(n >>> 8);
                out.write(n >>> 16);
                out.write(n >>> 24);
                out.write(b, 0, n);
            }
            return out.toByteArray();
        }
        throw ShardhashException.type("not a key: " + key);
    }
}
