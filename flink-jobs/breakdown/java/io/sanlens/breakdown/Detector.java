package io.sanlens.breakdown;

import java.util.Arrays;

import org.apache.flink.table.api.dataview.MapView;

/**
 * Incidents of one contributor on one component along one path, from its part of the path's latency, window by
 * window (README.md, "Incidents"). Pure logic over a Track; DetectIncidents runs it as Flink state. A path's
 * windows arrive in order (the job runs its joins in one subtask, and every source sends in order); the view
 * sanlens.incidents merges a component's path incidents into one.
 *
 * The baseline is learnt from the data: a low quantile of the last normal windows, so a slow climb does not
 * become the norm while it climbs. A window is above it when value > baseline + max(relative margin x
 * baseline, absolute margin); `openAfter` windows in a row open an incident that started at the first of
 * them, `closeAfter` normal windows in a row close it at the end of its last window above. Windows the joins
 * lost in between (a part that arrived too late) are gaps: the incident ends where its evidence ends, not at
 * the next window that happens to arrive. While a run lasts the baseline is frozen and its windows are kept
 * out of the history. The history (a ring of the last normal windows) is kept apart from the Track, in a map
 * view, and takes the normal windows FLUSH_EVERY at a time: the baseline follows the last hour up to 5 minutes
 * late, and the ring is read and sorted once in 30 windows instead of at every one.
 */
public final class Detector {
    static final int FLUSH_EVERY = 30; // normal windows gathered before they go into the history, once it has as many
    private static final int RING = 0; // the history's one entry in its map view
    public final long windowMs;
    public final int historySize, warmup, openAfter, closeAfter;
    public final double quantile, relativeMargin, absoluteMarginUs, severeUs;

    public Detector(long windowMs, int historySize, int warmup, double quantile, double relativeMargin,
                    double absoluteMarginUs, int openAfter, int closeAfter, double severeUs) {
        this.windowMs = windowMs;
        this.historySize = historySize;
        this.warmup = warmup;
        this.quantile = quantile;
        this.relativeMargin = relativeMargin;
        this.absoluteMarginUs = absoluteMarginUs;
        this.openAfter = openAfter;
        this.closeAfter = closeAfter;
        this.severeUs = severeUs;
    }

    /**
     * The path's part in one window (epoch ms); a further row of the window being gathered replaces it. A row
     * of a later window closes the one being gathered and judges it: the incident's new state if that window
     * opened, prolonged or closed one, else null. A row of a window older than the one being gathered comes too
     * late to count and is ignored.
     */
    public Incident add(Track t, MapView<Integer, double[]> history, long window, double valueUs, long ios,
                        double discards, String site) {
        if (t.window != null && window < t.window) return null;
        Incident judged = t.window != null && window > t.window ? evaluate(t, history) : null;
        // A window's rows are one host window, once for each version of its path (a path published again is one
        // more) and again if re-delivered: the last row counts, its I/Os once.
        long weight = Math.max(ios, 1);
        t.window = window;
        t.sum = valueUs * weight;
        t.ios = weight;
        t.discards = discards;
        t.site = site;
        return judged;
    }

    /** The baseline the next window is judged against, or NaN while there is too little history. */
    public double baseline(Track t) {
        return t.baseline == null ? Double.NaN : t.baseline;
    }

    private Incident evaluate(Track t, MapView<Integer, double[]> history) {
        double value = t.sum / t.ios;
        double baseline = t.runWindows > 0 ? t.runBaseline : baseline(t);
        boolean above = !Double.isNaN(baseline)
                && value > baseline + Math.max(relativeMargin * baseline, absoluteMarginUs);
        if (above) {
            if (t.runWindows == 0) {
                t.runStart = t.window;
                t.runBaseline = baseline;
                t.excessSum = t.peak = t.runDiscards = 0;
                t.excessIos = 0;
            }
            t.runWindows++;
            t.lastAbove = t.window;
            t.excessSum += (value - baseline) * t.ios;
            t.excessIos += t.ios;
            t.peak = Math.max(t.peak, value);
            t.runDiscards = Math.max(t.runDiscards, t.discards);
            t.normalWindows = 0;
            if (t.runWindows < openAfter) return null;
            t.open = true;
            return incident(t, null);
        }
        remember(t, history, value);
        if (!t.open) {
            t.runWindows = 0; // a blip shorter than openAfter: no incident
            return null;
        }
        if (++t.normalWindows < closeAfter) return null;
        Incident closed = incident(t, t.lastAbove + windowMs);
        t.open = false;
        t.runWindows = 0;
        t.normalWindows = 0;
        return closed;
    }

    private Incident incident(Track t, Long endedAt) {
        double excess = t.excessSum / t.excessIos;
        // Brocade FPI: frame loss (class-3 discards) or 80 ms of delay is severe, less is a performance impact
        String severity = t.runDiscards > 0 || excess >= severeUs ? "severe" : "warning";
        return new Incident(t.site, t.runStart, endedAt, t.window, t.runWindows, t.excessIos, t.runBaseline, excess,
                t.peak, severity);
    }

    private void remember(Track t, MapView<Integer, double[]> history, double value) {
        t.recent = Arrays.copyOf(t.recent, t.recent.length + 1);
        t.recent[t.recent.length - 1] = value;
        if (t.recent.length < (t.historyLength < FLUSH_EVERY ? 1 : FLUSH_EVERY)) return;
        try {
            double[] ring = history.get(RING);
            if (ring == null) ring = new double[0];
            for (double v : t.recent) {
                if (ring.length < historySize) {
                    ring = Arrays.copyOf(ring, ring.length + 1);
                    ring[ring.length - 1] = v;
                } else {
                    ring[t.historyNext] = v;
                    t.historyNext = (t.historyNext + 1) % historySize;
                }
            }
            history.put(RING, ring);
            t.recent = new double[0];
            t.historyLength = ring.length;
            t.baseline = quantileOf(ring);
        } catch (Exception e) {
            throw new IllegalStateException("incident history unreadable or unwritable", e);
        }
    }

    private Double quantileOf(double[] ring) {
        if (ring.length < warmup) return null;
        double[] sorted = ring.clone();
        Arrays.sort(sorted);
        return sorted[(int) Math.floor(quantile * (sorted.length - 1))];
    }
}
