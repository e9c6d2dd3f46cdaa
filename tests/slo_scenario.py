"""The latency-SLO scenario, played once a session as a backfill through the whole stack with the default SLOs
(slo/slos.yaml): a fabric delay of 3 ms for 30 minutes on one all-flash host's switch port (a fast burn), 0.6 ms
for six hours on another host's port (a slow burn) and a third, healthy host. tests/stack/test_slo.py checks the
alerts and the attainment against its ground truth; the SLO dashboard's and alert rules' tests run their SQL
on it."""

from __future__ import annotations

import json
import types
import uuid
from collections import defaultdict

import pytest

from ingest import buckets, topics
from slo import definitions
from tests import scenarios
from tests.breakdown_scenarios import backfill
from tests.breakdown_truth import wait_for_every_window
from tests.support import wait_for_job

DISK = {"data": "D", "log": "L"}  # the drive letters, as an SLO entity names a path: host:D


def good_share(bucket: int, threshold_ms: float) -> float:
    """The burn_rates job's interpolation, in Python (flink-jobs/burn_rates/java/: GoodIos)."""
    lower = buckets.lower_ms(bucket)
    upper = 2.0 ** (bucket - 7)
    return min(max((threshold_ms - lower) / (upper - lower), 0.0), 1.0)


def truth_minutes(folder, slos, first_window: float) -> dict:
    """(slo, entity) -> {minute start (epoch s): [good, total]} from the truth's per-interval histograms."""
    out = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for line in (folder / "truth" / "volume_histograms.jsonl").read_text().splitlines():
        v = json.loads(line)
        if v["t"] < first_window:  # the first interval has no delta and no path window
            continue
        for slo in slos:
            figures = v.get(slo.direction)
            if figures is None:
                continue
            threshold = slo.threshold_ms - max(figures["beyond_array_us"], 0) / 1000
            counts = {int(b): n for b, n in figures["ios"].items()}
            good = sum(n * good_share(b, threshold) for b, n in counts.items())
            cell = out[(slo.name, f"{v['host']}:{DISK[v['role']]}")][v["t"] // 60 * 60]
            cell[0], cell[1] = cell[0] + good, cell[1] + sum(counts.values())
    return out


@pytest.fixture(scope="session")
def slo_played(stack, ch, tmp_path_factory):
    """Played behind whatever backlog the session's earlier tests left: the burn_rates job must not lose windows
    when its two inputs arrive at different paces."""
    run_id = f"o{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("slo")
    s, run, _ = backfill(folder, scenarios.text("slo", id=run_id))
    sites = [f"s-{run_id}"]
    wait_for_every_window(ch, s, run, sites)
    wait_for_job("burn_rates", [topics.HISTOGRAMS, topics.BREAKDOWN], [topics.SLO_WINDOWS, topics.SLO_ALERTS])
    alerts = ch.query(
        "SELECT toUnixTimestamp(ts) AS t, * FROM sanlens.slo_alerts FINAL WHERE site IN {s:Array(String)} ORDER BY ts",
        parameters={"s": sites},
    ).named_results()
    slos = definitions.load(definitions.DEFAULT_FILE)
    truth = truth_minutes(folder, slos.slos, run.start_s + 2 * s.interval_s)
    return types.SimpleNamespace(scenario=s, run=run, id=run_id, sites=sites, alerts=list(alerts), truth=truth)
