package io.sanlens.normalize;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Locale;

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
 *   <li>{@code sample}: the record's samples that are out, as its message on telemetry.samples (SampleJson);</li>
 *   <li>{@code dead}: the refused record, its reason, detail and where it came from;</li>
 *   <li>{@code count}: the record's accounting in one row: out or dead-lettered (with its reason), its samples
 *       in, out and dropped with one reason; a record whose samples are dropped for more reasons than one has
 *       a row more per reason. The job's SQL turns the columns into the accounting's rows (records in, out or
 *       dead-lettered; samples in, out, dropped per reason): a row per record, not per count, goes through the
 *       function's output (a row per count was a third of the job's time).</li>
 * </ul>
 * State: per record series, the last sample of each of its series (LastSamples, a map entry per record series,
 * under a hash of its name).
 * It has no time-to-live: Flink's TTL cleans a key's map up entry by entry on every access, and an array's key
 * holds hundreds of record series (that cleanup was a third of the job's time). A series that stops keeps its
 * few bytes. The catalog comes from the file named by the job parameter sanlens.catalog (the job writes it
 * from catalog.yaml).
 */
@FunctionHint(output = @DataTypeHint("ROW<kind STRING, sample BYTES, site STRING, arrival TIMESTAMP_LTZ(3), "
        + "arrival_s BIGINT, reason STRING, detail STRING, topic STRING, `partition` INT, `offset` BIGINT, "
        + "payload STRING, records_out INT, records_dead INT, samples_in INT, samples_out INT, dropped INT>"))
public final class NormalizeRecords extends ProcessTableFunction<Row> {
    private static final long serialVersionUID = 1L;
    public static final String CATALOG_PARAMETER = "sanlens.catalog";
    /**
     * A dead letter carries at most this many characters of its payload: escaped as JSON (up to six bytes a
     * character) it stays under the sink's 1 MiB request size, which a message near the broker's limit would
     * exceed and fail the job on, again at every restart.
     */
    static final int MAX_DEAD_PAYLOAD = 100_000;
    /**
     * The longest Kafka key taken, as long as a tag (Telegraf keys by the source tag): a record's samples are keyed by
     * its key, and a key near the broker's size limit made their message too large for the sink.
     */
    static final int MAX_KEY = Decoder.MAX_TAG;

    private transient Decoder decoder;
    private transient List<String> entityKeys;
    private transient SampleJson.Times times;
    private transient Dropped dropped;

    @Override
    public void open(FunctionContext context) throws Exception {
        String path = context.getJobParameter(CATALOG_PARAMETER, null);
        if (path == null) {
            throw new IllegalStateException("job parameter " + CATALOG_PARAMETER + " (the catalog's JSON file) is not set");
        }
        Catalog catalog = new Catalog(Files.readString(Path.of(path)));
        decoder = new Decoder(catalog);
        entityKeys = catalog.entityKeys;
        times = new SampleJson.Times();
        dropped = new Dropped();
    }

    public void eval(
            @StateHint(name = "last", ttl = "0") MapView<Long, byte[]> last,
            @ArgumentHint(name = "input", value = ArgumentTrait.SET_SEMANTIC_TABLE) Row record) throws Exception {
        Instant arrival = record.getFieldAs("arrival");
        long arrivalS = Math.floorDiv(arrival.toEpochMilli(), 1000);
        String key = record.getFieldAs("kafka_key");
        byte[] payload = record.getFieldAs("payload");
        Decoded d = key != null && key.length() > MAX_KEY
                ? new Decoded("bad key", "longer than " + MAX_KEY + " characters")
                : decoder.decode(payload, arrivalS * 1000);
        String site = d.site();
        if (d.outcome.equals(Decoded.DEAD)) {
            String[] letter = deadLetter(payload == null ? null : new String(payload, StandardCharsets.UTF_8), d.detail);
            collect(Row.of("dead", null, site, arrival, arrivalS, d.reason, letter[1], record.getFieldAs("kafka_topic"),
                    record.getFieldAs("kafka_partition"), record.getFieldAs("kafka_offset"), letter[0],
                    null, null, null, null, null));
            count(site, arrival, arrivalS, 0, 1, 0, 0, d.reason, 0);
            return;
        }
        dropped.clear();
        if (d.nUnknown > 0) dropped.add("field not in catalog", d.nUnknown);
        int out = 0;
        SampleJson json = null;
        long seriesKey = LastSamples.key(d.series);
        int check = LastSamples.check(d.series);
        LastSamples series = LastSamples.of(last.get(seriesKey), check, d.samples.size());
        for (int i = 0; i < d.samples.size(); i++) {
            Sample s = d.samples.get(i);
            int j = series.indexOf(s, i);
            Pairing.Previous prev = series.previous(j);
            String reason = Pairing.reason(s, d.tsMs, prev);
            if (reason.equals(Pairing.OUT)) {
                if (json == null) json = new SampleJson(entityKeys, times, d.tsMs, d.entity, arrival.toEpochMilli());
                json.add(s.metric, Pairing.value(s, d.tsMs, prev), s.unit, s.bucket);
                out++;
            } else {
                dropped.add(reason, 1);
            }
            series.set(j, s, d.tsMs);
        }
        if (!d.samples.isEmpty()) last.put(seriesKey, series.bytes(check));
        if (json != null) {
            collect(Row.of("sample", json.bytes(), null, null, null, null, null, null, null, null, null,
                    null, null, null, null, null));
        }
        count(site, arrival, arrivalS, 1, 0, d.nSamples, out, dropped.reason(0), dropped.n(0));
        for (int k = 1; k < dropped.size(); k++) {
            count(site, arrival, arrivalS, 0, 0, 0, 0, dropped.reason(k), dropped.n(k));
        }
    }

    /** A dead letter's payload and detail: a payload longer than MAX_DEAD_PAYLOAD is cut, and the detail says so. */
    public static String[] deadLetter(String payload, String detail) {
        if (payload == null || payload.length() <= MAX_DEAD_PAYLOAD) return new String[] {payload, detail};
        int cut = Character.isHighSurrogate(payload.charAt(MAX_DEAD_PAYLOAD - 1)) ? MAX_DEAD_PAYLOAD - 1 : MAX_DEAD_PAYLOAD;
        return new String[] {payload.substring(0, cut), detail + String.format(Locale.ROOT,
                "%spayload cut to its first %,d of %,d characters", detail.isEmpty() ? "" : "; ", cut, payload.length())};
    }

    private void count(String site, Instant arrival, long arrivalS, int recordsOut, int recordsDead, int samplesIn,
            int samplesOut, String reason, int dropped) {
        collect(Row.of("count", null, site, arrival, arrivalS, reason, null, null, null, null, null,
                recordsOut, recordsDead, samplesIn, samplesOut, dropped));
    }

    /** A record's dropped samples per reason, in the order the reasons first came. */
    private static final class Dropped {
        private final String[] reasons = new String[16];
        private final int[] ns = new int[16];
        private int size;

        void clear() {
            size = 0;
        }

        void add(String reason, int n) {
            for (int k = 0; k < size; k++) {
                if (reasons[k].equals(reason)) {
                    ns[k] += n;
                    return;
                }
            }
            reasons[size] = reason; // Pairing has fewer reasons than the room here
            ns[size++] = n;
        }

        int size() {
            return size;
        }

        String reason(int k) {
            return k < size ? reasons[k] : "";
        }

        int n(int k) {
            return k < size ? ns[k] : 0;
        }
    }
}
