"""The Kafka topics of the contract (topics.yaml), by id: the one place code takes a topic's name from."""

from __future__ import annotations

from pathlib import Path

import yaml

CONTRACT_FILE = Path(__file__).with_name("topics.yaml")
CONTRACT: dict[str, dict] = yaml.safe_load(CONTRACT_FILE.read_text())
_BY_ID = {spec["id"]: name for name, spec in CONTRACT.items()}

METRICS = _BY_ID["metrics"]
SAMPLES = _BY_ID["samples"]
HISTOGRAMS = _BY_ID["histograms"]
DEADLETTER = _BY_ID["deadletter"]
ACCOUNTING = _BY_ID["accounting"]
AGENT = _BY_ID["agent"]
TOPOLOGY = _BY_ID["topology"]
BREAKDOWN = _BY_ID["breakdown"]
INCIDENTS = _BY_ID["incidents"]
TIER_EPISODES = _BY_ID["tier_episodes"]
SLO_WINDOWS = _BY_ID["slo_windows"]
SLO_ALERTS = _BY_ID["slo_alerts"]


def with_prefix(topic: str, prefix: str | None) -> str:
    """The topic under another namespace (tests and benchmarks write to fresh topics): PREFIX.samples."""
    return topic if prefix is None else f"{prefix}.{topic.split('.', 1)[1]}"
