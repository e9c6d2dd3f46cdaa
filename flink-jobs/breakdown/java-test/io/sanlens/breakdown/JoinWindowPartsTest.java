package io.sanlens.breakdown;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.util.List;

import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.types.Row;
import org.junit.jupiter.api.Test;

import io.sanlens.common.CollectedRows;

/**
 * A host disk's window meets every version of its path that began before it, and each its volume, HBA and two
 * switch ports of the same window, in whatever order they come.
 */
class JoinWindowPartsTest {
    private static final int VERSION_WAIT_MS = 20_000;
    private static final Instant W = Instant.ofEpochMilli(1_795_000_000_000L);
    private static final String ARRAY = "a|af1|vol1|read", HBA = "b|sql1|hba0", HOST_PORT = "p|sw|0/1",
            ARRAY_PORT = "p|sw|0/9";

    private final JoinWindowParts f = new JoinWindowParts();
    private final CollectedRows collected = new CollectedRows();
    private final List<Row> out = collected.rows;
    private final MapView<String, WaitingPath> versions = new MapView<>();
    private final MapView<String, String> versionIndex = new MapView<>();
    private final MapView<String, WaitingPath> unversioned = new MapView<>();
    private final MapView<String, Integer> unversionedCounts = new MapView<>();
    private final MapView<String, double[]> parts = new MapView<>();
    private final MapView<String, WaitingPath> waiting = new MapView<>();
    private final MapView<String, Integer> waiters = new MapView<>();
    private long now = 0;

    JoinWindowPartsTest() {
        f.clock = () -> now;
        f.setCollector(collected);
    }

    @Test
    void aPathWhosePartsAreInGoesOutAtOnceWithTheirValues() throws Exception {
        version("D:", "af1", 1_000);
        allParts(W);
        host(W, "D:");
        assertEquals(1, out.size());
        assertEquals(Row.of(W, "acme", "sql1", "D:", "read", "hba0", 32, "sw", "0/1", "0/9", 1, 0.5, "af1", "vol1",
                Instant.ofEpochMilli(1_000), 340.0, 1000L, 300.0, 12.0, 0.02, 1.0, 0.0, 0.0), out.get(0));
        assertEquals(0, count(waiting) + count(waiters), "nothing waits");
    }

    @Test
    void aPathWaitsForEachPartItLacksAndGoesOutWithTheLast() throws Exception {
        version("D:", "af1", 1_000);
        version("E:", "af1", 1_000);
        host(W, "D:");
        host(W, "E:");
        part(W, HOST_PORT, 0.0, 0.0);
        part(W, ARRAY, 300.0, null);
        part(W, ARRAY_PORT, 0.0, 0.0);
        assertEquals(0, out.size(), "the HBA is not in yet");
        assertEquals(2, count(waiting), "both paths wait, one entry each");
        assertEquals(2, waiters.get(W.toEpochMilli() + "|" + HBA), "under the part they lack, the HBA");
        part(W, HBA, 12.0, null);
        assertEquals(List.of("D:", "E:"), List.of(out.get(0).getField(3), out.get(1).getField(3)));
        assertEquals(0, count(waiting) + count(waiters));
    }

    @Test
    void aPartOfAnotherWindowIsNotThisWindowsPart() throws Exception {
        version("D:", "af1", 1_000);
        allParts(W.plusSeconds(10));
        host(W, "D:");
        assertEquals(0, out.size());
        allParts(W);
        assertEquals(1, out.size());
        assertEquals(W, out.get(0).getField(0));
    }

    @Test
    void aWindowMeetsEveryVersionThatBeganBeforeItAndNoLaterOne() throws Exception {
        version("D:", "af1", 1_000);
        version("D:", "af2", W.toEpochMilli());
        version("D:", "af3", W.toEpochMilli() + 1);
        allParts(W);
        part(W, "a|af2|vol1|read", 500.0, null);
        host(W, "D:");
        assertEquals(List.of("af1", "af2"), List.of(out.get(0).getField(12), out.get(1).getField(12)));
        assertEquals(500.0, out.get(1).getField(17));
        assertEquals(0, count(waiting), "no window waits for af3's parts");
    }

    @Test
    void aWindowBeforeItsPathsVersionsWaitsForThemUpToTheirWait() throws Exception {
        allParts(W);
        host(W, "D:");
        now += VERSION_WAIT_MS;
        host(W, "E:");
        version("D:", "af1", 1_000);
        version("E:", "af1", 1_000);
        assertEquals(2, out.size(), "both within their wait");
        version("E:", "af1", 2_000);
        assertEquals(3, out.size(), "a window meets each version that comes within its wait");
        now += VERSION_WAIT_MS + 1;
        version("D:", "af1", 2_000);
        version("E:", "af1", 3_000);
        assertEquals(3, out.size(), "past their wait");
        assertEquals(0, count(unversioned) + count(unversionedCounts));
    }

    @Test
    void aVersionPublishedAgainReplacesItAndMeetsNoWindowTwice() throws Exception {
        host(W, "D:");
        version("D:", "af1", 1_000);
        version("D:", "af1", 1_000);
        allParts(W);
        assertEquals(1, out.size());
    }

    @Test
    void aPartDeliveredAgainReplacesTheFirstAndAWindowAlreadyOutIsNotSentAgain() throws Exception {
        version("D:", "af1", 1_000);
        part(W, ARRAY, 300.0, null);
        part(W, ARRAY, 310.0, null);
        part(W, HBA, 12.0, null);
        part(W, HOST_PORT, 0.0, 0.0);
        host(W, "D:");
        part(W, ARRAY_PORT, 0.0, 0.0);
        part(W, ARRAY_PORT, 0.5, 3.0);
        assertEquals(1, out.size());
        assertEquals(310.0, out.get(0).getField(17));
        assertEquals(0.0, out.get(0).getField(21));
    }

    private void allParts(Instant window) throws Exception {
        part(window, ARRAY, 300.0, null);
        part(window, HBA, 12.0, null);
        part(window, HOST_PORT, 0.02, 1.0);
        part(window, ARRAY_PORT, 0.0, 0.0);
    }

    private void part(Instant window, String key, Double v1, Double v2) throws Exception {
        Row row = row("part");
        row.setField("window_start", window);
        row.setField("part", key);
        row.setField("v1", v1);
        row.setField("v2", v2);
        eval(row);
    }

    private void host(Instant window, String disk) throws Exception {
        Row row = row("host");
        row.setField("window_start", window);
        row.setField("host", "sql1");
        row.setField("disk", disk);
        row.setField("direction", "read");
        row.setField("host_us", 340.0);
        row.setField("ios", 1000L);
        eval(row);
    }

    private void version(String disk, String array, long validFromMs) throws Exception {
        Row row = row("version");
        row.setField("customer", "acme");
        row.setField("host", "sql1");
        row.setField("disk", disk);
        row.setField("host_port", "hba0");
        row.setField("queue_depth", 32);
        row.setField("switch", "sw");
        row.setField("host_switch_port", "0/1");
        row.setField("array_switch_port", "0/9");
        row.setField("hops", 1);
        row.setField("distance_km", 0.5);
        row.setField("array", array);
        row.setField("volume", "vol1");
        row.setField("valid_from", Instant.ofEpochMilli(validFromMs));
        row.setField("array_part", "a|" + array + "|vol1");
        row.setField("hba_part", HBA);
        row.setField("host_port_part", HOST_PORT);
        row.setField("array_port_part", ARRAY_PORT);
        eval(row);
    }

    private static Row row(String kind) {
        Row row = Row.withNames();
        for (String field : List.of("kind", "window_start", "customer", "host", "disk", "direction", "host_port",
                "queue_depth", "switch", "host_switch_port", "array_switch_port", "hops", "distance_km", "array",
                "volume", "valid_from", "host_us", "ios", "array_part", "hba_part", "host_port_part",
                "array_port_part", "part", "v1", "v2")) {
            row.setField(field, null);
        }
        row.setField("kind", kind);
        return row;
    }

    private void eval(Row row) throws Exception {
        f.eval(versions, versionIndex, unversioned, unversionedCounts, parts, waiting, waiters, row, VERSION_WAIT_MS);
    }

    private static int count(MapView<String, ?> view) throws Exception {
        int n = 0;
        for (String ignored : view.keys()) n++;
        return n;
    }
}
