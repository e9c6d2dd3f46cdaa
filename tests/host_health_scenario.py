"""The host-health scenario, played once a session as a backfill: four SQL Server hosts of one customer on one
array, three with their HBA's queue depth at the studies' 256 and one at 32 with a busier CPU (a higher base % Processor
Time), each with its own IOPS, so each its own CPU and transactions/s (the fleet: tests/scenarios/host-health.yaml).
tests/stack/test_host_health.py checks explain, the dbt views and the dashboard's host health panels against its
truth."""

from __future__ import annotations

import json
import types
import uuid

import pytest

from tests import scenarios
from tests.breakdown_scenarios import ROWS_PER_INTERVAL, backfill
from tests.support import sanlens, wait_until

ODD_QUEUE_DEPTH = 32


def scenario_text(run_id: str) -> str:
    return scenarios.text("host-health", id=run_id, queue_depth=ODD_QUEUE_DEPTH)


@pytest.fixture(scope="session")
def host_health_played(stack, ch, tmp_path_factory):
    """The scenario through the stack (its breakdown windows, samples and paths queryable) and the dbt views built;
    the truth's figures per host, in interval order."""
    run_id = f"h{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("host_health")
    s, run, _ = backfill(folder, scenario_text(run_id))
    site = f"s-{run_id}"
    windows = (run.intervals - 1) * len(s.hosts) * ROWS_PER_INTERVAL
    query = "SELECT count() FROM sanlens.path_latency FINAL WHERE site = {s:String}"
    wait_until(lambda: ch.command(query, parameters={"s": site}) >= windows, 600, f"{windows} windows of {site}")
    samples = run.intervals * len(s.hosts)
    counts = """SELECT countIf(metric = 'host.cpu_busy'), uniqExactIf((host, ts), metric = 'sql.transactions')
        FROM sanlens.metrics WHERE site = {s:String}"""
    # every interval's CPU sample; a rate for each but a counter's first
    wait_until(
        lambda: tuple(ch.query(counts, parameters={"s": site}).first_row) == (samples, samples - len(s.hosts)),
        300,
        f"the CPU and transactions samples of {site}",
    )
    out = sanlens("dbt", "build", "--select", "+hba_queue_depths", "+host_health")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    truth = {}
    for line in (folder / "truth" / "hosts.jsonl").read_text().splitlines():
        figures = json.loads(line)
        truth.setdefault(figures["host"], []).append(figures)
    return types.SimpleNamespace(id=run_id, scenario=s, run=run, site=site, customer=f"c-{run_id}", truth=truth)
