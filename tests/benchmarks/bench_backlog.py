"""Benchmark: a backlog drained by the whole stack, as users run it. N hosts x M intervals of Perfmon disks
(1,000 x 500 = 3.5 M samples by default) produced at once into telemetry.metrics, as a fleet of agents with disk
buffers sends them after a Kafka outage; then, every 2 s, each Flink job's lag, state and resident memory (its
Python process and JVM) until all are RUNNING and under 1,000 messages behind. Prints each job's peak lag, when it
caught up, its drain rate (peak lag over the time from the peak to caught up) and peak memory, the whole stack's
memory at the end, and a raw consume of the same records beside it (the ceiling: one Python process reading and
parsing them). The run's rows are deleted from the stack's tables at the end (ingest/loader/spans.py).

Needs `./sanlens up` (or a stack of its own: SANLENS_RUN and the SANLENS_*_PORT variables).

    .sanlens/venv/bin/python -m tests.benchmarks.bench_backlog [--hosts 1000] [--intervals 500]
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from datetime import timedelta

from confluent_kafka import Consumer, TopicPartition

from ingest import topics
from ingest.loader import spans
from sanlensctl import config, db, offsets, stack
from tests import backlog
from tests.benchmarks.bench_common import require_stack


def raw_consume(records: int, from_offsets: dict[tuple[str, int], int]) -> float:
    """Records/s of one Python process reading the burst's records back and parsing them as JSON."""

    c = Consumer({**config.kafka_client(), "group.id": "bench-backlog-raw", "log_level": 0})
    c.assign([TopicPartition(t, p, o) for (t, p), o in from_offsets.items()])
    seen, started = 0, time.perf_counter()
    while seen < records:
        batch = c.consume(10_000, 5)
        if not batch:
            break
        for m in batch:
            json.loads(m.value())
        seen += len(batch)
    c.close()
    return seen / (time.perf_counter() - started)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=1_000)
    ap.add_argument("--intervals", type=int, default=500)
    ap.add_argument("--timeout", type=float, default=1_800, help="seconds to wait for every job (1800)")
    args = ap.parse_args()
    require_stack("bench_backlog")
    client = db.client()
    print(f"stack memory before: {stack.resident_bytes() / 2**30:.2f} GiB", flush=True)
    start_offsets = offsets.log_ends([topics.METRICS])
    t0 = time.perf_counter()
    burst = backlog.produce(f"backlog{uuid.uuid4().hex[:6]}", args.hosts, args.intervals)
    print(
        f"produced {burst.records:,} records ({burst.records * backlog.SAMPLES_PER_RECORD:,} samples) "
        f"in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    peak_stack = [0]

    def progress(d: backlog.Drain) -> None:
        peak_stack[0] = max(peak_stack[0], stack.resident_bytes())
        lags = ", ".join(f"{job} {series[-1][1]:,}" for job, series in d.lags.items())
        print(f"  {time.monotonic() - d.started:6.0f} s  lags: {lags}", flush=True)

    drained = backlog.drain(args.timeout, progress=progress)
    print("\n".join(drained.report()))
    rows = backlog.host_histogram_rows(client, burst)
    print(f"host histogram rows: {rows:,} of {burst.records * 2:,}")
    print(f"stack memory: peak {peak_stack[0] / 2**30:.2f} GiB, at the end {stack.resident_bytes() / 2**30:.2f} GiB")
    ceiling = raw_consume(burst.records, start_offsets)
    print(f"ceiling, a raw consume + json.loads of the same records: {ceiling:,.0f} records/s")
    end = burst.first + timedelta(seconds=args.intervals * backlog.INTERVAL_S)
    spans.delete(client, [burst.site], burst.first - timedelta(minutes=1), end + timedelta(minutes=1))
    return 0 if drained.done() and rows == burst.records * 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
