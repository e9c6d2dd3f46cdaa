-- sanlens.slo_windows per SLO, entity, path and window, no longer per 3PAR bucket as well: the burn_rates job
-- reads a window's histogram as one row (migration 0019) and writes its good and total I/Os once (issue 38:
-- about 15 times fewer rows to join, evaluate, send and store). A sorting key cannot change in place, so the
-- table is rebuilt, its rows summed over their buckets; each window keeps the highest Kafka position of its
-- rows, which the loader resumes after. Rows inserted between the copy and the rename would be lost: apply it
-- with the loader stopped, as `./sanlens up` does (migrations first).
CREATE TABLE IF NOT EXISTS sanlens.slo_windows__rebuilt
(
    slo             LowCardinality(String),
    entity          String,
    path            String,
    site            LowCardinality(String),
    window_start    DateTime64(3, 'UTC'),
    good            Float64,
    total           Float64,
    objective       Float64,
    kafka_partition UInt16,
    kafka_offset    UInt64,
    loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(window_start)
ORDER BY (slo, entity, path, window_start)
TTL toDateTime(window_start) + INTERVAL 35 DAY;

INSERT INTO sanlens.slo_windows__rebuilt
SELECT
    slo,
    entity,
    path,
    any(site),
    window_start,
    sum(good),
    sum(total),
    any(objective),
    argMax(kafka_partition, kafka_offset),
    max(kafka_offset),
    max(loaded_at)
FROM sanlens.slo_windows FINAL
GROUP BY slo, entity, path, window_start;

RENAME TABLE sanlens.slo_windows TO sanlens.slo_windows__old,
    sanlens.slo_windows__rebuilt TO sanlens.slo_windows;

DROP TABLE IF EXISTS sanlens.slo_windows__old;
