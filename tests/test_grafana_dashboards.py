"""Dashboards are code: the provisioned JSON is what grafana/generate.py writes, it has the structure
Grafana and the provisioning need, and every panel's and variable's SQL, with the ClickHouse plugin's
macros expanded, runs against real pipeline data and returns what the panel needs."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from grafana_macros import ALL, expand

DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
BOARD = json.loads((ROOT / "grafana" / "dashboards" / "install-base-service-times.json").read_text())
PANELS = [p for p in BOARD["panels"] if p["type"] != "row"]
VARIABLES = BOARD["templating"]["list"]
QUERY_VARIABLES = [v for v in VARIABLES if v["type"] == "query"]


def test_generated_json_is_up_to_date():
    out = subprocess.run([sys.executable, str(ROOT / "grafana" / "generate.py"), "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_structure():
    assert BOARD["title"] == "Install base service times" and BOARD["uid"]
    ids = [p["id"] for p in BOARD["panels"]]
    assert len(ids) == len(set(ids))                                           # panel ids unique
    for panel in PANELS:
        assert panel["datasource"]["uid"] == "sanlens-clickhouse", panel["title"]
        assert panel["fieldConfig"]["defaults"].get("unit"), f"{panel['title']}: no unit"
        for target in panel["targets"]:
            assert target["datasource"] == {"type": "grafana-clickhouse-datasource", "uid": "sanlens-clickhouse"}
            sql = target["rawSql"]
            assert "$__timeFilter(" in sql, f"{panel['title']}: not bound to the dashboard's time range"
            assert not re.search(r"\d{4}-\d{2}-\d{2}|now\(\)|today\(\)|INTERVAL\s+\d+\s+(DAY|HOUR|MINUTE)", sql, re.I), \
                f"{panel['title']}: hard-coded time range"
    for variable in QUERY_VARIABLES:
        assert variable["sort"] == 1, f"${variable['name']} is not sorted"
        assert variable["datasource"]["uid"] == "sanlens-clickhouse"
    used = {m for p in PANELS for t in p["targets"] for m in re.findall(r"\$\{?(\w+)", t["rawSql"])} - {"__timeFilter"}
    defined = {v["name"] for v in VARIABLES}
    assert {u for u in used if not u.startswith("__")} <= defined
    titles = [p["title"] for p in PANELS]
    assert any("by firmware" in t for t in titles) and any("Volumes" in t for t in titles)


def test_provisioning_points_at_the_generated_dashboards():
    provider = (ROOT / "grafana" / "provisioning" / "dashboards" / "sanlens.yaml").read_text()
    compose = (ROOT / "docker-compose.yml").read_text()
    assert "/var/lib/grafana/dashboards" in provider and "./grafana/dashboards:/var/lib/grafana/dashboards" in compose
    assert DASHBOARDS


def run_panel(ch, rollout, sql: str, **selection) -> list[dict]:
    variables = {v["name"]: ALL for v in QUERY_VARIABLES} | {"direction": "write"} | selection
    expanded = expand(sql, rollout.start, rollout.end, 60, variables)
    result = ch.query(expanded)
    return [dict(zip(result.column_names, row)) for row in result.result_rows]


@pytest.mark.parametrize("variable", QUERY_VARIABLES, ids=lambda v: v["name"])
def test_every_variable_query_lists_values(variable, rollout, ch):
    rows = run_panel(ch, rollout, variable["query"], customer=[rollout.customer])
    values = [r[variable["name"]] for r in rows]
    assert values and values == sorted(values)


@pytest.mark.parametrize("panel", PANELS, ids=lambda p: p["title"])
def test_every_panel_query_returns_what_the_panel_shows(panel, rollout, ch):
    for selection in ({"customer": [rollout.customer]},                                     # fleet
                      {"customer": [rollout.customer], "array": [rollout.arrays[0]]},       # one array
                      {"customer": [rollout.customer], "array": [rollout.arrays[0]],
                       "volume": [f"{rollout.arrays[0]}-sql1_data"]}):                    # one volume
        rows = run_panel(ch, rollout, panel["targets"][0]["rawSql"], **selection)
        assert rows, f"{panel['title']}: no rows for {selection}"
        check_shape(panel, rows)


def check_shape(panel: dict, rows: list[dict]) -> None:
    if panel["type"] == "barchart":                  # bucket label x firmware -> share; shares add up to 1
        assert {"service_time", "firmware", "share"} <= set(rows[0])
        for fw in {r["firmware"] for r in rows}:
            assert sum(r["share"] for r in rows if r["firmware"] == fw) == pytest.approx(1.0)
    elif panel["type"] == "timeseries":              # a time column, then numeric values in ms
        assert list(rows[0])[0] == "time"
        values = [v for r in rows for k, v in r.items() if k not in ("time", "firmware")]
        assert values and all(0 < v < 10_000 for v in values)
    elif panel["type"] == "table":                   # the drill-down column, and the p99 the rows are sorted by
        link = panel["fieldConfig"]["overrides"][0]
        assert link["matcher"]["options"] in rows[0] and "p99_ms" in rows[0]
        p99 = [r["p99_ms"] for r in rows]
        assert p99 == sorted(p99, reverse=True)
    else:
        raise AssertionError(f"no shape check for a {panel['type']} panel")
