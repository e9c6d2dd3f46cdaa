"""Kafka offsets as the stack's progress meter: topic sizes and what each consumer group has committed.
Shared by the demo, the tests and the benchmarks."""

from __future__ import annotations

from typing import NamedTuple

from confluent_kafka import Consumer, TopicPartition

from sanlensctl import config


class Position(NamedTuple):
    committed: int  # messages the group has committed, summed over the partitions of its topics
    end: int  # messages on those partitions (high watermarks)

    @property
    def lag(self) -> int:
        return self.end - self.committed


def _consumer(group: str) -> Consumer:
    return Consumer(
        {"bootstrap.servers": config.KAFKA_BOOTSTRAP, "group.id": group, "enable.auto.commit": False, "log_level": 0}
    )


def _partitions(consumer: Consumer, topics: list[str]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t in topics for p in consumer.list_topics(t, timeout=5).topics[t].partitions]


def position(group: str, topics: list[str]) -> Position:
    """Where the consumer group stands on `topics`."""
    consumer = _consumer(group)
    try:
        committed = end = 0
        for tp in consumer.committed(_partitions(consumer, topics), timeout=5):
            high = consumer.get_watermark_offsets(tp, timeout=5)[1]
            committed, end = committed + max(tp.offset, 0), end + high
        return Position(committed, end)
    finally:
        consumer.close()


def topic_size(topic: str) -> int:
    """Messages on the topic (the sum of its partitions' high watermarks)."""
    consumer = _consumer("sanlens-offsets")
    try:
        return sum(consumer.get_watermark_offsets(tp, timeout=5)[1] for tp in _partitions(consumer, [topic]))
    finally:
        consumer.close()
