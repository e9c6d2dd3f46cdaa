"""Benchmark: freshness at an install base's cadence, the agents elsewhere: `--arrays` arrays of 50 volumes (25 SQL
Server hosts each, two volumes per host) and their switch, every series sampled every 10 s (`--interval`), sent into
Kafka as their agents send it (each interval's records when the interval ends), with the whole stack running as
users run it. Prints, per table, p50 and p95 from the time of a row's samples to the row queryable in ClickHouse (as
bench_freshness), and whether the stack kept up: the delays of the last minute against the first.

1. The fleet's intervals are made ahead of their time (the simulator's backfill, its clock starting a little after
   the making ends) into a topic apart with one partition, so they read back in the order they were made.
2. Played: at the end of each interval, its records are copied into telemetry.metrics (keys kept), as fast as the
   broker takes them. Telegraf and the simulator, which run on the hosts and pollers in a real install base, take
   no CPU here; the copy does (about what the agents' sends cost the broker anyway).
3. After the last interval: until every record is accounted for and every sample out is queryable (or
   `--timeout`), then until every Flink job has caught up (its peak lag, peak memory), then the delays: of every
   sample and every analytics row, and the CPU seconds each process of the stack spent from the first interval
   measured on, until the last sample was queryable and until every job had caught up. The run's rows are deleted
   at the end.

With `--warmup W`, the same fleet plays W minutes before the measured ones, and only those are measured: the steady
state of a stack that already carries the fleet (its JIT compiled, its series known), not a fresh stack's first
minutes.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_install_base [--arrays 100] [--minutes 2] [--warmup 0]
        [--interval 10]

Needs `./sanlens up`. 1,000 arrays × 50 volumes send about 35,000 records and 550,000 samples a second at 10 s,
a sixth of that at 60 s (Harvest's default poll).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka.admin import NewTopic

from ingest import topics
from ingest.loader import spans
from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config, db, stack
from tests import backlog, scenarios
from tests.benchmarks.bench_backfill_cpu import cpu_by_process
from tests.benchmarks.bench_common import copy, fresh_topics, reader, require_stack
from tests.benchmarks.bench_end_to_end import Progress
from tests.benchmarks.bench_freshness import print_delays, print_legs
from tests.support import copier

VOLUMES_PER_ARRAY = 50
# A sample's delay in the first and in the last minute played: a stack that keeps up has the same in both.
DRIFT = """
SELECT quantileIf(0.95)(delay, ts >= {first:DateTime64(3)} AND ts < {first:DateTime64(3)} + 60),
    quantileIf(0.95)(delay, ts > {last:DateTime64(3)} - 60)
FROM (SELECT ts, dateDiff('millisecond', ts, loaded_at) / 1000 AS delay FROM sanlens.metrics WHERE site = {s:String})
"""
# records/s the simulator makes at least, for when the played clock starts (about 39,000 on 2026-11-26, under
# 25,000 on 2026-11-28)
MAKE_RATE = 15_000


def make_intervals(run_id: str, arrays: int, minutes: float, interval_s: int, topic: str) -> tuple[float, list[int]]:
    """The fleet's intervals into `topic`, timed to start once they are made: the start (epoch seconds) and the
    records to send at start + interval × k (k = 0 is the pollers' baseline)."""
    intervals = max(int(minutes * 60) // interval_s, 3)
    start = int(time.time() + 20 + (intervals + 1) * arrays * 350 / MAKE_RATE)  # 350 records an array and interval
    with tempfile.TemporaryDirectory(dir=config.TMP) as work:
        fleet = Path(work) / "fleet.yaml"
        fleet.write_text(
            scenarios.text(
                "bench-install-base",
                id=run_id,
                interval=interval_s,
                duration=intervals * interval_s,
                arrays=arrays,
                hosts=VOLUMES_PER_ARRAY // 2,
            )
        )
        run = Run(
            scenario_file.load(fleet),
            Path(work) / "truth",
            config.KAFKA_BOOTSTRAP,
            backfill=True,
            topic=topic,
            start_s=start,
        )
        sent: list[int] = []
        run.backfill(lambda _, total: sent.append(total))
        run.close()
    if time.time() > start:
        sys.exit(
            f"bench_install_base: error: making the intervals took past their start; lower MAKE_RATE ({MAKE_RATE})"
        )
    per_interval = [b - a for a, b in zip(sent, sent[1:])]
    if len(set(per_interval)) != 1:
        sys.exit(f"bench_install_base: error: intervals of different sizes {sorted(set(per_interval))}")
    return start, [sent[0] - per_interval[0], per_interval[0], *per_interval]


def play(source: str, start: float, phases: list[int], interval_s: int, measured: int) -> tuple[float, dict]:
    """Each phase's records from `source` into telemetry.metrics at start + interval × k; the CPU seconds the copy
    took, and the CPU seconds of the stack's processes when phase `measured` is due."""
    consumer, producer, cpu0 = reader(source), copier(), time.process_time()
    cpu_before = {}
    for k, count in enumerate(phases):
        due = start + k * interval_s
        if k == measured:
            cpu_before = cpu_by_process()
        if time.time() > due + 1:
            sys.exit(f"bench_install_base: error: interval {k} due {time.time() - due:.1f} s ago: the copy is behind")
        time.sleep(max(0.0, due - time.time()))
        copy(consumer, producer, topics.METRICS, count)
        print(
            f"  {time.time() - start:5.0f} s: interval {k}: {count:,} records sent in {time.time() - due:.1f} s",
            flush=True,
        )
    consumer.close()
    return time.process_time() - cpu0, cpu_before


def settle(client, site: str, records: int, timeout_s: float) -> tuple[float, int]:
    """Seconds until every record is accounted for and every sample out is queryable, and the samples decoded."""
    progress, started = Progress(client, [site]), time.time()
    while time.time() - started < timeout_s:
        accounted = progress.accounted()
        if accounted.get(("records", "in"), 0) == records and progress.queryable() == accounted.get(("samples", "out")):
            return time.time() - started, accounted.get(("samples", "in"), 0)
        time.sleep(2)
    sys.exit(
        f"bench_install_base: error: the run's samples not all queryable {timeout_s:.0f} s after the last interval"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arrays", type=int, default=100)
    ap.add_argument("--minutes", type=float, default=2, help="minutes played and measured (2)")
    ap.add_argument("--warmup", type=float, default=0, help="minutes of the same fleet played before, not measured (0)")
    ap.add_argument("--interval", type=int, default=10, help="seconds between two samples of a series (10)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds to wait after the last interval (1800)")
    args = ap.parse_args()
    require_stack("bench_install_base")
    run_id = uuid.uuid4().hex[:5]
    held, site, client = f"bench-{run_id}.intervals", f"ib-{run_id}-dc", db.client()
    admin = fresh_topics("bench_install_base", [NewTopic(held, 1, 1)])
    try:
        t0 = time.time()
        print(f"making {args.warmup + args.minutes:g} min of {args.arrays} arrays' intervals into {held}", flush=True)
        start, phases = make_intervals(run_id, args.arrays, args.warmup + args.minutes, args.interval, held)
        measured = round(args.warmup * 60 / args.interval)  # the first phase measured
        since = datetime.fromtimestamp(start + measured * args.interval, UTC)
        records = sum(phases)
        print(
            f"{args.arrays} arrays × {VOLUMES_PER_ARRAY} volumes, {args.arrays * VOLUMES_PER_ARRAY // 2:,} hosts, "
            f"a switch: {phases[1]:,} records every {args.interval} s ({phases[1] / args.interval:,.0f}/s), "
            f"{len(phases) - 1} intervals and the baseline made in {time.time() - t0:.0f} s; "
            f"played from {start - time.time():.0f} s on",
            flush=True,
        )
        copy_cpu, cpu_before = play(held, start, phases, args.interval, measured)
        end = start + (len(phases) - 1) * args.interval
        after, decoded = settle(client, site, records, args.timeout)
        cpu = {name: spent - cpu_before.get(name, 0.0) for name, spent in cpu_by_process().items()}
        print(
            f"{records:,} records, {decoded:,} samples decoded ({decoded / (end - start):,.0f}/s played): every record "
            f"accounted for and every sample queryable {after:.0f} s after the last interval; the copy into Kafka "
            f"took {copy_cpu:.0f} CPU-s\n"
        )
        drained = backlog.drain(args.timeout)
        cpu_drained = {name: spent - cpu_before.get(name, 0.0) for name, spent in cpu_by_process().items()}
        print(f"the analytics caught up {time.monotonic() - drained.started:.0f} s after that:")
        print("\n".join(drained.report()))
        print(f"stack memory at the end: {stack.resident_bytes() / 2**30:.2f} GiB\n")
        if measured:
            print(f"rows of samples from {measured * args.interval} s on, after {args.warmup:g} min of warm-up:")
        print_delays(client, site, since)
        print_legs(client, site, since)
        first, last = client.query(
            DRIFT,
            parameters={
                "s": site,
                "first": since,
                "last": datetime.fromtimestamp(end, UTC),
            },
        ).first_row
        print(f"\nsamples' p95 delay: {first:.1f} s in the first minute measured, {last:.1f} s in the last")
        for until, spent in (("the last sample queryable", cpu), ("every job caught up", cpu_drained)):
            busiest = sorted(spent.items(), key=lambda kv: -kv[1])
            busiest = ", ".join(f"{name} {seconds:.0f}" for name, seconds in busiest)
            print(f"CPU-s from the first interval measured to {until}: {busiest}")
        return 0
    finally:
        admin.delete_topics([held])
        now = datetime.now(UTC)
        spans.delete(client, [site], now - timedelta(hours=2), now + timedelta(hours=1))


if __name__ == "__main__":
    sys.exit(main())
