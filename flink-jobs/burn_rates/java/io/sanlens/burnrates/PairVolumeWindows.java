package io.sanlens.burnrates;

import java.time.Instant;
import java.util.function.LongSupplier;

import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.ArgumentTrait;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.StateHint;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.table.functions.ProcessTableFunction;
import org.apache.flink.types.Row;

import io.sanlens.common.Waiting;

/**
 * pair_volume_windows(input => TABLE volume_sides PARTITION BY (site, `array`, volume), wait_ms => ...,
 * label_wait_ms => ...): each path window of a volume meets the SLOs its path belongs to and the volume's histogram
 * of the same window and direction, whichever comes first. One keyed function instead of a join with the SLOs'
 * labels and an interval join with the histograms: each is a point lookup in map state, and nothing iterates over
 * a volume's rows.
 *
 * <p>Input rows, by kind:
 * <ul>
 *   <li>'label' (host, disk, slos): a version of a path on this volume and the SLOs it belongs to, as
 *       "index:direction" separated by commas ("" for none). Kept without a time-to-live; a version published
 *       again replaces the earlier one.
 *   <li>'histogram' (window_start, direction, buckets, ios): the volume's I/Os per bucket in a window.
 *   <li>'path' (window_start, direction, host, disk, beyond_array_us): a path's latency window.
 * </ul>
 * Out: a row per path window and SLO of its direction, with its histogram, as soon as the three are in. A path
 * window waits `label_wait_ms` for its path's labels (the inventory is read whole at each start) and `wait_ms`
 * (processing time) for its histogram, and a histogram `wait_ms` for the path windows: a side that comes later
 * than that finds nothing. What waits expires with the job's state time-to-live (the histogram's wait), which
 * clears what no other side came for. A histogram delivered again is dropped (the first is kept; the path windows
 * it already met are not sent again).
 */
@DataTypeHint("ROW<window_start TIMESTAMP_LTZ(3), direction STRING, `buckets` ARRAY<INT>, ios ARRAY<BIGINT>, "
        + "slo_index INT, host STRING, disk STRING, beyond_array_us DOUBLE>")
public final class PairVolumeWindows extends ProcessTableFunction<Row> {
    private static final long serialVersionUID = 1L;

    /** Processing time in ms: the wall clock, as the state's time-to-live counts it (the tests set their own). */
    transient LongSupplier clock = System::currentTimeMillis;

    public void eval(
            @StateHint(name = "labels", ttl = "0") MapView<String, String> labels,
            @StateHint(name = "unlabelled") MapView<String, WaitingPathWindow> unlabelled,
            @StateHint(name = "unlabelled_counts") MapView<String, Integer> unlabelledCounts,
            @StateHint(name = "histograms") MapView<String, WaitingHistogram> histograms,
            @StateHint(name = "paths") MapView<String, WaitingPathWindow> paths,
            @StateHint(name = "waiters") MapView<String, Integer> waiters,
            @ArgumentHint(value = ArgumentTrait.SET_SEMANTIC_TABLE, name = "input") Row input,
            @ArgumentHint(name = "wait_ms") Integer waitMs,
            @ArgumentHint(name = "label_wait_ms") Integer labelWaitMs) throws Exception {
        if (clock == null) clock = System::currentTimeMillis;
        State s = new State(histograms, paths, waiters, clock.getAsLong(), waitMs);
        String kind = input.getFieldAs("kind");
        if ("label".equals(kind)) {
            String path = input.<String>getFieldAs("host") + "|" + input.getFieldAs("disk");
            String slos = input.getFieldAs("slos") == null ? "" : input.getFieldAs("slos");
            labels.put(path, slos);
            for (WaitingPathWindow p : new Waiting<>(unlabelled, unlabelledCounts).takeAll(path)) {
                if (s.now - p.arrivedMs <= labelWaitMs) s.labelled(p, slos);
            }
            return;
        }
        Instant window = input.getFieldAs("window_start");
        String direction = input.getFieldAs("direction");
        if (window == null || direction == null) return; // meets nothing, as in an equi-join
        if ("histogram".equals(kind)) {
            s.histogram(window.toEpochMilli() + "|" + direction, input);
            return;
        }
        WaitingPathWindow p = WaitingPathWindow.of(input, window.toEpochMilli(), direction, s.now);
        String slos = labels.get(p.host + "|" + p.disk);
        if (slos != null) {
            s.labelled(p, slos);
        } else {
            new Waiting<>(unlabelled, unlabelledCounts).add(p.host + "|" + p.disk, p);
        }
    }

    /** The function's state for one row, and what it does with a histogram and with a labelled path window. */
    private final class State {
        final MapView<String, WaitingHistogram> histograms;
        final MapView<String, WaitingPathWindow> paths;
        final MapView<String, Integer> waiters;
        final long now;
        final long waitMs;

        State(MapView<String, WaitingHistogram> histograms, MapView<String, WaitingPathWindow> paths,
                MapView<String, Integer> waiters, long now, long waitMs) {
            this.histograms = histograms;
            this.paths = paths;
            this.waiters = waiters;
            this.now = now;
            this.waitMs = waitMs;
        }

        void histogram(String key, Row input) throws Exception {
            if (fresh(histograms.get(key)) != null) return; // delivered again: the first is kept
            WaitingHistogram h = WaitingHistogram.of(input, now);
            histograms.put(key, h);
            for (WaitingPathWindow p : new Waiting<>(paths, waiters).takeAll(key)) {
                if (now - p.arrivedMs <= waitMs) emit(h, p);
            }
        }

        /** A path window with its path's labels `slos`: with its SLOs of its direction, out or waiting. */
        void labelled(WaitingPathWindow p, String slos) throws Exception {
            p.slos = sloIndexes(slos, p.direction);
            if (p.slos.isEmpty()) return; // the path belongs to no SLO of this direction
            p.arrivedMs = now; // its wait for the histogram begins
            String key = p.windowMs + "|" + p.direction;
            WaitingHistogram h = fresh(histograms.get(key));
            if (h != null) {
                emit(h, p);
            } else {
                new Waiting<>(paths, waiters).add(key, p);
            }
        }

        /** `h` if it came within the wait, else null (what the state's time-to-live has not cleared yet). */
        private WaitingHistogram fresh(WaitingHistogram h) {
            return h != null && now - h.arrivedMs <= waitMs ? h : null;
        }

        private void emit(WaitingHistogram h, WaitingPathWindow p) {
            Instant window = Instant.ofEpochMilli(p.windowMs);
            for (String slo : p.slos.split(",")) {
                collect(Row.of(window, p.direction, h.buckets, h.ios, Integer.valueOf(slo), p.host, p.disk,
                        p.beyondArrayUs));
            }
        }
    }

    /** The SLO indexes of `labels` ("index:direction,...") whose direction is `direction`, comma-separated. */
    static String sloIndexes(String labels, String direction) {
        StringBuilder out = new StringBuilder();
        for (String label : labels.split(",")) {
            int colon = label.indexOf(':');
            if (colon > 0 && label.substring(colon + 1).equals(direction)) {
                if (out.length() > 0) out.append(',');
                out.append(label, 0, colon);
            }
        }
        return out.toString();
    }
}
