package io.sanlens.breakdown;

import static io.sanlens.common.DetectorFunction.at;

import io.sanlens.common.DetectorFunction;
import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.ArgumentTrait;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.StateHint;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.types.Row;

/**
 * detect_incidents(input => TABLE path_windows PARTITION BY path, window_length_ms => ..., ...): the Detector as a
 * process table function (common's DetectorFunction), once for each contributor on a path's way, its Tracks in
 * Flink's keyed state. One input row per path window: window_ms, ios, site, and per slot of SLOTS its component
 * ({@code <slot>_component}), its part ({@code <slot>_us}) and its discards ({@code <slot>_discards}). Each version
 * of the path (its components) has a Way of its own, as each contributor, component and path had a partition of its
 * own before: one state entry a window instead of four, and one row instead of four. One output row per incident
 * state (opened, still going, closed): its contributor and component, then its id, after the path.
 */
@DataTypeHint("ROW<contributor STRING, component STRING, incident_id STRING, site STRING, started_at TIMESTAMP_LTZ(3), "
        + "ended_at TIMESTAMP_LTZ(3), last_window TIMESTAMP_LTZ(3), windows INT, ios BIGINT, baseline_us DOUBLE, "
        + "excess_us DOUBLE, peak_us DOUBLE, severity STRING>")
public final class DetectIncidents extends DetectorFunction<Detector, Incident> {
    private static final long serialVersionUID = 1L;
    private static final double SEVERE_US = 80_000; // Brocade FPI: frames delayed 80 ms or more are frame loss
    /** The contributors on a path's way, as the input's columns name them (tables.py, INCIDENT_WINDOWS) ... */
    static final String[] SLOTS = {"host", "host_port", "array_port", "array"};
    /** ... and as an incident names them: the host's queueing, the fabric at each of two switch ports, the array. */
    static final String[] CONTRIBUTORS = {"host_queueing", "fabric", "fabric", "array"};

    public void eval(
            @StateHint(name = "ways", ttl = "1 d") MapView<String, Way> ways,
            @StateHint(name = "histories", ttl = "1 d") MapView<String, double[]> histories,
            @ArgumentHint(value = ArgumentTrait.SET_SEMANTIC_TABLE, name = "input") Row input,
            @ArgumentHint(name = "window_length_ms") Integer windowLengthMs,
            @ArgumentHint(name = "history_windows") Integer historyWindows,
            @ArgumentHint(name = "warmup_windows") Integer warmupWindows,
            @ArgumentHint(name = "quantile") Double quantile,
            @ArgumentHint(name = "relative_margin") Double relativeMargin,
            @ArgumentHint(name = "absolute_margin_us") Double absoluteMarginUs,
            @ArgumentHint(name = "open_after") Integer openAfter,
            @ArgumentHint(name = "close_after") Integer closeAfter) throws Exception {
        Detector detector = detector(() -> new Detector(windowLengthMs, historyWindows, warmupWindows, quantile,
                relativeMargin, absoluteMarginUs, openAfter, closeAfter, SEVERE_US));
        String[] components = new String[SLOTS.length];
        for (int s = 0; s < SLOTS.length; s++) components[s] = input.getFieldAs(SLOTS[s] + "_component");
        String version = String.join("|", components);
        Way way = ways.get(version);
        if (way == null) way = new Way();
        Track[] tracks = way.tracks();
        String path = input.getFieldAs("path"), site = input.getFieldAs("site");
        long window = input.<Long>getFieldAs("window_ms"), ios = input.<Long>getFieldAs("ios");
        for (int s = 0; s < SLOTS.length; s++) {
            Incident i = detector.add(tracks[s], new History(histories, version + "#" + s), window,
                    input.<Double>getFieldAs(SLOTS[s] + "_us"), ios, input.<Double>getFieldAs(SLOTS[s] + "_discards"),
                    site);
            emit(i, new Object[] {CONTRIBUTORS[s], components[s]}, CONTRIBUTORS[s], components[s], path);
        }
        ways.put(version, way);
    }

    @Override
    protected long startedAt(Incident i) {
        return i.startedAt;
    }

    @Override
    protected Object[] columns(Incident i) {
        return new Object[] {
            i.site, at(i.startedAt), at(i.endedAt), at(i.lastWindow), i.windows, i.ios, i.baselineUs, i.excessUs,
            i.peakUs, i.severity
        };
    }

    /**
     * One track's history as the Detector reads it (its one ring), kept in the path's map of histories under the
     * version and slot: the map is read only when a track's normal windows go into its ring.
     */
    static final class History extends MapView<Integer, double[]> {
        private final MapView<String, double[]> histories;
        private final String key;

        History(MapView<String, double[]> histories, String key) {
            this.histories = histories;
            this.key = key;
        }

        @Override
        public double[] get(Integer ring) throws Exception {
            return histories.get(key);
        }

        @Override
        public void put(Integer ring, double[] values) throws Exception {
            histories.put(key, values);
        }
    }
}
