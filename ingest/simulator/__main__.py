"""python -m ingest.simulator: play a scenario file through the pipeline, or write its Telegraf pollers.

python -m ingest.simulator --scenario ingest/scenarios/demo.yaml --backfill --truth DIR
python -m ingest.simulator --scenario F --speed 10 --duration 600     (needs Telegraf, see README)
python -m ingest.simulator --scenario F --pollers FILE --port 8095    (Telegraf config for the fleet)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ingest import settings
from ingest.telegraf import pollers

from . import scenario as scenario_file
from .endpoints import Endpoints
from .run import Run


def telegraf_pollers(s: scenario_file.Scenario, base_url: str, interval_s: float) -> str:
    interval = f"{max(1, round(interval_s))}s"
    return pollers.render(
        [(a.name, a.site, a.media == "hybrid") for a in s.arrays.values()],
        [(w.name, w.site) for w in s.switches.values()],
        base_url,
        interval,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ingest.simulator", description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", required=True, type=Path)
    ap.add_argument("--backfill", action="store_true", help="produce straight to Kafka, as fast as possible")
    ap.add_argument("--speed", type=float, default=1.0, help="simulated seconds per wall-clock second")
    ap.add_argument("--duration", type=float, help="simulated seconds (default: the scenario's duration_s)")
    ap.add_argument("--hours", type=float, help="backfill span in hours (same as --duration 3600*H)")
    ap.add_argument("--truth", type=Path, default=settings.RUN / "simulator")
    ap.add_argument("--kafka", default=settings.KAFKA_BOOTSTRAP)
    ap.add_argument("--telegraf", default=f"127.0.0.1:{settings.port('TELEGRAF_LISTENER')}")
    ap.add_argument(
        "--port",
        type=int,
        default=settings.port("SIMULATOR"),
        help="port of the arrays' and switches' endpoints",
    )
    ap.add_argument("--pollers", type=Path, help="write the Telegraf poller config for this fleet and exit")
    args = ap.parse_args(argv)
    try:
        s = scenario_file.load(args.scenario)
    except (OSError, ValueError, KeyError) as exc:
        print(f"simulator: error: {args.scenario}: {exc}", file=sys.stderr)
        return 2
    if args.pollers:
        args.pollers.write_text(telegraf_pollers(s, f"http://127.0.0.1:{args.port}", s.interval_s / args.speed))
        return 0
    duration = args.hours * 3600 if args.hours else args.duration
    run = Run(s, args.truth, args.kafka, duration, args.speed, args.backfill)
    t0 = time.monotonic()

    def progress(i: int, sent: int) -> None:
        if i % max(1, run.intervals // 20) == 0 or i == run.intervals:
            print(
                f"  interval {i}/{run.intervals}  records {sent}  {sent / (time.monotonic() - t0):,.0f}/s", flush=True
            )

    if args.backfill:
        run.backfill(progress)
    else:
        endpoints = Endpoints(run.fleet, run.truth, run.lock, args.port).start()
        host, port = args.telegraf.rsplit(":", 1)
        try:
            run.realtime((host, int(port)), progress)
        finally:
            endpoints.stop()
    run.close()
    print(f"{run.sent} records; ground truth in {args.truth}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
