"""Load curves against the simulator's ground truth: OLTP workloads added one by one to an all-flash array until it
saturates (the consolidation knee of docs/domain.md, played past the array's capacity), beside an array well below
its capacity. The simulator serves no more than the capacity and records where the knee and the saturation are;
through the whole stack (Kafka -> normalize -> loader -> sanlens.metrics), the load-curve query that the "Load and
latency" dashboard and the report share (queries/load_curve.py) finds the knee within one added workload
of the truth's, the throughput flat past saturation, and no knee on the array below capacity."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest

from ingest.simulator import latency
from ingest.simulator import scenario as scenario_file
from ingest.simulator.fleet import Fleet
from queries import load_curve
from sanlensctl import load_curves
from tests import scenarios
from tests.breakdown_scenarios import backfill
from tests.grafana_macros import ALL, expand
from tests.support import ROOT, wait_until

WORKLOAD_IOPS = 9000
EVERY_S = 120
COUNT = 9
CAPACITY = 60000


def scenario_text(run_id: str) -> str:
    return scenarios.text(
        "load-curve",
        id=run_id,
        duration_s=EVERY_S * (COUNT + 1),
        capacity=CAPACITY,
        every_s=EVERY_S,
        count=COUNT,
        workload_iops=WORKLOAD_IOPS,
    )


def offered_iops(added: int) -> float:
    return 6000 + added * WORKLOAD_IOPS


def test_the_simulated_array_serves_no_more_than_its_capacity(tmp_path):
    """Per added workload: the IOPS the hosts get are those offered up to the capacity, then the capacity; the
    array's service time keeps growing with the load offered; the array below capacity serves all it is offered."""
    (tmp_path / "s.yaml").write_text(scenario_text("t"))
    s = scenario_file.load(tmp_path / "s.yaml")
    fleet = Fleet(s, 0.0)
    served, service = {}, {}
    for _ in range(int(s.duration_s // s.interval_s)):
        added = min(COUNT, int((fleet.t - fleet.start_s) // EVERY_S))
        fleet.step()
        f = fleet.hosts["t-sql1"]
        served.setdefault(added, f.read_iops + f.write_iops)
        service.setdefault(added, f.array_write_us)
        assert fleet.hosts["t-sql2"].read_iops + fleet.hosts["t-sql2"].write_iops == pytest.approx(20000)
    assert served == {n: pytest.approx(min(offered_iops(n), CAPACITY)) for n in range(COUNT + 1)}
    assert list(service.values()) == sorted(service.values())
    assert service[COUNT] > 1.4 * service[6]  # 87,000 offered against 60,000 served: Little's law


def test_below_its_onset_the_load_factor_is_the_calibrated_curve():
    """Scenarios below capacity keep their calibration: service times x3 at 80 % of capacity, and the curve runs
    on continuously past the onset of saturation."""
    assert latency.load_factor(0.8) == pytest.approx(1 + 0.8**4 / 0.2)
    assert latency.load_factor(0.5) == pytest.approx(1.125)
    onset = latency.SATURATION_ONSET
    assert latency.load_factor(onset + 1e-9) == pytest.approx(latency.load_factor(onset))
    assert 0.55 < latency.knee_utilisation() < 0.58  # where the elasticity crosses 1 on this curve


@pytest.fixture(scope="module")
def saturation(stack, ch, tmp_path_factory):
    """The scenario played as a backfill, once every array and host sample of its last interval is in
    sanlens.metrics and the count stops growing."""
    run_id = "sat" + uuid.uuid4().hex[:6]
    folder = tmp_path_factory.mktemp("saturation")
    s, run, _ = backfill(folder, scenario_text(run_id))
    site = f"s-{run_id}"
    last = run.start_s + s.duration_s - s.interval_s
    query = """SELECT count(), toUnixTimestamp(max(ts)) FROM sanlens.metrics
        WHERE site = {site:String} AND metric IN ('volume.ios', 'sql.batch_requests')"""
    seen = []

    def complete():
        seen.append(ch.query(query, parameters={"site": site}).first_row)
        return seen[-1][1] >= last and len(seen) > 1 and seen[-2] == seen[-1]

    wait_until(complete, 600, f"the samples of {site}")
    events = [json.loads(line) for line in (folder / "truth" / "events.jsonl").read_text().splitlines()]
    (knee,) = [e for e in events if e["type"] == "workload_added"]
    return {"id": run_id, "site": site, "run": run, "scenario": s, "truth": knee["magnitude"]}


def query(ch, sql: str, site: str) -> list[dict]:
    return list(ch.query(sql, parameters={"site": site}).named_results())


def test_the_knee_is_found_within_one_added_workload_of_the_truth(saturation, ch):
    """The truth puts the knee where the model's elasticity crosses 1 (0.564 of 60,000 IOPS: 33,858, reached by
    the fourth workload) and the saturation at the sixth (60,000 offered); the pipeline's knee is within one
    workload's IOPS of it; the array below capacity has none."""
    truth = saturation["truth"]
    assert truth["capacity_iops"] == CAPACITY and truth["knee_iops"] == pytest.approx(33858, abs=10)
    assert (truth["knee_workloads"], truth["saturation_workloads"]) == (4, 6)
    where = "site = {site:String}"
    rows = {
        r["array"]: r for r in query(ch, load_curve.array_knees(load_curve.array_intervals(where)), saturation["site"])
    }
    saturated, calm = rows[f"{saturation['id']}-af1"], rows[f"{saturation['id']}-af2"]
    print(f"knee found {saturated['knee_iops']:.0f} IOPS at {saturated['knee_service_ms']:.3f} ms; truth {truth}")
    assert abs(saturated["knee_iops"] - truth["knee_iops"]) <= WORKLOAD_IOPS
    assert saturated["peak_iops"] == pytest.approx(CAPACITY, rel=0.01)
    assert saturated["peak_service_ms"] > 5 * saturated["knee_service_ms"]
    assert calm["knee_iops"] is None and calm["peak_iops"] == pytest.approx(20000, rel=0.02)


def test_throughput_is_flat_past_saturation(saturation, ch):
    """Every interval from the workload that saturates the array on serves its capacity within 1 %, however many
    more workloads come, while its service time keeps growing; before it the IOPS follow the workloads added."""
    s, run, truth = saturation["scenario"], saturation["run"], saturation["truth"]
    where = "site = {site:String} AND array = '" + f"{saturation['id']}-af1'"
    rows = query(ch, load_curve.array_intervals(where) + " ORDER BY ts", saturation["site"])
    assert len(rows) >= s.duration_s // s.interval_s - 2
    levels = {}
    for r in rows:
        at = r["ts"].timestamp() - run.start_s
        if at % EVERY_S >= s.interval_s:  # not the interval a workload arrives in
            levels.setdefault(int(at // EVERY_S), []).append(r)
    saturated_from = truth["saturation_workloads"]
    for added, intervals in levels.items():
        expected = min(offered_iops(added), CAPACITY)
        assert all(r["iops"] == pytest.approx(expected, rel=0.01) for r in intervals), (added, intervals)
    past = [sum(r["service_ms"] for r in levels[n]) / len(levels[n]) for n in range(saturated_from, COUNT + 1)]
    print("service ms past saturation, per workload:", [round(ms, 2) for ms in past])
    assert past == sorted(past)


def test_a_host_s_batch_requests_follow_its_served_load_and_its_latency_grows(saturation, ch):
    """sql1's batch requests/s (1 per 8 I/Os in the simulator) rise with the workloads until the array saturates,
    then stay; the latency it measures grows past the knee."""
    where = "site = {site:String} AND host = '" + f"{saturation['id']}-sql1'"
    rows = query(ch, load_curve.host_intervals("toStartOfInterval(ts, INTERVAL 10 second)", where), saturation["site"])
    top = max(r["batch_requests"] for r in rows)
    assert top == pytest.approx(CAPACITY / 8, rel=0.03)
    busiest = [r for r in rows if r["batch_requests"] > 0.97 * top]
    quiet = [r for r in rows if r["batch_requests"] < 0.2 * top]
    assert quiet and busiest and min(r["latency_ms"] for r in busiest) > 5 * max(r["latency_ms"] for r in quiet)
    assert all(r["transactions"] > 0 for r in rows)


BOARD = json.loads((ROOT / "grafana" / "dashboards" / "load-and-latency.json").read_text())
# What each of the dashboard's queries returns, in order: panels by title, variables by $name.
BOARD_COLUMNS = {
    "$array: service time against IOPS, per interval (the knee in red)": ("iops", "service_ms", "knee_service_ms"),
    "$array: service time against MB/s, per interval (the knee in red)": ("mbps", "service_ms", "knee_service_ms"),
    "Arrays' knees and the load they top out at": load_curve.KNEE_COLUMNS,
    "$host: latency against batch requests/s, per 10 s": ("batch_requests", "latency_ms"),
    "$host: latency against transactions/s, per 10 s": ("transactions", "latency_ms"),
    "$site": ("site",),
    "$array": ("array",),
    "$host": ("host",),
}


def board_queries() -> list[tuple[str, str, str | None]]:
    """(what, SQL, the variable the panel repeats on or None)."""
    panels = [p for p in BOARD["panels"] if p["type"] != "row"]
    variables = [v for v in BOARD["templating"]["list"] if v["type"] == "query"]
    return [
        *((p["title"], p["targets"][0]["rawSql"], p.get("repeat")) for p in panels),
        *((f"${v['name']}", v["query"], None) for v in variables),
    ]


def test_every_query_of_the_dashboard_has_its_columns_checked():
    assert [what for what, *_ in board_queries()] == list(BOARD_COLUMNS), "update BOARD_COLUMNS"


def test_every_query_of_the_dashboard_returns_what_it_shows(saturation, ch):
    """Over the run's span, for All, the saturated array's site, and that array and its host alone: the columns
    the panel reads; the scatter's knee is the knee query's; the variables list the run's names, sorted. A panel
    repeated on a variable reads, in each copy, one value of it: the run's array or host."""
    run, s, run_id = saturation["run"], saturation["scenario"], saturation["id"]
    start = datetime.fromtimestamp(run.start_s, UTC)
    end = datetime.fromtimestamp(run.start_s + s.duration_s, UTC)
    names = {"site": saturation["site"], "array": f"{run_id}-af1", "host": f"{run_id}-sql1"}
    for what, sql, repeat in board_queries():
        for selection in ({}, {"site": [names["site"]]}, {name: [value] for name, value in names.items()}):
            variables = {"site": ALL, "array": ALL, "host": ALL} | selection
            if repeat:
                variables[repeat] = [names[repeat]]  # the copy of the panel for the run's array or host
            result = ch.query(expand(sql, start, end, 60, variables))
            rows = [dict(zip(result.column_names, row)) for row in result.result_rows]
            assert tuple(result.column_names) == BOARD_COLUMNS[what], what
            assert rows, (what, selection)
            if what.removeprefix("$") in names:  # a variable's query
                values = [r[what[1:]] for r in rows]
                assert names[what[1:]] in values and values == sorted(values), what
            elif what.startswith("$array: service time against IOPS"):
                (knee,) = [r for r in rows if r["knee_service_ms"] is not None]
                assert abs(knee["iops"] - saturation["truth"]["knee_iops"]) <= WORKLOAD_IOPS


def test_the_report_draws_the_saturated_array_with_its_knee(saturation, ch, tmp_path):
    """The report's load curves (sanlensctl/load_curves.py) of the run's arrays: the saturated one with its knee
    marked where the query puts it, the other without; the hosts' chart has both hosts. Written as PNGs, to look at."""
    where = "site = {site:String}"
    knees = query(ch, load_curve.array_knees(load_curve.array_intervals(where)), saturation["site"])
    arrays = sorted(knees, key=lambda k: k["knee_iops"] is None)
    figures = {
        "load-curves": load_curves.array_curves(ch, arrays),
        "load-curves-hosts": load_curves.host_curves(ch, [a["array"] for a in arrays], 4),
    }
    marked = [t for t in figures["load-curves"].data if t.name == "knee"]
    assert [t.x[0] for t in marked] == [arrays[0]["knee_iops"], arrays[0]["knee_mbps"]]
    assert sorted(t.name for t in figures["load-curves-hosts"].data) == [f"{saturation['id']}-sql{n}" for n in (1, 2)]
    for name, fig in figures.items():
        fig.update_layout(template="plotly_white", width=1100)
        fig.write_image(tmp_path / f"{name}.png", scale=1)
        print(f"wrote {tmp_path / name}.png")
