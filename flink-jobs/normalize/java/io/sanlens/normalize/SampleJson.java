package io.sanlens.normalize;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;

import org.apache.flink.formats.common.TimeFormats;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.io.JsonStringEncoder;

/**
 * A record's message on telemetry.samples (docs/contract.md): what its samples share (time, entity, arrival)
 * once, then each sample that is out (metric, value, unit, bucket) in `samples`. One message a record instead
 * of one a sample: the shared fields are written, sent and read once. The same text Flink's JSON format writes
 * for the contract's row: fields in the contract's order, timestamps as its ISO-8601 TimeFormats in UTC,
 * numbers and escapes as Jackson writes them (tests/test_sample_json.py compares the two).
 */
public final class SampleJson {
    private static final JsonStringEncoder ESCAPE = JsonStringEncoder.getInstance();

    private final StringBuilder text = new StringBuilder(1024);
    private int samples;

    public SampleJson(List<String> entityKeys, long tsMs, String[] entity, long arrivalMs) {
        this(entityKeys, new Times(), tsMs, entity, arrivalMs);
    }

    /** `times`: the writer's last formatted times, kept by the caller from one record to the next. */
    public SampleJson(List<String> entityKeys, Times times, long tsMs, String[] entity, long arrivalMs) {
        text.append("{\"ts\":\"").append(times.ts.of(tsMs)).append('"');
        for (int i = 0; i < entity.length; i++) {
            text.append(",\"").append(entityKeys.get(i)).append("\":\"");
            quote(entity[i], text);
            text.append('"');
        }
        text.append(",\"arrived_at\":\"").append(times.arrival.of(arrivalMs)).append("\",\"samples\":[");
    }

    public SampleJson add(String metric, double value, String unit, int bucket) {
        text.append(samples++ == 0 ? "{\"metric\":\"" : ",{\"metric\":\"");
        quote(metric, text);
        text.append("\",\"value\":").append(value).append(",\"unit\":\"");
        quote(unit, text);
        text.append("\",\"bucket\":").append(bucket).append('}');
        return this;
    }

    public int size() {
        return samples;
    }

    public byte[] bytes() {
        return (text + "]}").getBytes(StandardCharsets.UTF_8);
    }

    /**
     * `s` escaped into `out` as Flink's JSON format (Jackson 2) escapes a string: a character outside the Basic
     * Multilingual Plane as its two escaped surrogates; a lone surrogate became '?' on its way through Flink's
     * UTF-8 strings.
     */
    static void quote(String s, StringBuilder out) {
        int from = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!Character.isSurrogate(c)) continue;
            ESCAPE.quoteAsString(s.subSequence(from, i), out);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                out.append(String.format("\\u%04X\\u%04X", (int) c, (int) s.charAt(++i)));
            } else {
                out.append('?');
            }
            from = i + 1;
        }
        ESCAPE.quoteAsString(from == 0 ? s : s.subSequence(from, s.length()), out);
    }

    /**
     * The times a writer formatted last: the records of one poll share their time, and the records read together
     * their arrival (formatting was 4 % of the job's CPU at 1,000 arrays).
     */
    public static final class Times {
        final Formatted ts = new Formatted(), arrival = new Formatted();
    }

    private static final class Formatted {
        long ms = Long.MIN_VALUE;
        String text;

        String of(long epochMs) {
            if (epochMs != ms) {
                ms = epochMs;
                text = iso(epochMs);
            }
            return text;
        }
    }

    static String iso(long epochMs) {
        return TimeFormats.ISO8601_TIMESTAMP_WITH_LOCAL_TIMEZONE_FORMAT.format(
                Instant.ofEpochMilli(epochMs).atOffset(ZoneOffset.UTC));
    }
}
