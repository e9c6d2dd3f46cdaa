"""Record types and SQL of the histograms job: array service-time bucket deltas (telemetry.samples)
in, service-time histograms per window on the 3PAR bounds out (telemetry.histograms)."""
from __future__ import annotations

HIST_METRICS = {"volume.read_service_time_hist": "read", "volume.write_service_time_hist": "write"}


def samples(kafka_options: str) -> str:
    """`telemetry.samples` (docs/contract.md)."""
    return f"""
    CREATE TABLE samples (
        ts TIMESTAMP_LTZ(3), metric STRING, `value` DOUBLE, unit STRING, bucket INT,
        site STRING, host STRING, `array` STRING, volume STRING, host_port STRING
    ) WITH ({kafka_options}, 'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601')"""


def sinks(bootstrap: str, prefix: str = "telemetry") -> list[str]:
    return [f"""
    CREATE TABLE histograms (
        window_start TIMESTAMP_LTZ(3), window_s INT, sample_ts TIMESTAMP_LTZ(3), source STRING, site STRING,
        `array` STRING, volume STRING, host STRING, host_port STRING, direction STRING, bucket INT, ios BIGINT
    ) WITH ('connector' = 'kafka', 'topic' = '{prefix}.histograms', 'properties.bootstrap.servers' = '{bootstrap}',
            'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601',
            'sink.delivery-guarantee' = 'at-least-once', 'properties.compression.type' = 'lz4',
            'properties.linger.ms' = '20')"""]


_CASE = " ".join(f"WHEN '{m}' THEN '{d}'" for m, d in HIST_METRICS.items())


def insert_histograms(window_s: int) -> str:
    """An array's bucket deltas are already the histogram of its interval: each one is placed in the
    window its interval ends in, as it is. Histograms merge by adding counts, so windows holding
    several samples of one series are summed where they are read (sanlens.service_time_hist_10s);
    nothing waits for a watermark, and nothing arriving late or out of order can be dropped."""
    epoch_s = "CAST(TIMESTAMPDIFF(SECOND, TO_TIMESTAMP_LTZ(0, 3), ts) AS BIGINT)"
    return f"""
    INSERT INTO histograms
    SELECT TO_TIMESTAMP_LTZ(({epoch_s} - MOD({epoch_s}, {window_s})) * 1000, 3), {window_s}, ts, 'array',
        site, `array`, volume, '', '', CASE metric {_CASE} END, bucket, CAST(`value` AS BIGINT)
    FROM samples
    WHERE metric IN ({", ".join(f"'{m}'" for m in HIST_METRICS)}) AND bucket BETWEEN 0 AND 31"""
