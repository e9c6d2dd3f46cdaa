-- Service-time histograms per window (telemetry.histograms, written by the histograms job): I/Os per
-- 3PAR bucket (bucket n holds (2^(n-8), 2^(n-7)] ms, bucket 31 open-ended) per series and direction.
-- source = 'array': the array's own per-I/O counts, one row per array sample and bucket. A sample
-- delivered twice has the same key and collapses on merge: read with FINAL, and sum by window.
CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_10s
(
    window_start    DateTime64(3, 'UTC'),
    window_s        UInt16,
    sample_ts       DateTime64(3, 'UTC'),
    source          LowCardinality(String),
    site            LowCardinality(String),
    array           LowCardinality(String),
    volume          LowCardinality(String),
    host            LowCardinality(String),
    host_port       LowCardinality(String),
    direction       LowCardinality(String),
    bucket          UInt8,
    ios             UInt64,
    kafka_partition UInt16,
    kafka_offset    UInt64,
    loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(window_start)
ORDER BY (source, site, array, volume, host, host_port, direction, window_start, sample_ts, bucket)
TTL toDateTime(window_start) + INTERVAL 7 DAY;
