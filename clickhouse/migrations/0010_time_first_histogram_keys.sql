-- The service-time histograms and their rollups sorted by time first. Every refresh of the rollups
-- (ingest/loader/rollups.py) reads the periods that received rows, FINAL, from the level below, and every
-- dashboard query filters on time: with time fifth or eighth in the key, each read merged every part of
-- the partition, so a refresh cost grew with the data held, not with the data that arrived (a 12-hour
-- backfill of 200 arrays: refreshes of 3 s at its start, 19 s at its end). A sorting key cannot be
-- reordered in place, so each table is rebuilt: same columns, engine, partitions and TTL, its rows copied
-- (the primary key is stated: a table created AS another would take over its old one). Run again after a
-- failure, it copies again; the copies collapse like any re-delivery. Rows inserted between a copy and
-- its rename would be lost: apply it with the loader stopped, as `./sanlens up` does (migrations first).
CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_10s__rebuilt AS sanlens.service_time_hist_10s
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(window_start)
ORDER BY (window_start, source, site, array, volume, host, host_port, direction, sample_ts, bucket, disk)
PRIMARY KEY (window_start, source, site, array, volume, host, host_port, direction, sample_ts, bucket, disk)
TTL toDateTime(window_start) + INTERVAL 7 DAY;

INSERT INTO sanlens.service_time_hist_10s__rebuilt SELECT * FROM sanlens.service_time_hist_10s;

RENAME TABLE sanlens.service_time_hist_10s TO sanlens.service_time_hist_10s__old,
    sanlens.service_time_hist_10s__rebuilt TO sanlens.service_time_hist_10s;

DROP TABLE IF EXISTS sanlens.service_time_hist_10s__old;

CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_1m__rebuilt AS sanlens.service_time_hist_1m
ENGINE = ReplacingMergeTree(refreshed_at)
PARTITION BY toYYYYMMDD(period_start)
ORDER BY (period_start, source, site, array, volume, host, disk, host_port, direction, bucket, firmware, array_model, customer)
PRIMARY KEY (period_start, source, site, array, volume, host, disk, host_port, direction, bucket, firmware, array_model, customer)
TTL period_start + INTERVAL 30 DAY;

INSERT INTO sanlens.service_time_hist_1m__rebuilt SELECT * FROM sanlens.service_time_hist_1m;

RENAME TABLE sanlens.service_time_hist_1m TO sanlens.service_time_hist_1m__old,
    sanlens.service_time_hist_1m__rebuilt TO sanlens.service_time_hist_1m;

DROP TABLE IF EXISTS sanlens.service_time_hist_1m__old;

CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_1h__rebuilt AS sanlens.service_time_hist_1h
ENGINE = ReplacingMergeTree(refreshed_at)
PARTITION BY toYYYYMM(period_start)
ORDER BY (period_start, source, site, array, volume, host, disk, host_port, direction, bucket, firmware, array_model, customer)
PRIMARY KEY (period_start, source, site, array, volume, host, disk, host_port, direction, bucket, firmware, array_model, customer)
TTL period_start + INTERVAL 400 DAY;

INSERT INTO sanlens.service_time_hist_1h__rebuilt SELECT * FROM sanlens.service_time_hist_1h;

RENAME TABLE sanlens.service_time_hist_1h TO sanlens.service_time_hist_1h__old,
    sanlens.service_time_hist_1h__rebuilt TO sanlens.service_time_hist_1h;

DROP TABLE IF EXISTS sanlens.service_time_hist_1h__old;

CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_1d__rebuilt AS sanlens.service_time_hist_1d
ENGINE = ReplacingMergeTree(refreshed_at)
PARTITION BY toYear(period_start)
ORDER BY (period_start, source, site, array, volume, host, disk, host_port, direction, bucket, firmware, array_model, customer)
PRIMARY KEY (period_start, source, site, array, volume, host, disk, host_port, direction, bucket, firmware, array_model, customer)
TTL period_start + INTERVAL 5 YEAR;

INSERT INTO sanlens.service_time_hist_1d__rebuilt SELECT * FROM sanlens.service_time_hist_1d;

RENAME TABLE sanlens.service_time_hist_1d TO sanlens.service_time_hist_1d__old,
    sanlens.service_time_hist_1d__rebuilt TO sanlens.service_time_hist_1d;

DROP TABLE IF EXISTS sanlens.service_time_hist_1d__old;

CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_array_1h__rebuilt AS sanlens.service_time_hist_array_1h
ENGINE = ReplacingMergeTree(refreshed_at)
PARTITION BY toYYYYMM(period_start)
ORDER BY (period_start, source, site, array, direction, bucket, firmware, array_model, customer)
PRIMARY KEY (period_start, source, site, array, direction, bucket, firmware, array_model, customer)
TTL period_start + INTERVAL 400 DAY;

INSERT INTO sanlens.service_time_hist_array_1h__rebuilt SELECT * FROM sanlens.service_time_hist_array_1h;

RENAME TABLE sanlens.service_time_hist_array_1h TO sanlens.service_time_hist_array_1h__old,
    sanlens.service_time_hist_array_1h__rebuilt TO sanlens.service_time_hist_array_1h;

DROP TABLE IF EXISTS sanlens.service_time_hist_array_1h__old;
