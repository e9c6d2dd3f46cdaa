"""The notifier's wait for a page's cause, against a stand-in of the store's answers (the queries themselves run
against ClickHouse in stack/test_slo.py)."""

from __future__ import annotations

from datetime import datetime

from slo import notifier

ALERT = {"ts": "2026-11-28T12:00:00.000Z", "site": "s", "state": "firing", "entity": "h:D"}
PARAMS = {"prefix": "h:D:", "direction": "", "ts": "2026-11-28 12:00:00.000"}
COVERED = datetime(2026, 11, 28, 12, 1)  # past the alert's time by more than CAUSE_MARGIN_S


class Store:
    """The path windows cover the alert from the first poll; the incident's rows come on poll `incident_at`."""

    def __init__(self, incident_at: int):
        self.polls, self.incident_at = 0, incident_at

    def query(self, sql: str, parameters: dict):
        if sql == notifier.INCIDENTS:
            self.polls += 1
            rows = (
                [("fabric", "fa1:4", "h:D:read", COVERED, None, 900.0, "major")]
                if self.polls >= self.incident_at
                else []
            )
            return Answer(rows)
        return Answer([(COVERED,)])


class Answer:
    def __init__(self, rows):
        self.result_rows, self.first_row = rows, rows[0] if rows else None


def waits(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(notifier.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(notifier.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    return clock


def test_an_incident_loaded_after_the_path_windows_that_cover_the_alert_is_still_the_pages_cause(monkeypatch):
    waits(monkeypatch)
    incidents, behind = notifier._incidents_once_covered(Store(incident_at=3), ALERT, PARAMS, deadline=90.0)
    assert [r[1] for r in incidents] == ["fa1:4"] and behind == ""


def test_without_an_incident_the_page_waits_only_the_incidents_grace_once_the_windows_cover_it(monkeypatch):
    clock = waits(monkeypatch)
    incidents, behind = notifier._incidents_once_covered(Store(incident_at=10**6), ALERT, PARAMS, deadline=90.0)
    assert incidents == [] and behind == ""
    assert notifier.INCIDENTS_AFTER_S <= clock[0] < notifier.INCIDENTS_AFTER_S + 2 * notifier.CAUSE_POLL_S
