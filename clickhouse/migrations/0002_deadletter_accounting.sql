-- Histogram samples carry their 3PAR bucket (0..31); every other sample has bucket = -1.
ALTER TABLE sanlens.metrics ADD COLUMN IF NOT EXISTS bucket Int8 DEFAULT -1 AFTER unit;
-- When the source record reached Kafka: ts is when it was measured, loaded_at when it was loaded.
ALTER TABLE sanlens.metrics ADD COLUMN IF NOT EXISTS arrived_at DateTime64(3, 'UTC') AFTER tags;

-- Records the pipeline could not use (telemetry.deadletter): the reason, and the payload as it came.
CREATE TABLE IF NOT EXISTS sanlens.deadletter
(
    ts              DateTime64(3, 'UTC') DEFAULT now64(3),
    stage           LowCardinality(String),
    reason          LowCardinality(String),
    detail          String,
    topic           LowCardinality(String),
    partition       Int32,
    offset          Int64,
    payload         String,
    kafka_partition UInt16,
    kafka_offset    UInt64,
    loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (stage, reason, ts)
TTL toDateTime(ts) + INTERVAL 30 DAY;

-- Per window (arrival time) and stage: records or samples in, out, dead-lettered, dropped with a
-- reason (telemetry.accounting). "Nothing lost" is: in = out + deadletter + dropped, per window.
CREATE TABLE IF NOT EXISTS sanlens.pipeline_accounting
(
    window_start    DateTime64(3, 'UTC'),
    stage           LowCardinality(String),
    site            LowCardinality(String),
    unit            LowCardinality(String),
    outcome         LowCardinality(String),
    reason          LowCardinality(String),
    records         UInt64,
    kafka_partition UInt16,
    kafka_offset    UInt64,
    loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY (stage, site, unit, window_start, outcome, reason)
TTL toDateTime(window_start) + INTERVAL 90 DAY;
