"""Benchmark: busy dashboards. 16 clients run every dashboard's own SQL while the demo ingests.

Against the running stack (`./sanlens up` first), the script starts `./sanlens demo` (a live fleet played
at `--speed`, long enough to ingest through the whole run; `--no-demo` when you run your own ingest), lets
it ingest for `--baseline` seconds, then `--clients` threads, each with its own clickhouse-connect client,
loop over every query of every dashboard in grafana/dashboards/ (each panel's targets, each query
variable, each annotation: what Grafana sends on a refresh), with the ClickHouse plugin's macros expanded
over the dashboard's own default time range ending now and every variable on "All", for `--minutes`.
Meanwhile the loader's lag (messages on its topics that its consumer group has not committed) is sampled
every `--sample` seconds, before, during and after the load; after it, until the demo ended and the
loader caught up.

Prints each query's p50/p95/max latency and the lag's figures; exits 1 on any query error, when the lag
went above `--max-lag` during the load, or did not come back under `--caught-up` within `--drain` s.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_dashboard_load [--minutes 5] [--clients 16]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from sanlensctl import config, db
from tests.dashboard_load import DASHBOARDS, Lag, Load, alone, dashboard_queries, report, report_lag
from tests.support import ROOT


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--baseline", type=float, default=60, help="seconds of ingest before the load")
    ap.add_argument("--speed", type=float, default=10, help="the demo's speed")
    ap.add_argument("--no-demo", action="store_true", help="do not start ./sanlens demo: ingest is yours")
    ap.add_argument("--sample", type=float, default=5, help="seconds between samples of the loader's lag")
    ap.add_argument("--max-lag", type=int, default=50_000, help="most messages behind the loader may be")
    ap.add_argument("--caught-up", type=int, default=100, help="the lag the loader must come back under")
    ap.add_argument("--drain", type=float, default=300, help="seconds it has for that after the load")
    args = ap.parse_args()
    try:
        db.client(connect_timeout=2).command("SELECT 1")
        Lag.now()
    except Exception as exc:
        print(f"bench_dashboard_load: error: the stack is not up ({exc}): start it with ./sanlens up")
        return 1
    queries = dashboard_queries()
    boards = len(list(DASHBOARDS.glob("*.json")))
    print(f"{len(queries)} queries from {boards} dashboards, {args.clients} clients, {args.minutes:g} min; "
          f"ClickHouse {config.CLICKHOUSE_URL}; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    try:
        solo = alone(queries, 3)
    except Exception as exc:
        print(f"bench_dashboard_load: error: a dashboard query fails on its own ({str(exc)[:300]}): "
              "fill the stack first (./sanlens demo: data and the dbt marts)")  # fmt: skip
        return 1
    print(f"each query alone, one client, 3 runs: median {statistics.median(solo.values()) * 1000:.0f} ms")
    demo = None
    if not args.no_demo:
        seconds = int(args.baseline + args.minutes * 60 + 60)
        log = open(config.RUN / "bench_dashboard_load.demo.log", "w")
        demo = subprocess.Popen([str(ROOT / "sanlens"), "demo", "--duration", str(seconds), "--speed", str(args.speed)],
                                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)  # fmt: skip
        print(f"./sanlens demo --duration {seconds} --speed {args.speed:g} started (its output: {log.name})")
    lag = Lag(args.sample).start()
    time.sleep(args.baseline)
    lag.phase = "during"
    load = Load(queries, args.clients).start()
    time.sleep(args.minutes * 60)
    load.stop()
    lag.phase = "after"
    report(load, solo)
    if demo:
        demo.wait()
    deadline = time.monotonic() + args.drain
    while time.monotonic() < deadline and (lag.last("after") is None or lag.last("after") > args.caught_up):
        time.sleep(args.sample)
    lag.stop()
    report_lag(lag)
    failures = [f"{len(load.errors)} query errors"] if load.errors else []
    if max(lag.of("during"), default=0) > args.max_lag:
        failures.append(f"the loader's lag went above {args.max_lag:,} during the load")
    if (lag.last("after") or 0) > args.caught_up:
        failures.append(f"the loader was still {lag.last('after'):,} behind {args.drain:g} s after the load")
    if demo and demo.returncode:
        failures.append(f"./sanlens demo exited {demo.returncode}")
    print("\nFAILED: " + "; ".join(failures) if failures else "\nPASSED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
