"""The scenarios the breakdown and its incidents are checked on, played once a session as backfills: one of the
breakdown's own (a slow-drain port on one host's side of the switch, then an HBA saturation on another
host, and a path recabled mid-run) and the default demo scenario under names of its own. tests/stack/test_breakdown.py
checks the pipeline against their ground truth; the latency dashboard's test runs its SQL on them."""

from __future__ import annotations

import json
import types
import uuid
from datetime import UTC, datetime

import pytest
from confluent_kafka import Producer

from ingest import topics
from sanlensctl import config
from tests import scenarios
from tests.support import ROOT, wait_until

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
    producer = Producer(config.kafka_client())
    producer.produce(topics.TOPOLOGY, json.dumps(moved).encode(), key=key.encode())
    producer.flush(30)
    return host.name, valid_from


def backfill(folder, text: str, before=None):
    """The scenario `text` played as a backfill into the stack's Kafka; its truth in folder/truth."""
    from ingest.simulator import scenario as scenario_file
    from ingest.simulator.run import Run

    (folder / "scenario.yaml").write_text(text)
    s = scenario_file.load(folder / "scenario.yaml")
    run = Run(s, folder / "truth", config.KAFKA_BOOTSTRAP, backfill=True)
    planted = before(run, s) if before else None
    run.backfill()
    run.close()
    return s, run, planted


def truth_of(folder):
    truth = {}
    for line in (folder / "truth" / "hosts.jsonl").read_text().splitlines():
        figures = json.loads(line)
        truth[(figures["t"], figures["host"])] = figures
    events = [json.loads(line) for line in (folder / "truth" / "events.jsonl").read_text().splitlines()]
    return truth, events


@pytest.fixture(scope="session")
def demo_played(stack, ch, tmp_path_factory):
    """The default demo scenario as a backfill, its names made this run's own (the demo test plays the
    original names on the same stack)."""
    run_id = f"d{uuid.uuid4().hex[:5]}"
    folder = tmp_path_factory.mktemp("demo")
    text = (ROOT / "ingest" / "scenarios" / "demo.yaml").read_text()
    s, run, _ = backfill(folder, text.replace("acme", f"acme{run_id}").replace("globex", f"globex{run_id}"))
    truth, events = truth_of(folder)
    sites = sorted({h.site for h in s.hosts.values()})
    return types.SimpleNamespace(scenario=s, run=run, truth=truth, events=events, sites=sites)


@pytest.fixture(scope="session")
def breakdown_played(stack, ch, tmp_path_factory, demo_played):
    run_id = f"b{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("breakdown")
    s, run, moved = backfill(
        folder,
        scenarios.text("breakdown", id=run_id),
        lambda run, s: move_path(run, s.hosts[f"{run_id}-sql2"], "0/0", at=PATH_MOVED_AT),
    )
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
    truth, events = truth_of(folder)
    return types.SimpleNamespace(
        scenario=s,
        run=run,
        site=site,
        rows=list(rows),
        truth=truth,
        events={e["type"]: e for e in events},
        all_events=events,
        moved=moved,
    )


@pytest.fixture(scope="session")
def breakdown_sites(breakdown_played) -> dict:
    """A site, host and disk with windows in sanlens.path_latency and incidents in sanlens.incidents."""
    host = sorted(breakdown_played.events["slow_drain"]["affected"])[0]
    return {"site": breakdown_played.site, "host": host, "disk": "D:"}
