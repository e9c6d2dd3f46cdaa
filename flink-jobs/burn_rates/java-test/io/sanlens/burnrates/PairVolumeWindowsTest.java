package io.sanlens.burnrates;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Instant;
import java.util.List;

import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.types.Row;
import org.junit.jupiter.api.Test;

import io.sanlens.common.CollectedRows;

/** A volume's path windows meet their SLOs and the histogram of the same window and direction, whichever comes first. */
class PairVolumeWindowsTest {
    private static final int WAIT_MS = 20 * 60_000;
    private static final int LABEL_WAIT_MS = 20_000;
    private static final Instant W = Instant.ofEpochMilli(1_795_000_000_000L);

    private final PairVolumeWindows f = new PairVolumeWindows();
    private final CollectedRows collected = new CollectedRows();
    private final List<Row> out = collected.rows;
    private final MapView<String, String> labels = new MapView<>();
    private final MapView<String, WaitingPathWindow> unlabelled = new MapView<>();
    private final MapView<String, Integer> unlabelledCounts = new MapView<>();
    private final MapView<String, WaitingHistogram> histograms = new MapView<>();
    private final MapView<String, WaitingPathWindow> paths = new MapView<>();
    private final MapView<String, Integer> waiters = new MapView<>();
    private long now = 0;

    PairVolumeWindowsTest() {
        f.clock = () -> now;
        f.setCollector(collected);
    }

    @Test
    void aHistogramBeforeItsPathsMeetsEachAsItComesOncePerSloOfItsDirection() throws Exception {
        label("D:", "0:read,1:read,2:write");
        histogram(W, "read", 10L);
        assertEquals(0, out.size());
        path(W, "read", "D:", 120.0);
        path(W, "write", "D:", 5.0);
        assertEquals(2, out.size(), "the read window for SLOs 0 and 1; the write window has no histogram yet");
        assertEquals(Row.of(W, "read", new Integer[] {4, 5}, new Long[] {10L, 1L}, 0, "sql1", "D:", 120.0),
                out.get(0));
        assertEquals(1, out.get(1).getField(4));
        assertEquals(1, count(paths), "nothing waits but the write window");
        assertEquals(1, waiters.get(W.toEpochMilli() + "|write"));
        histogram(W, "write", 3L);
        assertEquals(Row.of(W, "write", new Integer[] {4, 5}, new Long[] {3L, 1L}, 2, "sql1", "D:", 5.0), out.get(2));
    }

    @Test
    void pathsBeforeTheirHistogramWaitUnderItsWindowAndGoOutWithIt() throws Exception {
        label("D:", "0:read");
        label("E:", "0:read");
        path(W, "read", "D:", 120.0);
        path(W, "read", "E:", 80.0);
        path(W.plusSeconds(10), "read", "D:", 1.0);
        assertEquals(0, out.size());
        assertEquals(3, count(paths), "one entry per path window");
        assertEquals(2, waiters.get(W.toEpochMilli() + "|read"));
        now += 60_000;
        histogram(W, "read", 10L);
        assertEquals(List.of("D:", "E:"), List.of(out.get(0).getField(6), out.get(1).getField(6)));
        assertArrayEquals(new Long[] {10L, 1L}, (Long[]) out.get(1).getField(3));
        assertEquals(1, count(paths), "the next window's path still waits");
        assertNull(waiters.get(W.toEpochMilli() + "|read"));
    }

    @Test
    void aPathWindowBeforeItsLabelsWaitsForThemUpToTheirWait() throws Exception {
        histogram(W, "read", 10L);
        path(W, "read", "D:", 120.0);
        now += LABEL_WAIT_MS;
        path(W, "read", "E:", 80.0);
        assertEquals(0, out.size());
        assertEquals(2, count(unlabelled));
        now += 1; // D:'s window is past its wait, E:'s is not
        label("D:", "0:read");
        label("E:", "0:read,1:read");
        assertEquals(List.of("E:", "E:"), List.of(out.get(0).getField(6), out.get(1).getField(6)));
        assertEquals(List.of(0, 1), List.of(out.get(0).getField(4), out.get(1).getField(4)));
        assertEquals(0, count(unlabelled) + count(unlabelledCounts));
    }

    @Test
    void aPathInNoSloOfItsDirectionWaitsForNothing() throws Exception {
        label("D:", "");
        label("E:", "0:write");
        path(W, "read", "D:", 120.0);
        path(W, "read", "E:", 120.0);
        histogram(W, "read", 10L);
        assertEquals(0, out.size());
        assertEquals(0, count(paths) + count(unlabelled));
    }

    @Test
    void aVersionPublishedAgainReplacesThePathsLabels() throws Exception {
        label("D:", "0:read");
        label("D:", "1:read");
        histogram(W, "read", 10L);
        path(W, "read", "D:", 120.0);
        assertEquals(1, out.size());
        assertEquals(1, out.get(0).getField(4));
    }

    @Test
    void aHistogramDeliveredAgainIsDroppedAndNothingGoesOutTwice() throws Exception {
        label("D:", "0:read");
        path(W, "read", "D:", 120.0);
        histogram(W, "read", 10L);
        histogram(W, "read", 99L);
        assertEquals(1, out.size(), "the path window went out once");
        label("D:", "1:read");
        path(W, "read", "D:", 120.0);
        assertEquals(2, out.size());
        assertEquals(10L, ((Long[]) out.get(1).getField(3))[0], "the first histogram is kept");
    }

    @Test
    void aSideMoreThanTheWaitLateIsLost() throws Exception {
        label("D:", "0:read");
        histogram(W, "read", 10L);
        now += WAIT_MS; // just in time
        path(W, "read", "D:", 120.0);
        now += 1;
        path(W, "read", "D:", 120.0); // late: the histogram is past its wait, the path waits in turn
        assertEquals(1, out.size());
        now += WAIT_MS + 1;
        histogram(W.plusSeconds(10), "read", 10L);
        path(W.plusSeconds(10), "read", "D:", 120.0);
        histogram(W, "read", 10L); // the path that waited is past its wait: not paired
        assertEquals(2, out.size());
        assertEquals(W.plusSeconds(10), out.get(1).getField(0));
        assertEquals(0, count(paths) + count(waiters));
    }

    @Test
    void whatTheTimeToLiveClearedIsSkipped() throws Exception {
        label("D:", "0:read");
        label("E:", "0:read");
        path(W, "read", "D:", 120.0);
        path(W, "read", "E:", 120.0);
        paths.remove(W.toEpochMilli() + "|read#0"); // as the state's time-to-live clears an entry
        histogram(W, "read", 10L);
        assertEquals(1, out.size());
        assertEquals("E:", out.get(0).getField(6));
        assertEquals(0, count(paths) + count(waiters));
    }

    @Test
    void theSloIndexesOfADirection() {
        assertEquals("0,2", PairVolumeWindows.sloIndexes("0:read,1:write,2:read", "read"));
        assertEquals("", PairVolumeWindows.sloIndexes("", "read"));
    }

    private void label(String disk, String slos) throws Exception {
        Row row = row("label", null, null);
        row.setField("disk", disk);
        row.setField("slos", slos);
        eval(row);
    }

    private void histogram(Instant window, String direction, long firstIos) throws Exception {
        Row row = row("histogram", window, direction);
        row.setField("buckets", new Integer[] {4, 5});
        row.setField("ios", new Long[] {firstIos, 1L});
        row.setField("host", null);
        eval(row);
    }

    private void path(Instant window, String direction, String disk, double beyondUs) throws Exception {
        Row row = row("path", window, direction);
        row.setField("disk", disk);
        row.setField("beyond_array_us", beyondUs);
        eval(row);
    }

    private static Row row(String kind, Instant window, String direction) {
        Row row = Row.withNames();
        row.setField("kind", kind);
        row.setField("window_start", window);
        row.setField("direction", direction);
        row.setField("buckets", null);
        row.setField("ios", null);
        row.setField("host", "sql1");
        row.setField("disk", null);
        row.setField("beyond_array_us", null);
        row.setField("slos", null);
        return row;
    }

    private void eval(Row row) throws Exception {
        f.eval(labels, unlabelled, unlabelledCounts, histograms, paths, waiters, row, WAIT_MS, LABEL_WAIT_MS);
    }

    private static int count(MapView<String, ?> view) throws Exception {
        int n = 0;
        for (String ignored : view.keys()) n++;
        return n;
    }
}
