-- The hourly histograms per array (volumes, hosts and ports summed; array-reported only), computed
-- from sanlens.service_time_hist_1h by ingest/loader/rollups.py like the other levels: the fleet
-- views (install base, upgrade effect) never need volumes and read 50 times fewer rows here.
CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_array_1h
(
    period_start  DateTime('UTC'),
    source        LowCardinality(String),
    customer      LowCardinality(String),
    site          LowCardinality(String),
    array         LowCardinality(String),
    array_model   LowCardinality(String),
    firmware      LowCardinality(String),
    direction     LowCardinality(String),
    bucket        UInt8,
    ios           UInt64,
    refreshed_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(refreshed_at)
PARTITION BY toYYYYMM(period_start)
ORDER BY (source, site, array, direction, period_start, bucket, firmware, array_model, customer)
TTL period_start + INTERVAL 400 DAY;
