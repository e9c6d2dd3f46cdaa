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

/** A volume's histogram meets its path windows of the same window and direction, whichever comes first. */
class PairVolumeWindowsTest {
    private static final int WAIT_MS = 20 * 60_000;
    private static final Instant W = Instant.ofEpochMilli(1_795_000_000_000L);

    private final PairVolumeWindows f = new PairVolumeWindows();
    private final CollectedRows collected = new CollectedRows();
    private final List<Row> out = collected.rows;
    private final MapView<String, WaitingHistogram> histograms = new MapView<>();
    private final MapView<String, WaitingPathWindow> paths = new MapView<>();
    private final MapView<String, Integer> waiters = new MapView<>();
    private long now = 0;

    PairVolumeWindowsTest() {
        f.clock = () -> now;
        f.setCollector(collected);
    }

    @Test
    void aHistogramBeforeItsPathsMeetsEachAsItComes() throws Exception {
        histogram(W, "read", 10L);
        assertEquals(0, out.size());
        path(W, "read", 0, "D:", 120.0);
        path(W, "read", 1, "D:", 120.0);
        path(W, "write", 0, "D:", 5.0);
        assertEquals(2, out.size(), "the write window has no histogram yet");
        assertEquals(Row.of(W, "read", new Integer[] {4, 5}, new Long[] {10L, 1L}, 0, "sql1", "D:", 120.0),
                out.get(0));
        assertEquals(1, out.get(1).getField(4));
        assertEquals(1, count(paths), "nothing waits but the write window");
        assertEquals(1, waiters.get(W.toEpochMilli() + "|write"));
    }

    @Test
    void pathsBeforeTheirHistogramWaitUnderItsWindowAndGoOutWithIt() throws Exception {
        path(W, "read", 0, "D:", 120.0);
        path(W, "read", 0, "E:", 80.0);
        path(W.plusSeconds(10), "read", 0, "D:", 1.0);
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
    void aHistogramDeliveredAgainIsDroppedAndNothingGoesOutTwice() throws Exception {
        path(W, "read", 0, "D:", 120.0);
        histogram(W, "read", 10L);
        histogram(W, "read", 99L);
        assertEquals(1, out.size(), "the path window went out once");
        path(W, "read", 1, "D:", 120.0);
        assertEquals(2, out.size());
        assertEquals(10L, ((Long[]) out.get(1).getField(3))[0], "the first histogram is kept");
    }

    @Test
    void aSideMoreThanTheWaitLateIsLost() throws Exception {
        histogram(W, "read", 10L);
        now += WAIT_MS; // just in time
        path(W, "read", 0, "D:", 120.0);
        now += 1;
        path(W, "read", 1, "D:", 120.0); // late: the histogram is past its wait, the path waits in turn
        assertEquals(1, out.size());
        now += WAIT_MS + 1;
        histogram(W.plusSeconds(10), "read", 10L);
        path(W.plusSeconds(10), "read", 0, "D:", 120.0);
        histogram(W, "read", 10L); // the path that waited is past its wait: not paired
        assertEquals(2, out.size());
        assertEquals(W.plusSeconds(10), out.get(1).getField(0));
        assertEquals(0, count(paths) + count(waiters));
    }

    @Test
    void whatTheTimeToLiveClearedIsSkipped() throws Exception {
        path(W, "read", 0, "D:", 120.0);
        path(W, "read", 0, "E:", 120.0);
        paths.remove(W.toEpochMilli() + "|read#0"); // as the state's time-to-live clears an entry
        histogram(W, "read", 10L);
        assertEquals(1, out.size());
        assertEquals("E:", out.get(0).getField(6));
        assertEquals(0, count(paths) + count(waiters));
    }

    private void histogram(Instant window, String direction, long firstIos) throws Exception {
        Row row = Row.withNames();
        row.setField("kind", "histogram");
        row.setField("window_start", window);
        row.setField("direction", direction);
        row.setField("buckets", new Integer[] {4, 5});
        row.setField("ios", new Long[] {firstIos, 1L});
        row.setField("slo_index", null);
        row.setField("host", null);
        row.setField("disk", null);
        row.setField("beyond_array_us", null);
        f.eval(histograms, paths, waiters, row, WAIT_MS);
    }

    private void path(Instant window, String direction, int slo, String disk, double beyondUs) throws Exception {
        Row row = Row.withNames();
        row.setField("kind", "path");
        row.setField("window_start", window);
        row.setField("direction", direction);
        row.setField("buckets", null);
        row.setField("ios", null);
        row.setField("slo_index", slo);
        row.setField("host", "sql1");
        row.setField("disk", disk);
        row.setField("beyond_array_us", beyondUs);
        f.eval(histograms, paths, waiters, row, WAIT_MS);
    }

    private static int count(MapView<String, ?> view) throws Exception {
        int n = 0;
        for (String ignored : view.keys()) n++;
        return n;
    }
}
