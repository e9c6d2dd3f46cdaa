-- Latency breakdown per window, path and direction (telemetry.breakdown, written by the breakdown job):
-- what the host measured (host_us) and its parts, which add up to it: host_queueing_us + fabric_us +
-- array_us + unexplained_us = host_us. hba_busy (outstanding / queue depth), port_stall (share of time
-- at zero transmit credit on the path's busier switch port) and port_discards (class-3 per s) are the
-- evidence the attribution used. One row per window, path and direction: the job sends a window once
-- per version of its path that began before it, and the latest (path_valid_from) is kept, i.e. the path
-- as it was in the window; a window delivered twice collapses too. Read with FINAL.
CREATE TABLE IF NOT EXISTS sanlens.path_latency
(
    window_start      DateTime64(3, 'UTC'),
    window_s          UInt16,
    customer          LowCardinality(String),
    site              LowCardinality(String),
    host              LowCardinality(String),
    disk              LowCardinality(String),
    direction         LowCardinality(String),
    host_port         LowCardinality(String),
    switch            LowCardinality(String),
    host_switch_port  LowCardinality(String),
    array_switch_port LowCardinality(String),
    array             LowCardinality(String),
    volume            LowCardinality(String),
    path_valid_from   DateTime64(3, 'UTC'),
    ios               UInt64,
    host_us           Float64,
    host_queueing_us  Float64,
    fabric_us         Float64,
    array_us          Float64,
    unexplained_us    Float64,
    hba_busy          Float64,
    port_stall        Float64,
    port_discards     Float64,
    kafka_partition   UInt16,
    kafka_offset      UInt64,
    loaded_at         DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(path_valid_from)
PARTITION BY toYYYYMMDD(window_start)
ORDER BY (site, host, disk, direction, window_start)
TTL toDateTime(window_start) + INTERVAL 30 DAY;
