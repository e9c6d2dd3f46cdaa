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
 * numbers and escapes as Jackson writes them (tests/unit/test_sample_json.py compares the two).
 */
public final class SampleJson {
    private static final JsonStringEncoder ESCAPE = JsonStringEncoder.getInstance();

    private final StringBuilder text = new StringBuilder(1024);
    private int samples;

    public SampleJson(List<String> entityKeys, long tsMs, String[] entity, long arrivalMs) {
        this(entityKeys, new Times(), tsMs, entity, arrivalMs);
    }

    /** `times`: the seconds the writer formatted last (Times). */
    public SampleJson(List<String> entityKeys, Times times, long tsMs, String[] entity, long arrivalMs) {
        text.append("{\"ts\":\"");
        times.ts.append(tsMs, text);
        text.append('"');
        for (int i = 0; i < entity.length; i++) {
            text.append(",\"").append(entityKeys.get(i)).append("\":\"");
            quote(entity[i], text);
            text.append('"');
        }
        text.append(",\"arrived_at\":\"");
        times.arrival.append(arrivalMs, text);
        text.append("\",\"samples\":[");
    }

    public SampleJson add(String metric, double value, String unit, int bucket) {
        text.append(samples++ == 0 ? "{\"metric\":\"" : ",{\"metric\":\"");
        quote(metric, text);
        text.append("\",\"value\":");
        number(value, text);
        text.append(",\"unit\":\"");
        quote(unit, text);
        text.append("\",\"bucket\":").append(bucket).append('}');
        return this;
    }

    /**
     * `value` as Double.toString writes it (as Jackson does), a whole number below 10^7 without the float
     * formatting: most samples are counts (histogram buckets' deltas), and formatting doubles was a third of
     * writing the messages.
     */
    static void number(double value, StringBuilder out) {
        long whole = (long) value;
        if (whole == value && whole > -10_000_000L && whole < 10_000_000L
                && Double.doubleToRawLongBits(value) != NEGATIVE_ZERO) {
            out.append(whole).append(".0");
        } else {
            out.append(value);
        }
    }

    private static final long NEGATIVE_ZERO = Double.doubleToRawLongBits(-0.0);

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
     * The seconds a writer formatted last, kept by the caller from one record to the next: the records of one poll
     * share their time, and the records read together their arrival's second (formatting whole times was 4 % of
     * the job's CPU at 1,000 arrays, then 3 % with a record's milliseconds formatted afresh).
     */
    public static final class Times {
        final Formatted ts = new Formatted(), arrival = new Formatted();
    }

    /** A time as ISO-8601 with its milliseconds, the text of its second kept from the time before. */
    private static final class Formatted {
        long second = Long.MIN_VALUE;
        String secondText;

        void append(long epochMs, StringBuilder out) {
            long s = Math.floorDiv(epochMs, 1000);
            if (s != second) {
                second = s;
                String whole = iso(s * 1000);
                secondText = whole.substring(0, whole.length() - 1); // without its 'Z'
            }
            out.append(secondText);
            int millis = (int) Math.floorMod(epochMs, 1000);
            if (millis != 0) { // as ISO-8601 writes a fraction: its digits up to the last that is not zero
                out.append('.').append((char) ('0' + millis / 100));
                if (millis % 100 != 0) {
                    out.append((char) ('0' + millis / 10 % 10));
                    if (millis % 10 != 0) out.append((char) ('0' + millis % 10));
                }
            }
            out.append('Z');
        }
    }

    static String iso(long epochMs) {
        return TimeFormats.ISO8601_TIMESTAMP_WITH_LOCAL_TIMEZONE_FORMAT.format(
                Instant.ofEpochMilli(epochMs).atOffset(ZoneOffset.UTC));
    }
}
