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
        if (event == null) return;
        Object[] columns = columns(event);
        Object[] row = new Object[columns.length + 1];
        row[0] = id(input, startedAt(event), keyColumns);
        System.arraycopy(columns, 0, row, 1, columns.length);
        collect(Row.of(row));
    }

    /** An event's id: the values of the key columns and its start, joined by '|'. */
    public static String id(Row input, long startedAt, String... keyColumns) {
        StringBuilder id = new StringBuilder();
        for (String column : keyColumns) id.append(input.<Object>getFieldAs(column)).append('|');
        return id.append(Instant.ofEpochMilli(startedAt)).toString();
    }

    /** An epoch-ms time as a TIMESTAMP_LTZ column; null stays null (an event not over yet). */
    public static Instant at(Long epochMs) {
        return epochMs == null ? null : Instant.ofEpochMilli(epochMs);
    }
}
