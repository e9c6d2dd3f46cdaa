"""Record types and SQL of the burn_rates job: the array's service-time histograms (telemetry.histograms), the
paths' latency windows (telemetry.breakdown) and the inventory (inventory.topology) in; per SLO of
slo/slos.yaml, entity and window the good and total I/Os out (telemetry.slo_windows), and the alerts their burn
rates raise (alerts.slo). The method is in README.md."""

from __future__ import annotations

from collections.abc import Callable

from ingest import topics
from slo.definitions import Definitions, Slo

# How long a window's histogram waits for the path's latency window, and the other way round (processing
# time). The two topics are read at their own paces: in a backlog the breakdown's (one row per path and
# window) runs ahead of the histograms' (a row per bucket) by up to most of the time the backlog takes, and
# at 2 minutes a 7-hour backfill lost more than half of its windows. The state holds that much of the faster
# side's output on the heap (10 minutes of a 200-array backfill filled 640 MB; the job has 1.5 GB). In
# RocksDB (tried with exactly-once sinks, on a loaded machine) the job fell a million messages behind in the
# test suite (not measured apart).
JOIN_TTL = "20 min"
FIRST = "ORDER BY proc ASC"  # keep-first deduplication: append-only, and a path's figures are the same in every version


def sources(histograms: str, breakdown: str, topology: str) -> list[str]:
    """The three inputs; each argument is a Kafka source's WITH options (docs/contract.md)."""
    return [
        f"""
    CREATE TABLE histograms (
        window_start TIMESTAMP_LTZ(3), source STRING, site STRING, `array` STRING, volume STRING, direction STRING,
        bucket INT, ios BIGINT
    ) WITH ({histograms}, 'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601')""",
        f"""
    CREATE TABLE breakdown (
        window_start TIMESTAMP_LTZ(3), customer STRING, site STRING, host STRING, disk STRING, direction STRING,
        `array` STRING, volume STRING, host_us DOUBLE, array_us DOUBLE, proc AS PROCTIME()
    ) WITH ({breakdown}, 'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601')""",
        f"""
    CREATE TABLE topology (
        kind STRING, customer STRING, site STRING, host STRING, disk STRING, `array` STRING, `model` STRING,
        media STRING, `databases` ARRAY<STRING>, proc AS PROCTIME()
    ) WITH ({topology}, 'format' = 'json', 'json.ignore-parse-errors' = 'true')""",
    ]


VIEWS = {
    # a path's window once: the breakdown sends it for every version of the path (the figures are the same)
    "path_windows": f"""
        SELECT window_start, customer, site, host, disk, direction, `array`, volume,
            GREATEST(host_us - array_us, 0) AS beyond_array_us
        FROM (
            SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, site, host, disk, direction {FIRST}) AS n
            FROM breakdown
        ) WHERE n = 1""",
    # an array's model and tier never change: its first version is enough
    "arrays": f"""
        SELECT `array`, customer, `model`, CASE media WHEN 'ssd' THEN 'flash' ELSE media END AS tier
        FROM (
            SELECT *, ROW_NUMBER() OVER (PARTITION BY `array` {FIRST}) AS n FROM topology WHERE kind = 'array'
        ) WHERE n = 1""",
    "path_databases": f"""
        SELECT site, host, disk, `databases`
        FROM (
            SELECT *, ROW_NUMBER() OVER (PARTITION BY site, host, disk {FIRST}) AS n FROM topology WHERE kind = 'path'
        ) WHERE n = 1""",
    "array_ios": "SELECT * FROM histograms WHERE source = 'array' AND ios > 0",
}


def good_share(threshold_ms: str) -> str:
    """The share of a bucket's I/Os at or under `threshold_ms`: 1 below the threshold, 0 above, linear inside the
    bucket it falls in (at most that bucket's I/Os are misplaced). Bucket n holds (2^(n-8), 2^(n-7)] ms;
    the open-ended bucket 31 is taken as (2^23, 2^24]."""
    lower = "CASE WHEN h.bucket = 0 THEN 0.0 ELSE POWER(2.0, h.bucket - 8) END"
    upper = "POWER(2.0, h.bucket - 7)"
    return f"LEAST(GREATEST(({threshold_ms} - {lower}) / ({upper} - {lower}), 0.0), 1.0)"


LABELS = {  # selector label -> its column in slo_select()
    "customer": "a.customer",
    "site": "h.site",
    "array": "h.`array`",
    "model": "a.`model`",
    "tier": "a.tier",
    "volume": "h.volume",
    "host": "p.host",
    "disk": "p.disk",
}
ENTITY = {"path": "p.host || ':' || p.disk", "host": "p.host", "volume": "h.`array` || ':' || h.volume"}


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def slo_select(slo: Slo) -> str:
    """The SLO's good and total I/Os per entity, window and bucket: the array's histogram of the volume; host
    side, shifted by what the path's host measured beyond the array's service time in that window."""
    host_side = slo.side == "host"
    threshold = f"{slo.threshold_ms!r}E0" + (" - p.beyond_array_us / 1000.0" if host_side else "")
    conditions = [f"h.direction = '{slo.direction}'"]
    for label, values in slo.select.items():
        if label == "database":
            conditions.append("(" + " OR ".join(f"ARRAY_CONTAINS(d.`databases`, {_quote(v)})" for v in values) + ")")
        else:
            conditions.append(f"{LABELS[label]} IN ({', '.join(map(_quote, values))})")
    joins = ["JOIN arrays AS a ON a.`array` = h.`array`"]
    if host_side:
        joins.insert(
            0,
            "JOIN path_windows AS p ON p.window_start = h.window_start AND p.site = h.site "
            "AND p.`array` = h.`array` AND p.volume = h.volume AND p.direction = h.direction",
        )
    if "database" in slo.select:
        joins.append("JOIN path_databases AS d ON d.site = p.site AND d.host = p.host AND d.disk = p.disk")
    path = "p.host || ':' || p.disk" if host_side else "''"
    return f"""
        SELECT {_quote(slo.name)} AS slo, {ENTITY[slo.per]} AS entity, {path} AS `path`, h.site,
            CAST(TIMESTAMPDIFF(SECOND, TO_TIMESTAMP_LTZ(0, 3), h.window_start) AS BIGINT) * 1000 AS window_ms,
            h.window_start, h.bucket, h.ios * {good_share(threshold)} AS good, CAST(h.ios AS DOUBLE) AS total,
            {slo.objective!r}E0 AS objective
        FROM array_ios AS h
        {" ".join(joins)}
        WHERE {" AND ".join(conditions)}"""


def slo_ios(d: Definitions) -> str:
    return "\n        UNION ALL".join(slo_select(s) for s in d.slos)


def rules(d: Definitions) -> str:
    """The alert rules as the process table function takes them: severity:burn rate:long s:short s, ..."""
    return ",".join(f"{a.severity}:{a.burn_rate(d.period_days)!r}:{a.long_s}:{a.short_s}" for a in d.alerts)


INSERT_WINDOWS = """
    INSERT INTO slo_windows
    SELECT slo, entity, `path`, site, window_start, bucket, good, total, objective FROM slo_ios"""


def insert_alerts(d: Definitions) -> str:
    return f"""
    INSERT INTO slo_alerts
    SELECT ts, slo, entity, site, severity, `state`, burn_5m, burn_30m, burn_1h, burn_2h, burn_6h, burn_1d, burn_3d,
        budget_left, period_good, period_total
    FROM evaluate_burn_rates(
        input => TABLE slo_ios PARTITION BY (slo, entity), rules => '{rules(d)}',
        period_days => {round(d.period_days)}, uid => 'burn-rates')"""


def sinks(kafka_sink: Callable[[str, str], str]) -> list[str]:
    json = "'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601'"
    return [
        f"""
    CREATE TABLE slo_windows (
        slo STRING, entity STRING, `path` STRING, site STRING, window_start TIMESTAMP_LTZ(3), bucket INT, good DOUBLE,
        total DOUBLE, objective DOUBLE
    ) WITH ({kafka_sink("slo_windows", topics.SLO_WINDOWS)}, {json})""",
        f"""
    CREATE TABLE slo_alerts (
        ts TIMESTAMP_LTZ(3), slo STRING, entity STRING, site STRING, severity STRING, `state` STRING, burn_5m DOUBLE,
        burn_30m DOUBLE, burn_1h DOUBLE, burn_2h DOUBLE, burn_6h DOUBLE, burn_1d DOUBLE, burn_3d DOUBLE,
        budget_left DOUBLE, period_good DOUBLE, period_total DOUBLE
    ) WITH ({kafka_sink("slo_alerts", topics.SLO_ALERTS)}, {json})""",
    ]
