"""./sanlens demo, the main job, on the tests' stack: the default scenario through Telegraf, its progress
lines and the accounting it prints; a second run counts only its own records; a stalled stage makes the
demo give up and say its figures are partial; a bad scenario file is a one-line error."""

from __future__ import annotations

import os
import re
import signal
import subprocess

import pytest

from ingest.simulator import scenario as scenario_file
from sanlensctl import config, procs
from sanlensctl.components import inbox
from tests.support import ROOT, sanlens, wait_until

SCENARIO = scenario_file.load(ROOT / "ingest" / "scenarios" / "demo.yaml")
PROGRESS = re.compile(r"metrics in +([\d,]+)/s +windows out +(\d+) +normalize lag ([\d,]+) .*loader lag ([\d,]+)")
INSTALL_BASE = re.compile(r"^(\S+) +(3\.\d\.\d) +(read|write) +(\d+) +(\d+) +(\d+) +([\d.]+) +([\d.]+)$", re.M)
UPGRADED = sorted(
    a for e in SCENARIO.events if e["type"] == "firmware_upgrade" for a in SCENARIO.select_arrays(e["arrays"])
)


def records_in(text: str) -> tuple[int, int]:
    counted, sent = re.search(r"^records in: ([\d,]+) of the ([\d,]+) the simulated fleet sent", text, re.M).groups()
    return int(counted.replace(",", "")), int(sent.replace(",", ""))


def test_demo_plays_the_default_scenario_end_to_end_and_reports_progress(demo_twice):
    text = demo_twice[0]
    assert "playing scenario demo (4 arrays, 6 SQL Server hosts, 2 switches) for 50 s at 20x" in text
    progress = PROGRESS.findall(text)
    assert len(progress) >= 3 and max(int(p[0].replace(",", "")) for p in progress) > 0
    counted, sent = records_in(text)
    assert counted == sent > 0  # every record the fleet sent, counted
    accounting = dict(re.findall(r"^records +(in|out|deadletter) .*?(\d+)$", text, re.M))
    assert int(accounting["in"]) == counted and accounting["in"] == accounting["out"]
    assert (config.RUN / "simulator" / "demo" / "events.jsonl").exists()
    # the faults it planted, each named, next to the incidents found (tests/stack/test_breakdown.py checks those)
    planted = text.split("Latency faults the scenario planted")[1].split("Incidents the pipeline found")[0]
    assert all(f" {fault} " in planted for fault in ("slow_drain", "hba_saturation", "workload_added")), planted


def test_a_second_run_counts_only_its_own_records(demo_twice):
    first, second = demo_twice
    assert re.search(
        r"the store holds [\d,]+ samples of an earlier run of these sites .*: this run replaces them", second
    )
    counted, sent = records_in(second)
    assert counted == sent > 0
    rows = INSTALL_BASE.findall(second)
    assert {(fw, d) for _, fw, d, *_ in rows} == {(fw, d) for fw in ("3.1.3", "3.2.1") for d in ("read", "write")}
    models = {(a.model, a.firmware) for a in SCENARIO.arrays.values()} | {("AF8000", "3.2.1")}
    assert {(model, fw) for model, fw, *_ in rows} == models  # per array model: the hybrid HY7200 apart
    # Telegraf polls the cumulative histograms once a second of wall clock (two simulated intervals at 20x):
    # the I/Os before its first poll are the baseline, the interval across globex-af1's restart is dropped,
    # and on a loaded machine a late first or last poll misses more (CI once measured 76% of a cohort: a first
    # poll about 6 s of wall clock late is 24 simulated intervals); a poll that spans an upgrade is attributed
    # to the firmware at its sample time (a late poll across an upgrade moves that many more I/Os from the old
    # cohort to the new: CI once measured 106% of the new one). So, per direction, less than planted, and
    # never the double that counting the first run again would give. The backfill's acceptance test checks
    # the exact count, free of poll timing.
    totals = {}
    for model, fw, direction, arrays, measured, simulated, *_ in rows:
        assert 0.5 * int(simulated) <= int(measured) <= 1.3 * int(simulated), (model, fw, direction, measured)
        assert int(arrays) <= len([a for a in SCENARIO.arrays.values() if a.model == model])
        totals[direction] = [a + int(b) for a, b in zip(totals.get(direction, [0, 0]), (measured, simulated))]
    for direction, (measured, simulated) in totals.items():
        assert 0.5 * simulated <= measured <= simulated, (direction, measured, simulated)
    hosts = re.search(r"^host +read_us.*\n-+.*\n((?:.+\n)+?)\(\d+ rows?\)", second, re.M).group(1)
    assert {line.split()[0] for line in hosts.splitlines()} <= set(SCENARIO.hosts)
    effect = re.search(r"^array_model +from_firmware.*\n-+.*\n((?:.+\n)+?)\(\d+ rows?\)", second, re.M)
    if effect:
        assert {line.split()[0] for line in effect.group(1).splitlines()} <= {a.model for a in SCENARIO.arrays.values()}


def test_the_default_demo_shows_the_upgrade_effect_with_its_interval(demo_twice, ch):
    """The demo plays minutes, not hours: each upgraded array's effect compares the minutes before and after its
    change, with a 95% bootstrap interval over them (upgrade_effect_by_array.yml), and the demo prints it; the
    fleet's effect per upgrade path has its interval across the two arrays."""
    # the last run's upgrades: earlier demos on the shared stack (other tests') upgraded the same arrays before, and
    # a later demo's arrays start again on 3.1.3: a path 3.2.1 to 3.1.3 of its own, as a rollback is
    rows = ch.query(
        "SELECT array, direction, period, matched_periods, delta, delta_ci_low, delta_ci_high "
        "FROM sanlens_marts.upgrade_effect_by_array WHERE array IN {a:Array(String)} "
        "AND metric = 'share_within_0_125_ms' ORDER BY changed_at DESC LIMIT 1 BY array, direction",
        parameters={"a": UPGRADED},
    ).result_rows
    assert sorted((a, d) for a, d, *_ in rows) == [(a, d) for a in UPGRADED for d in ("read", "write")]
    # 2 matched minutes at least: the whole suite plays the demo beside the other side's tests, and on 2 busy cores
    # its live playback can leave acme-af2 (upgraded at 270 s) 2 whole minutes before its change (3 when quiet)
    for array, direction, period, periods, delta, low, high in rows:
        assert period == "minute" and periods >= 2 and low <= delta <= high and low < high, (array, direction, periods)
    writes = {a: (low, high) for a, d, *_, low, high in rows if d == "write"}
    assert writes["acme-af1"][0] > 0.2  # Express Writes on the array well below its capacity
    fleet = ch.query(
        "SELECT direction, arrays, ci_low, ci_high FROM sanlens_marts.upgrade_effect "
        "WHERE array_model = 'AF8000' AND from_firmware = '3.1.3' AND to_firmware = '3.2.1' "
        "AND metric = 'share_within_0_125_ms'"
    ).result_rows
    assert sorted(d for d, *_ in fleet) == ["read", "write"]
    assert all(n >= len(UPGRADED) and low < high for _, n, low, high in fleet), fleet  # other tests' AF8000s too
    assert re.search(r"^AF8000 +3\.1\.3 +3\.2\.1 +write +2 +\d+(-\d+)? minutes ", demo_twice[1], re.M)


def test_the_demo_s_slow_drain_pages_the_inbox_naming_the_fabric_port(demo_twice):
    """The page for the demo's slow drain (acme-east-fa1 port 20, 500-800 s), as the stack's inbox got it from
    Alertmanager, names the fabric and the switch port. (Alertmanager's own count of what it sent is test_slo's: the
    demo plays at the session's start, and the tests that restart the stack in between reset that count.)"""

    def slow_drain_pages():
        return [
            alert
            for kept in inbox.notifications()
            if kept["notification"]["receiver"] == "page" and kept["notification"]["status"] == "firing"
            for alert in kept["notification"]["alerts"]
            if "fabric on switch port acme-east-fa1:" in alert["annotations"].get("cause", "")
        ]

    try:
        pages = wait_until(slow_drain_pages, 240, "the slow drain's page in the inbox")
    except AssertionError:
        kept = [
            (k["notification"]["receiver"], a["status"], a["labels"].get("entity"), a["annotations"].get("cause"))
            for k in inbox.notifications()
            for a in k["notification"]["alerts"]
        ]
        raise AssertionError(f"no page names the slow drain's port; the inbox holds {kept}") from None
    for page in pages:
        assert re.search(r"fabric on switch port acme-east-fa1:0/20: \+[\d,]+ us per I/O", page["annotations"]["cause"])


@pytest.mark.exclusive  # pauses the loader
def test_a_stalled_stage_makes_the_demo_give_up_and_mark_its_figures_partial(stack):
    """The loader is paused (SIGSTOP) once playback starts: normalize and histograms drain, the loader's
    offsets stand still, and the demo gives up after --stall-timeout (10 s) instead of printing a result."""
    demo = subprocess.Popen(
        [str(ROOT / "sanlens"), "demo", "--duration", "10", "--speed", "40", "--stall-timeout", "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    loader, lines = procs.pid_of("loader"), []
    try:
        for line in demo.stdout:
            lines.append(line)
            if "==> playing scenario" in line:
                os.kill(loader, signal.SIGSTOP)
                break
        rest, _ = demo.communicate(timeout=400)
        lines.append(rest)
        assert demo.returncode == 1, "".join(lines)[-3000:]
    finally:
        os.kill(loader, signal.SIGCONT)
        demo.kill()
    text = "".join(lines)
    assert re.search(r"no stage advanced for 10 s \(.*loader [\d,]+ messages behind", text), text[-3000:]
    assert "PARTIAL accounting of this run" in text and "PARTIAL: the demo gave up waiting" in text
    assert "Install base, this run" not in text and "Upgrade effect" not in text
    assert text.rstrip().splitlines()[-1].startswith("    ./sanlens status")


def test_demo_with_a_broken_scenario_says_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "ingest" / "scenarios" / "demo.yaml").read_text().replace("type: slow_drain", "type: slow"))
    out = sanlens("demo", "--scenario", str(bad))
    assert out.returncode != 0 and "unknown event type 'slow'" in out.stderr and out.stderr.count("\n") == 1
