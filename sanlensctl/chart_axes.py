"""The report's charts' shared axes."""

from __future__ import annotations

# Milliseconds on a log axis, labelled at 1, 2 and 5 of each decade from an SSD's hundredths of a ms to a saturated
# array's seconds: plotly's own labels of a log axis drop the decimals below 1 ms ("3" for 0.3 ms).
SERVICE_TICKS_MS = [m * 10.0**e for e in range(-2, 5) for m in (1, 2, 5)]


def log_ms_axis(**layout) -> dict:
    """A log axis of milliseconds with SERVICE_TICKS_MS as its ticks, each labelled with its value."""
    return {"type": "log", "tickvals": SERVICE_TICKS_MS, "ticktext": [f"{ms:g}" for ms in SERVICE_TICKS_MS], **layout}
