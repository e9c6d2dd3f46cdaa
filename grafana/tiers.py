"""The "Tiers" dashboard, the StoreVirtual AO study's tier and volume analysis: per hybrid array, each tier's IOPS and
service time, how full Tier 0 is against its warning level, where the writes land, and per volume and tier the same
figures. Every query is queries/tiers.py's, which the report and the "Tier 0 filling" alert rule (tier_alert_rules.py)
run too, over the dbt views sanlens_marts.tier_performance and sanlens_marts.tier0_fullness (built once with
./sanlens dbt build; views, so the latest minutes show without another run)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import common, dashboard, table, timeseries
from grafana_foundation_sdk.builders.dashboard import ThresholdsConfig
from grafana_foundation_sdk.models.common import ScaleDistribution
from grafana_foundation_sdk.models.dashboard import DynamicConfigValue, Threshold, ThresholdsMode

from grafana.sql_query import DATASOURCE, TABLE, TIME_SERIES, Query, cascading_variable, datasource_variable
from queries import tiers

UID = "sanlens-tiers"
TITLE = "Tiers"
BUCKET = "$__timeInterval(minute)"
ARRAYS = """$__timeFilter(minute)
    AND $__conditionalAll(site IN (${site:singlequote}), $site)
    AND $__conditionalAll(array IN (${array:singlequote}), $array)"""
SELECTED_VOLUMES = "$__conditionalAll(volume IN (${volume:singlequote}), $volume)"
WHOLE_ARRAYS = f"{ARRAYS}\n    AND volume = ''"
VOLUMES = f"{ARRAYS}\n    AND volume != '' AND {SELECTED_VOLUMES}"

# (name, label, the variables it depends on, the view that lists it)
VARIABLES = [
    ("site", "Site", [], "sanlens_marts.tier0_fullness"),
    ("array", "Array", ["site"], "sanlens_marts.tier0_fullness"),
    ("volume", "Volume", ["site", "array"], "sanlens_marts.tier_performance"),
]


# Service times on a log axis, as the report's tier chart has them: on a linear one Tier 0's tenths of a ms lie flat on
# the zero line beside Tier 1's tens.
LOG_10 = common.ScaleDistributionConfig().type(ScaleDistribution.LOG).log(10)


def series(panel_id: int, title: str, description: str, sql: str, unit: str, span: int = 12) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .id(panel_id)
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(Query(sql, TIME_SERIES))
        .unit(unit)
        .height(8)
        .span(span)
    )
    return panel.scale_distribution(LOG_10) if unit == "ms" else panel.min(0)  # a log axis has no 0


def fullness() -> timeseries.Panel:
    level = tiers.TIER0_WARNING_FILL
    return (
        series(
            1,
            "Tier 0 fullness (red: the warning level)",
            f"Each selected hybrid array's Tier 0 (SSD) in use, of its capacity (3PAR's capacity per device type). At "
            f"{level:.0%} (dbt's tier0_warning_fill) auto-tiering's reserve for new writes is being eaten: new writes "
            "begin to land on Tier 1 and the alert rule 'Tier 0 filling' raises a ticket for the array.",
            tiers.tier0_fill(BUCKET, ARRAYS),
            "percentunit",
        )
        .max(1)
        .display_name("${__field.labels.array}")
        .thresholds(
            ThresholdsConfig()
            .mode(ThresholdsMode.ABSOLUTE)
            .steps([Threshold(value=None, color="green"), Threshold(value=level, color="red")])
        )
        .override_by_name("tier0_fill", [DynamicConfigValue(id_val="custom.thresholdsStyle", value={"mode": "line"})])
    )


def per_tier(panel_id: int, measure: str, title: str, description: str, where: str, span: int = 12):
    _, unit = tiers.MEASURES[measure]
    return series(panel_id, title, description, tiers.per_tier(measure, BUCKET, where), unit, span).display_name(
        "${__field.labels.series}"
    )


def warnings() -> table.Panel:
    return (
        table.Panel()
        .id(5)
        .title("Arrays whose Tier 0 reached the warning level")
        .description(
            "The selected hybrid arrays whose Tier 0 fill reached the warning level in the range: the first and last "
            "such minute, the fullest and the latest fill, the fullest first. Empty: no array came near full."
        )
        .datasource(DATASOURCE)
        .with_target(Query(tiers.tier0_warnings(ARRAYS), TABLE))
        .unit("percentunit")
        .override_by_regexp(".*_warning", [DynamicConfigValue(id_val="unit", value="dateTimeAsIso")])
        .height(6)
        .span(24)
    )


# A volume's fill and an array's differ: what the column's name says on both rows.
LATEST_FILL = "latest fill (volume: share of its bytes on the tier; array: of the tier's capacity)"


def by_volume() -> table.Panel:
    return (
        table.Panel()
        .id(6)
        .title("Tiers per volume")
        .description(
            "Per selected hybrid volume (an empty volume: the array as a whole) and tier: over the range its read "
            "and write IOPS, their service times (I/O-weighted) and the tier's share of the writes (where they "
            "land); and its latest fill: on a volume's rows the share of the volume's bytes on the tier, on an "
            "array's rows (volume empty) the share of the tier's capacity in use."
        )
        .datasource(DATASOURCE)
        .with_target(Query(tiers.tiers_by_volume(f"{ARRAYS}\n    AND {SELECTED_VOLUMES}")))
        .unit("short")
        .override_by_regexp(".*_ms", [DynamicConfigValue(id_val="unit", value="ms")])
        .override_by_regexp(".*_iops", [DynamicConfigValue(id_val="unit", value="iops")])
        .override_by_regexp("write_share|latest_fill", [DynamicConfigValue(id_val="unit", value="percentunit")])
        .override_by_name("latest_fill", [DynamicConfigValue(id_val="displayName", value=LATEST_FILL)])
        .height(10)
        .span(24)
    )


def build() -> dashboard.Dashboard:
    board = (
        dashboard.Dashboard(TITLE)
        .uid(UID)
        .tags(["sanlens", "tiering", "hybrid"])
        .description(
            "Per hybrid array and volume, each tier's IOPS, service time and fill, Tier 0's fullness against its "
            "warning level, and where the writes land."
        )
        .time("now-6h", "now")
        .refresh("1m")
        .timezone("utc")
        .editable()
    ).with_variable(datasource_variable())
    for name, label, parents, view in VARIABLES:
        board = board.with_variable(cascading_variable(name, label, parents, view, "minute"))
    return (
        board.with_row(dashboard.Row("Arrays").id(100))
        .with_panel(fullness())
        .with_panel(
            per_tier(
                2,
                "write_share",
                "Where the writes land: each tier's share of the array's writes",
                "Of each selected array's writes, the share each tier took: those to pages on the tier and, on a "
                "volume auto-tiering acts on, new writes, which go to Tier 0 while its reserve has room and spill "
                "to Tier 1 as Tier 0 fills.",
                WHOLE_ARRAYS,
            )
        )
        .with_panel(
            per_tier(
                3,
                "iops",
                "IOPS per tier",
                "Each selected array's IOPS per tier, its volumes summed: how much of the load Tier 0's SSDs carry.",
                WHOLE_ARRAYS,
            )
        )
        .with_panel(
            per_tier(
                4,
                "service_ms",
                "Service time per tier",
                "Each selected array's mean service time per tier, I/O-weighted over its volumes and both directions: "
                "Tier 0 SSD well under a millisecond, Tier 1 SAS tens of them.",
                WHOLE_ARRAYS,
            )
        )
        .with_panel(warnings())
        .with_row(dashboard.Row("Volumes").id(101))
        .with_panel(
            per_tier(
                7,
                "iops",
                "IOPS per volume and tier",
                "Each selected hybrid volume's IOPS per tier.",
                VOLUMES,
            )
        )
        .with_panel(
            per_tier(
                8,
                "service_ms",
                "Service time per volume and tier",
                "Each selected hybrid volume's mean service time per tier (I/O-weighted over both directions).",
                VOLUMES,
            )
        )
        .with_panel(by_volume())
    )
