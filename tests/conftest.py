"""Shared fixtures: the tests' own stack, really running, an extra embedded server, the demo, a rollout."""

from __future__ import annotations

import json
import os
import subprocess
import types
import uuid

import pytest

from sanlensctl import config, db, procs, suite
from sanlensctl.stack import COMPONENTS
from tests import scenarios, shards
from tests.support import (
    Alertmanager,
    EmbeddedServer,
    assert_nothing_left,
    sanlens,
    stack_pids,
    stack_ports,
    wait_until,
)

# scenarios shared with the dashboards' tests
pytest_plugins = [
    "tests.breakdown_scenarios",
    "tests.slo_scenario",
    "tests.host_health_scenario",
    "tests.transport_scenario",
]

# Fixtures that start real components: a test using one (directly or through another fixture) is
# marked `stack`, so that `./sanlens test -m "not stack"` runs the rest alone, in seconds.
STACK_FIXTURES = {"stack", "embedded", "isolated", "alertmanager"}

# The whole suite's run (sanlensctl/suite.py) starts the test stack itself and runs its tests in processes side by
# side: STACK_UP says that the stack is up already and is stopped by the run, PROCESS names this process, which
# runs its share of the stack tests (tests/shards.py).
STACK_UP = os.environ.get("SANLENS_TEST_STACK_UP") == "1"
PROCESS = os.environ.get("SANLENS_TEST_PROCESS")


def pytest_collection_modifyitems(session, items):
    """Marks the tests that start real components, and runs the others first; keeps only this process's share."""
    for item in items:
        if STACK_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.stack)
    # stable: each group keeps its order; a burst last, when the whole suite's other processes are likely done
    items.sort(
        key=lambda item: (item.get_closest_marker("stack") is not None, item.get_closest_marker("burst") is not None)
    )
    if PROCESS:
        other = {item for item in items if not item.get_closest_marker("stack") or shards.process_of(item) != PROCESS}
        session.config.hook.pytest_deselected(items=list(other))
        items[:] = [item for item in items if item not in other]


def pytest_collection_finish(session):
    """The session's stack starts in the background as soon as a test will need it, so that it comes up while
    the tests that need none run (the `stack` fixture waits for it)."""
    global starting
    needed = any("stack" in item.fixturenames for item in session.items) and not session.config.option.collectonly
    if needed and not STACK_UP and config.RUN.name.endswith("-test"):
        starting = suite.start_empty_stack(stdout=subprocess.PIPE, text=True)


starting: subprocess.Popen | None = None


def pytest_sessionfinish(session):
    """A stack started for tests that then did not run (a run stopped early) is stopped all the same."""
    if starting and starting.returncode is None:
        starting.communicate(timeout=900)
        sanlens("down", "--purge")


@pytest.fixture(scope="session")
def stack():
    """The tests' own stack, really running: `./sanlens test` points SANLENS_RUN and the ports at a run
    folder of the tests (config.TEST_RUN), never at the user's stack. It starts empty, is stopped at the
    end, and its data is deleted unless `./sanlens test --keep`. `up` and `down` are checked on it: every
    component healthy with nothing restarted; after every test, `down` leaves no process and no port."""
    assert config.RUN.name.endswith("-test"), "run the tests with ./sanlens test: they need a stack of their own"
    if not STACK_UP:
        output, _ = starting.communicate(timeout=900)
        assert starting.returncode == 0, output

    def healthy():  # a probe may time out on a loaded machine (two test stacks starting): asked again
        report = json.loads(sanlens("status", "--json").stdout)
        return report if all(c["healthy"] for c in report.values()) else None

    report = wait_until(healthy, 120, "every component of the test stack healthy")
    assert all(c["restarts"] == 0 and c["last_exit"] is None for c in report.values()), report
    yield report
    if STACK_UP:
        return
    pids = stack_pids(config.RUN)
    out = sanlens("down", *([] if os.environ.get("SANLENS_TEST_KEEP") == "1" else ["--purge"]))
    assert out.returncode == 0, out.stdout + out.stderr
    assert_nothing_left(config.RUN, pids, stack_ports(os.environ))


@pytest.fixture(autouse=True)
def stack_whole_again(request):
    """After a test that stops or kills part of its own stack (`exclusive`), whatever is still down is started
    again: a failed `up` in one test must not fail the tests after it."""
    yield
    if STACK_UP or "stack" not in request.fixturenames or not request.node.get_closest_marker("exclusive"):
        return
    if not all(procs.pid_of(name) for component in COMPONENTS for name in component.PROCESSES):
        out = sanlens("up", timeout=900)
        assert out.returncode == 0, f"the stack did not come up again after the test: {out.stdout}{out.stderr}"


@pytest.fixture(scope="session")
def ch(stack):
    return db.client()


@pytest.fixture
def embedded(tmp_path):
    server = EmbeddedServer(tmp_path / "ch").start()
    yield server
    server.stop()


@pytest.fixture
def alertmanager(tmp_path):
    """The real Alertmanager on a free port with slo/'s config, notifying a webhook receiver of the test."""
    am = Alertmanager(tmp_path / "alertmanager")
    try:
        yield am.start()
    finally:
        am.stop()


@pytest.fixture(scope="session")
def demo_twice(stack):
    """`./sanlens demo`, the main job, played twice in a row on the tests' stack under the default scenario's own
    names (acme, globex; the second run replaces the first's span): what each run printed."""

    def demo() -> str:
        # 20x, not 40x: at 40x Telegraf misses most of its polls of the arrays and switches every 0.25 s, the
        # breakdown loses the windows whose parts it missed (3 of the slow drain's 30 came out), and the drain's
        # incident could start minutes late, after its page (docs/benchmarks.md, "Two test stacks on two cores")
        out = sanlens("demo", "--duration", "50", "--speed", "20", timeout=900)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        return out.stdout

    return demo(), demo()


@pytest.fixture(scope="session")
def rollout(stack, ch, tmp_path_factory):
    """A 12-array firmware rollout backfilled through the whole pipeline once per session (Kafka ->
    normalize -> histograms -> loader -> rollups), with the dbt marts built: over 3 h, 6 arrays move
    from 3.1.3 to 3.2.1 in two waves inside the second hour (a whole hour of data before and after). Its
    model name, array names and time range are unique to the session."""
    from ingest.simulator import scenario as scenario_file
    from ingest.simulator.run import Run

    run_id = f"r{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("rollout")
    (folder / "rollout.yaml").write_text(scenarios.text("rollout", id=run_id))
    s = scenario_file.load(folder / "rollout.yaml")
    run = Run(s, folder / "truth", config.KAFKA_BOOTSTRAP, backfill=True)
    run.backfill()
    run.close()
    truth = [json.loads(line) for line in (folder / "truth" / "histograms.jsonl").read_text().splitlines()]
    total, arrays = sum(sum(t["counts"]) for t in truth), list(s.arrays)
    # loaded, then rolled up (the last level: the fleet's, of the run's own model)
    for table, where, parameters in (
        ("service_time_hist_10s FINAL", "array IN {a:Array(String)}", {"a": arrays}),
        ("service_time_hist_fleet_1h", "array_model = {m:String}", {"m": f"M-{run_id}"}),
    ):
        wait_until(
            lambda table=table, where=where, parameters=parameters: (
                ch.command(f"SELECT sum(ios) FROM sanlens.{table} WHERE {where}", parameters=parameters) == total
            ),
            300,
            f"{total} I/Os in {table}",
        )
    out = sanlens("dbt", "build")
    assert out.returncode == 0, out.stdout[-3000:]
    start, end = ch.query(
        "SELECT min(window_start), max(window_start) FROM sanlens.service_time_hist_10s "
        "WHERE array IN {a:Array(String)}",
        parameters={"a": arrays},
    ).result_rows[0]
    return types.SimpleNamespace(
        id=run_id,
        model=f"M-{run_id}",
        customer=f"c-{run_id}",
        arrays=arrays,
        truth=truth,
        start=start,
        end=end,
        folder=folder,
    )
