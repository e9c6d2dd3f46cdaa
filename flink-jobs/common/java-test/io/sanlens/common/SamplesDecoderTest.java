package io.sanlens.common;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

/** A telemetry.samples message (docs/contract.md) as the jobs read it: a row per wanted sample. */
class SamplesDecoderTest {
    private static final List<String> COLUMNS = List.of("ts", "metric", "value", "host", "disk", "paired");
    private static final List<LogicalTypeRoot> TYPES = List.of(LogicalTypeRoot.TIMESTAMP_WITH_LOCAL_TIME_ZONE,
            LogicalTypeRoot.VARCHAR, LogicalTypeRoot.DOUBLE, LogicalTypeRoot.VARCHAR, LogicalTypeRoot.VARCHAR,
            LogicalTypeRoot.DOUBLE);
    // as SampleJson writes it: no space after a colon
    private static final String DISK = "{\"ts\":\"2026-11-22T14:24:30.537Z\",\"site\":\"acme-east\","
            + "\"host\":\"sql01\",\"disk\":\"D:\",\"samples\":["
            + "{\"metric\":\"disk.write_latency\",\"value\":850.0,\"unit\":\"us\",\"bucket\":-1},"
            + "{\"metric\":\"disk.writes\",\"value\":1200.5,\"unit\":\"1/s\",\"bucket\":-1},"
            + "{\"metric\":\"disk.read_latency\",\"value\":400.0,\"unit\":\"us\",\"bucket\":-1,\"disk\":\"E:\"}]}";

    private static List<RowData> decode(SamplesDecoder decoder, String message) throws IOException {
        List<RowData> rows = new ArrayList<>();
        decoder.deserialize(message.getBytes(StandardCharsets.UTF_8), new Collector<>() {
            @Override
            public void collect(RowData row) {
                rows.add(row);
            }

            @Override
            public void close() {}
        });
        return rows;
    }

    private static SamplesDecoder decoder(Set<String> metrics, Map<String, String> pairs) {
        return new SamplesDecoder(COLUMNS, TYPES, metrics, pairs, Set.of(), null);
    }

    @Test
    void aWantedSampleIsARowItsOwnFieldsOverTheMessages() throws IOException {
        List<RowData> rows = decode(decoder(Set.of("disk.write_latency", "disk.read_latency"), Map.of()), DISK);
        assertEquals(2, rows.size(), "disk.writes is not wanted");
        RowData write = rows.get(0), read = rows.get(1);
        assertEquals("disk.write_latency", write.getString(1).toString());
        assertEquals(850.0, write.getDouble(2));
        assertEquals(Instant.parse("2026-11-22T14:24:30.537Z"), write.getTimestamp(0, 3).toInstant());
        assertEquals("sql01", write.getString(3).toString());
        assertEquals("D:", write.getString(4).toString(), "the message's disk");
        assertEquals("E:", read.getString(4).toString(), "the sample's own disk");
        assertTrue(write.isNullAt(5), "no pairs asked for: no partner");
    }

    @Test
    void aSampleCarriesItsPartnersValueFromTheSameMessage() throws IOException {
        SamplesDecoder d = decoder(Set.of("disk.write_latency", "disk.read_latency"),
                Map.of("disk.write_latency", "disk.writes", "disk.read_latency", "disk.reads"));
        List<RowData> rows = decode(d, DISK);
        assertEquals(1200.5, rows.get(0).getDouble(5), "disk.writes comes after its latency: still found");
        assertTrue(rows.get(1).isNullAt(5), "no disk.reads in the message");
    }

    @Test
    void aHistogramsBucketsAreOneRowWithArraysInTheMessagesOrder() throws IOException {
        List<String> columns = List.of("metric", "volume", "buckets", "counts");
        List<LogicalTypeRoot> types = List.of(LogicalTypeRoot.VARCHAR, LogicalTypeRoot.VARCHAR,
                LogicalTypeRoot.ARRAY, LogicalTypeRoot.ARRAY);
        String hist = "volume.write_service_time_hist";
        SamplesDecoder d = new SamplesDecoder(columns, types, Set.of(hist), Map.of(), Set.of(hist), null);
        String message = "{\"array\":\"af1\",\"volume\":\"v1\",\"samples\":["
                + "{\"metric\":\"" + hist + "\",\"value\":7.0,\"bucket\":3},"
                + "{\"metric\":\"volume.write_service_time\",\"value\":0.2,\"bucket\":-1},"
                + "{\"metric\":\"" + hist + "\",\"value\":120.4,\"bucket\":1},"
                + "{\"metric\":\"" + hist + "\",\"value\":2.0,\"bucket\":12}]}";
        List<RowData> rows = decode(d, message);
        assertEquals(1, rows.size());
        ArrayData buckets = rows.get(0).getArray(2), counts = rows.get(0).getArray(3);
        assertArrayEquals(new int[] {3, 1, 12}, buckets.toIntArray());
        assertArrayEquals(new long[] {7, 120, 2}, counts.toLongArray(), "whole I/Os, rounded");
        assertEquals("v1", rows.get(0).getString(1).toString());
    }

    @Test
    void aSampleNoneWantsIsSkippedUnreadAndOneWhoseMetricIsNotFirstIsReadWhole() throws IOException {
        String message = "{\"ts\":\"2026-11-22T14:24:30.537Z\",\"host\":\"sql01\",\"samples\":["
                + "{\"metric\":\"disk.queue\",\"value\":\"not a number\",\"tags\":{\"a\":[1,{\"b\":2}]},\"disk\":\"X:\"},"
                + "{\"value\":400.0,\"metric\":\"disk.read_latency\",\"disk\":\"E:\"},"
                + "{\"metric\":\"disk.reads\",\"value\":50.0}]}";
        SamplesDecoder d = decoder(Set.of("disk.read_latency"), Map.of("disk.read_latency", "disk.reads"));
        List<RowData> rows = decode(d, message);
        assertEquals(1, rows.size(), "disk.queue's value and tags are not read: none wants them");
        assertEquals(400.0, rows.get(0).getDouble(2));
        assertEquals("E:", rows.get(0).getString(4).toString());
        assertEquals(50.0, rows.get(0).getDouble(5), "a partner is read");
    }

    @Test
    void sampleJsonsTimestampsAreReadDigitByDigitAndAnyOtherShapeIsLeftToTheFormatter() {
        assertEquals(java.time.LocalDateTime.of(2026, 11, 22, 14, 24, 30, 537_000_000),
                SamplesDecoder.utc("2026-11-22T14:24:30.537Z"));
        assertEquals(java.time.LocalDateTime.of(2026, 11, 22, 14, 24, 30), SamplesDecoder.utc("2026-11-22T14:24:30Z"));
        for (String other : new String[] {"2026-11-22T14:24:30+01:00", "2026-11-22 14:24:30Z", "2026-13-22T14:24:30Z",
                "2026-11-22T14:24:3xZ", "2026-11-22T14:24:30.5Z"}) {
            assertEquals(null, SamplesDecoder.utc(other), other);
        }
    }

    @Test
    void aMessageWithoutAWantedMetricIsSkippedByItsBytes() throws IOException {
        SamplesDecoder d = decoder(Set.of("port.tx_credit_zero"), Map.of());
        assertFalse(d.anyWanted(DISK.getBytes(StandardCharsets.UTF_8)));
        // skipped unread: not even its JSON is looked at
        assertEquals(List.of(), decode(d, "{\"metric\":\"disk.writes\" this is not JSON"));
        // a metric whose name only starts like a wanted one is not it
        assertFalse(decoder(Set.of("disk.write"), Map.of()).anyWanted(DISK.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void aMessageThatIsNotTheContractsFailsNamingTheTopic() {
        SamplesDecoder d = decoder(Set.of("disk.writes"), Map.of());
        IOException e = assertThrows(IOException.class,
                () -> decode(d, "{\"host\":\"sql01\",\"samples\":{\"metric\":\"disk.writes\"}}"));
        assertTrue(e.getMessage().startsWith("telemetry.samples: a message that is not the contract's"), e.getMessage());
    }

    @Test
    void aColumnOfATypeItCannotReadIsRefusedUpFront() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new SamplesDecoder(
                List.of("metric", "tags"), List.of(LogicalTypeRoot.VARCHAR, LogicalTypeRoot.MAP), Set.of("x"), Map.of(),
                Set.of(), null));
        assertTrue(e.getMessage().contains("tags"), e.getMessage());
    }
}
