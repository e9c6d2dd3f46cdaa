package io.sanlens.breakdown;

/**
 * What the incident detector keeps per contributor, component and path (one of a Way's four, Flink-managed state
 * of DetectIncidents): the window being gathered, the recent normal windows the baseline is learnt from, and the
 * incident in progress. Public fields and a default constructor, so Flink stores it as a structured type.
 */
public class Track {
    // the window being gathered: its last row's part times its I/Os, and its I/Os
    public Long window;
    public double sum;
    public long ios;
    public double discards;
    public String site = "";

    // the last normal windows' values not yet in the history (a map view of the state, read only when they go
    // in: the Track is read and written with every row, and in RocksDB a whole hour's ring with it was most of
    // the job's time), the history's size and next slot, and the baseline of its last update (null: too few)
    public double[] recent = new double[0];
    public int historyLength;
    public int historyNext;
    public Double baseline;

    // the run of windows above the baseline, and the incident once the run is long enough
    public Long runStart;
    public int runWindows;
    public double runBaseline;
    public double excessSum;
    public long excessIos;
    public double peak;
    public double runDiscards;
    public boolean open;
    public Long lastAbove;
    public int normalWindows;
}
