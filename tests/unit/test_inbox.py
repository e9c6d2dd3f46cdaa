"""The local stack's inbox (slo/inbox.py), the receiver of Alertmanager's webhook, and ./sanlens pages over what it
kept: pure logic on a server of the test's own, no stack."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from sanlensctl import pages
from slo import inbox

NOTIFICATION = {
    "receiver": "page",
    "status": "firing",
    "groupLabels": {"slo": "flash-reads", "entity": "acme-sql1:D", "severity": "page"},
    "alerts": [
        {
            "status": "firing",
            "labels": {"slo": "flash-reads", "entity": "acme-sql1:D", "severity": "page"},
            "annotations": {"cause": "fabric on switch port fa1:0/5: +1,200 us per I/O since 2026-11-27 16:13 UTC"},
            "startsAt": "2026-11-27T16:15:00Z",
        }
    ],
}


@pytest.fixture
def served(tmp_path):
    file = tmp_path / "inbox" / "notifications.jsonl"
    server = inbox.server(0, file)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", file
    server.shutdown()
    server.server_close()


def post(url: str, body: bytes) -> int:
    request = urllib.request.Request(f"{url}/alerts", body, {"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def test_a_notification_is_kept_on_disk_before_it_is_answered_and_listed(served):
    url, file = served
    assert post(url, json.dumps(NOTIFICATION).encode()) == 200
    [kept] = inbox.read(file)  # on disk once answered
    assert kept["notification"] == NOTIFICATION and kept["received_at"].startswith("20")
    with urllib.request.urlopen(f"{url}/notifications", timeout=5) as resp:
        assert json.load(resp) == [kept]


def test_what_is_not_a_notification_is_refused_and_not_kept(served):
    url, file = served
    assert post(url, b"{not json") == 400
    assert inbox.read(file) == []


def test_pages_lists_each_alert_with_its_cause(served, monkeypatch):
    url, file = served
    for _ in range(3):
        post(url, json.dumps(NOTIFICATION).encode())
    monkeypatch.setattr(pages.config, "INBOX_FILE", file)
    rows = pages.rows(limit=2)
    assert len(rows) == 2
    row = dict(zip(pages.COLUMNS, rows[-1], strict=True))
    assert {k: row[k] for k in ("receiver", "status", "severity", "slo", "entity", "since")} == {
        "receiver": "page",
        "status": "firing",
        "severity": "page",
        "slo": "flash-reads",
        "entity": "acme-sql1:D",
        "since": "2026-11-27 16:15:00",
    }
    assert row["cause"].startswith("fabric on switch port fa1:0/5")
