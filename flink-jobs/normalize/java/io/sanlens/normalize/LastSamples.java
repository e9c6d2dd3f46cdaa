package io.sanlens.normalize;

import java.util.Arrays;

/**
 * The last sample of every series of one record series (one measurement of one entity: the series one record
 * carries), the normalize job's state: one entry per record series, so a record costs one state read and one
 * write, not two per sample. A series is its metric and bucket; a record carries its fields in the catalog's
 * order, so the i-th sample of a record is looked for at i first.
 */
public class LastSamples {
    public String[] metrics;
    public int[] buckets;
    public long[] tsMs;
    public double[] nums;
    public double[] dens; // NaN: the series has no denominator

    public LastSamples() {
        this(0);
    }

    LastSamples(int n) {
        metrics = new String[n];
        buckets = new int[n];
        tsMs = new long[n];
        nums = new double[n];
        dens = new double[n];
    }

    /** Where the series of `s`, the i-th sample of its record, is kept: its index, or -1 for a new series. */
    int indexOf(Sample s, int i) {
        if (i < metrics.length && metrics[i] != null && buckets[i] == s.bucket && metrics[i].equals(s.metric)) return i;
        for (int j = 0; j < metrics.length; j++) {
            if (metrics[j] != null && buckets[j] == s.bucket && metrics[j].equals(s.metric)) return j;
        }
        return -1;
    }

    /** The previous sample at index j, null for -1. */
    Pairing.Previous previous(int j) {
        if (j < 0) return null;
        Pairing.Previous p = new Pairing.Previous();
        p.tsMs = tsMs[j];
        p.num = nums[j];
        p.den = Double.isNaN(dens[j]) ? null : dens[j];
        return p;
    }

    /** `s` at `ts` becomes its series' last sample: at index j, or for -1 at the first free or a new index. */
    void set(int j, Sample s, long ts) {
        if (j < 0) j = free();
        metrics[j] = s.metric;
        buckets[j] = s.bucket;
        tsMs[j] = ts;
        nums[j] = s.num;
        dens[j] = s.den == null ? Double.NaN : s.den;
    }

    private int free() {
        for (int j = 0; j < metrics.length; j++) if (metrics[j] == null) return j;
        int n = metrics.length;
        metrics = Arrays.copyOf(metrics, n + 1);
        buckets = Arrays.copyOf(buckets, n + 1);
        tsMs = Arrays.copyOf(tsMs, n + 1);
        nums = Arrays.copyOf(nums, n + 1);
        dens = Arrays.copyOf(dens, n + 1);
        return n;
    }
}
