"""The latency breakdown against the simulator's ground truth: a scenario of its own (a slow-drain port on
one host's side of the switch, then an HBA saturation on another host) played through the whole stack
(Kafka -> normalize -> breakdown -> loader -> sanlens.path_latency). The parts add up to what the host
measured, each part matches the true one, and the planted contributor dominates on the affected paths only."""

from __future__ import annotations

import json
import sys
import types
import uuid
from datetime import UTC, datetime

import pytest
from confluent_kafka import Producer

from flink_jobs.breakdown import job
from flink_jobs.common import runtime
from ingest import topics
from ingest.simulator import latency
from sanlensctl import config
from tests.support import free_port, sanlens, wait_until

SCENARIO = """
name: breakdown-{id}
seed: 11
interval_s: 10
duration_s: 1800
customers:
  - name: c-{id}
    sites:
      - name: s-{id}
        switches: [{{name: {id}-sw, ports: 16}}]
        arrays:
          - {{name: {id}-af1, model: AF8000, media: ssd, firmware: 3.2.1, capacity_iops: 300000}}
          - {{name: {id}-af2, model: AF8000, media: ssd, firmware: 3.1.3, capacity_iops: 300000}}
        hosts:
          - {{name: {id}-sql1, array: {id}-af1, workload: tpce, iops: 8000, databases: [db1]}}
          - {{name: {id}-sql2, array: {id}-af1, workload: oltp, iops: 6000, databases: [db2]}}
          - {{name: {id}-sql3, array: {id}-af2, workload: oltp, iops: 5000, distance_km: 10, hops: 2, databases: [db3]}}
events:
  # sql1's own switch port (0/0) stalls: sql2 shares the array's port (0/12) but not this one
  - {{type: slow_drain, at: 400, until: 900, switch: {id}-sw, port: 0, delay_us: 800}}
  - {{type: hba_saturation, at: 1000, until: 1400, host: {id}-sql3, workload: datamining, iops: 3200}}
"""
PARTS = ("host_queueing_us", "fabric_us", "array_us", "unexplained_us")
ROWS_PER_INTERVAL = 3  # per host: D: read, D: write, L: write (L: has no reads, below the minimum I/O count)
PATH_MOVED_AT = 1500  # s into the scenario, sql2's data disk is recabled to switch port 0/0 (after the slow drain)


def iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds")


def move_path(run, host, switch_port: str, at: float) -> tuple[str, float]:
    """A second version of `host`'s D: path in the inventory, through another switch port from `at` on."""
    from ingest.simulator import formats

    key, path = next((k, v) for k, v in formats.topology(run.fleet) if k == f"path/{host.name}/D:")
    valid_from = run.start_s + at
    moved = {**path, "host_switch_port": switch_port, "valid_from": iso(valid_from)}
    producer = Producer({"bootstrap.servers": config.KAFKA_BOOTSTRAP})
    producer.produce(topics.TOPOLOGY, json.dumps(moved).encode(), key=key.encode())
    producer.flush(30)
    return host.name, valid_from


@pytest.fixture(scope="module")
def played(stack, ch, tmp_path_factory):
    from ingest.simulator import scenario as scenario_file
    from ingest.simulator.run import Run

    run_id = f"b{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("breakdown")
    (folder / "scenario.yaml").write_text(SCENARIO.format(id=run_id))
    s = scenario_file.load(folder / "scenario.yaml")
    run = Run(s, folder / "truth", config.KAFKA_BOOTSTRAP, backfill=True)
    moved = move_path(run, s.hosts[f"{run_id}-sql2"], "0/0", at=PATH_MOVED_AT)
    run.backfill()
    run.close()
    site = f"s-{run_id}"
    # The switch's first document lists no port yet (nothing has crossed one): each port's counters start
    # with the first interval, so their first rate, and the first breakdown, is the second interval's.
    expected = (run.intervals - 1) * len(s.hosts) * ROWS_PER_INTERVAL
    query = "SELECT count() FROM sanlens.path_latency FINAL WHERE site = {s:String}"
    wait_until(lambda: ch.command(query, parameters={"s": site}) >= expected, 600, f"{expected} windows of {site}")
    rows = ch.query(
        "SELECT toUnixTimestamp(window_start) AS t, * FROM sanlens.path_latency FINAL WHERE site = {s:String}",
        parameters={"s": site},
    ).named_results()
    truth = {}
    for line in (folder / "truth" / "hosts.jsonl").read_text().splitlines():
        figures = json.loads(line)
        truth[(figures["t"], figures["host"])] = figures
    events = [json.loads(line) for line in (folder / "truth" / "events.jsonl").read_text().splitlines()]
    return types.SimpleNamespace(
        scenario=s, site=site, rows=list(rows), truth=truth, events={e["type"]: e for e in events}, moved=moved
    )


def test_each_window_is_broken_down_along_its_path_as_it_was_then(played, ch):
    """sql2's D: moved to switch port 0/0 during the run: the windows before keep 0/1, those after show 0/0
    (the job sends those windows for both versions; the table keeps the latest that began before each)."""
    host, moved_at = played.moved
    query = """SELECT toUnixTimestamp(window_start) >= {at:Float64} AS moved, host_switch_port, count() AS windows
        FROM sanlens.path_latency FINAL WHERE host = {h:String} AND disk = 'D:' GROUP BY ALL ORDER BY ALL"""
    windows = {r["t"] for r in played.rows}
    before = sum(t < moved_at for t in windows)
    expected = [(0, "0/1", 2 * before), (1, "0/0", 2 * (len(windows) - before))]  # x read and write
    wait_until(
        lambda: ch.query(query, parameters={"at": moved_at, "h": host}).result_rows == expected, 120, str(expected)
    )


def nominal_fabric(host) -> float:
    return latency.fabric_us(host.hops, host.distance_km, 0.0)


def test_every_window_of_every_path_is_broken_down_once(played):
    rows, s = played.rows, played.scenario
    expected = (s.duration_s / s.interval_s - 1) * len(s.hosts) * ROWS_PER_INTERVAL
    assert len(rows) == len({(r["t"], r["host"], r["disk"], r["direction"]) for r in rows}) == expected


def test_the_parts_add_up_to_what_the_host_measured(played):
    rows, truth = played.rows, played.truth
    for r in rows:
        assert sum(r[p] for p in PARTS) == pytest.approx(r["host_us"], rel=1e-9)
        true_host_us = truth[(r["t"], r["host"])][f"{r['direction']}_us"]
        assert r["host_us"] == pytest.approx(true_host_us, rel=1e-4)


def test_each_part_matches_the_truth(played):
    """Array within 0.1 µs (the array reports ms to 4 decimals); host queueing and fabric within 2% + 2 µs;
    what is left unexplained under 1% of the host's latency, on every window, faults included."""
    rows, truth = played.rows, played.truth
    for r in rows:
        t = truth[(r["t"], r["host"])]
        assert r["array_us"] == pytest.approx(t[f"array_{r['direction']}_us"], abs=0.1)
        assert r["host_queueing_us"] == pytest.approx(t["queueing_us"], rel=0.02, abs=2), r
        assert r["fabric_us"] == pytest.approx(t["fabric_us"], rel=0.02, abs=2), r
        assert abs(r["unexplained_us"]) < 0.01 * r["host_us"], r


def test_the_planted_contributor_dominates_on_the_affected_paths_only(played):
    s, rows, truth, events = played.scenario, played.rows, played.truth, played.events
    slow_drain, saturation = events["slow_drain"], events["hba_saturation"]
    affected = {
        "fabric": lambda r: (
            r["host"] in slow_drain["affected"]
            and truth[(r["t"], r["host"])]["fabric_us"] > nominal_fabric(s.hosts[r["host"]])
        ),
        "host_queueing": lambda r: (
            r["host"] in saturation["affected"]
            and truth[(r["t"], r["host"])]["queueing_us"] > 10 * latency.HOST_STACK_US
        ),
    }
    seen = {contributor: 0 for contributor in affected}
    for r in rows:
        largest = max(PARTS, key=lambda p: r[p]).removesuffix("_us")
        planted = [c for c, is_affected in affected.items() if is_affected(r)]
        if planted:
            seen[planted[0]] += 1
            assert largest == planted[0], r
        else:
            assert r["fabric_us"] == pytest.approx(nominal_fabric(s.hosts[r["host"]])), r
            assert r["host_queueing_us"] == pytest.approx(latency.HOST_STACK_US), r
    # 50 intervals of slow drain x 3 paths of one host; 40 of saturation x 3 paths
    assert seen == {"fabric": 150, "host_queueing": 120}


def largest_parts(explained: str) -> dict[tuple[str, str], str]:
    """(disk, direction) -> the 'largest' column of ./sanlens explain's table (the last word of each line)."""
    lines = explained.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("disk"))
    return {tuple(line.split()[:2]): line.split()[-1] for line in lines[header + 2 : -1]}


def test_explain_shows_the_fabric_during_the_slow_drain_and_the_array_outside_it(played):
    drain = played.events["slow_drain"]
    host = drain["affected"][0]
    # the truth's windows start where the figures' interval ends: one interval after the planted time
    during = sanlens("explain", host, "--from", iso(drain["start"] + 10), "--to", iso(drain["end"] + 10))
    before = sanlens("explain", host, "--from", iso(drain["start"] - 300), "--to", iso(drain["start"] + 10))
    assert during.returncode == 0 and before.returncode == 0, during.stderr + before.stderr
    paths = {("D:", "read"), ("D:", "write"), ("L:", "write")}
    assert largest_parts(during.stdout) == dict.fromkeys(paths, "fabric"), during.stdout
    assert largest_parts(before.stdout) == dict.fromkeys(paths, "array"), before.stdout


def test_the_mart_adds_up_and_leaves_little_unexplained(played, ch):
    s, windows = played.scenario, played.rows
    out = sanlens("dbt", "build", "--select", "+latency_breakdown")
    assert out.returncode == 0, out.stdout[-3000:]
    rows = ch.query(
        "SELECT * FROM sanlens_marts.latency_breakdown WHERE site = {s:String}",
        parameters={"s": played.site},
    ).named_results()
    rows = list(rows)
    minutes = len({w["t"] // 60 for w in windows})
    assert len(rows) == minutes * len(s.hosts) * ROWS_PER_INTERVAL
    for r in rows:
        assert sum(r[p] for p in PARTS) == pytest.approx(r["host_us"], rel=0.01)
        assert abs(r["unexplained_us"]) < 0.1 * r["host_us"]


def test_the_plan_is_sql_in_the_jvm_and_waits_for_no_watermark(monkeypatch):
    """No stack needed: samples are read once, no Python function is in the path, no window waits for a
    watermark, and every join keeps its samples 10 minutes but the inventory for good."""
    monkeypatch.setattr(sys, "argv", ["job.py", "--rest-port", str(free_port())])
    args = runtime.arguments(job.__doc__, job.OPTIONS)
    plan = job.statements(runtime.table_env("breakdown-plan", args), args).explain()
    physical = plan.split("== Optimized Physical Plan ==")[1].split("== Optimized Execution Plan ==")[0]
    optimized = plan.split("== Optimized Execution Plan ==")[-1]
    assert optimized.count("TableSourceScan(table=[[default_catalog, default_database, samples") == 1
    assert "Python" not in optimized and "watermark" not in optimized.lower() and "Window" not in optimized
    # latency with rate, stall with discards (planned once for both ports), then path, volume, HBA, two ports
    assert optimized.count("Join(") == 7
    with_hints = [line for line in physical.splitlines() if "Join(" in line and "stateTtlHints" in line]
    assert len(with_hints) == 1 and "<=(valid_from, window_start)" in with_hints[0]  # the path as of the window
    assert "STATE_TTL options:{RIGHT=0 ms}" in with_hints[0]
