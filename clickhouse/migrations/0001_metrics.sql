-- Normalized samples (telemetry.samples), one row per sample. Short TTL: rollups keep the history.
-- kafka_partition/kafka_offset make the table its own offset store: the loader resumes after the
-- highest offset it holds, so a batch inserted but not yet committed in Kafka is never loaded twice.
CREATE TABLE IF NOT EXISTS sanlens.metrics
(
    ts              DateTime64(3, 'UTC'),
    metric          LowCardinality(String),
    value           Float64,
    unit            LowCardinality(String),
    site            LowCardinality(String),
    host            LowCardinality(String),
    disk            LowCardinality(String),
    sql_instance    LowCardinality(String),
    database        LowCardinality(String),
    file            LowCardinality(String),
    array           LowCardinality(String),
    volume          LowCardinality(String),
    host_port       LowCardinality(String),
    switch          LowCardinality(String),
    port            LowCardinality(String),
    tags            Map(LowCardinality(String), String),
    kafka_partition UInt16,
    kafka_offset    UInt64,
    loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
PARTITION BY toYYYYMMDD(ts)
ORDER BY (metric, site, host, array, volume, switch, port, ts)
TTL toDateTime(ts) + INTERVAL 14 DAY;
