-- telemetry.samples as its messages are (docs/contract.md): one row a record, its samples in `samples`. A Null
-- table keeps nothing: on every insert the materialized view below writes a row per sample into sanlens.metrics.
-- The loader inserts the messages as they are (JSONEachRow, its Kafka position appended), so ClickHouse parses
-- them: 5 µs a message and its six samples here, where the loader's own parse into Arrow cost 15
-- (docs/benchmarks.md, "ClickHouse parses the samples' messages"). sanlens.metrics stays the offset store.
CREATE TABLE IF NOT EXISTS sanlens.metrics_messages
(
    ts              DateTime64(3, 'UTC'),
    site            String,
    host            String,
    disk            String,
    sql_instance    String,
    database        String,
    file            String,
    array           String,
    volume          String,
    host_port       String,
    switch          String,
    port            String,
    arrived_at      DateTime64(3, 'UTC'),
    samples         Array(Tuple(metric String, value Float64, unit String, bucket Int8)),
    kafka_partition UInt16,
    kafka_offset    UInt64
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS sanlens.metrics_messages_to_metrics TO sanlens.metrics AS
SELECT
    ts,
    sample.metric AS metric,
    sample.value AS value,
    sample.unit AS unit,
    sample.bucket AS bucket,
    site,
    host,
    disk,
    sql_instance,
    database,
    file,
    array,
    volume,
    host_port,
    switch,
    port,
    arrived_at,
    kafka_partition,
    kafka_offset
FROM sanlens.metrics_messages
ARRAY JOIN samples AS sample;
