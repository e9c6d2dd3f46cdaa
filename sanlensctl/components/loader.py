"""The Kafka -> ClickHouse loader (ingest/loader/), one process."""

from __future__ import annotations

import sys

from clickhouse import roles
from ingest.loader.loader import DEFAULT_ROUTES
from sanlensctl import config, offsets, procs

NAME = "loader"
PROCESSES = [NAME]
PORT = None
SCRIPT = config.ROOT / "ingest" / "loader" / "loader.py"
GROUP = "sanlens-loader"


def start() -> int:
    # as the `ingest` role: inserts and its rollups, nothing else (clickhouse/access/roles.yaml)
    env = dict(
        config.tool_env(), SANLENS_CLICKHOUSE_USER="ingest", SANLENS_CLICKHOUSE_PASSWORD=roles.password("ingest")
    )
    return procs.start(NAME, [sys.executable, str(SCRIPT)], env)


def probe() -> dict:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**config.kafka_client(), "log_level": 0})
    group = admin.describe_consumer_groups([GROUP])[GROUP].result(timeout=5)
    members = len(group.members)
    lag = offsets.position(GROUP, list(DEFAULT_ROUTES)).lag
    return {
        "healthy": members > 0,
        "port": PORT,
        "version": "-",
        # how fresh its rows are, per job that writes them: the flink component's detail
        "detail": f"consumer group {GROUP}: {members} member(s), lag {lag:,}",
    }
