package io.sanlens.common;

import java.util.ArrayList;
import java.util.List;

import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

/** A function's output in a test: the rows it collected, in order (`function.setCollector(out)`). */
public final class CollectedRows implements Collector<Row> {
    public final List<Row> rows = new ArrayList<>();

    @Override
    public void collect(Row row) {
        rows.add(row);
    }

    @Override
    public void close() {}
}
