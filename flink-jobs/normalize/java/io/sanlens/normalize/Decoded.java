package io.sanlens.normalize;

import java.util.List;

/**
 * One raw record, decoded or refused. A decoded record has its series (measurement and tags), time,
 * entity (one value per catalog entity key) and samples; the fields the catalog does not know are
 * counted as dropped samples, so n_samples counts both.
 */
public final class Decoded {
    public static final String DECODED = "decoded", DEAD = "dead";
    private static final String[] NO_ENTITY = new String[0];

    public final String outcome, reason, detail, series;
    public final String[] entity;
    public final List<Sample> samples;
    public final long tsMs;
    public final int nSamples, nUnknown;
    public final List<String> unknownFields;

    Decoded(String series, long tsMs, String[] entity, List<Sample> samples, List<String> unknownFields) {
        this.outcome = DECODED;
        this.reason = this.detail = "";
        this.series = series;
        this.tsMs = tsMs;
        this.entity = entity;
        this.samples = samples;
        this.nSamples = samples.size() + unknownFields.size();
        this.nUnknown = unknownFields.size();
        this.unknownFields = unknownFields;
    }

    Decoded(String reason, String detail) {
        this.outcome = DEAD;
        this.reason = reason;
        this.detail = detail;
        this.series = "";
        this.entity = NO_ENTITY;
        this.samples = List.of();
        this.tsMs = 0;
        this.nSamples = this.nUnknown = 0;
        this.unknownFields = List.of();
    }

    /** The site, the first entity key: what the accounting is kept by. */
    public String site() {
        return entity.length == 0 || entity[0] == null ? "" : entity[0];
    }
}
