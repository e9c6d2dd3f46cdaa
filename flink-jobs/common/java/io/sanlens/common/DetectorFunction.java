package io.sanlens.common;

import java.time.Instant;
import java.util.function.Supplier;

import org.apache.flink.table.functions.ProcessTableFunction;
import org.apache.flink.types.Row;

/**
 * A detector run as a process table function: the shape of the breakdown's DetectIncidents and the tiering job's
 * DetectEpisodes. The detector itself is plain Java over a state object (tested on its own, in JUnit and through
 * py4j); the function builds it once from the call's arguments (literals: the same for every row), feeds it the
 * partition's rows with its state in Flink's keyed state, and turns each event it reports (an incident, an
 * episode: once confirmed, at every window it lasts, once over) into one output row. The row's first column is
 * the event's id, {@code <partition key>|<start, ISO-8601>}: the same for every state of one event, so that the
 * keyed table downstream keeps its last; then the event's own columns.
 *
 * <p>A subclass declares {@code eval}: Flink reads the state and the arguments from its signature, and the
 * state's names and types are what a checkpoint restores, so they stay with the subclass. In it, it takes its
 * detector from {@link #detector(Supplier)} and hands what the detector returns to {@link #emit}.
 *
 * @param <D> the detector
 * @param <E> an event's state as the detector reports it
 */
public abstract class DetectorFunction<D, E> extends ProcessTableFunction<Row> {
    private static final long serialVersionUID = 1L;

    private transient D detector;

    /** The detector, built by {@code create} at the first row. */
    protected final D detector(Supplier<D> create) {
        if (detector == null) detector = create.get();
        return detector;
    }

    /** When the event started (epoch ms): with the partition's key, its id. */
    protected abstract long startedAt(E event);

    /** The event's columns after its id, in the order of the function's output type. */
    protected abstract Object[] columns(E event);

    /** One output row for {@code event}, none for null; {@code keyColumns}: the partition's columns of the input. */
    protected final void emit(Row input, E event, String... keyColumns) {
        if (event != null) emit(event, new Object[0], values(input, keyColumns));
    }

    /**
     * One output row for {@code event}, none for null: the {@code leading} columns (a function whose partition
     * follows several events names each one's own key columns in them), its id of {@code key} and its start, then
     * its own columns.
     */
    protected final void emit(E event, Object[] leading, Object... key) {
        if (event == null) return;
        Object[] columns = columns(event);
        Object[] row = new Object[leading.length + 1 + columns.length];
        System.arraycopy(leading, 0, row, 0, leading.length);
        row[leading.length] = id(startedAt(event), key);
        System.arraycopy(columns, 0, row, leading.length + 1, columns.length);
        collect(Row.of(row));
    }

    /** An event's id: the values of the key columns and its start, joined by '|'. */
    public static String id(Row input, long startedAt, String... keyColumns) {
        return id(startedAt, values(input, keyColumns));
    }

    /** An event's id: the key's values and its start, joined by '|'. */
    public static String id(long startedAt, Object... key) {
        StringBuilder id = new StringBuilder();
        for (Object value : key) id.append(value).append('|');
        return id.append(Instant.ofEpochMilli(startedAt)).toString();
    }

    private static Object[] values(Row input, String... columns) {
        Object[] values = new Object[columns.length];
        for (int i = 0; i < values.length; i++) values[i] = input.getFieldAs(columns[i]);
        return values;
    }

    /** An epoch-ms time as a TIMESTAMP_LTZ column; null stays null (an event not over yet). */
    public static Instant at(Long epochMs) {
        return epochMs == null ? null : Instant.ofEpochMilli(epochMs);
    }
}
