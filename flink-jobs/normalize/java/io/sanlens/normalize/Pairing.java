package io.sanlens.normalize;

/**
 * The verdict on a sample against the previous sample of its series (one metric of one entity, one
 * bucket), in arrival order: out with its canonical value, or dropped with the reason. A gauge is its
 * own value; a counter becomes a rate, a ratio a per-I/O value, a histogram bucket a delta; one that would not be
 * a finite number is dropped.
 */
public final class Pairing {
    public static final String OUT = "";

    private Pairing() {}

    /** A series' last sample, kept per series in the job's state. */
    public static class Previous {
        public long tsMs;
        public double num;
        public Double den;

        public Previous() {}

        public Previous(long tsMs, Sample s) {
            this.tsMs = tsMs;
            this.num = s.num;
            this.den = s.den;
        }
    }

    /** Why `s` at `tsMs` is dropped, or OUT: `prev` is its series' previous sample, null for the first. */
    public static String reason(Sample s, long tsMs, Previous prev) {
        if (prev != null && tsMs == prev.tsMs) return "duplicate";
        if (prev != null && tsMs < prev.tsMs) return "out of order";
        if (s.kind.equals("gauge")) return OUT;
        if (prev == null) return "baseline: first sample of a cumulative series";
        if (s.num < prev.num || (s.den != null && prev.den != null && s.den < prev.den)) return "counter reset";
        if (s.kind.equals("ratio") && s.den != null && s.den.equals(prev.den)) return "no I/O in interval";
        // most of a histogram's buckets count nothing in an interval (3 in 4 in a backfill of 200 arrays):
        // a zero delta adds nothing to any histogram, and as a row it cost every job and table after this one
        if (s.kind.equals("histogram") && s.num == prev.num) return "no I/O in bucket";
        // a stall over a count that moved by next to nothing (5e-324 reads: a broken source) overflows a double
        if (!Double.isFinite(value(s, tsMs, prev))) return "non-finite value";
        return OUT;
    }

    /** The canonical value of a sample whose reason is OUT. */
    public static double value(Sample s, long tsMs, Previous prev) {
        switch (s.kind) {
            case "gauge":
                return s.num;
            case "counter":
                return (s.num - prev.num) * 1000.0 / (tsMs - prev.tsMs);
            case "ratio":
                return (s.num - prev.num) / (s.den - prev.den);
            default:
                return s.num - prev.num;
        }
    }
}
