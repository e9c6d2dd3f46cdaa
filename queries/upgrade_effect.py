"""The upgrade effect's figures (sanlens_marts.upgrade_effect_by_array, upgrade_effect): their names as the marts have
them, what each is called and its unit, and the query of the per-array table that the report and the install-base
dashboard both show. The Express Writes study reads two shares: the share of I/Os in the bucket of 0.0625 to 0.125 ms
(bucket 4 alone, its bar: "nearly 40 % of writes at .12 ms post upgrade compared to about 10 % pre") and, cumulative,
the share within 0.125 ms (buckets 0 to 4); each has its own name, and the ratio after/before (the study's "3X")."""

from __future__ import annotations

from typing import NamedTuple


class Figure(NamedTuple):
    label: str
    unit: str  # a Grafana unit: percentunit or ms


FIGURES = {
    "share_0_0625_to_0_125_ms": Figure("share of I/Os in 0.0625-0.125 ms (bucket 4)", "percentunit"),
    "share_within_0_125_ms": Figure("share of I/Os within 0.125 ms (buckets 0-4)", "percentunit"),
    "mean_ms": Figure("mean service time", "ms"),
    "p50_ms": Figure("p50 service time", "ms"),
    "p99_ms": Figure("p99 service time", "ms"),
    "peak_minute_mean_ms": Figure("largest minute's mean service time", "ms"),
}
SHARES = [name for name, figure in FIGURES.items() if figure.unit == "percentunit"]
FIGURE_ORDER = f"indexOf({list(FIGURES)}, metric)"
PER_ARRAY_COLUMNS = (
    "array, array_model, from_firmware, to_firmware, changed_at, direction, metric, period, matched_periods, "
    "before, before_ci_low, before_ci_high, after, after_ci_low, after_ci_high, delta, delta_ci_low, delta_ci_high, "
    "ratio, ratio_ci_low, ratio_ci_high"
)


def per_array(where: str = "1") -> str:
    """Each upgraded array's figures where `where` holds: writes first, by array, change, then figure."""
    return f"""
SELECT {PER_ARRAY_COLUMNS}
FROM sanlens_marts.upgrade_effect_by_array
WHERE {where}
ORDER BY direction DESC, array, changed_at, {FIGURE_ORDER}"""


def per_path() -> str:
    """Each upgrade path's figures across its arrays: writes first, then by model, path and figure."""
    return f"""
SELECT array_model, from_firmware, to_firmware, direction, metric, arrays,
    mean_before, mean_before_ci_low, mean_before_ci_high, mean_after, mean_after_ci_low, mean_after_ci_high,
    mean_delta, ci_low, ci_high, ratio, ratio_ci_low, ratio_ci_high
FROM sanlens_marts.upgrade_effect
ORDER BY direction DESC, array_model, from_firmware, to_firmware, {FIGURE_ORDER}"""
