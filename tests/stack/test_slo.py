"""Latency SLOs through the whole stack (Kafka -> normalize -> histograms and breakdown -> burn_rates -> loader ->
sanlens.slo_windows and sanlens.slo_alerts -> the dbt view sanlens_marts.slo_compliance) against the simulator's
ground truth, on a scenario of its own with the default SLOs (slo/slos.yaml): a fabric delay of 3 ms for 30
minutes on one all-flash host's switch port pages within 5 minutes and resolves after; 0.6 ms for six hours on
another host's port burns the budget slowly: a ticket and no page; a third host raises nothing. The burn rates
and the attainment match the same computation on the truth's per-interval histograms."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
import uuid
from datetime import datetime

import pytest

from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config
from sanlensctl.components import alertmanager, inbox
from slo import definitions
from tests import scenarios
from tests.support import job_plan, play_through_telegraf, sanlens, wait_until


def test_every_slo_of_the_default_set_compiles_into_the_job_s_plan(monkeypatch):
    """The SLOs become SQL in the JVM: one plan, the burn-rate evaluator fed from the SLOs' union."""
    plan = job_plan(monkeypatch, "burn_rates")
    assert "evaluate_burn_rates" in plan and "PythonCalc" not in plan
    assert plan.count("Deduplicate(keep=[FirstRow]") >= 2
    # every SLO reads one keyed function that pairs the histograms' rows with the path windows (issue 38: no join
    # holds them): its state holds each window's row once
    execution = plan.split("== Optimized Execution Plan ==")[1]
    assert not [line for line in execution.splitlines() if "Join(" in line and "buckets" in line]
    assert execution.count("ProcessTableFunction(invocation=[pair_volume_windows") == 1


def alerts_of(played, host: str, severity: str) -> list[dict]:
    return [a for a in played.alerts if a["entity"].startswith(f"{played.id}-{host}:") and a["severity"] == severity]


def test_a_fast_burn_pages_within_five_minutes_and_resolves_after(slo_played):
    onset, end = slo_played.run.start_s + 3600, slo_played.run.start_s + 5400
    pages = alerts_of(slo_played, "sql1", "page")
    assert {(a["slo"], a["entity"]) for a in pages} == {("flash-reads", f"{slo_played.id}-sql1:D")}
    firing = [a["t"] for a in pages if a["state"] == "firing"]
    assert onset < firing[0] <= onset + 300
    resolved = [a["t"] for a in pages if a["state"] == "resolved"]
    assert len(resolved) == 1 and end < resolved[0] <= end + 3600
    assert max(firing) < resolved[0]


def test_a_slow_burn_raises_a_ticket_and_no_page(slo_played):
    assert alerts_of(slo_played, "sql2", "page") == []
    tickets = alerts_of(slo_played, "sql2", "ticket")
    assert {a["slo"] for a in tickets} == {"flash-reads"} and any(a["state"] == "firing" for a in tickets)


def test_a_healthy_host_raises_nothing(slo_played):
    assert [a for a in slo_played.alerts if a["entity"].startswith(f"{slo_played.id}-sql3:")] == []


def test_burn_rates_match_the_truth_within_a_thousandth_of_the_budget(slo_played):
    """Every alert's burn rates, against the same windows summed from the truth's histograms."""
    budget = {s.name: s.budget for s in definitions.load(definitions.DEFAULT_FILE).slos}
    checked = 0
    for a in slo_played.alerts:
        minutes = slo_played.truth[(a["slo"], a["entity"])]
        for window, seconds in definitions.WINDOWS.items():
            cells = [c for m, c in minutes.items() if a["t"] - seconds <= m < a["t"]]
            good, total = sum(c[0] for c in cells), sum(c[1] for c in cells)
            expected = (1 - good / total) / budget[a["slo"]]
            assert a[f"burn_{window}"] == pytest.approx(expected, abs=1e-3), (a["slo"], a["entity"], a["t"], window)
        checked += 1
    assert checked > 30


def test_attainment_per_day_matches_the_truth(slo_played, ch):
    out = sanlens("dbt", "build", "--select", "+slo_compliance")
    assert out.returncode == 0, out.stdout[-3000:]
    rows = ch.query(
        "SELECT slo, entity, toUnixTimestamp(toDateTime(day)) AS day, good, total, attainment, budget_left "
        "FROM sanlens_marts.slo_compliance WHERE site IN {s:Array(String)}",
        parameters={"s": slo_played.sites},
    ).named_results()
    rows = list(rows)
    assert {r["slo"] for r in rows} == {"flash-reads", "flash-writes"}
    budget = {s.name: s.budget for s in definitions.load(definitions.DEFAULT_FILE).slos}
    for r in rows:
        cells = [c for m, c in slo_played.truth[(r["slo"], r["entity"])].items() if r["day"] <= m < r["day"] + 86400]
        good, total = sum(c[0] for c in cells), sum(c[1] for c in cells)
        assert r["total"] == total, r
        assert (1 - r["attainment"]) / budget[r["slo"]] == pytest.approx(
            (1 - good / total) / budget[r["slo"]], abs=1e-3
        )


# The page resolves once the 30 m window of the page's slower rule (6 h and 30 m) has left END behind: the
# scenario plays to 35 minutes after it (126 s in all at 20x; at 40x a page's evaluation once came 20 s of wall clock,
# 800 s of the data's, behind the checkpoints)
SPEED, ONSET, END = 20.0, 120, 420
DURATION = END + 35 * 60


def alertmanager_alerts(entity: str) -> list[dict]:
    with urllib.request.urlopen(f"http://127.0.0.1:{config.ALERTMANAGER_PORT}/api/v2/alerts", timeout=5) as resp:
        return [a for a in json.load(resp) if a["labels"].get("entity") == entity]


def test_a_live_incident_pages_through_alertmanager_once_and_resolves(stack, ch, tmp_path):
    """Live, through Telegraf at 20x: the page for a 3 ms fabric delay reaches the stack's real Alertmanager
    (GET /api/v2/alerts) within 5 minutes of the onset on the wall clock, and on the data's (plus the upstream
    jobs' checkpoints at the playback's speed), labelled with the SLO, the entity and the severity;
    Alertmanager delivers it once to the stack's inbox (slo/inbox.py), naming the fabric and the stalled switch
    port as its cause, and once the burn stops it is resolved there too; no notification failed. The healthy host
    pages never."""
    run_id = f"p{uuid.uuid4().hex[:6]}"
    (tmp_path / "paging.yaml").write_text(
        scenarios.text("slo-paging", id=run_id, onset=ONSET, end=END, duration=DURATION)
    )
    s = scenario_file.load(tmp_path / "paging.yaml")
    run = Run(s, tmp_path / "truth", config.KAFKA_BOOTSTRAP, speed=SPEED)
    entity, healthy = f"{run_id}-sql1:D", f"{run_id}-sql2:"
    seen, playing = {}, threading.Event()

    def watch():  # when Alertmanager first holds the page, on the wall clock
        while playing.is_set() and "page" not in seen:
            try:
                if any(a["labels"]["severity"] == "page" for a in alertmanager_alerts(entity)):
                    seen["page"] = time.time()
            except OSError:
                pass
            time.sleep(1)

    playing.set()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    wall0 = time.time()
    try:
        play_through_telegraf(run, f"paging-{run_id}")
        onset_wall = wall0 + ONSET / SPEED

        def received():
            kept = inbox.notifications()
            return [(k["notification"], datetime.fromisoformat(k["received_at"]).timestamp()) for k in kept]

        def pages():
            return [
                (n, at)
                for n, at in received()
                if n["groupLabels"].get("entity") == entity and n["groupLabels"]["severity"] == "page"
            ]

        wait_until(
            lambda: [n for n, _ in pages() if n["status"] == "resolved"], 300, "the resolved page at the webhook"
        )
        playing.clear()
        watcher.join(10)
        assert "page" in seen and seen["page"] - onset_wall <= 300, (seen, onset_wall)
        (page, paged_at), (resolved, _) = pages()  # delivered once, then resolved once
        assert page["status"] == "firing" and page["receiver"] == "page" and paged_at - onset_wall <= 300
        [alert] = page["alerts"]
        assert {k: alert["labels"][k] for k in ("slo", "entity", "severity")} == {
            "slo": "flash-reads",
            "entity": entity,
            "severity": "page",
        }
        # the slow drain is on sql1's own switch port, 0/0: the page says so
        assert alert["annotations"]["cause"].startswith(f"fabric on switch port {run_id}-sw:0/0: +"), alert
        # On the data's clock, the job's first page: 5 minutes, plus what the burn_rates job's input waited for on
        # the way, the normalize and the histograms jobs' checkpoints (10 s each, exactly-once), at the playback's
        # speed (the notification itself carries the last minute's evaluation before Alertmanager sent it)
        evaluated = ch.query(
            "SELECT toUnixTimestamp(min(ts)) FROM sanlens.slo_alerts FINAL WHERE entity = {e:String} "
            "AND severity = 'page' AND state = 'firing'",
            parameters={"e": entity},
        ).first_row[0]
        assert run.start_s + ONSET < evaluated <= run.start_s + ONSET + 300 + 2 * 10 * SPEED
        assert resolved["status"] == "resolved"
        assert run.start_s + END < datetime.fromisoformat(resolved["alerts"][0]["endsAt"]).timestamp()
        assert not [a for a in alertmanager_alerts(entity) if a["labels"]["severity"] == "page"]
        assert not [n for n, _ in received() if n["groupLabels"].get("entity", "").startswith(healthy)]
        sent, failed = alertmanager.notifications()  # Alertmanager's own metrics
        assert sent >= 2 and failed == 0, (sent, failed)
    finally:
        playing.clear()
