"""The Kafka -> ClickHouse loader (ingest/loader/), one process."""

from __future__ import annotations

import sys

from sanlensctl import config, procs

NAME = "loader"
PROCESSES = [NAME]
PORT = None
SCRIPT = config.ROOT / "ingest" / "loader" / "loader.py"


def start() -> int:
    return procs.start(NAME, [sys.executable, str(SCRIPT)], config.tool_env())


def probe() -> dict:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": config.KAFKA_BOOTSTRAP, "log_level": 0})
    group = admin.describe_consumer_groups(["sanlens-loader"])["sanlens-loader"].result(timeout=5)
    members = len(group.members)
    return {
        "healthy": members > 0,
        "port": PORT,
        "version": "-",
        "detail": f"consumer group sanlens-loader: {members} member(s), state {group.state.name}",
    }
