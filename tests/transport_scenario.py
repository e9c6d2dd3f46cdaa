"""The transport scenario, played once a session as a backfill: one customer's two all-flash arrays of the same model
and firmware, one its hosts reach by Fibre Channel and one by iSCSI, two hosts on each with the same workloads, one of
each pair load-balanced round robin and the other by least queue depth (the two MPIO policies the studies name).
tests/stack/test_transport.py checks the breakdown by transport and policy (the dbt view, explain) against its truth;
the latency dashboard's test runs its panel on it."""

from __future__ import annotations

import json
import types
import uuid

import pytest

from tests import scenarios
from tests.breakdown_scenarios import ROWS_PER_INTERVAL, backfill
from tests.support import sanlens, wait_until


@pytest.fixture(scope="session")
def transport_played(stack, ch, tmp_path_factory):
    """The scenario through the stack (every breakdown window and path version queryable) and the dbt view built;
    the truth's figures per (interval, host)."""
    run_id = f"t{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("transport")
    s, run, _ = backfill(folder, scenarios.text("transport", id=run_id))
    site = f"s-{run_id}"
    windows = (run.intervals - 1) * len(s.hosts) * ROWS_PER_INTERVAL
    query = "SELECT count() FROM sanlens.path_latency FINAL WHERE site = {s:String}"
    wait_until(lambda: ch.command(query, parameters={"s": site}) >= windows, 600, f"{windows} windows of {site}")
    paths = "SELECT count() FROM sanlens.topology FINAL WHERE kind = 'path' AND site = {s:String}"
    wait_until(lambda: ch.command(paths, parameters={"s": site}) >= 2 * len(s.hosts), 120, f"the paths of {site}")
    out = sanlens("dbt", "build", "--select", "+latency_by_transport")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    truth = {}
    for line in (folder / "truth" / "hosts.jsonl").read_text().splitlines():
        figures = json.loads(line)
        truth[(figures["t"], figures["host"])] = figures
    return types.SimpleNamespace(id=run_id, scenario=s, run=run, site=site, truth=truth)
