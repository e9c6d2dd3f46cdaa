package io.sanlens.tiering;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.StateHint;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

/** The detector as the job's process table function: its state as checkpoints hold it, its rows as the sink takes them. */
class DetectEpisodesTest {
    @Test
    void itsArgumentsAreTheJobsAndItsStateWhatCheckpointsHold() {
        // tables.py names these arguments; a state renamed or retyped is not restored from a checkpoint
        List<String> arguments = new ArrayList<>(), state = new ArrayList<>();
        for (Parameter p : eval().getParameters()) {
            StateHint hint = p.getAnnotation(StateHint.class);
            if (hint != null) state.add(hint.name() + ": " + p.getType().getSimpleName() + ", ttl " + hint.ttl());
            else arguments.add(p.getAnnotation(ArgumentHint.class).name());
        }
        assertEquals(List.of("tiers: Tiers, ttl 7 d"), state);
        assertEquals(List.of("input", "window_length_ms", "history_windows", "warmup_windows", "slack",
                "threshold_noise", "noise_floor", "min_shift", "settle_windows", "settle_noise", "rejoin_windows"),
                arguments);
    }

    @Test
    void anEpisodesRowsCarryItsIdAndItsColumnsInTheOutputTypesOrder() {
        DetectEpisodes f = new DetectEpisodes();
        List<Row> out = new ArrayList<>();
        f.setCollector(new Collector<>() {
            @Override
            public void collect(Row row) {
                out.add(row);
            }

            @Override
            public void close() {}
        });
        Tiers tiers = new Tiers();
        for (int n = 0; n <= 40; n++) {
            double share = n < 20 ? 0.10 : 0.30;
            for (String metric : new String[] {EpisodeDetector.TIER0, EpisodeDetector.TIER1, EpisodeDetector.MOVES_UP}) {
                Row input = Row.withNames();
                input.setField("array", "acme-h1");
                input.setField("volume", "sql1_data");
                input.setField("window_ms", EpisodeDetectorTest.window(n));
                input.setField("metric", metric);
                input.setField("value", metric.equals(EpisodeDetector.TIER0) ? share * EpisodeDetectorTest.TIB
                        : metric.equals(EpisodeDetector.TIER1) ? (1 - share) * EpisodeDetectorTest.TIB
                        : n >= 20 && n < 26 ? 100.0 : 0.0); // 100 pages/s up while it moves
                input.setField("site", "acme-east");
                f.eval(tiers, input, 10_000, 30, 6, 0.005, 8.0, 0.002, 0.01, 6, 4.0, 30);
            }
        }
        assertEquals(6, out.size(), "windows 20-25: confirmed at once, settled after a minute at 30 %");
        Row settled = out.get(5);
        Instant start = Instant.ofEpochMilli(EpisodeDetectorTest.window(19));
        Instant end = Instant.ofEpochMilli(EpisodeDetectorTest.window(25));
        assertEquals(14, settled.getArity());
        assertEquals(List.of("acme-h1|sql1_data|" + start, "acme-east", "up", start,
                Instant.ofEpochMilli(EpisodeDetectorTest.window(20)), end, end, 6),
                List.of(settled.getField(0), settled.getField(1), settled.getField(2), settled.getField(3),
                        settled.getField(4), settled.getField(5), settled.getField(6), settled.getField(7)));
        assertEquals(0.10, (Double) settled.getField(8), 1e-12, "tier0_share_before");
        assertEquals(0.30, (Double) settled.getField(9), 1e-12, "tier0_share_reached");
        assertEquals(0.30 * EpisodeDetectorTest.TIB, (Double) settled.getField(10), 1, "tier0_bytes_reached");
        assertEquals(0.002, (Double) settled.getField(11), 1e-12, "noise: the floor");
        assertEquals(6 * 100.0 * 10, (Double) settled.getField(12), 1e-9, "page_moves_up: 100/s for 6 windows of 10 s");
        assertEquals(0.0, (Double) settled.getField(13), 1e-9, "page_moves_down");
    }

    private static Method eval() {
        for (Method m : DetectEpisodes.class.getMethods()) if (m.getName().equals("eval")) return m;
        throw new AssertionError("no eval");
    }
}
