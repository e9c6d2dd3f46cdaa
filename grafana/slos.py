"""The "SLOs" dashboard, for storage admins and whoever the latency SLOs page: per SLO of slo/slos.yaml and entity,
the attainment and the error budget left over the dashboard's range, the budget left as the range goes on, the
burn rates over the fast page rule's windows, and the history of the alerts (a table of their episodes, and the
episodes as annotations). The queries read the burn_rates job's tables directly (clickhouse/migrations/0013,
flink-jobs/burn_rates/README.md): sanlens.slo_windows (FINAL) for the attainment, the budget and the burn rates
(and without FINAL for the variables), sanlens.slo_alerts (FINAL) for the alerts; no dbt run is needed. The
attainment and budget left per entity are queries/budget.py's query, which `./sanlens slo` and the report
run over the SLO's period; the report reads the alert episodes with the same SQL as this dashboard (`episodes`)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import common, dashboard, table, timeseries
from grafana_foundation_sdk.models.common import (
    GraphTresholdsStyleMode,
    LegendDisplayMode,
    LegendPlacement,
    ScaleDistribution,
    SortOrder,
    TooltipDisplayMode,
)
from grafana_foundation_sdk.models.dashboard import DynamicConfigValue, Threshold, ThresholdsMode

from grafana.sql_query import DATASOURCE, TABLE, TIME_SERIES, Query, cascading_variable, datasource_variable
from grafana.where_the_latency_is import in_range
from queries.budget import budget_left, burn_rate, per_entity
from queries.slo_alerts import episodes
from slo import definitions

UID = "sanlens-slos"
TITLE = "SLOs"

# The default SLOs' alert rules: the burn-rate panel shows the windows of the fastest (the 1 h page) and its rate.
RULES = definitions.load(definitions.DEFAULT_FILE)
FAST = min(RULES.alerts, key=lambda a: a.long_s)
WINDOW_NAMES = {seconds: name for name, seconds in definitions.WINDOWS.items()}
BURN_WINDOWS = {WINDOW_NAMES[FAST.short_s]: FAST.short_s, WINDOW_NAMES[FAST.long_s]: FAST.long_s}
FAST_RATE = FAST.burn_rate(RULES.period_days)

SELECTION = """$__conditionalAll(slo IN (${slo:singlequote}), $slo)
    AND $__conditionalAll(site IN (${site:singlequote}), $site)
    AND $__conditionalAll(entity IN (${entity:singlequote}), $entity)"""


def selected(depth: int) -> str:
    """SELECTION in a query nested `depth` levels deep."""
    return SELECTION.replace("\n", "\n" + "    " * depth)


# (name, label, the variables it depends on)
VARIABLES = [("slo", "SLO", []), ("site", "Site", ["slo"]), ("entity", "Entity", ["slo", "site"])]


def variable(name: str, label: str, parents: list[str]) -> dashboard.QueryVariable:
    # Without FINAL: a window delivered twice lists the same names.
    return cascading_variable(name, label, parents, "sanlens.slo_windows", "window_start")


# The episodes of the selection; their rows are read whole, so that one that began before the range starts where
# it began (sanlens.slo_alerts holds a row a minute while an alert fires: a small table).
EPISODES = episodes(selected(2))
IN_RANGE = in_range("resolved_at")  # started in the range, or before it and not resolved before its start


def attainment() -> table.Panel:
    sql = f"""{per_entity("$__timeFilter(window_start)", SELECTION)}
ORDER BY budget_left, slo, entity
LIMIT 200"""
    drill = DynamicConfigValue(
        id_val="links",
        value=[
            {
                "title": "Drill down to this entity",
                "url": f"/d/{UID}?${{__url_time_range}}&var-slo=${{__data.fields.slo}}"
                "&var-site=${__data.fields.site}&var-entity=${__value.raw}",
            }
        ],
    )
    return (
        table.Panel()
        .id(1)
        .title("Attainment and error budget left")
        .description(
            "Per SLO and entity (a path host:disk, a host or a volume array:volume) over the dashboard's range: the "
            "I/Os judged, the objective, the attainment (the share of I/Os within the SLO's threshold) and the "
            "share of the range's error budget (1 - objective of its I/Os) left unspent, least first; red where "
            "the range overspent it. The SLO's own period (slo/slos.yaml) is `./sanlens slo`'s."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .unit("none")
        .height(9)
        .span(24)
        .override_by_name("entity", [drill])
        .override_by_name("ios", [DynamicConfigValue(id_val="unit", value="short")])
        .override_by_regexp(
            "objective|attainment",
            [DynamicConfigValue(id_val="unit", value="percentunit"), DynamicConfigValue(id_val="decimals", value=3)],
        )
        .override_by_name(
            "budget_left",
            [
                DynamicConfigValue(id_val="unit", value="percentunit"),
                DynamicConfigValue(id_val="decimals", value=1),
                DynamicConfigValue(id_val="thresholds", value=thresholds("red", 0, "green").build().to_json()),
                DynamicConfigValue(id_val="custom.cellOptions", value={"type": "color-background"}),
            ],
        )
    )


def thresholds(below: str, at: float, above: str) -> dashboard.ThresholdsConfig:
    """Values under `at` in the colour `below`, from `at` on in `above`."""
    return (
        dashboard.ThresholdsConfig()
        .mode(ThresholdsMode.ABSOLUTE)
        .steps([Threshold(value=None, color=below), Threshold(value=at, color=above)])
    )


def lines(
    panel_id: int, title: str, description: str, sql: str, steps: dashboard.ThresholdsConfig, order: SortOrder
) -> timeseries.Panel:
    """A time series panel with a line per SLO and entity (the query's `series`) and its thresholds (`steps`) as
    dashed lines; the tooltip lists the lines in `order`."""
    return (
        timeseries.Panel()
        .id(panel_id)
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(Query(sql, TIME_SERIES))
        .thresholds(steps)
        .thresholds_style(common.GraphThresholdsStyleConfig().mode(GraphTresholdsStyleMode.DASHED))
        .tooltip(common.VizTooltipOptions().mode(TooltipDisplayMode.MULTI).sort(order))
        .legend(
            common.VizLegendOptions()
            .show_legend(True)
            .display_mode(LegendDisplayMode.TABLE)
            .placement(LegendPlacement.RIGHT)
        )
        .height(9)
        .span(24)
    )


def budget_over_time() -> timeseries.Panel:
    cumulative = {c: f"sum({c}) OVER cumulative" for c in ("good", "total")}
    sql = f"""
SELECT time, series,
    {budget_left(cumulative["good"], cumulative["total"], "objective")} AS budget_left
FROM (
    SELECT $__timeInterval(window_start) AS time, concat(slo, ' on ', entity) AS series,
        sum(w.good) AS good, sum(w.total) AS total, any(w.objective) AS objective
    FROM sanlens.slo_windows AS w FINAL
    WHERE $__timeFilter(window_start) AND {selected(1)}
    GROUP BY time, series
    HAVING total > 0
)
WINDOW cumulative AS (PARTITION BY series ORDER BY time ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
ORDER BY time, series"""
    return (
        lines(
            2,
            "Error budget left over the range",
            "Per SLO and entity, the share of the error budget left by the I/Os from the start of the dashboard's "
            "range to each point (cumulative): it falls while the entity's I/Os are slower than the objective "
            "allows, and crosses 0 where the range has spent its whole budget.",
            sql,
            thresholds("red", 0, "green"),
            SortOrder.ASCENDING,
        )
        .unit("percentunit")
        .display_name("${__field.labels.series}")
    )


def burn_rates() -> timeseries.Panel:
    # Sums per minute, then each minute's trailing windows (RANGE over epoch seconds); the rows read start the
    # longest window before the range, so that its first minutes have whole windows too.
    lookback = max(BURN_WINDOWS.values())
    rates = ",\n        ".join(
        f"{burn_rate(f'sum(good) OVER w_{w}', f'sum(total) OVER w_{w}', 'objective')} AS burn_{w}" for w in BURN_WINDOWS
    )
    frames = ",\n    ".join(
        f"w_{w} AS (PARTITION BY slo, entity ORDER BY toUInt32(minute)\n"
        f"        RANGE BETWEEN {seconds - 60} PRECEDING AND CURRENT ROW)"
        for w, seconds in BURN_WINDOWS.items()
    )
    peaks = ", ".join(f"max(burn_{w}) AS burn_{w}" for w in BURN_WINDOWS)
    sql = f"""
SELECT $__timeInterval(minute) AS time, series, {peaks}
FROM (
    SELECT minute, concat(slo, ' on ', entity) AS series,
        {rates}
    FROM (
        SELECT slo, entity, toStartOfMinute(window_start) AS minute,
            sum(w.good) AS good, sum(w.total) AS total, any(w.objective) AS objective
        FROM sanlens.slo_windows AS w FINAL
        WHERE window_start >= $__fromTime - {lookback} AND window_start <= $__toTime
            AND {selected(2)}
        GROUP BY slo, entity, minute
        HAVING total > 0
    )
    WINDOW {frames}
)
WHERE $__timeFilter(minute)
GROUP BY time, series
ORDER BY time, series"""
    names = " and ".join(BURN_WINDOWS)
    return (
        lines(
            3,
            f"Burn rates over {names}",
            f"Per SLO and entity, the burn rate over the {names} up to each minute (the highest in each point's "
            "interval): the error ratio of those minutes' I/Os over the error budget (1 - objective); 1 spends the "
            f"budget in exactly the SLO's period. The dashed line is the page rule's {FAST_RATE:g} ({FAST.budget:.0%} "
            f"of a {RULES.period_days:g}-day budget in {WINDOW_NAMES[FAST.long_s]}, slo/slos.yaml): it pages while "
            "both windows are above it.",
            sql,
            thresholds("green", FAST_RATE, "red"),
            SortOrder.DESCENDING,
        )
        .unit("none")
        .decimals(1)
        .display_name("${__field.labels.series} ${__field.name}")
        .scale_distribution(common.ScaleDistributionConfig().type(ScaleDistribution.SYMLOG).log(10).linear_threshold(1))
    )


def alert_history() -> table.Panel:
    peaks = ", ".join(f"peak_burn_{w}" for w in definitions.WINDOWS)
    sql = f"""
SELECT slo, entity, site, severity,
    if(resolved_at IS NULL, 'firing', 'resolved') AS state,
    started_at, resolved_at,
    dateDiff('second', started_at, coalesce(resolved_at, last_at)) AS duration_s,
    {peaks},
    budget_left
FROM {EPISODES}
WHERE {IN_RANGE}
ORDER BY resolved_at IS NULL DESC, started_at DESC, slo, entity, severity
LIMIT 200"""
    return (
        table.Panel()
        .id(4)
        .title("Alert history")
        .description(
            "The SLO alerts of the selection that fired in the range or were still firing at its start, firing "
            "ones first, then the most recent: from the first minute a severity fired on an entity (started_at) to "
            "when it resolved, the highest burn rate of each window while it fired, and the share of the SLO "
            "period's error budget left at its last minute. Pages and tickets are also the dashboard's annotations."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .unit("none")
        .decimals(1)
        .height(9)
        .span(24)
        .override_by_name("duration_s", [DynamicConfigValue(id_val="unit", value="s")])
        .override_by_name(
            "budget_left",
            [DynamicConfigValue(id_val="unit", value="percentunit"), DynamicConfigValue(id_val="decimals", value=1)],
        )
    )


def alert_annotations(severity: str, color: str) -> dashboard.AnnotationQuery:
    # One still firing lasts until now, like an open incident on the latency dashboard.
    peaks = ", ', ',\n        ".join(f"'{w} ', toString(round(peak_burn_{w}, 1))" for w in definitions.WINDOWS)
    sql = f"""
SELECT started_at AS time,
    coalesce(resolved_at, now64(3, 'UTC')) AS timeEnd,
    concat(slo, ' {severity} on ', entity, if(resolved_at IS NULL, ' (firing)', ''), ', peak burn rates ',
        {peaks}) AS text
FROM {EPISODES}
WHERE severity = '{severity}' AND {IN_RANGE}
ORDER BY time"""
    return (
        dashboard.AnnotationQuery()
        .name(f"SLO {severity}s")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color(color)
        .target(Query(sql, TABLE))
    )


def build() -> dashboard.Dashboard:
    board = (
        dashboard.Dashboard(TITLE)
        .uid(UID)
        .tags(["sanlens", "latency", "slo", "alerts"])
        .description(
            "Latency SLOs (slo/slos.yaml): attainment and error budget left per SLO and entity, the budget over "
            "the range, burn rates, and the history of their pages and tickets."
        )
        .time("now-24h", "now")
        .refresh("1m")
        .timezone("utc")
        .editable()
        .annotation(alert_annotations("page", "red"))
        .annotation(alert_annotations("ticket", "orange"))
    ).with_variable(datasource_variable())
    for name, label, parents in VARIABLES:
        board = board.with_variable(variable(name, label, parents))
    return (
        board.with_row(dashboard.Row("Attainment and budget").id(100))
        .with_panel(attainment())
        .with_panel(budget_over_time())
        .with_row(dashboard.Row("Burn rates and alerts").id(101))
        .with_panel(burn_rates())
        .with_panel(alert_history())
    )
