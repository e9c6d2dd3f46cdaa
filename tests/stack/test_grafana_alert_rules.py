"""The latency SLOs as Grafana alert rules (grafana/slo_alert_rules.py, provisioned from
grafana/provisioning/alerting/sanlens-slos.yaml). No Grafana server is obtainable here, so the file's structure is
checked against Grafana's file-provisioning format and the SLO definitions (pure, no stack: one rule per SLO and
alert rule, each on the provisioned ClickHouse data source over its long and short windows, firing at the rule's
burn rate; the webhook contact point and the policy's page and ticket lanes); and, marked `stack`, each page rule's
SQL, with the plugin's macros expanded, runs on the SLO scenario (tests/slo_scenario.py): it fires wherever the
burn_rates job paged, with the job's burn rates, and stays under its rate before the incident."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime

import pytest
import yaml

from grafana import generate
from grafana import slo_alert_rules as code
from slo import definitions
from tests.grafana_macros import expand
from tests.grafana_provisioning import DATASOURCE
from tests.support import ROOT

PROVISIONED = yaml.safe_load(code.PATH.read_text())
RULES = [r for group in PROVISIONED["groups"] for r in group["rules"]]
DEFAULTS = definitions.load(definitions.DEFAULT_FILE)
PAIRS = [pytest.param(s, a, id=code.title(s, a)) for s in DEFAULTS.slos for a in DEFAULTS.alerts]
PAGE_RULES = [a for a in DEFAULTS.alerts if a.severity == "page"]


def rule_of(slo, alert, doc: dict = PROVISIONED) -> dict:
    title = code.title(slo, alert)
    found = [r for group in doc["groups"] for r in group["rules"] if r["title"] == title]
    assert len(found) == 1, f"{title}: {len(found)} rules of that title in {code.PATH.name}"
    return found[0]


def data(rule: dict, ref_id: str) -> dict:
    (query,) = [q for q in rule["data"] if q["refId"] == ref_id]
    return query


def queries(rule: dict) -> list[dict]:
    return [q for q in rule["data"] if q["datasourceUid"] != code.EXPRESSIONS]


def test_generated_file_is_up_to_date():
    """The committed file is the default SLOs' (generate.py honours SANLENS_SLOS: a team regenerates with theirs)."""
    env = {k: v for k, v in os.environ.items() if k != "SANLENS_SLOS"}
    out = subprocess.run(
        [sys.executable, str(ROOT / "grafana" / "generate.py"), "--check"], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr


def test_check_notices_a_stale_alert_file(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "sanlens-slos.yaml"
    stale.write_text(code.render(DEFAULTS).replace("for: 2m", "for: 5m"))
    monkeypatch.setattr(code, "PATH", stale)
    monkeypatch.setattr(sys, "argv", ["generate.py", "--check"])
    monkeypatch.delenv("SANLENS_SLOS", raising=False)
    assert generate.main() == 1 and "sanlens-slos.yaml" in capsys.readouterr().err


def test_one_group_of_one_rule_per_slo_and_alert_rule():
    (group,) = PROVISIONED["groups"]
    assert PROVISIONED["apiVersion"] == 1
    assert (group["folder"], group["interval"]) == ("sanlens", "1m")
    expected = [code.title(s, a) for s in DEFAULTS.slos for a in DEFAULTS.alerts]
    assert [r["title"] for r in RULES] == expected


def test_rule_uids_are_unique_and_fit_grafana_s_limit():
    uids = [r["uid"] for r in RULES]
    assert len(set(uids)) == len(uids), uids
    for r in RULES:
        assert len(r["uid"]) <= 40 and re.fullmatch(r"[A-Za-z0-9_-]+", r["uid"]), f"{r['title']}: uid {r['uid']!r}"


def test_uids_of_long_or_odd_slo_names_still_fit():
    (alert,) = PAGE_RULES[:1]
    slos = [
        definitions.Slo(name, "", "host", "read", 2, 0.999, "path", {})
        for name in ("all-flash-reads-of-the-finance-databases-at-night", "all-flash-reads-of-the-finance-db", "a b/c")
    ]
    uids = [code.uid(s, alert) for s in slos]
    assert len(set(uids)) == len(uids), uids
    assert all(len(u) <= 40 and re.fullmatch(r"[A-Za-z0-9_-]+", u) for u in uids), uids


@pytest.mark.parametrize("slo, alert", PAIRS)
def test_every_query_reads_the_provisioned_clickhouse(slo, alert):
    rule = rule_of(slo, alert)
    for q in queries(rule):
        where = f"{rule['title']}, query {q['refId']}"
        assert q["datasourceUid"] == DATASOURCE["uid"], f"{where}: data source {q['datasourceUid']}"
        assert q["model"]["datasource"] == DATASOURCE, f"{where}: data source {q['model']['datasource']}"
        model = {k: q["model"][k] for k in ("editorType", "format", "queryType")}
        assert model == {"editorType": "sql", "format": 1, "queryType": "table"}, f"{where}: {model}"
    assert [q["refId"] for q in queries(rule)] == [code.LONG, code.SHORT], rule["title"]


@pytest.mark.parametrize("slo, alert", PAIRS)
def test_queries_run_the_burn_rate_sql_over_the_long_and_short_windows(slo, alert):
    rule = rule_of(slo, alert)
    for ref_id, window_s in ((code.LONG, alert.long_s), (code.SHORT, alert.short_s)):
        q = data(rule, ref_id)
        where = f"{rule['title']}, query {ref_id}"
        assert q["relativeTimeRange"] == {"from": window_s, "to": 0}, f"{where}: {q['relativeTimeRange']}"
        sql = q["model"]["rawSql"]
        assert sql == code.burn_rate_sql(slo), f"{where}: not the SQL of burn_rate_sql"
        assert f"slo = '{slo.name}'" in sql and "$__timeFilter(window_start)" in sql, f"{where}: {sql}"


@pytest.mark.parametrize("slo, alert", PAIRS)
def test_the_condition_fires_when_both_windows_reach_the_burn_rate(slo, alert):
    rule = rule_of(slo, alert)
    rate = alert.burn_rate(DEFAULTS.period_days)
    reduced = {
        q["model"]["expression"]: q["refId"] for q in rule["data"] if q["model"].get("type") == "reduce"
    }  # query -> its reduce
    assert set(reduced) == {code.LONG, code.SHORT}, f"{rule['title']}: reduces {reduced}"
    condition = data(rule, rule["condition"])["model"]
    assert condition["type"] == "math", f"{rule['title']}: condition {condition}"
    terms = re.findall(r"\$(\w+) >= ([0-9.eE+-]+)", condition["expression"])
    assert {ref for ref, _ in terms} == set(reduced.values()), f"{rule['title']}: {condition['expression']}"
    assert all(float(value) == rate for _, value in terms), f"{rule['title']}: {condition['expression']}, not {rate}"
    assert " && " in condition["expression"], f"{rule['title']}: {condition['expression']}"


@pytest.mark.parametrize("slo, alert", PAIRS)
def test_labels_states_pending_and_annotations(slo, alert):
    rule = rule_of(slo, alert)
    where = rule["title"]
    assert rule["labels"] == {"slo": slo.name, "severity": alert.severity}, where
    assert (rule["noDataState"], rule["execErrState"]) == ("OK", "Error"), where
    # Pyrra's pending periods: half the short window
    assert rule["for"] == {300: "2m", 1800: "15m", 7200: "1h", 21600: "3h"}[alert.short_s], where
    description = rule["annotations"]["description"]
    long, short = code.duration(alert.long_s), code.duration(alert.short_s)
    assert rule["annotations"]["summary"] and f"last {long}" in description and f"last {short}" in description, where
    assert "$values.C.Value" in description and "$values.D.Value" in description, where
    assert "${" not in str(rule["annotations"]) + str(rule["labels"]), f"{where}: Grafana would interpolate ${{...}}"


def test_the_contact_point_posts_to_the_alert_webhook():
    (point,) = PROVISIONED["contactPoints"]
    (receiver,) = point["receivers"]
    assert point["name"] == receiver["uid"] == "sanlens-webhook"
    assert receiver["type"] == "webhook" and receiver["settings"]["url"] == "${SANLENS_ALERT_WEBHOOK_URL}"
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["grafana"]
    assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in compose["volumes"]
    assert "SANLENS_ALERT_WEBHOOK_URL" in compose["environment"], "Grafana interpolates the url from its environment"


def routes(policy: dict) -> list[dict]:
    return [policy, *(r for child in policy.get("routes", []) for r in routes(child))]


def test_the_policy_routes_pages_and_tickets_as_alertmanager_does():
    (policy,) = PROVISIONED["policies"]
    assert policy["group_by"] == ["slo", "entity", "severity"]
    assert {r["receiver"] for r in routes(policy)} == {"sanlens-webhook"}
    lanes = {tuple(m) for r in policy["routes"] for m in r["object_matchers"]}
    assert lanes == {("severity", "=", "page"), ("severity", "=", "ticket")}
    am = yaml.safe_load(code.ALERTMANAGER.read_text())["route"]
    for am_route, route in zip([am, *am["routes"]], [policy, *policy["routes"]]):
        timings = ("group_wait", "group_interval", "repeat_interval")
        assert {k: route.get(k) for k in timings} == {k: am_route.get(k) for k in timings}, route


def test_a_custom_slo_file_yields_its_own_rules(tmp_path, monkeypatch):
    custom = tmp_path / "slos.yaml"
    custom.write_text(
        "period_days: 28\n"
        "slos:\n"
        "  - {name: array-writes, description: 99 % of writes within 4 ms, side: array, direction: write,\n"
        "     threshold_ms: 4, objective: 0.99, per: volume}\n"
        "alerts:\n"
        "  - {severity: ticket, budget: 0.1, long: 1d, short: 2h}\n"
    )
    monkeypatch.setenv("SANLENS_SLOS", str(custom))
    doc = yaml.safe_load(code.render())
    defs = definitions.load()
    ((slo,), (alert,)) = defs.slos, defs.alerts
    rule = rule_of(slo, alert, doc)
    assert [r["title"] for group in doc["groups"] for r in group["rules"]] == ["array-writes ticket 1d/2h"]
    assert data(rule, code.LONG)["relativeTimeRange"]["from"] == 86400
    assert data(rule, code.SHORT)["relativeTimeRange"]["from"] == 7200
    assert "slo = 'array-writes'" in data(rule, code.LONG)["model"]["rawSql"]
    assert "(1 - 0.99)" in data(rule, code.LONG)["model"]["rawSql"]
    terms = re.findall(r"\$([CD]) >= ([0-9.]+)", data(rule, rule["condition"])["model"]["expression"])
    assert [(ref, pytest.approx(float(v))) for ref, v in terms] == [("C", 2.8), ("D", 2.8)]  # 0.1 x 28 d / 1 d
    assert rule["labels"] == {"slo": "array-writes", "severity": "ticket"} and rule["for"] == "1h"


# -- against the SLO scenario (tests/slo_scenario.py) -----------------------------------------------------------
def burn_rates(ch, rule: dict, ref_id: str, at: int, sites: list[str]) -> dict[str, float]:
    """What Grafana gets from a rule's query evaluated at `at` (epoch s): the burn rate per entity of the sites."""
    q = data(rule, ref_id)
    start = datetime.fromtimestamp(at - q["relativeTimeRange"]["from"], UTC)
    sql = expand(q["model"]["rawSql"], start, datetime.fromtimestamp(at, UTC), 60, {})
    return {r["entity"]: r["burn_rate"] for r in ch.query(sql).named_results() if r["site"] in sites}


@pytest.mark.stack
def test_page_rules_fire_wherever_the_job_paged_with_its_burn_rates(slo_played, ch):
    """Every minute the burn_rates job sent a firing page, a page rule fires for the entity in Grafana: its queries
    give the job's burn rates over the rule's windows within a thousandth of the budget."""
    pages = [a for a in slo_played.alerts if a["severity"] == "page" and a["state"] == "firing"]
    assert pages, "the scenario paged nothing"
    slos = {s.name: s for s in DEFAULTS.slos}
    for a in pages:
        fires = []
        for alert in PAGE_RULES:
            rule, rate = rule_of(slos[a["slo"]], alert), alert.burn_rate(DEFAULTS.period_days)
            both = []
            for ref_id, window_s in ((code.LONG, alert.long_s), (code.SHORT, alert.short_s)):
                got = burn_rates(ch, rule, ref_id, a["t"], slo_played.sites).get(a["entity"])
                job = a[f"burn_{code.duration(window_s)}"]
                where = f"{rule['title']}, query {ref_id} at {a['ts']} on {a['entity']}"
                assert got is not None, f"{where}: no row (the job's burn rate: {job})"
                assert got == pytest.approx(job, abs=1e-3), f"{where}: burn rate {got}, the job's {job}"
                both.append(got >= rate)
            fires.append(all(both))
        assert any(fires), f"no page rule fires at {a['ts']} on {a['entity']} where the job paged"


@pytest.mark.stack
def test_page_rules_stay_under_their_rate_before_the_incident(slo_played, ch):
    at = slo_played.run.start_s + 1800
    seen = set()
    for slo in DEFAULTS.slos:
        for alert in PAGE_RULES:
            rule, rate = rule_of(slo, alert), alert.burn_rate(DEFAULTS.period_days)
            for ref_id in (code.LONG, code.SHORT):
                for entity, burn in burn_rates(ch, rule, ref_id, at, slo_played.sites).items():
                    assert burn < rate, f"{rule['title']}, query {ref_id} on {entity}: {burn} before the incident"
                    seen.add((slo.name, entity))
    hosts = {entity.split(":")[0] for name, entity in seen if name == "flash-reads"}
    assert hosts == {f"{slo_played.id}-sql{i}" for i in (1, 2, 3)}, seen
