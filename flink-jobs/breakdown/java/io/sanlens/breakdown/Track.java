package io.sanlens.breakdown;

/**
 * What the incident detector keeps per contributor, component and path (Flink-managed state of DetectIncidents):
 * the window being gathered, the recent normal windows the baseline is learnt from, and the incident in
 * progress. Public fields and a default constructor, so Flink stores it as a structured type.
 */
public class Track {
    // the window being gathered: its last row's part times its I/Os, and its I/Os
    public Long window;
    public double sum;
    public long ios;
    public double discards;
    public String site = "";

    // the last normal windows' values (a ring), the baseline's source
    public double[] history = new double[0];
    public int historyNext;

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
