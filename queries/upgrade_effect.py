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


# How many arrays changed firmware in the inventory (sanlens.topology): why there is no upgrade effect, when none.
ARRAYS_CHANGED = """
SELECT countIf(versions > 1)
FROM (SELECT array, uniqExact(firmware) AS versions FROM sanlens.topology FINAL WHERE kind = 'array' GROUP BY array)"""
# Per upgrade path and direction of arrays {arrays} that changed between {a} and {b}: the periods compared each way,
# the shares (in %), the arrays whose interval of the change within 0.125 ms excludes zero, the mean and the change
# of p99 (in ms), as the demo prints them.
OF_ARRAYS_IN_SPAN = """
SELECT array_model, from_firmware, to_firmware, direction, uniqExact(array, changed_at) AS arrays,
       concat(toString(min(matched_periods)),
              if(min(matched_periods) < max(matched_periods), concat('-', toString(max(matched_periods))), ''),
              ' ', arrayStringConcat(arraySort(groupUniqArray(period)), '/'), 's') AS each_way,
       round(100 * avgIf(before, metric = 'share_0_0625_to_0_125_ms'), 1) AS pct_bucket4_before,
       round(100 * avgIf(after, metric = 'share_0_0625_to_0_125_ms'), 1) AS pct_bucket4_after,
       round(100 * avgIf(before, metric = 'share_within_0_125_ms'), 1) AS pct_within_0_125_before,
       round(100 * avgIf(after, metric = 'share_within_0_125_ms'), 1) AS pct_within_0_125_after,
       countIf(metric = 'share_within_0_125_ms' AND (delta_ci_low > 0 OR delta_ci_high < 0))
           AS arrays_ci_excl_0,
       round(avgIf(before, metric = 'mean_ms'), 3) AS mean_ms_before,
       round(avgIf(after, metric = 'mean_ms'), 3) AS mean_ms_after,
       round(avgIf(delta, metric = 'p99_ms'), 3) AS p99_ms_delta
FROM sanlens_marts.upgrade_effect_by_array
WHERE array IN {arrays:Array(String)} AND changed_at BETWEEN {a:DateTime64(3)} AND {b:DateTime64(3)}
GROUP BY array_model, from_firmware, to_firmware, direction
ORDER BY array_model, from_firmware, direction"""
