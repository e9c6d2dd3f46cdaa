"""Load curves: each array's intervals as IOPS and MB/s against its service time, with the knee where the service
time bends; each host's batch requests/s and transactions/s against the latency it measures.

The knee is where a 1 % rise in load costs 1 % more service time: the elasticity of service time to IOPS, the
slope of the curve in logarithms, crosses 1. There, and only there, throughput over service time (Kleinrock's
"power") peaks, so the knee is found as the load bin of highest power: below it added load buys more throughput
than it costs latency, above it less (docs/domain.md, "Load curves"). A curve that never bends (power still highest
in the busiest bin, or less than BEND lower beyond its peak) has no knee.

The one query text the "Load and latency" dashboard (over its time range and selection) and `./sanlens report` (over
everything the store holds) run, from the arrays' and hosts' samples in sanlens.metrics: no dbt run is needed."""

from __future__ import annotations

BINS = 20  # load bins per array, of its busiest interval's IOPS: 5 % of the range each
MIN_INTERVALS = 3  # a bin with fewer intervals is noise, not a level the array held
BEND = 0.9  # a knee needs the power beyond it at least 10 % below its peak: a flat curve's noise is not a bend

# The samples each curve reads, as the columns they become (one row per entity and sample time).
ARRAY_SAMPLES = {"ios": "volume.ios", "bytes": "volume.bytes", "service_us": "volume.service_time"}
HOST_SAMPLES = {
    "batch": "sql.batch_requests",
    "tx": "sql.transactions",
    "reads": "disk.reads",
    "writes": "disk.writes",
    "read_us": "disk.read_latency",
    "write_us": "disk.write_latency",
}
KNEE_COLUMNS = (
    "site",
    "array",
    "intervals",
    "knee_iops",
    "knee_mbps",
    "knee_service_ms",
    "peak_iops",
    "peak_service_ms",
)


def samples(columns: dict[str, str], keys: str, where: str) -> str:
    """The rows of sanlens.metrics where `where` holds, one per `keys` (with ts), the metrics of `columns` as its
    columns (a metric's sum in the row, and how many samples it had as `<column>_samples`)."""
    pivot = "".join(
        f",\n        sumIf(value, metric = '{m}') AS {c}, countIf(metric = '{m}') AS {c}_samples"
        for c, m in columns.items()
    )
    metrics = ", ".join(f"'{m}'" for m in columns.values())
    return f"""
    SELECT {keys}, ts{pivot}
    FROM sanlens.metrics
    WHERE metric IN ({metrics}) AND {where}
    GROUP BY {keys}, ts"""


def array_intervals(where: str = "1") -> str:
    """Per site, array and sample (ts) where `where` holds: the array's IOPS and MB/s (its volumes summed) and its
    service time in ms (I/O-weighted over its volumes)."""
    return f"""
SELECT site, array, ts,
    sum(ios) AS iops,
    sum(bytes) / 1e6 AS mbps,
    sum(service_us * ios) / sum(ios) / 1000 AS service_ms
FROM ({samples(ARRAY_SAMPLES, "site, array, volume, host", where)}
)
GROUP BY site, array, ts
HAVING iops > 0"""


def array_knees(intervals: str) -> str:
    """Per site and array over `intervals` (array_intervals' query): KNEE_COLUMNS. The knee's figures are its load
    bin's (mean IOPS and MB/s, I/O-weighted service time), NULL where the curve does not bend; the peak's are the
    busiest bin's, where a saturated array's throughput stays."""
    knee = f"peak_power <= {BEND} * knee_power"
    return f"""
SELECT site, array, intervals,
    if({knee}, knee_bin_iops, NULL) AS knee_iops,
    if({knee}, knee_bin_mbps, NULL) AS knee_mbps,
    if({knee}, knee_bin_service_ms, NULL) AS knee_service_ms,
    peak_iops, peak_service_ms
FROM (
    SELECT site, array,
        sum(bin_intervals) AS intervals,
        max(power) AS knee_power,
        argMax(bin_iops, power) AS knee_bin_iops,
        argMax(bin_mbps, power) AS knee_bin_mbps,
        argMax(bin_service_ms, power) AS knee_bin_service_ms,
        argMax(power, bin) AS peak_power,
        argMax(bin_iops, bin) AS peak_iops,
        argMax(bin_service_ms, bin) AS peak_service_ms
    FROM (
        SELECT site, array, bin,
            count() AS bin_intervals,
            avg(iops) AS bin_iops,
            avg(mbps) AS bin_mbps,
            sum(service_ms * iops) / sum(iops) AS bin_service_ms,
            bin_iops / bin_service_ms AS power
        FROM (
            SELECT site, array, iops, mbps, service_ms,
                least(toUInt32(floor(iops * {BINS} / max(iops) OVER (PARTITION BY site, array))), {BINS - 1}) AS bin
            FROM ({intervals})
        )
        GROUP BY site, array, bin
        HAVING bin_intervals >= {MIN_INTERVALS}
    )
    GROUP BY site, array
)
ORDER BY site, array"""


def host_intervals(window: str, where: str = "1") -> str:
    """Per site, host and `window` (an expression of ts) where `where` holds: SQL Server's batch requests/s and
    transactions/s (its databases summed), each the mean of the window's samples, and the latency the host
    measures on its disks (Perfmon), I/O-weighted over its disks and both directions, in ms."""
    return f"""
SELECT site, host, {window} AS time,
    sum(batch) / uniqExactIf(ts, batch_samples > 0) AS batch_requests,
    sum(tx) / uniqExactIf(ts, tx_samples > 0) AS transactions,
    sum(read_us * reads + write_us * writes) / sum(reads + writes) / 1000 AS latency_ms
FROM ({samples(HOST_SAMPLES, "site, host, disk, database", where)}
)
GROUP BY site, host, time
HAVING batch_requests > 0 AND sum(reads + writes) > 0"""


def hosts_on_arrays(where: str) -> str:
    """The hosts with a path to the arrays of the volume samples where `where` holds: those the samples name."""
    return f"""
SELECT DISTINCT host FROM sanlens.metrics
WHERE metric = 'volume.ios' AND {where} AND host != ''"""


# The first {n} hosts (by name) with a path to arrays {arrays}.
HOSTS_ON_ARRAYS = f"""{hosts_on_arrays("array IN {arrays:Array(String)}")}
ORDER BY host LIMIT {{n:UInt32}}"""
