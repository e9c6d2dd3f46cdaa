package io.sanlens.normalize;

import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.TableFunction;
import org.apache.flink.types.Row;

/**
 * The normalize job's decoder as a SQL table function (SQL cannot walk a JSON object's keys):
 * decode_record(payload, arrival_ms) gives one row per record. The catalog comes from the file named
 * by the job parameter sanlens.catalog (the job writes it at start from catalog.yaml).
 */
@FunctionHint(output = @DataTypeHint("ROW<outcome STRING, reason STRING, detail STRING, series STRING, ts_ms BIGINT, "
        + "entity STRING, samples STRING, n_samples INT, n_unknown INT>"))
public final class DecodeRecord extends TableFunction<Row> {
    private static final long serialVersionUID = 1L;
    public static final String CATALOG_PARAMETER = "sanlens.catalog";

    private transient Decoder decoder;

    @Override
    public void open(FunctionContext context) throws Exception {
        String path = context.getJobParameter(CATALOG_PARAMETER, null);
        if (path == null) {
            throw new IllegalStateException("job parameter " + CATALOG_PARAMETER + " (the catalog's JSON file) is not set");
        }
        decoder = new Decoder(new Catalog(Files.readString(Path.of(path))));
    }

    public void eval(String payload, Long arrivalMs) {
        Decoded d = decoder.decode(payload, arrivalMs == null ? System.currentTimeMillis() : arrivalMs);
        collect(Row.of(d.outcome, d.reason, d.detail, d.series, d.tsMs, d.entity, d.samples, d.nSamples, d.nUnknown));
    }
}
