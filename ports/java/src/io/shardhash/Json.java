package io.shardhash;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON reader and the canonical writer of the fingerprint.
 * Values: null, Boolean, BigInteger (integers, exact), Json.Num (numbers with
 * a fraction or an exponent), String, List, Map (insertion order).
 */
public final class Json {
    private Json() {}

    /** A JSON number written with a fraction or an exponent. */
    public static final class Num {
        public final double value;

        public Num(double value) {
            this.value = value;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Num && ((Num) o).value == value;
        }

        @Override
        public int hashCode() {
            return Double.hashCode(value);
        }
    }

    public static Object parse(String s) {
        Reader r = new Reader(s);
        Object v = r.value(0);
        r.ws();
        if (r.i != s.length()) throw r.fail("trailing data");
        return v;
    }

    private static final class Reader {
        final String s;
        int i;

        Reader(String s) {
            this.s = s;
        }

        ShardhashException fail(String m) {
            return ShardhashException.value("invalid JSON at offset " + i + ": " + m);
        }

        void ws() {
            while (i < s.length() && " \t\n\r".indexOf(s.charAt(i)) >= 0) i++;
        }

        char peek() {
            if (i >= s.length()) throw fail("unexpected end");
            return s.charAt(i);
        }

        Object value(int depth) {
            ws();
            char c = peek();
            if (c == '[' || c == '{') {
                if (depth >= 64) throw fail("nested deeper than 64 levels");
                i++;
                ws();
                if (c == '[') {
                    List<Object> out = new ArrayList<>();
                    if (peek() == ']') {
                        i++;
                        return out;
                    }
                    for (;;) {
                        out.add(value(depth + 1));
                        ws();
                        char d = peek();
                        i++;
                        if (d == ']') return out;
                        if (d != ',') throw fail("expected , or ]");
                    }
                }
                Map<String, Object> out = new LinkedHashMap<>();
                if (peek() == '}') {
                    i++;
                    return out;
                }
                for (;;) {
                    ws();
                    if (peek() != '"') throw fail("expected a key");
                    String k = string();
                    ws();
                    if (peek() != ':') throw fail("expected :");
                    i++;
                    out.put(k, value(depth + 1));
                    ws();
                    char d = peek();
                    i++;
                    if (d == '}') return out;
                    if (d != ',') throw fail("expected , or }");
                }
            }
            if (c == '"') return string();
            if (s.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            return number();
        }

        Object number() {
            int start = i;
            boolean isFloat = false;
            if (i < s.length() && s.charAt(i) == '-') i++;
            int d0 = i;
            while (i < s.length() && Character.isDigit(s.charAt(i)) && s.charAt(i) < 128) i++;
            if (i == d0 || (s.charAt(d0) == '0' && i - d0 > 1)) throw fail("bad number");
            if (i < s.length() && s.charAt(i) == '.') {
                isFloat = true;
                i++;
                int f0 = i;
                while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') i++;
                if (i == f0) throw fail("bad number");
            }
            if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
                isFloat = true;
                i++;
                if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
                int e0 = i;
                while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') i++;
                if (i == e0) throw fail("bad number");
            }
            String t = s.substring(start, i);
            return isFloat ? new Num(Double.parseDouble(t)) : new BigInteger(t);
        }

        String string() {
            i++;
            StringBuilder b = new StringBuilder();
            for (;;) {
                if (i >= s.length()) throw fail("unterminated string");
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c == '\\') {
                    char e = peek();
                    i++;
                    switch (e) {
                        case '"': case '\\': case '/': b.append(e); break;
                        case 'b': b.append('\b'); break;
                        case 'f': b.append('\f'); break;
                        case 'n': b.append('\n'); break;
                        case 'r': b.append('\r'); break;
                        case 't': b.append('\t'); break;
                        case 'u':
                            if (i + 4 > s.length()) throw fail("bad \\u escape");
                            try {
                                b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                            } catch (NumberFormatException ex) {
                                throw fail("bad \\u escape");
                            }
                            i += 4;
                            break;
                        default: throw fail("bad escape");
                    }
                } else {
                    if (c < 0x20) throw fail("control character in string");
                    b.append(c);
                }
            }
        }
    }

    /** Python's repr of a float. */
    public static String pyFloatRepr(double x) {
        if (Double.isNaN(x) || Double.isInfinite(x)) {
            throw ShardhashException.value("NaN and infinities are not allowed in documents");
        }
        if (x == 0) return (1 / x < 0) ? "-0.0" : "0.0";
        String sign = x < 0 ? "-" : "";
        double a = Math.abs(x);
        BigDecimal exact = new BigDecimal(a);
        BigDecimal bd = null;
        for (int p = 1; p <= 17; p++) {
            bd = exact.round(new MathContext(p, RoundingMode.HALF_EVEN));
            if (bd.doubleValue() == a) break;
        }
        bd = bd.stripTrailingZeros();
        String digits = bd.unscaledValue().toString();
        int decpt = digits.length() - bd.scale(); // value = 0.digits * 10^decpt
        if (decpt > 16 || decpt < -3) {
            int e = decpt - 1;
            String es = String.valueOf(Math.abs(e));
            if (es.length() < 2) es = "0" + es;
            return sign + digits.charAt(0) + (digits.length() > 1 ? "." + digits.substring(1) : "")
                    + "e" + (e < 0 ? "-" : "+") + es;
        }
        if (decpt <= 0) return sign + "0." + "0".repeat(-decpt) + digits;
        if (decpt >= digits.length()) return sign + digits + "0".repeat(decpt - digits.length()) + ".0";
        return sign + digits.substring(0, decpt) + "." + digits.substring(decpt);
    }

    static final Comparator<String> CODE_POINT_ORDER = (a, b) -> {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int x = a.codePointAt(i);
            int y = b.codePointAt(j);
            if (x != y) return Integer.compare(x, y);
            i += Character.charCount(x);
            j += Character.charCount(y);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    };

    static boolean wellFormed(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                } else {
                    return false;
                }
            } else if (Character.isLowSurrogate(c)) {
                return false;
            }
        }
        return true;
    }

    private static void quote(StringBuilder b, String s) {
        if (!wellFormed(s)) throw ShardhashException.value("the document holds a lone surrogate");
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                case '\b': b.append("\\b"); break;
                case '\f': b.append("\\f"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        b.append('"');
    }

    /** Canonical JSON: keys sorted by code point, no whitespace, non-ASCII as itself. */
    public static String canonical(Object v) {
        StringBuilder b = new StringBuilder();
        write(b, v);
        return b.toString();
    }

    @SuppressWarnings("unchecked")
    private static void write(StringBuilder b, Object v) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof Boolean) {
            b.append(((Boolean) v) ? "true" : "false");
        } else if (v instanceof BigInteger) {
            b.append(v.toString());
        } else if (v instanceof Num) {
            b.append(pyFloatRepr(((Num) v).value));
        } else if (v instanceof String) {
            quote(b, (String) v);
        } else if (v instanceof List) {
            b.append('[');
            boolean first = true;
            for (Object e : (List<Object>) v) {
                if (!first) b.append(',');
                first = false;
                write(b, e);
            }
            b.append(']');
        } else if (v instanceof Map) {
            Map<String, Object> m = (Map<String, Object>) v;
            List<String> keys = new ArrayList<>(m.keySet());
            keys.sort(CODE_POINT_ORDER);
            b.append('{');
            boolean first = true;
            for (String k : keys) {
                if (!first) b.append(',');
                first = false;
                quote(b, k);
                b.append(':');
                write(b, m.get(k));
            }
            b.append('}');
        } else {
            throw ShardhashException.type("cannot write " + v.getClass().getSimpleName() + " as JSON");
        }
    }

    /** Plain JSON output (for result lines); integers and strings as given. */
    public static String dump(Object v) {
        StringBuilder b = new StringBuilder();
        dumpTo(b, v);
        return b.toString();
    }

    @SuppressWarnings("unchecked")
    private static void dumpTo(StringBuilder b, Object v) {
        if (v instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) {
                if (!first) b.append(',');
                first = false;
                quoteAscii(b, e.getKey());
                b.append(':');
                dumpTo(b, e.getValue());
            }
            b.append('}');
        } else if (v instanceof List) {
            b.append('[');
            boolean first = true;
            for (Object e : (List<Object>) v) {
                if (!first) b.append(',');
                first = false;
                dumpTo(b, e);
            }
            b.append(']');
        } else if (v instanceof String) {
            quoteAscii(b, (String) v);
        } else if (v instanceof int[]) {
            int[] a = (int[]) v;
            b.append('[');
            for (int k = 0; k < a.length; k++) {
                if (k > 0) b.append(',');
                b.append(a[k]);
            }
            b.append(']');
        } else {
            b.append(v == null ? "null" : v.toString());
        }
    }

    private static void quoteAscii(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        b.append('"');
    }
}
