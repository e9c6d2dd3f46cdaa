"""Creates the Kafka topics of the contract (ingest/topics.yaml) if they are missing."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

from ingest.topics import CONTRACT
from sanlensctl import config


def ensure(bootstrap: str | None = None) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap or config.KAFKA_BOOTSTRAP, "log_level": 0})
    existing = set(admin.list_topics(timeout=10).topics)
    wanted = []
    for name, spec in CONTRACT.items():
        if name in existing:
            continue
        topic_config = (
            {"cleanup.policy": "compact"}
            if spec.get("compacted")
            else {"retention.ms": str(int(spec.get("retention_hours", 72) * 3600 * 1000))}
        )
        topic_config.update({k: str(v) for k, v in spec.get("config", {}).items()})
        wanted.append(NewTopic(name, num_partitions=spec["partitions"], replication_factor=1, config=topic_config))
    for future in admin.create_topics(wanted).values() if wanted else []:
        future.result(timeout=30)
    return [t.topic for t in wanted]
