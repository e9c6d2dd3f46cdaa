package io.sanlens.burnrates;

import org.apache.flink.table.api.dataview.MapView;

/**
 * Where the evaluator keeps its cumulative good and total I/Os at the end of each of the last minutes and days,
 * slot by slot, so that a minute's evaluation reads a handful of slots instead of the whole history: in two
 * map views (the process table function's keyed map state; in tests, MapView's own HashMap), a block of 60
 * slots per map entry. With a slot per entry, 3 days of minutes were 4,320 entries per SLO and entity on the
 * heap, each a key, a two-element array and a time-to-live wrapper of its own: 1,000 arrays x 50 volumes, a
 * path per volume in two SLOs, would have held 432 million; in blocks, 7.2 million.
 */
public final class Rings {
    static final int BLOCK = 60; // slots per map entry: an hour of minutes

    private final MapView<Integer, double[]> minutes, days;

    public Rings(MapView<Integer, double[]> minutes, MapView<Integer, double[]> days) {
        this.minutes = minutes;
        this.days = days;
    }

    /** {good, total} at the end of the minute in `slot`, zeros if never written. */
    public double[] minute(int slot) {
        return read(minutes, slot);
    }

    public void minute(int slot, double good, double total) {
        write(minutes, slot, good, total);
    }

    public double[] day(int slot) {
        return read(days, slot);
    }

    public void day(int slot, double good, double total) {
        write(days, slot, good, total);
    }

    private static double[] read(MapView<Integer, double[]> view, int slot) {
        double[] block = block(view, slot);
        int i = slot % BLOCK * 2;
        return block == null ? new double[2] : new double[] {block[i], block[i + 1]};
    }

    private static void write(MapView<Integer, double[]> view, int slot, double good, double total) {
        double[] block = block(view, slot);
        if (block == null) block = new double[2 * BLOCK];
        int i = slot % BLOCK * 2;
        block[i] = good;
        block[i + 1] = total;
        try {
            view.put(slot / BLOCK, block);
        } catch (Exception e) {
            throw new IllegalStateException("burn-rate state unwritable", e);
        }
    }

    private static double[] block(MapView<Integer, double[]> view, int slot) {
        try {
            return view.get(slot / BLOCK);
        } catch (Exception e) {
            throw new IllegalStateException("burn-rate state unreadable", e);
        }
    }
}
