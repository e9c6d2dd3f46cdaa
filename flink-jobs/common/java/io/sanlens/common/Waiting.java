package io.sanlens.common;

import java.util.ArrayList;
import java.util.List;

import org.apache.flink.table.api.dataview.MapView;

/**
 * What waits in a keyed function's map state under a key, one state entry per waiting item (`key#n`) and their
 * count per key: an item added is one write, whatever waits already. As one array per key, every item added
 * rewrote the key's whole array, and a switch port shared by thousands of paths (1,000 arrays behind one switch)
 * stopped the breakdown job.
 */
public final class Waiting<T> {
    private final MapView<String, T> items;
    private final MapView<String, Integer> counts;

    public Waiting(MapView<String, T> items, MapView<String, Integer> counts) {
        this.items = items;
        this.counts = counts;
    }

    public void add(String key, T item) throws Exception {
        Integer n = counts.get(key);
        int next = n == null ? 0 : n;
        items.put(key + "#" + next, item);
        counts.put(key, next + 1);
    }

    /** The items filed under `key`, removed from the state (those its time-to-live cleared are skipped). */
    public List<T> takeAll(String key) throws Exception {
        Integer n = counts.get(key);
        if (n == null) return List.of();
        counts.remove(key);
        List<T> taken = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            T item = items.get(key + "#" + i);
            if (item == null) continue;
            items.remove(key + "#" + i);
            taken.add(item);
        }
        return taken;
    }
}
