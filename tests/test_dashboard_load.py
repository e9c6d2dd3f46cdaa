"""Busy dashboards, on the tests' stack: with the session's firmware rollout loaded and the marts built, 16
clients run every dashboard's own SQL (tests/benchmarks/bench_dashboard_load.py, the 5-minute version) for
45 s while a backfill of the demo's fleet goes through the pipeline. No query fails, the loader keeps
inserting meanwhile, and its lag drains once the load stops."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config
from tests.benchmarks.bench_dashboard_load import Lag, Load, dashboard_queries, report, report_lag
from tests.support import ROOT, wait_until

CLIENTS, SECONDS = 16, 45
CAUGHT_UP = 100  # messages: what Telegraf's heartbeat and the last batch leave


def test_sixteen_dashboard_clients_while_a_backfill_loads(rollout, tmp_path):
    # The demo's fleet under names of this test, 4 simulated hours of it.
    run_id = uuid.uuid4().hex[:5]
    text = (ROOT / "ingest" / "scenarios" / "demo.yaml").read_text()
    (tmp_path / "fleet.yaml").write_text(text.replace("acme", f"acme{run_id}").replace("globex", f"globex{run_id}"))
    run = Run(scenario_file.load(tmp_path / "fleet.yaml"), tmp_path / "truth", config.KAFKA_BOOTSTRAP,
              duration_s=4 * 3600, backfill=True)  # fmt: skip
    lag = Lag(2).start()
    lag.phase = "during"
    queries = dashboard_queries(span=timedelta(hours=24))  # the rollout's and the backfill's slots are in the day
    load = Load(queries, CLIENTS).start()
    backfill = threading.Thread(target=lambda: (run.backfill(), run.close()))
    backfill.start()
    time.sleep(SECONDS)
    load.stop()
    backfill.join(300)
    lag.phase = "after"
    wait_until(lambda: lag.last("after") is not None and lag.last("after") <= CAUGHT_UP, 300, "the loader")
    lag.stop()
    report(load)
    report_lag(lag)

    assert not load.errors, load.errors[:5]
    assert len(load.all_latencies()) >= CLIENTS, "the clients hardly ran"
    assert any(load.rows.values()), "the dashboards found no data to read"
    during = [position.committed for phase, _, position in lag.samples if phase == "during"]
    assert during[-1] > during[0], "the loader inserted nothing while the dashboards ran"
    assert max(lag.of("during")) < 100_000
