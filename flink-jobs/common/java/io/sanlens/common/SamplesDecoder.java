package io.sanlens.common;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.temporal.TemporalAccessor;
import java.time.temporal.TemporalQueries;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.formats.common.TimeFormats;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonParser;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonToken;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.util.Collector;

/**
 * A message of telemetry.samples (one record's samples: the fields they share, then each sample's own under
 * {@code samples}) as one row per sample whose metric is wanted. A column is the sample's field of that name,
 * else the message's. A message none of whose metrics is wanted is skipped by a scan of its bytes.
 *
 * <p>{@code pairs} (wanted metric -> another metric of the same record) fills the column {@value #PAIRED} of a
 * wanted sample with the value of its partner in the same message (null without one): a host disk's latency
 * and its I/O rate are samples of one record, so they meet here instead of in a join that holds the stream.
 *
 * <p>{@code gather} (metrics whose samples are a histogram: one per bucket) reads a message's samples of such a
 * metric as one row: the first sample's fields, with each sample's bucket in the column {@value #BUCKETS}
 * (ARRAY&lt;INT&gt;) and its value as a whole number in {@value #COUNTS} (ARRAY&lt;BIGINT&gt;), in the message's
 * order. A volume's interval histogram then travels as one row, not one per bucket (issue 38).
 */
public final class SamplesDecoder implements DeserializationSchema<RowData> {
    private static final long serialVersionUID = 1L;
    private static final byte[] METRIC_KEY = "\"metric\":\"".getBytes(StandardCharsets.UTF_8);
    static final String SAMPLES = "samples";
    static final String PAIRED = "paired";
    static final String BUCKETS = "buckets";
    static final String COUNTS = "counts";
    private static final int EXTRA = 3; // slots after the columns: the sample's metric, bucket and value as read

    private final String[] columns;
    private final HashMap<String, Integer> columnIndex = new HashMap<>();
    private final LogicalTypeRoot[] types;
    private final Set<String> metrics;
    private final Set<String> partnerMetrics; // pairs' values, looked up per sample
    private final Set<String> kept; // the metrics whose samples are read: those wanted, and their partners
    private final Map<String, String> pairs;
    private final Set<String> gather;
    private final int bucketsColumn;
    private final int countsColumn;
    private final int valueColumn;
    private final int pairedColumn;
    private final byte[][] wanted; // "<metric>" followed by its closing quote, as bytes
    private final TypeInformation<RowData> producedType;
    private transient JsonFactory json;

    public SamplesDecoder(List<String> columns, List<LogicalTypeRoot> types, Set<String> metrics,
            Map<String, String> pairs, Set<String> gather, TypeInformation<RowData> producedType) {
        this.columns = columns.toArray(new String[0]);
        for (int i = 0; i < this.columns.length; i++) columnIndex.putIfAbsent(this.columns[i], i);
        this.pairs = pairs;
        this.gather = gather;
        this.bucketsColumn = columns.indexOf(BUCKETS);
        this.countsColumn = columns.indexOf(COUNTS);
        this.valueColumn = columns.indexOf("value");
        this.pairedColumn = columns.indexOf(PAIRED);
        if (!pairs.isEmpty() && pairedColumn >= 0 && (valueColumn < 0 || types.get(pairedColumn) != LogicalTypeRoot.DOUBLE)) {
            throw new IllegalArgumentException("format sanlens-samples: pairs need the columns `value` and `paired` DOUBLE");
        }
        this.types = types.toArray(new LogicalTypeRoot[0]);
        for (int i = 0; i < this.types.length; i++) {
            if ((i == bucketsColumn || i == countsColumn) && this.types[i] == LogicalTypeRoot.ARRAY) continue;
            switch (this.types[i]) {
                case VARCHAR: case CHAR: case DOUBLE: case FLOAT: case INTEGER: case BIGINT:
                case TIMESTAMP_WITH_LOCAL_TIME_ZONE: case TIMESTAMP_WITHOUT_TIME_ZONE:
                    break;
                default:
                    throw new IllegalArgumentException(
                            "format sanlens-samples: column " + this.columns[i] + " has a type it does not read: " + this.types[i]);
            }
        }
        this.metrics = metrics;
        this.partnerMetrics = new HashSet<>(pairs.values());
        this.kept = new HashSet<>(metrics);
        if (pairedColumn >= 0) this.kept.addAll(partnerMetrics);
        this.wanted = metrics.stream().map(m -> (m + "\"").getBytes(StandardCharsets.UTF_8)).toArray(byte[][]::new);
        this.producedType = producedType;
    }

    @Override
    public void open(InitializationContext context) {
        json = new JsonFactory();
    }

    @Override
    public RowData deserialize(byte[] message) {
        throw new UnsupportedOperationException("a message holds several samples: deserialize(message, collector)");
    }

    @Override
    public void deserialize(byte[] message, Collector<RowData> out) throws IOException {
        if (message == null || !anyWanted(message)) return;
        if (json == null) json = new JsonFactory();
        Object[] shared = new Object[columns.length];
        Object[][] rows = new Object[0][];
        int n = 0;
        Map<String, Object> partners = pairedColumn >= 0 && !pairs.isEmpty() ? new HashMap<>(4) : null;
        Map<String, Gathered> gathered = null;
        try (JsonParser p = json.createParser(message)) {
            expect(p.nextToken(), JsonToken.START_OBJECT, "a JSON object");
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.getCurrentName();
                JsonToken t = p.nextToken();
                if (name.equals(SAMPLES)) {
                    expect(t, JsonToken.START_ARRAY, "an array of samples");
                    while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                        expect(t, JsonToken.START_OBJECT, "a sample as a JSON object");
                        Object[] row = new Object[columns.length + EXTRA];
                        if (!read(p, row)) continue;
                        String metric = (String) row[columns.length];
                        if (partners != null && metric != null && valueColumn >= 0 && partnerMetrics.contains(metric)) {
                            partners.put(metric, row[valueColumn]);
                        }
                        if (metric != null && gather.contains(metric) && metrics.contains(metric)) {
                            if (gathered == null) gathered = new LinkedHashMap<>(4);
                            Gathered g = gathered.get(metric);
                            if (g == null) {
                                gathered.put(metric, g = new Gathered());
                                if (n == rows.length) rows = Arrays.copyOf(rows, Math.max(8, 2 * n));
                                rows[n++] = row;
                            }
                            g.add(row);
                        } else if (metric != null && metrics.contains(metric)) {
                            if (n == rows.length) rows = Arrays.copyOf(rows, Math.max(8, 2 * n));
                            rows[n++] = row;
                        }
                    }
                } else {
                    set(p, t, name, shared);
                }
            }
        } catch (IOException | RuntimeException e) {
            throw new IOException("telemetry.samples: a message that is not the contract's ("
                    + e.getMessage() + "): " + new String(message, 0, Math.min(message.length, 300), StandardCharsets.UTF_8), e);
        }
        for (int r = 0; r < n; r++) {
            if (partners != null) {
                String partner = pairs.get((String) rows[r][columns.length]);
                rows[r][pairedColumn] = partner == null ? null : partners.get(partner);
            }
            GenericRowData row = new GenericRowData(columns.length);
            for (int i = 0; i < columns.length; i++) {
                row.setField(i, rows[r][i] != null ? rows[r][i] : shared[i]);
            }
            Gathered g = gathered == null ? null : gathered.get((String) rows[r][columns.length]);
            if (g != null) {
                if (bucketsColumn >= 0) row.setField(bucketsColumn, new GenericArrayData(Arrays.copyOf(g.buckets, g.n)));
                if (countsColumn >= 0) row.setField(countsColumn, new GenericArrayData(Arrays.copyOf(g.counts, g.n)));
            }
            out.collect(row);
        }
    }

    /**
     * A sample's fields into `row`; its metric, bucket and value as read also into the slots after the columns.
     * False, and the rest of the sample skipped unread, if its metric comes first (SampleJson writes it so) and is
     * neither wanted nor a wanted one's partner: most samples of a message are not a job's.
     */
    private boolean read(JsonParser p, Object[] row) throws IOException {
        boolean first = true;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.getCurrentName();
            JsonToken t = p.nextToken();
            if (name.equals("metric") && t == JsonToken.VALUE_STRING) {
                String metric = p.getText();
                if (first && !kept.contains(metric)) {
                    skipRest(p);
                    return false;
                }
                row[columns.length] = metric;
            }
            if (name.equals("bucket") && t == JsonToken.VALUE_NUMBER_INT) row[columns.length + 1] = p.getIntValue();
            if (name.equals("value") && t.isNumeric()) row[columns.length + 2] = p.getDoubleValue();
            set(p, t, name, row);
            first = false;
        }
        return true;
    }

    /** Past the end of the object the parser is in. */
    private static void skipRest(JsonParser p) throws IOException {
        for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
            if (t == null) throw new IOException("a sample's object does not end");
            if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) p.skipChildren();
        }
    }

    /** A message's samples of one gathered metric: their buckets and counts, in the message's order. */
    private final class Gathered {
        int[] buckets = new int[8];
        long[] counts = new long[8];
        int n;

        void add(Object[] sample) {
            Object bucket = sample[columns.length + 1];
            Object value = sample[columns.length + 2];
            if (bucket == null || value == null) {
                throw new IllegalArgumentException(sample[columns.length] + ": a histogram sample needs a bucket and a value");
            }
            if (n == buckets.length) {
                buckets = Arrays.copyOf(buckets, 2 * n);
                counts = Arrays.copyOf(counts, 2 * n);
            }
            buckets[n] = (Integer) bucket;
            counts[n++] = Math.round((Double) value);
        }
    }

    private void set(JsonParser p, JsonToken t, String name, Object[] into) throws IOException {
        int i = indexOf(name);
        if (i < 0 || t == JsonToken.VALUE_NULL) {
            p.skipChildren();
            return;
        }
        if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
            throw new IllegalArgumentException(name + " is not a single value");
        }
        switch (types[i]) {
            case VARCHAR: case CHAR:
                into[i] = StringData.fromString(p.getValueAsString());
                break;
            case DOUBLE:
                into[i] = p.getDoubleValue();
                break;
            case FLOAT:
                into[i] = p.getFloatValue();
                break;
            case INTEGER:
                into[i] = p.getIntValue();
                break;
            case BIGINT:
                into[i] = p.getLongValue();
                break;
            default: // the timestamps, as SampleJson writes them: ISO-8601 in UTC
                String text = p.getText();
                LocalDateTime local = utc(text);
                if (local == null) {
                    TemporalAccessor at = TimeFormats.ISO8601_TIMESTAMP_WITH_LOCAL_TIMEZONE_FORMAT.parse(text);
                    local = LocalDateTime.of(at.query(TemporalQueries.localDate()), at.query(TemporalQueries.localTime()));
                }
                into[i] = types[i] == LogicalTypeRoot.TIMESTAMP_WITH_LOCAL_TIME_ZONE
                        ? TimestampData.fromInstant(local.toInstant(ZoneOffset.UTC))
                        : TimestampData.fromLocalDateTime(local);
        }
    }

    /**
     * `2026-11-22T14:24:30Z` or `2026-11-22T14:24:30.537Z`, SampleJson's two shapes, read digit by digit (a
     * DateTimeFormatter's parse was a tenth of a job's reading); null for any other shape, which the formatter
     * then reads.
     */
    static LocalDateTime utc(String t) {
        int n = t.length();
        if ((n != 20 && n != 24) || t.charAt(n - 1) != 'Z' || t.charAt(4) != '-' || t.charAt(7) != '-'
                || t.charAt(10) != 'T' || t.charAt(13) != ':' || t.charAt(16) != ':' || (n == 24 && t.charAt(19) != '.')) {
            return null;
        }
        int year = digits(t, 0, 4), month = digits(t, 5, 2), day = digits(t, 8, 2);
        int hour = digits(t, 11, 2), minute = digits(t, 14, 2), second = digits(t, 17, 2);
        int milli = n == 24 ? digits(t, 20, 3) : 0;
        if ((year | month | day | hour | minute | second | milli) < 0) return null;
        try {
            return LocalDateTime.of(year, month, day, hour, minute, second, milli * 1_000_000);
        } catch (DateTimeException e) {
            return null; // out of range: the formatter says why
        }
    }

    /** The number of `count` decimal digits at `from`, or -1. */
    private static int digits(String t, int from, int count) {
        int v = 0;
        for (int i = from; i < from + count; i++) {
            int d = t.charAt(i) - '0';
            if (d < 0 || d > 9) return -1;
            v = v * 10 + d;
        }
        return v;
    }

    private int indexOf(String name) {
        Integer i = columnIndex.get(name);
        return i == null ? -1 : i;
    }

    private static void expect(JsonToken t, JsonToken wanted, String what) {
        if (t != wanted) throw new IllegalArgumentException("expected " + what + ", found " + t);
    }

    /**
     * Whether a wanted metric follows some {@code "metric":"} in the message. An unescaped quote cannot stand
     * inside a JSON string, so those bytes are the key itself; a message without the key is decoded, for the
     * decoder to judge it.
     */
    boolean anyWanted(byte[] message) {
        boolean keyed = false;
        for (int at = indexOf(message, METRIC_KEY, 0); at >= 0; at = indexOf(message, METRIC_KEY, at + 1)) {
            keyed = true;
            int from = at + METRIC_KEY.length;
            for (byte[] w : wanted) {
                if (from + w.length <= message.length && Arrays.equals(message, from, from + w.length, w, 0, w.length)) {
                    return true;
                }
            }
        }
        return !keyed;
    }

    private static int indexOf(byte[] message, byte[] key, int from) {
        outer:
        for (int i = from; i + key.length <= message.length; i++) {
            for (int j = 0; j < key.length; j++) {
                if (message[i + j] != key[j]) continue outer;
            }
            return i;
        }
        return -1;
    }

    @Override
    public boolean isEndOfStream(RowData next) {
        return false;
    }

    @Override
    public TypeInformation<RowData> getProducedType() {
        return producedType;
    }
}
