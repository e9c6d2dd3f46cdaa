-- The burn_rates job's output (flink-jobs/burn_rates/README.md). slo_windows: per SLO of slo/slos.yaml, entity
-- (a path host:disk, a host, or a volume array:volume), path, window and 3PAR bucket, the I/Os within the SLO's
-- threshold (good, interpolated inside the bucket the threshold falls in) and all of them (total); a window
-- delivered twice collapses to one row (read with FINAL). The dbt mart sanlens_marts.slo_compliance sums them
-- per day.
CREATE TABLE IF NOT EXISTS sanlens.slo_windows
(
    slo             LowCardinality(String),
    entity          String,
    path            String,
    site            LowCardinality(String),
    window_start    DateTime64(3, 'UTC'),
    bucket          UInt8,
    good            Float64,
    total           Float64,
    objective       Float64,
    kafka_partition UInt16,
    kafka_offset    UInt64,
    loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(window_start)
ORDER BY (slo, entity, path, window_start, bucket)
TTL toDateTime(window_start) + INTERVAL 35 DAY;

-- alerts.slo: at the end of every minute while a severity (page, ticket) of an SLO fires on an entity, a row
-- `firing`, and one `resolved` when it stops, with the burn rates over each window and the period's budget left.
-- The notifier posts them to Alertmanager; this table is their history (read with FINAL).
CREATE TABLE IF NOT EXISTS sanlens.slo_alerts
(
    ts              DateTime64(3, 'UTC'),
    slo             LowCardinality(String),
    entity          String,
    site            LowCardinality(String),
    severity        LowCardinality(String),
    state           LowCardinality(String),
    burn_5m         Float64,
    burn_30m        Float64,
    burn_1h         Float64,
    burn_2h         Float64,
    burn_6h         Float64,
    burn_1d         Float64,
    burn_3d         Float64,
    budget_left     Float64,
    period_good     Float64,
    period_total    Float64,
    kafka_partition UInt16,
    kafka_offset    UInt64,
    loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
ORDER BY (slo, entity, severity, ts)
TTL toDateTime(ts) + INTERVAL 90 DAY;
