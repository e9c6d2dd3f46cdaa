package io.sanlens.normalize;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.json.JsonReadFeature;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.DeserializationFeature;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * Decoding one raw Telegraf JSON record into typed samples, against the catalog. Stateless: everything
 * stateful (deltas, resets, duplicates) is Pairing's, per series. A record is refused as a whole
 * (a reason and a detail for the dead-letter topic) or decoded into one sample per catalogued field,
 * plus the names of the fields the catalog does not know (counted as dropped samples).
 */
public final class Decoder {
    // NaN and Infinity parse, so that they are refused as non-finite values rather than as broken JSON. A name
    // twice in one object is refused: which of its values counts is a guess (Jackson keeps the last).
    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .build();
    private static final String[] REQUIRED = {"name", "timestamp", "fields", "tags"};
    /**
     * The longest tag name or value taken: an entity's value travels in each of the record's samples, escaped as
     * JSON (up to six bytes a character), and a sample must stay well under the sinks' 1 MiB request size.
     */
    static final int MAX_TAG = 4096;

    private final Catalog catalog;

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

    public Decoded decode(String payload, long arrivalMs) {
        try {
            return decodeOrRefuse(payload, arrivalMs);
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

    private Decoded decodeOrRefuse(String payload, long arrivalMs) throws Refused {
        if (payload == null || payload.isBlank()) throw new Refused("empty message", "");
        JsonNode record;
        try {
            record = JSON.readTree(payload);
        } catch (Exception e) {
            String message = e.getMessage().split("\n")[0];
            if (message.startsWith("Duplicate field ")) {
                throw new Refused("duplicate key", truncate(message.split(" for `", 2)[0], 120));
            }
            throw new Refused("not JSON", truncate(message, 120));
        }
        if (record == null || !record.isObject()) {
            throw new Refused("not a JSON object", record == null ? "empty" : record.getNodeType().name().toLowerCase());
        }
        for (String key : REQUIRED) {
            if (!record.hasNonNull(key)) throw new Refused("missing field", key);
        }
        JsonNode fields = record.get("fields"), tagsNode = record.get("tags"), ts = record.get("timestamp");
        if (!fields.isObject() || fields.isEmpty()) throw new Refused("missing field", "fields (empty or not an object)");
        if (!tagsNode.isObject()) throw new Refused("missing field", "tags (not an object)");
        String name = record.get("name").isTextual() ? record.get("name").asText() : record.get("name").toString();
        Catalog.Measurement measurement = catalog.measurements.get(name);
        if (measurement == null) throw new Refused("unknown measurement", truncate(name, 80));
        if (!ts.isIntegralNumber() || !ts.canConvertToLong()) {
            throw new Refused("bad timestamp", truncate(ts.toString(), 40) + " is not an integer (s, ms, us or ns since the epoch)");
        }
        long tsMs = epochMs(ts.asLong());
        if (tsMs > arrivalMs + catalog.futureMs) {
            throw new Refused("timestamp in the future", String.format("%.0f s ahead of arrival", (tsMs - arrivalMs) / 1000.0));
        }
        if (tsMs < arrivalMs - catalog.pastMs) {
            throw new Refused("timestamp too old", String.format("%.1f days before arrival", (arrivalMs - tsMs) / 86_400_000.0));
        }
        Map<String, String> tags = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = tagsNode.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> tag = it.next();
            String key = tag.getKey();
            if (!tag.getValue().isTextual()) {
                String type = tag.getValue().getNodeType().name().toLowerCase();
                throw new Refused("bad tag", truncate(key, 80) + " is " + type + ", not a string");
            }
            if (key.length() > MAX_TAG || tag.getValue().asText().length() > MAX_TAG) {
                throw new Refused("bad tag", truncate(key, 80) + ": longer than " + MAX_TAG + " characters");
            }
            tags.put(key, tag.getValue().asText());
        }
        return samples(name, tsMs, fields, tags, measurement);
    }

    private Decoded samples(String name, long tsMs, JsonNode fields, Map<String, String> tags, Catalog.Measurement m)
            throws Refused {
        StringBuilder series = new StringBuilder(name);
        tags.forEach((k, v) -> series.append('|').append(k).append('=').append(v));
        String[] entity = new String[m.entityTags.length];
        for (int i = 0; i < entity.length; i++) entity[i] = tags.getOrDefault(m.entityTags[i], "");
        String selector = m.byTag == null ? null : tags.getOrDefault(m.byTag, "");
        List<Sample> samples = new ArrayList<>(m.fields.size());
        Set<String> used = new HashSet<>();
        for (Map.Entry<String, Catalog.Field> e : m.fields.entrySet()) {
            Catalog.Field spec = e.getValue();
            if ((selector != null && !e.getKey().equals(selector)) || !fields.has(spec.source)) continue;
            double value = number(spec.source, fields.get(spec.source));
            if (value < spec.lo) throw new Refused("negative value", spec.source + " = " + g(value));
            if (value > spec.hi) throw new Refused("beyond physical bounds", spec.source + " = " + g(value) + " > " + g(spec.hi));
            Double den = null;
            if (spec.kind.equals("ratio")) {
                if (!fields.has(spec.per)) throw new Refused("missing field", spec.per + " (needed for " + spec.source + ")");
                den = number(spec.per, fields.get(spec.per));
            }
            samples.add(new Sample(spec.metric, spec.kind, spec.unit, spec.bucket, value * spec.scale, den));
            used.add(spec.source);
        }
        List<String> unknown = new ArrayList<>();
        fields.fieldNames().forEachRemaining(f -> {
            if (!used.contains(f)) unknown.add(name + "." + f);
        });
        return new Decoded(series.toString(), tsMs, entity, samples, unknown);
    }

    private static double number(String name, JsonNode value) throws Refused {
        if (!value.isNumber()) throw new Refused("non-numeric value", name + " = " + truncate(value.toString(), 80));
        double v = value.asDouble();
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
