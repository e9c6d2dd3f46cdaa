"""Record types and SQL of the burn_rates job: the array's service-time histograms (telemetry.histograms), the
paths' latency windows (telemetry.breakdown) and the inventory (inventory.topology) in; per SLO of
slo/slos.yaml, entity and window the good and total I/Os out (telemetry.slo_windows), and the alerts their burn
rates raise (alerts.slo). The method is in README.md."""

from __future__ import annotations

from collections.abc import Callable

from ingest import topics
from slo.definitions import Definitions, Slo

# How long a window's histogram waits for the path's latency windows, and the other way round (processing
# time). The two topics are read at their own paces: in a backfill the histograms' (a row per volume window) and the
# breakdown's (a row per path and window) drift apart by up to most of the time the backlog takes, and at 2
# minutes a 7-hour backfill lost more than half of its windows. The two sides meet in one keyed function
# (pair_volume_windows, java/: PairVolumeWindows) since issue 38, no longer in an interval join: each side is a
# point lookup in map state, and the state expires with the job's time-to-live, the same wait.
JOIN_WAIT_MIN = 20
JOIN_WAIT_MS = JOIN_WAIT_MIN * 60_000
# The job's default state time-to-live (`table.exec.state.ttl`): pair_volume_windows' state (what waits for the
# other side), and state no hint bounds, such as the deduplications'.
JOIN_TTL = f"{JOIN_WAIT_MIN} min"
# How long data waits for the inventory, which is read whole at every start: the inventory itself is kept
# without a time-to-live (one row per array and path). Flink's heap state cleans a key's rows by copying all of
# them at every access: a join keyed by array that kept 20 minutes of histogram rows took 87 % of the job's CPU.
INVENTORY_WAIT_S = 20
INVENTORY_WAIT = f"{INVENTORY_WAIT_S} s"
FIRST = "ORDER BY proc ASC"  # keep-first deduplication: append-only, and a path's figures are the same in every version


def sources(histograms: str, breakdown: str, topology: str) -> list[str]:
    """The three inputs; each argument is a Kafka source's WITH options (docs/contract.md)."""
    return [
        f"""
    CREATE TABLE histograms (
        window_start TIMESTAMP_LTZ(3), source STRING, site STRING, `array` STRING, volume STRING, direction STRING,
        `buckets` ARRAY<INT>, ios ARRAY<BIGINT>, proc AS PROCTIME()
    ) WITH ({histograms}, 'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601')""",
        f"""
    CREATE TABLE breakdown (
        window_start TIMESTAMP_LTZ(3), customer STRING, site STRING, host STRING, disk STRING, direction STRING,
        `array` STRING, volume STRING, host_us DOUBLE, array_us DOUBLE, proc AS PROCTIME()
    ) WITH ({breakdown}, 'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601')""",
        f"""
    CREATE TABLE topology (
        kind STRING, customer STRING, site STRING, host STRING, disk STRING, `array` STRING, volume STRING,
        `model` STRING, media STRING, `databases` ARRAY<STRING>, proc AS PROCTIME()
    ) WITH ({topology}, 'format' = 'json', 'json.ignore-parse-errors' = 'true')""",
    ]


# The inventory joins keep the inventory's side without a time-to-live ('0 ms'): an array or a path is
# published once, and each is one row (the deduplications make `array`, and site, host and disk, unique keys,
# so a version published again replaces the earlier one in the join instead of doubling it).
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
    # each placement of a path once (a path moved to another volume is a new one; its labels go to that volume)
    "paths": f"""
        SELECT customer, site, host, disk, `array`, volume, `databases`
        FROM (
            SELECT *, ROW_NUMBER() OVER (PARTITION BY site, host, disk, `array`, volume {FIRST}) AS n
            FROM topology WHERE kind = 'path'
        ) WHERE n = 1""",
    # a path with its array's labels: inventory on both sides
    "path_labels": """
        SELECT /*+ STATE_TTL('p' = '0 ms', 'a' = '0 ms') */ p.customer, p.site, p.host, p.disk, p.`array`, p.volume,
            a.`model`, a.tier, p.`databases`
        FROM paths AS p JOIN arrays AS a ON a.`array` = p.`array`""",
    # a message of before issue 38 (one bucket, no arrays) left in the topic at an upgrade counts for nothing
    "array_ios": "SELECT * FROM histograms WHERE source = 'array' AND `buckets` IS NOT NULL",
    # the array side: each histogram row with its array's labels
    "labelled_ios": f"""
        SELECT /*+ STATE_TTL('h' = '{INVENTORY_WAIT}', 'a' = '0 ms') */ h.*, a.customer, a.`model`, a.tier
        FROM array_ios AS h JOIN arrays AS a ON a.`array` = h.`array`""",
}


# A window's histogram is one row (its buckets and their I/Os in two arrays): its good I/Os against a threshold,
# interpolated inside the bucket the threshold falls in, and its total (java/: GoodIos, TotalIos).
FUNCTIONS = {
    "good_ios": "io.sanlens.burnrates.GoodIos",
    "total_ios": "io.sanlens.burnrates.TotalIos",
    "pair_volume_windows": "io.sanlens.burnrates.PairVolumeWindows",
}


# The entity an SLO judges, as alerts, `./sanlens slo`, the report and the dashboards name it: a path is host:disk
# with a drive letter's own colon dropped (acme-sql2:D, as `./sanlens explain` takes it: acme-sql2:D: read as a
# name with a part missing), a host its name, a volume array:volume.
ENTITY = {
    "path": "x.host || ':' || TRIM(TRAILING ':' FROM x.disk)",
    "host": "x.host",
    "volume": "x.`array` || ':' || x.volume",
}


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _selects(slo: Slo, direction: bool = True) -> str:
    """Whether a row of the SLO's side belongs to the SLO: its direction and its `select` labels."""
    conditions = [f"x.direction = '{slo.direction}'"] if direction else ["TRUE"]
    for label, values in slo.select.items():
        if label == "database":
            conditions.append("(" + " OR ".join(f"ARRAY_CONTAINS(x.`databases`, {_quote(v)})" for v in values) + ")")
        else:
            conditions.append(f"x.`{label}` IN ({', '.join(map(_quote, values))})")
    return " AND ".join(conditions)


def _measures(slo: Slo) -> tuple[str, str]:
    """The SLO's threshold (host side: less what the path's host measured beyond the array's service time in
    the window, which shifts every I/O of it) and its objective, as SQL literals over a row `x`."""
    shift = " - x.beyond_array_us / 1000.0" if slo.side == "host" else ""
    return f"{slo.threshold_ms!r}E0{shift}", f"{slo.objective!r}E0"


def _output(slo: str, entity: str, path: str, threshold: str, objective: str) -> str:
    return f"""{slo} AS slo, {entity} AS entity, {path} AS `path`, x.site,
            CAST(TIMESTAMPDIFF(SECOND, TO_TIMESTAMP_LTZ(0, 3), x.window_start) AS BIGINT) * 1000 AS window_ms,
            x.window_start, good_ios(x.`buckets`, x.ios, {threshold}) AS good, total_ios(x.ios) AS total,
            {objective} AS objective"""


def _case(values: list[str]) -> str:
    return "CASE x.slo_index " + " ".join(f"WHEN {i} THEN {v}" for i, v in enumerate(values)) + " END"


def host_side(slos: list[Slo]) -> dict[str, str]:
    """The host side's SLOs in one keyed function, pair_volume_windows (java/), per volume: its histograms, its
    paths' latency windows, and its paths' labels (a row per placement of a path, with the SLOs it belongs to as
    "index:direction,..."). A path window meets its path's SLOs of its direction and the histogram of its window
    and direction there, each by a point lookup in the function's state. Filters per SLO on the windows' side
    would give each SLO joins of its own, each holding the windows again (the planner pushes an SLO's label filter
    below the joins), and filters per SLO on the histogram's side each its histogram rows; a join of the windows
    with the labels kept every window 20 s in its state (the job's busiest operator at 1,000 arrays,
    docs/benchmarks.md)."""
    memberships = ", ".join(
        f"CASE WHEN {_selects(slo, direction=False)} THEN '{i}:{slo.direction}' END" for i, slo in enumerate(slos)
    )
    nulls = {
        "window_start": "CAST(NULL AS TIMESTAMP_LTZ(3))",
        "direction": "CAST(NULL AS STRING)",
        "buckets": "CAST(NULL AS ARRAY<INT>)",
        "ios": "CAST(NULL AS ARRAY<BIGINT>)",
        "host": "CAST(NULL AS STRING)",
        "disk": "CAST(NULL AS STRING)",
        "beyond_array_us": "CAST(NULL AS DOUBLE)",
        "slos": "CAST(NULL AS STRING)",
    }

    def side(kind: str, source: str, has: tuple[str, ...], **values: str) -> str:
        columns = ", ".join(values.get(c, f"x.`{c}`" if c in has else nulls[c]) + f" AS `{c}`" for c in nulls)
        return f"SELECT '{kind}' AS kind, x.site, x.`array`, x.volume, {columns} FROM {source} AS x"

    sides = "\n        UNION ALL\n        ".join(
        [
            side("histogram", "array_ios", ("window_start", "direction", "buckets", "ios")),
            side("path", "path_windows", ("window_start", "direction", "host", "disk", "beyond_array_us")),
            side("label", "path_labels", ("host", "disk"), slos=f"CONCAT_WS(',', {memberships})"),
        ]
    )
    measures = [_measures(slo) for slo in slos]
    output = _output(
        _case([_quote(slo.name) for slo in slos]),
        _case([ENTITY[slo.per] for slo in slos]),
        "x.host || ':' || x.disk",
        _case([threshold for threshold, _ in measures]),
        _case([objective for _, objective in measures]),
    )
    return {
        "volume_sides": sides,
        # the uid changes with the layout of the function's state
        "host_ios": f"""
        SELECT {output}
        FROM pair_volume_windows(
            input => TABLE volume_sides PARTITION BY (site, `array`, volume), wait_ms => {JOIN_WAIT_MS},
            label_wait_ms => {INVENTORY_WAIT_S * 1000}, uid => 'volume-windows-2') AS x""",
    }


def array_side(slo: Slo) -> str:
    """An SLO of the array side: the histogram rows of the volumes it selects."""
    threshold, objective = _measures(slo)
    return f"""
        SELECT {_output(_quote(slo.name), ENTITY[slo.per], "''", threshold, objective)}
        FROM labelled_ios AS x WHERE {_selects(slo)}"""


def slo_views(d: Definitions) -> dict[str, str]:
    """The views of the SLOs' good and total I/Os per entity and window, `slo_ios` last."""
    host = [s for s in d.slos if s.side == "host"]
    views = host_side(host) if host else {}
    parts = (["SELECT * FROM host_ios"] if host else []) + [array_side(s) for s in d.slos if s.side == "array"]
    return {**views, "slo_ios": "\n        UNION ALL\n        ".join(parts)}


def rules(d: Definitions) -> str:
    """The alert rules as the process table function takes them: severity:burn rate:long s:short s, ..."""
    return ",".join(f"{a.severity}:{a.burn_rate(d.period_days)!r}:{a.long_s}:{a.short_s}" for a in d.alerts)


INSERT_WINDOWS = """
    INSERT INTO slo_windows
    SELECT slo, entity, `path`, site, window_start, good, total, objective FROM slo_ios"""


def insert_alerts(d: Definitions) -> str:
    # The uid changes with the layout of the function's state (-2: the rings in blocks of 60 slots): a stack
    # restored from an older checkpoint starts the burn rates afresh, where the old layout would be misread.
    return f"""
    INSERT INTO slo_alerts
    SELECT ts, slo, entity, site, severity, `state`, burn_5m, burn_30m, burn_1h, burn_2h, burn_6h, burn_1d, burn_3d,
        budget_left, period_good, period_total
    FROM evaluate_burn_rates(
        input => TABLE slo_ios PARTITION BY (slo, entity), rules => '{rules(d)}',
        period_days => {round(d.period_days)}, uid => 'burn-rates-2')"""


def sinks(kafka_sink: Callable[[str, str], str]) -> list[str]:
    json = "'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601'"
    return [
        f"""
    CREATE TABLE slo_windows (
        slo STRING, entity STRING, `path` STRING, site STRING, window_start TIMESTAMP_LTZ(3), good DOUBLE, total DOUBLE,
        objective DOUBLE
    ) WITH ({kafka_sink("slo_windows", topics.SLO_WINDOWS)}, {json})""",
        f"""
    CREATE TABLE slo_alerts (
        ts TIMESTAMP_LTZ(3), slo STRING, entity STRING, site STRING, severity STRING, `state` STRING, burn_5m DOUBLE,
        burn_30m DOUBLE, burn_1h DOUBLE, burn_2h DOUBLE, burn_6h DOUBLE, burn_1d DOUBLE, burn_3d DOUBLE,
        budget_left DOUBLE, period_good DOUBLE, period_total DOUBLE
    ) WITH ({kafka_sink("slo_alerts", topics.SLO_ALERTS)}, {json})""",
    ]
