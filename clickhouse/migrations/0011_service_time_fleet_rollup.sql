-- The hourly histograms of the whole install base per array model, firmware, direction and bucket, with
-- the number of arrays behind each row: what the fleet views read (the install-base histogram, the model
-- level of the percentiles). 30 days of 1,000 arrays are 34,560 rows here against 11.5 M per array.
-- Computed from sanlens.service_time_hist_array_1h by ingest/loader/rollups.py, which recomputes every
-- day that received rows into a table of its own and swaps each such day in with REPLACE PARTITION: one
-- atomic step replaces the day's previous rows, so the table never holds two versions of a row and is
-- read without FINAL (a plain MergeTree). A day delivered twice, or a refresh run twice, counts once.
-- Sorted by the queries' filters (model, firmware, direction) then time; a refresh never reads it.
CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_fleet_1h
(
    period_start  DateTime('UTC'),
    array_model   LowCardinality(String),
    firmware      LowCardinality(String),
    direction     LowCardinality(String),
    bucket        UInt8,
    ios           UInt64,
    arrays        UInt32,
    refreshed_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
PARTITION BY toYYYYMMDD(period_start)
ORDER BY (array_model, firmware, direction, period_start, bucket)
TTL period_start + INTERVAL 400 DAY;

-- The install base held so far: the loader only recomputes the days that receive rows from now on. Run
-- again after a failure, it fills the table again from scratch (apply it with the loader stopped, as
-- `./sanlens up` does: migrations first).
TRUNCATE TABLE sanlens.service_time_hist_fleet_1h;

INSERT INTO sanlens.service_time_hist_fleet_1h (period_start, array_model, firmware, direction, bucket, ios, arrays)
SELECT period_start, array_model, firmware, direction, bucket, sum(ios), uniqExact(array)
FROM sanlens.service_time_hist_array_1h FINAL
GROUP BY period_start, array_model, firmware, direction, bucket
SETTINGS max_partitions_per_insert_block = 0;
