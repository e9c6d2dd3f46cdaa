package io.sanlens.breakdown;

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
 * join_window_parts(input => TABLE window_parts PARTITION BY site, version_wait_ms => ...): each host disk's window
 * meets every version of its path that began before the window, and each such path window meets the four parts of
 * the same window it needs (its volume's service time, its HBA's outstanding I/Os, its two switch ports' stall and
 * discards) and goes out once all are in. One keyed function instead of a join with the inventory and four joins
 * of parts: versions and parts are point lookups in maps, a window that waits is filed under what it waits for,
 * and what waits expires with the job's state time-to-live (the samples' wait).
 *
 * <p>Input rows, by kind:
 * <ul>
 *   <li>'version': a version of a path (its columns, valid_from, and the keys of its parts without the window:
 *       array_part without the direction). Kept without a time-to-live; a version published again replaces it.
 *   <li>'host': a host disk's window (window_start, host, disk, direction, host_us, ios). One that comes before
 *       any version of its path waits `version_wait_ms` (processing time) for them: the inventory is read whole at
 *       every start.
 *   <li>'part': a part of a window (window_start, its key in `part`, its values in v1, v2). A part delivered again
 *       replaces the first; a window already out is not sent again.
 * </ul>
 */
@DataTypeHint("ROW<window_start TIMESTAMP_LTZ(3), customer STRING, host STRING, disk STRING, direction STRING, "
        + "host_port STRING, queue_depth INT, switch STRING, host_switch_port STRING, array_switch_port STRING, "
        + "hops INT, distance_km DOUBLE, `array` STRING, volume STRING, valid_from TIMESTAMP_LTZ(3), "
        + "host_us DOUBLE, ios BIGINT, array_us DOUBLE, outstanding DOUBLE, host_port_stall DOUBLE, "
        + "host_port_discards DOUBLE, array_port_stall DOUBLE, array_port_discards DOUBLE>")
public final class JoinWindowParts extends ProcessTableFunction<Row> {
    private static final long serialVersionUID = 1L;

    /** Processing time in ms: the wall clock, as the state's time-to-live counts it (the tests set their own). */
    transient LongSupplier clock = System::currentTimeMillis;

    public void eval(
            @StateHint(name = "versions", ttl = "0") MapView<String, WaitingPath> versions,
            @StateHint(name = "version_index", ttl = "0") MapView<String, String> versionIndex,
            @StateHint(name = "unversioned") MapView<String, WaitingPath> unversioned,
            @StateHint(name = "unversioned_counts") MapView<String, Integer> unversionedCounts,
            @StateHint(name = "parts") MapView<String, double[]> parts,
            @StateHint(name = "waiting") MapView<String, WaitingPath> waiting,
            @StateHint(name = "waiters") MapView<String, Integer> waiters,
            @ArgumentHint(value = ArgumentTrait.SET_SEMANTIC_TABLE, name = "input") Row input,
            @ArgumentHint(name = "version_wait_ms") Integer versionWaitMs) throws Exception {
        if (clock == null) clock = System::currentTimeMillis;
        long now = clock.getAsLong();
        Waiting<WaitingPath> queue = new Waiting<>(waiting, waiters);
        String kind = input.getFieldAs("kind");
        if ("version".equals(kind)) {
            WaitingPath v = WaitingPath.version(input);
            if (v.validFromMs == null) return; // begins at no known time: meets nothing, as in a join on it
            String path = v.host + "|" + v.disk;
            String key = path + "|" + v.validFromMs;
            boolean known = versions.contains(key);
            versions.put(key, v);
            if (known) return; // published again: the windows it met are not sent again
            String index = versionIndex.get(path);
            versionIndex.put(path, index == null ? String.valueOf(v.validFromMs) : index + "," + v.validFromMs);
            // a window that came before any version of its path meets each version that comes within its wait
            Waiting<WaitingPath> early = new Waiting<>(unversioned, unversionedCounts);
            for (WaitingPath w : early.takeAll(path)) {
                if (now - w.arrivedMs > versionWaitMs) continue;
                if (v.validFromMs <= w.windowMs) meet(v.onWindow(w), parts, queue);
                early.add(path, w);
            }
            return;
        }
        Instant window = input.getFieldAs("window_start");
        if (window == null) return; // meets nothing, as in an equi-join
        if ("host".equals(kind)) {
            WaitingPath w = WaitingPath.window(input, window.toEpochMilli(), now);
            String path = w.host + "|" + w.disk;
            String index = versionIndex.get(path);
            if (index == null) {
                new Waiting<>(unversioned, unversionedCounts).add(path, w);
                return;
            }
            for (String validFrom : index.split(",")) {
                if (Long.parseLong(validFrom) > w.windowMs) continue;
                WaitingPath v = versions.get(path + "|" + validFrom);
                if (v != null) meet(v.onWindow(w), parts, queue);
            }
            return;
        }
        String key = window.toEpochMilli() + "|" + input.getFieldAs("part");
        Double v2 = input.getFieldAs("v2");
        parts.put(key, new double[] {input.<Double>getFieldAs("v1"), v2 == null ? 0 : v2});
        for (WaitingPath w : queue.takeAll(key)) meet(w, parts, queue);
    }

    /** Looks up the parts `w` has not found yet; out if all are in, else it waits for the first one missing. */
    private void meet(WaitingPath w, MapView<String, double[]> parts, Waiting<WaitingPath> queue) throws Exception {
        if (w.arrayValues == null && (w.arrayValues = parts.get(w.arrayPart)) == null) {
            queue.add(w.arrayPart, w);
        } else if (w.hbaValues == null && (w.hbaValues = parts.get(w.hbaPart)) == null) {
            queue.add(w.hbaPart, w);
        } else if (w.hostPortValues == null && (w.hostPortValues = parts.get(w.hostPortPart)) == null) {
            queue.add(w.hostPortPart, w);
        } else if (w.arrayPortValues == null && (w.arrayPortValues = parts.get(w.arrayPortPart)) == null) {
            queue.add(w.arrayPortPart, w);
        } else {
            collect(Row.of(
                    Instant.ofEpochMilli(w.windowMs), w.customer, w.host, w.disk, w.direction, w.hostPort,
                    w.queueDepth, w.switchName, w.hostSwitchPort, w.arraySwitchPort, w.hops, w.distanceKm, w.array,
                    w.volume, w.validFromMs == null ? null : Instant.ofEpochMilli(w.validFromMs), w.hostUs, w.ios,
                    w.arrayValues[0], w.hbaValues[0], w.hostPortValues[0], w.hostPortValues[1],
                    w.arrayPortValues[0], w.arrayPortValues[1]));
        }
    }
}
