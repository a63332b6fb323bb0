package io.shardhash;

/** A refused input, of one of the protocol's three kinds ("TypeError", "ValueError", "OverflowError"). */
public final class ShardhashException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String kind;

    public ShardhashException(String kind, String message) {
        super(kind + ": " + message);
        this.kind = kind;
    }

    /** "TypeError", "ValueError" or "OverflowError". */
    public String kind() {
        return kind;
    }

    static ShardhashException type(String m) {
        return new ShardhashException("TypeError", m);
    }

    static ShardhashException value(String m) {
        return new ShardhashException("ValueError", m);
    }

    static ShardhashException overflow(String m) {
        return new ShardhashException("OverflowError", m);
    }
}
