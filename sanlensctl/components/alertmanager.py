"""Prometheus Alertmanager, built with Go, with slo/alertmanager/alertmanager.yml: routes the SLO alerts by
severity to a webhook. One node: clustering is off (its gossip port, 9094, would clash with Telegraf's)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import yaml

from sanlensctl import config, procs

NAME = "alertmanager"
PROCESSES = [NAME]
PORT = config.ALERTMANAGER_PORT
CONFIG = config.ROOT / "slo" / "alertmanager" / "alertmanager.yml"
BINARY = config.BIN / "alertmanager"
DATA = config.RUN / "alertmanager"  # the rendered config, silences and notification log
URL = f"http://127.0.0.1:{PORT}"


def render(path: Path, webhook_url: str = config.ALERT_WEBHOOK_URL) -> Path:
    """The config of slo/ with every webhook receiver's url set to `webhook_url`, written to `path`."""
    doc = yaml.safe_load(CONFIG.read_text())
    for receiver in doc["receivers"]:
        for webhook in receiver.get("webhook_configs", []):
            webhook["url"] = webhook_url
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"# rendered from {CONFIG.relative_to(config.ROOT)}: edit that file\n" + yaml.safe_dump(doc, sort_keys=False)
    )
    return path


def argv(config_file: Path, data: Path, port: int) -> list[str]:
    return [
        str(BINARY),
        f"--config.file={config_file}",
        f"--storage.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",  # no gossip: a single node
    ]


def start() -> int:
    procs.require_free(PORT, "Alertmanager", "SANLENS_ALERTMANAGER_PORT")
    config_file = render(DATA / "alertmanager.yml")
    return procs.start(NAME, argv(config_file, DATA, PORT), config.tool_env())


def notifications(url: str = URL) -> tuple[int, int]:
    """The notification requests it made to receivers since it started, and those that failed (its own metrics:
    a request that failed is retried, and counts as a failed notification only once its retries run out)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=2) as resp:
        text = resp.read().decode()
    counts = {"alertmanager_notification_requests_total": 0.0, "alertmanager_notification_requests_failed_total": 0.0}
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in counts:
            counts[name] += float(line.rsplit(" ", 1)[1])
    return tuple(int(n) for n in counts.values())


def probe() -> dict:
    """Its API's status (version, cluster, config loaded), how many alerts fire now, and its notifications: a
    notification that failed (no receiver listening, a receiver refusing it) makes it unhealthy."""
    with urllib.request.urlopen(f"{URL}/api/v2/status", timeout=2) as resp:
        status = json.load(resp)
    with urllib.request.urlopen(f"{URL}/api/v2/alerts?active=true&silenced=false&inhibited=false", timeout=2) as resp:
        firing = len(json.load(resp))
    attempted, failed = notifications()
    sent = attempted - failed
    cluster = status["cluster"]["status"]  # "disabled": one node
    failures = f", {failed} FAILED (./sanlens logs alertmanager: is the receiver listening?)" if failed else ""
    return {
        "healthy": "config" in status and not failed,
        "port": PORT,
        "version": status["versionInfo"]["version"],
        "detail": f"{firing} alert(s) firing; notifications to {config.ALERT_WEBHOOK_URL}: {sent} sent{failures}; "
        f"cluster {cluster}",
    }
