package io.sanlens.tiering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * The tier-migration episode detector on one hybrid volume, with the job's settings (tiering/tables.py,
 * Episodes): a baseline of the last 30 shares after 6, noise at least 0.002 of the share, a CUSUM with slack
 * 0.005 and threshold 8 x noise, an episode worth reporting once the share moved 0.01 (and 4 x noise), settled
 * once a minute of shares spans no more than 4 x noise.
 */
class EpisodeDetectorTest {
    static final long W = 10_000;
    static final long T0 = 1_795_000_000_000L;
    static final double TIB = Math.pow(2, 40);

    static EpisodeDetector detector() {
        return new EpisodeDetector(W, 30, 6, 0.005, 8.0, 0.002, 0.01, 6, 4.0, 30, DetectEpisodes.REPLAY_WINDOWS);
    }

    static long window(int n) {
        return T0 + n * W;
    }

    /** The shares from window `first` on (one a window), into a detector and state that may have seen others. */
    static List<Episode> add(EpisodeDetector d, Tiers tiers, int first, double... shares) {
        List<Episode> states = new ArrayList<>();
        for (int n = 0; n < shares.length; n++) {
            for (Episode e : new Episode[] {
                d.add(tiers, window(first + n), EpisodeDetector.TIER0, shares[n] * TIB, "east"),
                d.add(tiers, window(first + n), EpisodeDetector.TIER1, (1 - shares[n]) * TIB, "east")}) {
                if (e != null) states.add(e);
            }
        }
        return states;
    }

    /** As add, and a sample of the window after the last, which judges it. */
    static List<Episode> play(EpisodeDetector d, Tiers tiers, int first, double... shares) {
        List<Episode> states = add(d, tiers, first, shares);
        states.addAll(add(d, tiers, first + shares.length, 0.0));
        return states;
    }

    static List<Episode> play(double... shares) {
        return play(detector(), new Tiers(), 0, shares);
    }

    static double[] steps(double before, int n, double after, int m) {
        double[] out = new double[n + m];
        Arrays.fill(out, 0, n, before);
        Arrays.fill(out, n, n + m, after);
        return out;
    }

    @Test
    void aStepUpIsOneEpisodeFromTheLastWindowAtTheOldLevelToWhereItSettles() {
        List<Episode> states = play(steps(0.10, 20, 0.30, 40));
        assertEquals(6, states.size(), "confirmed at its first window, reported until a minute at one level");
        for (Episode e : states) {
            assertEquals("up", e.direction);
            assertEquals(window(19), e.startedAt, "after the last window at 10 %");
            assertEquals(window(20), e.detectedAt);
            assertEquals(0.10, e.tier0ShareBefore, 1e-12);
        }
        assertNull(states.get(0).settledAt);
        Episode settled = states.get(5);
        assertEquals(window(25), settled.settledAt, "six windows at 30 %");
        assertEquals(6, settled.windows);
        assertEquals(0.30, settled.tier0ShareReached, 1e-12);
        assertEquals(0.30 * TIB, settled.tier0BytesReached, 1);
        assertEquals(0.002, settled.noise, 1e-12, "a flat baseline: the noise floor");
    }

    @Test
    void aStepDownIsAnEpisodeDown() {
        List<Episode> states = play(steps(0.40, 20, 0.15, 20));
        Episode settled = states.get(states.size() - 1);
        assertEquals("down", settled.direction);
        assertEquals(0.40, settled.tier0ShareBefore, 1e-12);
        assertEquals(0.15, settled.tier0ShareReached, 1e-12);
    }

    @Test
    void aMoveSmallerThanTheMinimumIsNoEpisode() {
        // +0.006: the CUSUM crosses its threshold after 16 windows, but the share never moves 0.01
        assertEquals(List.of(), play(steps(0.10, 60, 0.106, 120)));
        assertEquals(List.of(), play(steps(0.35, 200, 0.35, 0)));
    }

    @Test
    void aSpanPlayedAgainFindsWhatItsFirstPlayFound() {
        EpisodeDetector d = detector();
        Tiers tiers = new Tiers();
        double[] shares = steps(0.10, 20, 0.30, 20);
        List<Episode> first = play(d, tiers, 0, shares);
        // a re-delivery of a window 5 back is ignored; a window 40 back is a replay: the volume starts afresh
        assertNull(d.add(tiers, window(35), EpisodeDetector.TIER0, 0.9 * TIB, "east"));
        List<Episode> again = play(d, tiers, 0, shares);
        assertEquals(first.size(), again.size());
        Episode a = first.get(first.size() - 1), b = again.get(again.size() - 1);
        assertEquals(List.of(a.startedAt, a.settledAt, a.windows), List.of(b.startedAt, b.settledAt, b.windows));
        assertEquals(a.tier0ShareReached, b.tier0ShareReached, 1e-12);
    }

    @Test
    void aStretchWithoutDataLongerThanTheBaselineIsNotAMigration() {
        EpisodeDetector d = detector();
        Tiers tiers = new Tiers();
        assertEquals(List.of(), add(d, tiers, 0, steps(0.10, 20, 0.10, 0)));
        // 40 windows (more than the baseline's 30) without a sample, then the share at 30 %: a new baseline
        assertEquals(List.of(), play(d, tiers, 60, steps(0.30, 12, 0.30, 0)));
        assertEquals(12, tiers.history.length, "the 12 windows from 60 on, none from before");
        assertTrue(Arrays.stream(tiers.history).allMatch(s -> Math.abs(s - 0.30) < 1e-12));
    }
}
