"""A host's health beside its latency: % Processor Time and SQL Server's transactions/s over a span (sanlens.metrics:
the means of the span's samples, as the dbt view host_health has them per minute), its HBA ports' queue depth
against its fleet's setting (the dbt view hba_queue_depths, the one definition of that setting: the value most of
the customer's HBA ports have), and the latency its disks and SQL Server's files measured. `./sanlens explain` and
the demo read them; the "Where the latency is" dashboard reads the same dbt views (grafana/host_health.py)."""

from __future__ import annotations

# Host {host}'s samples over {start} to {end} but the parts left out ({out_from} to {out_to}, epoch seconds)
SAMPLES = """
WITH samples AS (
    SELECT ts, metric, value, sql_instance FROM sanlens.metrics
    WHERE host = {host:String} AND metric IN ('host.cpu_busy', 'sql.transactions')
        AND ts >= {start:DateTime64(3)} AND ts < {end:DateTime64(3)}
        AND NOT arrayExists((f, t) -> toUnixTimestamp(ts) >= f AND toUnixTimestamp(ts) < t,
            {out_from:Array(Int64)}, {out_to:Array(Int64)})
)"""
# Over SAMPLES: % Processor Time, and transactions/s summed over the databases per sample, then the mean; Perfmon's
# (no sql_instance) and the DMV's counts of the same transactions are not added up: the larger is kept.
LOAD = (
    SAMPLES
    + """
SELECT
    (SELECT avg(value) FROM samples WHERE metric = 'host.cpu_busy') AS cpu_percent,
    (SELECT count() FROM samples WHERE metric = 'host.cpu_busy') AS cpu_samples,
    (SELECT max(per_s) FROM (
        SELECT sum(value) / uniqExact(ts) AS per_s FROM samples
        WHERE metric = 'sql.transactions' GROUP BY sql_instance != ''
    )) AS transactions_per_s
FROM system.one
"""
)
QUEUE_DEPTHS = """
SELECT host_port, queue_depth, fleet_queue_depth, ports_at_setting, fleet_ports, customer, differs
FROM sanlens_marts.hba_queue_depths
WHERE host = {host:String}
ORDER BY host_port
"""
HAS_QUEUE_DEPTHS = "SELECT count() FROM system.tables WHERE database = 'sanlens_marts' AND name = 'hba_queue_depths'"
# Per host of sites {sites} from {a} to {b}, in µs: the mean latency of its data disk (Perfmon, D:) each way and of
# SQL Server's file reads (the DMV), and the most I/Os its HBA had outstanding.
LATENCY_OF_SITES_IN_SPAN = """
SELECT host, round(avgIf(value, metric = 'disk.read_latency' AND disk = 'D:')) AS read_us,
       round(avgIf(value, metric = 'disk.write_latency' AND disk = 'D:')) AS write_us,
       round(avgIf(value, metric = 'file.read_latency')) AS dmv_read_us,
       round(maxIf(value, metric = 'hba.outstanding_ios')) AS max_outstanding
FROM sanlens.metrics
WHERE site IN {sites:Array(String)} AND host != '' AND ts BETWEEN {a:DateTime64(3)} AND {b:DateTime64(3)}
GROUP BY host ORDER BY host LIMIT 20"""
