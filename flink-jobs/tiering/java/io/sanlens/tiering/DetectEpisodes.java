package io.sanlens.tiering;

import static io.sanlens.common.DetectorFunction.at;

import io.sanlens.common.DetectorFunction;
import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.ArgumentTrait;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.StateHint;
import org.apache.flink.types.Row;

/**
 * detect_tier_episodes(input => TABLE tier_samples PARTITION BY (`array`, volume), window_length_ms => ..., ...):
 * the EpisodeDetector as a process table function (common's DetectorFunction), its Tiers in Flink's keyed state.
 * Input columns: window_ms, metric, value, site. One output row per episode state (confirmed, still moving,
 * settled), after the partition columns.
 */
@DataTypeHint("ROW<episode_id STRING, site STRING, direction STRING, started_at TIMESTAMP_LTZ(3), "
        + "detected_at TIMESTAMP_LTZ(3), settled_at TIMESTAMP_LTZ(3), last_window TIMESTAMP_LTZ(3), windows INT, "
        + "tier0_share_before DOUBLE, tier0_share_reached DOUBLE, tier0_bytes_reached DOUBLE, noise DOUBLE, "
        + "page_moves_up DOUBLE, page_moves_down DOUBLE>")
public final class DetectEpisodes extends DetectorFunction<EpisodeDetector, Episode> {
    private static final long serialVersionUID = 1L;
    // A re-delivered batch goes back seconds; a span played again (./sanlens demo, a backfill) goes back minutes.
    public static final int REPLAY_WINDOWS = 6;

    public void eval(
            @StateHint(name = "tiers", ttl = "7 d") Tiers tiers,
            @ArgumentHint(value = ArgumentTrait.SET_SEMANTIC_TABLE, name = "input") Row input,
            @ArgumentHint(name = "window_length_ms") Integer windowLengthMs,
            @ArgumentHint(name = "history_windows") Integer historyWindows,
            @ArgumentHint(name = "warmup_windows") Integer warmupWindows,
            @ArgumentHint(name = "slack") Double slack,
            @ArgumentHint(name = "threshold_noise") Double thresholdNoise,
            @ArgumentHint(name = "noise_floor") Double noiseFloor,
            @ArgumentHint(name = "min_shift") Double minShift,
            @ArgumentHint(name = "settle_windows") Integer settleWindows,
            @ArgumentHint(name = "settle_noise") Double settleNoise,
            @ArgumentHint(name = "rejoin_windows") Integer rejoinWindows) {
        EpisodeDetector detector = detector(() -> new EpisodeDetector(windowLengthMs, historyWindows, warmupWindows,
                slack, thresholdNoise, noiseFloor, minShift, settleWindows, settleNoise, rejoinWindows,
                REPLAY_WINDOWS));
        Episode e = detector.add(
                tiers,
                input.<Long>getFieldAs("window_ms"),
                input.getFieldAs("metric"),
                input.<Double>getFieldAs("value"),
                input.getFieldAs("site"));
        emit(input, e, "array", "volume");
    }

    @Override
    protected long startedAt(Episode e) {
        return e.startedAt;
    }

    @Override
    protected Object[] columns(Episode e) {
        return new Object[] {
            e.site, e.direction, at(e.startedAt), at(e.detectedAt), at(e.settledAt), at(e.lastWindow), e.windows,
            e.tier0ShareBefore, e.tier0ShareReached, e.tier0BytesReached, e.noise, e.pageMovesUp, e.pageMovesDown
        };
    }
}
