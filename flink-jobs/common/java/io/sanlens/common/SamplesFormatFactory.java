package io.sanlens.common;

import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.formats.json.JsonFormatFactory;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.format.DecodingFormat;
import org.apache.flink.table.connector.format.ProjectableDecodingFormat;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DeserializationFormatFactory;
import org.apache.flink.table.factories.DynamicTableFactory;
import org.apache.flink.table.types.DataType;

/**
 * The format {@code sanlens-samples}: Flink's {@code json} format for telemetry.samples, which decodes a
 * sample only when its metric is one of {@code metrics}. A job that reads a few of the catalog's metrics
 * skips the others by a scan of their bytes instead of decoding all of their fields and timestamps. The
 * jobs' SQL still filters by metric: this only saves the work, it decides nothing.
 *
 * <p>Every other option is the {@code json} format's, under this format's prefix.
 */
public final class SamplesFormatFactory implements DeserializationFormatFactory {
    public static final String IDENTIFIER = "sanlens-samples";
    public static final ConfigOption<List<String>> METRICS =
            ConfigOptions.key("metrics")
                    .stringType()
                    .asList()
                    .noDefaultValue()
                    .withDescription("the metrics to decode, separated by ';'");

    private final JsonFormatFactory json = new JsonFormatFactory();

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(METRICS);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return json.optionalOptions();
    }

    @Override
    public DecodingFormat<DeserializationSchema<RowData>> createDecodingFormat(
            DynamicTableFactory.Context context, ReadableConfig options) {
        DecodingFormat<DeserializationSchema<RowData>> decoding = json.createDecodingFormat(context, options);
        Set<String> metrics = new HashSet<>(options.get(METRICS));
        return new ProjectableDecodingFormat<>() {
            @Override
            public DeserializationSchema<RowData> createRuntimeDecoder(
                    DynamicTableSource.Context source, DataType physical, int[][] projections) {
                DeserializationSchema<RowData> inner =
                        decoding instanceof ProjectableDecodingFormat
                                ? ((ProjectableDecodingFormat<DeserializationSchema<RowData>>) decoding)
                                        .createRuntimeDecoder(source, physical, projections)
                                : decoding.createRuntimeDecoder(source, physical);
                return new MetricFilter(inner, metrics);
            }

            @Override
            public ChangelogMode getChangelogMode() {
                return decoding.getChangelogMode();
            }
        };
    }

    /** Passes a message on to the JSON decoder unless its metric is known and not wanted. */
    static final class MetricFilter implements DeserializationSchema<RowData> {
        private static final byte[] KEY = "\"metric\":\"".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        private final DeserializationSchema<RowData> inner;
        private final byte[][] wanted;

        MetricFilter(DeserializationSchema<RowData> inner, Set<String> metrics) {
            this.inner = inner;
            this.wanted =
                    metrics.stream()
                            .map(m -> ("\"metric\":\"" + m + "\"").getBytes(java.nio.charset.StandardCharsets.UTF_8))
                            .toArray(byte[][]::new);
        }

        @Override
        public void open(InitializationContext context) throws Exception {
            inner.open(context);
        }

        @Override
        public RowData deserialize(byte[] message) throws java.io.IOException {
            return wanted(message) ? inner.deserialize(message) : null;
        }

        @Override
        public void deserialize(byte[] message, org.apache.flink.util.Collector<RowData> out)
                throws java.io.IOException {
            if (wanted(message)) {
                inner.deserialize(message, out);
            }
        }

        /**
         * Whether the message is one to decode: yes when its metric is wanted, and when no {@code "metric":"}
         * key is found (then the decoder and the job's SQL judge it). An unescaped quote cannot stand inside a
         * JSON string, so those bytes are the key itself.
         */
        boolean wanted(byte[] message) {
            if (message == null) {
                return true;
            }
            int at = indexOf(message, KEY);
            if (at < 0) {
                return true;
            }
            for (byte[] w : wanted) {
                if (at + w.length <= message.length
                        && Arrays.equals(message, at, at + w.length, w, 0, w.length)) {
                    return true;
                }
            }
            return false;
        }

        private static int indexOf(byte[] message, byte[] key) {
            outer:
            for (int i = 0; i + key.length <= message.length; i++) {
                for (int j = 0; j < key.length; j++) {
                    if (message[i + j] != key[j]) {
                        continue outer;
                    }
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
        public org.apache.flink.api.common.typeinfo.TypeInformation<RowData> getProducedType() {
            return inner.getProducedType();
        }
    }
}
