"""The "Where the latency is" dashboard, for storage admins: the latency a host measured split into the host's
queueing, the fabric, the array and what none of them explains, the switch ports that stall, the incidents
the breakdown job found, the tier migrations of the hybrid volumes and what they did, and drill-down from site
to host to disk. The queries read the breakdown job's tables, sanlens.path_latency (FINAL) and the view
sanlens.incidents (clickhouse/migrations/0008, 0009, 0017; flink-jobs/breakdown/README.md says what the parts and the
incidents mean), the volumes' Tier 0 and Tier 1 bytes in sanlens.metrics, the tiering job's
sanlens.tier_episodes (FINAL, migration 0012) and the dbt view sanlens_marts.tier_migration_effects; the hosts'
health beside their latency (% Processor Time, transactions/s, HBA queue depths): grafana/host_health.py; the
latency by transport and multipath policy: grafana/by_transport.py."""

from __future__ import annotations

from grafana_foundation_sdk.builders import common, dashboard, table, timeseries
from grafana_foundation_sdk.models.common import (
    LegendDisplayMode,
    LegendPlacement,
    SortOrder,
    StackingMode,
    TooltipDisplayMode,
)
from grafana_foundation_sdk.models.dashboard import DynamicConfigValue

from grafana import by_transport, host_health
from grafana.sql_query import DATASOURCE, TABLE, TIME_SERIES, Query, cascading_variable, datasource_variable
from queries.tier_migrations import EFFECT_FIGURES, tier0_shares

UID = "sanlens-latency-breakdown"
TITLE = "Where the latency is"

# The parts of what the host measured, bottom of the stack first: they add up to host_us.
PARTS = {"host_queueing_us": "orange", "fabric_us": "purple", "array_us": "blue", "unexplained_us": "gray"}
PORT_STALL = 0.01  # the breakdown job's --port-stall: the share of time at zero credit from which a port stalls

SITE = "$__conditionalAll(site IN (${site:singlequote}), $site)"
SELECTION = f"""{SITE}
    AND $__conditionalAll(host IN (${{host:singlequote}}), $host)
    AND $__conditionalAll(disk IN (${{disk:singlequote}}), $disk)"""
# Incidents per component and episode (the view sanlens.incidents merges the job's incidents along each path).
INCIDENTS = f"""(
    SELECT contributor, component, site, started_at, ended_at, excess_us, severity,
        arrayStringConcat(hosts, ', ') AS hosts, arrayStringConcat(volumes, ', ') AS volumes,
        arrayStringConcat(arrays, ', ') AS arrays
    FROM sanlens.incidents
    WHERE {SITE}
)"""


def in_range(end: str) -> str:
    """Whether something from started_at to `end` (NULL while it lasts) belongs to the range: it started in it,
    or started before and was still going at its start."""
    return f"""($__timeFilter(started_at)
    OR (started_at < $__fromTime AND ({end} IS NULL OR {end} >= $__fromTime)))"""


def reached(columns: str) -> str:
    """`columns` (some of site, host, array, volume) are among those of the selection's paths in the range: the
    tiering tables and the volumes' metrics have no host or disk of their own."""
    selection = SELECTION.replace("\n", "\n    ")
    return f"""({columns}) IN (
        SELECT {columns} FROM sanlens.path_latency FINAL
        WHERE $__timeFilter(window_start) AND {selection}
    )"""


# What tier_migration_effects measures before and after each episode, with the unit of each.
EFFECTS = {"array_us": "µs", "host_us": "µs", "batch_requests": "reqps", "file_us": "µs"}

# (name, label, the variables it depends on)
VARIABLES = [("site", "Site", []), ("host", "Host", ["site"]), ("disk", "Disk", ["site", "host"])]


def variable(name: str, label: str, parents: list[str]) -> dashboard.QueryVariable:
    return cascading_variable(name, label, parents, "sanlens.path_latency FINAL", "window_start", "")


def io_weighted(column: str) -> str:
    """The column per I/O over a group's rows of sanlens.path_latency AS p (qualified: the result takes its name)."""
    return f"sum(p.{column} * p.ios) / sum(p.ios) AS {column}"


def breakdown() -> timeseries.Panel:
    parts = ",\n    ".join(io_weighted(part) for part in PARTS)
    sql = f"""
SELECT $__timeInterval(window_start) AS time,
    {parts}
FROM sanlens.path_latency AS p FINAL
WHERE $__timeFilter(window_start) AND {SELECTION}
GROUP BY time
HAVING sum(p.ios) > 0
ORDER BY time"""
    panel = (
        timeseries.Panel()
        .id(1)
        .title("Where the selection's latency goes")
        .description(
            "The latency the selected hosts' disks measured, split into the host's queueing, the fabric, the array "
            "and what none of them explains, per I/O (I/O-weighted over paths and windows): the top of the stack "
            "is what the hosts measured."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TIME_SERIES))
        .unit("µs")
        .stacking(common.StackingConfig().mode(StackingMode.NORMAL))
        .fill_opacity(60)
        .line_width(1)
        .tooltip(common.VizTooltipOptions().mode(TooltipDisplayMode.MULTI).sort(SortOrder.NONE))
        .legend(
            common.VizLegendOptions()
            .show_legend(True)
            .display_mode(LegendDisplayMode.LIST)
            .placement(LegendPlacement.BOTTOM)
        )
        .height(10)
        .span(24)
    )
    for part, color in PARTS.items():
        panel = panel.override_by_name(
            part, [DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": color})]
        )
    return panel


def fabric() -> table.Panel:
    # path_latency keeps the busier of a path's two ports (port_stall) and their discards together: a port's own
    # share in a window is at most the least any path through it shows, so a port whose neighbour stalls is not
    # listed as long as one of its paths avoids that neighbour.
    sql = f"""
SELECT site, switch, port,
    arrayStringConcat(arraySort(groupUniqArrayArray(paths)), ', ') AS paths,
    max(stall) AS max_stall,
    max(discards) AS max_discards,
    sum(fabric_us_total) / sum(ios_total) AS fabric_us
FROM (
    SELECT window_start, site, switch, port,
        min(port_stall) AS stall,
        min(port_discards) AS discards,
        groupUniqArray(concat(host, ':', disk)) AS paths,
        sum(fabric_us * ios) AS fabric_us_total,
        sum(ios) AS ios_total
    FROM sanlens.path_latency FINAL
    ARRAY JOIN [host_switch_port, array_switch_port] AS port
    WHERE $__timeFilter(window_start) AND {SITE}
    GROUP BY window_start, site, switch, port
    HAVING stall >= {PORT_STALL} OR discards > 0
)
GROUP BY site, switch, port
ORDER BY max_stall DESC, max_discards DESC
LIMIT 50"""
    return (
        table.Panel()
        .id(2)
        .title("Switch ports with credit stalls or discards")
        .description(
            f"The selected sites' switch ports that spent at least {PORT_STALL:.0%} of a window at zero transmit "
            "credit or discarded frames, the paths (host:disk) through them, and the fabric part of those paths' "
            "latency while the port did (I/O-weighted)."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .unit("none")
        .height(8)
        .span(24)
        .override_by_name(
            "max_stall",
            [
                DynamicConfigValue(id_val="unit", value="percentunit"),
                DynamicConfigValue(id_val="displayName", value="max share at zero credit"),
            ],
        )
        .override_by_name(
            "max_discards",
            [
                DynamicConfigValue(id_val="unit", value="cps"),
                DynamicConfigValue(id_val="displayName", value="max class-3 discards"),
            ],
        )
        .override_by_name("fabric_us", [DynamicConfigValue(id_val="unit", value="µs")])
    )


def incidents() -> table.Panel:
    sql = f"""
SELECT contributor, component, site, started_at,
    ifNull(formatDateTime(ended_at, '%F %T'), 'open') AS ended,
    excess_us, severity, hosts, volumes, arrays
FROM {INCIDENTS}
WHERE {in_range("ended_at")}
ORDER BY ended_at IS NULL DESC, started_at DESC
LIMIT 100"""
    return (
        table.Panel()
        .id(3)
        .title("Open and recent incidents")
        .description(
            "Runs of windows in which one contributor's part on one component stayed above the paths' own "
            "baselines, open ones first, then the most recent: excess_us is the latency it added per I/O; the "
            "hosts, volumes (array:volume) and arrays it touched. Severity, after Brocade MAPS FPI, is how much it "
            "hurt, not how large it was: severe when frames were lost (class-3 discards on a switch port of its "
            "paths) or a path gained 80 ms or more per I/O, otherwise warning."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .unit("none")
        .height(9)
        .span(24)
        .override_by_name("excess_us", [DynamicConfigValue(id_val="unit", value="µs")])
    )


def hosts() -> table.Panel:
    parts = ",\n        ".join(io_weighted(column) for column in ["host_us", *PARTS])
    names = ", ".join(f"'{part}'" for part in PARTS)
    sql = f"""
WITH [{", ".join(PARTS)}] AS parts
SELECT site, host,
    [{names}][indexOf(parts, arrayMax(parts))] AS largest_part,
    arrayMax(parts) AS largest_us,
    host_us, {", ".join(PARTS)}, ios
FROM (
    SELECT site, host,
        {parts},
        sum(p.ios) AS ios
    FROM sanlens.path_latency AS p FINAL
    WHERE $__timeFilter(window_start) AND {SELECTION}
    GROUP BY site, host
    HAVING ios > 0
)
ORDER BY largest_us DESC
LIMIT 50"""
    drill = DynamicConfigValue(
        id_val="links",
        value=[
            {
                "title": "Drill down to this host",
                "url": f"/d/{UID}?${{__url_time_range}}&var-site=${{__data.fields.site}}&var-host=${{__value.raw}}",
            }
        ],
    )
    return (
        table.Panel()
        .id(4)
        .title("Hosts by their largest part")
        .description(
            "The selected hosts, the part of their latency that is largest (I/O-weighted over the range) and all "
            "the parts; click a host to drill down to it."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .unit("µs")
        .height(9)
        .span(24)
        .override_by_name("host", [drill])
        .override_by_name("ios", [DynamicConfigValue(id_val="unit", value="short")])
    )


def incident_annotations() -> dashboard.AnnotationQuery:
    # An open incident lasts until now; Grafana draws the region from time to timeEnd.
    sql = f"""
SELECT started_at AS time,
    coalesce(ended_at, now64(3, 'UTC')) AS timeEnd,
    concat(contributor, ' on ', component, ': +', toString(round(excess_us)), ' µs') AS text
FROM {INCIDENTS}
WHERE {in_range("ended_at")}
ORDER BY time"""
    # The SDK's annotation target is the --grafana-- data source's; the plugin's raw-SQL query takes its place.
    return (
        dashboard.AnnotationQuery()
        .name("Latency incidents")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color("red")
        .target(Query(sql, TABLE))
    )


def tier_shares() -> timeseries.Panel:
    sql = tier0_shares("$__timeInterval(ts)", f"$__timeFilter(ts)\n    AND {reached('array, volume')}")
    return (
        timeseries.Panel()
        .id(5)
        .title("Tier 0 share of the hybrid volumes")
        .description(
            "The share of each hybrid volume's capacity in Tier 0 (SSD), for the volumes the selected hosts' disks "
            'are on; the tier migrations the tiering job found are the dashboard\'s "Tier migrations" annotations, '
            "from the last window at the old share to the one it settled at."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TIME_SERIES))
        .unit("percentunit")
        .min(0)
        .display_name("${__field.labels.array_volume}")
        .legend(
            common.VizLegendOptions()
            .show_legend(True)
            .display_mode(LegendDisplayMode.LIST)
            .placement(LegendPlacement.BOTTOM)
        )
        .height(9)
        .span(24)
    )


def tier_effects() -> table.Panel:
    figures = ",\n    ".join(", ".join(f"{measure}_{figure}" for figure in EFFECT_FIGURES) for measure in EFFECTS)
    sql = f"""
SELECT site, host, array, volume, direction, started_at, settled_at, before_period,
    tier0_share_before, tier0_share_after,
    {figures},
    time_to_effect_s
FROM sanlens_marts.tier_migration_effects
WHERE {in_range("settled_at")}
    AND {reached("site, host, array, volume")}
ORDER BY started_at DESC, array, volume, host
LIMIT 100"""
    panel = (
        table.Panel()
        .id(6)
        .title("What the tier migrations did")
        .description(
            "Per settled tier migration and host with a path to the volume: the means over matched periods before "
            "(before_period) and after it settled of the volume's array service time, the host's latency on its "
            "paths to it, SQL Server's batch requests/s and the DMV file latency of its database files there, "
            "with the 95% bootstrap interval of each change (after - before: change_ci_low to change_ci_high), the "
            "1-minute blocks it rests on (blocks: whole minutes of the shorter period) and low_confidence true when "
            "fewer than 10; "
            "the Tier 0 share before and after, and the time from the start until the host's latency was within "
            "10% of where it settled. Method: flink-jobs/tiering/README.md."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .unit("none")
        .height(9)
        .span(24)
        .override_by_regexp("tier0_share_.*", [DynamicConfigValue(id_val="unit", value="percentunit")])
        .override_by_name("time_to_effect_s", [DynamicConfigValue(id_val="unit", value="s")])
    )
    for measure, unit in EFFECTS.items():
        panel = panel.override_by_regexp(f"{measure}_.*", [DynamicConfigValue(id_val="unit", value=unit)])
    # after the measures' units, which their names match too
    return panel.override_by_regexp(".*_(blocks|low_confidence)", [DynamicConfigValue(id_val="unit", value="none")])


def tier_annotations() -> dashboard.AnnotationQuery:
    # A migration still moving lasts until now, like an open incident.
    sql = f"""
SELECT started_at AS time,
    coalesce(settled_at, now64(3, 'UTC')) AS timeEnd,
    concat(array, ' / ', volume, ': Tier 0 share ', direction, ' from ', toString(round(100 * tier0_share_before)),
        ' to ', toString(round(100 * tier0_share_reached)), ' %', if(settled_at IS NULL, ' so far', '')) AS text
FROM sanlens.tier_episodes FINAL
WHERE {in_range("settled_at")}
    AND {reached("array, volume")}
ORDER BY time"""
    return (
        dashboard.AnnotationQuery()
        .name("Tier migrations")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color("blue")
        .target(Query(sql, TABLE))
    )


def build() -> dashboard.Dashboard:
    board = (
        dashboard.Dashboard(TITLE)
        .uid(UID)
        .tags(["sanlens", "latency", "breakdown", "fabric", "tiering"])
        .description(
            "Where a host's I/O time goes: host queueing, fabric, array and unexplained parts (also by transport and "
            "multipath policy), stalling switch "
            "ports, incidents, tier migrations and their effects, the hosts' CPU, transactions/s and HBA queue "
            "depths, and drill-down from site to host to disk."
        )
        .time("now-6h", "now")
        .refresh("1m")
        .timezone("utc")
        .editable()
        .annotation(incident_annotations())
        .annotation(tier_annotations())
    ).with_variable(datasource_variable())
    for name, label, parents in VARIABLES:
        board = board.with_variable(variable(name, label, parents))
    return (
        board.with_row(dashboard.Row("Breakdown").id(100))
        .with_panel(breakdown())
        .with_panel(hosts())
        .with_panel(by_transport.panel())
        .with_row(dashboard.Row("Fabric and incidents").id(101))
        .with_panel(fabric())
        .with_panel(incidents())
        .with_row(dashboard.Row("Tier migration").id(102))
        .with_panel(tier_shares())
        .with_panel(tier_effects())
        .with_row(dashboard.Row("Host health").id(110))
        .with_panel(host_health.load("cpu_percent"))
        .with_panel(host_health.load("transactions_per_s"))
        .with_panel(host_health.queue_depths())
    )
