package io.sanlens.burnrates;

import org.apache.flink.types.Row;

/**
 * A volume's histogram of one window and direction, held in PairVolumeWindows' state for the path windows that
 * come after it: its buckets and their I/Os, and when it came (processing time, ms). Public fields and a default
 * constructor, so Flink stores it as a structured type.
 */
public class WaitingHistogram {
    public Integer[] buckets;
    public Long[] ios;
    public long arrivedMs;

    static WaitingHistogram of(Row row, long arrivedMs) {
        WaitingHistogram h = new WaitingHistogram();
        h.buckets = row.getFieldAs("buckets");
        h.ios = row.getFieldAs("ios");
        h.arrivedMs = arrivedMs;
        return h;
    }
}
