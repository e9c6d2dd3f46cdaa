package io.sanlens.burnrates;

import org.apache.flink.types.Row;

/**
 * A path window of one SLO waiting in PairVolumeWindows' state for its volume's histogram of the same window and
 * direction: the SLO (its index in the job's host-side SLOs), the path, what the host measured beyond the array's
 * service time, and when it came (processing time, ms). Public fields and a default constructor, so Flink stores
 * it as a structured type.
 */
public class WaitingPathWindow {
    public Integer sloIndex;
    public String host;
    public String disk;
    public Double beyondArrayUs;
    public long arrivedMs;

    static WaitingPathWindow of(Row row, long arrivedMs) {
        WaitingPathWindow p = new WaitingPathWindow();
        p.sloIndex = row.getFieldAs("slo_index");
        p.host = row.getFieldAs("host");
        p.disk = row.getFieldAs("disk");
        p.beyondArrayUs = row.getFieldAs("beyond_array_us");
        p.arrivedMs = arrivedMs;
        return p;
    }
}
