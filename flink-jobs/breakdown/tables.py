"""Record types and SQL of the breakdown job: normalized samples (telemetry.samples) and the inventory
(inventory.topology) in, per window, path and direction the host's latency split into host queueing,
fabric, array and unexplained parts out (telemetry.breakdown). The method is in README.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flink_jobs.common.sql import samples_format, window_start
from ingest import topics

# metric -> direction, per source: the host's own latency and I/O rate, the array's service time
HOST_LATENCY = {"disk.read_latency": "read", "disk.write_latency": "write"}
HOST_RATE = {"disk.read_latency": "disk.reads", "disk.write_latency": "disk.writes"}  # latency -> its I/O rate
ARRAY_SERVICE = {"volume.read_service_time": "read", "volume.write_service_time": "write"}
HBA_OUTSTANDING = "hba.outstanding_ios"
PORT_STALL, PORT_DISCARDS = "port.tx_credit_zero", "port.c3_out_discards"
# A sample's partner in its own record (a disk's latency and rate, a port's stall and discards): the format puts
# the partner's value in the sample's row (`paired`), so they meet where the message is read, not in a join.
PAIRS = {**HOST_RATE, PORT_STALL: PORT_DISCARDS}
METRICS = [*HOST_LATENCY, *ARRAY_SERVICE, HBA_OUTSTANDING, PORT_STALL]  # what the job reads
# How long a sample waits for its window's other parts (processing time): the state time-to-live of
# join_window_parts, which holds a window's parts and its paths waiting for them. Live, every source of a window
# arrives within about 20 s (Telegraf's 10 s interval and flush); a backfill sends them together, but the job's
# subtasks read their partitions at their own paces, and on a loaded machine one ran more than a minute ahead: at
# 1 minute the SLO scenario's backfill lost 80 simulated minutes of a host's windows. The wait is what the state
# holds, in RocksDB on disk (issue 38).
SAMPLE_WAIT = "5 min"
PARTS_CLASS = "io.sanlens.breakdown.JoinWindowParts"


@dataclass(frozen=True)
class Method:
    """The figures the attribution rests on (README.md, "Method"); each is a job argument."""

    window_s: int = 10  # the sources' collection interval: one sample per series and window
    host_interval_s: int = 10  # the host agents' collection interval: I/Os = rate x interval
    min_ios: int = 100  # per window and direction: fewer I/Os and the interval average is noise
    host_stack_us: float = 15.0  # the host's own stack, before any queueing
    hop_us: float = 20.0  # per switch hop
    km_us: float = 5.0  # per km of fibre
    hba_busy: float = 0.2  # outstanding / queue depth from which the HBA counts as congested
    port_stall: float = 0.01  # share of time at zero transmit credit from which a port counts as stalling


def _names(metrics) -> str:
    return ", ".join(f"'{m}'" for m in metrics)


def _case(column: str, mapping: dict[str, str]) -> str:
    return f"CASE {column} " + " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in mapping.items()) + " END"


def samples(kafka_options: str) -> str:
    """`telemetry.samples` (docs/contract.md)."""
    return f"""
    CREATE TABLE samples (
        ts TIMESTAMP_LTZ(3), metric STRING, `value` DOUBLE, site STRING, host STRING, disk STRING,
        `array` STRING, volume STRING, host_port STRING, switch STRING, port STRING, paired DOUBLE
    ) WITH ({kafka_options}, {samples_format(METRICS, PAIRS)})"""


def topology(kafka_options: str) -> str:
    """`inventory.topology`, every version of every entity; `valid_from` is ISO-8601 with an offset."""
    return f"""
    CREATE TABLE topology (
        kind STRING, valid_from STRING, customer STRING, site STRING, host STRING, disk STRING,
        host_port STRING, queue_depth INT, switch STRING, host_switch_port STRING, array_switch_port STRING,
        hops INT, distance_km DOUBLE, `array` STRING, volume STRING
    ) WITH ({kafka_options}, 'format' = 'json', 'json.ignore-parse-errors' = 'true')"""


def sink(kafka_sink: Callable[[str, str], str]) -> str:
    return f"""
    CREATE TABLE breakdown (
        `path` STRING, window_start TIMESTAMP_LTZ(3), window_s INT, customer STRING, site STRING, host STRING,
        disk STRING, direction STRING, host_port STRING, switch STRING, host_switch_port STRING,
        array_switch_port STRING, `array` STRING, volume STRING, path_valid_from TIMESTAMP_LTZ(3), ios BIGINT,
        host_us DOUBLE, host_queueing_us DOUBLE, fabric_us DOUBLE, array_us DOUBLE, unexplained_us DOUBLE,
        hba_busy DOUBLE, port_stall DOUBLE, port_discards DOUBLE
    ) WITH ({kafka_sink("breakdown", topics.BREAKDOWN)},
            'key.format' = 'raw', 'key.fields' = 'path', 'value.fields-include' = 'EXCEPT_KEY',
            'value.format' = 'json', 'value.json.timestamp-format.standard' = 'ISO-8601')"""


def views(m: Method) -> dict[str, str]:
    """The job's views, in the order they are registered: each source's samples placed in the window
    their interval ends in, and every version of every path of the inventory."""
    window = window_start("ts", m.window_s)
    return {
        # A host disk's latency with its I/O rate of the same record.
        "host_windows": f"""
            SELECT {window} AS window_start, site, host, disk, {_case("metric", HOST_LATENCY)} AS direction,
                `value` AS host_us, CAST(ROUND(paired * {m.host_interval_s}, 0) AS BIGINT) AS ios
            FROM samples
            WHERE metric IN ({_names(HOST_LATENCY)}) AND paired * {m.host_interval_s} >= {m.min_ios}""",
        "array_windows": f"""
            SELECT {window} AS window_start, site, `array`, volume, {_case("metric", ARRAY_SERVICE)} AS direction,
                `value` AS array_us
            FROM samples WHERE metric IN ({_names(ARRAY_SERVICE)})""",
        "hba_windows": f"""
            SELECT {window} AS window_start, site, host, host_port, `value` AS outstanding
            FROM samples WHERE metric = '{HBA_OUTSTANDING}'""",
        # tx_credit_zero is in us at zero transmit credit per s: / 1e6 is the stalled share of the time
        "port_windows": f"""
            SELECT {window} AS window_start, site, switch, port, `value` / 1e6 AS stall, paired AS discards
            FROM samples WHERE metric = '{PORT_STALL}' AND paired IS NOT NULL""",
        "paths": """
            SELECT customer, site, host, disk, host_port, queue_depth, switch, host_switch_port, array_switch_port,
                hops, distance_km, `array`, volume,
                TO_TIMESTAMP_LTZ(valid_from, 'yyyy-MM-dd''T''HH:mm:ss.SSSXXX') AS valid_from
            FROM topology WHERE kind = 'path'""",
    }


# The keys the parts of a window go by, as a path names them (join_window_parts puts the window before each, and
# the direction after a volume's)
VOLUME_PART = "'a|' || `array` || '|' || volume"
HBA_PART = "'b|' || host || '|' || host_port"


def _port_part(port: str) -> str:
    return f"'p|' || switch || '|' || {port}"


# window_parts' columns, each as a kind of row that lacks it has it
_COLUMNS = {
    "window_start": "TIMESTAMP_LTZ(3)",
    "customer": "STRING",
    "host": "STRING",
    "disk": "STRING",
    "direction": "STRING",
    "host_port": "STRING",
    "queue_depth": "INT",
    "switch": "STRING",
    "host_switch_port": "STRING",
    "array_switch_port": "STRING",
    "hops": "INT",
    "distance_km": "DOUBLE",
    "array": "STRING",
    "volume": "STRING",
    "valid_from": "TIMESTAMP_LTZ(3)",
    "host_us": "DOUBLE",
    "ios": "BIGINT",
    "array_part": "STRING",
    "hba_part": "STRING",
    "host_port_part": "STRING",
    "array_port_part": "STRING",
    "part": "STRING",
    "v1": "DOUBLE",
    "v2": "DOUBLE",
}


def _rows(kind: str, source: str, **values: str) -> str:
    """A kind of window_parts' rows from `source`: its columns of `values` (a column's name for itself), the
    others NULL."""
    columns = ", ".join(f"{values[c] if c in values else f'CAST(NULL AS {t})'} AS `{c}`" for c, t in _COLUMNS.items())
    return f"SELECT '{kind}' AS kind, site, {columns} FROM {source}"


def _same(*columns: str) -> dict[str, str]:
    return {c: f"`{c}`" for c in columns}


# Every version of every path, each host disk's window and the parts of each window in one table, so that
# join_window_parts (java/) meets them in one keyed function: a window with every version of its path that began
# before it (sanlens.path_latency keeps the latest of them: the path as of the window), and each with its parts.
WINDOW_PARTS = "\n    UNION ALL ".join(
    [
        _rows(
            "version",
            "paths",
            **_same(
                "customer",
                "host",
                "disk",
                "host_port",
                "queue_depth",
                "switch",
                "host_switch_port",
                "array_switch_port",
                "hops",
                "distance_km",
                "array",
                "volume",
                "valid_from",
            ),
            array_part=VOLUME_PART,
            hba_part=HBA_PART,
            host_port_part=_port_part("host_switch_port"),
            array_port_part=_port_part("array_switch_port"),
        ),
        _rows("host", "host_windows", **_same("window_start", "host", "disk", "direction", "host_us", "ios")),
        _rows(
            "part",
            "array_windows",
            window_start="window_start",
            part=f"{VOLUME_PART} || '|' || direction",
            v1="CAST(array_us AS DOUBLE)",
        ),
        _rows("part", "hba_windows", window_start="window_start", part=HBA_PART, v1="CAST(outstanding AS DOUBLE)"),
        _rows(
            "part",
            "port_windows",
            window_start="window_start",
            part=_port_part("port"),
            v1="CAST(stall AS DOUBLE)",
            v2="CAST(discards AS DOUBLE)",
        ),
    ]
)
# How long a host disk's window waits for its path's versions (processing time): the inventory is read whole at
# every start, and a path is published once (its versions are kept without a time-to-live).
VERSION_WAIT_MS = 20_000


def path_windows(m: Method) -> str:
    """Each host disk's window on its path with its volume, its HBA and both of its switch ports, as soon as all
    its parts are in: nothing waits for a watermark and nothing arriving late or out of order is dropped;
    append-only. What the host measured beyond the array's service time, the nominal fabric and the host stack is
    the excess; it goes to the contributor whose own counters show trouble, shared when both do, or to
    `unexplained` when none does."""
    nominal_fabric = f"(p.hops * {m.hop_us} + p.distance_km * {m.km_us})"
    excess = f"(p.host_us - p.array_us - {nominal_fabric} - {m.host_stack_us})"
    busy = "(p.outstanding / p.queue_depth)"  # the HBA's occupancy
    host_evidence = f"({busy} >= {m.hba_busy})"
    stall = "GREATEST(p.host_port_stall, p.array_port_stall)"
    discards = "p.host_port_discards + p.array_port_discards"
    fabric_evidence = f"({stall} >= {m.port_stall} OR {discards} > 0)"
    shares = f"(CAST({host_evidence} AS INT) + CAST({fabric_evidence} AS INT))"  # contributors with evidence
    attributed = f"CASE WHEN {shares} > 0 THEN GREATEST({excess}, 0) / {shares} ELSE 0 END"
    return f"""
    SELECT
        p.window_start, {m.window_s} AS window_s, p.customer, p.site, p.host, p.disk, p.direction, p.host_port,
        p.switch, p.host_switch_port, p.array_switch_port, p.`array`, p.volume, p.valid_from AS path_valid_from,
        p.ios, p.host_us,
        {m.host_stack_us} + CASE WHEN {host_evidence} THEN {attributed} ELSE 0 END AS host_queueing_us,
        {nominal_fabric} + CASE WHEN {fabric_evidence} THEN {attributed} ELSE 0 END AS fabric_us,
        p.array_us,
        {excess} - CASE WHEN {shares} > 0 THEN GREATEST({excess}, 0) ELSE 0 END AS unexplained_us,
        {busy} AS hba_busy, {stall} AS port_stall, {discards} AS port_discards,
        {nominal_fabric} AS nominal_fabric_us,
        p.host_port_stall >= {m.port_stall} OR p.host_port_discards > 0 AS host_switch_port_stalls,
        p.host_port_discards AS host_switch_port_discards,
        p.array_port_stall >= {m.port_stall} OR p.array_port_discards > 0 AS array_switch_port_stalls,
        p.array_port_discards AS array_switch_port_discards
    FROM join_window_parts(
        input => TABLE window_parts PARTITION BY site, version_wait_ms => {VERSION_WAIT_MS}, uid => 'window-parts-3'
    ) AS p"""


PARTS = ("host_queueing_us", "fabric_us", "array_us", "unexplained_us")  # they add up to host_us
BREAKDOWN_COLUMNS = """window_start, window_s, customer, site, host, disk, direction, host_port, switch,
    host_switch_port, array_switch_port, `array`, volume, path_valid_from, ios, host_us, host_queueing_us,
    fabric_us, array_us, unexplained_us, hba_busy, port_stall, port_discards"""
# keyed by the path (host:disk): a path's windows stay in one partition of telemetry.breakdown, in order
INSERT_BREAKDOWN = f"INSERT INTO breakdown SELECT host || ':' || disk, {BREAKDOWN_COLUMNS} FROM path_windows"


# Incidents (README.md, "Incidents"): each path window gives every contributor on its way its part: the host
# its queueing; each of its two switch ports the fabric part if that port shows the trouble, else the nominal
# fabric; the array its service time. One row per path window with a column group per contributor (the slots of
# DetectIncidents.SLOTS): the detector follows each contributor and component of a path in one partition.
def _slot(slot: str, component: str, value: str, discards: str = "CAST(0 AS DOUBLE)") -> str:
    return (
        f"{component} AS {slot}_component, CAST({value} AS DOUBLE) AS {slot}_us, "
        f"CAST({discards} AS DOUBLE) AS {slot}_discards"
    )


def _port_slot(slot: str, port: str) -> str:
    return _slot(
        slot,
        f"p.switch || ':' || p.{port}",
        f"CASE WHEN p.{port}_stalls THEN p.fabric_us ELSE p.nominal_fabric_us END",
        f"p.{port}_discards",
    )


INCIDENT_WINDOWS = f"""
    SELECT p.host || ':' || p.disk || ':' || p.direction AS path, p.ios, p.site,
        CAST(TIMESTAMPDIFF(SECOND, TO_TIMESTAMP_LTZ(0, 3), p.window_start) AS BIGINT) * 1000 AS window_ms,
        {_slot("host", "p.host", "p.host_queueing_us")},
        {_port_slot("host_port", "host_switch_port")},
        {_port_slot("array_port", "array_switch_port")},
        {_slot("array", "p.`array`", "p.array_us")}
    FROM path_windows AS p"""


@dataclass(frozen=True)
class Incidents:
    """How an incident is told from the data (README.md, "Incidents"); each is a job argument."""

    history_windows: int = 360  # the baseline's memory: the last hour of normal 10 s windows
    warmup_windows: int = 6  # no verdict before a component has this many normal windows
    quantile: float = 0.1  # the baseline is this quantile of the history: a slow climb is not learnt as normal
    relative_margin: float = 0.25  # a window is above the baseline by more than this share of it ...
    absolute_margin_us: float = 20.0  # ... and by more than this many us
    open_after: int = 2  # windows above in a row that open an incident (it starts at the first)
    close_after: int = 2  # normal windows in a row that close it (it ends where its last window above ends)


def insert_incidents(i: Incidents, window_s: int) -> str:
    # The uid changes with the layout of the function's state (-2: the history apart from the track; -3: a path's
    # contributors in one partition): a stack restored from an older checkpoint starts the detector afresh, where
    # the old layout would fail the restore.
    return f"""
    INSERT INTO incidents
    SELECT contributor, component, path, incident_id, site, started_at, ended_at, last_window, windows, ios,
        baseline_us, excess_us, peak_us, severity
    FROM detect_incidents(
        input => TABLE incident_windows PARTITION BY path,
        window_length_ms => {window_s * 1000},
        history_windows => {i.history_windows}, warmup_windows => {i.warmup_windows}, quantile => {i.quantile!r}E0,
        relative_margin => {i.relative_margin!r}E0, absolute_margin_us => {i.absolute_margin_us!r}E0,
        open_after => {i.open_after}, close_after => {i.close_after}, uid => 'incidents-3')"""


def incidents_sink(kafka_sink: Callable[[str, str], str]) -> str:
    return f"""
    CREATE TABLE incidents (
        contributor STRING, component STRING, path STRING, incident_id STRING, site STRING,
        started_at TIMESTAMP_LTZ(3), ended_at TIMESTAMP_LTZ(3), last_window TIMESTAMP_LTZ(3), windows INT,
        ios BIGINT, baseline_us DOUBLE, excess_us DOUBLE, peak_us DOUBLE, severity STRING
    ) WITH ({kafka_sink("incidents", topics.INCIDENTS)},
            'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601')"""
