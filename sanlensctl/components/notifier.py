"""The notifier (slo/notifier.py), one process: the SLO alerts of alerts.slo posted to Alertmanager."""

from __future__ import annotations

import sys

from ingest import topics
from sanlensctl import config, offsets, procs

NAME = "notifier"
PROCESSES = [NAME]
PORT = None
SCRIPT = config.ROOT / "slo" / "notifier.py"


def start() -> int:
    return procs.start(NAME, [sys.executable, str(SCRIPT)], config.tool_env())


def probe() -> dict:
    from confluent_kafka.admin import AdminClient

    from slo.notifier import GROUP

    admin = AdminClient({**config.kafka_client(), "log_level": 0})
    members = len(admin.describe_consumer_groups([GROUP])[GROUP].result(timeout=5).members)
    lag = offsets.position(GROUP, [topics.SLO_ALERTS]).lag
    return {
        "healthy": members > 0,
        "port": PORT,
        "version": "-",
        "detail": f"{topics.SLO_ALERTS} -> Alertmanager: consumer group {GROUP}, {members} member(s), lag {lag:,}",
    }
