"""Dashboards are code: the provisioned JSON is what grafana/generate.py writes; every dashboard file,
panel and variable follows the structural rules Grafana and the provisioning need (one test a rule,
over every dashboard in grafana/dashboards/, pure: no stack); and every panel's, variable's and
annotation's SQL, with the ClickHouse plugin's macros expanded, runs against real pipeline data and
returns what the panel needs (marked `stack`)."""

from __future__ import annotations

import calendar
import json
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from flink_jobs.breakdown.tables import PARTS
from grafana import by_transport
from ingest.simulator import latency
from queries import cohorts, upgrade_effect
from sanlensctl.slos import percent
from slo import definitions as slo_definitions
from slo.definitions import WINDOWS
from tests.grafana_macros import ALL, expand
from tests.grafana_provisioning import DATASOURCE
from tests.support import ROOT, printed_tables, sanlens
from tests.tiering_truth import effects_of

GRAFANA = ROOT / "grafana"
DASHBOARDS = {path.name: json.loads(path.read_text()) for path in sorted((GRAFANA / "dashboards").glob("*.json"))}
# What every panel, query and variable reads: the dashboard's data source variable (a Grafana the dashboards are
# imported into picks its own ClickHouse data source there; provisioned, it defaults to DATASOURCE).
DATASOURCE_REF = {"type": DATASOURCE["type"], "uid": "${datasource}"}
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
def test_dashboard_takes_its_data_source_as_a_variable(name, board):
    found = [v for v in board["templating"]["list"] if v["type"] == "datasource" and v["name"] == "datasource"]
    assert found, f"{name}: no data source variable $datasource"
    variable = found[0]
    assert variable["query"] == DATASOURCE["type"], f"{name}: $datasource lists {variable['query']!r} data sources"
    assert variable["current"].get("value") == DATASOURCE["uid"], (
        f"{name}: $datasource defaults to {variable['current']}, not the provisioned {DATASOURCE['uid']!r}"
    )
    for annotation in board.get("annotations", {}).get("list", []):
        assert annotation.get("datasource") == DATASOURCE_REF, (
            f"{name}: annotation {annotation.get('name')!r}: data source {annotation.get('datasource')}"
        )


@pytest.mark.parametrize("name, board", BOARD_PARAMS)
def test_panel_ids_are_unique(name, board):
    ids = [p["id"] for p in all_panels(board)]
    assert len(ids) == len(set(ids)), f"{name}: panel ids repeat: {sorted(ids)}"


# -- over every panel ------------------------------------------------------------------------------
@pytest.mark.parametrize("name, panel", PANEL_PARAMS)
def test_panel_reads_the_data_source_variable(name, panel):
    assert panel.get("datasource") == DATASOURCE_REF, f"{where(name, panel)}: data source {panel.get('datasource')}"
    for target in panel["targets"]:
        assert target.get("datasource") == DATASOURCE_REF, (
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


@pytest.mark.parametrize("name, panel", PANEL_PARAMS)
def test_a_panel_with_a_repeat_direction_repeats_on_a_variable_of_its_dashboard(name, panel):
    """A direction alone repeats nothing: the panel draws every value of the selection in one (issue 42, "Load and
    latency": every array in one cloud of one colour)."""
    if "repeatDirection" not in panel:
        return
    variables = [v["name"] for v in DASHBOARDS[name]["templating"]["list"]]
    assert panel.get("repeat") in variables, (
        f"{where(name, panel)}: repeatDirection {panel['repeatDirection']!r} but repeat {panel.get('repeat')!r}, "
        f"not one of its variables {variables}"
    )


@pytest.mark.parametrize("name, panel", PANEL_PARAMS)
def test_a_repeated_panel_reads_its_variable_s_value_not_through_conditional_all(name, panel):
    """The ClickHouse plugin decides $__conditionalAll on the dashboard's selection, not on a repeated copy's one
    value: with All selected every copy would draw every value."""
    if not panel.get("repeat"):
        return
    for target in panel["targets"]:
        sql = target["rawSql"]
        assert f"${{{panel['repeat']}:singlequote}}" in sql, f"{where(name, panel, target)}: not by ${panel['repeat']}"
        assert not re.search(rf"\$__conditionalAll\([^$]*\${{?{panel['repeat']}\b", sql), where(name, panel, target)


@pytest.mark.parametrize("name, panel", PANEL_PARAMS)
def test_a_repeated_panel_s_variable_defaults_to_its_first_value_not_all(name, panel):
    """All by default would draw a copy per value: thousands of panels on a fleet of thousands of arrays."""
    if not panel.get("repeat"):
        return
    (variable,) = [v for v in DASHBOARDS[name]["templating"]["list"] if v["name"] == panel["repeat"]]
    assert not variable.get("includeAll"), f"{where(name, panel)}: ${variable['name']} offers All"


@pytest.mark.parametrize("name, panel", PANEL_PARAMS)
def test_transactions_per_second_read_as_transactions_not_requests(name, panel):
    """Grafana's reqps reads "req/s": SQL Server's batch requests are requests, its transactions are not."""
    units = [panel["fieldConfig"]["defaults"].get("unit")] + [
        p["value"]
        for o in panel["fieldConfig"].get("overrides", [])
        if "transaction" in str(o["matcher"].get("options"))
        for p in o["properties"]
        if p["id"] == "unit"
    ]
    if "transactions/s" in panel["title"] or len(units) > 1:
        assert units[-1] != "reqps", f"{where(name, panel)}: transactions/s in {units[-1]!r}"


# -- over every query variable ---------------------------------------------------------------------
@pytest.mark.parametrize("name, variable", VARIABLE_PARAMS)
def test_variable_reads_the_data_source_variable(name, variable):
    assert variable.get("datasource") == DATASOURCE_REF, (
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
    assert any("by array model and firmware" in t for t in titles) and any("Volumes" in t for t in titles), titles
    assert any(t.startswith("Cohorts:") for t in titles), titles
    assert any(t.startswith("Upgrade effect per array") for t in titles), titles


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


def rollout_volumes(ch, rollout) -> list[str]:
    return [
        r[0]
        for r in ch.query(
            "SELECT DISTINCT volume FROM sanlens.service_time_hist_1h WHERE array IN {a:Array(String)}",
            parameters={"a": rollout.arrays},
        ).result_rows
    ]


@pytest.mark.stack
def test_the_histogram_is_the_same_from_every_level_of_the_rollups(rollout, ch):
    """The cohort histogram reads the fleet level when only model and firmware are chosen, the array level
    when no volume is, the volume level otherwise: the same I/Os, whichever level answers."""
    (panel,) = [p for p in panels(INSTALL_BASE) if p["type"] == "barchart"]
    sql = panel["targets"][0]["rawSql"]
    volumes = rollout_volumes(ch, rollout)
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
        assert [(r["service_time"], r["cohort"]) for r in rows] == [(r["service_time"], r["cohort"]) for r in fleet]
        assert [r["share"] for r in rows] == pytest.approx([r["share"] for r in fleet], rel=1e-9)


@pytest.mark.stack
def test_the_cohort_table_has_the_figures_of_the_report(rollout, ch):
    """The dashboard's cohort table and the report run one query text (queries/cohorts.py): over the same
    arrays and hours, the same figures, from the array level of the rollups or from the volume level."""
    (panel,) = [p for p in panels(INSTALL_BASE) if p["title"].startswith("Cohorts:")]
    sql = panel["targets"][0]["rawSql"]
    report = cohorts.figures(
        cohorts.every_array(
            "array IN {arrays:Array(String)} AND direction = 'write' "
            "AND period_start BETWEEN {start:DateTime} AND {end:DateTime}"
        )
    )
    parameters = {"arrays": rollout.arrays, "start": rollout.start, "end": rollout.end}
    expected = list(ch.query(report, parameters=parameters).named_results())
    assert [(r["firmware"], r["arrays"]) for r in expected] == [("3.1.3", 12), ("3.2.1", 6)]
    volumes = rollout_volumes(ch, rollout)
    for selection in ({"customer": [rollout.customer]}, {"customer": [rollout.customer], "volume": volumes}):
        rows = run_panel(ch, rollout, sql, **selection)
        assert [r["firmware"] for r in rows] == [r["firmware"] for r in expected], selection
        for got, want in zip(rows, expected):
            assert got.keys() == want.keys()
            for column, value in want.items():
                assert got[column] == (pytest.approx(value, rel=1e-9) if isinstance(value, float) else value), column


def check_shape(panel: dict, rows: list[dict]) -> None:
    if panel["type"] == "barchart":  # bucket label x cohort (model and firmware) -> share; shares add up to 1
        assert {"service_time", "cohort", "share"} <= set(rows[0])
        for cohort in {r["cohort"] for r in rows}:
            assert sum(r["share"] for r in rows if r["cohort"] == cohort) == pytest.approx(1.0)
    elif panel["type"] == "timeseries":  # a time column, then numeric values in ms
        assert list(rows[0])[0] == "time"
        values = [v for r in rows for k, v in r.items() if k not in ("time", "cohort")]
        assert values and all(0 < v < 10_000 for v in values)
    elif panel["title"].startswith("Cohorts:"):  # per model and firmware: its arrays, shares between 0 and 1
        for r in rows:
            assert r["arrays"] >= 1 and r["ios"] > 0 and 0 < r["busiest_array_ios_share"] <= 1
            low, high = r["share_within_0_125_ms_array_min"], r["share_within_0_125_ms_array_max"]
            assert low <= r["share_within_0_125_ms_array_median"] <= high <= 1
            assert low <= r["share_within_0_125_ms"] <= high
            assert 0 <= r["share_0_0625_to_0_125_ms"] <= r["share_within_0_125_ms"]  # bucket 4 is within 0.125 ms
            assert 0 <= r["share_0_0625_to_0_125_ms_array_mean"] <= r["share_within_0_125_ms_array_mean"]
    elif panel["title"].startswith("Upgrade effect"):  # per array change and figure: before and after in intervals
        assert [c for c in rows[0] if c in upgrade_effect.PER_ARRAY_COLUMNS] == list(rows[0])
        assert {r["metric"] for r in rows} == set(upgrade_effect.FIGURES)
        for r in rows:
            for side in ("before", "after", "delta", "ratio"):
                assert r[f"{side}_ci_low"] <= r[side] <= r[f"{side}_ci_high"], (side, r)
            if r["metric"] == "share_0_0625_to_0_125_ms" and r["direction"] == "write":  # Express Writes
                assert r["before"] < 0.15 and r["after"] > 0.35 and r["ratio_ci_low"] > 3, r
    elif panel["type"] == "table":  # the drill-down column, and the p99 the rows are sorted by
        link = panel["fieldConfig"]["overrides"][0]
        assert link["matcher"]["options"] in rows[0] and "p99_ms" in rows[0]
        for r in rows:  # each share under its own name: bucket 4 alone is part of within 0.125 ms
            assert 0 <= r["share_0_0625_to_0_125_ms"] <= r["share_within_0_125_ms"] <= 1
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
    by_transport.TITLE: by_transport.COLUMNS,
    "Switch ports with credit stalls or discards": tuple(
        "site switch port paths max_stall max_discards fabric_us".split()
    ),
    "Open and recent incidents": tuple(
        "contributor component site started_at ended excess_us severity hosts volumes arrays".split()
    ),
    "Tier 0 share of the hybrid volumes": ("time", "array_volume", "tier0_share"),
    "What the tier migrations did": (
        *"site host array volume direction started_at settled_at before_period".split(),
        "tier0_share_before",
        "tier0_share_after",
        *(
            f"{measure}_{figure}"
            for measure in ("array_us", "host_us", "batch_requests", "file_us")
            for figure in ("before", "after", "change_ci_low", "change_ci_high", "blocks", "low_confidence")
        ),
        "time_to_effect_s",
    ),
    "% Processor Time of the selected hosts": ("time", "host", "cpu_percent"),
    "SQL Server transactions/s of the selected hosts": ("time", "host", "transactions_per_s"),
    "HBA queue depth against the fleet's setting": tuple(
        "site host host_port queue_depth fleet_queue_depth ports_at_setting fleet_ports customer flag".split()
    ),
    "$site": ("site",),
    "$host": ("host",),
    "$disk": ("disk",),
    "Latency incidents": ("time", "timeEnd", "text"),
    "Tier migrations": ("time", "timeEnd", "text"),
}
# The queries of the tier migrations, checked on the demo's auto-tiering (the breakdown scenario has no hybrid array).
TIERING = ("Tier 0 share of the hybrid volumes", "What the tier migrations did", "Tier migrations")
# The latency by transport and policy, checked on the transport scenario (tests/stack/test_transport.py): FC and iSCSI.
TRANSPORT = (by_transport.TITLE,)
# The hosts' health, checked on the host-health scenario (tests/host_health_scenario.py): one host's HBA set otherwise.
HOST_HEALTH = (
    "% Processor Time of the selected hosts",
    "SQL Server transactions/s of the selected hosts",
    "HBA queue depth against the fleet's setting",
)


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
    "what, sql",
    [pytest.param(w, sql, id=w) for w, sql in sql_queries(LATENCY) if w not in TIERING + HOST_HEALTH + TRANSPORT],
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
        assert all(r["hosts"] and r["volumes"] and r["arrays"] for r in rows), rows  # what an admin manages
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


@pytest.mark.stack
@pytest.mark.parametrize(
    "what, sql", [pytest.param(w, sql, id=w) for w, sql in sql_queries(LATENCY) if w in HOST_HEALTH]
)
def test_every_host_health_query_shows_the_scenario_s_hosts(what, sql, host_health_played, ch):
    """Each host's CPU and transactions/s as the view has them per minute; the HBA whose queue depth differs from the
    fleet's setting flagged and listed first, the others not, and only the selected hosts'."""
    played, site = host_health_played, host_health_played.site
    odd, other = f"{played.id}-sql4", f"{played.id}-sql1"
    start, end = ch.query(
        "SELECT min(minute), max(minute) + INTERVAL 1 MINUTE FROM sanlens_marts.host_health WHERE site = {s:String}",
        parameters={"s": site},
    ).result_rows[0]
    column = LATENCY_COLUMNS[what][-1]
    for selection in ({}, {"site": [site]}, {"site": [site], "host": [odd]}):
        columns, rows = run_latency_query(ch, sql, start, end, selection)
        assert columns == LATENCY_COLUMNS[what], f"{what}: columns {columns} for {selection}"
        mine = [r for r in rows if r["host"].startswith(f"{played.id}-")]
        hosts = {r["host"] for r in mine}
        assert hosts == ({odd} if "host" in selection else set(played.scenario.hosts)), f"{what}: {hosts}"
        if "site" in selection:
            assert len(mine) == len(rows), f"{what}: hosts of other sites for {selection}"
        if what == "HBA queue depth against the fleet's setting":
            flags = {r["host"]: (r["queue_depth"], r["fleet_queue_depth"], r["flag"]) for r in mine}
            assert flags[odd] == (32, 256, "differs"), flags
            assert all(f == (256, 256, "at the setting") for h, f in flags.items() if h != odd), flags
            assert rows[0]["flag"] == "differs"  # the odd ones first
        else:  # per minute, the view's figures
            view = dict(
                ch.query(
                    f"SELECT minute, {column} FROM sanlens_marts.host_health WHERE host = {{h:String}}",
                    parameters={"h": odd if "host" in selection else other},
                ).result_rows
            )
            shown = {r["time"]: r[column] for r in mine if r["host"] == (odd if "host" in selection else other)}
            assert shown == pytest.approx(view), what


@pytest.mark.stack
@pytest.mark.parametrize("what, sql", [pytest.param(w, sql, id=w) for w, sql in sql_queries(LATENCY) if w in TRANSPORT])
def test_the_transport_query_shows_each_transport_and_policy_of_the_selection(what, sql, transport_played, ch):
    """One row per transport, policy and direction of the selected paths, their parts adding up to what the hosts
    measured; iSCSI's rows above the array by the stack cost the scenario planted more than FC's."""
    played, site = transport_played, transport_played.site
    start, end = ch.query(
        "SELECT min(period_start), max(period_start) + INTERVAL 1 MINUTE FROM sanlens_marts.latency_by_transport "
        "WHERE site = {s:String}",
        parameters={"s": site},
    ).result_rows[0]
    iscsi_host = f"{played.id}-sql3"
    for selection in ({}, {"site": [site]}, {"site": [site], "host": [iscsi_host], "disk": ["D:", "L:"]}):
        columns, rows = run_latency_query(ch, sql, start, end, selection)
        assert columns == LATENCY_COLUMNS[what], f"{what}: columns {columns} for {selection}"
        groups = [(r["transport"], r["multipath_policy"], r["direction"]) for r in rows]
        assert groups == sorted(set(groups)), groups
        for r in rows:
            assert sum(r[p] for p in PARTS) == pytest.approx(r["host_us"], rel=1e-9, abs=1e-6), r
            assert r["above_array_us"] == pytest.approx(r["host_us"] - r["array_us"]), r
        if "host" in selection:  # its two disks, its transport and policy
            assert groups == [("iscsi", "round_robin", "read"), ("iscsi", "round_robin", "write")], groups
            assert [r["paths"] for r in rows] == [1, 2]
        elif "site" in selection:  # the scenario's hosts, one a transport and policy
            assert {g[:2] for g in groups} == {
                (h.transport, h.multipath_policy) for h in played.scenario.hosts.values()
            }
            above = {
                (r["transport"], r["direction"]): r["above_array_us"]
                for r in rows
                if r["multipath_policy"] == "round_robin"
            }
            for direction in ("read", "write"):
                added = above[("iscsi", direction)] - above[("fc", direction)]
                assert added == pytest.approx(latency.ISCSI_STACK_US, abs=1), (direction, above)


# -- the SLO dashboard's SQL against real pipeline data (the latency-SLO scenario, tests/slo_scenario.py) -------

SLOS = DASHBOARDS["slos.json"]
PEAKS = tuple(f"peak_burn_{w}" for w in WINDOWS)
# What each query returns, in order: panels by title, variables by $name, annotations by name.
SLO_COLUMNS = {
    "Attainment and error budget left": tuple("slo entity site ios objective attainment budget_left".split()),
    "Error budget left over the range": ("time", "series", "budget_left"),
    "Burn rates over 5m and 1h": ("time", "series", "burn_5m", "burn_1h"),
    "Alert history": (
        *"slo entity site severity state started_at resolved_at duration_s".split(),
        *PEAKS,
        "budget_left",
    ),
    "$slo": ("slo",),
    "$site": ("site",),
    "$entity": ("entity",),
    "SLO pages": ("time", "timeEnd", "text"),
    "SLO tickets": ("time", "timeEnd", "text"),
}
SLO_SCENARIO_S = 25200  # the scenario's length (tests/scenarios/slo.yaml)


def test_every_slo_query_has_its_columns_checked():
    assert [what for what, _ in sql_queries(SLOS)] == list(SLO_COLUMNS), "update SLO_COLUMNS"


def slo_selections(played) -> list[dict]:
    """All, the scenario's site, and the paging path's read SLO alone."""
    one = {"site": played.sites, "slo": ["flash-reads"], "entity": [f"{played.id}-sql1:D"]}
    return [{}, {"site": played.sites}, one]


def run_slo_query(ch, played, sql: str, selection: dict) -> tuple[tuple[str, ...], list[dict]]:
    """The query over the scenario's range, one point a minute."""
    start, end = (datetime.fromtimestamp(t, UTC) for t in slo_range(played))
    variables = {v["name"]: ALL for v in query_variables(SLOS)} | selection
    result = ch.query(expand(sql, start, end, 60, variables))
    return tuple(result.column_names), [dict(zip(result.column_names, row)) for row in result.result_rows]


def epoch(t: datetime) -> int:
    """A time ClickHouse returned (naive in UTC, or aware), in epoch seconds."""
    return calendar.timegm(t.utctimetuple())


def slo_minutes(ch, played) -> dict[tuple[str, str], dict[int, tuple[float, float]]]:
    """(slo, entity) -> {minute (epoch s): (good, total)} of the scenario's site in sanlens.slo_windows, from the hour
    before the scenario (the burn rates' lookback) to its end: the figures the panels sum, summed in Python. (Not
    the truth: sanlens.slo_windows holds fewer windows than the job counted, a defect of its own.)"""
    rows = ch.query(
        "SELECT slo, entity, intDiv(toUnixTimestamp(toDateTime(window_start)), 60) * 60 AS minute, "
        "sum(good) AS g, sum(total) AS t FROM sanlens.slo_windows FINAL "
        "WHERE site IN {s:Array(String)} AND window_start >= toDateTime({start:UInt32}) "
        "AND window_start <= toDateTime({end:UInt32}) GROUP BY slo, entity, minute HAVING t > 0",
        parameters={"s": played.sites, "start": int(played.run.start_s) - 3600, "end": slo_range(played)[1]},
    ).result_rows
    minutes = {}
    for slo, entity, minute, good, total in rows:
        minutes.setdefault((slo, entity), {})[minute] = (good, total)
    return minutes


def slo_range(played) -> tuple[int, int]:
    return int(played.run.start_s), int(played.run.start_s) + SLO_SCENARIO_S


def summed(minutes: dict[int, tuple[float, float]], first: int, last: int) -> tuple[float, float]:
    """Good and total I/Os of the minutes from `first` to `last` (epoch s, both included)."""
    cells = [cell for minute, cell in minutes.items() if first <= minute <= last]
    return sum(c[0] for c in cells), sum(c[1] for c in cells)


def played_alerts(played, entity: str, severity: str) -> tuple[list[dict], list[dict]]:
    """The firing rows and the resolved rows of flash-reads on `entity` at `severity` in the scenario's rows of
    sanlens.slo_alerts, in order."""
    rows = [a for a in played.alerts if (a["slo"], a["entity"], a["severity"]) == ("flash-reads", entity, severity)]
    return [a for a in rows if a["state"] == "firing"], [a for a in rows if a["state"] == "resolved"]


def the_page(played, entity: str) -> tuple[datetime, datetime, list[dict]]:
    """The scenario's one page (the fast burn): its first firing row's ts, its resolved row's and its firing rows."""
    firing, resolved = played_alerts(played, entity, "page")
    assert firing and len(resolved) == 1, (firing, resolved)
    return firing[0]["ts"], resolved[0]["ts"], firing


@pytest.mark.stack
@pytest.mark.parametrize("what, sql", [pytest.param(w, sql, id=w) for w, sql in sql_queries(SLOS)])
def test_every_slo_query_shows_the_scenario_s_slos(what, sql, slo_played, ch):
    """Each query's columns for all, the scenario's site and one entity; the attainment, the budget and the burn
    rates against the same sums of sanlens.slo_windows in Python, the healthy host's attainment above the
    objective; the alerts against the scenario's rows of sanlens.slo_alerts (the page, the ticket)."""
    entities = {host: f"{slo_played.id}-{host}:D" for host in ("sql1", "sql2", "sql3")}
    minutes = slo_minutes(ch, slo_played)
    for selection in slo_selections(slo_played):
        columns, rows = run_slo_query(ch, slo_played, sql, selection)
        assert columns == SLO_COLUMNS[what], f"{what}: columns {columns} for {selection}"
        check_slo_rows(what, rows, selection, slo_played, entities, minutes)


@pytest.mark.stack
def test_over_the_slo_s_period_the_attainment_panel_shows_what_slo_prints(slo_played, ch):
    """One query, three views: over the SLO's period (today and the days before it, UTC), the panel's budget left per
    entity of the scenario is what ./sanlens slo prints, in its words (and the report charts:
    tests/stack/test_report.py)."""
    [sql] = [sql for what, sql in sql_queries(SLOS) if what == "Attainment and error budget left"]
    days = slo_definitions.load(slo_definitions.DEFAULT_FILE).period_days
    out = sanlens("slo", "--limit", "1000")
    now = datetime.now(UTC)
    start = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=days - 1)
    variables = {v["name"]: ALL for v in query_variables(SLOS)} | {"site": slo_played.sites}
    panel = {
        (slo, entity): percent(budget_left)
        for slo, entity, *_, budget_left in ch.query(expand(sql, start, now, 60, variables)).result_rows
    }
    assert out.returncode == 0, out.stdout + out.stderr
    printed = {
        (title.split(":")[0], r["entity"]): r["budget left"]
        for title, rows in printed_tables(out.stdout).items()
        for r in rows
        if r["entity"].startswith(f"{slo_played.id}-")
    }
    assert printed and panel == printed, out.stdout


def check_slo_rows(what: str, rows: list[dict], selection: dict, played, entities: dict, minutes: dict) -> None:
    mine = [r for r in rows if r.get("site") in played.sites or r.get("entity", "").startswith(played.id)]
    start, end = slo_range(played)
    budget = {s.name: s.budget for s in slo_definitions.load(slo_definitions.DEFAULT_FILE).slos}
    series = {}  # the time series' points of the scenario's SLOs and entities, by (slo, entity)
    for r in rows:
        if "series" in r and r["series"].split(" on ", 1)[1].startswith(played.id):
            series.setdefault(tuple(r["series"].split(" on ", 1)), []).append(r)
    if what.startswith("$"):  # sorted values, the scenario's among them
        values = [r[what[1:]] for r in rows]
        expected = {"$slo": {"flash-reads"}, "$site": set(played.sites), "$entity": set(entities.values())}[what]
        assert expected <= set(values) and values == sorted(values), f"{what}: {values} for {selection}"
    elif what == "Attainment and error budget left":  # least budget first; the sums of the range; sql3 healthy
        assert [r["budget_left"] for r in rows] == sorted(r["budget_left"] for r in rows)
        assert "entity" not in selection or {(r["slo"], r["entity"]) for r in rows} == {
            ("flash-reads", entities["sql1"])
        }, rows
        for r in mine:
            good, total = summed(minutes[(r["slo"], r["entity"])], start, end)
            assert r["objective"] == pytest.approx(1 - budget[r["slo"]]) and r["ios"] == pytest.approx(total), r
            assert r["attainment"] == pytest.approx(good / total, rel=1e-9), r
            assert r["budget_left"] == pytest.approx(1 - (1 - r["attainment"]) / budget[r["slo"]], rel=1e-9)
        [sql1] = [r for r in mine if (r["slo"], r["entity"]) == ("flash-reads", entities["sql1"])]
        good, total = summed(played.truth[("flash-reads", entities["sql1"])], start, end)
        assert sql1["budget_left"] < 0 and sql1["attainment"] == pytest.approx(good / total, abs=1e-4), sql1
        healthy = [r for r in mine if r["entity"].startswith(f"{played.id}-sql3:")]
        assert "entity" in selection or (healthy and all(r["attainment"] > 0.999 for r in healthy)), mine
    elif what == "Error budget left over the range":  # cumulative from the range's start, a point a minute
        assert ("flash-reads", entities["sql1"]) in series, rows[:5]
        for (slo, entity), points in series.items():
            assert [r["time"] for r in points] == sorted(r["time"] for r in points)
            for r in points:
                good, total = summed(minutes[(slo, entity)], start, epoch(r["time"]))
                expected = 1 - (total - good) / (budget[slo] * total)
                assert r["budget_left"] == pytest.approx(expected, rel=1e-9, abs=1e-9), (slo, entity, r)
    elif what == "Burn rates over 5m and 1h":  # each minute's trailing windows; the healthy path never near a page
        assert ("flash-reads", entities["sql1"]) in series, rows[:5]
        for (slo, entity), points in series.items():
            for r in points:
                for window in ("5m", "1h"):
                    t = epoch(r["time"])
                    good, total = summed(minutes[(slo, entity)], t - WINDOWS[window] + 60, t)
                    expected = (1 - good / total) / budget[slo]
                    assert r[f"burn_{window}"] == pytest.approx(expected, rel=1e-6, abs=1e-9), (slo, entity, r)
            if entity == entities["sql3"]:
                assert max(r["burn_1h"] for r in points) < 14.4, (slo, entity)
    elif what == "Alert history":  # one page on sql1 from its first firing row to its resolved row; sql2 a ticket
        first, resolved, firing = the_page(played, entities["sql1"])
        pages = [r for r in mine if r["entity"] == entities["sql1"] and r["severity"] == "page"]
        assert len(pages) == 1, pages
        (page,) = pages
        assert (page["slo"], page["state"], page["started_at"], page["resolved_at"]) == (
            "flash-reads",
            "resolved",
            first,
            resolved,
        ), page
        assert page["duration_s"] == round((resolved - first).total_seconds())
        for window in WINDOWS:
            assert page[f"peak_burn_{window}"] == pytest.approx(max(a[f"burn_{window}"] for a in firing)), window
        if "entity" in selection:
            assert [(r["slo"], r["entity"]) for r in rows] == [("flash-reads", entities["sql1"])] * len(rows), rows
        else:  # the slow burn: tickets (the first from its first firing row), no page; the healthy path nothing
            sql2 = [r for r in mine if r["entity"] == entities["sql2"]]
            assert {(r["slo"], r["severity"]) for r in sql2} == {("flash-reads", "ticket")}, sql2
            tickets, _ = played_alerts(played, entities["sql2"], "ticket")
            assert min(r["started_at"] for r in sql2) == tickets[0]["ts"], sql2
            assert not [r for r in mine if r["entity"].startswith(f"{played.id}-sql3:")]
        order = [(r["state"] != "firing", -r["started_at"].timestamp()) for r in rows]
        assert order == sorted(order)
    elif what in ("SLO pages", "SLO tickets"):  # the episodes' regions, from firing to resolved
        assert all(r["timeEnd"] >= r["time"] and r["text"] for r in rows), rows
        severity = what.split()[1][:-1]
        entity = entities["sql1" if severity == "page" else "sql2"]
        regions = sorted(
            (r["time"], r["timeEnd"]) for r in rows if r["text"].startswith(f"flash-reads {severity} on {entity}")
        )
        if severity == "page":
            first, resolved, _ = the_page(played, entity)
            assert regions == [(first, resolved)], rows
        elif "entity" in selection:  # sql1 alone
            assert not regions, rows
        else:
            tickets, _ = played_alerts(played, entity, severity)
            assert regions and regions[0][0] == tickets[0]["ts"], rows
    else:
        raise AssertionError(f"no check for {what}")
