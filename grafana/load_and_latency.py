"""The "Load and latency" dashboard, the load curves the storage studies draw: each array's intervals as IOPS and
MB/s against its service time with its knee marked (where a 1 % rise in load costs 1 % more service time), the
arrays' knees and the load they top out at, and each host's batch requests/s and transactions/s against the latency
it measures. Every query is queries/load_curve.py's, which the report runs too, over the arrays' and
hosts' samples in sanlens.metrics: no dbt run is needed."""

from __future__ import annotations

from grafana_foundation_sdk.builders import common, dashboard, table, xychart
from grafana_foundation_sdk.models.dashboard import DynamicConfigValue
from grafana_foundation_sdk.models.xychart import ScatterShow, SeriesMapping

from grafana.sql_query import DATASOURCE, Query, cascading_variable, datasource_variable
from queries import load_curve

UID = "sanlens-load-and-latency"
TITLE = "Load and latency"

ARRAYS = """$__timeFilter(ts)
    AND $__conditionalAll(site IN (${site:singlequote}), $site)
    AND $__conditionalAll(array IN (${array:singlequote}), $array)"""
# A panel repeated on a variable (one array's or one host's curve each, in its own colour) reads the variable's one
# value of its copy: not through $__conditionalAll, which the ClickHouse plugin decides on the dashboard's selection
# (All: every copy would draw every array).
ONE_ARRAY = """$__timeFilter(ts)
    AND array IN (${array:singlequote})"""
ONE_HOST = """$__timeFilter(ts)
    AND host IN (${host:singlequote})"""
WINDOW = "toStartOfInterval(ts, toIntervalSecond(10))"  # the pipeline's window: one point per host and 10 s

# (name, label, the variables it depends on, the metric that names it)
VARIABLES = [
    ("site", "Site", [], "volume.ios"),
    ("array", "Array", ["site"], "volume.ios"),
    ("host", "Host", ["site"], "sql.batch_requests"),
]


def on_the_arrays() -> str:
    """The host is one of the selected arrays' (the report's hosts on arrays: a path to one of their volumes)."""
    hosts = load_curve.hosts_on_arrays("$__timeFilter(ts) AND array IN (${array:singlequote})")
    return f"\n    AND $__conditionalAll(host IN ({hosts.replace(chr(10), chr(10) + '        ')}\n    ), $array)"


ALSO = {"host": on_the_arrays()}
# A panel per selected value: All by default would draw one per array or host of a fleet of thousands.
FIRST_BY_DEFAULT = {"array", "host"}


def variable(name: str, label: str, parents: list[str], metric: str) -> dashboard.QueryVariable:
    where = f" AND metric = '{metric}'{ALSO.get(name, '')}"
    listed = cascading_variable(name, label, parents, "sanlens.metrics", "ts", where)
    return listed.include_all(False) if name in FIRST_BY_DEFAULT else listed


def array_curve(load: str) -> str:
    """The panel's array's intervals as `load` (iops or mbps) against service_ms, and its knee as knee_service_ms
    at the knee's load: one frame, so that the scatter plots both against one x axis."""
    intervals = load_curve.array_intervals(ONE_ARRAY.replace("\n", "\n    "))
    return f"""
SELECT {load}, service_ms, CAST(NULL AS Nullable(Float64)) AS knee_service_ms
FROM ({intervals})
UNION ALL
SELECT knee_{load} AS {load}, NULL AS service_ms, knee_service_ms
FROM ({load_curve.array_knees(intervals)})
WHERE knee_service_ms IS NOT NULL"""


def scatter(panel_id: int, title: str, description: str, sql: str, x: str, x_unit: str, y_unit: str, each: str):
    """A scatter repeated for each selected value of the variable `each`, one copy under the other (the IOPS and the
    MB/s curves of an array side by side)."""
    return (
        xychart.Panel()
        .id(panel_id)
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(Query(sql))
        .series_mapping(SeriesMapping.AUTO)
        .dims(xychart.XYDimensionConfig().x(x))
        .show(ScatterShow.POINTS)
        .point_size(common.ScaleDimensionConfig().fixed(4))
        .unit(y_unit)
        .min(0)
        .override_by_name(x, [DynamicConfigValue(id_val="unit", value=x_unit)])
        .repeat(each)
        .repeat_direction("v")
        .height(10)
        .span(12)
    )


def knee_marked(panel: xychart.Panel) -> xychart.Panel:
    return panel.override_by_name(
        "knee_service_ms",
        [
            DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": "red"}),
            DynamicConfigValue(id_val="custom.pointSize", value={"fixed": 14}),
            DynamicConfigValue(id_val="displayName", value="knee"),
        ],
    )


def iops_curve() -> xychart.Panel:
    return knee_marked(
        scatter(
            1,
            "$array: service time against IOPS, per interval (the knee in red)",
            "One panel per selected array, each point a sample of it: the IOPS of its volumes summed and their "
            "service time, I/O-weighted. The knee (red) is the load bin where a 1 % rise in IOPS costs 1 % more "
            "service time (throughput over service time peaks there); a saturated array's points stand in a column "
            "at its capacity.",
            array_curve("iops"),
            "iops",
            "iops",
            "ms",
            "array",
        )
    )


def mbps_curve() -> xychart.Panel:
    return knee_marked(
        scatter(
            2,
            "$array: service time against MB/s, per interval (the knee in red)",
            "The same samples against the MB/s the array moved; the knee is the same load bin's.",
            array_curve("mbps"),
            "mbps",
            "decMBs",
            "ms",
            "array",
        )
    )


def knees() -> table.Panel:
    sql = load_curve.array_knees(load_curve.array_intervals(ARRAYS.replace("\n", "\n    ")))
    return (
        table.Panel()
        .id(3)
        .title("Arrays' knees and the load they top out at")
        .description(
            "Per array: the knee's IOPS, MB/s and service time (empty where the curve does not bend in the range: "
            "the power beyond its peak less than 10 % lower), and its busiest load bin's IOPS and service time: "
            "an array that saturates stays there however much more load its hosts offer."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql))
        .unit("short")
        .override_by_regexp(".*_ms", [DynamicConfigValue(id_val="unit", value="ms")])
        .override_by_regexp(".*_iops", [DynamicConfigValue(id_val="unit", value="iops")])
        .override_by_name("knee_mbps", [DynamicConfigValue(id_val="unit", value="decMBs")])
        .height(8)
        .span(24)
    )


# Grafana's reqps reads "req/s": batch requests are requests, transactions are not.
HOST_LOAD_UNITS = {"batch_requests": "reqps", "transactions": "suffix: tx/s"}


def host_curve(panel_id: int, load: str, title: str, description: str) -> xychart.Panel:
    sql = f"""
SELECT {load}, latency_ms
FROM ({load_curve.host_intervals(WINDOW, ONE_HOST.replace(chr(10), chr(10) + "    "))})"""
    return scatter(panel_id, title, description, sql, load, HOST_LOAD_UNITS[load], "ms", "host")


def build() -> dashboard.Dashboard:
    board = (
        dashboard.Dashboard(TITLE)
        .uid(UID)
        .tags(["sanlens", "latency", "load", "knee"])
        .description(
            "Load curves: each array's IOPS and MB/s against its service time with the knee marked, and each "
            "host's batch requests/s and transactions/s against the latency it measures."
        )
        .time("now-6h", "now")
        .refresh("1m")
        .timezone("utc")
        .editable()
    ).with_variable(datasource_variable())
    for name, label, parents, metric in VARIABLES:
        board = board.with_variable(variable(name, label, parents, metric))
    return (
        board.with_row(dashboard.Row("Arrays").id(100))
        .with_panel(iops_curve())
        .with_panel(mbps_curve())
        .with_panel(knees())
        .with_row(dashboard.Row("Hosts").id(101))
        .with_panel(
            host_curve(
                4,
                "batch_requests",
                "$host: latency against batch requests/s, per 10 s",
                "One panel per selected host: SQL Server's batch requests/s against the latency its disks measure "
                "(Perfmon, I/O-weighted over disks and directions): flat while the array keeps up, rising past "
                "its knee, a column where the array saturates.",
            )
        )
        .with_panel(
            host_curve(
                5,
                "transactions",
                "$host: latency against transactions/s, per 10 s",
                "The same against SQL Server's transactions/s, its databases summed.",
            )
        )
    )
