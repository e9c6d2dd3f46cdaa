"""Kafka's door on the tests' stack (docs/security.md#who-may-do-what-on-kafka): a client without credentials, or
with a wrong password, cannot connect; the agents' principal can produce to telemetry.metrics and cannot read any
topic; the loader cannot produce to telemetry.metrics; ACLs are exactly ingest/kafka_access.py's."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from ingest import kafka_access, settings, topics
from sanlensctl import config

pytestmark = pytest.mark.stack


def _produce(conf: dict, topic: str, value: bytes = b"{}") -> tuple[list, list]:
    """(delivery errors, client errors) of producing one message to `topic` with `conf`."""
    delivered, errors = [], []
    producer = Producer({**conf, "message.timeout.ms": 6000, "log_level": 0, "error_cb": errors.append})
    producer.produce(topic, value, key=b"test-kafka-access", on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(10)
    return delivered, errors


def test_a_client_without_credentials_or_with_a_wrong_password_cannot_connect(stack):
    plain = {"bootstrap.servers": config.KAFKA_BOOTSTRAP}  # PLAINTEXT, no SASL: the listener answers nothing
    with pytest.raises(KafkaException):
        AdminClient({**plain, "log_level": 0}).list_topics(timeout=5)
    delivered, _ = _produce(plain, topics.METRICS)
    assert delivered and delivered[0] is not None and delivered[0].code() == KafkaError._MSG_TIMED_OUT

    wrong = {**settings.kafka_client("agents"), "sasl.password": "not-the-password"}
    delivered, errors = _produce(wrong, topics.METRICS)
    assert delivered and delivered[0] is not None
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors

    unknown = {**settings.kafka_client("agents"), "sasl.username": "nobody"}
    delivered, errors = _produce(unknown, topics.METRICS)
    assert delivered and delivered[0] is not None
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


def test_the_agents_produce_to_telemetry_metrics_not_to_the_inventory_and_read_nothing(stack):
    agents = settings.kafka_client("agents")
    delivered, errors = _produce(agents, topics.METRICS)
    assert delivered == [None], (delivered, errors)

    for topic in (topics.SAMPLES, topics.TOPOLOGY):  # a job's topic; the inventory, which says whose a site is
        delivered, _ = _produce(agents, topic)
        assert delivered[0] is not None and delivered[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, topic
    # not JSON: the loader sends it to the dead letters, and no inventory row of the shared stack changes
    delivered, errors = _produce(settings.kafka_client("inventory"), topics.TOPOLOGY, b"test_kafka_access")
    assert delivered == [None], (delivered, errors)

    for topic in topics.CONTRACT:
        # with a consumer group: the group is refused before the topic
        c = Consumer({**agents, "group.id": f"sanlens-loader-{uuid.uuid4().hex[:6]}", "log_level": 0})
        c.subscribe([topic])
        msg = c.poll(10)
        c.close()
        assert msg is not None and msg.error() is not None, topic
        assert msg.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED, (topic, msg.error())
        # assigned a partition from its start, not subscribed: refused, and never a message (librdkafka asks the
        # group's coordinator first, so the refusal is the group's or the topic's)
        c = Consumer({**agents, "group.id": "unused", "enable.auto.commit": False, "log_level": 0})
        c.assign([TopicPartition(topic, 0, 0)])
        got, deadline = [], time.monotonic() + 8
        while not got and time.monotonic() < deadline:
            if (msg := c.poll(1)) is not None:
                got.append(msg.error().code() if msg.error() else msg.value())
        c.close()
        refused = {KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED}
        assert got and all(g in refused for g in got), (topic, got)


def test_the_loader_reads_its_topics_but_cannot_produce_raw_metrics(stack):
    loader = settings.kafka_client("loader")
    delivered, _ = _produce(loader, topics.METRICS)
    assert delivered[0] is not None and delivered[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # its own group and topic: no error (at most no message yet)
    c = Consumer({**loader, "group.id": f"sanlens-loader-test-{uuid.uuid4().hex[:6]}", "log_level": 0})
    c.assign([TopicPartition(topics.ACCOUNTING, 0, 0)])
    msg = c.poll(5)
    c.close()
    assert msg is None or msg.error() is None or msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
    # a job's group: refused
    c = Consumer({**loader, "group.id": "sanlens-normalize", "log_level": 0})
    c.subscribe([topics.SAMPLES])
    msg = c.poll(10)
    c.close()
    assert msg is not None and msg.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_the_brokers_acls_are_the_definitions(stack):
    admin = AdminClient({**config.kafka_client(), "log_level": 0})
    have = admin.describe_acls(
        AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
        )
    ).result(timeout=30)
    got = sorted(
        (b.principal.removeprefix("User:"), b.restype.name, b.resource_pattern_type.name, b.name, b.operation.name)
        for b in have
        if b.permission_type == AclPermissionType.ALLOW and b.host == "*"
    )
    assert got == kafka_access.bindings()
    assert len(got) == len(have)  # no DENY, no other host
