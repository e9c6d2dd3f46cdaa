"""Busy dashboards, on the tests' stack: with the session's firmware rollout loaded and the marts built, 16
clients run every dashboard's own SQL (tests/dashboard_load.py, which the 5-minute benchmark runs too) for 30 s
while the demo's fleet is played live through Telegraf at 10x, as `./sanlens demo` does. No query fails, the loader
keeps inserting meanwhile, its lag stays bounded and drains once the load stops."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

import pytest

from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config
from tests.dashboard_load import Lag, Load, dashboard_queries, report, report_lag
from tests.support import ROOT, polled_by_telegraf, wait_until

pytestmark = pytest.mark.exclusive  # bounds the loader's lag under load

CLIENTS, SECONDS = 16, 30
CAUGHT_UP = 100  # messages: what Telegraf's heartbeat and the last batch leave
MAX_LAG = 50_000  # messages: the benchmark's bound (--max-lag)


def test_sixteen_dashboard_clients_while_the_demo_ingests(rollout, tmp_path):
    # The demo's fleet under names of this test, live at 10x: every 10 s interval in 1 s.
    run_id = uuid.uuid4().hex[:5]
    text = (ROOT / "ingest" / "scenarios" / "demo.yaml").read_text()
    (tmp_path / "fleet.yaml").write_text(text.replace("acme", f"acme{run_id}").replace("globex", f"globex{run_id}"))
    run = Run(scenario_file.load(tmp_path / "fleet.yaml"), tmp_path / "truth", config.KAFKA_BOOTSTRAP, speed=10.0)
    lag = Lag(2).start()
    with polled_by_telegraf(run, f"load-{run_id}"):
        stop = threading.Event()
        playing = threading.Thread(target=run.realtime, args=(("127.0.0.1", config.TELEGRAF_LISTENER_PORT),),
                                   kwargs={"stop": stop})  # fmt: skip
        playing.start()
        time.sleep(10)  # the fleet's first intervals through the pipeline
        lag.phase = "during"
        queries = dashboard_queries(span=timedelta(hours=24))  # the rollout's slots are in the day
        load = Load(queries, CLIENTS).start()
        time.sleep(SECONDS)
        load.stop()
        lag.phase = "after"
        stop.set()
        playing.join()
    run.close()
    wait_until(lambda: lag.last("after") is not None and lag.last("after") <= CAUGHT_UP, 300, "the loader")
    lag.stop()
    report(load)
    report_lag(lag)

    assert not load.errors, load.errors[:5]
    assert len(load.all_latencies()) >= CLIENTS, "the clients hardly ran"
    assert any(load.rows.values()), "the dashboards found no data to read"
    during = [position.committed for phase, _, position in lag.samples if phase == "during"]
    assert during[-1] > during[0], "the loader inserted nothing while the dashboards ran"
    assert max(lag.of("during")) < MAX_LAG
