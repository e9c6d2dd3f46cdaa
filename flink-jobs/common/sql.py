"""Flink SQL expressions the jobs share."""

from __future__ import annotations


def window_start(ts: str, window_s: int) -> str:
    """The start of the `window_s`-second window holding the TIMESTAMP_LTZ `ts` (windows aligned to the epoch)."""
    epoch_s = f"CAST(TIMESTAMPDIFF(SECOND, TO_TIMESTAMP_LTZ(0, 3), {ts}) AS BIGINT)"
    return f"TO_TIMESTAMP_LTZ(({epoch_s} - MOD({epoch_s}, {window_s})) * 1000, 3)"


def samples_format(metrics, pairs: dict[str, str] | None = None, gather=()) -> str:
    """The WITH options that read `telemetry.samples` (a message per record) as a row per sample, decoding only
    the samples of `metrics`: the format `sanlens-samples` (flink-jobs/common/java/) skips the other messages by
    a scan of their bytes. The job's SQL must still filter by metric. `pairs` (metric -> another metric of the
    same record) puts the partner's value in the metric's row, column `paired` DOUBLE. `gather` (histogram
    metrics) reads a record's samples of such a metric as one row: their buckets in `buckets` ARRAY<INT>, their
    values in `counts` ARRAY<BIGINT>."""
    options = f"'format' = 'sanlens-samples', 'sanlens-samples.metrics' = '{';'.join(sorted(metrics))}'"
    if pairs:
        options += f", 'sanlens-samples.pairs' = '{';'.join(f'{m}={p}' for m, p in sorted(pairs.items()))}'"
    if gather:
        options += f", 'sanlens-samples.gather' = '{';'.join(sorted(gather))}'"
    return options
