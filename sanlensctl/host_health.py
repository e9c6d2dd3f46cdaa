"""A host's health beside its latency, for `./sanlens explain`: % Processor Time and SQL Server's transactions/s over
each part of the span (sanlens.metrics: the means of the part's samples, as the dbt view host_health has them per
minute), and its HBA ports' queue depth against its fleet's setting (the dbt view hba_queue_depths, the one
definition of that setting: the value most of the customer's HBA ports have)."""

from __future__ import annotations

# Over the span but the parts left out ({out_from} to {out_to}, epoch seconds): % Processor Time, and transactions/s
# summed over the databases per sample, then the mean; Perfmon's (no sql_instance) and the DMV's counts of the same
# transactions are not added up: the larger is kept.
LOAD = """
SELECT
    (SELECT avg(value) FROM samples WHERE metric = 'host.cpu_busy') AS cpu_percent,
    (SELECT count() FROM samples WHERE metric = 'host.cpu_busy') AS cpu_samples,
    (SELECT max(per_s) FROM (
        SELECT sum(value) / uniqExact(ts) AS per_s FROM samples
        WHERE metric = 'sql.transactions' GROUP BY sql_instance != ''
    )) AS transactions_per_s
FROM system.one
"""
SAMPLES = """
WITH samples AS (
    SELECT ts, metric, value, sql_instance FROM sanlens.metrics
    WHERE host = {host:String} AND metric IN ('host.cpu_busy', 'sql.transactions')
        AND ts >= {start:DateTime64(3)} AND ts < {end:DateTime64(3)}
        AND NOT arrayExists((f, t) -> toUnixTimestamp(ts) >= f AND toUnixTimestamp(ts) < t,
            {out_from:Array(Int64)}, {out_to:Array(Int64)})
)"""
QUEUE_DEPTHS = """
SELECT host_port, queue_depth, fleet_queue_depth, ports_at_setting, fleet_ports, customer, differs
FROM sanlens_marts.hba_queue_depths
WHERE host = {host:String}
ORDER BY host_port
"""
HAS_MART = "SELECT count() FROM system.tables WHERE database = 'sanlens_marts' AND name = 'hba_queue_depths'"
LOAD_HEAD = ["part of the span", "% processor time", "transactions/s", "samples"]
QUEUE_HEAD = ["HBA port", "queue depth", "fleet's setting", "HBA ports at it", "differs"]


def load(client, host: str, params: dict) -> dict:
    """% Processor Time, transactions/s (None without samples) and the count of CPU samples, over `params`' span
    (start, end, out_from, out_to as explain's breakdown query takes them)."""
    row = next(client.query(SAMPLES + LOAD, parameters={"host": host, **params}).named_results())
    if not row["cpu_samples"]:
        row["cpu_percent"] = None
    return row


def load_cells(title: str, row: dict) -> list:
    cpu, tps = row["cpu_percent"], row["transactions_per_s"]
    return [
        title,
        "no sample" if cpu is None else f"{cpu:.1f}",
        "no sample" if tps is None else f"{tps:.1f}",
        row["cpu_samples"],
    ]


def queue_depths(client, host: str) -> list[dict] | None:
    """The host's HBA ports against their fleet's setting; None where the dbt view is not built yet."""
    if not client.command(HAS_MART):
        return None
    return list(client.query(QUEUE_DEPTHS, parameters={"host": host}).named_results())


def queue_cells(row: dict) -> list:
    differs = f"DIFFERS: {row['queue_depth']}, not {row['fleet_queue_depth']}" if row["differs"] else "no"
    at = f"{row['ports_at_setting']} of {row['fleet_ports']} of {row['customer']}"
    return [row["host_port"], row["queue_depth"], row["fleet_queue_depth"], at, differs]


def show(client, host: str, parts: list[tuple[str, dict]]) -> None:
    """The host's load per part of the span (title, explain's query parameters), then its HBA ports' queue depths."""
    from sanlensctl.cli import print_rows

    print("\nhost health, % Processor Time and SQL Server's transactions/s (its databases summed), the means:")
    print_rows(LOAD_HEAD, [load_cells(title, load(client, host, params)) for title, params in parts])
    found = queue_depths(client, host)
    if found is None:
        print("\nthe HBA queue depths need the dbt views: ./sanlens dbt build")
        return
    print("\nHBA queue depth against its fleet's setting (the value most of the customer's HBA ports have):")
    print_rows(QUEUE_HEAD, [queue_cells(r) for r in found])
