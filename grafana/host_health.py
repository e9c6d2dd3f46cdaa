"""The "Where the latency is" dashboard's host health row: the selected hosts' % Processor Time and SQL Server's
transactions/s beside their latency, and their HBA ports' queue depth against the fleet's setting, flagged where it
differs. The panels read the dbt views sanlens_marts.host_health and sanlens_marts.hba_queue_depths (dbt/models/marts:
the fleet's setting is the value most of a customer's HBA ports have)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import table, timeseries
from grafana_foundation_sdk.models.dashboard import DynamicConfigValue

from grafana.sql_query import DATASOURCE, TABLE, TIME_SERIES, Query

# The dashboard's site and host variables (its disk variable does not apply: these are the host's own figures).
HOSTS = """$__conditionalAll(site IN (${site:singlequote}), $site)
    AND $__conditionalAll(host IN (${host:singlequote}), $host)"""
# (column of host_health, panel title, unit, description)
LOAD = {
    "cpu_percent": (
        20,
        "% Processor Time of the selected hosts",
        "percent",
        "Each selected host's % Processor Time (Perfmon's Processor(_Total)), the mean of its samples per interval: "
        "beside the latency above, a host whose latency fell while its CPU eased (the studies' 4x CPU gain with 95 % "
        "less read latency) or rose while its CPU saturated.",
    ),
    "transactions_per_s": (
        21,
        "SQL Server transactions/s of the selected hosts",
        "suffix: tx/s",
        "Each selected host's SQL Server transactions/s, its databases summed, the mean of its samples per interval "
        "(Perfmon's and the DMV's counts of the same transactions are not added up: the larger is kept).",
    ),
}


def load(column: str) -> timeseries.Panel:
    panel_id, title, unit, description = LOAD[column]
    sql = f"""
SELECT $__timeInterval(minute) AS time, host, avg({column}) AS {column}
FROM sanlens_marts.host_health
WHERE $__timeFilter(minute) AND {HOSTS}
GROUP BY time, host
ORDER BY time, host"""
    return (
        timeseries.Panel()
        .id(panel_id)
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(Query(sql, TIME_SERIES))
        .unit(unit)
        .min(0)
        .display_name("${__field.labels.host}")
        .height(8)
        .span(12)
    )


def queue_depths() -> table.Panel:
    sql = f"""
SELECT site, host, host_port, queue_depth, fleet_queue_depth, ports_at_setting, fleet_ports, customer,
    if(differs, 'differs', 'at the setting') AS flag
FROM sanlens_marts.hba_queue_depths
WHERE (site, host) IN (
    SELECT site, host FROM sanlens_marts.host_health
    WHERE $__timeFilter(minute) AND {HOSTS}
)
ORDER BY differs DESC, site, host, host_port
LIMIT 100"""
    return (
        table.Panel()
        .id(22)
        .title("HBA queue depth against the fleet's setting")
        .description(
            "The selected hosts' HBA ports (those with samples in the range) and the queue depth set on each, beside "
            "the fleet's setting: the value most of the customer's HBA ports have (ports_at_setting of fleet_ports; a "
            "tie goes to the deeper queue). A port set otherwise is flagged and listed first: too shallow a queue "
            "queues I/Os on the host (the studies set 256)."
        )
        .datasource(DATASOURCE)
        .with_target(Query(sql, TABLE))
        .unit("none")
        .height(8)
        .span(24)
        .override_by_name(
            "flag",
            [
                DynamicConfigValue(id_val="custom.cellOptions", value={"type": "color-background"}),
                DynamicConfigValue(
                    id_val="mappings",
                    value=[
                        {
                            "type": "value",
                            "options": {
                                "differs": {"color": "red", "index": 0},
                                "at the setting": {"color": "green", "index": 1},
                            },
                        }
                    ],
                ),
            ],
        )
    )
