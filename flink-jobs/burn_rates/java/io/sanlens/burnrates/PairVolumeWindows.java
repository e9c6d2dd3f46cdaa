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

/**
 * pair_volume_windows(input => TABLE volume_sides PARTITION BY (site, `array`, volume), wait_ms => ...): each path
 * window of a volume (a row per path, direction, window and SLO of the host side) meets the volume's histogram of
 * the same window and direction, whichever comes first. One keyed function instead of an interval join: the
 * histogram is a point lookup in a map keyed by window and direction, a path window that comes first is filed
 * under that key (one state entry each, and their count), and nothing iterates over a volume's rows.
 *
 * <p>Input rows: kind 'histogram' (window_start, direction, buckets, ios) or kind 'path' (window_start, direction,
 * slo_index, host, disk, beyond_array_us). Out: a row per path window with its histogram, as soon as both are in.
 * A side waits `wait_ms` (processing time) for the other: a side that comes later than that finds nothing and
 * waits in turn, as in the interval join it replaces. The entries expire with the job's state time-to-live (the
 * same wait), which clears what no other side came for. A histogram delivered again is dropped (the first is
 * kept; the path windows it already met are not sent again).
 */
@DataTypeHint("ROW<window_start TIMESTAMP_LTZ(3), direction STRING, `buckets` ARRAY<INT>, ios ARRAY<BIGINT>, "
        + "slo_index INT, host STRING, disk STRING, beyond_array_us DOUBLE>")
public final class PairVolumeWindows extends ProcessTableFunction<Row> {
    private static final long serialVersionUID = 1L;

    /** Processing time in ms: the wall clock, as the state's time-to-live counts it (the tests set their own). */
    transient LongSupplier clock = System::currentTimeMillis;

    public void eval(
            @StateHint(name = "histograms") MapView<String, WaitingHistogram> histograms,
            @StateHint(name = "paths") MapView<String, WaitingPathWindow> paths,
            @StateHint(name = "waiters") MapView<String, Integer> waiters,
            @ArgumentHint(value = ArgumentTrait.SET_SEMANTIC_TABLE, name = "input") Row input,
            @ArgumentHint(name = "wait_ms") Integer waitMs) throws Exception {
        if (clock == null) clock = System::currentTimeMillis;
        long now = clock.getAsLong();
        Instant window = input.getFieldAs("window_start");
        String direction = input.getFieldAs("direction");
        if (window == null || direction == null) return; // meets nothing, as in an equi-join
        String key = window.toEpochMilli() + "|" + direction;
        if ("histogram".equals(input.getFieldAs("kind"))) {
            WaitingHistogram held = fresh(histograms.get(key), now, waitMs);
            if (held != null) return; // delivered again: the first is kept
            WaitingHistogram h = WaitingHistogram.of(input, now);
            histograms.put(key, h);
            Integer n = waiters.get(key);
            if (n == null) return;
            waiters.remove(key);
            for (int i = 0; i < n; i++) {
                WaitingPathWindow p = paths.get(key + "#" + i);
                if (p == null) continue; // expired with the state's time-to-live
                paths.remove(key + "#" + i);
                if (now - p.arrivedMs <= waitMs) emit(window, direction, h, p);
            }
            return;
        }
        WaitingPathWindow p = WaitingPathWindow.of(input, now);
        WaitingHistogram h = fresh(histograms.get(key), now, waitMs);
        if (h != null) {
            emit(window, direction, h, p);
            return;
        }
        Integer n = waiters.get(key);
        int next = n == null ? 0 : n;
        paths.put(key + "#" + next, p);
        waiters.put(key, next + 1);
    }

    /** `h` if it came within the wait, else null (what the state's time-to-live has not cleared yet). */
    private static WaitingHistogram fresh(WaitingHistogram h, long now, long waitMs) {
        return h != null && now - h.arrivedMs <= waitMs ? h : null;
    }

    private void emit(Instant window, String direction, WaitingHistogram h, WaitingPathWindow p) {
        collect(Row.of(window, direction, h.buckets, h.ios, p.sloIndex, p.host, p.disk, p.beyondArrayUs));
    }
}
