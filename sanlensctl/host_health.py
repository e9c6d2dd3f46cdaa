"""A host's health beside its latency, for `./sanlens explain`: % Processor Time and SQL Server's transactions/s over
each part of the span, and its HBA ports' queue depth against its fleet's setting (queries/host_health.py)."""

from __future__ import annotations

from queries import host_health
from sanlensctl.output import print_rows

LOAD_HEAD = ["part of the span", "% processor time", "transactions/s", "samples"]
QUEUE_HEAD = ["HBA port", "queue depth", "fleet's setting", "HBA ports at it", "differs"]


def load(client, host: str, params: dict) -> dict:
    """% Processor Time, transactions/s (None without samples) and the count of CPU samples, over `params`' span
    (start, end, out_from, out_to as explain's breakdown query takes them)."""
    row = next(client.query(host_health.LOAD, parameters={"host": host, **params}).named_results())
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
    if not client.command(host_health.HAS_QUEUE_DEPTHS):
        return None
    return list(client.query(host_health.QUEUE_DEPTHS, parameters={"host": host}).named_results())


def queue_cells(row: dict) -> list:
    differs = f"DIFFERS: {row['queue_depth']}, not {row['fleet_queue_depth']}" if row["differs"] else "no"
    at = f"{row['ports_at_setting']} of {row['fleet_ports']} of {row['customer']}"
    return [row["host_port"], row["queue_depth"], row["fleet_queue_depth"], at, differs]


def show(client, host: str, parts: list[tuple[str, dict]]) -> None:
    """The host's load per part of the span (title, explain's query parameters), then its HBA ports' queue depths."""
    print("\nhost health, % Processor Time and SQL Server's transactions/s (its databases summed), the means:")
    print_rows(LOAD_HEAD, [load_cells(title, load(client, host, params)) for title, params in parts])
    found = queue_depths(client, host)
    if found is None:
        print("\nthe HBA queue depths need the dbt views: ./sanlens dbt build")
        return
    print("\nHBA queue depth against its fleet's setting (the value most of the customer's HBA ports have):")
    print_rows(QUEUE_HEAD, [queue_cells(r) for r in found])
