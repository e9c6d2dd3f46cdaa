"""Record types and SQL of the normalize job: raw Telegraf JSON in; samples, dead letters and the
job's own accounting out (docs/contract.md)."""

from __future__ import annotations

from flink_jobs.normalize.catalog import ENTITY_KEYS
from flink_jobs.normalize.functions import COLUMNS
from ingest import topics

WINDOW_S = 10  # accounting windows, by arrival time
EMIT_EVERY = "INTERVAL '5' SECOND"  # how often the counts of the records processed since are emitted


def raw_metrics(kafka_options: str) -> str:
    """`telemetry.metrics` as raw text, so that a record that is not even JSON can still be dead-lettered.
    Arrival is the broker's append time (the topic uses LogAppendTime): every record has one. `read_at`
    is when the job read the record (ingestion time): no record is read before it is read, so nothing
    can be late; its watermark only paces a bounded run's accounting. Samples wait for no watermark."""
    return f"""
    CREATE TABLE raw_metrics (
        payload STRING,
        kafka_topic STRING METADATA FROM 'topic' VIRTUAL,
        kafka_partition INT METADATA FROM 'partition' VIRTUAL,
        kafka_offset BIGINT METADATA FROM 'offset' VIRTUAL,
        arrival TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
        proc AS PROCTIME(),
        read_at AS CAST(CURRENT_TIMESTAMP AS TIMESTAMP_LTZ(3)),
        WATERMARK FOR read_at AS read_at
    ) WITH ({kafka_options}, 'format' = 'raw')"""


def _sink(name: str, topic: str, bootstrap: str, columns: str) -> str:
    return f"""
    CREATE TABLE {name} ({columns}
    ) WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
            'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601',
            'sink.delivery-guarantee' = 'at-least-once', 'properties.compression.type' = 'lz4',
            'properties.linger.ms' = '20', 'properties.batch.size' = '524288')"""


def sinks(bootstrap: str, prefix: str | None = None) -> list[str]:
    entity_columns = "".join(f"\n        `{key}` STRING," for key in ENTITY_KEYS)
    return [
        _sink(
            "samples",
            topics.with_prefix(topics.SAMPLES, prefix),
            bootstrap,
            f"""
        ts TIMESTAMP_LTZ(3), metric STRING, `value` DOUBLE, unit STRING, bucket INT,{entity_columns}
        arrived_at TIMESTAMP_LTZ(3)""",
        ),
        _sink(
            "deadletter",
            topics.with_prefix(topics.DEADLETTER, prefix),
            bootstrap,
            """
        ts TIMESTAMP_LTZ(3), stage STRING, reason STRING, detail STRING, topic STRING, `partition` INT,
        `offset` BIGINT, payload STRING""",
        ),
        _sink(
            "accounting",
            topics.with_prefix(topics.ACCOUNTING, prefix),
            bootstrap,
            """
        window_start TIMESTAMP_LTZ(3), stage STRING, site STRING, unit STRING, outcome STRING, reason STRING,
        records BIGINT""",
        ),
    ]


def _part(column: str, i: int) -> str:
    return f"SPLIT_INDEX({column}, CHR(31), {i})"


DECODED = f"""
    SELECT r.payload, r.kafka_topic, r.kafka_partition, r.kafka_offset, r.arrival, r.proc, r.read_at,
        CAST(TIMESTAMPDIFF(SECOND, TO_TIMESTAMP_LTZ(0, 3), r.arrival) AS BIGINT) AS arrival_s,
        d.outcome, d.reason, d.detail, d.series, d.ts_ms, d.entity, d.samples, d.n_samples, d.n_unknown,
        COALESCE({_part("d.entity", 0)}, '') AS site
    FROM raw_metrics AS r,
         LATERAL TABLE(decode_record(r.payload,
             CAST(TIMESTAMPDIFF(SECOND, TO_TIMESTAMP_LTZ(0, 3), r.arrival) AS BIGINT) * 1000))
         AS d({", ".join(COLUMNS)})"""

# One row per sample, still packed (metric, kind, unit, bucket, num, den joined by U+001F); the
# stateful step below carries the packed string and unpacks it after the LAG.
SAMPLES = f"""
    SELECT d.arrival, d.arrival_s, d.proc, d.read_at, d.ts_ms, d.entity, x.s,
        d.series || CHR(31) || {_part("x.s", 0)} || CHR(31) || {_part("x.s", 3)} AS series_key
    FROM decoded AS d CROSS JOIN UNNEST(SPLIT(d.samples, CHR(30))) AS x(s)
    WHERE d.outcome = 'decoded' AND d.samples <> ''"""

# Per series (one metric of one entity, one bucket), the previous sample in arrival order. A series
# always comes from one source, hence one Kafka partition and one subtask: processing order is
# arrival order, and nothing waits for a watermark.
PAIRED = f"""
    SELECT arrival, arrival_s, read_at, ts_ms, entity, prev_ts,
        {_part("s", 0)} AS metric, {_part("s", 1)} AS kind, {_part("s", 2)} AS unit,
        CAST({_part("s", 3)} AS INT) AS bucket,
        CAST({_part("s", 4)} AS DOUBLE) AS num, TRY_CAST({_part("s", 5)} AS DOUBLE) AS den,
        CAST({_part("prev_s", 4)} AS DOUBLE) AS prev_num, TRY_CAST({_part("prev_s", 5)} AS DOUBLE) AS prev_den
    FROM (
        SELECT arrival, arrival_s, read_at, ts_ms, entity, s,
            LAG(s) OVER (PARTITION BY series_key ORDER BY proc) AS prev_s,
            LAG(ts_ms) OVER (PARTITION BY series_key ORDER BY proc) AS prev_ts
        FROM decoded_samples)"""

# The verdict on each sample: out with its canonical value, or dropped with the reason.
JUDGED = """
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

_ENTITY = ", ".join(f"COALESCE({_part('entity', i)}, '')" for i in range(len(ENTITY_KEYS)))
INSERT_SAMPLES = f"""
    INSERT INTO samples
    SELECT TO_TIMESTAMP_LTZ(ts_ms, 3), metric, canonical, unit, bucket, {_ENTITY}, arrival
    FROM judged WHERE verdict = 'out'"""

INSERT_DEADLETTERS = """
    INSERT INTO deadletter
    SELECT arrival, 'normalize', reason, detail, kafka_topic, kafka_partition, kafka_offset, payload
    FROM decoded WHERE outcome = 'dead'"""

# Every record in is counted once as out or dead-lettered; every sample decoded is counted once as
# out or dropped with its reason, in the 10 s window of the record's arrival. The counts are emitted
# every few seconds as increments (the loader adds them up), tumbling on the time the job read the
# record, so a record is counted whenever it is processed, however long its partition was held back:
# nothing is late. A live job tumbles on processing time, which the clock fires even when no record
# follows; a bounded run (a backfill) on `read_at`, whose final watermark flushes the last counts at
# the end of input, where processing-time windows are dropped unfired.
# A record's own counts (in, and out or dead-lettered) always land in the same window.
OUTCOMES = f"""
    SELECT {{read_time}} AS pt, arrival_s - MOD(arrival_s, {WINDOW_S}) AS window_s, site, unit, outcome, reason, n
    FROM (
        SELECT read_at, arrival_s, site, 'records' AS unit, 'in' AS outcome, '' AS reason, 1 AS n FROM decoded
        UNION ALL
        SELECT read_at, arrival_s, site, 'records', CASE WHEN outcome = 'dead' THEN 'deadletter' ELSE 'out' END,
            CASE WHEN outcome = 'dead' THEN reason ELSE '' END, 1 FROM decoded
        UNION ALL
        SELECT read_at, arrival_s, site, 'samples', 'in', '', n_samples FROM decoded WHERE n_samples > 0
        UNION ALL
        SELECT read_at, arrival_s, site, 'samples', 'dropped', 'field not in catalog', n_unknown FROM decoded
        WHERE n_unknown > 0
        UNION ALL
        SELECT read_at, arrival_s, COALESCE(SPLIT_INDEX(entity, CHR(31), 0), ''), 'samples', verdict, verdict_reason, 1
        FROM judged)"""


# The views in the order they build on each other. They are registered as Table objects (job.py), so
# the plan holds one copy of each for all three outputs: SQL views (CREATE TEMPORARY VIEW) would be
# expanded and planned again for every INSERT, with two LAG aggregations where one serves both.
def views(bounded: bool) -> dict[str, str]:
    outcomes = OUTCOMES.format(read_time="read_at" if bounded else "PROCTIME()")
    return {"decoded": DECODED, "decoded_samples": SAMPLES, "paired": PAIRED, "judged": JUDGED, "outcomes": outcomes}


INSERT_ACCOUNTING = f"""
    INSERT INTO accounting
    SELECT TO_TIMESTAMP_LTZ(window_s * 1000, 3), 'normalize', site, unit, outcome, reason, CAST(SUM(n) AS BIGINT)
    FROM TABLE(TUMBLE(TABLE outcomes, DESCRIPTOR(pt), {EMIT_EVERY}))
    GROUP BY window_start, window_end, window_s, site, unit, outcome, reason"""
