package io.sanlens.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

/** The shape every detector run as a table function shares: built once, an event's row keyed by where and when. */
class DetectorFunctionTest {
    static final long T0 = Instant.parse("2026-11-27T16:08:30Z").toEpochMilli();

    /** A detector that reports a window's value as an event started at that window once it is over 100. */
    static final class Threshold {
        static int built;

        Threshold() {
            built++;
        }

        long[] add(long window, double value) {
            return value > 100 ? new long[] {window, (long) value} : null;
        }
    }

    /** The smallest function of this shape: its eval as Flink calls it, with the partition (host, disk). */
    static final class DetectThreshold extends DetectorFunction<Threshold, long[]> {
        public void eval(Row input) {
            emit(input, detector(Threshold::new).add(input.<Long>getFieldAs("window_ms"),
                    input.<Double>getFieldAs("value")), "host", "disk");
        }

        @Override
        protected long startedAt(long[] event) {
            return event[0];
        }

        @Override
        protected Object[] columns(long[] event) {
            return new Object[] {at(event[0]), event[1]};
        }
    }

    static List<Row> run(DetectThreshold function, Row... inputs) {
        List<Row> out = new ArrayList<>();
        function.setCollector(new Collector<>() {
            @Override
            public void collect(Row row) {
                out.add(row);
            }

            @Override
            public void close() {}
        });
        for (Row input : inputs) function.eval(input);
        return out;
    }

    static Row input(long windowMs, double value) {
        Row row = Row.withNames();
        row.setField("host", "acme-sql1");
        row.setField("disk", "D:");
        row.setField("window_ms", windowMs);
        row.setField("value", value);
        return row;
    }

    @Test
    void anEventIsOneRowItsIdThePartitionAndItsStartThenItsColumns() {
        Threshold.built = 0;
        List<Row> rows = run(new DetectThreshold(), input(T0, 40.0), input(T0 + 10_000, 250.0), input(T0 + 20_000, 90.0));
        assertEquals(1, rows.size(), "the windows at 40 and 90 report nothing");
        assertEquals(Row.of("acme-sql1|D:|2026-11-27T16:08:40Z", Instant.parse("2026-11-27T16:08:40Z"), 250L),
                rows.get(0));
        assertEquals(1, Threshold.built, "the detector is built at the first row, once");
    }

    @Test
    void anIdIsTheKeyColumnsAndTheStartJoinedByBars() {
        Row row = Row.withNames();
        row.setField("contributor", "fabric");
        row.setField("component", "fa1:0/20");
        row.setField("path", null);
        assertEquals("fabric|fa1:0/20|null|2026-11-27T16:08:30Z",
                DetectorFunction.id(row, T0, "contributor", "component", "path"));
        assertEquals("2026-11-27T16:08:30.250Z", DetectorFunction.id(row, T0 + 250));
    }

    @Test
    void anEventNotOverHasNoEnd() {
        assertNull(DetectorFunction.at(null));
        assertEquals(Instant.parse("2026-11-27T16:08:30Z"), DetectorFunction.at(T0));
    }
}
