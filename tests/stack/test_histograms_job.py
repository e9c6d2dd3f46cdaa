"""The histograms job, really running (bounded, on its own topics): array bucket deltas land in the
window their interval ends in, out-of-order ones included, and merge by adding counts; a host disk's
interval averages become an I/O-weighted histogram of averages, named so (host_interval_avg)."""

from __future__ import annotations

import json
import subprocess
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from sanlensctl import config
from tests.histogram_records import host_record, sample
from tests.support import flink_job


def read_all(topic: str) -> list[dict]:
    c = Consumer({**config.kafka_client(), "group.id": f"read-{uuid.uuid4().hex[:6]}", "log_level": 0})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    while (msg := c.poll(5)) is not None:
        out.append(json.loads(msg.value()))
    c.close()
    return out


def test_bucket_deltas_land_in_their_window_and_merge_by_adding(stack):
    run = uuid.uuid4().hex[:6]
    source, prefix = f"hist-{run}.samples", f"hist-{run}"
    admin = AdminClient(config.kafka_client())
    topics = [NewTopic(t, 1, 1) for t in (source, f"{prefix}.histograms")]
    for f in admin.create_topics(topics).values():
        f.result(30)
    records = [
        sample(1, "write", 4, 10),
        sample(3, "write", 4, 5),
        sample(4, "write", 5, 7),  # window 0-10 s
        sample(4, "read", 3, 2),
        sample(6, "write", 4, 1, volume="v2"),
        sample(12, "write", 4, 100),  # window 10-20 s
        sample(200, "write", 31, 1),
        sample(2, "write", 4, 3),  # out of order: kept
        {
            **sample(14, "read", 6, 4, volume="v3"),
            "samples": [  # one record's histogram: one message
                {"metric": "volume.read_service_time_hist", "value": 4.0, "unit": "ios", "bucket": 6},
                {"metric": "volume.read_service_time_hist", "value": 9.0, "unit": "ios", "bucket": 8},
            ],
        },
        # 0.1 ms: bucket 4; 3 ms: bucket 9
        host_record(10, read_latency=100.0, reads=50.0, writes=20.0, write_latency=3000.0),
        host_record(20, reads=7.5, read_latency=125.0, write_latency=500.0),  # 0.125 ms: still 4; no write rate
        host_record(30, read_latency=900.0),  # no rate: no I/Os
        host_record(30, reads=9.0),  # a rate in another record (not the same sample): no I/Os
        host_record(40, read_latency=900.0, reads=0.0),  # no I/Os
    ]
    producer = Producer(config.kafka_client())
    for r in records:
        producer.produce(source, json.dumps(r).encode())
    producer.flush(30)
    try:
        argv, env = flink_job("histograms", source, prefix)
        job = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        assert job.returncode == 0, job.stdout[-2000:] + job.stderr[-3000:]
        got, host, v3_messages = {}, {}, 0
        for h in read_all(f"{prefix}.histograms"):
            v3_messages += h["volume"] == "v3"
            for bucket, ios in zip(h["buckets"], h["ios"], strict=True):  # a message per record and direction
                if h["source"] == "host_interval_avg":
                    host[(h["window_start"][11:19], h["host"], h["disk"], h["direction"], bucket)] = ios
                    continue
                key = (h["window_start"][11:19], h["volume"], h["direction"], bucket)
                got[key] = got.get(key, 0) + ios
        assert v3_messages == 1
        assert got == {
            ("12:00:00", "v1", "write", 4): 18,
            ("12:00:00", "v1", "write", 5): 7,
            ("12:00:00", "v1", "read", 3): 2,
            ("12:00:00", "v2", "write", 4): 1,
            ("12:00:10", "v1", "write", 4): 100,
            ("12:00:10", "v3", "read", 6): 4,
            ("12:00:10", "v3", "read", 8): 9,
            ("12:03:20", "v1", "write", 31): 1,
        }
        assert host == {
            ("12:00:10", "sql1", "D:", "read", 4): 500,
            ("12:00:10", "sql1", "D:", "write", 9): 200,
            ("12:00:20", "sql1", "D:", "read", 4): 75,
        }  # I/Os = rate x the 10 s interval
    finally:
        admin.delete_topics([t.topic for t in topics])
