"""Alertmanager with the project's config (slo/alertmanager/alertmanager.yml): SLO alerts are grouped by slo,
entity and severity and routed by severity to the webhook; the real binary takes the rendered config, and a
posted alert reaches a webhook receiver once, with its labels."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
import uuid
from datetime import UTC, datetime

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sanlensctl import config, install
from sanlensctl.components import alertmanager as component
from slo import notifier
from tests.support import ROOT, wait_until


def test_the_rendered_config_routes_by_severity_to_the_webhook(tmp_path):
    source = component.CONFIG.read_text()
    doc = yaml.safe_load(component.render(tmp_path / "am.yml", "http://127.0.0.1:1234/hook").read_text())
    assert component.CONFIG.read_text() == source  # slo/ stays the one source
    route = doc["route"]
    assert route["group_by"] == ["slo", "entity", "severity"]
    by_severity = {r["matchers"][0].split('"')[1]: r for r in route["routes"]}
    assert {s: r["receiver"] for s, r in by_severity.items()} == {"page": "page", "ticket": "ticket"}
    assert route["receiver"] == "ticket"  # an alert without a known severity is not dropped, and does not page
    receivers = {r["name"]: r for r in doc["receivers"]}
    for name in ("page", "ticket"):
        assert [w["url"] for w in receivers[name]["webhook_configs"]] == ["http://127.0.0.1:1234/hook"]
        assert receivers[name]["webhook_configs"][0]["send_resolved"] is True
    assert by_severity["page"]["group_wait"] == "10s" and route["group_wait"] == "1m"
    assert "--cluster.listen-address=" in component.argv(tmp_path / "am.yml", tmp_path, 1)  # no gossip on 9094


def test_docker_compose_runs_the_same_version_and_config():
    service = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["alertmanager"]
    assert service["image"] == f"prom/alertmanager:v{install.ALERTMANAGER_VERSION}"
    assert "./slo/alertmanager/alertmanager.yml:/etc/sanlens/alertmanager.yml:ro" in service["volumes"]
    default = {
        w["url"] for r in yaml.safe_load(component.CONFIG.read_text())["receivers"] for w in r["webhook_configs"]
    }
    [url] = default  # the url that compose's sed replaces with SANLENS_ALERT_WEBHOOK_URL
    assert f'sed "s|{url}|$$SANLENS_ALERT_WEBHOOK_URL|" /etc/sanlens/alertmanager.yml' in service["command"][0]
    assert "--cluster.listen-address=" in service["command"][0]


def post(url: str, alerts: list[dict]) -> None:
    request = urllib.request.Request(
        f"{url}/api/v2/alerts", json.dumps(alerts).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as resp:
        assert resp.status == 200


def alert(severity: str, entity: str = "host-1:disk-1") -> dict:
    return {
        "labels": {"alertname": "LatencySLOBurn", "slo": "flash-reads", "entity": entity, "severity": severity},
        "annotations": {"summary": f"flash-reads burning on {entity}"},
        "startsAt": datetime.now(UTC).isoformat(),
        "generatorURL": "http://127.0.0.1/sanlens/slo/flash-reads",
    }


def test_a_page_reaches_the_webhook_once_with_its_labels_and_holds_back_the_ticket(alertmanager):
    page, ticket = alert("page"), alert("ticket")
    post(alertmanager.url, [page, ticket])

    def held() -> dict | None:
        # the inhibitor learns of the page from the alert store's feed, a moment after the POST (CI, under load:
        # the ticket still active at the first asking)
        with urllib.request.urlopen(f"{alertmanager.url}/api/v2/alerts", timeout=5) as resp:
            alerts = {a["labels"]["severity"]: a for a in json.load(resp)}
        return alerts if alerts.get("ticket", {}).get("status", {}).get("state") == "suppressed" else None

    alerts = wait_until(held, 20, "the ticket held back by the page")
    assert alerts["page"]["labels"] == page["labels"] and alerts["page"]["status"]["state"] == "active"
    assert alerts["ticket"]["status"]["inhibitedBy"]

    wait_until(lambda: alertmanager.notifications, 40, "the page at the webhook (group_wait 10 s)")
    post(alertmanager.url, [page])  # re-posted while it fires, as a rule evaluator does: no second page
    time.sleep(5)
    assert len(alertmanager.notifications) == 1, alertmanager.notifications
    notification = alertmanager.notifications[0]
    assert notification["receiver"] == "page" and notification["status"] == "firing"
    assert notification["groupLabels"] == {"slo": "flash-reads", "entity": "host-1:disk-1", "severity": "page"}
    [sent] = notification["alerts"]
    assert sent["labels"] == page["labels"] and sent["annotations"] == page["annotations"]
    assert sent["generatorURL"] == page["generatorURL"]
    assert component.notifications(alertmanager.url) == (1, 0)  # its own metrics: one sent, none failed


def test_a_notification_no_receiver_takes_is_counted_as_failed(alertmanager):
    """What makes `status` show Alertmanager unhealthy: its metrics count a notification nobody received."""
    alertmanager.receiver.stop()  # nothing listens on the webhook any more
    post(alertmanager.url, [alert("page", entity="host-2:disk-1")])
    wait_until(lambda: component.notifications(alertmanager.url)[1] >= 1, 60, "a failed notification (group_wait 10 s)")


def slo_message(entity: str, state: str) -> dict:
    """A message of alerts.slo as the burn_rates job writes it."""
    burn = {f"burn_{w}": 20.0 for w in notifier.WINDOWS}
    ts = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    labels = {"slo": "flash-reads", "entity": entity, "site": "s1", "severity": "page", "state": state}
    return {"ts": ts, **labels, **burn, "budget_left": 0.9, "period_good": 999.0, "period_total": 1000.0}


def active(alertmanager, entity: str) -> list[dict]:
    with urllib.request.urlopen(f"{alertmanager.url}/api/v2/alerts", timeout=5) as resp:
        return [a for a in json.load(resp) if a["labels"]["entity"] == entity]


def test_the_notifier_waits_out_alertmanager_down_for_a_minute_and_loses_nothing(stack, alertmanager, tmp_path):
    """alerts.slo -> the notifier -> Alertmanager -> the webhook: an alert produced while Alertmanager is down
    reaches it once it is back; re-posts while firing page once; the resolved message ends the alert."""
    suffix = uuid.uuid4().hex[:8]
    topic, entity = f"test.alerts.{suffix}", f"host-{suffix}:D"
    admin = AdminClient(config.kafka_client())
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    producer = Producer(config.kafka_client())

    def send(state: str) -> None:
        producer.produce(topic, json.dumps(slo_message(entity, state)).encode(), key=entity.encode())
        producer.flush(30)

    alertmanager.kill()
    log = open(tmp_path / "notifier.log", "w+")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from slo import notifier; notifier.run({config.KAFKA_BOOTSTRAP!r}, "
            f"{alertmanager.url!r}, {topic!r}, 'test-notifier-{suffix}')",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    try:
        send("firing")
        time.sleep(60)
        assert proc.poll() is None
        assert "Alertmanager unavailable" in (tmp_path / "notifier.log").read_text()
        alertmanager.start()
        wait_until(lambda: active(alertmanager, entity), 30, "the alert posted once Alertmanager is back")
        send("firing")  # the job re-sends a firing alert every minute
        page = wait_until(
            lambda: [n for n in alertmanager.notifications if n["groupLabels"]["entity"] == entity],
            60,
            "the page at the webhook",
        )
        assert page[0]["status"] == "firing" and page[0]["receiver"] == "page"
        send("resolved")
        wait_until(lambda: not active(alertmanager, entity), 30, "the alert resolved")
        # Alertmanager then notifies the resolution at the page route's next group interval, a minute on: its
        # own work, which tests/stack/test_slo.py's live page waits for at the webhook.
        notes = [n for n in alertmanager.notifications if n["groupLabels"]["entity"] == entity]
        assert [n["status"] for n in notes] == ["firing"], notes
    finally:
        proc.kill()
        log.close()


def test_the_example_receivers_load_in_the_real_alertmanager(tmp_path):
    """slo/alertmanager/receivers.example.yml, copied into the config as its comment says, is a config the real
    binary serves (an invalid receiver makes it exit at start)."""
    install.alertmanager()
    doc = yaml.safe_load(component.CONFIG.read_text())
    example = yaml.safe_load((component.CONFIG.parent / "receivers.example.yml").read_text())
    assert {r["name"] for r in example["receivers"]} == {r["name"] for r in doc["receivers"]}  # the routes' names
    doc["receivers"] = example["receivers"]
    (tmp_path / "am.yml").write_text(yaml.safe_dump(doc))
    port = config.free_port()
    proc = subprocess.Popen(
        component.argv(tmp_path / "am.yml", tmp_path, port), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:

        def status():
            assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/status", timeout=2) as resp:
                    return json.load(resp)
            except OSError:
                return None

        loaded = wait_until(status, 30, "Alertmanager serving the example receivers")
        assert "pagerduty_configs" in loaded["config"]["original"] and "email_configs" in loaded["config"]["original"]
    finally:
        proc.kill()
        proc.wait()


def test_the_cause_names_the_incident_open_at_the_alert_with_its_start_and_end():
    """An incident still open at the alert comes before a larger one that ended earlier in the hour; its start is
    its own, not the earliest of its component's, and its paths are those of the incidents overlapping it."""
    t = datetime(2026, 11, 28, 2, 52, tzinfo=UTC)

    def at(minute):
        return datetime(2026, 11, 28, 2, minute)

    incidents = [  # contributor, component, path, started, ended, excess, severity
        ("fabric", "fa1:0/20", "h:D::read", at(41), at(46), 1840.0, "severe"),
        ("host_queueing", "h", "h:D::read", at(50), None, 13800.0, "warning"),
        ("host_queueing", "h", "h:L::read", at(51), None, 9000.0, "warning"),
        ("host_queueing", "h", "h:D::read", at(10), at(12), 150.0, "warning"),
        ("array", "af2", "h:D::read", at(20), at(25), 90000.0, "severe"),
    ]
    words = notifier._incident_in_words(incidents, t, "h:D")
    assert words.startswith("host queueing on host h: +13,800 us per I/O since 2026-11-28 02:50 UTC, still open")
    assert "warning incident on 2 path(s)" in words
    ended = notifier._incident_in_words(incidents[:1] + incidents[3:4], t, "h:D")  # none open: the largest
    assert ended.startswith("fabric on switch port fa1:0/20: +1,840 us per I/O since 2026-11-28 02:41 UTC, ended 02:46")
