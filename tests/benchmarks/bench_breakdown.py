"""Benchmark: the breakdown job's throughput in samples/s, next to the raw Kafka consume rate, in one run.

A fleet of 100 arrays, each with two SQL Server hosts (tpce and oltp), behind four switches, sampled
every 10 s (the breakdown's window) with a slow-drain port and an HBA saturation planted, is played as a
backfill into a fresh topic; the normalize job turns it into a fresh samples topic (its inventory goes to
inventory.topology, as a real fleet's does). On those samples, a plain confluent-kafka consumer reads
every message, once without and once with json.loads, then the breakdown job runs bounded into fresh
output topics; its rate is taken on its breakdown topic, from its first output on (an exactly-once sink shows
its output a checkpoint at a time). Needs `./sanlens up`.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_breakdown [--minutes 30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

from confluent_kafka.admin import NewTopic

from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config
from sanlensctl.offsets import topic_size
from tests import scenarios
from tests.benchmarks.bench_common import consume_all, fresh_topics, run_bounded
from tests.benchmarks.bench_normalize import accounting_totals


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30)
    args = ap.parse_args()
    run_id = uuid.uuid4().hex[:6]
    source, normalized, prefix = f"bench-{run_id}.metrics", f"bench-{run_id}-n", f"bench-{run_id}-b"
    topics = [NewTopic(source, 4, 1, config={"message.timestamp.type": "LogAppendTime"})]
    topics += [
        NewTopic(f"{normalized}.{t}", 4 if t == "samples" else 1, 1) for t in ("samples", "deadletter", "accounting")
    ]
    topics += [NewTopic(f"{prefix}.{t}", 4 if t == "breakdown" else 1, 1) for t in ("breakdown", "incidents")]
    admin = fresh_topics("bench_breakdown", topics)
    try:
        with tempfile.TemporaryDirectory(dir=config.TMP) as folder:
            scenario = Path(folder) / "fleet.yaml"
            scenario.write_text(scenarios.text("bench-breakdown", id=run_id, duration=int(args.minutes * 60)))
            s = scenario_file.load(scenario)
            run = Run(s, Path(folder) / "truth", config.KAFKA_BOOTSTRAP, backfill=True, topic=source)
            records = run.backfill()
            run.close()
        print(f"backfill: {records:,} records of {len(s.arrays)} arrays / {len(s.hosts)} hosts", flush=True)
        normalize = run_bounded("normalize", source, normalized, f"{normalized}.samples", 2)
        messages = topic_size(f"{normalized}.samples")  # a record's samples each (docs/contract.md)
        samples = accounting_totals(f"{normalized}.accounting").get(("samples", "out"), 0)
        print(
            f"normalize: {samples:,} samples in {messages:,} messages in {normalize.wall_s:.0f} s "
            f"(exit {normalize.exit_code})",
            flush=True,
        )

        per_message = samples / max(messages, 1)
        raw = consume_all(f"{normalized}.samples", messages, parse=False) * per_message
        parsed = consume_all(f"{normalized}.samples", messages, parse=True) * per_message
        job = run_bounded("breakdown", f"{normalized}.samples", prefix, f"{prefix}.breakdown", 1)
        rows, incidents = topic_size(f"{prefix}.breakdown"), topic_size(f"{prefix}.incidents")
        print(f"\n{'path (samples in)':<46} {'samples/s':>12}")
        print(f"{'raw Kafka consume (confluent-kafka)':<46} {raw:>12,.0f}")
        print(f"{'raw Kafka consume + json.loads':<46} {parsed:>12,.0f}")
        print(f"{'breakdown job (from its first output on)':<46} {job.steady(samples):>12,.0f}")
        print(f"{'breakdown job (wall, with start-up)':<46} {samples / job.wall_s:>12,.0f}")
        print(f"{'breakdown job, per CPU-second (start-up in)':<46} {samples / job.cpu_s:>12,.0f}")
        print(f"\n{rows:,} path windows and {incidents:,} incident states written; job exit {job.exit_code}")
        print(f"breakdown job: {job.cpu_s:.0f} CPU-s, {job.wall_s:.0f} s wall")
        return 0 if job.exit_code == 0 and rows > 0 and incidents > 0 else 1
    finally:
        admin.delete_topics([t.topic for t in topics])


if __name__ == "__main__":
    sys.exit(main())
