-- telemetry.histograms as its messages are (docs/contract.md): one message per sample and direction, its
-- buckets and their I/Os in two arrays of one length. A Null table keeps nothing: on every insert the
-- materialized view below writes a row per bucket into sanlens.service_time_hist_10s, which stays the loader's
-- offset store (as sanlens.metrics_messages, migration 0014). A message per bucket made the histograms job,
-- the burn rates' join and the loading carry about 15 rows per volume window instead of one (issue 38).
CREATE TABLE IF NOT EXISTS sanlens.service_time_hist_messages
(
    window_start    DateTime64(3, 'UTC'),
    window_s        UInt16,
    sample_ts       DateTime64(3, 'UTC'),
    source          LowCardinality(String),
    site            LowCardinality(String),
    array           LowCardinality(String),
    volume          LowCardinality(String),
    host            LowCardinality(String),
    disk            LowCardinality(String),
    host_port       LowCardinality(String),
    direction       LowCardinality(String),
    buckets         Array(UInt8),
    ios             Array(UInt64),
    kafka_partition UInt16,
    kafka_offset    UInt64
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS sanlens.service_time_hist_messages_to_10s TO sanlens.service_time_hist_10s AS
SELECT
    window_start,
    window_s,
    sample_ts,
    source,
    site,
    array,
    volume,
    host,
    disk,
    host_port,
    direction,
    bucket,
    bucket_ios AS ios,
    kafka_partition,
    kafka_offset
FROM sanlens.service_time_hist_messages
ARRAY JOIN buckets AS bucket, ios AS bucket_ios;
