"""The notifier: the SLO alerts of alerts.slo (the burn_rates job) posted to Alertmanager's v2 API, one process.

A firing alert is posted without endsAt every time the job sends it (every minute while it fires), so
Alertmanager keeps it active; a resolved one is posted with endsAt. A message is committed only once
Alertmanager took it: while Alertmanager is down the notifier retries the same message (every 5 s) and
nothing is lost; after a crash it posts again from its last commit (Alertmanager deduplicates by labels)."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request

from confluent_kafka import Consumer

from ingest import topics

GROUP = "sanlens-notifier"
RETRY_S = 5
WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")


def alert(message: dict, generator_url: str = "") -> dict:
    """Alertmanager's alert for one message of alerts.slo."""
    burn = ", ".join(f"{w} {message[f'burn_{w}']:.1f}" for w in WINDOWS)
    out = {
        "labels": {
            "alertname": "LatencySLOBurn",
            "slo": message["slo"],
            "entity": message["entity"],
            "severity": message["severity"],
            "site": message["site"],
        },
        "annotations": {
            "summary": f"{message['slo']} on {message['entity']}: error budget burning ({message['severity']})",
            "burn_rates": burn,
            "budget_left": f"{message['budget_left']:.3f}",
            "evaluated_at": message["ts"],
        },
        "generatorURL": generator_url,
    }
    if message["state"] == "resolved":
        out["endsAt"] = message["ts"]
    return out


def post(url: str, alerts: list[dict]) -> None:
    request = urllib.request.Request(
        f"{url}/api/v2/alerts", json.dumps(alerts).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as resp:
        resp.read()


def run(bootstrap: str, alertmanager: str, topic: str = topics.SLO_ALERTS, group: str = GROUP) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 3,
        }
    )
    consumer.subscribe([topic])
    print(f"notifier: {topic} -> {alertmanager}/api/v2/alerts", flush=True)
    while True:
        messages = consumer.consume(500, timeout=1.0)
        batch = [m for m in messages if m.error() is None and m.value()]
        if not batch:
            continue
        alerts = []
        for m in batch:
            try:
                alerts.append(alert(json.loads(m.value())))
            except (ValueError, KeyError) as exc:  # not an alert of the contract: say so and go on
                print(f"notifier: skipped offset {m.offset()}: {exc!r}", flush=True)
        while alerts:
            try:
                post(alertmanager, alerts)
                break
            except (urllib.error.URLError, OSError) as exc:
                print(f"notifier: Alertmanager unavailable ({exc}); retrying in {RETRY_S} s", flush=True)
                time.sleep(RETRY_S)
        consumer.commit(asynchronous=False)


def main() -> None:
    from sanlensctl import config

    run(config.KAFKA_BOOTSTRAP, f"http://127.0.0.1:{config.ALERTMANAGER_PORT}")


if __name__ == "__main__":
    sys.exit(main())
