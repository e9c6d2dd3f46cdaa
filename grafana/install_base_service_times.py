"""The "Install base service times" dashboard: the fleet's service-time histogram per firmware cohort
(the Express Writes figure), percentiles over time, and drill-down from fleet to array to volume.
Every query reads the service-time rollups (sanlens.service_time_hist_1h/_1m, read FINAL) and takes
percentiles from merged histograms with serviceTimeQuantile (clickhouse/migrations/0006)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import barchart, common, dashboard, table, timeseries
from grafana_foundation_sdk.models.common import LegendDisplayMode, LegendPlacement
from grafana_foundation_sdk.models.dashboard import (
    DataTransformerConfig,
    DynamicConfigValue,
)

from grafana.sql_query import DATASOURCE, TABLE, TIME_SERIES, Query, cascading_variable

UID = "sanlens-install-base"
TITLE = "Install base service times"

# Every panel filters on the same selection; $__conditionalAll keeps "All" from expanding to a long list.
SELECTION = """source = 'array'
    AND $__conditionalAll(customer IN (${customer:singlequote}), $customer)
    AND $__conditionalAll(site IN (${site:singlequote}), $site)
    AND $__conditionalAll(array_model IN (${array_model:singlequote}), $array_model)
    AND $__conditionalAll(firmware IN (${firmware:singlequote}), $firmware)
    AND $__conditionalAll(array IN (${array:singlequote}), $array)
    AND $__conditionalAll(volume IN (${volume:singlequote}), $volume)
    AND direction = '${direction}'"""

# (name, label, the variables it depends on)
VARIABLES = [
    ("customer", "Customer", []),
    ("site", "Site", ["customer"]),
    ("array_model", "Array model", ["customer", "site"]),
    ("firmware", "Firmware", ["customer", "site", "array_model"]),
    ("array", "Array", ["customer", "site", "array_model", "firmware"]),
    ("volume", "Volume", ["customer", "site", "array_model", "firmware", "array"]),
]


def variable(name: str, label: str, parents: list[str]) -> dashboard.QueryVariable:
    return cascading_variable(
        name, label, parents, "sanlens.service_time_hist_1h", "period_start", " AND source = 'array'"
    )


def cohort_histogram() -> barchart.Panel:
    sql = f"""
SELECT
    bucket,
    if(bucket = 31, '> 8388608 ms', concat('<= ', toString(serviceTimeBucketUpperMs(bucket)), ' ms')) AS service_time,
    firmware,
    sum(ios) / sum(sum(ios)) OVER (PARTITION BY firmware) AS share
FROM sanlens.service_time_hist_1h FINAL
WHERE $__timeFilter(period_start) AND {SELECTION}
GROUP BY bucket, firmware
HAVING sum(ios) > 0
ORDER BY bucket, firmware"""
    to_matrix = DataTransformerConfig(
        id_val="groupingToMatrix",
        options={"columnField": "firmware", "rowField": "service_time", "valueField": "share"},
    )
    return (
        barchart.Panel()
        .id(1)
        .title("Share of I/Os per service-time bucket, by firmware")
        .description(
            "The install base's service-time histogram per firmware cohort: the share of I/Os "
            "per 3PAR bucket (upper bound shown), across every selected array and volume."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .with_transformation(to_matrix)
        .unit("percentunit")
        .min(0)
        .height(10)
        .span(24)
        .legend(
            common.VizLegendOptions()
            .show_legend(True)
            .display_mode(LegendDisplayMode.LIST)
            .placement(LegendPlacement.BOTTOM)
        )
    )


def percentiles_by_firmware() -> timeseries.Panel:
    sql = f"""
SELECT time, firmware, serviceTimeQuantile(histogram.1, histogram.2, 0.99) AS p99
FROM (
    SELECT $__timeInterval(period_start) AS time, firmware, sumMap([bucket], [ios]) AS histogram
    FROM sanlens.service_time_hist_1m FINAL
    WHERE $__timeFilter(period_start) AND {SELECTION}
    GROUP BY time, firmware
)
ORDER BY time, firmware"""
    return (
        timeseries.Panel()
        .id(2)
        .title("p99 service time by firmware")
        .description("p99 from the merged histogram of each firmware cohort and interval.")
        .datasource(DATASOURCE)
        .with_target(Query(sql, TIME_SERIES))
        .unit("ms")
        .height(9)
        .span(12)
    )


def percentiles() -> timeseries.Panel:
    sql = f"""
SELECT time,
    serviceTimeQuantile(histogram.1, histogram.2, 0.5) AS p50,
    serviceTimeQuantile(histogram.1, histogram.2, 0.9) AS p90,
    serviceTimeQuantile(histogram.1, histogram.2, 0.99) AS p99,
    serviceTimeQuantile(histogram.1, histogram.2, 0.999) AS p99_9
FROM (
    SELECT $__timeInterval(period_start) AS time, sumMap([bucket], [ios]) AS histogram
    FROM sanlens.service_time_hist_1m FINAL
    WHERE $__timeFilter(period_start) AND {SELECTION}
    GROUP BY time
)
ORDER BY time"""
    return (
        timeseries.Panel()
        .id(3)
        .title("Service-time percentiles of the selection")
        .description("p50, p90, p99 and p99.9 of every selected volume's I/Os, from their merged histogram.")
        .datasource(DATASOURCE)
        .with_target(Query(sql, TIME_SERIES))
        .unit("ms")
        .height(9)
        .span(12)
    )


def top_table(panel_id: int, entity: str, columns: str, title: str) -> table.Panel:
    sql = f"""
SELECT {columns},
    serviceTimeQuantile(histogram.1, histogram.2, 0.99) AS p99_ms,
    arraySum(arrayFilter((c, b) -> b <= 4, histogram.2, histogram.1)) / arraySum(histogram.2) AS share_fast,
    arraySum(histogram.2) AS ios
FROM (
    SELECT {columns}, sumMap([bucket], [ios]) AS histogram
    FROM sanlens.service_time_hist_1h FINAL
    WHERE $__timeFilter(period_start) AND {SELECTION}
    GROUP BY {columns}
)
ORDER BY p99_ms DESC
LIMIT 50"""
    drill = DynamicConfigValue(
        id_val="links",
        value=[
            {
                "title": f"Drill down to this {entity}",
                "url": f"/d/{UID}?${{__url_time_range}}&${{direction:queryparam}}&var-{entity}=${{__value.raw}}",
            }
        ],
    )
    return (
        table.Panel()
        .id(panel_id)
        .title(title)
        .description(f"The {entity}s of the selection by p99 service time; click a name to drill down.")
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .unit("none")
        .height(10)
        .span(12)
        .override_by_name(entity, [drill])
        .override_by_name("p99_ms", [DynamicConfigValue(id_val="unit", value="ms")])
        .override_by_name(
            "share_fast",
            [
                DynamicConfigValue(id_val="unit", value="percentunit"),
                DynamicConfigValue(id_val="displayName", value="share <= 0.125 ms"),
            ],
        )
    )


def build() -> dashboard.Dashboard:
    board = (
        dashboard.Dashboard(TITLE)
        .uid(UID)
        .tags(["sanlens", "service time", "install base"])
        .description(
            "Service-time histograms of the install base per firmware cohort, percentiles, "
            "and drill-down from fleet to array to volume."
        )
        .time("now-24h", "now")
        .refresh("1m")
        .timezone("utc")
        .editable()
    )
    direction = (
        dashboard.CustomVariable("direction").label("Direction").values("write,read").multi(False).include_all(False)
    )
    board = board.with_variable(direction)
    for name, label, parents in VARIABLES:
        board = board.with_variable(variable(name, label, parents))
    board = (
        board.with_row(dashboard.Row("Fleet").id(100))
        .with_panel(cohort_histogram())
        .with_panel(percentiles_by_firmware())
        .with_panel(percentiles())
        .with_row(dashboard.Row("Arrays and volumes").id(101))
        .with_panel(top_table(4, "array", "array_model, firmware, array", "Arrays by p99 service time"))
        .with_panel(top_table(5, "volume", "array, volume", "Volumes by p99 service time"))
    )
    return board
