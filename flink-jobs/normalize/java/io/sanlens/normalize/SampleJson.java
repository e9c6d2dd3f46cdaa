package io.sanlens.normalize;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.List;

import org.apache.flink.formats.common.TimeFormats;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.io.JsonStringEncoder;

/**
 * The messages of telemetry.samples (docs/contract.md), written here instead of by Flink's JSON format: every
 * sample of a record shares its time, entity and arrival, so those are escaped and formatted once per record,
 * and a sample adds its metric, value, unit and bucket. The same text Flink's JSON format wrote for the same
 * row: fields in the contract's order, timestamps as its ISO-8601 TimeFormats in UTC, numbers and escapes as
 * Jackson writes them (tests/test_sample_json.py compares the two).
 */
public final class SampleJson {
    private static final JsonStringEncoder ESCAPE = JsonStringEncoder.getInstance();

    private final byte[] head; // {"ts":"…","metric":
    private final byte[] tail; // ,"site":"…",…,"arrived_at":"…"}

    public SampleJson(List<String> entityKeys, long tsMs, String[] entity, long arrivalMs) {
        head = ("{\"ts\":\"" + iso(tsMs) + "\",\"metric\":").getBytes(StandardCharsets.UTF_8);
        StringBuilder t = new StringBuilder(256);
        for (int i = 0; i < entity.length; i++) {
            t.append(",\"").append(entityKeys.get(i)).append("\":\"");
            quote(entity[i], t);
            t.append('"');
        }
        tail = t.append(",\"arrived_at\":\"").append(iso(arrivalMs)).append("\"}").toString().getBytes(StandardCharsets.UTF_8);
    }

    public byte[] sample(String metric, double value, String unit, int bucket) {
        StringBuilder m = new StringBuilder(96).append('"');
        quote(metric, m);
        m.append("\",\"value\":").append(value).append(",\"unit\":\"");
        quote(unit, m);
        byte[] middle = m.append("\",\"bucket\":").append(bucket).toString().getBytes(StandardCharsets.UTF_8);
        byte[] out = Arrays.copyOf(head, head.length + middle.length + tail.length);
        System.arraycopy(middle, 0, out, head.length, middle.length);
        System.arraycopy(tail, 0, out, head.length + middle.length, tail.length);
        return out;
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

    static String iso(long epochMs) {
        return TimeFormats.ISO8601_TIMESTAMP_WITH_LOCAL_TIMEZONE_FORMAT.format(
                Instant.ofEpochMilli(epochMs).atOffset(ZoneOffset.UTC));
    }
}
