package io.sanlens.breakdown;

import java.util.Arrays;

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
 * out of the history.
 */
public final class Detector {
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
    public Incident add(Track t, long window, double valueUs, long ios, double discards, String site) {
        if (t.window != null && window < t.window) return null;
        Incident judged = t.window != null && window > t.window ? evaluate(t) : null;
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
        int n = Math.min(t.history.length, historySize);
        if (n < warmup) return Double.NaN;
        double[] sorted = Arrays.copyOf(t.history, n);
        Arrays.sort(sorted);
        return sorted[(int) Math.floor(quantile * (n - 1))];
    }

    private Incident evaluate(Track t) {
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
        remember(t, value);
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

    private void remember(Track t, double value) {
        if (t.history.length < historySize) {
            t.history = Arrays.copyOf(t.history, t.history.length + 1);
            t.history[t.history.length - 1] = value;
        } else {
            t.history[t.historyNext] = value;
            t.historyNext = (t.historyNext + 1) % historySize;
        }
    }
}
