package io.sanlens.tiering;

/**
 * What the episode detector keeps per hybrid volume (Flink-managed state of DetectEpisodes): the window being
 * gathered, the baseline's recent shares, the two CUSUM sums, and the episode in progress. Public fields and a
 * default constructor, so Flink stores it as a structured type.
 */
public class Tiers {
    // the window being gathered: one sample of each metric (the last one wins if re-delivered)
    public Long window;
    public Double tier0Bytes;
    public Double tier1Bytes;
    public double movesUp; // pages/s in the window
    public double movesDown;
    public String site = "";

    // the baseline: the last shares outside any change (a ring), and the windows of a CUSUM run not yet judged
    public double[] history = new double[0];
    public int historyNext;
    public double[] pending = new double[0];
    public Long lastBaselineWindow; // the last window whose share belonged to the baseline

    // the two one-sided CUSUM sums, and where their runs began
    public double up;
    public double down;
    public Long runSince; // the last baseline window before the current run (the change point's estimate)
    public double runMovesUp; // pages moved during the run
    public double runMovesDown;

    // the episode in progress
    public boolean inEpisode;
    public boolean confirmed;
    public String direction;
    public long startedAt;
    public long detectedAt;
    public double before;
    public double noise;
    public double[] recent = new double[0];
    public int windows;
    public double movedUp;
    public double movedDown;
    public Long lastSettled; // the window the last confirmed episode settled in

    /** Every field as a new Tiers has it: the volume's span is played again, and nothing seen before counts. */
    void startAfresh() {
        Tiers fresh = new Tiers();
        window = fresh.window;
        tier0Bytes = fresh.tier0Bytes;
        tier1Bytes = fresh.tier1Bytes;
        movesUp = fresh.movesUp;
        movesDown = fresh.movesDown;
        site = fresh.site;
        history = fresh.history;
        historyNext = fresh.historyNext;
        pending = fresh.pending;
        lastBaselineWindow = fresh.lastBaselineWindow;
        up = fresh.up;
        down = fresh.down;
        runSince = fresh.runSince;
        runMovesUp = fresh.runMovesUp;
        runMovesDown = fresh.runMovesDown;
        inEpisode = fresh.inEpisode;
        confirmed = fresh.confirmed;
        direction = fresh.direction;
        startedAt = fresh.startedAt;
        detectedAt = fresh.detectedAt;
        before = fresh.before;
        noise = fresh.noise;
        recent = fresh.recent;
        windows = fresh.windows;
        movedUp = fresh.movedUp;
        movedDown = fresh.movedDown;
        lastSettled = fresh.lastSettled;
    }
}
