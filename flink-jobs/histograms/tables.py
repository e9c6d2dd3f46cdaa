"""Record types and SQL of the histograms job: array service-time bucket deltas and host disk
interval averages (telemetry.samples) in, service-time histograms per window on the 3PAR bounds out
(telemetry.histograms)."""

from __future__ import annotations

from collections.abc import Callable

from flink_jobs.common.sql import samples_format, window_start
from ingest import buckets, topics

HIST_METRICS = {"volume.read_service_time_hist": "read", "volume.write_service_time_hist": "write"}
# Host disks report only interval averages (Perfmon's Avg. Disk sec/Read) next to the I/O rate.
HOST_LATENCY = {"disk.read_latency": ("read", "disk.reads"), "disk.write_latency": ("write", "disk.writes")}
HOST_SOURCE = "host_interval_avg"
# A host disk's latency and its I/O rate are samples of one record, in one message (docs/contract.md): the
# format hands the rate to the latency's row (`paired`), so they meet where the message is read. A join of the
# two streams held every arrival of its wait in state, and a backlog put all of it there (issue 38).
PAIRS = {latency: rate for latency, (_, rate) in HOST_LATENCY.items()}
METRICS = [*HIST_METRICS, *HOST_LATENCY]  # what the job reads


def samples(kafka_options: str) -> str:
    """`telemetry.samples` (docs/contract.md)."""
    return f"""
    CREATE TABLE samples (
        ts TIMESTAMP_LTZ(3), metric STRING, `value` DOUBLE, unit STRING, bucket INT,
        site STRING, host STRING, disk STRING, `array` STRING, volume STRING, host_port STRING, paired DOUBLE,
        `buckets` ARRAY<INT>, counts ARRAY<BIGINT>
    ) WITH ({kafka_options}, {samples_format(METRICS, PAIRS, gather=HIST_METRICS)})"""


def sinks(kafka_sink: Callable[[str, str], str]) -> list[str]:
    """Both INSERTs write `telemetry.histograms`, each through a sink table of its own: a transactional
    Kafka sink is one writer, with a transactional id of its own."""
    return [
        f"""
    CREATE TABLE {table} (
        series STRING, window_start TIMESTAMP_LTZ(3), window_s INT, sample_ts TIMESTAMP_LTZ(3), source STRING,
        site STRING, `array` STRING, volume STRING, host STRING, disk STRING, host_port STRING, direction STRING,
        `buckets` ARRAY<INT>, ios ARRAY<BIGINT>
    ) WITH ({kafka_sink(table, topics.HISTOGRAMS)},
            'key.format' = 'raw', 'key.fields' = 'series', 'value.fields-include' = 'EXCEPT_KEY',
            'value.format' = 'json', 'value.json.timestamp-format.standard' = 'ISO-8601')"""
        for table in ("histograms", "host_histograms")
    ]


_CASE = " ".join(f"WHEN '{m}' THEN '{d}'" for m, d in HIST_METRICS.items())


def bucket_of(ms: str) -> str:
    """The 3PAR bucket of a latency in ms: n holds (2^(n-8), 2^(n-7)] ms, 0 from 0, 31 open-ended."""
    return (
        f"CASE WHEN {ms} <= {buckets.upper_ms(0)} THEN 0 WHEN {ms} > {buckets.lower_ms(31):.0f} THEN 31 "
        f"ELSE CAST(CEIL(LOG2({ms})) AS INT) + 7 END"
    )


def insert_host_histograms(window_s: int, host_interval_s: int) -> str:
    """A host disk's interval average is not a distribution: all of the interval's I/Os (rate x the
    agent's collection interval) are placed in the bucket of their average, source 'host_interval_avg'.
    The rate is the latency's partner in its record (`paired`): a stateless map, one row out per latency
    sample with I/Os."""
    latency = " ".join(f"WHEN '{m}' THEN '{d}'" for m, (d, _) in HOST_LATENCY.items())
    return f"""
    INSERT INTO host_histograms
    SELECT host || ':' || disk, {window_start("ts", window_s)}, {window_s}, ts, '{HOST_SOURCE}', site, '',
        '', host, disk, '',
        CASE metric {latency} END, ARRAY[{bucket_of("`value` / 1000.0")}],
        ARRAY[CAST(ROUND(paired * {host_interval_s}, 0) AS BIGINT)]
    FROM samples
    WHERE metric IN ({", ".join(f"'{m}'" for m in HOST_LATENCY)}) AND paired > 0"""


def insert_histograms(window_s: int) -> str:
    """An array's bucket deltas are already the histogram of its interval: a record's buckets of one direction
    (one row, gathered where the message is read) are placed in the window its interval ends in, as they are.
    Histograms merge by adding counts, so windows holding several samples of one series are summed where they
    are read (sanlens.service_time_hist_10s); nothing waits for a watermark, and nothing arriving late or out of
    order can be dropped. One message per record and direction, not per bucket: the burn rates' joins and
    evaluation, and the loading, take a row per window instead of one per bucket (issue 38)."""
    return f"""
    INSERT INTO histograms
    SELECT `array` || ':' || volume, {window_start("ts", window_s)}, {window_s}, ts, 'array',
        site, `array`, volume, '', '', '', CASE metric {_CASE} END, `buckets`, counts
    FROM samples
    WHERE metric IN ({", ".join(f"'{m}'" for m in HIST_METRICS)})"""
