"""Record types and SQL of the histograms job: array service-time bucket deltas (telemetry.samples)
in, per-window service-time histograms on the 3PAR bounds out (telemetry.histograms)."""
from __future__ import annotations

HIST_METRICS = {"volume.read_service_time_hist": "read", "volume.write_service_time_hist": "write"}


def samples(kafka_options: str, lateness_s: int) -> str:
    """`telemetry.samples` (docs/contract.md); event time is the sample's own time."""
    return f"""
    CREATE TABLE samples (
        ts TIMESTAMP_LTZ(3), metric STRING, `value` DOUBLE, unit STRING, bucket INT,
        site STRING, host STRING, `array` STRING, volume STRING, host_port STRING,
        proc AS PROCTIME(),
        WATERMARK FOR ts AS ts - INTERVAL '{lateness_s}' SECOND
    ) WITH ({kafka_options}, 'format' = 'json', 'json.ignore-parse-errors' = 'false',
            'json.timestamp-format.standard' = 'ISO-8601')"""


def sinks(bootstrap: str, prefix: str = "telemetry") -> list[str]:
    common = (f"'connector' = 'kafka', 'properties.bootstrap.servers' = '{bootstrap}', 'format' = 'json', "
              "'json.timestamp-format.standard' = 'ISO-8601', 'sink.delivery-guarantee' = 'at-least-once', "
              "'properties.compression.type' = 'lz4', 'properties.linger.ms' = '20'")
    return [f"""
    CREATE TABLE histograms (
        window_start TIMESTAMP_LTZ(3), window_s INT, source STRING, site STRING, `array` STRING, volume STRING,
        host STRING, host_port STRING, direction STRING, bucket INT, ios BIGINT
    ) WITH ('topic' = '{prefix}.histograms', {common})""", f"""
    CREATE TABLE accounting (
        window_start TIMESTAMP_LTZ(3), stage STRING, site STRING, unit STRING, outcome STRING, reason STRING,
        records BIGINT
    ) WITH ('topic' = '{prefix}.accounting', {common})"""]


_CASE = " ".join(f"WHEN '{m}' THEN '{d}'" for m, d in HIST_METRICS.items())
BUCKET_SAMPLES = f"""
    CREATE TEMPORARY VIEW bucket_samples AS
    SELECT ts, proc, site, `array`, volume, CASE metric {_CASE} END AS direction, bucket, `value`,
        COALESCE(ts <= CURRENT_WATERMARK(ts), FALSE) AS late
    FROM samples
    WHERE metric IN ({", ".join(f"'{m}'" for m in HIST_METRICS)}) AND bucket BETWEEN 0 AND 31"""


def insert_histograms(window_s: int) -> str:
    """Array-reported bucket deltas, merged as they are: histograms add by bucket."""
    return f"""
    INSERT INTO histograms
    SELECT window_start, {window_s}, 'array', site, `array`, volume, '', '', direction, bucket,
        CAST(SUM(`value`) AS BIGINT)
    FROM TABLE(TUMBLE(TABLE bucket_samples, DESCRIPTOR(ts), INTERVAL '{window_s}' SECOND))
    WHERE NOT late
    GROUP BY window_start, window_end, site, `array`, volume, direction, bucket"""


# Every bucket sample in is counted out (into a histogram) or dropped as late. Late samples cannot be
# counted in event-time windows (those drop them too), so each one is reported on its own, at the
# time it arrived.
ON_TIME = """
    CREATE TEMPORARY VIEW on_time AS
    SELECT ts, site, 'in' AS outcome FROM bucket_samples WHERE NOT late
    UNION ALL
    SELECT ts, site, 'out' FROM bucket_samples WHERE NOT late"""


def insert_accounting(window_s: int) -> str:
    return f"""
    INSERT INTO accounting
    SELECT window_start, 'histograms', site, 'samples', outcome, '', COUNT(*)
    FROM TABLE(TUMBLE(TABLE on_time, DESCRIPTOR(ts), INTERVAL '{window_s}' SECOND))
    GROUP BY window_start, window_end, site, outcome"""


INSERT_LATE = """
    INSERT INTO accounting
    SELECT CAST(proc AS TIMESTAMP_LTZ(3)), 'histograms', site, 'samples', 'in', '', CAST(1 AS BIGINT)
    FROM bucket_samples WHERE late
    UNION ALL
    SELECT CAST(proc AS TIMESTAMP_LTZ(3)), 'histograms', site, 'samples', 'dropped', 'late', CAST(1 AS BIGINT)
    FROM bucket_samples WHERE late"""
