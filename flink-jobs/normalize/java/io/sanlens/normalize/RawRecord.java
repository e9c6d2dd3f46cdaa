package io.sanlens.normalize;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonParser;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonToken;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.StreamReadFeature;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.json.JsonReadFeature;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * One raw Telegraf JSON record as a single streaming pass reads it: its name, timestamp, tags and fields, each
 * field a double (or, when it is not a number, its JSON value). No tree of the whole record is built; a value the
 * decoder will only quote in a refusal is read as a tree node, so that it is quoted as JSON. The whole text is
 * read before anything is judged, so a syntax error or a name twice in one object anywhere wins over every other
 * refusal.
 *
 * <p>Two ways to read: {@link #read} takes any text, with Jackson's duplicate detection in every object;
 * {@link #readFlat} takes only the shape Telegraf writes (an object of name, timestamp, tags and fields, no
 * value nested deeper) and checks names itself, which costs a fraction of Jackson's check (a hash set per object).
 * Anything else, or bytes that are not well-formed UTF-8, makes readFlat throw {@link NotFlat}: the caller reads
 * that record again, as text, with read. Reused record after record by one decoder: not thread-safe.
 */
final class RawRecord {
    // NaN and Infinity parse, so that they are refused as non-finite values rather than as broken JSON.
    private static final JsonFactory FLAT = JsonFactory.builder().enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS).build();
    // ... and a name twice in one object is refused: which of its values counts is a guess.
    private static final JsonFactory STRICT = FLAT.rebuild().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();
    private static final ObjectMapper TREES = new ObjectMapper(STRICT);

    /** Where a member of the record stands: absent or null, not of its type, or there. */
    enum Kind { MISSING, WRONG, PRESENT }

    /** A JSON value's type, as a refusal names it (a record that is not an object, a tag that is not a string). */
    enum Type {
        STRING, NUMBER, BOOLEAN, NULL, ARRAY, OBJECT;

        static Type of(JsonToken t) {
            switch (t) {
                case START_ARRAY: return ARRAY;
                case START_OBJECT: return OBJECT;
                case VALUE_STRING: return STRING;
                case VALUE_TRUE: case VALUE_FALSE: return BOOLEAN;
                case VALUE_NULL: return NULL;
                default: return NUMBER;
            }
        }

        String text() {
            return name().toLowerCase();
        }
    }

    /** Tokens after the record's value. */
    static final class TrailingToken extends IOException {
        private static final long serialVersionUID = 1L;

        TrailingToken(String message) {
            super(message);
        }
    }

    /** A record readFlat does not take: read it with read. */
    static final class NotFlat extends IOException {
        private static final long serialVersionUID = 1L;
        static final NotFlat INSTANCE = new NotFlat();

        private NotFlat() {
            super("not a flat record", null);
            setStackTrace(new StackTraceElement[0]);
        }
    }

    JsonToken root; // the first token: START_OBJECT for a record
    Kind name, timestamp, tags, fields;
    String nameText; // the name, or the JSON of a name that is not a string
    long ts;
    String tsJson; // the JSON of a timestamp that is not an integer within 64 bits, else null

    int nTags;
    String[] tagKeys = new String[8], tagValues = new String[8]; // a value null: not a string,
    Type[] tagTypes = new Type[8]; // ... and this is what it is

    int nFields;
    String[] fieldNames = new String[64];
    double[] fieldValues = new double[64];
    JsonNode[] fieldOthers = new JsonNode[64]; // a field that is not a number, else null

    private boolean flat;
    // readFlat's check of an object's names: open addressing on the names' hashes, a slot taken in this object
    // when its stamp is the object's
    private final int[] slotName = new int[512], slotStamp = new int[512];
    private int stamp;

    /** Reads `text` whole with Jackson's checks; a syntax error, a duplicate name or trailing tokens throw. */
    void read(String text) throws IOException {
        flat = false;
        read(STRICT.createParser(text));
    }

    /**
     * Reads `utf8` whole if it is a flat record in well-formed UTF-8 (else NotFlat); a syntax error or trailing
     * tokens throw. Jackson decodes some bytes that are not UTF-8 (an encoded surrogate, an overlong form) into
     * characters where Java's decoder, which reads the record's text, puts U+FFFD: such a record is read as text.
     */
    void readFlat(byte[] utf8) throws IOException {
        if (!wellFormed(utf8)) throw NotFlat.INSTANCE;
        flat = true;
        read(FLAT.createParser(utf8));
    }

    /** Whether `b` is well-formed UTF-8 (The Unicode Standard, table 3-7), as Java's decoder takes it whole. */
    static boolean wellFormed(byte[] b) {
        int n = b.length;
        for (int i = 0; i < n; ) {
            int c = b[i] & 0xff;
            if (c < 0x80) {
                i++;
                continue;
            }
            int more = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : -1;
            if (more < 0 || i + more >= n) return false;
            int c1 = b[i + 1] & 0xff;
            if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) {
                return false; // overlong, a surrogate, beyond U+10FFFF
            }
            for (int k = 1; k <= more; k++) {
                if ((b[i + k] & 0xC0) != 0x80) return false;
            }
            i += more + 1;
        }
        return true;
    }

    private void read(JsonParser parser) throws IOException {
        try (JsonParser p = parser) {
            name = timestamp = tags = fields = Kind.MISSING;
            nameText = tsJson = null;
            nTags = nFields = 0;
            root = p.nextToken();
            if (root == JsonToken.START_OBJECT) {
                int members = 0;
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String key = p.currentName();
                    JsonToken value = p.nextToken();
                    int member = member(key);
                    if (flat && (member < 0 || (members & 1 << member) != 0)) throw NotFlat.INSTANCE;
                    members |= member < 0 ? 0 : 1 << member;
                    if (value == JsonToken.VALUE_NULL) continue; // a member that is null is missing
                    switch (member) {
                        case 0: readName(p, value); break;
                        case 1: readTimestamp(p, value); break;
                        case 2: readTags(p, value); break;
                        case 3: readFields(p, value); break;
                        default: p.skipChildren();
                    }
                }
            } else if (root != null) {
                if (flat) throw NotFlat.INSTANCE;
                p.skipChildren();
            }
            JsonToken trailing = root == null ? null : p.nextToken();
            if (trailing != null) {
                throw new TrailingToken("Trailing token (of type " + trailing + ") found after value");
            }
        }
    }

    private static int member(String key) {
        switch (key) {
            case "name": return 0;
            case "timestamp": return 1;
            case "tags": return 2;
            case "fields": return 3;
            default: return -1;
        }
    }

    /** A value readFlat does not take (an array or object), else the value's JSON as a tree node. */
    private JsonNode other(JsonParser p, JsonToken value) throws IOException {
        if (flat && (value == JsonToken.START_OBJECT || value == JsonToken.START_ARRAY)) throw NotFlat.INSTANCE;
        return TREES.readTree(p);
    }

    private void readName(JsonParser p, JsonToken value) throws IOException {
        name = Kind.PRESENT;
        nameText = value == JsonToken.VALUE_STRING ? p.getText() : other(p, value).toString();
    }

    private void readTimestamp(JsonParser p, JsonToken value) throws IOException {
        timestamp = Kind.PRESENT;
        if (value == JsonToken.VALUE_NUMBER_INT && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
            ts = p.getLongValue();
        } else {
            tsJson = other(p, value).toString();
        }
    }

    private void readTags(JsonParser p, JsonToken value) throws IOException {
        if (value != JsonToken.START_OBJECT) {
            tags = Kind.WRONG;
            other(p, value);
            return;
        }
        tags = Kind.PRESENT;
        nextObject();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            if (nTags == tagKeys.length) {
                tagKeys = Arrays.copyOf(tagKeys, nTags * 2);
                tagValues = Arrays.copyOf(tagValues, nTags * 2);
                tagTypes = Arrays.copyOf(tagTypes, nTags * 2);
            }
            tagKeys[nTags] = p.currentName();
            if (flat) checkName(tagKeys, nTags);
            JsonToken t = p.nextToken();
            if (t == JsonToken.VALUE_STRING) {
                tagValues[nTags] = p.getText();
                tagTypes[nTags] = null;
            } else {
                tagValues[nTags] = null;
                tagTypes[nTags] = Type.of(t);
                other(p, t);
            }
            nTags++;
        }
    }

    private void readFields(JsonParser p, JsonToken value) throws IOException {
        if (value != JsonToken.START_OBJECT) {
            fields = Kind.WRONG;
            other(p, value);
            return;
        }
        nextObject();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            if (nFields == fieldNames.length) {
                fieldNames = Arrays.copyOf(fieldNames, nFields * 2);
                fieldValues = Arrays.copyOf(fieldValues, nFields * 2);
                fieldOthers = Arrays.copyOf(fieldOthers, nFields * 2);
            }
            fieldNames[nFields] = p.currentName();
            if (flat) checkName(fieldNames, nFields);
            JsonToken t = p.nextToken();
            if (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT) {
                fieldValues[nFields] = p.getDoubleValue();
                fieldOthers[nFields] = null;
            } else {
                fieldOthers[nFields] = other(p, t);
            }
            nFields++;
        }
        fields = nFields == 0 ? Kind.WRONG : Kind.PRESENT;
    }

    private void nextObject() {
        if (++stamp == 0) { // after 2^32 objects: every slot's stamp could be the new one
            Arrays.fill(slotStamp, 0);
            stamp = 1;
        }
    }

    /** NotFlat when names[i] is one of names[0..i) (the current object's), or when the object is too large. */
    private void checkName(String[] names, int i) throws NotFlat {
        int mask = slotName.length - 1;
        if (2 * i >= slotName.length) throw NotFlat.INSTANCE;
        String n = names[i];
        for (int h = n.hashCode() & mask; ; h = (h + 1) & mask) {
            if (slotStamp[h] != stamp) {
                slotStamp[h] = stamp;
                slotName[h] = i;
                return;
            }
            if (n.equals(names[slotName[h]])) throw NotFlat.INSTANCE;
        }
    }

    /** The index of field `name`, or -1. */
    int field(String fieldName) {
        for (int i = 0; i < nFields; i++) {
            if (fieldNames[i].equals(fieldName)) return i;
        }
        return -1;
    }

    /** The names of the fields not marked in `used`, in the record's order, as measurement.field. */
    List<String> unused(boolean[] used, String measurement) {
        List<String> unknown = new ArrayList<>(0);
        for (int i = 0; i < nFields; i++) {
            if (!used[i]) unknown.add(measurement + "." + fieldNames[i]);
        }
        return unknown;
    }
}
