"""Record types and SQL of the normalise job: raw Telegraf JSON in; samples, dead letters and the
job's own accounting out (docs/contract.md)."""
from __future__ import annotations

from normalize.decode import ENTITY_KEYS, ROW_FIELDS

WINDOW = "INTERVAL '10' SECOND"


def raw_metrics(kafka_options: str) -> str:
    """`telemetry.metrics` as raw text, so that a record that is not even JSON can still be dead-lettered.
    Event time is the broker's append time (the topic uses LogAppendTime): every record has one, and a
    bad timestamp inside a payload cannot move the watermark."""
    return f"""
    CREATE TABLE raw_metrics (
        payload STRING,
        kafka_topic STRING METADATA FROM 'topic' VIRTUAL,
        kafka_partition INT METADATA FROM 'partition' VIRTUAL,
        kafka_offset BIGINT METADATA FROM 'offset' VIRTUAL,
        arrival TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
        proc AS PROCTIME(),
        WATERMARK FOR arrival AS arrival - INTERVAL '1' SECOND
    ) WITH ({kafka_options}, 'format' = 'raw')"""


def _sink(name: str, topic: str, bootstrap: str, columns: str) -> str:
    return f"""
    CREATE TABLE {name} ({columns}
    ) WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
            'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601',
            'sink.delivery-guarantee' = 'at-least-once')"""


def sinks(bootstrap: str, prefix: str = "telemetry") -> list[str]:
    entity_columns = "".join(f"\n        `{key}` STRING," for key in ENTITY_KEYS)
    return [
        _sink("samples", f"{prefix}.samples", bootstrap, f"""
        ts TIMESTAMP_LTZ(3), metric STRING, `value` DOUBLE, unit STRING, bucket INT,{entity_columns[:-1]}"""),
        _sink("deadletter", f"{prefix}.deadletter", bootstrap, """
        ts TIMESTAMP_LTZ(3), stage STRING, reason STRING, detail STRING, topic STRING, `partition` INT,
        `offset` BIGINT, payload STRING"""),
        _sink("accounting", f"{prefix}.accounting", bootstrap, """
        window_start TIMESTAMP_LTZ(3), stage STRING, site STRING, unit STRING, outcome STRING, reason STRING,
        records BIGINT"""),
    ]


_DECODED_COLUMNS = ", ".join(f"`{c}`" for c in ROW_FIELDS)
DECODED = f"""
    CREATE TEMPORARY VIEW decoded AS
    SELECT r.payload, r.kafka_topic, r.kafka_partition, r.kafka_offset, r.arrival, r.proc, d.*
    FROM raw_metrics AS r,
         LATERAL TABLE(decode_record(r.payload, CAST(TIMESTAMPDIFF(SECOND, TO_TIMESTAMP_LTZ(0, 3), r.arrival) AS BIGINT) * 1000)) AS d({_DECODED_COLUMNS})"""

# Per series (one metric of one entity, one bucket), the previous sample in arrival order. A series
# always comes from one source, hence one Kafka partition and one subtask: processing order is
# arrival order, and nothing waits for a watermark.
PAIRED = """
    CREATE TEMPORARY VIEW paired AS
    SELECT *,
        LAG(num) OVER w AS prev_num, LAG(den) OVER w AS prev_den, LAG(ts_ms) OVER w AS prev_ts
    FROM decoded WHERE outcome = 'sample'
    WINDOW w AS (PARTITION BY series, metric, bucket ORDER BY proc)"""

# The verdict on each sample: out with its canonical value, or dropped with the reason.
JUDGED = """
    CREATE TEMPORARY VIEW judged AS
    SELECT *,
        CASE WHEN verdict_reason = '' THEN 'out' ELSE 'dropped' END AS verdict
    FROM (
        SELECT *,
            CASE
                WHEN prev_ts IS NOT NULL AND ts_ms = prev_ts THEN 'duplicate'
                WHEN prev_ts IS NOT NULL AND ts_ms < prev_ts THEN 'out of order'
                WHEN kind = 'gauge' THEN ''
                WHEN prev_ts IS NULL THEN 'baseline: first sample of a cumulative series'
                WHEN num < prev_num OR den < prev_den THEN 'counter reset'
                WHEN kind = 'ratio' AND den = prev_den THEN 'no I/O in interval'
                ELSE ''
            END AS verdict_reason,
            CASE kind
                WHEN 'gauge' THEN num
                WHEN 'counter' THEN (num - prev_num) * 1000.0 / (ts_ms - prev_ts)
                WHEN 'ratio' THEN (num - prev_num) / (den - prev_den)
                ELSE num - prev_num
            END AS canonical
        FROM paired)"""

INSERT_SAMPLES = f"""
    INSERT INTO samples
    SELECT TO_TIMESTAMP_LTZ(ts_ms, 3), metric, canonical, unit, bucket, {', '.join(f'`{k}`' for k in ENTITY_KEYS)}
    FROM judged WHERE verdict = 'out'"""

INSERT_DEADLETTERS = """
    INSERT INTO deadletter
    SELECT arrival, 'normalize', reason, detail, kafka_topic, kafka_partition, kafka_offset, payload
    FROM decoded WHERE outcome = 'dead'"""

# Every record in is counted once as out or dead-lettered; every sample decoded is counted once as
# out or dropped with its reason. Windows are by arrival time.
OUTCOMES = """
    CREATE TEMPORARY VIEW outcomes AS
    SELECT arrival, site, 'records' AS unit, 'in' AS outcome, '' AS reason FROM decoded WHERE `first`
    UNION ALL
    SELECT arrival, site, 'records', CASE WHEN outcome = 'dead' THEN 'deadletter' ELSE 'out' END,
        CASE WHEN outcome = 'dead' THEN reason ELSE '' END FROM decoded WHERE `first`
    UNION ALL
    SELECT arrival, site, 'samples', 'in', '' FROM decoded WHERE outcome <> 'dead'
    UNION ALL
    SELECT arrival, site, 'samples', 'dropped', reason FROM decoded WHERE outcome = 'dropped'
    UNION ALL
    SELECT arrival, site, 'samples', verdict, verdict_reason FROM judged"""

INSERT_ACCOUNTING = f"""
    INSERT INTO accounting
    SELECT window_start, 'normalize', COALESCE(site, ''), unit, outcome, reason, COUNT(*)
    FROM TABLE(TUMBLE(TABLE outcomes, DESCRIPTOR(arrival), {WINDOW}))
    GROUP BY window_start, window_end, site, unit, outcome, reason"""
