"""Benchmark: how fresh each output is, as users run the stack: from the time of a row's samples to the row
queryable in ClickHouse (its `loaded_at`), p50 and p95, for a fleet played in real time.

`./sanlens demo` plays a fleet of `--arrays` arrays with `--hosts-per-array` SQL Server hosts each (two volumes
per host: data and log), sampled every 10 s, in real time (--speed 1) through the whole pipeline (simulator
-> Telegraf -> Kafka -> the Flink jobs -> loader -> ClickHouse), with a slow-drain port and an HBA saturation
planted. Then, for the run's site, per table: the delay of every row from the time of its samples (a metric's
`ts`, the end of the interval it measures; a window's start, which is the time of the samples it holds) to its
`loaded_at`. An incident's state is sent when the window after it arrives, so its delay holds one interval
more. The demo itself fails when the pipeline falls behind for good (no stage advancing for 120 s after the
playback); a fleet the stack cannot carry in real time shows as delays that grow with the run. Needs nothing
running: the demo brings the stack up.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_freshness [--minutes 5] [--arrays 4] [--hosts-per-array 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sanlensctl import config, db
from tests import scenarios
from tests.support import sanlens

DELAYS = """
SELECT count() AS n, quantile(0.5)(delay) AS p50, quantile(0.95)(delay) AS p95, max(delay)
FROM (SELECT dateDiff('millisecond', {end}, loaded_at) / 1000 AS delay FROM sanlens.{table}
      WHERE site = {{s:String}} AND {end} >= {{since:DateTime64(3)}})
"""
# A sample's two legs: from its timestamp to Kafka (Telegraf: a host's agent pushes when its interval ends and
# Telegraf flushes every second; an array or a switch waits for its next poll), and from Kafka to queryable.
LEGS = """
SELECT if(metric LIKE 'volume.%' OR metric LIKE 'port.%', 'polled (arrays, switches)', 'pushed (hosts)') AS kind,
    count(), quantile(0.5)(to_kafka), quantile(0.95)(to_kafka), quantile(0.5)(to_table), quantile(0.95)(to_table)
FROM (
    SELECT metric, dateDiff('millisecond', ts, arrived_at) / 1000 AS to_kafka,
        dateDiff('millisecond', arrived_at, loaded_at) / 1000 AS to_table
    FROM sanlens.metrics WHERE site = {s:String} AND ts >= {since:DateTime64(3)}
) GROUP BY kind ORDER BY kind
"""
TABLES = [  # (what, table, the time of its samples)
    ("samples (sanlens.metrics)", "metrics", "ts"),
    ("array histogram rows (service_time_hist_10s)", "service_time_hist_10s", "window_start"),
    ("path windows (sanlens.path_latency)", "path_latency", "window_start"),
    ("incident states (sanlens.path_incidents)", "path_incidents", "last_window"),
    ("SLO windows (sanlens.slo_windows)", "slo_windows", "window_start"),
]


EVER = datetime.fromtimestamp(0, UTC)


def print_delays(client, site: str, since: datetime = EVER) -> None:
    """Per table, the site's rows of samples from `since` on: count, and p50, p95 and max from the time of their
    samples to queryable."""
    print(f"{'rows':<48} {'count':>10} {'p50 s':>7} {'p95 s':>7} {'max s':>7}")
    for name, table, end in TABLES:
        query = DELAYS.format(table=table, end=end)
        n, p50, p95, top = client.query(query, parameters={"s": site, "since": since}).first_row
        print(f"{name:<48} {n:>10,} {p50:>7.1f} {p95:>7.1f} {top:>7.1f}")


def print_legs(client, site: str, since: datetime = EVER) -> None:
    """The site's samples from `since` on: p50 and p95 of their two legs, to Kafka and from Kafka to queryable."""
    legs = f"{'to Kafka p50':>13} {'p95':>6} {'Kafka to table p50':>19} {'p95':>6}"
    print(f"\n{'samples by leg':<32} {'count':>9} {legs}")
    for kind, n, k50, k95, t50, t95 in client.query(LEGS, parameters={"s": site, "since": since}).result_rows:
        print(f"{kind:<32} {n:>9,} {k50:>13.1f} {k95:>6.1f} {t50:>19.1f} {t95:>6.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--arrays", type=int, default=4)
    ap.add_argument("--hosts-per-array", type=int, default=2)
    args = ap.parse_args()
    run_id, duration = uuid.uuid4().hex[:5], int(args.minutes * 60)
    hosts = args.arrays * args.hosts_per_array
    with tempfile.TemporaryDirectory(dir=config.TMP) as folder:
        scenario = Path(folder) / "fleet.yaml"
        scenario.write_text(
            scenarios.text(
                "bench-freshness",
                id=run_id,
                duration=duration,
                arrays=args.arrays,
                hosts=args.hosts_per_array,
                ports=hosts + args.arrays + 8,
                drain_at=duration // 5,
                drain_until=2 * duration // 5,
                hba_at=3 * duration // 5,
                hba_until=4 * duration // 5,
            )
        )
        started = time.monotonic()
        out = sanlens("demo", "--scenario", str(scenario), "--speed", "1", timeout=duration + 1800)
        took = time.monotonic() - started
    if out.returncode != 0:
        print(out.stdout[-3000:] + out.stderr[-2000:], file=sys.stderr)
        return 1
    site, client = f"fresh-{run_id}-dc", db.client()
    print(
        f"played {duration} s in real time through the stack: {args.arrays} arrays, {hosts} SQL Server hosts, "
        f"{2 * hosts} volumes, every 10 s (site {site}); the demo took {took:.0f} s in all\n"
    )
    print_delays(client, site)
    print_legs(client, site)
    return 0


if __name__ == "__main__":
    sys.exit(main())
