package io.sanlens.breakdown;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.StateHint;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

/** The detector as the job's process table function: its state as checkpoints hold it, its rows as the sink takes them. */
class DetectIncidentsTest {
    @Test
    void itsArgumentsAreTheJobsAndItsStateWhatCheckpointsHold() {
        // tables.py's insert_incidents names these arguments; a state renamed or retyped is not restored from a
        // checkpoint (change the call's uid with it, as incidents-3 did)
        List<String> arguments = new ArrayList<>(), state = new ArrayList<>();
        for (Parameter p : eval().getParameters()) {
            StateHint hint = p.getAnnotation(StateHint.class);
            if (hint != null) state.add(hint.name() + ": " + p.getType().getSimpleName() + ", ttl " + hint.ttl());
            else arguments.add(p.getAnnotation(ArgumentHint.class).name());
        }
        assertEquals(List.of("ways: MapView, ttl 1 d", "histories: MapView, ttl 1 d"), state);
        assertEquals(List.of("input", "window_length_ms", "history_windows", "warmup_windows", "quantile",
                "relative_margin", "absolute_margin_us", "open_after", "close_after"), arguments);
    }

    @Test
    void eachContributorOnAPathsWayIsFollowedOnItsOwnAndNamedInItsIncidentsRows() throws Exception {
        DetectIncidents f = new DetectIncidents();
        List<Row> out = collected(f);
        MapView<String, Way> ways = new MapView<>();
        MapView<String, double[]> histories = new MapView<>();
        for (int n = 0; n < 24; n++) {
            Row input = Row.withNames();
            input.setField("path", "acme-sql1:D:read");
            input.setField("window_ms", DetectorTest.window(n));
            input.setField("ios", 1000L);
            input.setField("site", "acme-east");
            for (String slot : DetectIncidents.SLOTS) {
                input.setField(slot + "_component", slot.equals("host_port") ? "fa1:0/20" : "c-" + slot);
                input.setField(slot + "_us", 100.0);
                input.setField(slot + "_discards", 0.0);
            }
            input.setField("host_port_us", n >= 20 ? 600.0 : 100.0); // the host's switch port slows down
            f.eval(ways, histories, input, 10_000, 360, 6, 0.1, 0.25, 20.0, 2, 2);
        }
        assertEquals(2, out.size(), "windows 20-22 above: opened at 21, going on at 22");
        Instant start = Instant.ofEpochMilli(DetectorTest.window(20));
        assertEquals(Row.of("fabric", "fa1:0/20", "fabric|fa1:0/20|acme-sql1:D:read|" + start, "acme-east", start,
                null, Instant.ofEpochMilli(DetectorTest.window(22)), 3, 3000L, 100.0, 500.0, 600.0, "warning"),
                out.get(1));
        assertEquals(1, ways.getMap().size(), "one version of the path: one state entry");
        assertEquals(4, histories.getMap().size(), "a history for each contributor");
    }

    @Test
    void aPathPublishedAgainWithAnotherPortHasTracksOfItsOwn() throws Exception {
        DetectIncidents f = new DetectIncidents();
        collected(f);
        MapView<String, Way> ways = new MapView<>();
        MapView<String, double[]> histories = new MapView<>();
        for (String port : new String[] {"fa1:0/20", "fa1:0/21"}) {
            Row input = Row.withNames();
            input.setField("path", "acme-sql1:D:read");
            input.setField("window_ms", DetectorTest.window(0));
            input.setField("ios", 1000L);
            input.setField("site", "acme-east");
            for (String slot : DetectIncidents.SLOTS) {
                input.setField(slot + "_component", slot.equals("host_port") ? port : "c-" + slot);
                input.setField(slot + "_us", 100.0);
                input.setField(slot + "_discards", 0.0);
            }
            f.eval(ways, histories, input, 10_000, 360, 6, 0.1, 0.25, 20.0, 2, 2);
        }
        assertEquals(2, ways.getMap().size());
    }

    private static List<Row> collected(DetectIncidents f) {
        List<Row> out = new ArrayList<>();
        f.setCollector(new Collector<>() {
            @Override
            public void collect(Row row) {
                out.add(row);
            }

            @Override
            public void close() {}
        });
        return out;
    }

    private static Method eval() {
        for (Method m : DetectIncidents.class.getMethods()) if (m.getName().equals("eval")) return m;
        throw new AssertionError("no eval");
    }
}
