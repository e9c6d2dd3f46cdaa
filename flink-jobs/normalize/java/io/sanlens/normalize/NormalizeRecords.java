package io.sanlens.normalize;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.ArgumentTrait;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.annotation.StateHint;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.ProcessTableFunction;
import org.apache.flink.types.Row;

/**
 * The normalize job's one operator, a process table function over the raw records partitioned by their
 * Kafka key (Telegraf keys by source, so every series of a source meets its previous sample here, in
 * arrival order). Per record it emits, in one row type told apart by `kind`:
 * <ul>
 *   <li>{@code sample}: each sample that is out, with its canonical value and entity;</li>
 *   <li>{@code dead}: the refused record, its reason, detail and where it came from;</li>
 *   <li>{@code count}: the record's accounting (records in, out or dead-lettered; samples in, out,
 *       dropped per reason), one row per outcome and reason, so the accounting adds up records, not
 *       samples.</li>
 * </ul>
 * State: per series, its last sample (a map entry per series). It has no time-to-live: Flink's TTL cleans
 * a key's map up entry by entry on every access, and an array's key holds thousands of series (that
 * cleanup was a third of the job's time). A series that stops keeps its few bytes. The catalog
 * comes from the file named by the job parameter sanlens.catalog (the job writes it from catalog.yaml).
 */
@FunctionHint(output = @DataTypeHint("ROW<kind STRING, ts_ms BIGINT, metric STRING, `value` DOUBLE, unit STRING, "
        + "bucket INT, entity ARRAY<STRING>, site STRING, arrival TIMESTAMP_LTZ(3), arrival_s BIGINT, outcome STRING, "
        + "reason STRING, detail STRING, n INT, topic STRING, `partition` INT, `offset` BIGINT, payload STRING>"))
public final class NormalizeRecords extends ProcessTableFunction<Row> {
    private static final long serialVersionUID = 1L;
    public static final String CATALOG_PARAMETER = "sanlens.catalog";
    private static final char SEPARATOR = '\u001f';
    /**
     * A dead letter carries at most this many characters of its payload: escaped as JSON (up to six bytes a
     * character) it stays under the sink's 1 MiB request size, which a message near the broker's limit would
     * exceed and fail the job on, again at every restart.
     */
    static final int MAX_DEAD_PAYLOAD = 100_000;
    /**
     * The longest Kafka key taken, as long as a tag (Telegraf keys by the source tag): each sample is keyed by its
     * record's key, and a key near the broker's size limit made a sample too large for the sink.
     */
    static final int MAX_KEY = Decoder.MAX_TAG;

    private transient Decoder decoder;

    @Override
    public void open(FunctionContext context) throws Exception {
        String path = context.getJobParameter(CATALOG_PARAMETER, null);
        if (path == null) {
            throw new IllegalStateException("job parameter " + CATALOG_PARAMETER + " (the catalog's JSON file) is not set");
        }
        decoder = new Decoder(new Catalog(Files.readString(Path.of(path))));
    }

    public void eval(
            @StateHint(name = "previous", ttl = "0") MapView<String, Pairing.Previous> previous,
            @ArgumentHint(name = "input", value = ArgumentTrait.SET_SEMANTIC_TABLE) Row record) throws Exception {
        Instant arrival = record.getFieldAs("arrival");
        long arrivalS = Math.floorDiv(arrival.toEpochMilli(), 1000);
        String key = record.getFieldAs("kafka_key");
        Decoded d = key != null && key.length() > MAX_KEY
                ? new Decoded("bad key", "longer than " + MAX_KEY + " characters")
                : decoder.decode(record.getFieldAs("payload"), arrivalS * 1000);
        String site = d.site();
        count(site, arrival, arrivalS, "records", "in", "", 1);
        if (d.outcome.equals(Decoded.DEAD)) {
            count(site, arrival, arrivalS, "records", "deadletter", d.reason, 1);
            String[] letter = deadLetter(record.getFieldAs("payload"), d.detail);
            collect(Row.of("dead", null, null, null, null, null, null, site, arrival, arrivalS, null, d.reason, letter[1],
                    null, record.getFieldAs("kafka_topic"), record.getFieldAs("kafka_partition"),
                    record.getFieldAs("kafka_offset"), letter[0]));
            return;
        }
        count(site, arrival, arrivalS, "records", "out", "", 1);
        if (d.nSamples > 0) count(site, arrival, arrivalS, "samples", "in", "", d.nSamples);
        if (d.nUnknown > 0) count(site, arrival, arrivalS, "samples", "dropped", "field not in catalog", d.nUnknown);
        Map<String, Integer> verdicts = new LinkedHashMap<>();
        for (Sample s : d.samples) {
            String series = d.series + SEPARATOR + s.metric + SEPARATOR + s.bucket;
            Pairing.Previous prev = previous.get(series);
            String reason = Pairing.reason(s, d.tsMs, prev);
            if (reason.equals(Pairing.OUT)) {
                collect(Row.of("sample", d.tsMs, s.metric, Pairing.value(s, d.tsMs, prev), s.unit, s.bucket, d.entity,
                        site, arrival, arrivalS, null, null, null, null, null, null, null, null));
            }
            previous.put(series, new Pairing.Previous(d.tsMs, s));
            verdicts.merge(reason, 1, Integer::sum);
        }
        verdicts.forEach((reason, n) -> count(site, arrival, arrivalS, "samples",
                reason.equals(Pairing.OUT) ? "out" : "dropped", reason, n));
    }

    /** A dead letter's payload and detail: a payload longer than MAX_DEAD_PAYLOAD is cut, and the detail says so. */
    public static String[] deadLetter(String payload, String detail) {
        if (payload == null || payload.length() <= MAX_DEAD_PAYLOAD) return new String[] {payload, detail};
        int cut = Character.isHighSurrogate(payload.charAt(MAX_DEAD_PAYLOAD - 1)) ? MAX_DEAD_PAYLOAD - 1 : MAX_DEAD_PAYLOAD;
        return new String[] {payload.substring(0, cut), detail + String.format(Locale.ROOT,
                "%spayload cut to its first %,d of %,d characters", detail.isEmpty() ? "" : "; ", cut, payload.length())};
    }

    private void count(String site, Instant arrival, long arrivalS, String unit, String outcome, String reason, int n) {
        collect(Row.of("count", null, null, null, unit, null, null, site, arrival, arrivalS, outcome, reason, null, n,
                null, null, null, null));
    }
}
