"""The normalize job, really running on the local stack, fed straight through Kafka (the contract's
way to publish without Telegraf): canonical units, reset-safe deltas, dead letters, accounting."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ingest import topics
from sanlensctl import config
from tests.support import flink_job, sanlens, wait_until


def publish(records, key: str) -> None:
    producer = Producer(config.kafka_client())
    for record in records:
        producer.produce(
            "telemetry.metrics", record if isinstance(record, bytes) else json.dumps(record).encode(), key=key.encode()
        )
    assert producer.flush(30) == 0


def dmv(site: str, t_ms: int, reads: int, stall_ms: int) -> dict:
    return {
        "name": "sqlserver_database_io",
        "timestamp": t_ms,
        "tags": {
            "host": f"{site}-h",
            "site": site,
            "sql_instance": f"{site}-h:MSSQLSERVER",
            "database_name": "db",
            "logical_filename": "db_data",
        },
        "fields": {"reads": reads, "read_latency_ms": stall_ms},
    }


@pytest.fixture(scope="module")
def published_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture(scope="module")
def site(stack, ch, published_ms):
    """One series of DMV samples with an instance restart in the middle, and one Perfmon sample."""
    site = f"it-{uuid.uuid4().hex[:8]}"
    t0 = int(time.time() * 1000) - 120_000
    counters = [
        (100, 1_200),
        (200, 2_400),
        (300, 3_600),  # 12 ms per read
        (20, 100),
        (120, 1_300),  # restart: counters start again
        (220, 2_500),
    ]
    records = [dmv(site, t0 + i * 10_000, r, s) for i, (r, s) in enumerate(counters)]
    records.append(dmv(site, t0 + 50_000, 220, 2_500))  # the same sample delivered twice
    records.append(
        {
            "name": "win_disk",
            "timestamp": t0,
            "fields": {"Avg._Disk_sec/Read": 0.012},
            "tags": {"host": f"{site}-h", "site": site, "instance": "E:", "objectname": "LogicalDisk"},
        }
    )
    publish(records, f"{site}-h")
    wait_until(lambda: accounted(ch, site, "records", "in") == len(records), 120, "the records' accounting")
    return site


def accounted(ch, site: str, unit: str, outcome: str, reason: str | None = None) -> int:
    where = "" if reason is None else " AND reason = {r:String}"
    return ch.command(
        "SELECT sum(records) FROM sanlens.pipeline_accounting WHERE site = {s:String} "
        f"AND unit = {{u:String}} AND outcome = {{o:String}}{where}",
        parameters={"s": site, "u": unit, "o": outcome, "r": reason or ""},
    )


def series(ch, site: str, metric: str) -> list[float]:
    return [
        r[0]
        for r in ch.query(
            "SELECT value FROM sanlens.metrics WHERE site = {s:String} AND metric = {m:String} ORDER BY ts",
            parameters={"s": site, "m": metric},
        ).result_rows
    ]


def test_perfmon_seconds_and_dmv_stalls_become_microseconds(ch, site):
    assert series(ch, site, "disk.read_latency") == [12000.0]
    # delta read_latency_ms 1,200 over delta reads 100 -> 12,000 us
    # six samples: a baseline, two intervals, the reset (dropped), two intervals after it
    latencies = wait_until(lambda: (v := series(ch, site, "file.read_latency")) and len(v) == 4 and v, 60, "latencies")
    assert latencies == [12000.0] * 4
    assert series(ch, site, "file.reads") == [10.0] * 4  # 100 reads in 10 s


def test_an_interval_across_a_counter_reset_is_dropped_and_counted_never_negative(ch, site):
    values = series(ch, site, "file.read_latency") + series(ch, site, "file.reads")
    assert min(values) >= 0 and max(series(ch, site, "file.read_latency")) == 12000.0
    assert accounted(ch, site, "samples", "dropped", "counter reset") == 2  # reads and the stall
    assert accounted(ch, site, "samples", "dropped", "baseline: first sample of a cumulative series") == 2
    assert accounted(ch, site, "samples", "dropped", "duplicate") == 2


def test_every_record_and_sample_is_accounted_for(ch, site):
    records_in = accounted(ch, site, "records", "in")
    assert records_in == 8 == accounted(ch, site, "records", "out")
    samples_in = accounted(ch, site, "samples", "in")
    assert samples_in == 15
    out, dropped = accounted(ch, site, "samples", "out"), accounted(ch, site, "samples", "dropped")
    assert out + dropped == samples_in
    assert ch.command("SELECT count() FROM sanlens.metrics WHERE site = {s:String}", parameters={"s": site}) == out


def test_a_source_s_samples_keep_its_key_and_so_one_partition_in_the_order_they_were_read(ch, site, published_ms):
    """The breakdown judges a path's windows in the order they arrive: samples of one source spread over
    partitions would arrive out of order whenever one partition is read ahead of another."""
    consumer = Consumer({**config.kafka_client(), "group.id": f"read-{uuid.uuid4().hex[:6]}", "log_level": 0})
    partitions = consumer.list_topics(topics.SAMPLES, timeout=10).topics[topics.SAMPLES].partitions
    starts = consumer.offsets_for_times([TopicPartition(topics.SAMPLES, p, published_ms) for p in partitions], 10)
    ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in starts}
    unread = {tp.partition for tp in starts if 0 <= tp.offset < ends[tp.partition]}
    consumer.assign([tp for tp in starts if tp.partition in unread])
    found = []  # (partition, metric, ts) in offset order within each partition
    # Up to the ends seen above (the stack's sources keep sending). A partition is done once the consumer's
    # position passes its end: the last offset is often a transaction's commit marker, never delivered.
    deadline = time.monotonic() + 120
    while unread and time.monotonic() < deadline and (msg := consumer.poll(10)) is not None:
        if msg.offset() < ends[msg.partition()] and msg.key() == f"{site}-h".encode():
            record = json.loads(msg.value())  # a record's samples (docs/contract.md)
            found += [(msg.partition(), sample["metric"], record["ts"]) for sample in record["samples"]]
        positions = consumer.position([TopicPartition(topics.SAMPLES, p) for p in unread])
        unread -= {tp.partition for tp in positions if tp.offset >= ends[tp.partition]}
    consumer.close()
    assert len(found) == accounted(ch, site, "samples", "out")
    assert len({p for p, _, _ in found}) == 1
    # the DMV series in their order, then the Perfmon sample published after them (stamped earlier)
    assert [m for _, m, _ in found][-1] == "disk.read_latency"
    for metric in ("file.read_latency", "file.reads"):
        stamps = [ts for _, m, ts in found if m == metric]
        assert stamps == sorted(stamps) and len(stamps) == 4


BAD = {
    "not JSON": b"this is not json MARK",
    "not a JSON object": b'"a string MARK"',
    "missing field": {"name": "win_disk", "tags": {}, "fields": {"Disk_Reads_persec": 1}},
    "unknown measurement": {"name": "win_toaster", "timestamp": 0, "tags": {}, "fields": {"crumbs": 1}},
    "non-numeric value": {"name": "win_disk", "timestamp": 0, "tags": {}, "fields": {"Disk_Reads_persec": "lots"}},
    "non-finite value": b'{"name":"win_disk","timestamp":NOW,"tags":{"marker":"MARK"},'
    b'"fields":{"Disk_Reads_persec":NaN}}',
    "negative value": {"name": "win_disk", "timestamp": 0, "tags": {}, "fields": {"Disk_Reads_persec": -3}},
    "timestamp in the future": {"name": "win_disk", "timestamp": 1, "tags": {}, "fields": {"Disk_Reads_persec": 1}},
    "timestamp too old": {"name": "win_disk", "timestamp": 2, "tags": {}, "fields": {"Disk_Reads_persec": 1}},
    "beyond physical bounds": {"name": "win_disk", "timestamp": 0, "tags": {}, "fields": {"Avg._Disk_sec/Write": 3600}},
}


def test_each_kind_of_bad_input_lands_in_the_dead_letter_table_and_the_job_keeps_running(stack, ch):
    marker = uuid.uuid4().hex[:8]
    now = int(time.time() * 1000)
    payloads = []
    for record in BAD.values():
        if isinstance(record, dict):
            record = dict(record, tags={"marker": marker})
            record["timestamp"] = (
                {1: now + 86_400_000, 2: now - 90 * 86_400_000}.get(record.get("timestamp"), now)
                if "timestamp" in record
                else None
            )
            record = {k: v for k, v in record.items() if v is not None}
            payloads.append(json.dumps(record).encode())
        else:
            payloads.append(record.replace(b"MARK", marker.encode()).replace(b"NOW", str(now).encode()))
    publish(payloads, f"bad-{marker}")
    got = wait_until(
        lambda: (
            (
                rows := dict(
                    ch.query(
                        "SELECT reason, payload FROM sanlens.deadletter "
                        "WHERE stage = 'normalize' AND position(payload, {m:String}) > 0",
                        parameters={"m": marker},
                    ).result_rows
                )
            )
            and len(rows) == len(BAD)
            and rows
        ),
        120,
        "ten dead letters",
    )
    assert set(got) == set(BAD)
    assert sorted(got.values()) == sorted(p.decode() for p in payloads)  # the payload exactly as it came
    assert json.loads(sanlens("status", "--json").stdout)["flink"]["detail"].startswith("normalize: RUNNING")
    good = f"ok-{marker}"
    publish(
        [
            {
                "name": "win_disk",
                "timestamp": now,
                "tags": {"site": good, "host": good, "instance": "C:"},
                "fields": {"Disk_Reads_persec": 5},
            }
        ],
        good,
    )
    wait_until(lambda: series(ch, good, "disk.reads") == [5.0], 60, "a good record after the bad ones")


def test_accounting_counts_a_partition_held_back_longer_than_any_idle_timeout(stack):
    """A partition whose records reach the job long after the others' (backpressure, a slow broker): the job
    runs on a topic of its own with producer timestamps, partition 0 flows for 15 s (three times the 5 s
    idle timeout), then partition 1 delivers records stamped a minute earlier. An event-time window would
    have closed over them and dropped them; the accounting must still count every record."""
    run = uuid.uuid4().hex[:6]
    source, prefix, site = f"held-{run}.metrics", f"held-{run}", f"held-{run}"
    admin = AdminClient(config.kafka_client())
    topics = [NewTopic(source, 2, 1, config={"message.timestamp.type": "CreateTime"})]
    topics += [NewTopic(f"{prefix}.{t}", 1, 1) for t in ("samples", "deadletter", "accounting")]
    for f in admin.create_topics(topics).values():
        f.result(30)
    argv, env = flink_job("normalize", source, prefix, bounded=False)
    job = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    producer = Producer(config.kafka_client())

    def send(partition: int, t_ms: int) -> None:
        record = {
            "name": "win_disk",
            "timestamp": t_ms,
            "fields": {"Disk_Reads_persec": 5},
            "tags": {"site": site, "host": f"{site}-h{partition}", "instance": "C:"},
        }
        producer.produce(source, json.dumps(record).encode(), partition=partition, timestamp=t_ms)
        producer.flush(10)

    try:
        sent = 0

        def started() -> bool:
            nonlocal sent
            send(0, int(time.time() * 1000))
            sent += 1
            return _records_in(f"{prefix}.accounting", site) > 0

        wait_until(started, 180, "the job to count its first records")
        for _ in range(15):
            send(0, int(time.time() * 1000))
            sent += 1
            time.sleep(1)
        held_back = int(time.time() * 1000) - 60_000
        for i in range(20):
            send(1, held_back + i * 100)
        sent += 20
        send(0, int(time.time() * 1000))
        sent += 1
        counted = wait_until(
            lambda: (n := _records_in(f"{prefix}.accounting", site)) >= sent and n,
            90,
            f"{sent} records in the accounting",
        )
        time.sleep(6)  # one more emission: nothing is counted twice either
        assert _records_in(f"{prefix}.accounting", site) == counted == sent
    finally:
        job.terminate()
        job.wait(60)
        admin.delete_topics([t.topic for t in topics])


def _records_in(topic: str, site: str) -> int:
    consumer = Consumer({**config.kafka_client(), "group.id": f"read-{uuid.uuid4().hex[:6]}", "log_level": 0})
    consumer.assign([TopicPartition(topic, 0, 0)])
    total = 0
    while (msg := consumer.poll(3)) is not None:
        row = json.loads(msg.value())
        if row["site"] == site and row["unit"] == "records" and row["outcome"] == "in":
            total += row["records"]
    consumer.close()
    return total
