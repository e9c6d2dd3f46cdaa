package io.sanlens.burnrates;

import org.apache.flink.types.Row;

/**
 * A path window waiting in PairVolumeWindows' state, for its path's labels or for its volume's histogram of the
 * same window and direction: the window, the path, what the host measured beyond the array's service time, the
 * SLOs of its direction it belongs to (their indexes in the job's host-side SLOs, comma-separated; null until its
 * labels are in), and when its wait began (processing time, ms). Public fields and a default constructor, so
 * Flink stores it as a structured type.
 */
public class WaitingPathWindow {
    public long windowMs;
    public String direction;
    public String host;
    public String disk;
    public Double beyondArrayUs;
    public String slos;
    public long arrivedMs;

    static WaitingPathWindow of(Row row, long windowMs, String direction, long arrivedMs) {
        WaitingPathWindow p = new WaitingPathWindow();
        p.windowMs = windowMs;
        p.direction = direction;
        p.host = row.getFieldAs("host");
        p.disk = row.getFieldAs("disk");
        p.beyondArrayUs = row.getFieldAs("beyond_array_us");
        p.arrivedMs = arrivedMs;
        return p;
    }
}
