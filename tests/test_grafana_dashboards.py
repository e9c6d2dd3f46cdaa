"""Dashboards are code: the provisioned JSON is what grafana/generate.py writes; every dashboard file,
panel and variable follows the structural rules Grafana and the provisioning need (one test a rule,
over every dashboard in grafana/dashboards/, pure: no stack); and every panel's, variable's and
annotation's SQL, with the ClickHouse plugin's macros expanded, runs against real pipeline data and
returns what the panel needs (marked `stack`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import timedelta

import pytest
import yaml

from flink_jobs.breakdown.tables import PARTS
from tests.grafana_macros import ALL, expand
from tests.support import ROOT
from tests.test_tiering import effects_of

GRAFANA = ROOT / "grafana"
DASHBOARDS = {path.name: json.loads(path.read_text()) for path in sorted((GRAFANA / "dashboards").glob("*.json"))}
PROVISIONED = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "clickhouse.yaml").read_text())
DATASOURCE = {key: PROVISIONED["datasources"][0][key] for key in ("type", "uid")}
HARD_CODED_TIME = re.compile(r"\d{4}-\d{2}-\d{2}|now\(\)|today\(\)|INTERVAL\s+\d+\s+(DAY|HOUR|MINUTE)", re.I)


def all_panels(board: dict) -> list[dict]:
    """Rows and panels, including the panels inside collapsed rows."""
    return [q for p in board["panels"] for q in [p, *p.get("panels", [])]]


def panels(board: dict) -> list[dict]:
    """The panels that show data."""
    return [p for p in all_panels(board) if p["type"] != "row"]


def query_variables(board: dict) -> list[dict]:
    return [v for v in board["templating"]["list"] if v["type"] == "query"]


def where(name: str, panel: dict, target: dict | None = None) -> str:
    """What a failure names: the dashboard file, the panel's title and the query."""
    return f"{name}: panel {panel['title']!r}" + (f", query {target['refId']}" if target else "")


def undefined_variables(sql: str, board: dict) -> set[str]:
    """Template variables the SQL uses that the dashboard does not define ($__ names are macros)."""
    used = {name for name in re.findall(r"\$\{?(\w+)", sql) if not name.startswith("__")}
    return used - {v["name"] for v in board["templating"]["list"]}


BOARD_PARAMS = [pytest.param(name, board, id=name) for name, board in DASHBOARDS.items()]
PANEL_PARAMS = [
    pytest.param(name, panel, id=f"{name}/{panel['title']}")
    for name, board in DASHBOARDS.items()
    for panel in panels(board)
]
VARIABLE_PARAMS = [
    pytest.param(name, variable, id=f"{name}/${variable['name']}")
    for name, board in DASHBOARDS.items()
    for variable in query_variables(board)
]


def test_there_are_dashboards():
    assert DASHBOARDS, "no JSON file in grafana/dashboards/"


def test_generated_json_is_up_to_date():
    out = subprocess.run([sys.executable, str(GRAFANA / "generate.py"), "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_provisioning_points_at_the_generated_dashboards():
    provider = (GRAFANA / "provisioning" / "dashboards" / "sanlens.yaml").read_text()
    compose = (ROOT / "docker-compose.yml").read_text()
    assert "/var/lib/grafana/dashboards" in provider and "./grafana/dashboards:/var/lib/grafana/dashboards" in compose


def test_dashboard_uids_are_unique():
    uids = [board.get("uid") for board in DASHBOARDS.values()]
    assert all(uids) and len(uids) == len(set(uids)), dict(zip(DASHBOARDS, uids))


# -- one test a rule, over every dashboard ---------------------------------------------------------
@pytest.mark.parametrize("name, board", BOARD_PARAMS)
def test_dashboard_has_a_title(name, board):
    assert board.get("title"), f"{name}: no title"


@pytest.mark.parametrize("name, board", BOARD_PARAMS)
def test_panel_ids_are_unique(name, board):
    ids = [p["id"] for p in all_panels(board)]
    assert len(ids) == len(set(ids)), f"{name}: panel ids repeat: {sorted(ids)}"


# -- over every panel ------------------------------------------------------------------------------
@pytest.mark.parametrize("name, panel", PANEL_PARAMS)
def test_panel_reads_the_provisioned_data_source(name, panel):
    assert panel.get("datasource") == DATASOURCE, f"{where(name, panel)}: data source {panel.get('datasource')}"
    for target in panel["targets"]:
        assert target.get("datasource") == DATASOURCE, (
            f"{where(name, panel, target)}: data source {target.get('datasource')}"
        )


@pytest.mark.parametrize("name, panel", PANEL_PARAMS)
def test_panel_has_a_unit(name, panel):
    assert panel["fieldConfig"]["defaults"].get("unit"), f"{where(name, panel)}: no unit"


@pytest.mark.parametrize("name, panel", PANEL_PARAMS)
def test_panel_queries_are_bound_to_the_dashboard_time_range(name, panel):
    for target in panel["targets"]:
        assert "$__timeFilter(" in target["rawSql"], f"{where(name, panel, target)}: no $__timeFilter"


@pytest.mark.parametrize("name, panel", PANEL_PARAMS)
def test_panel_queries_have_no_hard_coded_time_range(name, panel):
    for target in panel["targets"]:
        found = HARD_CODED_TIME.search(target["rawSql"])
        assert not found, f"{where(name, panel, target)}: hard-codes {found.group(0)!r}"


@pytest.mark.parametrize("name, panel", PANEL_PARAMS)
def test_panel_queries_use_only_defined_variables(name, panel):
    board = DASHBOARDS[name]
    for target in panel["targets"]:
        missing = undefined_variables(target["rawSql"], board)
        assert not missing, f"{where(name, panel, target)}: uses undefined {sorted(missing)}"


# -- over every query variable ---------------------------------------------------------------------
@pytest.mark.parametrize("name, variable", VARIABLE_PARAMS)
def test_variable_reads_the_provisioned_data_source(name, variable):
    assert variable.get("datasource") == DATASOURCE, (
        f"{name}: ${variable['name']}: data source {variable.get('datasource')}"
    )


@pytest.mark.parametrize("name, variable", VARIABLE_PARAMS)
def test_variable_is_sorted(name, variable):
    assert variable.get("sort") == 1, f"{name}: ${variable['name']} is not sorted alphabetically"


@pytest.mark.parametrize("name, variable", VARIABLE_PARAMS)
def test_variable_query_uses_only_defined_variables(name, variable):
    missing = undefined_variables(variable["query"], DASHBOARDS[name])
    assert not missing, f"{name}: ${variable['name']} uses undefined {sorted(missing)}"


# -- the install-base dashboard's SQL against real pipeline data (a firmware rollout) ---------------

INSTALL_BASE = DASHBOARDS["install-base-service-times.json"]


def test_install_base_dashboard_shows_the_firmware_cohorts_and_the_volumes():
    titles = [p["title"] for p in panels(INSTALL_BASE)]
    assert any("by firmware" in t for t in titles) and any("Volumes" in t for t in titles), titles


def run_panel(ch, rollout, sql: str, **selection) -> list[dict]:
    variables = {v["name"]: ALL for v in query_variables(INSTALL_BASE)} | {"direction": "write"} | selection
    expanded = expand(sql, rollout.start, rollout.end, 60, variables)
    result = ch.query(expanded)
    return [dict(zip(result.column_names, row)) for row in result.result_rows]


@pytest.mark.stack
@pytest.mark.parametrize("variable", query_variables(INSTALL_BASE), ids=lambda v: v["name"])
def test_every_variable_query_lists_values(variable, rollout, ch):
    rows = run_panel(ch, rollout, variable["query"], customer=[rollout.customer])
    values = [r[variable["name"]] for r in rows]
    assert values and values == sorted(values)


@pytest.mark.stack
@pytest.mark.parametrize("panel", panels(INSTALL_BASE), ids=lambda p: p["title"])
def test_every_panel_query_returns_what_the_panel_shows(panel, rollout, ch):
    for selection in (
        {"array_model": [rollout.model]},  # the install base (of the session's model)
        {"customer": [rollout.customer]},  # one customer
        {"customer": [rollout.customer], "array": [rollout.arrays[0]]},  # one array
        {"customer": [rollout.customer], "array": [rollout.arrays[0]], "volume": [f"{rollout.arrays[0]}-sql1_data"]},
    ):  # one volume
        rows = run_panel(ch, rollout, panel["targets"][0]["rawSql"], **selection)
        assert rows, f"{panel['title']}: no rows for {selection}"
        check_shape(panel, rows)


@pytest.mark.stack
def test_the_histogram_is_the_same_from_every_level_of_the_rollups(rollout, ch):
    """The cohort histogram reads the fleet level when only model and firmware are chosen, the array level
    when no volume is, the volume level otherwise: the same I/Os, whichever level answers."""
    (panel,) = [p for p in panels(INSTALL_BASE) if p["type"] == "barchart"]
    sql = panel["targets"][0]["rawSql"]
    volumes = [
        r[0]
        for r in ch.query(
            "SELECT DISTINCT volume FROM sanlens.service_time_hist_1h WHERE array IN {a:Array(String)}",
            parameters={"a": rollout.arrays},
        ).result_rows
    ]
    selections = {
        "service_time_hist_fleet_1h": {"array_model": [rollout.model]},
        "service_time_hist_array_1h": {"array_model": [rollout.model], "customer": [rollout.customer]},
        "service_time_hist_1h": {"array_model": [rollout.model], "volume": volumes},
    }
    for table, selection in selections.items():
        variables = {v["name"]: ALL for v in query_variables(INSTALL_BASE)} | {"direction": "write"} | selection
        estimate = ch.query("EXPLAIN ESTIMATE " + expand(sql, rollout.start, rollout.end, 60, variables))
        read = {r[1] for r in estimate.result_rows if r[3] > 0}  # (database, table, parts, rows, marks)
        assert read == {table}, f"{selection} read {read}, not {table} alone"
    fleet, arrays, by_volume = (run_panel(ch, rollout, sql, **selection) for selection in selections.values())
    assert len(fleet) > 10
    for rows in (arrays, by_volume):
        assert [(r["service_time"], r["firmware"]) for r in rows] == [(r["service_time"], r["firmware"]) for r in fleet]
        assert [r["share"] for r in rows] == pytest.approx([r["share"] for r in fleet], rel=1e-9)


def check_shape(panel: dict, rows: list[dict]) -> None:
    if panel["type"] == "barchart":  # bucket label x firmware -> share; shares add up to 1
        assert {"service_time", "firmware", "share"} <= set(rows[0])
        for fw in {r["firmware"] for r in rows}:
            assert sum(r["share"] for r in rows if r["firmware"] == fw) == pytest.approx(1.0)
    elif panel["type"] == "timeseries":  # a time column, then numeric values in ms
        assert list(rows[0])[0] == "time"
        values = [v for r in rows for k, v in r.items() if k not in ("time", "firmware")]
        assert values and all(0 < v < 10_000 for v in values)
    elif panel["type"] == "table":  # the drill-down column, and the p99 the rows are sorted by
        link = panel["fieldConfig"]["overrides"][0]
        assert link["matcher"]["options"] in rows[0] and "p99_ms" in rows[0]
        p99 = [r["p99_ms"] for r in rows]
        assert p99 == sorted(p99, reverse=True)
    else:
        raise AssertionError(f"no shape check for a {panel['type']} panel")


# -- the latency breakdown dashboard's SQL against real pipeline data (the breakdown job's tables) ---------

LATENCY = DASHBOARDS["where-the-latency-is.json"]
# What each query returns, in order: panels by title, variables by $name, annotations by name.
LATENCY_COLUMNS = {
    "Where the selection's latency goes": ("time", *PARTS),
    "Hosts by their largest part": ("site", "host", "largest_part", "largest_us", "host_us", *PARTS, "ios"),
    "Switch ports with credit stalls or discards": tuple(
        "site switch port paths max_stall max_discards fabric_us".split()
    ),
    "Open and recent incidents": tuple("contributor component site started_at ended excess_us severity paths".split()),
    "Tier 0 share of the hybrid volumes": ("time", "array_volume", "tier0_share"),
    "What the tier migrations did": (
        *"site host array volume direction started_at settled_at before_period".split(),
        "tier0_share_before",
        "tier0_share_after",
        *(
            f"{measure}_{figure}"
            for measure in ("array_us", "host_us", "batch_requests", "file_us")
            for figure in ("before", "after", "change_ci_low", "change_ci_high")
        ),
        "time_to_effect_s",
    ),
    "$site": ("site",),
    "$host": ("host",),
    "$disk": ("disk",),
    "Latency incidents": ("time", "timeEnd", "text"),
    "Tier migrations": ("time", "timeEnd", "text"),
}
# The queries of the tier migrations, checked on the demo's auto-tiering (the breakdown scenario has no hybrid array).
TIERING = ("Tier 0 share of the hybrid volumes", "What the tier migrations did", "Tier migrations")


def annotations(board: dict) -> list[dict]:
    """The annotation queries that are SQL (Grafana's built-in one is added when it loads the dashboard)."""
    return [a for a in board.get("annotations", {}).get("list", []) if "rawSql" in a.get("target", {})]


def sql_queries(board: dict) -> list[tuple[str, str]]:
    """Every SQL query of a dashboard: panels by title, variables by $name, annotations by name."""
    return [
        *((p["title"], t["rawSql"]) for p in panels(board) for t in p["targets"]),
        *((f"${v['name']}", v["query"]) for v in query_variables(board)),
        *((a["name"], a["target"]["rawSql"]) for a in annotations(board)),
    ]


def test_every_latency_query_has_its_columns_checked():
    assert [what for what, _ in sql_queries(LATENCY)] == list(LATENCY_COLUMNS), "update LATENCY_COLUMNS"


def run_latency_query(ch, sql: str, start, end, selection: dict) -> tuple[tuple[str, ...], list[dict]]:
    variables = {v["name"]: ALL for v in query_variables(LATENCY)} | selection
    result = ch.query(expand(sql, start, end, 60, variables))
    return tuple(result.column_names), [dict(zip(result.column_names, row)) for row in result.result_rows]


@pytest.mark.stack
@pytest.mark.parametrize(
    "what, sql", [pytest.param(w, sql, id=w) for w, sql in sql_queries(LATENCY) if w not in TIERING]
)
def test_every_latency_query_returns_what_it_shows(what, sql, breakdown_sites, stack, ch):
    site, host, disk = breakdown_sites["site"], breakdown_sites["host"], breakdown_sites["disk"]
    start, end = ch.query(
        "SELECT min(window_start), max(window_start) FROM sanlens.path_latency FINAL WHERE site = {site:String}",
        parameters={"site": site},
    ).result_rows[0]  # the site's path windows, which hold its incidents
    for selection in ({}, {"site": [site]}, {"site": [site], "host": [host], "disk": [disk]}):
        columns, rows = run_latency_query(ch, sql, start, end, selection)
        assert columns == LATENCY_COLUMNS[what], f"{what}: columns {columns} for {selection}"
        check_latency_rows(what, rows, selection, breakdown_sites)
    if what == "Where the selection's latency goes":  # the top of the stack (of the last selection) is host_us
        measured = dict(
            ch.query(
                "SELECT toStartOfInterval(toDateTime(window_start), INTERVAL 60 second) AS time, "
                "sum(host_us * ios) / sum(ios) FROM sanlens.path_latency FINAL "
                "WHERE site = {site:String} AND host = {host:String} AND disk = {disk:String} GROUP BY time",
                parameters=breakdown_sites,
            ).result_rows
        )
        assert {r["time"] for r in rows} == set(measured)
        for r in rows:
            assert sum(r[p] for p in PARTS) == pytest.approx(measured[r["time"]], rel=1e-9, abs=1e-6)


def check_latency_rows(what: str, rows: list[dict], selection: dict, selected: dict) -> None:
    """`selected` (site, host, disk) is in the data; a table is limited, so it is looked for in one only when
    the selection holds it."""
    if what.startswith("$"):  # sorted values, the selected one among them
        values = [r[what[1:]] for r in rows]
        assert selected[what[1:]] in values and values == sorted(values), f"{what}: {values}"
    elif what == "Where the selection's latency goes":
        assert rows, f"{what}: no rows for {selection}"
    elif what == "Hosts by their largest part":  # the largest part is the largest; the parts add up to host_us
        assert rows and ("host" not in selection or [r["host"] for r in rows] == [selected["host"]]), f"{what}: {rows}"
        assert [r["largest_us"] for r in rows] == sorted((r["largest_us"] for r in rows), reverse=True)
        for r in rows:
            assert r[r["largest_part"]] == r["largest_us"] == max(r[p] for p in PARTS)
            assert sum(r[p] for p in PARTS) == pytest.approx(r["host_us"], rel=1e-9, abs=1e-6)
    elif what == "Switch ports with credit stalls or discards":  # may be empty: not every site has a stall
        assert [r["max_stall"] for r in rows] == sorted((r["max_stall"] for r in rows), reverse=True)
        assert all(r["paths"] and (r["max_stall"] >= 0.01 or r["max_discards"] > 0) for r in rows), rows
    elif what == "Open and recent incidents":  # open ones first, then the most recent
        sites = {r["site"] for r in rows}
        assert rows and ("site" not in selection or sites == {selected["site"]}), f"{what}: {sites} for {selection}"
        order = [(r["ended"] != "open", -r["started_at"].timestamp()) for r in rows]
        assert order == sorted(order)
    elif what == "Latency incidents":  # regions that end after they start
        assert rows and all(r["timeEnd"] >= r["time"] and r["text"] for r in rows), rows
    else:
        raise AssertionError(f"no check for {what}")


@pytest.fixture(scope="module")
def demo_tier_migration(demo_played, ch) -> tuple[dict, dict]:
    """The demo's auto-tiering (acme-sql3's data volume): its episode and its effect on the host."""
    episodes, effects = effects_of(ch, demo_played.scenario, demo_played.run, demo_played.sites)
    (episode,), (effect,) = episodes, effects
    return episode, effect


@pytest.mark.stack
@pytest.mark.parametrize("what, sql", [pytest.param(w, sql, id=w) for w, sql in sql_queries(LATENCY) if w in TIERING])
def test_every_tiering_query_shows_the_demo_s_tier_migration(what, sql, demo_tier_migration, ch):
    episode, effect = demo_tier_migration
    start, end = episode["started_at"] - timedelta(minutes=5), episode["settled_at"] + timedelta(minutes=5)
    name = f"{episode['array']} / {episode['volume']}"
    for selection in (
        {},
        {"site": [effect["site"]]},
        {"site": [effect["site"]], "host": [effect["host"]], "disk": ["D:"]},
    ):
        columns, rows = run_latency_query(ch, sql, start, end, selection)
        assert columns == LATENCY_COLUMNS[what], f"{what}: columns {columns} for {selection}"
        if what == "Tier 0 share of the hybrid volumes":  # the volume's share, from where it was to where it went
            shares = [r["tier0_share"] for r in rows if r["array_volume"] == name]
            assert all(0 <= r["tier0_share"] <= 1 for r in rows), rows
            assert min(shares) == pytest.approx(episode["tier0_share_before"], abs=0.01)
            assert max(shares) == pytest.approx(episode["tier0_share_reached"], abs=0.02)
        elif what == "What the tier migrations did":  # the episode's effect on the host, as the view has it
            key = lambda r: (r["array"], r["volume"], r["host"], r["started_at"])
            assert [r for r in rows if key(r) == key(effect)] == [pytest.approx({c: effect[c] for c in columns})]
        else:  # a region from where the share started to move to where it settled
            assert (episode["started_at"], episode["settled_at"]) in {
                (r["time"], r["timeEnd"]) for r in rows if r["text"].startswith(name)
            }, rows
