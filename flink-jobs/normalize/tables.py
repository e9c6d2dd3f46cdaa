"""Record types and SQL of the normalize job: raw Telegraf JSON in; samples, dead letters and the
job's own accounting out (docs/contract.md)."""

from __future__ import annotations

from collections.abc import Callable

from ingest import topics

WINDOW_S = 10  # accounting windows, by arrival time
EMIT_EVERY = "INTERVAL '5' SECOND"  # how often the counts of the records processed since are emitted


def raw_metrics(kafka_options: str) -> str:
    """`telemetry.metrics` as raw bytes (the function parses them as they are, UTF-8), so that a record that
    is not even JSON can still be dead-lettered, with its Kafka key (the source), by which the records are
    partitioned. Arrival is the broker's append time (the topic uses LogAppendTime): every record has one.
    `read_at` is when the job read the record (ingestion time), and its watermark only paces a bounded run's
    accounting. The watermark trails it by a second, because the function drops a row whose time is not after
    the watermark, and rows read in the same millisecond share a time. Samples wait for no watermark."""
    return f"""
    CREATE TABLE raw_metrics (
        kafka_key STRING,
        payload BYTES,
        kafka_topic STRING METADATA FROM 'topic' VIRTUAL,
        kafka_partition INT METADATA FROM 'partition' VIRTUAL,
        kafka_offset BIGINT METADATA FROM 'offset' VIRTUAL,
        arrival TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
        read_at AS CAST(CURRENT_TIMESTAMP AS TIMESTAMP_LTZ(3)),
        WATERMARK FOR read_at AS read_at - INTERVAL '1' SECOND
    ) WITH ({kafka_options}, 'key.format' = 'raw', 'key.fields' = 'kafka_key', 'value.format' = 'raw',
            'value.fields-include' = 'EXCEPT_KEY')"""


JSON = "'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601'"


def _sink(kafka_sink: Callable[[str, str], str], name: str, topic: str, columns: str, value_format: str = JSON) -> str:
    return f"""
    CREATE TABLE {name} ({columns}
    ) WITH ({kafka_sink(name, topic)}, {value_format})"""


def sinks(kafka_sink: Callable[[str, str], str]) -> list[str]:
    """The job's three sink tables; `kafka_sink(table, topic)` gives their Kafka options (common/runtime)."""
    return [
        # A sample's message is written by the function (SampleJson, the contract's JSON), keyed by its source.
        _sink(
            kafka_sink,
            "samples",
            topics.SAMPLES,
            "source STRING, sample BYTES",
            "'key.format' = 'raw', 'key.fields' = 'source', 'value.fields-include' = 'EXCEPT_KEY', 'format' = 'raw'",
        ),
        _sink(
            kafka_sink,
            "deadletter",
            topics.DEADLETTER,
            """
        ts TIMESTAMP_LTZ(3), stage STRING, reason STRING, detail STRING, topic STRING, `partition` INT,
        `offset` BIGINT, payload STRING""",
        ),
        _sink(
            kafka_sink,
            "accounting",
            topics.ACCOUNTING,
            """
        window_start TIMESTAMP_LTZ(3), stage STRING, site STRING, unit STRING, outcome STRING, reason STRING,
        records BIGINT""",
        ),
    ]


# Every record through the one Java operator (functions.py), partitioned by source: one row per sample
# out, per refused record, and per count of the record's accounting, told apart by `kind`. A series
# always comes from one source, hence one Kafka partition and one subtask: processing order is arrival
# order, and nothing waits for a watermark. Only a bounded run passes the read time (`on_time`), for
# its accounting to window on (the function's `rowtime`). The uid changes with the layout of the function's
# state: a stack restored from a checkpoint of an older layout starts that state afresh (its cumulative
# series give one baseline each), where the old layout would fail the restore.
NORMALIZED = """
    SELECT * FROM normalize_records(input => TABLE raw_metrics PARTITION BY kafka_key{on_time},
                                    uid => 'normalize-records-5')"""

INSERT_SAMPLES = """
    INSERT INTO samples SELECT kafka_key, sample FROM normalized WHERE kind = 'sample'"""

INSERT_DEADLETTERS = """
    INSERT INTO deadletter
    SELECT arrival, 'normalize', reason, detail, topic, `partition`, `offset`, payload
    FROM normalized WHERE kind = 'dead'"""

# Every record in is counted once as out or dead-lettered; every sample decoded is counted once as
# out or dropped with its reason, in the 10 s window of the record's arrival. The function's count row of a
# record (out or dead-lettered, samples in, out and dropped for a reason) is summed per window, site and
# reason, and only the sums become the accounting's rows, one per count that is not zero: a row per record
# goes through the shuffle, where the accounting's rows of each record were about four (a third of the job's
# Java time at 1,000 arrays). The counts are emitted every few seconds as increments (the loader adds them up),
# tumbling on the time the job read the record, so a record is counted whenever it is processed, however long
# its partition was held back: nothing is late. A live job tumbles on processing time, which the clock fires
# even when no record follows; a bounded run (a backfill) on `read_at` (the function's `rowtime`), whose final
# watermark flushes the last counts at the end of input, where processing-time windows are dropped unfired. A
# record's own counts (in, and out or dead-lettered) always land in the same window.
COUNTS = f"""
    SELECT {{read_time}} AS pt, arrival_s - MOD(arrival_s, {WINDOW_S}) AS window_s, site, reason, records_out,
           records_dead, samples_in, samples_out, dropped
    FROM normalized WHERE kind = 'count'"""


# Registered as Table objects (job.py), so the plan holds one copy of the function for all three
# outputs: SQL views (CREATE TEMPORARY VIEW) would be expanded and planned again for every INSERT.
def views(bounded: bool) -> dict[str, str]:
    return {
        "normalized": NORMALIZED.format(on_time=", on_time => DESCRIPTOR(read_at)" if bounded else ""),
        "counts": COUNTS.format(read_time="rowtime" if bounded else "PROCTIME()"),
    }


INSERT_ACCOUNTING = f"""
    INSERT INTO accounting
    SELECT TO_TIMESTAMP_LTZ(window_s * 1000, 3), 'normalize', site, c.unit, c.outcome, c.reason, c.n
    FROM (
        SELECT window_s, site, reason, SUM(CAST(records_out AS BIGINT)) AS records_out,
               SUM(CAST(records_dead AS BIGINT)) AS records_dead, SUM(CAST(samples_in AS BIGINT)) AS samples_in,
               SUM(CAST(samples_out AS BIGINT)) AS samples_out, SUM(CAST(dropped AS BIGINT)) AS dropped
        FROM TABLE(TUMBLE(TABLE counts, DESCRIPTOR(pt), {EMIT_EVERY}))
        GROUP BY window_start, window_end, window_s, site, reason
    ) AS w CROSS JOIN UNNEST(ARRAY[
        ROW(CAST('records' AS STRING), CAST('in' AS STRING), CAST('' AS STRING), w.records_out + w.records_dead),
        ROW(CAST('records' AS STRING), CAST('out' AS STRING), CAST('' AS STRING), w.records_out),
        ROW(CAST('records' AS STRING), CAST('deadletter' AS STRING), w.reason, w.records_dead),
        ROW(CAST('samples' AS STRING), CAST('in' AS STRING), CAST('' AS STRING), w.samples_in),
        ROW(CAST('samples' AS STRING), CAST('out' AS STRING), CAST('' AS STRING), w.samples_out),
        ROW(CAST('samples' AS STRING), CAST('dropped' AS STRING), w.reason, w.dropped)
    ]) AS c(unit, outcome, reason, n)
    WHERE c.n > 0"""
