package io.sanlens.normalize;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The last sample of every series of one record series (one measurement of one entity: the series one record
 * carries), the normalize job's state: one entry per record series, so a record costs one state read and one
 * write, not two per sample. A series is its metric and bucket; a record carries its fields in the catalog's
 * order, so the i-th sample of a record is looked for at i first.
 *
 * <p>Kept in the state as bytes (`bytes`, `of`): the heap state backend copies every entry at every checkpoint,
 * and as a structured type (metric names as strings) that copy encoded each name again: at 1,000 arrays a 400 MB
 * snapshot every 2 s, a third of the job's CPU. A metric is kept as its name's hash, which the catalog checks is
 * unique within each measurement (Catalog). The series of a record series mostly share their last time, and
 * only ratios have a denominator: the bytes hold one time for all, and a series' own time or denominator only
 * when it has one (15 bytes a histogram bucket, half of a fixed layout, and of every snapshot's size).
 *
 * <p>A record series is kept under a 64-bit hash of its name (`key`), not the name: the heap state backend
 * encoded every name to UTF-8 again at every checkpoint (37 % of the checkpoints' CPU at 1,000 arrays). Its
 * bytes start with a second hash of the name (`check`): should two record series ever share a key, each finds
 * the other's samples not its own and starts afresh (a baseline), instead of pairing with them.
 */
public class LastSamples {
    private static final int HEADER_BYTES = 4 + 8; // the check, the time most series share
    private static final int SERIES_BYTES = 4 + 2 + 1 + 8; // metric, bucket, what follows, num
    private static final byte OWN_TS = 1, DEN = 2; // a series' own time (8 bytes), its denominator (8 bytes)

    private int[] metrics; // the metric name's hashCode
    private short[] buckets; // 0 for none: a bucket is stored + 1, so -1 (a plain series) fits
    private long[] tsMs;
    private double[] nums;
    private double[] dens; // NaN: the series has no denominator
    private int n;

    public LastSamples() {
        this(0);
    }

    LastSamples(int capacity) {
        metrics = new int[capacity];
        buckets = new short[capacity];
        tsMs = new long[capacity];
        nums = new double[capacity];
        dens = new double[capacity];
    }

    /** The state's key of the record series `series` (its measurement and tags): FNV-1a, 64 bits. */
    public static long key(String series) {
        long h = 0xcbf29ce484222325L;
        for (int i = 0; i < series.length(); i++) {
            h = (h ^ series.charAt(i)) * 0x100000001b3L;
        }
        return h;
    }

    /** The second hash kept in the bytes, which a record series' own samples match. */
    public static int check(String series) {
        return series.hashCode();
    }

    /** The record series kept as `bytes` wrote it for `check`; an empty one for null or another check. */
    public static LastSamples of(byte[] bytes, int check, int capacity) {
        if (bytes == null || bytes.length < HEADER_BYTES) return new LastSamples(capacity);
        ByteBuffer b = ByteBuffer.wrap(bytes);
        if (b.getInt() != check) return new LastSamples(capacity);
        long shared = b.getLong();
        LastSamples s = new LastSamples(Math.max(capacity, (bytes.length - HEADER_BYTES) / SERIES_BYTES));
        while (b.hasRemaining()) {
            int j = s.n++;
            s.metrics[j] = b.getInt();
            s.buckets[j] = b.getShort();
            byte follows = b.get();
            s.nums[j] = b.getDouble();
            s.tsMs[j] = (follows & OWN_TS) != 0 ? b.getLong() : shared;
            s.dens[j] = (follows & DEN) != 0 ? b.getDouble() : Double.NaN;
        }
        return s;
    }

    public byte[] bytes(int check) {
        long shared = n == 0 ? 0 : tsMs[0];
        int size = HEADER_BYTES + n * SERIES_BYTES;
        for (int j = 0; j < n; j++) {
            size += (tsMs[j] != shared ? 8 : 0) + (Double.isNaN(dens[j]) ? 0 : 8);
        }
        ByteBuffer b = ByteBuffer.allocate(size).putInt(check).putLong(shared);
        for (int j = 0; j < n; j++) {
            boolean ownTs = tsMs[j] != shared, den = !Double.isNaN(dens[j]);
            b.putInt(metrics[j]).putShort(buckets[j]).put((byte) ((ownTs ? OWN_TS : 0) | (den ? DEN : 0))).putDouble(nums[j]);
            if (ownTs) b.putLong(tsMs[j]);
            if (den) b.putDouble(dens[j]);
        }
        return b.array();
    }

    /** Where the series of `s`, the i-th sample of its record, is kept: its index, or -1 for a new series. */
    int indexOf(Sample s, int i) {
        int metric = s.metric.hashCode();
        short bucket = (short) (s.bucket + 1);
        if (i < n && metrics[i] == metric && buckets[i] == bucket) return i;
        for (int j = 0; j < n; j++) {
            if (metrics[j] == metric && buckets[j] == bucket) return j;
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

    /** `s` at `ts` becomes its series' last sample: at index j, or for -1 at a new index. */
    void set(int j, Sample s, long ts) {
        if (j < 0) j = add();
        metrics[j] = s.metric.hashCode();
        buckets[j] = (short) (s.bucket + 1);
        tsMs[j] = ts;
        nums[j] = s.num;
        dens[j] = s.den == null ? Double.NaN : s.den;
    }

    private int add() {
        if (n == metrics.length) {
            int size = Math.max(4, n * 2);
            metrics = Arrays.copyOf(metrics, size);
            buckets = Arrays.copyOf(buckets, size);
            tsMs = Arrays.copyOf(tsMs, size);
            nums = Arrays.copyOf(nums, size);
            dens = Arrays.copyOf(dens, size);
        }
        return n++;
    }
}
