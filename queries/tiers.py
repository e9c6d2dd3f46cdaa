"""Tiers per tier: each hybrid array's (and volume's) IOPS, service time, fill and where its writes land per tier (the
dbt view sanlens_marts.tier_performance), and how full each array's Tier 0 is with its warning (the dbt view
sanlens_marts.tier0_fullness, warning at dbt's var tier0_warning_fill). The "Tiers" dashboard, its alert rule and the
report read them."""

from __future__ import annotations

from pathlib import Path

import yaml

# The Tier 0 fill an array warns at: dbt's var, which dbt_project.yml sets and explains (90 %: where auto-tiering's
# reserve for new writes runs out), read here for the views that draw the level.
TIER0_WARNING_FILL = float(
    yaml.safe_load((Path(__file__).resolve().parent.parent / "dbt" / "dbt_project.yml").read_text())["vars"][
        "tier0_warning_fill"
    ]
)
TIER_NAMES = {0: "Tier 0 (SSD)", 1: "Tier 1 (SAS)"}
# What tier_performance measures per tier, as a dashboard or chart shows it: (column, SQL over a minute's rows, unit)
MEASURES = {
    "iops": ("avg(iops)", "iops"),
    "service_ms": ("sum(service_us * iops) / nullIf(sum(iops), 0) / 1000", "ms"),
    "write_share": ("avg(write_share)", "percentunit"),  # of each minute's writes, the minutes' mean
    "fill": ("avg(fill)", "percentunit"),
}


def _tier_name() -> str:
    return f"['{TIER_NAMES[0]}', '{TIER_NAMES[1]}'][tier + 1]"


def per_tier(measure: str, bucket: str, where: str) -> str:
    """One of MEASURES per `bucket` (an expression of minute), array and tier (volume = '': the arrays as a whole) or
    volume and tier, where `where` holds: a series named "array / Tier N (media)" or "array / volume / Tier N"."""
    expression, _ = MEASURES[measure]
    return f"""
SELECT {bucket} AS time,
    concat(array, if(volume = '', '', concat(' / ', volume)), ' / ', {_tier_name()}) AS series,
    {expression} AS {measure}
FROM sanlens_marts.tier_performance
WHERE {where}
GROUP BY time, array, volume, tier
ORDER BY time, series"""


def tier0_fill(bucket: str, where: str) -> str:
    """Each hybrid array's Tier 0 fill per `bucket` (an expression of minute), the largest of the bucket's minutes."""
    return f"""
SELECT {bucket} AS time, array, max(tier0_fill) AS tier0_fill
FROM sanlens_marts.tier0_fullness
WHERE {where}
GROUP BY time, array
ORDER BY time, array"""


def tier0_warnings(where: str) -> str:
    """The hybrid arrays whose Tier 0 reached its warning level in the minutes where `where` holds: the first and
    last such minute, the fullest and the latest fill, the fullest first."""
    return f"""
SELECT site, array, minIf(minute, warning) AS first_warning, maxIf(minute, warning) AS last_warning,
    max(tier0_fill) AS peak_fill, argMax(tier0_fill, minute) AS latest_fill, any(warning_level) AS warning_level
FROM sanlens_marts.tier0_fullness
WHERE {where}
GROUP BY site, array
HAVING countIf(warning) > 0
ORDER BY peak_fill DESC, site, array"""


def tiers_by_volume(where: str) -> str:
    """Per hybrid volume (and array as a whole: volume '') and tier over the minutes where `where` holds: IOPS, read
    and write service time (I/O-weighted), where the writes land, and the latest fill (a level, not a rate: its mean
    over the range would show neither where it is nor where it peaked). A volume's fill is the share of its bytes on
    the tier, an array's the share of the tier's capacity in use."""
    return f"""
SELECT site, array, volume, {_tier_name()} AS tier_name,
    avg(t.read_iops) AS read_iops, avg(t.write_iops) AS write_iops,
    sum(t.read_service_us * t.read_iops) / nullIf(sum(t.read_iops), 0) / 1000 AS read_service_ms,
    sum(t.write_service_us * t.write_iops) / nullIf(sum(t.write_iops), 0) / 1000 AS write_service_ms,
    avg(t.write_share) AS write_share, argMax(t.fill, t.minute) AS latest_fill
FROM sanlens_marts.tier_performance AS t
WHERE {where}
GROUP BY site, array, volume, tier
ORDER BY site, array, volume, tier"""


# The hybrid arrays, those whose Tier 0 warned first, then the fullest: what the report draws, at most {top:UInt32}.
FULLEST_ARRAYS = """
SELECT array, max(tier0_fill) AS peak_fill, countIf(warning) > 0 AS warned
FROM sanlens_marts.tier0_fullness
GROUP BY array
ORDER BY warned DESC, peak_fill DESC, array
LIMIT {top:UInt32}"""
