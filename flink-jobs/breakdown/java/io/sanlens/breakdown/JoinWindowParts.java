package io.sanlens.breakdown;

import java.time.Instant;
import java.util.Arrays;

import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.ArgumentTrait;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.StateHint;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.table.functions.ProcessTableFunction;
import org.apache.flink.types.Row;

/**
 * join_window_parts(input => TABLE window_parts PARTITION BY (site, window_start)): each host disk's window on
 * its path meets the four parts of the same window it needs (its volume's service time, its HBA's outstanding
 * I/Os, its two switch ports' stall and discards) and goes out once all are in. One keyed function instead of
 * four joins: the parts are point lookups in a map, a window that waits is indexed by the part it waits for, and
 * the window's state expires with the job's state time-to-live (the samples' wait).
 *
 * <p>Input rows: kind 'path' (the path's columns, host_us, ios and the keys of the parts it needs: array_part,
 * hba_part, host_port_part, array_port_part) or a part (kind 'part': its key in `part`, its values in v1, v2). A
 * part delivered again replaces the first; a window already out is not sent again.
 */
@DataTypeHint("ROW<customer STRING, host STRING, disk STRING, direction STRING, host_port STRING, queue_depth INT, "
        + "switch STRING, host_switch_port STRING, array_switch_port STRING, hops INT, distance_km DOUBLE, "
        + "`array` STRING, volume STRING, valid_from TIMESTAMP_LTZ(3), host_us DOUBLE, ios BIGINT, "
        + "array_us DOUBLE, outstanding DOUBLE, host_port_stall DOUBLE, host_port_discards DOUBLE, "
        + "array_port_stall DOUBLE, array_port_discards DOUBLE>")
public final class JoinWindowParts extends ProcessTableFunction<Row> {
    private static final long serialVersionUID = 1L;

    public void eval(
            @StateHint(name = "parts") MapView<String, double[]> parts,
            @StateHint(name = "waiting") MapView<String, WaitingPath[]> waiting,
            @ArgumentHint(value = ArgumentTrait.SET_SEMANTIC_TABLE, name = "input") Row input) throws Exception {
        if ("path".equals(input.getFieldAs("kind"))) {
            meet(WaitingPath.of(input), parts, waiting);
            return;
        }
        String key = input.getFieldAs("part");
        Double v2 = input.getFieldAs("v2");
        parts.put(key, new double[] {input.<Double>getFieldAs("v1"), v2 == null ? 0 : v2});
        WaitingPath[] waiters = waiting.get(key);
        if (waiters == null) return;
        waiting.remove(key);
        for (WaitingPath w : waiters) meet(w, parts, waiting);
    }

    /** Looks up the parts `w` has not found yet; out if all are in, else it waits for the first one missing. */
    private void meet(WaitingPath w, MapView<String, double[]> parts, MapView<String, WaitingPath[]> waiting)
            throws Exception {
        if (w.arrayValues == null && (w.arrayValues = parts.get(w.arrayPart)) == null) {
            wait(w, w.arrayPart, waiting);
        } else if (w.hbaValues == null && (w.hbaValues = parts.get(w.hbaPart)) == null) {
            wait(w, w.hbaPart, waiting);
        } else if (w.hostPortValues == null && (w.hostPortValues = parts.get(w.hostPortPart)) == null) {
            wait(w, w.hostPortPart, waiting);
        } else if (w.arrayPortValues == null && (w.arrayPortValues = parts.get(w.arrayPortPart)) == null) {
            wait(w, w.arrayPortPart, waiting);
        } else {
            collect(Row.of(
                    w.customer, w.host, w.disk, w.direction, w.hostPort, w.queueDepth, w.switchName,
                    w.hostSwitchPort, w.arraySwitchPort, w.hops, w.distanceKm, w.array, w.volume,
                    w.validFromMs == null ? null : Instant.ofEpochMilli(w.validFromMs), w.hostUs, w.ios,
                    w.arrayValues[0], w.hbaValues[0], w.hostPortValues[0], w.hostPortValues[1],
                    w.arrayPortValues[0], w.arrayPortValues[1]));
        }
    }

    private static void wait(WaitingPath w, String part, MapView<String, WaitingPath[]> waiting) throws Exception {
        WaitingPath[] waiters = waiting.get(part);
        if (waiters == null) {
            waiting.put(part, new WaitingPath[] {w});
        } else {
            WaitingPath[] more = Arrays.copyOf(waiters, waiters.length + 1);
            more[waiters.length] = w;
            waiting.put(part, more);
        }
    }
}
