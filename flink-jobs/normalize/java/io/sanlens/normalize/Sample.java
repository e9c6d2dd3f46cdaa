package io.sanlens.normalize;

/**
 * One catalogued field of a record, in canonical units, before its series' previous sample judged it.
 * A ratio (a stall time per I/O) carries its denominator; a cumulative series is turned into a rate
 * or a delta against its previous sample (Pairing).
 */
public final class Sample {
    public final String metric, kind, unit;
    public final int bucket; // the histogram bucket, -1 for a plain series
    public final double num;
    public final Double den; // ratios only

    public Sample(String metric, String kind, String unit, int bucket, double num, Double den) {
        this.metric = metric;
        this.kind = kind;
        this.unit = unit;
        this.bucket = bucket;
        this.num = num;
        this.den = den;
    }
}
