"""The breakdown's incidents as the simulator planted them and as the pipeline found them, and a wait for the
breakdown to hold a run's every window: for the tests that check the breakdown, the tiering and a replay against
the ground truth (tests/stack/test_breakdown.py, test_tiering.py, test_replay.py and tests/slo_scenario.py)."""

from __future__ import annotations

import pytest

from ingest.simulator import latency
from tests.support import sanlens, wait_until

KNEE = 1.25  # the knee's onset: the first window in which the array's service times are 25% above unloaded


def planted_incidents(s, truth: dict, events: list[dict]) -> dict[tuple[str, str], dict]:
    """(contributor, component) -> the incident the ground truth says is there: its first and last windows
    (the truth's figures at t are the window starting at t) and the latency it added per I/O."""
    interval, last = s.interval_s, max(t for t, _ in truth)
    found = {}

    def incident(contributor, component, hosts, added):
        """`added(figures, direction)`: the latency the fault added to that host and direction in a window,
        or 0 outside it."""
        windows, weighted, ios = set(), 0.0, 0.0
        for (t, host), f in truth.items():
            for direction in ("read", "write") if host in hosts else ():
                extra, n = added(f, direction), f[f"{direction}_iops"] * interval
                if extra > 0 and n >= 100:
                    windows.add(t)
                    weighted, ios = weighted + extra * n, ios + n
        end = max(windows) + interval
        found[(contributor, component)] = {
            "start": min(windows),
            "end": None if end > last else end,
            "excess_us": weighted / ios,
        }

    for e in events:
        if e["type"] == "slow_drain":
            switch, port = e["component"].split()[1], e["component"].split()[-1]
            hosts = set(e["affected"])
            nominal = {h: latency.fabric_us(s.hosts[h].hops, s.hosts[h].distance_km, 0.0) for h in hosts}
            incident(
                "fabric", f"{switch}:{port}", hosts, lambda f, d, nominal=nominal: f["fabric_us"] - nominal[f["host"]]
            )
        elif e["type"] == "hba_saturation":
            # the queueing beyond the host stack, where it is clearly there (the detector's 20 us margin)
            queued = lambda f, d: q if (q := f["queueing_us"] - latency.HOST_STACK_US) > 20 else 0.0
            incident("host_queueing", e["affected"][0], set(e["affected"]), queued)
        elif e["type"] == "workload_added":
            array = e["component"].removeprefix("array ")
            hosts = {h.name for h in s.hosts.values() if h.array == array}
            unloaded = {}

            def knee_added(f, d, array=array, hosts=hosts, unloaded=unloaded):
                us = f[f"array_{d}_us"]
                unloaded.setdefault((f["host"], d), us)  # the first window: before any workload was added
                iops = sum(truth[(f["t"], h)]["read_iops"] + truth[(f["t"], h)]["write_iops"] for h in hosts)
                factor = latency.load_factor(iops / s.arrays[array].capacity_iops)
                return us * (1 - 1 / factor) if factor >= KNEE else 0.0

            incident("array", array, hosts, knee_added)
    return found


def incidents_of(ch, sites: list[str]) -> dict[tuple[str, str], list[dict]]:
    """The incidents the pipeline found on these sites (the mart), once they stop changing."""
    out = sanlens("dbt", "build", "--select", "+latency_incidents")
    assert out.returncode == 0, out.stdout[-3000:]
    query = """SELECT contributor, component, toUnixTimestamp(started_at) AS start,
            toUnixTimestamp(ended_at) AS end, excess_us, severity, paths, hosts, volumes, arrays
        FROM sanlens_marts.latency_incidents WHERE site IN {sites:Array(String)} ORDER BY start"""
    last = []

    def settled():
        nonlocal last
        rows = list(ch.query(query, parameters={"sites": sites}).named_results())
        done, last = rows == last and rows, rows
        return done

    wait_until(settled, 180, f"the incidents of {sites} to settle")
    found = {}
    for r in last:
        found.setdefault((r["contributor"], r["component"]), []).append(r)
    return found


def assert_found_as_planted(found: dict, planted: dict, interval: int) -> None:
    assert set(found) == set(planted), f"found {sorted(found)}, planted {sorted(planted)}"
    for key, truth in planted.items():
        assert len(found[key]) == 1, (key, found[key])
        got = found[key][0]
        assert abs(got["start"] - truth["start"]) <= 2 * interval, (key, got, truth)
        if truth["end"] is None:
            assert got["end"] is None, (key, got, truth)
        else:
            assert got["end"] is not None and abs(got["end"] - truth["end"]) <= 2 * interval, (key, got, truth)
        assert got["excess_us"] == pytest.approx(truth["excess_us"], rel=0.25), (key, got, truth)


def wait_for_every_window(ch, s, run, sites) -> None:
    """Until the breakdown holds the run's last windows for every host and stops growing."""
    query = """SELECT uniqExact(host) AS hosts, toUnixTimestamp(max(window_start)) AS last, count() AS n
        FROM sanlens.path_latency FINAL WHERE site IN {sites:Array(String)}"""
    last_window = run.start_s + s.duration_s - s.interval_s
    seen = []

    def complete():
        row = ch.query(query, parameters={"sites": sites}).first_row
        seen.append(row)
        return row[0] == len(s.hosts) and row[1] >= last_window and len(seen) > 1 and seen[-2] == row

    wait_until(complete, 600, f"every window of {sites}")
