"""Flink SQL expressions the jobs share."""

from __future__ import annotations


def window_start(ts: str, window_s: int) -> str:
    """The start of the `window_s`-second window holding the TIMESTAMP_LTZ `ts` (windows aligned to the epoch)."""
    epoch_s = f"CAST(TIMESTAMPDIFF(SECOND, TO_TIMESTAMP_LTZ(0, 3), {ts}) AS BIGINT)"
    return f"TO_TIMESTAMP_LTZ(({epoch_s} - MOD({epoch_s}, {window_s})) * 1000, 3)"
