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
 * detect_incidents(input => TABLE parts PARTITION BY (contributor, component, path), window_length_ms => ...,
 * ...): the Detector as a process table function (common's DetectorFunction), its Track in Flink's keyed state.
 * Input columns: window_ms, value_us, ios, discards, site. One output row per incident state (opened, still
 * going, closed), after the partition columns.
 */
@DataTypeHint("ROW<incident_id STRING, site STRING, started_at TIMESTAMP_LTZ(3), ended_at TIMESTAMP_LTZ(3), "
        + "last_window TIMESTAMP_LTZ(3), windows INT, ios BIGINT, baseline_us DOUBLE, excess_us DOUBLE, "
        + "peak_us DOUBLE, severity STRING>")
public final class DetectIncidents extends DetectorFunction<Detector, Incident> {
    private static final long serialVersionUID = 1L;
    private static final double SEVERE_US = 80_000; // Brocade FPI: frames delayed 80 ms or more are frame loss

    public void eval(
            @StateHint(name = "track", ttl = "1 d") Track track,
            @StateHint(name = "history", ttl = "1 d") MapView<Integer, double[]> history,
            @ArgumentHint(value = ArgumentTrait.SET_SEMANTIC_TABLE, name = "input") Row input,
            @ArgumentHint(name = "window_length_ms") Integer windowLengthMs,
            @ArgumentHint(name = "history_windows") Integer historyWindows,
            @ArgumentHint(name = "warmup_windows") Integer warmupWindows,
            @ArgumentHint(name = "quantile") Double quantile,
            @ArgumentHint(name = "relative_margin") Double relativeMargin,
            @ArgumentHint(name = "absolute_margin_us") Double absoluteMarginUs,
            @ArgumentHint(name = "open_after") Integer openAfter,
            @ArgumentHint(name = "close_after") Integer closeAfter) {
        Detector detector = detector(() -> new Detector(windowLengthMs, historyWindows, warmupWindows, quantile,
                relativeMargin, absoluteMarginUs, openAfter, closeAfter, SEVERE_US));
        Incident i = detector.add(
                track,
                history,
                input.<Long>getFieldAs("window_ms"),
                input.<Double>getFieldAs("value_us"),
                input.<Long>getFieldAs("ios"),
                input.<Double>getFieldAs("discards"),
                input.getFieldAs("site"));
        emit(input, i, "contributor", "component", "path");
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
}
