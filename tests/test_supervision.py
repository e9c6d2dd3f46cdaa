"""The stack heals without a person: the supervisor starts a process that died again, with a backoff, says so
in `./sanlens status` (restarts, last exit), and reports one that keeps dying as failing, with the reason from
its log. The policy alone, then the supervisor on fake processes (no stack), then on the tests' stack."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import types
import uuid
from pathlib import Path

import pytest

from sanlensctl import config, procs, supervisor
from sanlensctl.components import telegraf
from sanlensctl.supervisor import Backoff, Policy
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


# --- on the tests' stack


def status() -> dict:
    out = sanlens("status", "--json")
    return json.loads(out.stdout)


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
    assert healed["supervision"] == "running" and healed["restarts"] == restarts + 4  # 5 deaths, 4 restarts
