"""The supervisor: a process of the stack (`python -m sanlensctl.supervisor`, started last by `./sanlens up`,
stopped first by `./sanlens down`) that starts a component's process again when it dies.

Every POLL_S seconds it looks at each process's pid file. A pid file whose process is gone is a death (whoever
stops a process on purpose, `./sanlens down` or procs.stop, deletes its pid file first; no pid file: stopped,
left alone). It logs the exit status (known for a process it started itself and reaped; "gone" for one
`./sanlens up` started) and the last lines of the process's log, kills what is left of its process group,
and after a backoff (Policy) starts it again with the component's own start function. A process someone
else starts meanwhile (`./sanlens up`) is taken over as it is. A process that is alive but not working is killed
and counted as a death, with the reason: every probe_every seconds the supervisor asks each process whose component
has a health check (a Flink job: its state and its JVM's time in GC) how it is, and Liveness decides. What it knows
goes to RUN/supervisor.json (written whole, then renamed), read by `./sanlens status`."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime

from sanlensctl import config, procs, supervised

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
    # A Flink job's REST API answers its metrics from a cache it refreshes at most every 10 s (Flink's
    # metrics.fetcher.update-interval): asked more often, it has nothing new to say.
    probe_every: float = 10.0
    # A job alone started in 15-60 s here, at nice 19 beside other stacks, and Flink restarts a failed task within
    # seconds: not RUNNING for 3 minutes on end, it is stuck.
    running_grace: float = 180.0
    # A job whose REST API does not answer (in 3 s) is not RUNNING only if it uses this much CPU meanwhile, in cores:
    # a JVM thrashing in GC used 1.93; an analytics job at nice 19 waiting for the CPU while the ingest path has it
    # gets a few hundredths, and so may not answer in time, for minutes: it waits, it is not stuck.
    busy_cores: float = 0.5
    # A job at work spends a few % of its time in GC (idle, well under 1 %; the breakdown on too small a heap in a
    # 200-array backfill, a third); at 90 % it does a tenth of its work at most. Over a minute, that is many full
    # collections in a row (one of a 3 GB heap takes seconds), not a pause or a checkpoint's burst. The JVM's own
    # limit (UseGCOverheadLimit: 98 %, and under 2 % of the heap freed, 5 collections in a row) did not end a job
    # that thrashed for 10 minutes: each collection freed a little.
    gc_share: float = 0.9
    gc_window: float = 60.0

    @classmethod
    def from_env(cls) -> Policy:
        """The default policy, each field overridden by SANLENS_SUPERVISOR_<FIELD> if set (the tests shrink the
        delays, e.g. SANLENS_SUPERVISOR_RUNNING_GRACE=20)."""
        defaults = cls()
        return cls(
            **{
                f.name: type(getattr(defaults, f.name))(os.environ[f"SANLENS_SUPERVISOR_{f.name.upper()}"])
                for f in fields(cls)
                if f"SANLENS_SUPERVISOR_{f.name.upper()}" in os.environ
            }
        )


@dataclass
class Backoff:
    """One process's restart policy, pure (the caller passes the time): exponential delays from first_delay,
    capped at max_delay; failing after failing_deaths deaths within failing_window, or in a row without the process
    working in between (a Flink job never RUNNING: each death may take running_grace), and then retried at the
    cap; all forgotten once the process stays up stable_after seconds."""

    policy: Policy = field(default_factory=Policy)
    deaths: list[float] = field(default_factory=list)  # within failing_window
    streak: int = 0  # deaths since the process last stayed up stable_after seconds
    futile: int = 0  # deaths in a row of a process that never worked in between
    up_since: float | None = None

    def alive(self, now: float) -> None:
        if self.up_since is None:
            self.up_since = now
        elif now - self.up_since >= self.policy.stable_after:
            self.deaths, self.streak = [], 0

    def died(self, now: float, worked: bool = True) -> float:
        """The seconds to wait before starting the process again; `worked`: it did since it was started."""
        self.up_since = None
        self.deaths = [t for t in self.deaths if now - t < self.policy.failing_window] + [now]
        self.streak += 1
        self.futile = 0 if worked else self.futile + 1
        if self.failing(now):
            return self.policy.max_delay
        return min(self.policy.max_delay, self.policy.first_delay * 2 ** min(self.streak - 1, 30))

    def failing(self, now: float) -> bool:
        return self.recent(now) >= self.policy.failing_deaths or self.futile >= self.policy.failing_deaths

    def why_failing(self, now: float) -> str:
        if self.recent(now) >= self.policy.failing_deaths:
            return f"exited {self.recent(now)} times in {self.policy.failing_window / 60:g} min"
        return f"exited {self.futile} times in a row without working in between"

    def recent(self, now: float) -> int:
        """Deaths within failing_window."""
        return sum(now - t < self.policy.failing_window for t in self.deaths)


@dataclass
class Liveness:
    """Whether a process that is alive works, pure (the caller passes the time and what the process's health check
    saw): not RUNNING for running_grace seconds since its start or since it last was (without an answer: while busy
    on busy_cores at least), or its JVM in GC for gc_share of gc_window seconds or more, is a reason to restart it."""

    policy: Policy
    since: float  # its start, or when it was last seen RUNNING
    state: str = "not asked yet"
    worked: bool = False  # seen RUNNING since its start
    cpu: list[tuple[float, float]] = field(default_factory=list)  # (time, CPU s so far): when last RUNNING, latest
    gc: list[tuple[float, float]] = field(default_factory=list)  # (time, its JVM's GC time so far in s)

    def seen(self, now: float, state: str, gc_s: float | None, cpu_s: float) -> None:
        """What the health check answered: the job's state ("no answer" if none), its GC time if known, and the CPU
        time its processes used so far."""
        self.state = state
        if state == "RUNNING":
            self.since, self.worked = now, True
        self.cpu = [self.cpu[0] if self.cpu and state != "RUNNING" else (now, cpu_s), (now, cpu_s)]
        if gc_s is None:
            return
        if self.gc and gc_s < self.gc[-1][1]:  # another JVM
            self.gc = []
        self.gc = [(t, g) for t, g in self.gc if now - t <= 2 * self.policy.gc_window] + [(now, gc_s)]

    def reason(self, now: float) -> str | None:
        """Why the process should be restarted; None while it works, or waits for the CPU."""
        if now - self.since > self.policy.running_grace:
            if self.state != "no answer":
                return f"not RUNNING for {now - self.since:.0f} s (state: {self.state})"
            if self.busy() >= self.policy.busy_cores:
                return f"not RUNNING for {now - self.since:.0f} s (state: no answer, CPU {100 * self.busy():.0f} %)"
        span = self.gc_span()
        if span:
            (t0, g0), (t1, g1) = span
            if g1 - g0 >= self.policy.gc_share * (t1 - t0):
                return f"GC {100 * (g1 - g0) / (t1 - t0):.0f} % of the last {t1 - t0:.0f} s"
        return None

    def busy(self) -> float:
        """The cores its processes used since it was last RUNNING (or first asked)."""
        (t0, c0), (t1, c1) = self.cpu
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0

    def gc_span(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """The newest answer at least gc_window before the latest one, and the latest (None before there are
        two): its JVM's GC time over at least gc_window seconds, over at most twice that when answers are few."""
        older = [s for s in self.gc if self.gc[-1][0] - s[0] >= self.policy.gc_window]
        return (older[-1], self.gc[-1]) if older else None


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
    liveness: Liveness | None = None  # a process whose component has a health check, while it runs
    probe_at: float = 0.0  # time.monotonic()
    killed_for: str | None = None  # the reason the supervisor killed it, until its death is counted

    def doc(self, now: float) -> dict:
        doc = {
            "component": self.component.NAME,
            "state": self.shown_state(now),
            "pid": self.pid,
            "restarts": self.restarts,
            "last_exit": self.last_exit,
            "next_restart": _utc(time.time() + self.restart_at - now) if self.restart_at else None,
        }
        if doc["state"] == "failing":
            doc["reason"] = (
                f"{self.backoff.why_failing(now)}, retried every {self.backoff.policy.max_delay:g} s; "
                f"last: {self.last_exit['status']}: {self.last_exit['log']}"
            )
        return doc

    def shown_state(self, now: float) -> str:
        """Its state; restarted while failing, a process with a health check is still failing until it works (a
        Flink job: until it is RUNNING; it may take running_grace to be killed again)."""
        unproven = self.liveness is not None and not self.liveness.worked
        return "failing" if self.state == "running" and unproven and self.backoff.failing(now) else self.state


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
        self.policy = policy
        self.watches = [Watch(c, name, Backoff(policy)) for c in components for name in c.PROCESSES]
        self.exits: dict[int, int] = {}  # PID -> wait status of children reaped

    def step(self) -> None:
        """One round: every process checked, dead ones restarted when their time comes, the health of the others
        asked when its time comes, the state written."""
        self._reap()
        for watch in self.watches:
            self._check(watch, time.monotonic())
        self._probe()
        self.write()

    def _check(self, w: Watch, now: float) -> None:
        pid = procs.pid_of(w.name)
        if pid:
            if pid != w.pid:  # not started by us (./sanlens up, telegraf.reload, or alive when we started)
                if w.pid is not None or w.state != "running":
                    log(f"--> {w.name} was started by someone else (pid {pid}): taken over")
                w.pid, w.backoff = pid, Backoff(w.backoff.policy)
                self._watch_health(w, now)
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
            self._died(w, dead, now)
        elif now >= w.restart_at:
            self._restart(w, now)

    def _died(self, w: Watch, dead: int, now: float) -> None:
        """A death: said with its exit status (or the reason the supervisor killed it) and the last lines of its
        log, what is left of its process group killed, its restart scheduled."""
        procs.kill_leftovers(dead)
        lines = procs.tail(procs.log_file(w.name), LOG_LINES)
        status, words = self._exit_status(dead), procs.last_words(w.name, getattr(w.component, "why", None))
        last = lines[-1][:300] if lines else ""
        said = f" ({words})" if words != last else ""  # what the component reads in its logs (a job's exception)
        log(f"--> {w.name} (pid {dead}) exited: {status}{said}; the last lines of {procs.log_file(w.name)}:")
        for line in lines:
            log(f"      {line[:500]}")
        worked = w.liveness is None or w.liveness.worked
        self._schedule(w, now, w.killed_for or status, words, worked)
        w.liveness, w.killed_for = None, None

    def _schedule(self, w: Watch, now: float, status: str, last_line: str, worked: bool = True) -> None:
        w.last_exit = {"time": _utc(), "status": status, "log": last_line[:300]}
        delay = w.backoff.died(now, worked)
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
        self._watch_health(w, now)
        log(f"    {w.name} started again (pid {pid}, restart {w.restarts})")

    def _watch_health(self, w: Watch, now: float) -> None:
        """A process just (re)started or taken over: its liveness from now, if its component has a health check."""
        w.liveness = Liveness(self.policy, now) if hasattr(w.component, "health") else None
        w.probe_at, w.killed_for = now + self.policy.probe_every, None

    def _probe(self) -> None:
        """The running processes with a health check whose time has come are asked how they are, all at once (a
        JVM busy collecting garbage may take the whole of its timeout to answer); one that is alive but not
        working is killed, and the next round counts its death."""
        now = time.monotonic()
        due = [
            w for w in self.watches if w.liveness and w.state == "running" and not w.killed_for and now >= w.probe_at
        ]
        if not due:
            return
        with ThreadPoolExecutor(len(due)) as pool:
            answers = list(pool.map(lambda w: w.component.health(w.name), due))
        now = time.monotonic()
        for w, (state, gc_s) in zip(due, answers):
            w.probe_at = now + self.policy.probe_every
            w.liveness.seen(now, state, gc_s, procs.cpu_seconds(w.name) or 0.0)
            reason = w.liveness.reason(now)
            if reason:
                log(f"--> {w.name} (pid {w.pid}) is alive but not working: {reason}; killing its process group")
                w.killed_for = reason
                procs.kill(w.pid)

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
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    policy = Policy.from_env()
    supervisor = Supervisor(supervised.COMPONENTS, policy)
    log(f"--> supervising {', '.join(w.name for w in supervisor.watches)} every {POLL_S:g} s")
    if policy != Policy():
        log(f"    {policy}")
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
