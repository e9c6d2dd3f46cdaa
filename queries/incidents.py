"""Incidents as `./sanlens explain` and the report list them: what, where and when, how much latency they added,
how severe and why, and the hosts, volumes and arrays they touched (the view sanlens.incidents, whose hosts,
volumes and arrays come from the inventory's paths: clickhouse/migrations/0017)."""

from __future__ import annotations

from datetime import datetime

# flink-jobs/breakdown/java/io/sanlens/breakdown/DetectIncidents.java, SEVERE_US: Brocade FPI counts a frame delayed
# this long as lost
SEVERE_US = 80_000

COLUMNS = (
    "contributor, component, site, started_at, ended_at, excess_us, worst_excess_us, severity, hosts, volumes, arrays"
)
HEAD = ["contributor", "component", "site", "started (UTC)", "ended", "added per I/O (us)", "severity"]
HEAD += ["hosts", "volumes", "arrays"]
CONTRIBUTOR = {"host_queueing": "host queueing", "fabric": "fabric", "array": "array"}
SEVERITY_RULE = (
    "severity, after Brocade MAPS FPI, is how much an incident hurt, not how large it was: severe when frames were "
    "lost (a switch port on its paths discarded frames, class-3 discards: each such I/O waits for a timeout and is "
    f"retried) or a path gained {SEVERE_US / 1000:g} ms or more per I/O; otherwise warning, however large the delay "
    "below that"
)


def severity_in_words(severity: str, worst_excess_us: float) -> str:
    """The incident's severity with what made it so (SEVERITY_RULE); `worst_excess_us`: its largest path excess."""
    if severity != "severe":
        return f"warning: no frame lost, under {SEVERE_US / 1000:g} ms added"
    if worst_excess_us >= SEVERE_US:
        return f"severe: {SEVERE_US / 1000:g} ms or more added"
    return "severe: frames lost (class-3 discards)"


def cells(row: dict) -> list[str]:
    """An incident (a row of COLUMNS) as the tables show it, under HEAD."""
    started, ended = row["started_at"], row["ended_at"]
    return [
        CONTRIBUTOR.get(row["contributor"], row["contributor"]),
        row["component"],
        row["site"],
        f"{started:%Y-%m-%d %H:%M:%S}",
        "open" if ended is None else clock(ended, started),
        f"{row['excess_us']:,.1f}",
        severity_in_words(row["severity"], row["worst_excess_us"]),
        ", ".join(row["hosts"]),
        ", ".join(row["volumes"]),
        ", ".join(row["arrays"]),
    ]


def clock(t: datetime, since: datetime) -> str:
    """`t` as a time of day when it is on `since`'s day, else with its date."""
    return f"{t:%H:%M:%S}" if t.date() == since.date() else f"{t:%Y-%m-%d %H:%M:%S}"
