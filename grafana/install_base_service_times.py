"""The "Install base service times" dashboard: the fleet's service-time histogram per cohort (array model and
firmware: models never pooled), the cohorts' share of I/Os in the bucket of 0.0625 to 0.125 ms (the Express Writes
study's bar) and within 0.125 ms, weighted by I/O and by array with the arrays behind each, percentiles over time,
the upgrade effect per array, and drill-down from fleet to array to volume.
Every query reads the service-time rollups, at the coarsest level the selection allows (fleet, array,
volume: clickhouse/migrations/0005, 0007, 0011), and takes percentiles from merged histograms with
serviceTimeQuantile (clickhouse/migrations/0006)."""

from __future__ import annotations

from typing import NamedTuple

from grafana_foundation_sdk.builders import barchart, common, dashboard, table, timeseries
from grafana_foundation_sdk.models.common import LegendDisplayMode, LegendPlacement
from grafana_foundation_sdk.models.dashboard import (
    DataTransformerConfig,
    DynamicConfigValue,
)

from grafana.sql_query import DATASOURCE, TABLE, TIME_SERIES, Query, cascading_variable, datasource_variable
from queries import cohorts, upgrade_effect

UID = "sanlens-install-base"
TITLE = "Install base service times"


# Every panel filters on the same selection; $__conditionalAll keeps "All" from expanding to a long list.
def selection(variables: tuple[str, ...], source: str = "\n    AND source = 'array'") -> str:
    conditions = "".join(f"\n    AND $__conditionalAll({v} IN (${{{v}:singlequote}}), ${v})" for v in variables)
    return f"direction = '${{direction}}'{source}{conditions}"


EVERY_VARIABLE = ("customer", "site", "array_model", "firmware", "array", "volume")
SELECTION = selection(EVERY_VARIABLE)


class Level(NamedTuple):
    """A level of the rollups: its table, the variables it has columns for, and the variables that must
    be All for it to hold the selection."""

    table: str
    variables: tuple[str, ...]
    all_of: tuple[str, ...]

    def where(self) -> str:
        source = "" if self is FLEET else "\n    AND source = 'array'"  # the fleet level is array-reported only
        return selection(self.variables, source)

    def holds(self) -> str:
        """1=1 when every variable it lacks is All: `$__conditionalAll(0, $v)` is 1=1 when $v is All, else 0."""
        return " AND ".join(f"$__conditionalAll(0, ${v})" for v in self.all_of)


# Coarsest first. The fleet level is read without FINAL (its days are swapped in whole).
FLEET = Level(
    "sanlens.service_time_hist_fleet_1h", ("array_model", "firmware"), ("customer", "site", "array", "volume")
)
ARRAYS = Level("sanlens.service_time_hist_array_1h FINAL", EVERY_VARIABLE[:-1], ("volume",))
VOLUMES = Level("sanlens.service_time_hist_1h FINAL", EVERY_VARIABLE, ())


def by_level(columns: str, levels: list[Level]) -> str:
    """`columns` and ios of the selection in the time range, read from the coarsest of `levels` that holds
    it: one branch of the UNION ALL has a true condition, the others a constant false that reads nothing."""
    branches = []
    for i, level in enumerate(levels):
        conditions = ([level.holds()] if level.all_of else []) + [f"NOT ({c.holds()})" for c in levels[:i]]
        when = "".join(f"\n    AND {c}" for c in conditions)
        where = f"$__timeFilter(period_start) AND {level.where()}{when}"
        branches.append(f"    SELECT {columns}, ios FROM {level.table}\n    WHERE {where}")
    return "\n    UNION ALL\n".join(branches)


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
    # the array level lists every variable but the volume, with 1/50 of the rows
    table = "sanlens.service_time_hist_1h" if name == "volume" else "sanlens.service_time_hist_array_1h"
    return cascading_variable(name, label, parents, table, "period_start", " AND source = 'array'")


# A cohort: the arrays of one model on one firmware (a hybrid model's service times are its media's, never pooled
# with all-flash ones).
COHORT = "concat(array_model, ' ', firmware) AS cohort"


def cohort_histogram(levels: list[Level]) -> barchart.Panel:
    sql = f"""
SELECT
    bucket,
    {cohorts.bucket_label("bucket")} AS service_time,
    {COHORT},
    sum(ios) / sum(sum(ios)) OVER (PARTITION BY cohort) AS share
FROM (
{by_level("bucket, array_model, firmware", levels)}
)
GROUP BY bucket, cohort
HAVING sum(ios) > 0
ORDER BY bucket, cohort"""
    to_matrix = DataTransformerConfig(
        id_val="groupingToMatrix",
        options={"columnField": "cohort", "rowField": "service_time", "valueField": "share"},
    )
    return (
        barchart.Panel()
        .id(1)
        .title("Share of I/Os per service-time bucket, by array model and firmware")
        .description(
            "The install base's service-time histogram per cohort (array model and firmware: a hybrid model is "
            "never pooled with all-flash ones): the share of I/Os in each 3PAR bucket alone, named by its range "
            "(0.0625–0.125 ms: the I/Os above 0.0625 and up to 0.125 ms, not all those within 0.125 ms), across "
            "every selected array and volume, I/O-weighted. The arrays behind each cohort and their spread: the "
            "cohort table below."
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


def cohort_table() -> table.Panel:
    shares = {
        "share_0_0625_to_0_125_ms": "in 0.0625-0.125 ms, I/O-weighted",
        "share_0_0625_to_0_125_ms_array_mean": "in 0.0625-0.125 ms, array-weighted",
        "share_within_0_125_ms": "within 0.125 ms, I/O-weighted",
        "share_within_0_125_ms_array_mean": "within 0.125 ms, array-weighted",
        "share_within_0_125_ms_array_min": "within 0.125 ms, lowest array",
        "share_within_0_125_ms_array_p25": "within 0.125 ms, first quartile",
        "share_within_0_125_ms_array_median": "within 0.125 ms, median array",
        "share_within_0_125_ms_array_p75": "within 0.125 ms, third quartile",
        "share_within_0_125_ms_array_max": "within 0.125 ms, highest array",
        "busiest_array_ios_share": "busiest array's part of the I/Os",
    }
    panel = (
        table.Panel()
        .id(6)
        .title("Cohorts: share of I/Os in 0.0625-0.125 ms and within 0.125 ms, weighted by I/O and by array")
        .description(
            "Per cohort (array model and firmware) of the selection: the arrays behind it, its I/Os, the share of "
            "I/Os in the bucket of 0.0625 to 0.125 ms (bucket 4 alone: the Express Writes study's bar, about 10% of "
            "writes before and 40% after) and the share within 0.125 ms (buckets 0 to 4, cumulative), each with the "
            "cohort's I/Os pooled (I/O-weighted: an array carrying most of them drags it) and as the mean of the "
            "arrays' own shares (array-weighted), the spread of the arrays' shares within 0.125 ms, and the busiest "
            "array. The report's cohort figures, from the same query (queries/cohorts.py)."
        )
        .datasource(DATASOURCE)
        .with_target(Query(cohorts.figures(by_level(cohorts.COLUMNS, [ARRAYS, VOLUMES])), TABLE))
        .unit("none")
        .height(8)
        .span(24)
    )
    for column, name in shares.items():
        panel = panel.override_by_name(
            column,
            [
                DynamicConfigValue(id_val="unit", value="percentunit"),
                DynamicConfigValue(id_val="displayName", value=name),
            ],
        )
    return panel


def percentiles_by_cohort() -> timeseries.Panel:
    sql = f"""
SELECT time, cohort, serviceTimeQuantile(histogram.1, histogram.2, 0.99) AS p99
FROM (
    SELECT $__timeInterval(period_start) AS time, {COHORT}, sumMap([bucket], [ios]) AS histogram
    FROM sanlens.service_time_hist_1m FINAL
    WHERE $__timeFilter(period_start) AND {SELECTION}
    GROUP BY time, cohort
)
ORDER BY time, cohort"""
    return (
        timeseries.Panel()
        .id(2)
        .title("p99 service time by array model and firmware")
        .description("p99 from the merged histogram of each cohort (array model and firmware) and interval.")
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


def top_table(panel_id: int, entity: str, columns: str, levels: list[Level], title: str) -> table.Panel:
    sql = f"""
SELECT {columns},
    serviceTimeQuantile(histogram.1, histogram.2, 0.99) AS p99_ms,
    histogram.2[indexOf(histogram.1, 4)] / arraySum(histogram.2) AS share_0_0625_to_0_125_ms,
    arraySum(arrayFilter((c, b) -> b <= 4, histogram.2, histogram.1)) / arraySum(histogram.2) AS share_within_0_125_ms,
    arraySum(histogram.2) AS ios
FROM (
    SELECT {columns}, sumMap([bucket], [ios]) AS histogram
    FROM (
{by_level(f"{columns}, bucket", levels)}
    )
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
    panel = (
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
    )
    for share in upgrade_effect.SHARES:
        panel = panel.override_by_name(
            share,
            [
                DynamicConfigValue(id_val="unit", value="percentunit"),
                DynamicConfigValue(id_val="displayName", value=upgrade_effect.FIGURES[share].label),
            ],
        )
    return panel


UPGRADE_SELECTION = selection(("customer", "site", "array_model", "array"), source="")


def upgrade_effects() -> table.Panel:
    sql = upgrade_effect.per_array(f"$__timeFilter(changed_at) AND {UPGRADE_SELECTION}")
    return (
        table.Panel()
        .id(7)
        .title("Upgrade effect per array: each figure before and after, with 95% intervals")
        .description(
            "Each firmware change of a selected array in the time range: per figure (metric) its value over the "
            "matched periods before and after the change, the change and the ratio after/before, each with its 95% "
            "bootstrap interval over the periods (sanlens_marts.upgrade_effect_by_array; the report's table, from "
            "the same query, queries/upgrade_effect.py). The two shares of the Express Writes study: "
            'share_0_0625_to_0_125_ms is bucket 4 alone (its bar: about 10% to nearly 40%, the "3X"), '
            "share_within_0_125_ms buckets 0 to 4; the _ms figures are the mean, p50 and p99 of the merged "
            "histogram and the largest minute's mean (the study's spikes under 1 ms)."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .unit("none")
        .decimals(3)
        .height(10)
        .span(24)
    )


def build(levels: tuple[Level, ...] = (FLEET, ARRAYS, VOLUMES)) -> dashboard.Dashboard:
    """The dashboard; `levels` the rollups its histogram by model and firmware reads from, coarsest first."""
    board = (
        dashboard.Dashboard(TITLE)
        .uid(UID)
        .tags(["sanlens", "service time", "install base"])
        .description(
            "Service-time histograms of the install base per array model and firmware, the cohorts' share of "
            "I/Os in 0.0625-0.125 ms and within 0.125 ms weighted by I/O and by array, percentiles, the upgrade "
            "effect per array, and drill-down from fleet to array to volume."
        )
        .time("now-24h", "now")
        .refresh("1m")
        .timezone("utc")
        .editable()
    )
    direction = (
        dashboard.CustomVariable("direction").label("Direction").values("write,read").multi(False).include_all(False)
    )
    board = board.with_variable(datasource_variable()).with_variable(direction)
    for name, label, parents in VARIABLES:
        board = board.with_variable(variable(name, label, parents))
    board = (
        board.with_row(dashboard.Row("Fleet").id(100))
        .with_panel(cohort_histogram(list(levels)))
        .with_panel(cohort_table())
        .with_panel(percentiles_by_cohort())
        .with_panel(percentiles())
        .with_row(dashboard.Row("Arrays and volumes").id(101))
        .with_panel(
            top_table(
                4,
                "array",
                "array_model, firmware, array",
                [ARRAYS, VOLUMES],
                "Arrays by p99 service time",
            )
        )
        .with_panel(top_table(5, "volume", "array, volume", [VOLUMES], "Volumes by p99 service time"))
        .with_row(dashboard.Row("Upgrades").id(102))
        .with_panel(upgrade_effects())
    )
    return board


def build_for_customers() -> dashboard.Dashboard:
    """The same dashboard for a customer's organisation (grafana/organisations.py): its histogram by model and
    firmware never reads the fleet level, which pools every customer's I/Os and which a customer's role may not read
    (a branch of a UNION ALL that reads nothing is refused all the same); the array level holds the same figures."""
    return build((ARRAYS, VOLUMES))
