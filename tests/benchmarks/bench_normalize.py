"""Benchmark: the normalize job's throughput in samples/s, next to the raw Kafka consume rate, in one run.

A backfill of the firmware-rollout scenario (200 arrays, their hosts and switches; at least 5 million
samples) is produced to a fresh topic; then, on the same data, (1) a plain confluent-kafka consumer
reads every message, once without and once with json.loads, and (2) the normalize job runs bounded
(--bounded --from-earliest) into fresh output topics. The job's rate is measured on its output topic
(first to last sample written), so JVM start-up is not counted; the wall time including it is printed too.
Needs Kafka from `./sanlens up`.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_normalize [--hours 12] [--min-samples 5000000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config
from sanlensctl.offsets import topic_size
from tests.benchmarks.bench_common import consume_all, fresh_topics, run_bounded
from tests.support import ROOT

SCENARIO = ROOT / "ingest" / "scenarios" / "firmware-rollout.yaml"


def accounting_totals(topic: str) -> dict:
    c = Consumer(
        {
            **config.kafka_client(),
            "group.id": f"bench-acc-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    totals, high = {}, topic_size(topic)
    read = 0
    while read < high:
        msg = c.poll(5)
        if msg is None:
            break
        read += 1
        row = json.loads(msg.value())
        key = (row["unit"], row["outcome"])
        totals[key] = totals.get(key, 0) + row["records"]
    c.close()
    return totals


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=12)
    ap.add_argument("--min-samples", type=int, default=5_000_000)
    ap.add_argument("--parallelism", type=int, default=2)
    args = ap.parse_args()
    run_id = uuid.uuid4().hex[:6]
    source, prefix = f"bench-{run_id}.metrics", f"bench-{run_id}"
    topics = [NewTopic(source, 4, 1, config={"message.timestamp.type": "LogAppendTime"})]
    topics += [
        NewTopic(f"{prefix}.{t}", 4 if t == "samples" else 1, 1) for t in ("samples", "deadletter", "accounting")
    ]
    admin = fresh_topics("bench_normalize", topics)
    try:
        s = scenario_file.load(SCENARIO)
        with tempfile.TemporaryDirectory(dir=config.TMP) as truth:
            t0 = time.perf_counter()
            run = Run(s, Path(truth), config.KAFKA_BOOTSTRAP, args.hours * 3600, backfill=True, topic=source)
            records = run.backfill()
            run.close()
        produce_s = time.perf_counter() - t0
        print(
            f"backfill: {records:,} records of {len(s.arrays)} arrays / {len(s.hosts)} hosts over "
            f"{args.hours:g} h produced in {produce_s:.1f} s",
            flush=True,
        )
        raw = consume_all(source, records, parse=False)
        parsed = consume_all(source, records, parse=True)

        job = run_bounded("normalize", source, prefix, f"{prefix}.samples", args.parallelism)
        job_s, wall, size = job.first_to_last_s, job.wall_s, topic_size(f"{prefix}.samples")
        totals = accounting_totals(f"{prefix}.accounting")
        samples_in = totals.get(("samples", "in"), 0)
        per_record = samples_in / max(totals.get(("records", "in"), 1), 1)
        print(f"\n{'path':<44} {'records/s':>12} {'samples/s':>12}")
        print(f"{'raw Kafka consume (confluent-kafka)':<44} {raw:>12,.0f} {raw * per_record:>12,.0f}")
        print(f"{'raw Kafka consume + json.loads':<44} {parsed:>12,.0f} {parsed * per_record:>12,.0f}")
        print(
            f"{'normalize job (first to last sample out)':<44} {records / job_s:>12,.0f} {samples_in / job_s:>12,.0f}"
        )
        print(f"{'normalize job (wall, with start-up)':<44} {records / wall:>12,.0f} {samples_in / wall:>12,.0f}")
        print(
            f"\nsamples decoded {samples_in:,} ({per_record:.1f} per record), written "
            f"{totals.get(('samples', 'out'), 0):,} in {size:,} messages; "
            f"records in {totals.get(('records', 'in'), 0):,} of {records:,} produced; job exit {job.exit_code}"
        )
        if samples_in < args.min_samples:
            print(f"warning: fewer than {args.min_samples:,} samples: raise --hours", file=sys.stderr)
        return 0 if totals.get(("records", "in"), 0) == records else 1
    finally:
        admin.delete_topics([t.topic for t in topics])


if __name__ == "__main__":
    sys.exit(main())
