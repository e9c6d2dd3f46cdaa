package io.sanlens.normalize;

import java.util.List;

/**
 * One raw record, decoded or refused: the row the table function emits. The samples travel packed
 * (fields joined by U+001F, samples by U+001E: metric, kind, unit, bucket, value, ratio denominator)
 * and Flink SQL splits them; n_samples counts the decoded samples and the unknown fields together.
 */
public final class Decoded {
    public static final String DECODED = "decoded", DEAD = "dead";
    static final char FIELD = '\u001f', RECORD = '\u001e';

    public final String outcome, reason, detail, series, entity, samples;
    public final long tsMs;
    public final int nSamples, nUnknown;
    public final List<String> unknownFields;

    Decoded(String series, long tsMs, String entity, String samples, int nSamples, List<String> unknownFields) {
        this.outcome = DECODED;
        this.reason = this.detail = "";
        this.series = series;
        this.tsMs = tsMs;
        this.entity = entity;
        this.samples = samples;
        this.nSamples = nSamples + unknownFields.size();
        this.nUnknown = unknownFields.size();
        this.unknownFields = unknownFields;
    }

    Decoded(String reason, String detail) {
        this.outcome = DEAD;
        this.reason = reason;
        this.detail = detail;
        this.series = this.entity = this.samples = "";
        this.tsMs = 0;
        this.nSamples = this.nUnknown = 0;
        this.unknownFields = List.of();
    }
}
