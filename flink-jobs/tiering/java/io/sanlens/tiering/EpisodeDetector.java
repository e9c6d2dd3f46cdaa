package io.sanlens.tiering;

import java.util.Arrays;

/**
 * Tier-migration episodes of one hybrid volume, from its Tier 0 share window by window (README.md, "Episodes").
 * Pure logic over a Tiers state; DetectEpisodes runs it as Flink state. A volume's windows arrive in order (its
 * array's samples share one partition of telemetry.samples, and the job runs in one subtask).
 *
 * A two-sided CUSUM on the share against the mean of its recent baseline, with a slack k = max(slack, noise)
 * and a threshold h = thresholdNoise x noise, where the noise is the baseline's standard deviation (at least
 * noiseFloor). Crossing h starts an episode; it started after the last window of the baseline before the run
 * (the CUSUM estimate of the change point). It is reported once the share has moved by max(minShift,
 * 4 x noise) from the baseline (confirmed), and it settles when the last settleWindows shares span no more
 * than settleNoise x noise: the share moves no more than its noise. Then the settled level becomes the new
 * baseline. A run that settles without the confirmed move was noise and is forgotten. A share that moves on
 * the same way within rejoinWindows of settling (an exponential approach pauses below the noise, then goes
 * on) re-opens the same episode.
 *
 * A window more than replayWindows older than the one being gathered is a replay of the volume's span (played
 * again, its earlier episodes deleted: ingest/loader/spans.py): the state starts afresh from it, so the replay
 * finds what a first play of the span finds. A window less far back is a re-delivery, and is ignored. A window
 * more than historySize windows after the one being gathered follows a stretch without data longer than the
 * baseline (an agent down, two demo runs hours apart): the baseline no longer tells what the volume held, and
 * the state starts afresh from it, so that the share across the stretch is not taken for a migration.
 */
public final class EpisodeDetector {
    public static final String TIER0 = "volume.tier0_bytes", TIER1 = "volume.tier1_bytes";
    public static final String MOVES_UP = "volume.page_moves_up", MOVES_DOWN = "volume.page_moves_down";

    public final long windowMs;
    public final int historySize, warmup, settleWindows, rejoinWindows, replayWindows;
    public final double slack, thresholdNoise, noiseFloor, minShift, settleNoise;

    public EpisodeDetector(long windowMs, int historySize, int warmup, double slack, double thresholdNoise,
                           double noiseFloor, double minShift, int settleWindows, double settleNoise,
                           int rejoinWindows, int replayWindows) {
        this.windowMs = windowMs;
        this.historySize = historySize;
        this.warmup = warmup;
        this.slack = slack;
        this.thresholdNoise = thresholdNoise;
        this.noiseFloor = noiseFloor;
        this.minShift = minShift;
        this.settleWindows = settleWindows;
        this.settleNoise = settleNoise;
        this.rejoinWindows = rejoinWindows;
        this.replayWindows = replayWindows;
    }

    /**
     * One sample of the volume in a window (epoch ms). A sample of a later window judges the one being
     * gathered: the episode's new state if that window confirmed, prolonged or settled one, else null. A
     * sample of an older window comes too late and is ignored, unless it is more than replayWindows older: a
     * replay, from which the volume starts afresh.
     */
    public Episode add(Tiers t, long window, String metric, double value, String site) {
        if (t.window != null && window < t.window) {
            if (t.window - window <= (long) replayWindows * windowMs) return null;
            t.startAfresh();
        } else if (t.window != null && window - t.window > (long) historySize * windowMs) {
            t.startAfresh();
        }
        Episode judged = null;
        if (t.window != null && window > t.window) {
            judged = judge(t);
            t.window = null;
        }
        if (t.window == null) {
            t.window = window;
            t.tier0Bytes = null;
            t.tier1Bytes = null;
            t.movesUp = 0;
            t.movesDown = 0;
        }
        switch (metric) {
            case TIER0 -> t.tier0Bytes = value;
            case TIER1 -> t.tier1Bytes = value;
            case MOVES_UP -> t.movesUp = value;
            case MOVES_DOWN -> t.movesDown = value;
            default -> { }
        }
        t.site = site;
        return judged;
    }

    private Episode judge(Tiers t) {
        if (t.tier0Bytes == null || t.tier1Bytes == null || t.tier0Bytes + t.tier1Bytes <= 0) return null;
        double share = t.tier0Bytes / (t.tier0Bytes + t.tier1Bytes);
        double seconds = windowMs / 1000.0;
        if (t.inEpisode) return follow(t, share, seconds);
        if (t.history.length < warmup) {
            t.history = append(t.history, share);
            t.lastBaselineWindow = t.window;
            return null;
        }
        double mean = mean(t.history), noise = Math.max(stddev(t.history, mean), noiseFloor);
        double k = Math.max(slack, noise), h = thresholdNoise * noise;
        if (t.up == 0 && t.down == 0) {
            t.runSince = t.lastBaselineWindow;
            t.runMovesUp = 0;
            t.runMovesDown = 0;
        }
        t.up = Math.max(0, t.up + share - mean - k);
        t.down = Math.max(0, t.down + mean - share - k);
        t.runMovesUp += t.movesUp * seconds;
        t.runMovesDown += t.movesDown * seconds;
        if (t.up > h || t.down > h) {
            String direction = t.up > h ? "up" : "down";
            t.inEpisode = true;
            if (t.lastSettled != null && direction.equals(t.direction)
                    && t.window - t.lastSettled <= (long) rejoinWindows * windowMs) {
                // the share moves on the way it went before it paused: the same episode, re-opened
                t.windows += (int) ((t.window - t.lastSettled) / windowMs) - 1;
                t.movedUp += t.runMovesUp - t.movesUp * seconds;
                t.movedDown += t.runMovesDown - t.movesDown * seconds;
            } else {
                t.direction = direction;
                t.startedAt = t.runSince == null ? t.window : t.runSince;
                t.detectedAt = t.window;
                t.before = mean;
                t.noise = noise;
                t.windows = t.pending.length;
                t.movedUp = t.runMovesUp - t.movesUp * seconds; // follow() adds this window's moves
                t.movedDown = t.runMovesDown - t.movesDown * seconds;
                t.confirmed = false;
            }
            t.recent = new double[0];
            t.pending = new double[0];
            t.up = 0;
            t.down = 0;
            return follow(t, share, seconds);
        }
        if (t.up == 0 && t.down == 0) {
            for (double p : t.pending) remember(t, p);
            t.pending = new double[0];
            remember(t, share);
            t.lastBaselineWindow = t.window;
        } else if (t.pending.length + 1 >= historySize) { // a drift too slow to cross: the baseline follows it
            for (double p : t.pending) remember(t, p);
            t.pending = new double[0];
            remember(t, share);
            t.up = 0;
            t.down = 0;
            t.lastBaselineWindow = t.window;
        } else {
            t.pending = append(t.pending, share);
        }
        return null;
    }

    private Episode follow(Tiers t, double share, double seconds) {
        t.windows++;
        t.movedUp += t.movesUp * seconds;
        t.movedDown += t.movesDown * seconds;
        t.recent = append(t.recent, share);
        if (t.recent.length > settleWindows) t.recent = Arrays.copyOfRange(t.recent, 1, t.recent.length);
        double moved = "up".equals(t.direction) ? share - t.before : t.before - share;
        if (moved >= Math.max(minShift, 4 * t.noise)) t.confirmed = true;
        boolean settled = t.recent.length == settleWindows
                && max(t.recent) - min(t.recent) <= settleNoise * t.noise;
        if (!settled) return t.confirmed ? episode(t, null, share) : null;
        double level = mean(t.recent);
        Episode done = t.confirmed ? episode(t, t.window, level) : null;
        // the settled level is the new baseline
        t.inEpisode = false;
        t.lastSettled = t.confirmed ? t.window : null;
        t.history = t.recent.length > historySize ? Arrays.copyOfRange(t.recent, 0, historySize) : t.recent.clone();
        t.historyNext = t.history.length % Math.max(historySize, 1);
        t.recent = new double[0];
        t.lastBaselineWindow = t.window;
        return done;
    }

    private Episode episode(Tiers t, Long settledAt, double share) {
        return new Episode(t.site, t.direction, t.startedAt, t.detectedAt, settledAt, t.window, t.windows, t.before,
                share, t.tier0Bytes, t.noise, t.movedUp, t.movedDown);
    }

    private void remember(Tiers t, double share) {
        if (t.history.length < historySize) {
            t.history = append(t.history, share);
            t.historyNext = t.history.length % historySize;
        } else {
            t.history[t.historyNext] = share;
            t.historyNext = (t.historyNext + 1) % historySize;
        }
    }

    private static double[] append(double[] values, double value) {
        double[] out = Arrays.copyOf(values, values.length + 1);
        out[values.length] = value;
        return out;
    }

    private static double mean(double[] values) {
        double sum = 0;
        for (double v : values) sum += v;
        return sum / values.length;
    }

    private static double stddev(double[] values, double mean) {
        double sum = 0;
        for (double v : values) sum += (v - mean) * (v - mean);
        return values.length > 1 ? Math.sqrt(sum / (values.length - 1)) : 0;
    }

    private static double max(double[] values) {
        return Arrays.stream(values).max().orElse(0);
    }

    private static double min(double[] values) {
        return Arrays.stream(values).min().orElse(0);
    }
}
