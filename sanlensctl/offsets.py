"""Kafka offsets as the stack's progress meter: topic sizes and what each consumer group has committed.
Shared by the demo, the tests and the benchmarks."""

from __future__ import annotations

import time
from typing import NamedTuple

from confluent_kafka import Consumer, IsolationLevel, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from sanlensctl import config


class Position(NamedTuple):
    committed: int  # messages the group has committed, summed over the partitions of its topics
    end: int  # messages on those partitions a reader can reach (see _reachable_ends)

    @property
    def lag(self) -> int:
        return self.end - self.committed


def _consumer(group: str) -> Consumer:
    return Consumer(
        {
            **config.kafka_client(),
            "group.id": group,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 10,  # a fetch at a partition's end answers (EOF) at once, not after 500 ms
            "log_level": 0,
        }
    )


def _partitions(consumer: Consumer, topics: list[str]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t in topics for p in consumer.list_topics(t, timeout=5).topics[t].partitions]


# The Flink jobs write in transactions. A reader (read_committed) gets no further than the last stable
# offset, where the oldest open transaction starts; and a commit marker takes an offset but is never
# delivered, while Flink's Kafka source commits the offset after the last record it read (FLINK-33484):
# a group that read everything stands before the markers at the end of what is stable. So the end that
# counts is the one after the last record before the last stable offset, looked for among the offsets
# just before it (a run of markers is one per producer).
TAIL = 16


def _reachable_ends(consumer: Consumer, partitions: list[TopicPartition]) -> dict[tuple[str, int], int]:
    ends = _list_offsets(partitions, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)
    starts = _list_offsets(partitions, OffsetSpec.earliest(), IsolationLevel.READ_COMMITTED)
    tails = [
        TopicPartition(topic, partition, max(starts[topic, partition], stable - TAIL))
        for (topic, partition), stable in ends.items()
        if stable > starts[topic, partition]
    ]
    if not tails:
        return ends
    last = {(tp.topic, tp.partition): tp.offset - 1 for tp in tails}  # no record in the tail: its start
    consumer.assign(tails)
    open_, deadline = set(last), time.monotonic() + 5
    while open_ and time.monotonic() < deadline:
        for msg in consumer.consume(500, timeout=0.1):
            key = (msg.topic(), msg.partition())
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    open_.discard(key)
            elif msg.offset() < ends[key]:
                last[key] = msg.offset()
    consumer.unassign()
    for key in last.keys() - open_:
        ends[key] = last[key] + 1
    return ends


def position(group: str, topics: list[str]) -> Position:
    """Where the consumer group stands on `topics`: a partition counts as read to its reachable end once
    the group has committed that far."""
    consumer = _consumer(group)
    try:
        partitions = _partitions(consumer, topics)
        ends = _reachable_ends(consumer, partitions)
        committed = end = 0
        for tp in consumer.committed(partitions, timeout=5):
            reachable = ends[tp.topic, tp.partition]
            committed, end = committed + min(max(tp.offset, 0), reachable), end + reachable
        return Position(committed, end)
    finally:
        consumer.close()


def log_ends(topics: list[str]) -> dict[tuple[str, int], int]:
    """Each partition's end, records of open transactions included: all a writer has sent so far."""
    return _ends(topics, IsolationLevel.READ_UNCOMMITTED)


def stable_past(ends: dict[tuple[str, int], int]) -> bool:
    """Whether every transaction holding a record before `ends` (log_ends, earlier) has ended: a reader
    (read_committed) now reaches every record sent by then."""
    stable = _ends(sorted({topic for topic, _ in ends}), IsolationLevel.READ_COMMITTED)
    return all(stable[key] >= end for key, end in ends.items())


def _ends(topics: list[str], isolation: IsolationLevel) -> dict[tuple[str, int], int]:
    consumer = _consumer("sanlens-offsets")
    try:
        partitions = _partitions(consumer, topics)
    finally:
        consumer.close()
    return _list_offsets(partitions, OffsetSpec.latest(), isolation)


def _list_offsets(partitions: list[TopicPartition], spec: OffsetSpec, isolation: IsolationLevel) -> dict:
    """(topic, partition) -> its offset as `spec` (latest, earliest) finds it for a reader of `isolation`."""
    admin = AdminClient({**config.kafka_client(), "log_level": 0})
    futures = admin.list_offsets({tp: spec for tp in partitions}, isolation_level=isolation, request_timeout=5)
    return {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}


def topic_size(topic: str) -> int:
    """Messages on the topic (the sum of its partitions' high watermarks)."""
    consumer = _consumer("sanlens-offsets")
    try:
        return sum(consumer.get_watermark_offsets(tp, timeout=5)[1] for tp in _partitions(consumer, [topic]))
    finally:
        consumer.close()
