"""What the benchmarks share: the raw Kafka consume rate, and a Flink job run bounded on a topic with
its rate taken on its output topic (first to last message written, so JVM start-up is not counted)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import types
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sanlensctl import config, procs, stack
from sanlensctl.offsets import topic_size
from tests.support import flink_job


def reader(topic: str) -> Consumer:
    """A consumer of a group of its own, from the earliest offset of `topic`, committing nothing."""
    c = Consumer(
        {
            **config.kafka_client(),
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 0,
            "fetch.max.bytes": 52428800,
        }
    )
    c.subscribe([topic])
    return c


def require_stack(bench: str) -> None:
    """Exit with a one-line error unless the stack's ingest path is up (`./sanlens up`)."""
    report = stack.status()
    down = [name for name in ("kafka", "clickhouse", "flink", "loader") if not report[name]["healthy"]]
    if down:
        sys.exit(f"{bench}: error: {', '.join(down)} not healthy: start the stack with ./sanlens up")


def copy(consumer: Consumer, producer: Producer, target: str, count: int) -> None:
    """The next `count` messages of `consumer` into `target`, keys kept, flushed."""
    copied = 0
    while copied < count:
        for msg in consumer.consume(min(count - copied, 10_000), timeout=1.0):
            if msg.error():
                continue
            while True:
                try:
                    producer.produce(target, msg.value(), key=msg.key())
                    break
                except BufferError:
                    producer.poll(0.05)
            copied += 1
        producer.poll(0)
    producer.flush(120)


def consume_all(topic: str, total: int, parse: bool) -> float:
    """Messages/s of reading `topic` (`total` offsets, or up to the end: a transactional topic's commit
    markers take offsets that are never delivered)."""
    c = reader(topic)
    seen, t0, t1 = 0, None, None
    while seen < total:
        messages = c.consume(10000, timeout=1.0)
        if not messages and t0 is not None:
            break
        for msg in messages:
            if msg.error():
                continue
            if t0 is None:
                t0 = time.perf_counter()
            if parse:
                json.loads(msg.value())
            seen += 1
        t1 = time.perf_counter()
    elapsed = t1 - t0
    c.close()
    return seen / elapsed


def run_bounded(job: str, source: str, prefix: str, output_topic: str, parallelism: int, *extra: str):
    """Run flink-jobs/JOB bounded from the earliest offset of `source`; the seconds from its first to
    its last message on `output_topic`, the wall time with start-up, its exit code, and the CPU-seconds its
    processes used (`cpu_s`, start-up included)."""
    argv, env = flink_job(job, source, prefix, *extra, parallelism=parallelism)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    return watch(proc, output_topic)


def watch(proc: subprocess.Popen, output_topic: str):
    """Until the bounded job `proc` ends: the seconds from its first to its last message on `output_topic`,
    the wall time, its exit code and how many offsets the topic holds (with the transactions' commit
    markers); `steady(n)`: the rate of a job that read n inputs, over its output after its first visible
    part (an exactly-once sink shows its output a checkpoint at a time: the first part holds everything
    done before the first checkpoint, so first to last would count that work as done in no time)."""
    started, first, last, size, first_size, cpu_s = time.perf_counter(), None, None, 0, 0, 0.0
    while proc.poll() is None:
        cpu_s = max(cpu_s, procs.group_cpu_seconds(proc.pid))  # the last reading before it ends
        now_size, now = topic_size(output_topic), time.perf_counter()
        if now_size and first is None:
            first, first_size = now, now_size
        if now_size > size:
            size, last = now_size, now
        time.sleep(0.5)
    first_to_last_s = max((last or 0) - (first or 0), 1e-9)
    return types.SimpleNamespace(
        first_to_last_s=first_to_last_s,
        steady=lambda n: n * (size - first_size) / max(size, 1) / first_to_last_s,
        wall_s=time.perf_counter() - started,
        exit_code=proc.returncode,
        written=size,
        cpu_s=cpu_s,
    )


def count_messages(topic: str) -> int:
    """The messages of `topic` a read_committed consumer gets (its offsets also count commit markers)."""
    c, n, quiet, t0 = reader(topic), 0, 0, time.perf_counter()
    while quiet < 3 or (n == 0 and time.perf_counter() - t0 < 30):
        messages = c.consume(10000, timeout=1.0)
        quiet = 0 if messages else quiet + 1
        n += sum(1 for m in messages if not m.error())
    c.close()
    return n


def fresh_topics(bench: str, topics: list[NewTopic]) -> AdminClient:
    """Create the run's own topics; exits with a clear error when Kafka is not up."""
    admin = AdminClient({**config.kafka_client(), "log_level": 0})
    try:
        admin.list_topics(timeout=5)
    except Exception:
        sys.exit(f"{bench}: error: no Kafka at {config.KAFKA_BOOTSTRAP}: start the stack with ./sanlens up")
    for f in admin.create_topics(topics).values():
        f.result(30)
    return admin
