package io.sanlens.common;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.Projection;
import org.apache.flink.table.connector.format.DecodingFormat;
import org.apache.flink.table.connector.format.ProjectableDecodingFormat;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DeserializationFormatFactory;
import org.apache.flink.table.factories.DynamicTableFactory;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;

/**
 * The format {@code sanlens-samples}: telemetry.samples (docs/contract.md: a message per record, its samples
 * under {@code samples}) read as one row per sample, decoding only the samples whose metric is one of
 * {@code metrics} (SamplesDecoder). A job that reads a few of the catalog's metrics skips the other messages
 * by a scan of their bytes. The jobs' SQL still filters by metric: this only saves the work, it decides nothing.
 */
public final class SamplesFormatFactory implements DeserializationFormatFactory {
    public static final String IDENTIFIER = "sanlens-samples";
    public static final ConfigOption<List<String>> METRICS =
            ConfigOptions.key("metrics")
                    .stringType()
                    .asList()
                    .noDefaultValue()
                    .withDescription("the metrics to decode, separated by ';'");
    public static final ConfigOption<List<String>> PAIRS =
            ConfigOptions.key("pairs")
                    .stringType()
                    .asList()
                    .noDefaultValue()
                    .withDescription("metric=partner;...: the column `paired` of a metric's sample holds its partner's "
                            + "value in the same message");
    public static final ConfigOption<List<String>> GATHER =
            ConfigOptions.key("gather")
                    .stringType()
                    .asList()
                    .noDefaultValue()
                    .withDescription("histogram metrics, separated by ';': a message's samples of one are one row, "
                            + "their buckets in `buckets` ARRAY<INT> and their values in `counts` ARRAY<BIGINT>");

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
        return Set.of(PAIRS, GATHER);
    }

    @Override
    public DecodingFormat<DeserializationSchema<RowData>> createDecodingFormat(
            DynamicTableFactory.Context context, ReadableConfig options) {
        Set<String> metrics = new HashSet<>(options.get(METRICS));
        Map<String, String> pairs = new HashMap<>();
        for (String pair : options.getOptional(PAIRS).orElse(List.of())) {
            String[] kv = pair.split("=", 2);
            if (kv.length != 2) throw new IllegalArgumentException("sanlens-samples.pairs: not metric=partner: " + pair);
            pairs.put(kv[0].trim(), kv[1].trim());
        }
        Set<String> gather = new HashSet<>(options.getOptional(GATHER).orElse(List.of()));
        return new ProjectableDecodingFormat<>() {
            @Override
            public DeserializationSchema<RowData> createRuntimeDecoder(
                    DynamicTableSource.Context source, DataType physical, int[][] projections) {
                DataType produced = Projection.of(projections).project(physical);
                checkGatherColumns(produced);
                return new SamplesDecoder(
                        DataType.getFieldNames(produced),
                        DataType.getFieldDataTypes(produced).stream()
                                .map(t -> t.getLogicalType().getTypeRoot())
                                .collect(Collectors.toList()),
                        metrics,
                        pairs,
                        gather,
                        source.createTypeInformation(produced));
            }

            @Override
            public ChangelogMode getChangelogMode() {
                return ChangelogMode.insertOnly();
            }
        };
    }

    /** The gathered columns' element types are what the decoder writes into them. */
    private static void checkGatherColumns(DataType row) {
        Map<String, LogicalTypeRoot> elements =
                Map.of(SamplesDecoder.BUCKETS, LogicalTypeRoot.INTEGER, SamplesDecoder.COUNTS, LogicalTypeRoot.BIGINT);
        List<String> names = DataType.getFieldNames(row);
        List<DataType> types = DataType.getFieldDataTypes(row);
        for (int i = 0; i < names.size(); i++) {
            LogicalTypeRoot element = elements.get(names.get(i));
            LogicalType type = types.get(i).getLogicalType();
            if (element != null && !(type instanceof ArrayType && ((ArrayType) type).getElementType().getTypeRoot() == element)) {
                throw new IllegalArgumentException("format sanlens-samples: column " + names.get(i) + " must be an ARRAY of "
                        + element + ", not " + type);
            }
        }
    }
}
