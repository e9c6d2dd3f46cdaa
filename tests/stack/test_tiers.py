"""Tiers per tier against the simulator's ground truth, through the whole stack (the arrays' per-tier statistics and
capacity -> Kafka -> normalize -> loader -> sanlens.metrics -> the dbt views sanlens_marts.tier_performance and
tier0_fullness -> the "Tiers" dashboard, its alert rule and the report's queries), on a scenario of its own: two
hybrid arrays, auto-tiering filling the first one's small Tier 0 past its warning level, the second one's far from
full. Each volume's and array's IOPS and service time per tier are the truth's, minute by minute, and so is where the
writes land; the first array's Tier 0 warns where the truth passed 90 % and raises the alert rule, the second never
does. The dashboard's every query returns what its panel shows."""

from __future__ import annotations

import json
import math
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest

from grafana import tier_alert_rules
from queries import tiers
from tests import scenarios
from tests.breakdown_scenarios import backfill
from tests.grafana_macros import ALL, expand
from tests.support import ROOT, sanlens, wait_until

TIERS_BOARD = json.loads((ROOT / "grafana" / "dashboards" / "tiers.json").read_text())
# What each of the dashboard's queries returns (panels by title, variables by $name).
TIERS_COLUMNS = {
    "Tier 0 fullness (red: the warning level)": ("time", "array", "tier0_fill"),
    "Where the writes land: each tier's share of the array's writes": ("time", "series", "write_share"),
    "IOPS per tier": ("time", "series", "iops"),
    "Service time per tier": ("time", "series", "service_ms"),
    "Arrays whose Tier 0 reached the warning level": (
        "site",
        "array",
        "first_warning",
        "last_warning",
        "peak_fill",
        "latest_fill",
        "warning_level",
    ),
    "IOPS per volume and tier": ("time", "series", "iops"),
    "Service time per volume and tier": ("time", "series", "service_ms"),
    "Tiers per volume": (
        "site",
        "array",
        "volume",
        "tier_name",
        "read_iops",
        "write_iops",
        "read_service_ms",
        "write_service_ms",
        "write_share",
        "latest_fill",
    ),
    "$site": ("site",),
    "$array": ("array",),
    "$volume": ("volume",),
}


def board_queries(board: dict) -> list[tuple[str, str]]:
    panels = [p for p in board["panels"] if p["type"] != "row"]
    variables = [v for v in board["templating"]["list"] if v["type"] == "query"]
    return [(p["title"], t["rawSql"]) for p in panels for t in p["targets"]] + [
        (f"${v['name']}", v["query"]) for v in variables
    ]


def test_every_tiers_dashboard_query_has_its_columns_checked():
    assert [what for what, _ in board_queries(TIERS_BOARD)] == list(TIERS_COLUMNS), "update TIERS_COLUMNS"


def test_the_alert_rule_fires_at_the_dbt_warning_level_as_a_ticket():
    (group,) = tier_alert_rules.build()["groups"]
    (rule,) = group["rules"]
    condition = next(q for q in rule["data"] if q["refId"] == rule["condition"])
    assert condition["model"]["expression"] == f"$B >= {tiers.TIER0_WARNING_FILL!r}" and tiers.TIER0_WARNING_FILL == 0.9
    assert rule["labels"] == {"severity": "ticket"} and group["folder"] == "sanlens"


def test_the_simulated_tiers_add_up_to_the_volume_and_fill_the_array_s_tier0(tmp_path):
    """In the simulator alone: each hybrid volume's I/Os per tier add up to its I/Os; the array's capacity document
    has Tier 0 free what its volumes' Tier 0 MiB leave; the truth marks when Tier 0 passed 90 %, once."""
    from ingest.simulator import formats, scenario
    from ingest.simulator.fleet import Fleet
    from ingest.simulator.truth import Truth

    (tmp_path / "s.yaml").write_text(scenarios.text("tiers", id="u"))
    s = scenario.load(tmp_path / "s.yaml")
    fleet = Fleet(s, 1_700_000_000.0)
    truth = Truth(tmp_path / "truth", fleet)
    for _ in range(int(s.duration_s // s.interval_s)):
        fleet.step()
        truth.interval()
        for name, v in fleet.volumes.items():
            assert sum(n for (_, d), n in v.tier_ios.items() if d == "read") == v.reads, name
            assert sum(n for (_, d), n in v.tier_ios.items() if d == "write") == v.writes, name
        document = formats.capacity(fleet, "u-hy1")
        members = formats.vv_tiers(fleet, "u-hy1")["members"]
        used = sum(m["tier0MiB"] for m in members)
        assert document["SSDCapacity"] == {"totalMiB": 512 * 1024, "freeMiB": max(512 * 1024 - used, 0)}
    truth.close(fleet.start_s)
    (warning,) = [json.loads(line) for line in (tmp_path / "truth" / "tier0_warnings.jsonl").read_text().splitlines()]
    passed = warning["passed"] - fleet.start_s  # auto-tiering from 300 s towards 0.96 of Tier 0, time constant 120 s
    assert warning["array"] == "u-hy1" and 300 + 120 * math.log(16) <= passed < 300 + 120 * math.log(16) + 20


# -- through the stack ------------------------------------------------------------------------------------------


def minute(t: float) -> datetime:
    return datetime.fromtimestamp(t // 60 * 60, UTC).replace(tzinfo=None)


def naive(t: datetime) -> datetime:
    """A minute as the truth keys it: UTC without a time zone (ClickHouse's DateTime('UTC') comes with one)."""
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t


def truth_minutes(folder) -> tuple[dict, dict]:
    """The truth's tiers per minute: (array, volume or '', tier, minute) -> read/write IOPS and I/O-weighted service
    times of the minute's intervals (an array's its volumes' summed per interval); (array, minute) -> Tier 0 fill."""
    intervals = defaultdict(lambda: defaultdict(float))  # (array, volume, tier, t) -> figures
    fills = defaultdict(list)
    for line in (folder / "truth" / "tiers.jsonl").read_text().splitlines():
        f = json.loads(line)
        if f["kind"] == "array":
            fills[(f["array"], minute(f["t"]))].append(f["tier0_fill"])
            continue
        for volume in (f["volume"], ""):
            i = intervals[(f["array"], volume, f["tier"], f["t"])]
            for d in ("read", "write"):
                i[f"{d}_iops"] += f[f"{d}_iops"]
                i[f"{d}_us_x_iops"] += f[f"{d}_ms"] * 1000 * f[f"{d}_iops"]
    by_minute = defaultdict(list)
    for (array, volume, tier, t), i in intervals.items():
        by_minute[(array, volume, tier, minute(t))].append(i)
    out = {}
    for key, rows in by_minute.items():
        if len(rows) < 6:  # the run's first and last minutes are partial
            continue
        figures = {}
        for d in ("read", "write"):
            ios = sum(r[f"{d}_iops"] for r in rows)
            figures[f"{d}_iops"] = ios / len(rows)
            figures[f"{d}_service_us"] = sum(r[f"{d}_us_x_iops"] for r in rows) / ios if ios else None
        out[key] = figures
    return out, {k: sum(v) / len(v) for k, v in fills.items() if len(v) == 6}


@pytest.fixture(scope="module")
def tiers_played(stack, ch, tmp_path_factory):
    run_id = f"r{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("tiers")
    s, run, _ = backfill(folder, scenarios.text("tiers", id=run_id))
    site = f"s-{run_id}"
    volumes = sum(len(a.volumes) for a in s.arrays.values())
    expected = (run.intervals + 1) * volumes  # the first poll's and every interval's
    query = "SELECT count() FROM sanlens.metrics WHERE metric = 'volume.tier1_write_service_time' AND site = {s:String}"
    wait_until(lambda: ch.command(query, parameters={"s": site}) >= expected, 600, f"{expected} tier samples of {site}")
    capacity = "SELECT count() FROM sanlens.metrics WHERE metric = 'array.tier0_free_bytes' AND site = {s:String}"
    wait_until(lambda: ch.command(capacity, parameters={"s": site}) >= (run.intervals + 1) * 2, 300, "capacities")
    out = sanlens("dbt", "build", "--select", "+tier_performance", "+tier0_fullness")
    assert out.returncode == 0, out.stdout[-3000:]
    truth, fills = truth_minutes(folder)
    warnings = [json.loads(line) for line in (folder / "truth" / "tier0_warnings.jsonl").read_text().splitlines()]
    events = [json.loads(line) for line in (folder / "truth" / "events.jsonl").read_text().splitlines()]
    (tiering,) = [e for e in events if e["type"] == "auto_tiering"]
    return s, run_id, site, truth, fills, warnings, tiering


def mart(ch, view: str, site: str) -> list[dict]:
    """The view's rows of the site, their minutes as the truth keys them."""
    rows = ch.query(f"SELECT * FROM sanlens_marts.{view} WHERE site = {{s:String}}", parameters={"s": site})
    return [r | {"minute": naive(r["minute"])} for r in rows.named_results()]


def test_a_hybrid_volume_s_per_tier_iops_and_latency_match_the_truth(tiers_played, ch):
    """Every whole minute of every hybrid volume and array, per tier: the read and write IOPS within 0.01/s, the
    service times within 0.1 % (the arrays' documents round to 0.01 IOPS and 0.1 us) and where the writes land
    within 0.1 point of the truth's."""
    s, run_id, site, truth, _, _, _ = tiers_played
    rows = {(r["array"], r["volume"], r["tier"], r["minute"]): r for r in mart(ch, "tier_performance", site)}
    compared = [k for k in truth if k in rows]
    assert len(compared) == len(truth) >= 2 * 2 * 3 * 20, "every whole minute of every volume, array and tier"
    for key in compared:
        row, true = rows[key], truth[key]
        for d in ("read", "write"):
            assert row[f"{d}_iops"] == pytest.approx(true[f"{d}_iops"], abs=0.01), (key, d)
            if true[f"{d}_service_us"] is None:
                assert row[f"{d}_service_us"] is None, (key, d)
            else:
                assert row[f"{d}_service_us"] == pytest.approx(true[f"{d}_service_us"], rel=1e-3), (key, d)
        other = truth[(*key[:2], 1 - key[2], key[3])]
        writes = true["write_iops"] + other["write_iops"]
        if writes:
            assert row["write_share"] == pytest.approx(true["write_iops"] / writes, abs=1e-3), key
    # Tier 0 SSD well under a millisecond, Tier 1 SAS tens of them, on the volume auto-tiering moved
    served = [rows[k] for k in compared if k[1] == f"{run_id}-sql1_data" and rows[k]["service_us"] is not None]
    assert max(r["service_us"] for r in served if r["tier"] == 0) < 1000
    assert min(r["service_us"] for r in served if r["tier"] == 1) > 15000


def test_new_writes_land_in_tier0_until_it_fills(tiers_played, ch):
    """The log volume (auto-tiering not permitted) writes nothing to Tier 0; the auto-tiered data volume's Tier 0 takes
    its new writes (a tenth of them) on top of its pages' share while the reserve has room, and fewer once Tier 0
    passes 90 %: its Tier 0 write share then lags the read share's 0.9 x + 0.1 by the spilled new writes."""
    s, run_id, site, truth, _, warnings, tiering = tiers_played
    rows = mart(ch, "tier_performance", site)
    log = [r for r in rows if r["volume"] == f"{run_id}-sql1_log" and r["tier"] == 0]
    assert log and all(r["write_iops"] == 0 for r in log)
    (warning,) = warnings
    volume = f"{run_id}-sql1_data"
    data = {r["minute"]: r for r in rows if r["volume"] == volume and r["tier"] == 0}
    tier1_reads = {r["minute"]: r["read_iops"] for r in rows if r["volume"] == volume and r["tier"] == 1}
    reads = {m: r["read_iops"] / (r["read_iops"] + tier1_reads[m]) for m, r in data.items()}
    room = [m for m in data if minute(tiering["start"] + 60) < m < minute(warning["passed"] - 60)]
    full = [m for m in data if minute(warning["passed"] + 300) < m < minute(tiering["start"] + 1140)]
    excess = lambda ms: sum(data[m]["write_share"] - (0.9 * reads[m] + 0.1) for m in ms) / len(ms)  # noqa: E731
    assert room and full
    assert excess(room) == pytest.approx(0, abs=0.02), "new writes in Tier 0 while its reserve has room"
    assert excess(full) < -0.03, "new writes spill to Tier 1 once Tier 0 is past 90 %"


def test_a_tier0_that_fills_past_the_warning_level_raises_it(tiers_played, ch):
    """The mart's fill is the truth's to 0.01 % every whole minute; the first warning minute is where the truth
    passed 90 % (or the next, the minute's mean reaching it later); the report's and dashboard's warning list names
    that array alone; the alert rule's query, three minutes after, fires for it and not for the other, and five
    minutes before nothing is at the level."""
    s, run_id, site, _, fills, warnings, _ = tiers_played
    rows = mart(ch, "tier0_fullness", site)
    for r in rows:
        if (r["array"], r["minute"]) in fills:
            assert r["tier0_fill"] == pytest.approx(fills[(r["array"], r["minute"])], abs=1e-4), r
    (warning,) = warnings
    assert warning["array"] == f"{run_id}-hy1" and warning["below_again"] is None
    first = min(r["minute"] for r in rows if r["warning"])
    assert minute(warning["passed"]) <= first <= minute(warning["passed"]) + timedelta(minutes=1)
    assert {r["array"] for r in rows if r["warning"]} == {warning["array"]}

    listed = ch.query(tiers.tier0_warnings(f"site = '{site}'")).named_results()
    assert [(r["array"], naive(r["first_warning"])) for r in listed] == [(warning["array"], first)]

    def fired(at: datetime) -> dict:
        start = at - timedelta(seconds=tier_alert_rules.WINDOW_S)
        result = ch.query(expand(tier_alert_rules.FILL_SQL, start, at, 60, {}) + f" HAVING site = '{site}'")
        return {r["entity"]: r["tier0_fill"] >= tiers.TIER0_WARNING_FILL for r in result.named_results()}

    passed = datetime.fromtimestamp(warning["passed"], UTC)
    assert fired(passed + timedelta(minutes=3)) == {f"{run_id}-hy1": True, f"{run_id}-hy2": False}
    assert fired(passed - timedelta(minutes=5)) == {f"{run_id}-hy1": False, f"{run_id}-hy2": False}


@pytest.mark.parametrize("what, sql", [pytest.param(w, sql, id=w) for w, sql in board_queries(TIERS_BOARD)])
def test_every_tiers_dashboard_query_returns_what_it_shows(what, sql, tiers_played, ch):
    s, run_id, site = tiers_played[:3]
    start, end = ch.query(
        "SELECT min(minute), max(minute) FROM sanlens_marts.tier0_fullness WHERE site = {s:String}",
        parameters={"s": site},
    ).result_rows[0]
    variables = {v: ALL for v in ("site", "array", "volume")}
    hy1, volume = f"{run_id}-hy1", f"{run_id}-sql1_data"
    for selection in ({}, {"site": [site]}, {"site": [site], "array": [hy1], "volume": [volume]}):
        result = ch.query(expand(sql, start, end, 60, variables | selection))
        columns, rows = tuple(result.column_names), list(result.named_results())
        assert columns == TIERS_COLUMNS[what], f"{what}: columns {columns} for {selection}"
        if what.startswith("$"):
            values = [r[what[1:]] for r in rows]
            selected = {"site": site, "array": hy1, "volume": volume}[what[1:]]
            assert values == sorted(values) and selected in values, (what, values)
            continue
        mine = [r for r in rows if run_id in (r.get("array") or r.get("series") or "")]
        if what == "Arrays whose Tier 0 reached the warning level":
            assert [r["array"] for r in mine] == [hy1], rows
            continue
        assert mine, f"{what}: nothing of the scenario for {selection}"
        if "array" in selection:
            assert all(hy1 in (r.get("array") or r.get("series")) for r in mine), (what, selection)
        if what == "Tier 0 fullness (red: the warning level)":
            assert max(r["tier0_fill"] for r in mine if r["array"] == hy1) >= tiers.TIER0_WARNING_FILL
        elif what == "Tiers per volume":
            tiers_of = {(r["volume"], r["tier_name"]) for r in mine}
            assert (volume, tiers.TIER_NAMES[0]) in tiers_of and (volume, tiers.TIER_NAMES[1]) in tiers_of
        elif what.endswith("per tier") or what.startswith("Where"):
            assert {r["series"] for r in mine} >= {f"{hy1} / {tiers.TIER_NAMES[0]}", f"{hy1} / {tiers.TIER_NAMES[1]}"}
        else:  # per volume and tier: the selected volume's (or every volume's) series
            assert any(r["series"].startswith(f"{hy1} / {volume} / ") for r in mine), what


def test_the_report_draws_the_filling_array_s_tiers_and_its_warning(tiers_played, ch, tmp_path):
    """The report's chart of the array whose Tier 0 filled: its fill crosses the dashed warning line where the truth
    says, the minutes past it shaded; its two tiers' IOPS, service times and write shares drawn. The PNG is kept in
    the test's folder, to be looked at."""
    from sanlensctl import tier_charts

    s, run_id, site, _, _, warnings, _ = tiers_played
    (warning,) = warnings
    fig = tier_charts.array_chart(ch, warning["array"])
    fill = fig.data[0]
    assert fill.name == "Tier 0 fill" and max(fill.y) >= tiers.TIER0_WARNING_FILL > min(fill.y)
    (shaded,) = [s for s in fig.layout.shapes if s.fillcolor == "red"]
    assert naive(datetime.fromisoformat(str(shaded.x0))) - minute(warning["passed"]) <= timedelta(minutes=1)
    assert [t.name for t in fig.data[1:]] == [tiers.TIER_NAMES[0], tiers.TIER_NAMES[1]] * 3
    assert all(len(t.x) >= 20 for t in fig.data)
    fig.update_layout(template="plotly_white", width=1100)
    fig.write_image(tmp_path / f"tiers-{warning['array']}.png")
    assert (tmp_path / f"tiers-{warning['array']}.png").stat().st_size > 20_000
