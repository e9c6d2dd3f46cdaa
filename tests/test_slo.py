"""Latency SLOs through the whole stack (Kafka -> normalize -> histograms and breakdown -> burn_rates -> loader ->
sanlens.slo_windows and sanlens.slo_alerts -> the dbt view sanlens_marts.slo_compliance) against the simulator's
ground truth, on a scenario of its own with the default SLOs (slo/slos.yaml): a fabric delay of 3 ms for 30
minutes on one all-flash host's switch port pages within 5 minutes and resolves after; 0.6 ms for six hours on
another host's port burns the budget slowly: a ticket and no page; a third host raises nothing. The burn rates
and the attainment match the same computation on the truth's per-interval histograms."""

from __future__ import annotations

import json
import sys
import types
import uuid
from collections import defaultdict

import pytest

from flink_jobs.burn_rates import job
from flink_jobs.common import runtime
from ingest import buckets, topics
from sanlensctl import offsets
from sanlensctl.components import flink, loader
from slo import definitions
from tests.breakdown_scenarios import backfill
from tests.support import free_port, sanlens, wait_until
from tests.test_breakdown import wait_for_every_window

SCENARIO = """
name: slo-{id}
seed: 31
interval_s: 10
duration_s: 25200
volume_truth: true
customers:
  - name: c-{id}
    sites:
      - name: s-{id}
        switches: [{{name: {id}-sw, ports: 16}}]
        arrays:
          - {{name: {id}-af1, model: AF8000, media: ssd, firmware: 3.2.1, capacity_iops: 300000}}
          - {{name: {id}-af2, model: AF8000, media: ssd, firmware: 3.2.1, capacity_iops: 300000}}
        hosts:
          - {{name: {id}-sql1, array: {id}-af1, workload: oltp, iops: 4000, databases: [db1]}}
          - {{name: {id}-sql2, array: {id}-af2, workload: oltp, iops: 4000, databases: [db2]}}
          - {{name: {id}-sql3, array: {id}-af2, workload: tpce, iops: 3000, databases: [db3]}}
events:
  # sql1's own switch port (0/0): every read slower than 2 ms for 30 minutes
  - {{type: slow_drain, at: 3600, until: 5400, switch: {id}-sw, port: 0, delay_us: 3000}}
  # sql2's own port (0/1): 0.6 ms more for six hours, a few reads in a thousand past 2 ms
  - {{type: slow_drain, at: 1800, until: 23400, switch: {id}-sw, port: 1, delay_us: 600}}
"""
DISK = {"data": "D:", "log": "L:"}


def test_every_slo_of_the_default_set_compiles_into_the_job_s_plan(monkeypatch):
    """The SLOs become SQL in the JVM: one plan, the burn-rate evaluator fed from the SLOs' union."""
    monkeypatch.setattr(sys, "argv", ["job.py", "--rest-port", str(free_port())])
    args = runtime.arguments(job.__doc__, job.OPTIONS)
    plan = job.statements(runtime.table_env("burn-rates-plan", args), args).explain()
    assert "evaluate_burn_rates" in plan and "PythonCalc" not in plan
    assert plan.count("Deduplicate(keep=[FirstRow]") >= 2


def good_share(bucket: int, threshold_ms: float) -> float:
    """The burn_rates job's interpolation, in Python (flink-jobs/burn_rates/tables.py, good_share)."""
    lower = buckets.lower_ms(bucket)
    upper = 2.0 ** (bucket - 7)
    return min(max((threshold_ms - lower) / (upper - lower), 0.0), 1.0)


def truth_minutes(folder, slos, first_window: float) -> dict:
    """(slo, entity) -> {minute start (epoch s): [good, total]} from the truth's per-interval histograms."""
    out = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for line in (folder / "truth" / "volume_histograms.jsonl").read_text().splitlines():
        v = json.loads(line)
        if v["t"] < first_window:  # the first interval has no delta and no path window
            continue
        for slo in slos:
            figures = v.get(slo.direction)
            if figures is None:
                continue
            threshold = slo.threshold_ms - max(figures["beyond_array_us"], 0) / 1000
            counts = {int(b): n for b, n in figures["ios"].items()}
            good = sum(n * good_share(b, threshold) for b, n in counts.items())
            cell = out[(slo.name, f"{v['host']}:{DISK[v['role']]}")][v["t"] // 60 * 60]
            cell[0], cell[1] = cell[0] + good, cell[1] + sum(counts.values())
    return out


@pytest.fixture(scope="session")
def slo_played(stack, ch, tmp_path_factory):
    run_id = f"o{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("slo")
    # The histograms and the path windows meet in a join that waits 2 minutes (processing time) for the other
    # side: behind another test's backlog, one job runs further ahead of the other than that and windows are
    # lost (flink-jobs/burn_rates/README.md). The scenario starts on an idle pipeline.
    for name in ("histograms", "breakdown"):
        group, inputs = flink.group(name), flink.INPUTS[name]
        backlog = offsets.position(group, inputs).end  # Telegraf's own metrics keep coming: lag is seldom 0
        wait_until(
            lambda g=group, i=inputs, b=backlog: offsets.position(g, i).committed >= b, 600, f"the {name} job's backlog"
        )
    s, run, _ = backfill(folder, SCENARIO.format(id=run_id))
    sites = [f"s-{run_id}"]
    wait_for_every_window(ch, s, run, sites)
    group, inputs = flink.group("burn_rates"), [topics.HISTOGRAMS, topics.BREAKDOWN]
    written = offsets.position(group, inputs).end
    wait_until(lambda: offsets.position(group, inputs).committed >= written, 600, "the burn_rates job")
    outputs = [topics.SLO_WINDOWS, topics.SLO_ALERTS]
    written = offsets.position(loader.GROUP, outputs).end
    wait_until(lambda: offsets.position(loader.GROUP, outputs).committed >= written, 300, "the loader")
    alerts = ch.query(
        "SELECT toUnixTimestamp(ts) AS t, * FROM sanlens.slo_alerts FINAL WHERE site IN {s:Array(String)} ORDER BY ts",
        parameters={"s": sites},
    ).named_results()
    slos = definitions.load(definitions.DEFAULT_FILE)
    truth = truth_minutes(folder, slos.slos, run.start_s + 2 * s.interval_s)
    return types.SimpleNamespace(scenario=s, run=run, id=run_id, sites=sites, alerts=list(alerts), truth=truth)


def alerts_of(played, host: str, severity: str) -> list[dict]:
    return [a for a in played.alerts if a["entity"].startswith(f"{played.id}-{host}:") and a["severity"] == severity]


def test_a_fast_burn_pages_within_five_minutes_and_resolves_after(slo_played):
    onset, end = slo_played.run.start_s + 3600, slo_played.run.start_s + 5400
    pages = alerts_of(slo_played, "sql1", "page")
    assert {(a["slo"], a["entity"]) for a in pages} == {("flash-reads", f"{slo_played.id}-sql1:D:")}
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


@pytest.mark.xfail(
    strict=True,
    reason="known defect, open in issue 11: sanlens.slo_windows holds about 43 % of the I/Os the burn-rate evaluator "
    "counted (its burn rates match the truth), so rows are lost between the job's slo_windows sink and the table",
)
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
