"""The Kafka -> ClickHouse loader (ingest/loader/), one process."""

from __future__ import annotations

import sys

from ingest.loader.loader import DEFAULT_ROUTES
from sanlensctl import config, db, offsets, procs

NAME = "loader"
PROCESSES = [NAME]
PORT = None
SCRIPT = config.ROOT / "ingest" / "loader" / "loader.py"
GROUP = "sanlens-loader"


def start() -> int:
    return procs.start(NAME, [sys.executable, str(SCRIPT)], config.tool_env())


def freshness() -> str:
    """How long samples took from their arrival in Kafka to a row queryable in ClickHouse, over the last minute."""
    try:
        p50, p95, rows = (
            db.client()
            .query(
                "SELECT quantile(0.5)(d), quantile(0.95)(d), count() FROM (SELECT dateDiff('millisecond', arrived_at, "
                "loaded_at) / 1000 AS d FROM sanlens.metrics WHERE loaded_at > now64(3) - INTERVAL 1 MINUTE)"
            )
            .result_rows[0]
        )
    except Exception as exc:  # the loader's health does not hang on ClickHouse answering this
        return f"freshness unknown ({str(exc).splitlines()[0][:80]})"
    return f"arrival to queryable p50 {p50:.1f} s, p95 {p95:.1f} s (last minute)" if rows else "no samples last minute"


def probe() -> dict:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": config.KAFKA_BOOTSTRAP, "log_level": 0})
    group = admin.describe_consumer_groups([GROUP])[GROUP].result(timeout=5)
    members = len(group.members)
    lag = offsets.position(GROUP, list(DEFAULT_ROUTES)).lag
    return {
        "healthy": members > 0,
        "port": PORT,
        "version": "-",
        "detail": f"consumer group {GROUP}: {members} member(s), lag {lag:,}; {freshness()}",
    }
