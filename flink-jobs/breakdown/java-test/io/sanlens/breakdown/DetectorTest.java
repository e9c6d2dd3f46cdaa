package io.sanlens.breakdown;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.flink.table.api.dataview.MapView;
import org.junit.jupiter.api.Test;

/**
 * The incident detector on one contributor, component and path, with the job's settings (breakdown/tables.py,
 * Incidents): a baseline of the 10 % quantile of the last hour's normal windows after 6 of them, a window above it
 * by more than 25 % and 20 us, two such windows open an incident and two normal ones close it.
 */
class DetectorTest {
    static final long W = 10_000;
    static final long T0 = 1_795_000_000_000L;

    static Detector detector() {
        return new Detector(W, 360, 6, 0.1, 0.25, 20.0, 2, 2, 80_000);
    }

    static long window(int n) {
        return T0 + n * W;
    }

    /** Each value is the part (us) in one window, of 1,000 I/Os; the incidents' states in the order reported. */
    static List<Incident> play(double discards, double... values) {
        Detector d = detector();
        Track track = new Track();
        MapView<Integer, double[]> history = new MapView<>();
        List<Incident> states = new ArrayList<>();
        for (int n = 0; n <= values.length; n++) { // a last window's row judges the one before it
            Incident i = d.add(track, history, window(n), n < values.length ? values[n] : 0.0, 1000, discards, "east");
            if (i != null) states.add(i);
        }
        return states;
    }

    static double[] concat(double[]... runs) {
        int n = 0;
        for (double[] r : runs) n += r.length;
        double[] out = new double[n];
        int at = 0;
        for (double[] r : runs) {
            System.arraycopy(r, 0, out, at, r.length);
            at += r.length;
        }
        return out;
    }

    static double[] repeat(double value, int n) {
        double[] out = new double[n];
        Arrays.fill(out, value);
        return out;
    }

    @Test
    void aFaultOpensAtItsFirstWindowAndClosesWhereItsLastWindowEnds() {
        List<Incident> states = play(0, concat(repeat(100, 20), repeat(600, 10), repeat(100, 10)));
        Incident opened = states.get(0), closed = states.get(states.size() - 1);
        assertEquals(window(20), opened.startedAt);
        assertEquals(window(21), opened.lastWindow, "reported once two windows are above");
        assertNull(opened.endedAt);
        assertEquals(10, states.size(), "opened, eight windows going on, closed");
        assertEquals(window(30), closed.endedAt);
        assertEquals(10, closed.windows);
        assertEquals(10_000, closed.ios);
        assertEquals(100.0, closed.baselineUs, 1e-9);
        assertEquals(500.0, closed.excessUs, 1e-9);
        assertEquals(600.0, closed.peakUs, 1e-9);
        assertEquals("warning", closed.severity);
    }

    @Test
    void theBaselineIsALowQuantileOfTheNormalWindows() {
        Detector d = detector();
        Track track = new Track();
        MapView<Integer, double[]> history = new MapView<>();
        for (int n = 0; n < 31; n++) d.add(track, history, window(n), 100.0 + n / 2.0, 1000, 0, "east");
        // windows 0-29 judged, all normal: 100 to 114.5 us; the 10 % quantile of 30 values is the third lowest
        assertEquals(101.0, d.baseline(track), 1e-9);
    }

    @Test
    void smallMovesAreQuiet() {
        assertEquals(List.of(), play(0, concat(repeat(100, 20), repeat(125, 20))), "+25 %, not more");
        assertEquals(List.of(), play(0, concat(repeat(20, 20), repeat(40, 20))), "+100 %, but +20 us");
        assertEquals(List.of(), play(0, concat(repeat(100, 20), repeat(900, 1), repeat(100, 10))), "one window");
    }

    @Test
    void eightyMillisecondsOrLostFramesAreSevere() {
        List<Incident> slow = play(0, concat(repeat(2_000, 20), repeat(90_000, 5), repeat(2_000, 5)));
        assertEquals(88_000.0, slow.get(slow.size() - 1).excessUs, 1e-9);
        assertTrue(slow.stream().allMatch(i -> i.severity.equals("severe")));
        List<Incident> lossy = play(3.0, concat(repeat(40, 20), repeat(900, 5), repeat(40, 5)));
        assertEquals(860.0, lossy.get(lossy.size() - 1).excessUs, 1e-9);
        assertTrue(lossy.stream().allMatch(i -> i.severity.equals("severe")), "class-3 discards: frames lost");
    }

    @Test
    void aWindowsLastRowCountsAndALateOneIsIgnored() {
        Detector d = detector();
        Track track = new Track();
        MapView<Integer, double[]> history = new MapView<>();
        for (int n = 0; n < 10; n++) {
            d.add(track, history, window(n), 5_000.0, 1000, 0, "east"); // a first row of the window ...
            d.add(track, history, window(n), 100.0, 1000, 0, "east"); // ... replaced by its last
        }
        assertNull(d.add(track, history, window(3), 99_999.0, 1000, 0, "east"), "window 3 was judged already");
        assertEquals(100.0, d.baseline(track), 1e-9);
    }
}
