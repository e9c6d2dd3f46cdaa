-- Host-side histograms are per host disk: the 10 s table gets the disk in its key.
ALTER TABLE sanlens.service_time_hist_10s
    ADD COLUMN IF NOT EXISTS disk LowCardinality(String) AFTER host,
    MODIFY ORDER BY (source, site, array, volume, host, host_port, direction, window_start, sample_ts, bucket, disk);

-- Rollups of the 10 s histograms to 1 minute, 1 hour and 1 day, kept 30 days, 400 days and 5 years.
-- Each level is recomputed from the level below (read FINAL) for the periods that received data, by
-- ingest/loader/rollups.py; a recomputed period replaces the previous rows of the same key
-- (ReplacingMergeTree by refreshed_at), so a window delivered twice, or a rollup run twice, counts
-- once. Read with FINAL. Every sample is attributed to the customer, model and firmware its array
-- ran during the sample's interval (sanlens.topology, the latest version before sample_ts).
CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_1m
(
    period_start  DateTime('UTC'),
    source        LowCardinality(String),
    customer      LowCardinality(String),
    site          LowCardinality(String),
    array         LowCardinality(String),
    array_model   LowCardinality(String),
    firmware      LowCardinality(String),
    volume        LowCardinality(String),
    host          LowCardinality(String),
    disk          LowCardinality(String),
    host_port     LowCardinality(String),
    direction     LowCardinality(String),
    bucket        UInt8,
    ios           UInt64,
    refreshed_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(refreshed_at)
PARTITION BY toYYYYMMDD(period_start)
ORDER BY (source, site, array, volume, host, disk, host_port, direction, period_start, bucket, firmware, array_model, customer)
TTL period_start + INTERVAL 30 DAY;

CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_1h AS sanlens.service_time_hist_1m
ENGINE = ReplacingMergeTree(refreshed_at)
PARTITION BY toYYYYMM(period_start)
ORDER BY (source, site, array, volume, host, disk, host_port, direction, period_start, bucket, firmware, array_model, customer)
TTL period_start + INTERVAL 400 DAY;

CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_1d AS sanlens.service_time_hist_1m
ENGINE = ReplacingMergeTree(refreshed_at)
PARTITION BY toYear(period_start)
ORDER BY (source, site, array, volume, host, disk, host_port, direction, period_start, bucket, firmware, array_model, customer)
TTL period_start + INTERVAL 5 YEAR;
