package io.sanlens.breakdown;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

/** A path window meets its volume, HBA and two switch ports of the same window, in whatever order they come. */
class JoinWindowPartsTest {
    private static final String ARRAY = "a|af1|vol1|read", HBA = "b|sql1|hba0", HOST_PORT = "p|sw|0/1",
            ARRAY_PORT = "p|sw|0/9";

    private final JoinWindowParts f = new JoinWindowParts();
    private final List<Row> out = new ArrayList<>();
    private final MapView<String, double[]> parts = new MapView<>();
    private final MapView<String, WaitingPath> waiting = new MapView<>();
    private final MapView<String, Integer> waiters = new MapView<>();

    JoinWindowPartsTest() {
        f.setCollector(new Collector<>() {
            @Override
            public void collect(Row row) {
                out.add(row);
            }

            @Override
            public void close() {}
        });
    }

    @Test
    void aPathWhosePartsAreInGoesOutAtOnceWithTheirValues() throws Exception {
        part(ARRAY, 300.0, null);
        part(HBA, 12.0, null);
        part(HOST_PORT, 0.02, 1.0);
        part(ARRAY_PORT, 0.0, 0.0);
        path("D:");
        assertEquals(1, out.size());
        assertEquals(Row.of("acme", "sql1", "D:", "read", "hba0", 32, "sw", "0/1", "0/9", 1, 0.5, "af1", "vol1",
                Instant.ofEpochMilli(1_000), 340.0, 1000L, 300.0, 12.0, 0.02, 1.0, 0.0, 0.0), out.get(0));
        assertEquals(0, count(waiting) + count(waiters), "nothing waits");
    }

    @Test
    void aPathWaitsForEachPartItLacksAndGoesOutWithTheLast() throws Exception {
        path("D:");
        path("E:");
        part(HOST_PORT, 0.0, 0.0);
        part(ARRAY, 300.0, null);
        part(ARRAY_PORT, 0.0, 0.0);
        assertEquals(0, out.size(), "the HBA is not in yet");
        assertEquals(2, count(waiting), "both paths wait, one entry each");
        assertEquals(2, waiters.get(HBA), "under the part they lack, the HBA");
        part(HBA, 12.0, null);
        assertEquals(List.of("D:", "E:"), List.of(out.get(0).getField(2), out.get(1).getField(2)));
        assertEquals(0, count(waiting) + count(waiters));
    }

    @Test
    void aPartDeliveredAgainReplacesTheFirstAndAWindowAlreadyOutIsNotSentAgain() throws Exception {
        part(ARRAY, 300.0, null);
        part(ARRAY, 310.0, null);
        part(HBA, 12.0, null);
        part(HOST_PORT, 0.0, 0.0);
        path("D:");
        part(ARRAY_PORT, 0.0, 0.0);
        part(ARRAY_PORT, 0.5, 3.0);
        assertEquals(1, out.size());
        assertEquals(310.0, out.get(0).getField(16));
        assertEquals(0.0, out.get(0).getField(20));
    }

    private void part(String key, Double v1, Double v2) throws Exception {
        Row row = Row.withNames();
        row.setField("kind", "part");
        row.setField("part", key);
        row.setField("v1", v1);
        row.setField("v2", v2);
        f.eval(parts, waiting, waiters, row);
    }

    private void path(String disk) throws Exception {
        Row row = Row.withNames();
        row.setField("kind", "path");
        row.setField("customer", "acme");
        row.setField("host", "sql1");
        row.setField("disk", disk);
        row.setField("direction", "read");
        row.setField("host_port", "hba0");
        row.setField("queue_depth", 32);
        row.setField("switch", "sw");
        row.setField("host_switch_port", "0/1");
        row.setField("array_switch_port", "0/9");
        row.setField("hops", 1);
        row.setField("distance_km", 0.5);
        row.setField("array", "af1");
        row.setField("volume", "vol1");
        row.setField("valid_from", Instant.ofEpochMilli(1_000));
        row.setField("host_us", 340.0);
        row.setField("ios", 1000L);
        row.setField("array_part", ARRAY);
        row.setField("hba_part", HBA);
        row.setField("host_port_part", HOST_PORT);
        row.setField("array_port_part", ARRAY_PORT);
        f.eval(parts, waiting, waiters, row);
    }

    private static int count(MapView<String, ?> view) throws Exception {
        int n = 0;
        for (String ignored : view.keys()) n++;
        return n;
    }
}
