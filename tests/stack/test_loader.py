"""The loader delivers at least once and stays idempotent: a crash between insert and commit loses
nothing and doubles nothing. A record's samples become a row each in ClickHouse."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ingest.loader import loader
from sanlensctl import config
from tests import crashing_loader
from tests.support import ROOT, wait_until

N = 20_000


def run_loader(topic: str, table: str, group: str, crash_after_inserts: int = 0):
    """The loader on one route; with `crash_after_inserts`, through tests/crashing_loader.py, which kills it
    right after that many inserts, before their offsets are committed."""
    program = [str(ROOT / "ingest" / "loader" / "loader.py")]
    if crash_after_inserts:
        program = [crashing_loader.__file__, str(crash_after_inserts)]
    argv = [
        sys.executable,
        *program,
        "--route",
        f"{topic}={table}",
        "--group",
        group,
        "--batch",
        "3000",
        "--linger",
        "0.5",
    ]
    return subprocess.Popen(
        argv,
        env=config.tool_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_crash_between_insert_and_commit_then_restart_gives_the_exact_row_count(stack, ch):
    suffix = uuid.uuid4().hex[:8]
    topic, table, group = f"test.loader.{suffix}", f"sanlens.loader_test_{suffix}", f"test-loader-{suffix}"
    admin = AdminClient(config.kafka_client())
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(30)
    ch.command(f"""CREATE TABLE {table} (id UInt32, host String, kafka_partition UInt16, kafka_offset UInt64)
                   ENGINE = MergeTree ORDER BY id""")
    producer = Producer({**config.kafka_client(), "linger.ms": 20})
    for i in range(N):
        producer.produce(topic, json.dumps({"id": i, "host": f"h{i % 7}"}).encode(), key=str(i % 7).encode())
    producer.flush(60)
    try:
        crashed = run_loader(topic, table, group, crash_after_inserts=2)
        assert crashed.wait(120) == crashing_loader.CRASH_STATUS, crashed.stdout.read()
        after_crash = ch.command(f"SELECT count() FROM {table}")
        assert 0 < after_crash < N  # two batches inserted, their offsets never committed

        resumed = run_loader(topic, table, group)
        try:
            wait_until(lambda: ch.command(f"SELECT count() FROM {table}") >= N, 120, "all rows loaded")
        finally:
            resumed.terminate()
            resumed.wait(30)
        count, distinct = ch.query(f"SELECT count(), uniqExact(id) FROM {table}").result_rows[0]
        assert (count, distinct) == (N, N)
    finally:
        ch.command(f"DROP TABLE IF EXISTS {table}")
        admin.delete_topics([topic])


def loaded_and_dead_lettered(ch, values: list[bytes], stored: int) -> tuple[list[int], dict[str, str]]:
    """`values` produced to a topic of their own and loaded, in one batch, into a table (id UInt32) until it holds
    `stored` rows: the ids stored, and per payload dead-lettered its reason and detail as one text."""
    suffix = uuid.uuid4().hex[:8]
    topic, table, group = f"test.loader.{suffix}", f"sanlens.loader_test_{suffix}", f"test-loader-{suffix}"
    admin = AdminClient(config.kafka_client())
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    ch.command(
        f"CREATE TABLE {table} (id UInt32, kafka_partition UInt16, kafka_offset UInt64) ENGINE = MergeTree ORDER BY id"
    )
    producer = Producer(config.kafka_client())
    for value in values:
        producer.produce(topic, value)
    producer.flush(30)
    loader = run_loader(topic, table, group)
    try:
        wait_until(lambda: ch.command(f"SELECT count() FROM {table}") >= stored, 60, "good rows loaded")
    finally:
        loader.terminate()
        loader.wait(30)
    try:
        ids = [r[0] for r in ch.query(f"SELECT id FROM {table} ORDER BY id").result_rows]
        consumer = Consumer({**config.kafka_client(), "group.id": f"dl-{suffix}", "auto.offset.reset": "earliest"})
        consumer.assign([TopicPartition("telemetry.deadletter", 0, 0)])
        reasons = {}
        while (msg := consumer.poll(5)) is not None:
            letter = json.loads(msg.value())
            if letter.get("topic") == topic:
                reasons[letter["payload"]] = f"{letter['reason']}: {letter['detail']}".rstrip(": ")
        consumer.close()
        return ids, reasons
    finally:
        ch.command(f"DROP TABLE IF EXISTS {table}")
        admin.delete_topics([topic])


def test_a_message_clickhouse_refuses_is_dead_lettered_and_the_rest_loaded(stack, ch):
    values = [b'{"id": 1}', b'{"id": "not a number"}', b"garbage", b'{"id": 4}']
    ids, reasons = loaded_and_dead_lettered(ch, values, stored=2)
    assert ids == [1, 4]
    assert reasons["garbage"] == "not a JSON object"
    assert reasons['{"id": "not a number"}'].startswith("rejected by ClickHouse: ")


def test_a_message_with_a_field_no_column_takes_is_dead_lettered_naming_it_and_the_rest_loaded(stack, ch):
    """A field renamed on the producer's side is not dropped without a word: its message is refused (the batch falls
    over from Arrow to JSONEachRow, then to one message at a time), the others of its batch are stored."""
    renamed = b'{"id": 2, "renamed_id": 2}'
    ids, reasons = loaded_and_dead_lettered(ch, [b'{"id": 1}', renamed, b'{"id": 3}'], stored=2)
    assert ids == [1, 3]
    assert reasons == {renamed.decode(): "unknown field: renamed_id"}


def test_a_record_s_message_becomes_a_row_per_sample_through_clickhouse_s_view(ch):
    """telemetry.samples: the loader inserts a record's message as it is, and the view of migration 0014 writes a
    row per sample with the message's columns and Kafka position, none for a message without samples; a message
    ClickHouse cannot read, or with a field no column takes, refuses the insert, for the loader to dead-letter."""
    site = f"test-loader-{uuid.uuid4().hex[:8]}"
    day = (datetime.now(UTC) - timedelta(days=1)).date()  # within sanlens.metrics' TTL, which drops older rows
    shared = {"ts": f"{day}T10:00:00.123Z", "site": site, "array": "a1", "volume": "v1"}
    messages = [
        {
            **shared,
            "arrived_at": f"{day}T10:00:01.5Z",
            "samples": [
                {"metric": "volume.reads", "value": 250, "unit": "1/s", "bucket": -1},
                {"metric": "volume.write_service_time_hist", "value": 2.5, "unit": "ios", "bucket": 3},
            ],
            "kafka_partition": 1,
            "kafka_offset": 4,
        },
        {**shared, "samples": [], "kafka_partition": 1, "kafka_offset": 5},
    ]

    def insert(messages: list[dict]):
        data = b"\n".join(json.dumps(m).encode() for m in messages)
        into = loader.LOADED_THROUGH["sanlens.metrics"]
        return ch.raw_insert(into, None, data, settings=loader.THROUGH_SETTINGS, fmt="JSONEachRow")

    try:
        insert(messages)
        rows = ch.query(
            "SELECT metric, value, unit, bucket, array, volume, host, toString(ts), toString(arrived_at), "
            "kafka_partition, kafka_offset FROM sanlens.metrics WHERE site = {s:String} ORDER BY metric",
            parameters={"s": site},
        ).result_rows
        times = (f"{day} 10:00:00.123", f"{day} 10:00:01.500")
        assert rows == [
            ("volume.reads", 250.0, "1/s", -1, "a1", "v1", "", *times, 1, 4),
            ("volume.write_service_time_hist", 2.5, "ios", 3, "a1", "v1", "", *times, 1, 4),
        ]
        refused = {**messages[0], "samples": [{"metric": "m", "value": "not a number", "unit": "us", "bucket": -1}]}
        with pytest.raises(Exception, match="Code:"):
            insert([refused])
        with pytest.raises(Exception, match="not_a_column"):
            insert([{**messages[0], "not_a_column": 1}])
        assert ch.command("SELECT count() FROM sanlens.metrics WHERE site = {s:String}", parameters={"s": site}) == 2
    finally:
        ch.command("DELETE FROM sanlens.metrics WHERE site = {s:String}", parameters={"s": site})
