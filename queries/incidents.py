"""Incidents as `./sanlens explain`, the report and the demo list them: what, where and when, how much latency they
added, how severe and why, and the hosts, volumes and arrays they touched (the view sanlens.incidents, whose hosts,
volumes and arrays come from the inventory's paths: clickhouse/migrations/0017; the dbt view
sanlens_marts.latency_incidents)."""

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

# Every incident of the mart, open ones first, then the most recent (the mart's order): the report's table.
LATEST = f"SELECT {COLUMNS} FROM sanlens_marts.latency_incidents LIMIT 100"
# The incidents along the paths (host:disk:direction) that start with {prefix}, overlapping {start} to {end}:
# `./sanlens explain`'s.
ALONG_PATHS = f"""
SELECT {COLUMNS}
FROM sanlens.incidents
WHERE arrayExists(p -> startsWith(p, {{prefix:String}}), paths)
    AND started_at < {{end:DateTime64(3)}} AND (ended_at IS NULL OR ended_at > {{start:DateTime64(3)}})
ORDER BY started_at, component
"""
# The {n} hosts whose paths the incidents touched most (latency added x I/Os).
HOSTS_TOUCHED_MOST = """
SELECT splitByChar(':', path)[1] AS host
FROM sanlens_marts.latency_incidents ARRAY JOIN paths AS path
GROUP BY host
ORDER BY sum(excess_us * ios / length(paths)) DESC
LIMIT {n:UInt32}"""
# The incidents of sites {sites} that started between {a} and {b}, as the demo lists them beside the planted faults.
OF_SITES_IN_SPAN = """
SELECT contributor, component, formatDateTime(started_at, '%H:%i:%S') AS started,
       if(ended_at IS NULL, 'open', formatDateTime(ended_at, '%H:%i:%S')) AS ended,
       round(excess_us) AS excess_us, severity, length(paths) AS paths
FROM sanlens_marts.latency_incidents
WHERE site IN {sites:Array(String)} AND started_at BETWEEN {a:DateTime64(3)} AND {b:DateTime64(3)}
ORDER BY started_at"""
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
