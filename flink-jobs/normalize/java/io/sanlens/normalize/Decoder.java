package io.sanlens.normalize;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonToken;

/**
 * Decoding one raw Telegraf JSON record into typed samples, against the catalog. A record is refused as a whole
 * (a reason and a detail for the dead-letter topic) or decoded into one sample per catalogued field, plus the
 * names of the fields the catalog does not know (counted as dropped samples). Nothing is kept from one record to
 * the next (deltas, resets, duplicates are Pairing's, per series), but its buffers are reused: a decoder a thread.
 */
public final class Decoder {
    /**
     * The longest tag name or value taken: an entity's value travels in each of the record's samples, escaped as
     * JSON (up to six bytes a character), and a sample must stay well under the sinks' 1 MiB request size.
     */
    static final int MAX_TAG = 4096;

    private final Catalog catalog;
    private final RawRecord raw = new RawRecord();
    private int[] at = new int[64];
    private boolean[] used = new boolean[64];

    public Decoder(Catalog catalog) {
        this.catalog = catalog;
    }

    /** A refusal: the record goes to the dead-letter topic with this reason. */
    private static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;
        final String reason, detail;

        Refused(String reason, String detail) {
            super(reason, null, false, false);
            this.reason = reason;
            this.detail = detail;
        }
    }

    /**
     * A record as Kafka holds it, UTF-8. Read from its bytes when it is flat, as Telegraf writes it; any other (not
     * JSON, not UTF-8, with nested values or a name twice) is decoded again from its text, whose reading has every
     * check (bytes that are not UTF-8 are read as U+FFFD there, as a tag may have them).
     */
    public Decoded decode(byte[] payload, long arrivalMs) {
        if (payload == null) return decode((String) null, arrivalMs);
        try {
            raw.readFlat(payload);
        } catch (IOException e) {
            return decode(new String(payload, StandardCharsets.UTF_8), arrivalMs);
        }
        if (raw.root == null) return decode(new String(payload, StandardCharsets.UTF_8), arrivalMs);
        return judged(arrivalMs);
    }

    public Decoded decode(String payload, long arrivalMs) {
        if (payload == null || payload.isBlank()) return new Decoded("empty message", "");
        try {
            raw.read(payload);
        } catch (RawRecord.TrailingToken e) {
            return new Decoded("not JSON", truncate(e.getMessage(), 120));
        } catch (IOException e) {
            String message = e.getMessage().split("\\n")[0];
            if (message.startsWith("Duplicate field ")) return new Decoded("duplicate key", truncate(message, 120));
            return new Decoded("not JSON", truncate(message, 120));
        }
        return judged(arrivalMs);
    }

    private Decoded judged(long arrivalMs) {
        try {
            return judge(arrivalMs);
        } catch (Refused r) {
            return new Decoded(r.reason, r.detail);
        }
    }

    /**
     * An epoch timestamp in s, ms, us or ns, in whole ms. Telegraf's JSON serializer writes whole seconds
     * unless json_timestamp_units says otherwise; the unit is told by the size (seconds below 10^11 reach
     * the year 5138, ms below 10^14 too).
     */
    public static long epochMs(long ts) {
        long magnitude = Math.abs(ts);
        if (magnitude < 100_000_000_000L) return ts * 1000;
        if (magnitude < 100_000_000_000_000L) return ts;
        if (magnitude < 100_000_000_000_000_000L) return ts / 1000;
        return ts / 1_000_000;
    }

    /** The record just read, refused or decoded. */
    private Decoded judge(long arrivalMs) throws Refused {
        RawRecord r = raw;
        if (r.root != JsonToken.START_OBJECT) throw new Refused("not a JSON object", RawRecord.Type.of(r.root).text());
        if (r.name == RawRecord.Kind.MISSING) throw new Refused("missing field", "name");
        if (r.timestamp == RawRecord.Kind.MISSING) throw new Refused("missing field", "timestamp");
        if (r.fields == RawRecord.Kind.MISSING) throw new Refused("missing field", "fields");
        if (r.tags == RawRecord.Kind.MISSING) throw new Refused("missing field", "tags");
        if (r.fields == RawRecord.Kind.WRONG) throw new Refused("missing field", "fields (empty or not an object)");
        if (r.tags == RawRecord.Kind.WRONG) throw new Refused("missing field", "tags (not an object)");
        Catalog.Measurement measurement = catalog.measurements.get(r.nameText);
        if (measurement == null) throw new Refused("unknown measurement", truncate(r.nameText, 80));
        if (r.tsJson != null) {
            throw new Refused("bad timestamp", truncate(r.tsJson, 40) + " is not an integer (s, ms, us or ns since the epoch)");
        }
        long tsMs = epochMs(r.ts);
        if (tsMs > arrivalMs + catalog.futureMs) {
            throw new Refused("timestamp in the future", String.format("%.0f s ahead of arrival", (tsMs - arrivalMs) / 1000.0));
        }
        if (tsMs < arrivalMs - catalog.pastMs) {
            throw new Refused("timestamp too old", String.format("%.1f days before arrival", (arrivalMs - tsMs) / 86_400_000.0));
        }
        Map<String, String> tags = new TreeMap<>();
        for (int i = 0; i < r.nTags; i++) {
            String key = r.tagKeys[i], value = r.tagValues[i];
            if (value == null) throw new Refused("bad tag", truncate(key, 80) + " is " + r.tagTypes[i].text() + ", not a string");
            if (key.length() > MAX_TAG || value.length() > MAX_TAG) {
                throw new Refused("bad tag", truncate(key, 80) + ": longer than " + MAX_TAG + " characters");
            }
            tags.put(key, value);
        }
        return samples(r.nameText, tsMs, tags, measurement);
    }

    private Decoded samples(String name, long tsMs, Map<String, String> tags, Catalog.Measurement m) throws Refused {
        RawRecord r = raw;
        StringBuilder series = new StringBuilder(name);
        tags.forEach((k, v) -> series.append('|').append(k).append('=').append(v));
        String[] entity = new String[m.entityTags.length];
        for (int i = 0; i < entity.length; i++) entity[i] = tags.getOrDefault(m.entityTags[i], "");
        String selector = m.byTag == null ? null : tags.getOrDefault(m.byTag, "");
        // where in the record each catalogued field's source is (-1: not in it)
        if (at.length < m.ordered.length) at = new int[m.ordered.length];
        Arrays.fill(at, 0, m.ordered.length, -1);
        for (int i = 0; i < r.nFields; i++) {
            int[] uses = m.bySource.get(r.fieldNames[i]);
            if (uses != null) {
                for (int u : uses) at[u] = i;
            }
        }
        if (used.length < r.nFields) used = new boolean[r.fieldNames.length];
        Arrays.fill(used, 0, r.nFields, false);
        List<Sample> samples = new ArrayList<>(m.ordered.length);
        for (int k = 0; k < m.ordered.length; k++) {
            Catalog.Field spec = m.ordered[k];
            int i = at[k];
            if ((selector != null && !m.keys[k].equals(selector)) || i < 0) continue;
            double value = number(spec.source, r, i);
            if (value < spec.lo) throw new Refused("negative value", spec.source + " = " + g(value));
            if (value > spec.hi) throw new Refused("beyond physical bounds", spec.source + " = " + g(value) + " > " + g(spec.hi));
            Double den = null;
            if (spec.kind.equals("ratio")) {
                int per = r.field(spec.per);
                if (per < 0) throw new Refused("missing field", spec.per + " (needed for " + spec.source + ")");
                den = number(spec.per, r, per);
            }
            samples.add(new Sample(spec.metric, spec.kind, spec.unit, spec.bucket, value * spec.scale, den));
            used[i] = true;
        }
        return new Decoded(series.toString(), tsMs, entity, samples, r.unused(used, name));
    }

    private static double number(String name, RawRecord r, int i) throws Refused {
        if (r.fieldOthers[i] != null) {
            throw new Refused("non-numeric value", name + " = " + truncate(r.fieldOthers[i].toString(), 80));
        }
        double v = r.fieldValues[i];
        if (Double.isNaN(v)) throw new Refused("non-finite value", name + " = nan");
        if (Double.isInfinite(v)) throw new Refused("non-finite value", name + " = " + (v > 0 ? "inf" : "-inf"));
        return v;
    }

    /** A number as Python's format(x, 'g') writes it: 6 significant digits, no trailing zeros. */
    static String g(double x) {
        if (Double.isInfinite(x)) return x > 0 ? "inf" : "-inf";
        if (x == 0) return "0";
        BigDecimal rounded = new BigDecimal(x).round(new MathContext(6));
        int exponent = rounded.precision() - rounded.scale() - 1;
        if (exponent < -4 || exponent >= 6) {
            String mantissa = rounded.movePointLeft(exponent).stripTrailingZeros().toPlainString();
            return mantissa + (exponent < 0 ? "e-" : "e+") + String.format("%02d", Math.abs(exponent));
        }
        return rounded.stripTrailingZeros().toPlainString();
    }

    private static String truncate(String s, int n) {
        return s.length() <= n ? s : s.substring(0, n);
    }
}
