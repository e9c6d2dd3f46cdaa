"""The "Where the latency is" dashboard's breakdown by transport and multipath policy: the selected paths' latency and
its parts per transport (FC or iSCSI), MPIO load-balance policy and direction, from the dbt view
sanlens_marts.latency_by_transport (the breakdown job's windows with each path's transport and policy from the
inventory, as of the window)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import table
from grafana_foundation_sdk.models.dashboard import DynamicConfigValue

from grafana.sql_query import DATASOURCE, TABLE, Query

TITLE = "Latency by transport and multipath policy"
# The dashboard's site, host and disk variables.
SELECTION = """$__conditionalAll(site IN (${site:singlequote}), $site)
    AND $__conditionalAll(host IN (${host:singlequote}), $host)
    AND $__conditionalAll(disk IN (${disk:singlequote}), $disk)"""
PARTS = ("host_queueing_us", "fabric_us", "array_us", "unexplained_us")
COLUMNS = ("transport", "multipath_policy", "direction", "paths", "ios", "host_us", "above_array_us", *PARTS)


def io_weighted(column: str) -> str:
    """The column per I/O over a group's rows (qualified: the result takes its name)."""
    return f"sum(t.{column} * t.ios) / sum(t.ios) AS {column}"


def panel() -> table.Panel:
    parts = ",\n    ".join(io_weighted(part) for part in PARTS)
    sql = f"""
SELECT transport, multipath_policy, direction,
    uniqExact(t.host, t.disk) AS paths,
    sum(t.ios) AS ios,
    {io_weighted("host_us")},
    host_us - array_us AS above_array_us,
    {parts}
FROM sanlens_marts.latency_by_transport AS t
WHERE $__timeFilter(period_start) AND {SELECTION}
GROUP BY transport, multipath_policy, direction
ORDER BY transport, multipath_policy, direction"""
    return (
        table.Panel()
        .id(7)
        .title(TITLE)
        .description(
            "The selected paths' latency per transport (FC or iSCSI), the hosts' MPIO load-balance policy and "
            "direction: what the hosts measured, what it adds above the array's service time (above_array_us: the "
            "host and the transport between them and the array), and its parts, I/O-weighted over the range (the "
            "paths host:disk, their I/Os). The studies compare the two transports: iSCSI's software initiator has "
            "slightly higher response times than FC (TR-3273); its TCP/IP stacks are no part of the breakdown, so "
            "their cost shows in unexplained_us."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .unit("µs")
        .height(7)
        .span(24)
        .override_by_name("paths", [DynamicConfigValue(id_val="unit", value="none")])
        .override_by_name("ios", [DynamicConfigValue(id_val="unit", value="short")])
    )
