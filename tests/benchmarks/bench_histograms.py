"""Benchmark: the histograms job's throughput in samples/s, next to the raw Kafka consume rate, in one run.

A fresh topic gets telemetry.samples messages (docs/contract.md: a record's samples each) of a 200-array
fleet at 5-minute samples: each array's two volumes report 32 read and 32 write bucket deltas per interval (a
message a volume), drawn from
the simulator's service-time model (half the arrays on 3.1.3, half on 3.2.1), and each array's SQL
Server host reports its two disks' interval-average latencies and I/O rates (a message a disk). On the same
data, a plain
confluent-kafka consumer reads every message, then the histograms job runs bounded into a fresh
output topic; the job's rate is taken on that topic, from its first output (a checkpoint's) to its last
row. Needs `./sanlens up`.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_histograms [--hours 12] [--arrays 200]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from ingest.simulator import latency
from sanlensctl import config
from tests.benchmarks.bench_common import consume_all, count_messages, fresh_topics, run_bounded

INTERVAL_S = 300
START = datetime(2026, 11, 1, tzinfo=UTC)


def samples(hours: float, arrays: int, rng: np.random.Generator):
    """Yield (message, samples in it, output rows they make): a record's samples in one message
    (docs/contract.md); bucket deltas make one row each, a host disk's latency and rate one row together."""
    for k in range(int(hours * 3600 / INTERVAL_S)):
        ts = (START + timedelta(seconds=k * INTERVAL_S)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        for a in range(arrays):
            base = {"ts": ts, "site": f"site{a % 4}", "array": f"af{a:04d}", "host": "", "disk": "", "host_port": ""}
            firmware = "3.1.3" if a % 2 else "3.2.1"
            for v in ("data", "log"):
                buckets = []
                for direction in ("read", "write"):
                    mix = latency.service_time("ssd", firmware, direction, 1.0, 0.3)
                    counts = latency.sample_histogram(rng, mix, int(rng.poisson(600 * INTERVAL_S)))
                    metric = f"volume.{direction}_service_time_hist"
                    buckets += [
                        {"metric": metric, "value": float(ios), "unit": "ios", "bucket": b}
                        for b, ios in enumerate(counts)
                    ]
                yield {**base, "volume": f"af{a:04d}-{v}", "samples": buckets}, len(buckets), len(buckets)
            host = {**base, "array": "", "host": f"sql{a:04d}", "volume": ""}
            for disk in ("D:", "L:"):
                disk_samples = []
                for direction, rate in (("read", "reads"), ("write", "writes")):
                    latency_us = float(rng.lognormal(np.log(400), 0.5))
                    disk_samples += [
                        {"metric": f"disk.{direction}_latency", "value": latency_us, "unit": "us", "bucket": -1},
                        {"metric": f"disk.{rate}", "value": float(rng.poisson(300)), "unit": "1/s", "bucket": -1},
                    ]
                yield {**host, "disk": disk, "samples": disk_samples}, len(disk_samples), 2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=12)
    ap.add_argument("--arrays", type=int, default=200)
    ap.add_argument("--parallelism", type=int, default=2)
    args = ap.parse_args()
    run_id = uuid.uuid4().hex[:6]
    source, prefix = f"bench-{run_id}.samples", f"bench-{run_id}"
    topics = [NewTopic(source, 4, 1), NewTopic(f"{prefix}.histograms", 4, 1)]
    admin = fresh_topics("bench_histograms", topics)
    try:
        producer = Producer(
            {
                **config.kafka_client(),
                "linger.ms": 50,
                "compression.type": "lz4",
                "queue.buffering.max.messages": 1_000_000,
            }
        )
        t0, produced, messages, expected = time.perf_counter(), 0, 0, 0
        for record, n, rows in samples(args.hours, args.arrays, np.random.default_rng(7)):
            while True:
                try:
                    producer.produce(
                        source, json.dumps(record).encode(), key=(record["array"] or record["host"]).encode()
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
            produced, messages, expected = produced + n, messages + 1, expected + rows
            if messages % 20_000 == 0:
                print(f"  produced {produced:,} samples in {messages:,} messages", flush=True)
        producer.flush(120)
        print(
            f"{produced:,} samples of {args.arrays} arrays and hosts over {args.hours:g} h produced in "
            f"{time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        per_message = produced / messages  # consume_all counts messages
        raw = consume_all(source, messages, parse=False) * per_message
        parsed = consume_all(source, messages, parse=True) * per_message
        job = run_bounded("histograms", source, prefix, f"{prefix}.histograms", args.parallelism)
        rows = count_messages(f"{prefix}.histograms")
        print(f"\n{'path':<48} {'samples/s':>12}")
        print(f"{'raw Kafka consume (confluent-kafka)':<48} {raw:>12,.0f}")
        print(f"{'raw Kafka consume + json.loads':<48} {parsed:>12,.0f}")
        print(f"{'histograms job (from its first output on)':<48} {job.steady(produced):>12,.0f}")
        print(f"{'histograms job (wall, with start-up)':<48} {produced / job.wall_s:>12,.0f}")
        print(f"\nhistogram rows written {rows:,} of {expected:,} expected; job exit {job.exit_code}")
        return 0 if rows == expected else 1
    finally:
        admin.delete_topics([t.topic for t in topics])


if __name__ == "__main__":
    sys.exit(main())
