package io.sanlens.normalize;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * What the decoder checks a record against: flink-jobs/normalize/catalog.yaml as expanded by
 * decode.py (catalog_json), the one reader of that file. Immutable; shared by every record.
 */
public final class Catalog {
    /** One catalogued field: where it is in the record and what it becomes. */
    static final class Field {
        final String source, metric, kind, unit, per;
        final double scale, lo, hi;
        final int bucket;

        Field(JsonNode f) {
            source = f.get("source").asText();
            metric = f.get("metric").asText();
            kind = f.get("kind").asText();
            unit = f.get("unit").asText();
            per = f.get("per").isNull() ? null : f.get("per").asText();
            scale = f.get("scale").asDouble();
            lo = f.get("lo").asDouble();
            hi = f.get("hi").isNull() ? Double.POSITIVE_INFINITY : f.get("hi").asDouble();
            bucket = f.get("bucket").asInt();
        }
    }

    static final class Measurement {
        final String[] entityTags; // per entity key, the tag that holds it
        final String byTag; // the tag whose value selects the field, or null
        final Map<String, Field> fields = new LinkedHashMap<>(); // in the catalog's order
        final String[] keys; // the fields' keys (what a byTag selects), in the catalog's order
        final Field[] ordered; // ... and the fields
        final Map<String, int[]> bySource = new HashMap<>(); // a record's field -> where in `ordered` it is used

        Measurement(JsonNode m, List<String> entityKeys) {
            entityTags = new String[entityKeys.size()];
            for (int i = 0; i < entityTags.length; i++) {
                JsonNode tag = m.get("entity").get(entityKeys.get(i));
                entityTags[i] = tag == null ? entityKeys.get(i) : tag.asText();
            }
            byTag = m.get("by_tag").isNull() ? null : m.get("by_tag").asText();
            m.get("fields").fields().forEachRemaining(e -> fields.put(e.getKey(), new Field(e.getValue())));
            keys = fields.keySet().toArray(new String[0]);
            ordered = fields.values().toArray(new Field[0]);
            for (int i = 0; i < ordered.length; i++) {
                int[] at = bySource.get(ordered[i].source);
                at = at == null ? new int[] {i} : Arrays.copyOf(at, at.length + 1);
                at[at.length - 1] = i;
                bySource.put(ordered[i].source, at);
            }
            // the state keeps a metric as its name's hash (LastSamples): two of one measurement must differ
            Map<Integer, String> hashes = new HashMap<>();
            for (Field f : fields.values()) {
                String other = hashes.putIfAbsent(f.metric.hashCode(), f.metric);
                if (other != null && !other.equals(f.metric)) {
                    throw new IllegalArgumentException("the normalize catalog's metrics " + other + " and "
                            + f.metric + " of one measurement have the same hash: rename one");
                }
            }
        }
    }

    final List<String> entityKeys = new ArrayList<>();
    final Map<String, Measurement> measurements = new LinkedHashMap<>();
    final long futureMs, pastMs;

    public Catalog(String json) {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(json);
        } catch (Exception e) {
            throw new IllegalArgumentException("the normalize catalog is not valid JSON: " + e.getMessage(), e);
        }
        root.get("entity_keys").forEach(k -> entityKeys.add(k.asText()));
        root.get("measurements").fields().forEachRemaining(
                e -> measurements.put(e.getKey(), new Measurement(e.getValue(), entityKeys)));
        futureMs = root.get("future_ms").asLong();
        pastMs = root.get("past_ms").asLong();
    }
}
