"""The fleet simulator: calibration on docs/domain.md, scenario checks, counters, and the shapes it serves
compared with what the real Telegraf makes of them."""

from __future__ import annotations

import json
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ingest import buckets
from ingest.simulator import __main__ as simulator
from ingest.simulator import formats, latency, scenario
from ingest.simulator.endpoints import Endpoints
from ingest.simulator.fleet import Fleet
from ingest.simulator.truth import Truth
from tests.support import ROOT

DEMO = ROOT / "ingest" / "scenarios" / "demo.yaml"


def share_in_bucket(mix: latency.Mixture, n: int) -> float:
    return float(mix.bucket_probabilities()[n])


def test_bucket_bounds_are_3par_powers_of_two():
    assert buckets.UPPER_MS[0] == 2**-7 and buckets.UPPER_MS[4] == 0.125
    assert buckets.UPPER_MS[10] == 8 and buckets.UPPER_MS[31] == float("inf")


def test_express_writes_calibration_matches_the_reference_figures():
    before, after = latency.SSD_WRITE["3.1.3"], latency.SSD_WRITE["3.2.1"]
    assert 0.08 <= share_in_bucket(before, 4) <= 0.12  # "about 10% of writes in the 0.125 ms bucket"
    assert 0.37 <= share_in_bucket(after, 4) <= 0.43  # "nearly 40% after"
    assert before.mean_ms() == pytest.approx(0.5, rel=0.02) and after.mean_ms() == pytest.approx(0.25, rel=0.02)
    assert after.cdf(1.0) > before.cdf(1.0) > 0.85  # bursts stay under 1 ms more often
    read = [latency.service_time("ssd", fw, "read", 0, 0.1).mean_ms() for fw in ("3.1.3", "3.2.1")]
    assert read[0] == read[1]  # reads unchanged


def test_tier1_baseline_is_about_35_ms_and_tier0_share_brings_it_down():
    base = latency.service_time("hybrid", "3.2.1", "read", latency.tier0_io_share(0.0), 0.1).mean_ms()
    tiered = latency.service_time("hybrid", "3.2.1", "read", latency.tier0_io_share(0.22), 0.1).mean_ms()
    assert 33 <= base <= 40 and tiered < base / 3


def test_hba_queueing_dominates_only_near_the_queue_depth():
    assert latency.host_queueing_us(20, 256, 400) < 20
    assert latency.host_queueing_us(251, 256, 400) > 10 * 400


def test_scenario_errors_name_the_problem(tmp_path):
    bad = tmp_path / "bad.yaml"
    text = DEMO.read_text()
    bad.write_text(text.replace("type: hba_saturation", "type: hba_meltdown"))
    with pytest.raises(ValueError, match="unknown event type 'hba_meltdown'"):
        scenario.load(bad)
    bad.write_text(text.replace("host: acme-sql2, workload: datamining", "host: nobody, workload: datamining"))
    with pytest.raises(ValueError, match="unknown host nobody"):
        scenario.load(bad)


@pytest.mark.parametrize("value", [0, -10, "lots", True, ".inf"])
def test_a_tier0_capacity_that_is_not_a_positive_number_is_refused(tmp_path, value):
    bad = tmp_path / "bad.yaml"
    bad.write_text(DEMO.read_text().replace("tier0_capacity_gib: 230", f"tier0_capacity_gib: {value}"))
    with pytest.raises(ValueError, match="array acme-hy1: tier0_capacity_gib must be a number of GiB above 0, not"):
        scenario.load(bad)


def test_a_tier0_capacity_on_an_all_flash_array_is_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(DEMO.read_text().replace("capacity_iops: 60000}", "capacity_iops: 60000, tier0_capacity_gib: 100}"))
    with pytest.raises(ValueError, match="array acme-af2: tier0_capacity_gib is for hybrid arrays, not ssd"):
        scenario.load(bad)


def test_the_demo_fills_its_hybrid_array_s_tier0_past_the_warning_level(tmp_path):
    """acme-hy1's 230 GiB of Tier 0 passes 90 % as auto-tiering moves acme-sql3's data towards 22 % of it, within the
    1000 s the tests play of the demo, and stays there (the "Tiers" dashboard's warning and its alert rule)."""
    s = scenario.load(DEMO)
    assert s.arrays["acme-hy1"].tier0_capacity_gib == 230
    fleet, truth = play(s, int(s.duration_s // s.interval_s), tmp_path)
    truth.close(fleet.start_s)
    (warning,) = [json.loads(line) for line in (tmp_path / "tier0_warnings.jsonl").read_text().splitlines()]
    assert warning["array"] == "acme-hy1" and warning["below_again"] is None
    assert 600 <= warning["passed"] - fleet.start_s <= 800
    assert fleet.tier0_fill("acme-hy1") < 1  # full, not over-full


def test_the_demo_has_one_iscsi_host_path():
    s = scenario.load(DEMO)
    attached = {name: (h.transport, h.multipath_policy) for name, h in s.hosts.items()}
    assert attached.pop("globex-sql2") == ("iscsi", "least_queue_depth")
    assert set(attached.values()) == {("fc", "round_robin")}


@pytest.mark.parametrize("duration_s", [1000, 1200])  # the tests' demo (50 s at 20x) and ./sanlens demo's
def test_no_upgrade_s_comparison_of_the_demo_spans_a_workload_change_on_its_array(duration_s):
    """An upgrade's effect compares the minutes nearest the change, as many after as the run has before (dbt's
    upgrade_effect_by_array, the minute of the change left out): none of them may hold a change of an array's load
    (a workload added, an HBA saturation's job), or the load's effect passes for the firmware's."""
    s = scenario.load(DEMO)
    fleet = Fleet(s, 0.0)
    changes = {}  # array -> the times its hosts' offered load changes
    for at in range(0, duration_s, int(s.interval_s)):
        for host in s.hosts.values():
            load = sum(w.iops for w in fleet._offered(host, at))
            before = sum(w.iops for w in fleet._offered(host, at - s.interval_s)) if at else load
            if load != before:
                changes.setdefault(host.array, []).append(at)
    (rollout,) = [e for e in s.events if e["type"] == "firmware_upgrade"]
    for w, array in enumerate(rollout["arrays"]):
        at = rollout["at"] + w * rollout["every"]
        minutes = min(at // 60, (duration_s - at) // 60)
        first, last = (at // 60 - minutes) * 60, (at // 60 + minutes + 1) * 60
        assert minutes >= 3 and not [t for t in changes.get(array, []) if first <= t < last], (array, changes)
    assert changes["acme-af2"] and changes["acme-af1"]  # there are changes to avoid


def test_templates_expand_to_a_fleet_of_200_arrays():
    s = scenario.load(ROOT / "ingest" / "scenarios" / "firmware-rollout.yaml")
    assert len(s.arrays) == 200 and len(s.hosts) == 200
    assert {a.firmware for a in s.arrays.values()} == {"3.1.3"}


def play(s, intervals: int, tmp_path: Path) -> tuple[Fleet, Truth]:
    fleet = Fleet(s, 1_700_000_000.0)
    truth = Truth(tmp_path, fleet)
    for _ in range(intervals):
        fleet.step()
        truth.interval()
    return fleet, truth


def test_events_change_the_fleet_when_planted(tmp_path):
    s = scenario.load(DEMO)
    fleet, truth = play(s, 35, tmp_path)  # 350 s: first wave (acme-af2) at 240 s, second (acme-af1) at 360 s
    assert fleet.firmware["acme-af2"] == "3.2.1" and fleet.firmware["acme-af1"] == "3.1.3"
    fleet.step()
    before_restart = fleet.sql["acme-sql1"][("tpce", "reads")]
    for _ in range(26):  # through the instance restart at 600 s
        fleet.step()
    assert 0 < fleet.sql["acme-sql1"][("tpce", "reads")] < before_restart
    truth.close(fleet.start_s)
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    slow = next(e for e in events if e["type"] == "slow_drain")
    assert slow["contributor"] == "fabric" and slow["affected"] == ["acme-sql1", "acme-sql2"]


def test_slow_drain_adds_fabric_latency_only_on_paths_through_the_port(tmp_path):
    s = scenario.load(DEMO)
    fleet, _ = play(s, 55, tmp_path)  # 550 s: slow drain since 500 s
    assert fleet.hosts["acme-sql1"].fabric_us > 1000 and fleet.hosts["acme-sql2"].fabric_us > 1000
    assert fleet.hosts["acme-sql4"].fabric_us < 100


def test_each_disk_of_a_host_measures_its_own_volume_as_the_truth_has_it(tmp_path):
    """acme-sql3's data volume is being auto-tiered onto Tier 0 while its log volume stays on Tier 1 (SAS): its D:
    and L: disks report different write latencies, each its own volume's service time plus what an I/O spends
    outside the array (host queueing, transport, fabric: docs/domain.md's latency model), and so does the truth."""
    s = scenario.load(DEMO)
    fleet, truth = play(s, 60, tmp_path)  # 600 s: auto-tiering since 200 s
    truth.close(fleet.start_s)
    host = fleet.hosts["acme-sql3"]
    perfmon = {
        tags["instance"]: fields
        for measurement, tags, fields in formats.host_metrics(fleet, s.hosts["acme-sql3"])
        if measurement == "win_disk"
    }
    lines = [json.loads(line) for line in (tmp_path / "hosts.jsonl").read_text().splitlines()]
    (true,) = [f for f in lines if f["host"] == "acme-sql3" and f["t"] == fleet.t]
    for role, disk in formats.DISKS.items():
        expected_us = host.beyond_array_us + fleet.volumes[f"acme-sql3_{role}"].write_ms * 1000
        assert perfmon[disk]["Avg._Disk_sec/Write"] * 1e6 == pytest.approx(expected_us, rel=1e-9), disk
        assert true["disks"][disk]["write_us"] == pytest.approx(expected_us, abs=0.001), disk
    assert perfmon["L:"]["Avg._Disk_sec/Write"] > 2 * perfmon["D:"]["Avg._Disk_sec/Write"]
    data = fleet.volumes["acme-sql3_data"]
    assert perfmon["D:"]["Avg._Disk_sec/Read"] * 1e6 == pytest.approx(host.beyond_array_us + data.read_ms * 1000)
    assert perfmon["L:"]["Avg._Disk_sec/Read"] == 0.0 == true["disks"]["L:"]["read_us"]  # a log disk reads nothing


def test_histogram_counts_add_up_to_the_ios_of_each_interval(tmp_path):
    s = scenario.load(DEMO)
    fleet, _ = play(s, 3, tmp_path)
    volume = fleet.volumes["acme-sql1_data"]
    assert volume.rhist.sum() > 0 and volume.whist.sum() > 0
    fleet.step()
    assert fleet.volumes["acme-sql1_data"].rhist.sum() == volume.rhist.sum()  # cumulative, same object
    totals = sum(c.sum() for (h, a, fw, d), c in fleet.truth_histograms.items() if a == "acme-af1" and d == "read")
    assert totals == sum(fleet.volumes[v.name].rhist.sum() for v in s.arrays["acme-af1"].volumes)


def test_backfill_records_have_the_shape_telegraf_gives_the_served_documents(tmp_path):
    """The real Telegraf polls the simulator's endpoints with the rendered poller config; its metrics
    must have the same measurements, tags and fields as the backfill produces without it."""
    s = scenario.load(DEMO)
    fleet, truth = play(s, 2, tmp_path)
    endpoints = Endpoints(fleet, truth, threading.Lock(), 0).start()
    try:
        config = tmp_path / "pollers.conf"
        config.write_text(
            "[agent]\n  omit_hostname = true\n"
            + simulator.telegraf_pollers(s, endpoints.base_url, 10)
            + '\n[[outputs.file]]\n  files = ["stdout"]\n  data_format = "json"\n'
        )
        out = subprocess.run(
            [str(ROOT / ".sanlens" / "bin" / "telegraf"), "--config", str(config), "--once", "--quiet"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        endpoints.stop()
    assert out.returncode == 0, out.stderr
    polled = [json.loads(line) for line in out.stdout.splitlines()]

    def shape(name, tags, fields):
        return name, tuple(sorted(k for k in tags if k != "url")), tuple(sorted(fields))

    assert sorted(shape(m["name"], m["tags"], m["fields"]) for m in polled) == sorted(
        shape(*m) for m in formats.polled_metrics(fleet)
    )
    assert {m["timestamp"] for m in polled} == {int(fleet.t)}  # the sample time, not the poll time


@pytest.mark.parametrize("fault", ["http_500", "truncated", "missing_volume"])
def test_an_api_fault_makes_an_array_answer_wrong_while_it_lasts(tmp_path, fault):
    s = scenario.load(DEMO)
    s.events.append({"type": "api_fault", "at": 10, "until": 20, "array": "acme-af1", "fault": fault})
    fleet, truth = play(s, 1, tmp_path)
    endpoints = Endpoints(fleet, truth, threading.Lock(), 0).start()
    url = f"{endpoints.base_url}/arrays/acme-af1/api/v1/systemreporter/attime/vvhistograms/hires"
    try:
        answers = []
        for _ in range(2):  # at 10 s, within the fault; at 20 s, after it
            try:
                with urllib.request.urlopen(url, timeout=10) as resp:
                    answers.append((resp.status, resp.read()))
            except urllib.error.HTTPError as err:
                answers.append((err.code, err.read()))
            fleet.step()
    finally:
        endpoints.stop()
    (status, body), (status_after, body_after) = answers
    members = len(json.loads(body_after)["members"])
    assert status_after == 200 and members == len(s.arrays["acme-af1"].volumes)
    if fault == "http_500":
        assert status == 500
    elif fault == "truncated":
        assert status == 200 and len(body) < len(body_after)
        with pytest.raises(json.JSONDecodeError):
            json.loads(body)
    else:
        assert [m["volumeName"] for m in json.loads(body)["members"]] == [
            v.name for v in s.arrays["acme-af1"].volumes[1:]
        ]
    # the truth counts what Telegraf can make metrics of: the members of the documents served whole
    served_in_the_fault = {"http_500": 0, "truncated": 0, "missing_volume": members - 1}[fault]
    assert truth.records["array_vv_histogram"] == served_in_the_fault + members


def test_an_api_fault_names_one_array_or_switch_and_a_known_fault(tmp_path):
    for event in (
        {"type": "api_fault", "at": 0, "array": "acme-af1", "fault": "slow"},
        {"type": "api_fault", "at": 0, "fault": "http_500"},
    ):
        path = tmp_path / "s.yaml"
        path.write_text(DEMO.read_text() + f"  - {json.dumps(event)}\n")
        with pytest.raises(ValueError, match="api_fault"):
            scenario.load(path)
