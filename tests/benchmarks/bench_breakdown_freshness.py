"""Benchmark: how fresh the breakdown and its incidents are, as users run them: from a window's samples (the
end of the interval they measure, which is the window's start) to its row queryable in ClickHouse, p50 and p95.

`./sanlens demo` plays a small fleet in real time (--speed 1) through the whole pipeline (simulator ->
Telegraf -> Kafka -> normalize -> breakdown -> loader -> ClickHouse), with a slow-drain port and an HBA
saturation planted. Then, for the run's site: every path window's delay (sanlens.path_latency: loaded_at -
window_start, the time of its samples) and every incident state's (sanlens.path_incidents, every state the
job sent: loaded_at - the time of the window it reports). An incident's state is sent when the window after
it arrives, so its delay holds one interval more. Needs nothing running: the demo brings the stack up.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_breakdown_freshness [--minutes 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

from sanlensctl import config, db
from tests.support import sanlens

FLEET = """
name: bench-fresh-{id}
seed: 5
interval_s: 10
duration_s: {duration}
customers:
  - name: fresh-{id}
    sites:
      - name: fresh-{id}-dc
        switches: [{{name: fresh-{id}-fa1, ports: 32}}]
        arrays: [{{count: 4, name: "fresh-{id}-af{{i}}", model: AF8000, media: ssd, firmware: 3.2.1}}]
        hosts: [{{per_array: 2, name: "{{array}}-sql{{j}}", workload: oltp, iops: 5000}}]
events:
  - {{type: slow_drain, at: {drain_at}, until: {drain_until}, switch: fresh-{id}-fa1, port: 0, delay_us: 1000}}
  - {{type: hba_saturation, at: {hba_at}, until: {hba_until}, host: fresh-{id}-af2-sql1, workload: datamining}}
"""
DELAYS = """
SELECT count() AS n, quantile(0.5)(delay) AS p50, quantile(0.95)(delay) AS p95
FROM (SELECT dateDiff('millisecond', {end}, loaded_at) / 1000 AS delay FROM sanlens.{table} WHERE site = {{s:String}})
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5)
    args = ap.parse_args()
    run_id, duration = uuid.uuid4().hex[:5], int(args.minutes * 60)
    with tempfile.TemporaryDirectory(dir=config.TMP) as folder:
        scenario = Path(folder) / "fleet.yaml"
        scenario.write_text(
            FLEET.format(
                id=run_id,
                duration=duration,
                drain_at=duration // 5,
                drain_until=2 * duration // 5,
                hba_at=3 * duration // 5,
                hba_until=4 * duration // 5,
            )
        )
        out = sanlens("demo", "--scenario", str(scenario), "--speed", "1", timeout=duration + 900)
    if out.returncode != 0:
        print(out.stdout[-3000:] + out.stderr[-2000:], file=sys.stderr)
        return 1
    site, client = f"fresh-{run_id}-dc", db.client()
    print(f"played {duration} s in real time through the stack (site {site})\n")
    print(f"{'rows':<44} {'count':>7} {'p50 s':>7} {'p95 s':>7}")
    for name, table, end in [
        ("path windows (sanlens.path_latency)", "path_latency", "window_start"),
        ("incident states (sanlens.path_incidents)", "path_incidents", "last_window"),
    ]:
        n, p50, p95 = client.query(DELAYS.format(table=table, end=end), parameters={"s": site}).first_row
        print(f"{name:<44} {n:>7,} {p50:>7.1f} {p95:>7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
