"""The supervisor: a process of the stack (`python -m sanlensctl.supervisor`, started last by `./sanlens up`,
stopped first by `./sanlens down`) that starts a component's process again when it dies.

Every POLL_S seconds it looks at each process's pid file. A pid file whose process is gone is a death (whoever
stops a process on purpose, `./sanlens down` or procs.stop, deletes its pid file first; no pid file: stopped,
left alone). It logs the exit status (known for a process it started itself and reaped; "gone" for one
`./sanlens up` started) and the last lines of the process's log, kills what is left of its process group,
and after a backoff (Policy) starts it again with the component's own start function. A process someone
else starts meanwhile (`./sanlens up`) is taken over as it is. What it knows goes to RUN/supervisor.json
(written whole, then renamed), read by `./sanlens status`."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sanlensctl import config, procs

NAME = "supervisor"
PROCESSES = [NAME]
PORT = None
POLL_S = 1.0
LOG_LINES = 5  # of a dead process's log, copied into the supervisor's log
STALE_S = 10  # a state file older than this: the supervisor is not doing its rounds


@dataclass(frozen=True)
class Policy:
    first_delay: float = 1.0  # seconds before the first restart, doubled at each death in a row
    max_delay: float = 60.0
    stable_after: float = 300.0  # up this long: the deaths so far are forgiven, the delay starts again
    failing_deaths: int = 5  # this many deaths within failing_window seconds: failing
    failing_window: float = 600.0


@dataclass
class Backoff:
    """One process's restart policy, pure (the caller passes the time): exponential delays from first_delay,
    capped at max_delay; failing after failing_deaths deaths within failing_window, and then retried at the
    cap; all forgotten once the process stays up stable_after seconds."""

    policy: Policy = field(default_factory=Policy)
    deaths: list[float] = field(default_factory=list)  # within failing_window
    streak: int = 0  # deaths since the process last stayed up stable_after seconds
    up_since: float | None = None

    def alive(self, now: float) -> None:
        if self.up_since is None:
            self.up_since = now
        elif now - self.up_since >= self.policy.stable_after:
            self.deaths, self.streak = [], 0

    def died(self, now: float) -> float:
        """The seconds to wait before starting the process again."""
        self.up_since = None
        self.deaths = [t for t in self.deaths if now - t < self.policy.failing_window] + [now]
        self.streak += 1
        if self.failing(now):
            return self.policy.max_delay
        return min(self.policy.max_delay, self.policy.first_delay * 2 ** min(self.streak - 1, 30))

    def failing(self, now: float) -> bool:
        return self.recent(now) >= self.policy.failing_deaths

    def recent(self, now: float) -> int:
        """Deaths within failing_window."""
        return sum(now - t < self.policy.failing_window for t in self.deaths)


@dataclass
class Watch:
    """What the supervisor knows of one process."""

    component: object  # the module of sanlensctl/components/
    name: str  # its process (pid file, log)
    backoff: Backoff
    pid: int | None = None
    state: str = "running"  # running | restarting | failing | stopped
    restarts: int = 0
    last_exit: dict | None = None  # time, status, log (its last line)
    restart_at: float | None = None  # time.monotonic()

    def doc(self, now: float) -> dict:
        doc = {
            "component": self.component.NAME,
            "state": self.state,
            "pid": self.pid,
            "restarts": self.restarts,
            "last_exit": self.last_exit,
            "next_restart": _utc(time.time() + self.restart_at - now) if self.restart_at else None,
        }
        if self.state == "failing":
            window = self.backoff.policy.failing_window / 60
            doc["reason"] = (
                f"exited {self.backoff.recent(now)} times in {window:g} min, retried every "
                f"{self.backoff.policy.max_delay:g} s; last: {self.last_exit['status']}: {self.last_exit['log']}"
            )
        return doc


def state_file():
    return config.RUN / "supervisor.json"


def _utc(t: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if t is None else t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def log(message: str) -> None:
    print(f"[{_utc()}] {message}", flush=True)


def describe(status: int | None) -> str:
    """An exit status of os.waitpid in words; None: the process was not the supervisor's child."""
    if status is None:
        return "gone"
    if os.WIFSIGNALED(status):
        try:
            return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
        except ValueError:
            return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit {os.WEXITSTATUS(status)}"


def _cmdline(pid: int) -> str:
    try:
        return procs.cmdline(pid)
    except OSError:
        return ""


def start_process(component, name: str) -> int:
    starter = getattr(component, "start_process", None)  # a component of several processes starts one alone
    return starter(name) if starter else component.start()


class Supervisor:
    def __init__(self, components, policy: Policy = Policy()):
        self.watches = [Watch(c, name, Backoff(policy)) for c in components for name in c.PROCESSES]
        self.exits: dict[int, int] = {}  # PID -> wait status of children reaped

    def step(self) -> None:
        """One round: every process checked, dead ones restarted when their time comes, the state written."""
        self._reap()
        for watch in self.watches:
            self._check(watch, time.monotonic())
        self.write()

    def _check(self, w: Watch, now: float) -> None:
        pid = procs.pid_of(w.name)
        if pid:
            if pid != w.pid:  # not started by us (./sanlens up, telegraf.reload, or alive when we started)
                if w.pid is not None or w.state != "running":
                    log(f"--> {w.name} was started by someone else (pid {pid}): taken over")
                w.pid, w.backoff = pid, Backoff(w.backoff.policy)
            w.backoff.alive(now)
            w.state, w.restart_at = "running", None
            return
        dead = procs.recorded_pid(w.name)
        if dead and procs.alive(dead) and not _cmdline(dead):  # just started, still in exec: next round
            return
        if dead is None:  # no pid file: stopped on purpose
            self.exits.pop(w.pid, None)
            w.state, w.restart_at, w.pid = "stopped", None, None
        elif w.restart_at is None:
            procs.kill_leftovers(dead)
            lines = procs.tail(procs.log_file(w.name), LOG_LINES)
            status = self._exit_status(dead)
            log(f"--> {w.name} (pid {dead}) exited: {status}; the last lines of {procs.log_file(w.name)}:")
            for line in lines:
                log(f"      {line[:500]}")
            self._schedule(w, now, status, lines[-1] if lines else "")
        elif now >= w.restart_at:
            self._restart(w, now)

    def _schedule(self, w: Watch, now: float, status: str, last_line: str) -> None:
        w.last_exit = {"time": _utc(), "status": status, "log": last_line[:300]}
        delay = w.backoff.died(now)
        w.restart_at = now + delay
        w.state = "failing" if w.backoff.failing(now) else "restarting"
        if w.state == "failing":
            log(f"    {w.name} is failing: {w.doc(now)['reason']}")
        log(f"    restarting {w.name} in {delay:g} s")

    def _restart(self, w: Watch, now: float) -> None:
        try:
            pid = start_process(w.component, w.name)
        except Exception as exc:  # it could not even start (its port taken, ...): a death like any other
            reason = str(exc).splitlines()[0] if str(exc) else repr(exc)
            log(f"--> {w.name} could not start: {reason}")
            self._schedule(w, now, "start failed", reason)
            return
        w.pid, w.restarts, w.state, w.restart_at = pid, w.restarts + 1, "running", None
        w.backoff.alive(now)
        log(f"    {w.name} started again (pid {pid}, restart {w.restarts})")

    def _reap(self) -> None:
        """The exit status of each process the supervisor started that ended (only those: not another child's)."""
        for w in self.watches:
            if w.pid:
                self._wait(w.pid)

    def _wait(self, pid: int) -> None:
        if pid not in self.exits:
            try:
                got, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not our child: its exit status is not ours to know
                return
            if got == pid:
                self.exits[pid] = status

    def _exit_status(self, pid: int) -> str:
        self._wait(pid)
        return describe(self.exits.pop(pid, None))

    def write(self) -> None:
        now = time.monotonic()
        doc = {
            "pid": os.getpid(),
            "updated": _utc(),
            "updated_at": time.time(),
            "processes": {w.name: w.doc(now) for w in self.watches},
        }
        tmp = state_file().with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(state_file())


def read_state() -> dict | None:
    """The supervisor's state file, if the supervisor that writes it is running."""
    try:
        state = json.loads(state_file().read_text())
    except (OSError, ValueError):
        return None
    return state if state.get("pid") == procs.pid_of(NAME) else None


# --- the component's side, for sanlensctl/stack.py


def start() -> int:
    return procs.start(NAME, [sys.executable, "-m", "sanlensctl.supervisor"], config.tool_env())


def probe() -> dict:
    state = read_state()
    age = time.time() - state["updated_at"] if state else None
    if age is None or age > STALE_S:
        detail = "no state written yet" if age is None else f"last round {age:.0f} s ago"
        return {"healthy": False, "port": PORT, "version": "-", "detail": detail}
    processes = state["processes"]
    unwell = [f"{name} {p['state']}" for name, p in processes.items() if p["state"] != "running"]
    return {
        "healthy": True,
        "port": PORT,
        "version": "-",
        "detail": f"watching {len(processes)} processes every {POLL_S:g} s, "
        f"{sum(p['restarts'] for p in processes.values())} restart(s)" + (f"; {', '.join(unwell)}" if unwell else ""),
    }


SEVERITY = ["running", "stopped", "restarting", "failing"]


def annotate(report: dict) -> None:
    """Adds to each component's entry of `./sanlens status` its restarts, its last exit (the latest of its
    processes') and `supervision`, the worst state of its processes (None without a running supervisor);
    a failing or restarting component is unhealthy, its detail says why."""
    state = read_state()
    processes = state["processes"] if state else {}
    for name, entry in report.items():
        mine = {process: p for process, p in processes.items() if p["component"] == name}
        exits = [dict(p["last_exit"], process=process) for process, p in mine.items() if p["last_exit"]]
        worst = max(mine.items(), key=lambda item: SEVERITY.index(item[1]["state"]), default=None)
        entry["restarts"] = sum(p["restarts"] for p in mine.values())
        entry["last_exit"] = max(exits, key=lambda e: e["time"], default=None)
        entry["supervision"] = worst[1]["state"] if worst else None
        if entry["supervision"] == "failing":
            entry.update(healthy=False, detail=f"{worst[0]} failing: {worst[1]['reason']}; {entry['detail']}")
        elif entry["supervision"] == "restarting":
            status, when = worst[1]["last_exit"]["status"], datetime.fromisoformat(worst[1]["next_restart"])
            wait = max(0, (when - datetime.now(UTC)).total_seconds())
            entry.update(
                healthy=False, detail=f"{worst[0]} exited ({status}), restarting in {wait:.0f} s; {entry['detail']}"
            )


def main() -> int:
    from sanlensctl import stack

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    supervisor = Supervisor([c for c in stack.COMPONENTS if c.NAME != NAME])
    log(f"--> supervising {', '.join(w.name for w in supervisor.watches)} every {POLL_S:g} s")
    while not stopping:
        try:
            supervisor.step()
        except Exception:  # a round that failed (a file it could not write): said, and the next one tried
            log("    round failed: " + traceback.format_exc().strip().splitlines()[-1])
        time.sleep(POLL_S)
    state_file().unlink(missing_ok=True)
    log("--> stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
