package io.sanlens.breakdown;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

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
 * four joins: the parts are point lookups in a map, a window that waits is filed under the part it waits for, and
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
            @StateHint(name = "waiting") MapView<String, WaitingPath> waiting,
            @StateHint(name = "waiters") MapView<String, Integer> waiters,
            @ArgumentHint(value = ArgumentTrait.SET_SEMANTIC_TABLE, name = "input") Row input) throws Exception {
        Waiting queue = new Waiting(waiting, waiters);
        if ("path".equals(input.getFieldAs("kind"))) {
            meet(WaitingPath.of(input), parts, queue);
            return;
        }
        String key = input.getFieldAs("part");
        Double v2 = input.getFieldAs("v2");
        parts.put(key, new double[] {input.<Double>getFieldAs("v1"), v2 == null ? 0 : v2});
        for (WaitingPath w : queue.takeAll(key)) meet(w, parts, queue);
    }

    /** Looks up the parts `w` has not found yet; out if all are in, else it waits for the first one missing. */
    private void meet(WaitingPath w, MapView<String, double[]> parts, Waiting queue) throws Exception {
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
                    w.customer, w.host, w.disk, w.direction, w.hostPort, w.queueDepth, w.switchName,
                    w.hostSwitchPort, w.arraySwitchPort, w.hops, w.distanceKm, w.array, w.volume,
                    w.validFromMs == null ? null : Instant.ofEpochMilli(w.validFromMs), w.hostUs, w.ios,
                    w.arrayValues[0], w.hbaValues[0], w.hostPortValues[0], w.hostPortValues[1],
                    w.arrayPortValues[0], w.arrayPortValues[1]));
        }
    }

    /**
     * The paths waiting for each part, one state entry per path (`part#n`) and their count per part: a path added is
     * one write, whatever waits already. As one array per part, every path added rewrote the part's whole array, and
     * a switch port shared by thousands of paths (1,000 arrays behind one switch) stopped the job.
     */
    private static final class Waiting {
        private final MapView<String, WaitingPath> paths;
        private final MapView<String, Integer> counts;

        Waiting(MapView<String, WaitingPath> paths, MapView<String, Integer> counts) {
            this.paths = paths;
            this.counts = counts;
        }

        void add(String part, WaitingPath w) throws Exception {
            Integer n = counts.get(part);
            int next = n == null ? 0 : n;
            paths.put(part + "#" + next, w);
            counts.put(part, next + 1);
        }

        List<WaitingPath> takeAll(String part) throws Exception {
            Integer n = counts.get(part);
            if (n == null) return List.of();
            counts.remove(part);
            List<WaitingPath> taken = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                WaitingPath w = paths.get(part + "#" + i);
                if (w == null) continue; // expired with the state's time-to-live
                paths.remove(part + "#" + i);
                taken.add(w);
            }
            return taken;
        }
    }
}
