"""The stack heals without a person: the supervisor starts a process that died again, with a backoff, says so
in `./sanlens status` (restarts, last exit), and reports one that keeps dying as failing, with the reason from
its log; a Flink job that is alive but not working (not RUNNING, or its JVM collecting garbage) is killed and
restarted the same way, with its reason. The policy and the liveness decision alone, then the supervisor on fake
processes (no stack), then on the tests' stack."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import sys
import time
import types
import uuid
from pathlib import Path

import pytest

from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config, procs, supervisor
from sanlensctl.components import flink, telegraf
from sanlensctl.supervisor import Backoff, Liveness, Policy
from tests import scenarios
from tests.support import sanlens, wait_until


def deaths(backoff: Backoff, times: list[float]) -> list[float]:
    return [backoff.died(t) for t in times]


def test_the_delay_doubles_from_one_second_up_to_the_cap():
    backoff = Backoff(Policy(failing_deaths=100))
    assert deaths(backoff, [10.0 * i for i in range(9)]) == [1, 2, 4, 8, 16, 32, 60, 60, 60]


def test_staying_up_five_minutes_starts_the_backoff_again():
    backoff = Backoff()
    assert deaths(backoff, [0, 10, 20]) == [1, 2, 4]
    backoff.alive(30)
    backoff.alive(329)
    assert backoff.died(330) == 8  # up 299 s: not yet
    backoff.alive(340)
    backoff.alive(640)
    assert backoff.died(641) == 1


def test_five_deaths_within_ten_minutes_is_failing_and_retried_at_the_cap():
    backoff = Backoff()
    assert deaths(backoff, [0, 2, 5, 10, 20]) == [1, 2, 4, 8, 60]
    assert backoff.failing(20) and backoff.recent(20) == 5
    assert backoff.died(80) == 60 and backoff.failing(80)
    assert not backoff.failing(605)  # 4 of the 6 deaths are over 10 minutes old


def test_deaths_further_apart_than_the_window_are_not_failing():
    backoff = Backoff()
    for t in range(0, 2000, 200):
        backoff.died(t)
        assert not backoff.failing(t)  # never more than 3 in 10 minutes
    assert backoff.died(2000) == 60  # but still backed off: it never stayed up 5 minutes


def test_deaths_in_a_row_of_a_process_that_never_worked_are_failing_however_far_apart():
    backoff = Backoff()  # a Flink job that never becomes RUNNING dies every running_grace (3 min): 5 take 15 min
    for t in range(0, 800, 200):
        backoff.died(t, worked=False)
        assert not backoff.failing(t)
    backoff.died(800, worked=False)
    assert backoff.failing(800) and backoff.recent(800) == 3
    assert backoff.why_failing(800) == "exited 5 times in a row without working in between"
    backoff.died(1000, worked=True)  # it ran in between: only deaths close together count again
    assert not backoff.failing(1000)


def test_the_policy_from_the_environment(monkeypatch):
    monkeypatch.setenv("SANLENS_SUPERVISOR_RUNNING_GRACE", "20")
    monkeypatch.setenv("SANLENS_SUPERVISOR_FAILING_DEATHS", "3")
    assert Policy.from_env() == Policy(running_grace=20.0, failing_deaths=3)


def test_a_job_not_running_for_the_grace_is_not_working_with_its_state():
    job = Liveness(Policy(), since=0)
    job.seen(10, "no answer", None, 1.0)  # its mini-cluster not up yet
    job.seen(180, "INITIALIZING", None, 14.0)
    assert job.reason(180) is None
    job.seen(190, "INITIALIZING", None, 14.5)
    assert job.reason(190) == "not RUNNING for 190 s (state: INITIALIZING)" and not job.worked
    job.seen(200, "RUNNING", 1.0, 15.0)
    job.seen(370, "RESTARTING", 1.0, 20.0)  # Flink restarting its tasks: for a while
    assert job.reason(370) is None and job.worked
    job.seen(390, "RESTARTING", 1.0, 21.0)
    assert job.reason(390) == "not RUNNING for 190 s (state: RESTARTING)"


def test_a_job_without_an_answer_is_not_working_only_while_busy():
    thrashing, waiting = Liveness(Policy(), since=0), Liveness(Policy(), since=0)
    for t in range(0, 200, 10):
        thrashing.seen(t, "no answer" if t else "RUNNING", None, 1.93 * t)
        waiting.seen(t, "no answer" if t else "RUNNING", None, 0.03 * t)  # at nice 19, the CPU busy elsewhere
    assert thrashing.reason(190) == "not RUNNING for 190 s (state: no answer, CPU 193 %)"
    assert waiting.reason(190) is None


def gc_answers(job: Liveness, start: int, end: int, share: float, every: int = 10) -> None:
    """RUNNING answers every `every` s from `start` to `end`, its JVM in GC `share` of the time since the last."""
    for t in range(start, end + 1, every):
        last_t, last_gc = job.gc[-1] if job.gc else (t, 0.0)
        job.seen(t, "RUNNING", last_gc + share * (t - last_t), 0.1 * t)


def test_a_jvm_in_gc_nine_tenths_of_a_minute_is_not_working():
    job = Liveness(Policy(), since=0)
    gc_answers(job, 0, 100, 0.02)  # at work
    assert job.reason(100) is None
    gc_answers(job, 110, 150, 0.97)  # thrashing for 50 s of the last 60: not a minute yet
    assert job.reason(150) is None
    gc_answers(job, 160, 160, 0.97)
    assert job.reason(160) == "GC 97 % of the last 60 s"


def test_a_burst_of_gc_or_a_share_under_the_limit_is_working():
    burst, busy = Liveness(Policy(), since=0), Liveness(Policy(), since=0)
    gc_answers(burst, 0, 30, 0.02)
    gc_answers(burst, 40, 70, 1.0)  # 40 s of the last 60
    gc_answers(busy, 0, 300, 0.85)
    assert burst.reason(70) is None and busy.reason(300) is None


def test_gc_over_sparse_answers_and_a_new_jvm():
    job = Liveness(Policy(), since=0)
    job.seen(0, "RUNNING", 5.0, 0.0)
    job.seen(50, "no answer", None, 90.0)  # too busy to answer in time
    job.seen(100, "RUNNING", 99.0, 180.0)
    assert job.reason(100) == "GC 94 % of the last 100 s"
    job.seen(110, "RUNNING", 0.5, 1.0)  # another JVM (taken over after a restart): its own count
    job.seen(200, "RUNNING", 2.0, 10.0)
    assert job.gc == [(110, 0.5), (200, 2.0)] and job.reason(200) is None
    job.seen(400, "RUNNING", 190.0, 50.0)  # answers over 2 minutes old are no measure of the last one
    assert job.gc == [(400, 190.0)] and job.reason(400) is None


JOB_LOG = """\
==> sanlens: starting flink-histograms at 2026-11-27T19:00:00Z, heap 1g
Caused by: org.apache.kafka.common.errors.TimeoutException: an earlier run's
==> sanlens: starting flink-histograms at 2026-11-27T19:10:00Z, heap 32m
1 compiler directives added
Terminating due to java.lang.OutOfMemoryError: GC overhead limit exceeded
Traceback (most recent call last):
  File "/work/flink-jobs/histograms/job.py", line 37, in <module>
py4j.protocol.Py4JError: An error occurred while calling o141.execute
ConnectionRefusedError: [Errno 111] Connection refused
"""
JVM_LOG = """\
2026-11-27 19:10:01,000 WARN  org.apache.flink.runtime.taskmanager.Task [] - Source: samples (1/2) switched to FAILED
java.io.IOException: the task's cause
\tat org.apache.flink.util.FlinkException.<init>(FlinkException.java:3)
2026-11-27 19:10:02,000 INFO  org.apache.flink.A [] - Hadoop FS is not available: NoClassDefFoundError : "org/x".
"""


def test_why_a_job_is_not_running_is_the_last_java_exception_of_its_last_run(run):
    log = procs.log_file("flink-histograms")
    log.parent.mkdir(parents=True)
    log.write_text(JOB_LOG)
    flink.jvm_log_dir("histograms").mkdir()
    (flink.jvm_log_dir("histograms") / "flink-root-python-vm.log").write_text(JVM_LOG)
    assert flink.why("flink-histograms") == "java.lang.OutOfMemoryError: GC overhead limit exceeded"
    log.write_text(JOB_LOG.split("1 compiler")[0])  # nothing in the job's log of this run: its mini-cluster's
    assert flink.why("flink-histograms") == "java.io.IOException: the task's cause"
    assert flink.why("flink-tiering") is None


FAST = Policy(first_delay=0.1, max_delay=0.4, stable_after=60, failing_deaths=3, failing_window=60)


@pytest.fixture
def run(tmp_path, monkeypatch):
    """A run folder of its own, with a pid file saying the supervisor is this process (`status` reads the
    state of a running supervisor only)."""
    monkeypatch.setattr(config, "RUN", tmp_path)
    monkeypatch.setattr(config, "LOGS", tmp_path / "logs")
    cmdline = Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    procs.pid_file(supervisor.NAME).write_text(f"{os.getpid()}\n{cmdline}\n")
    return tmp_path


def fake(name: str, code: str):
    """A component of one process running `code`."""

    def start() -> int:
        return procs.start(name, [sys.executable, "-c", code], dict(os.environ))

    return types.SimpleNamespace(NAME=name, PROCESSES=[name], start=start)


def watched(name: str, code: str, health):
    """A component of one process running `code`, with a health check as a Flink job's."""
    return types.SimpleNamespace(**vars(fake(name, code)), health=health)


def rounds(sup: supervisor.Supervisor, until, timeout: float = 15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sup.step()
        if until():
            return
        time.sleep(0.05)
    raise AssertionError(f"not reached in {timeout} s: {supervisor.read_state()}")


def state(name: str) -> dict:
    return supervisor.read_state()["processes"][name]


def test_a_killed_process_is_restarted_and_one_stopped_on_purpose_is_left_alone(run):
    sleeper = fake("sleeper", "import time; print('serving', flush=True); time.sleep(120)")
    first = sleeper.start()
    sup = supervisor.Supervisor([sleeper], FAST)
    rounds(sup, lambda: state("sleeper")["pid"] == first and procs.tail(procs.log_file("sleeper"), 1) == ["serving"])
    assert state("sleeper")["state"] == "running" and state("sleeper")["restarts"] == 0
    os.kill(first, signal.SIGKILL)
    rounds(sup, lambda: state("sleeper")["restarts"] == 1)
    restarted = state("sleeper")
    assert restarted["state"] == "running" and restarted["pid"] != first and procs.alive(restarted["pid"])
    assert restarted["last_exit"]["status"] == "killed by SIGKILL" and restarted["last_exit"]["log"] == "serving"
    assert procs.stop("sleeper", timeout=5)  # as ./sanlens down does: the pid file goes first
    rounds(sup, lambda: state("sleeper")["state"] == "stopped")
    time.sleep(0.5)
    sup.step()
    assert state("sleeper")["restarts"] == 1 and procs.pid_of("sleeper") is None


def test_a_process_that_keeps_dying_is_failing_with_the_reason_from_its_log(run, capsys):
    broken = fake("broken", "import sys; print('starting'); sys.exit('config: no such table sanlens.nowhere')")
    broken.start()
    sup = supervisor.Supervisor([broken], FAST)
    rounds(sup, lambda: state("broken")["state"] == "failing")
    failing = state("broken")
    assert failing["restarts"] == 2  # died at start, then after each of 2 restarts: 3 deaths
    assert failing["last_exit"]["status"] == "exit 1"
    assert failing["reason"].startswith("exited 3 times in 1 min, retried every 0.4 s; last: exit 1: config: no such")
    report = {"broken": {"healthy": True, "pid": None, "detail": "not running"}, "supervisor": {"detail": "-"}}
    supervisor.annotate(report)
    assert report["broken"]["healthy"] is False and report["broken"]["supervision"] == "failing"
    assert "no such table sanlens.nowhere" in report["broken"]["detail"]
    assert report["broken"]["restarts"] == 2 and report["broken"]["last_exit"]["process"] == "broken"
    assert report["supervisor"]["restarts"] == 0 and report["supervisor"]["supervision"] is None
    out = capsys.readouterr().out
    assert "--> broken (pid" in out and "exited: exit 1" in out and "broken is failing" in out
    assert "      config: no such table sanlens.nowhere" in out  # the last lines of its log


def test_a_process_someone_else_starts_is_taken_over(run):
    broken = fake("broken", "import sys; sys.exit(2)")
    broken.start()
    sup = supervisor.Supervisor([broken], Policy(first_delay=60))
    rounds(sup, lambda: state("broken")["state"] == "restarting")
    fixed = fake("broken", "import time; time.sleep(120)").start()  # a person fixed it: ./sanlens up
    rounds(sup, lambda: state("broken")["pid"] == fixed)  # (a round may see it still in exec)
    assert state("broken")["state"] == "running" and state("broken")["restarts"] == 0
    procs.stop("broken", timeout=5)


LIVELY = dataclasses.replace(FAST, probe_every=0.1, running_grace=0.5, gc_window=0.5)
SLEEP = "import time; print('planning', flush=True); time.sleep(120)"


def test_a_job_never_running_is_killed_restarted_and_failing_with_its_state(run, capsys):
    states = ["INITIALIZING"]
    stuck = watched("stuck", SLEEP, lambda name: (states[-1], None))
    first = stuck.start()
    sup = supervisor.Supervisor([stuck], LIVELY)
    rounds(sup, lambda: state("stuck")["state"] == "failing")
    failing = state("stuck")
    assert failing["restarts"] == 2 and not procs.alive(first)  # 3 deaths: killed at start and after 2 restarts
    assert re.fullmatch(r"not RUNNING for \d+ s \(state: INITIALIZING\)", failing["last_exit"]["status"])
    assert failing["last_exit"]["log"] == "planning"
    assert failing["reason"].startswith("exited 3 times in 1 min, retried every 0.4 s; last: not RUNNING for ")
    out = capsys.readouterr().out
    assert f"--> stuck (pid {first}) is alive but not working: not RUNNING for " in out
    assert "; killing its process group" in out and f"--> stuck (pid {first}) exited: killed by SIGKILL" in out
    rounds(sup, lambda: state("stuck")["restarts"] == 3)
    again = state("stuck")  # started again, and still failing until it is RUNNING
    assert again["state"] == "failing" and procs.alive(again["pid"]) and again["reason"] == failing["reason"]
    states.append("RUNNING")
    rounds(sup, lambda: state("stuck")["state"] == "running")
    procs.stop("stuck", timeout=5)


def test_a_jvm_collecting_garbage_is_killed_and_one_at_work_left_alone(run, capsys):
    t0 = time.monotonic()
    thrashing = watched("thrashing", SLEEP, lambda name: ("RUNNING", 0.97 * (time.monotonic() - t0)))
    working = watched("working", SLEEP, lambda name: ("RUNNING", 0.05 * (time.monotonic() - t0)))
    thrashing.start(), working.start()
    sup = supervisor.Supervisor([thrashing, working], LIVELY)
    rounds(sup, lambda: state("thrashing")["restarts"] == 1)
    assert re.fullmatch(r"GC \d+ % of the last \d+ s", state("thrashing")["last_exit"]["status"])
    assert state("working")["restarts"] == 0 and state("working")["state"] == "running"
    assert "--> thrashing (pid" in capsys.readouterr().out
    procs.stop("thrashing", timeout=5), procs.stop("working", timeout=5)


# --- on the tests' stack


def status() -> dict:
    out = sanlens("status", "--json")
    return json.loads(out.stdout)


@pytest.mark.exclusive
def test_a_killed_loader_is_restarted_and_healthy_again_without_a_command(stack):
    before = status()
    assert before["supervisor"]["healthy"], before["supervisor"]
    restarts, killed = before["loader"]["restarts"], procs.pid_of("loader")
    os.kill(killed, signal.SIGKILL)

    def healed(killed: int, restarts: int):
        s = status()["loader"]
        return s if s["healthy"] and s["pid"] not in (None, killed) and s["restarts"] == restarts else None

    again = wait_until(lambda: healed(killed, restarts + 1), 50, "the loader restarted and healthy")
    # started by ./sanlens up, not by the supervisor: its exit status is not known
    assert again["last_exit"]["process"] == "loader" and again["last_exit"]["status"] in ("gone", "killed by SIGKILL")
    assert again["supervision"] == "running"
    line = next(line for line in sanlens("status").stdout.splitlines() if line.startswith("loader "))
    assert " healthy " in line and f"[restarts {restarts + 1}, last exit " in line, line

    os.kill(again["pid"], signal.SIGKILL)  # now the supervisor's own child
    twice = wait_until(lambda: healed(again["pid"], restarts + 2), 50, "the loader restarted again and healthy")
    assert twice["last_exit"]["status"] == "killed by SIGKILL"
    log = procs.log_file(supervisor.NAME).read_text()
    assert f"--> loader (pid {killed}) exited" in log and f"--> loader (pid {again['pid']}) exited: killed by" in log
    assert f"loader started again (pid {twice['pid']}, restart {restarts + 2})" in log


@pytest.mark.exclusive
def test_a_component_that_keeps_dying_is_failing_with_the_reason_from_its_log(stack):
    broken = telegraf.POLLERS / f"broken-{uuid.uuid4().hex[:6]}.conf"  # Telegraf reads this folder at start
    broken.write_text("this is [not toml\n")
    restarts = status()["telegraf"]["restarts"]
    try:
        os.kill(procs.pid_of("telegraf"), signal.SIGKILL)
        failing = wait_until(
            lambda: (s := status()["telegraf"])["supervision"] == "failing" and s, 50, "telegraf failing"
        )
    finally:
        broken.unlink()
    assert not failing["healthy"] and failing["last_exit"]["status"] == "exit 1"
    assert "telegraf failing: exited 5 times in 10 min, retried every 60 s; last: exit 1: " in failing["detail"]
    assert f"{broken.name} failed: error parsing data: line 1: invalid TOML syntax" in failing["detail"]
    line = next(line for line in sanlens("status").stdout.splitlines() if line.startswith("telegraf "))
    assert line.split()[1] == "FAILING", line
    # fixed by a person: ./sanlens up starts it, and the supervisor takes it over
    out = sanlens("up", timeout=300)
    assert "--> starting telegraf" in out.stderr, out.stderr
    healed = wait_until(lambda: (s := status()["telegraf"])["healthy"] and s, 30, "telegraf healthy")
    # 5 deaths, 4 restarts; 3 when an earlier test's kill of Telegraf (crash_recovery's) is still within the window
    assert healed["supervision"] == "running" and restarts + 3 <= healed["restarts"] <= restarts + 4, healed


THRASHING = {
    "SANLENS_FLINK_HEAP_HISTOGRAMS": "32m",
    "SANLENS_SUPERVISOR_MAX_DELAY": "2",
    "SANLENS_SUPERVISOR_PROBE_EVERY": "2",
    "SANLENS_SUPERVISOR_RUNNING_GRACE": "10",
    "SANLENS_SUPERVISOR_BUSY_CORES": "0.1",  # on a busy machine it may get half a core only: still thrashing
}
LIVENESS = re.compile(r"not RUNNING for \d+ s \(state: .+\)|GC \d+ % of the last \d+ s")


def supervisor_with(env: dict) -> None:
    """The tests' supervisor replaced by one started with `env` (by ./sanlens up, which leaves the rest as it is)."""
    procs.stop(supervisor.NAME, timeout=10)
    out = sanlens("up", env=env, timeout=300)
    assert supervisor.read_state(), out.stderr


def backfill(tmp_path) -> str:
    """A small fleet's 10 minutes straight into Kafka; its site."""
    run_id = uuid.uuid4().hex[:6]
    (tmp_path / "fleet.yaml").write_text(scenarios.text("supervision", id=run_id))
    run = Run(scenario_file.load(tmp_path / "fleet.yaml"), tmp_path / "truth", config.KAFKA_BOOTSTRAP, backfill=True)
    run.backfill()
    run.close()
    return f"thrash-{run_id}"


@pytest.mark.exclusive
def test_a_flink_job_that_thrashes_is_restarted_with_its_reason_and_failing_after_five_deaths(stack, ch, tmp_path):
    """The histograms job killed, and started again by a supervisor that gives it a heap far too small (32 MB: its
    JVM collects garbage most of the time while Flink plans the job, until it gives up with an OutOfMemoryError up to
    a minute later) and 10 s to be RUNNING: each death is shown with its reason, the fifth makes it failing; the
    other jobs, the loader and ClickHouse work on meanwhile. Then the tests' own supervisor heals it."""
    log = procs.log_file(supervisor.NAME)
    supervisor_with(THRASHING)
    try:
        offset = log.stat().st_size
        os.killpg(procs.pid_of("flink-histograms"), signal.SIGKILL)
        site = backfill(tmp_path)
        loaded = "SELECT count() FROM sanlens.metrics WHERE site = {s:String}"
        wait_until(lambda: ch.command(loaded, parameters={"s": site}) > 0, 120, "the fleet's samples loaded")
        failing = wait_until(lambda: (p := state("flink-histograms"))["state"] == "failing" and p, 300, "failing")
        last = failing["last_exit"]
        assert LIVENESS.fullmatch(last["status"]) or "java.lang.OutOfMemoryError" in last["log"], last
        # failing at the fifth death: killed by the test, then on 32 MB killed for a reason or out of memory
        said = log.read_text()[offset:].split("    flink-histograms is failing: ")
        deaths = re.findall(r"--> flink-histograms \(pid \d+\) exited: (.+?); the last lines", said[0])
        kills = re.findall(r"--> flink-histograms \(pid \d+\) is alive but not working: (.+?); killing", said[0])
        assert len(deaths) == 5 and said[1].startswith("exited 5 times in 10 min, retried every 2 s; last: "), said
        assert len(kills) == sum(d.startswith("killed by SIGKILL") for d in deaths[1:]), (kills, deaths)
        assert all(LIVENESS.fullmatch(k) for k in kills), kills
        assert all("java.lang.OutOfMemoryError" in d for d in deaths[1:] if not d.startswith("killed")), deaths
        report = status()
        assert not report["flink"]["healthy"] and report["flink"]["supervision"] == "failing"
        failing_detail = r"flink-histograms failing: exited \d+ times in 10 min, retried every 2 s; last: "
        assert re.search(failing_detail, report["flink"]["detail"]), report["flink"]["detail"]
        line = next(line for line in sanlens("status").stdout.splitlines() if line.startswith("flink "))
        assert line.split()[1] == "FAILING", line
        # the rest of the stack at work: the other jobs RUNNING and never restarted, the samples loaded
        assert all(report["flink"]["jobs"][job]["state"] == "RUNNING" for job in flink.JOBS if job != "histograms")
        others = [name for name in flink.PROCESSES if name != "flink-histograms"]
        assert [state(name)["restarts"] for name in others] == [0] * len(others)
        assert all(report[c]["healthy"] for c in ("clickhouse", "kafka", "loader", "telegraf", "supervisor")), report
    finally:
        procs.stop(supervisor.NAME, timeout=10)
        if pid := procs.pid_of("flink-histograms"):  # on 32 MB: killed, for the next supervisor to restart it
            os.killpg(pid, signal.SIGKILL)
        supervisor_with({})
        wait_until(lambda: status()["flink"]["healthy"], 300, "the histograms job RUNNING again")
