"""The local stack's lifecycle: up (in dependency order, health-checked, the supervisor last), status, down
(by PID, the supervisor first: it restarts a process that dies, see supervisor.py)."""

from __future__ import annotations

import shutil
import sys
import time

from sanlensctl import config, install, migrate, procs, supervised, supervisor, topics
from sanlensctl.components import alertmanager, clickhouse, flink, kafka
from sanlensctl.errors import SanlensError
from slo import definitions

# start order; stopped in reverse
COMPONENTS = [*supervised.COMPONENTS, supervisor]
# Flink starts a mini-cluster JVM per job, all at once: on 2 cores beside a running stack that took over 120 s.
STARTUP_TIMEOUT = {
    "clickhouse": 60,
    "kafka": 60,
    "flink": config.FLINK_START_TIMEOUT_S,
    "loader": 60,
    "telegraf": 60,
    "inbox": 30,
    "alertmanager": 30,
    "notifier": 60,
    "supervisor": 30,
}


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def pid(component) -> int | None:
    return next((p for p in map(procs.pid_of, component.PROCESSES) if p), None)


def _after_start(component) -> None:
    if component is clickhouse:
        applied = migrate.apply(quiet=True)
        if applied:
            say(f"    migrations applied: {', '.join(applied)}")
    if component is kafka:
        created = topics.ensure()
        if created:
            say(f"    topics created: {', '.join(created)}")


def up() -> dict:
    try:
        definitions.load()  # a bad SLO file stops the stack before anything starts
    except definitions.SloFileError as exc:
        raise SanlensError(str(exc)) from None
    install.everything()
    config.RUN.mkdir(parents=True, exist_ok=True)
    config.RUN.chmod(0o700)  # the data, logs and a job's Kafka password in its blobs: the user's alone (SANLENS_RUN)
    started = []
    try:
        for component in COMPONENTS:
            if pid(component):
                say(f"--> {component.NAME} already running (pid {pid(component)})")
                _after_start(component)
                continue
            t0 = time.monotonic()
            say(f"--> starting {component.NAME}")
            component.start()
            started.append(component)
            last = {}
            try:
                check = getattr(component, "ready", component.probe)  # a component may say healthy more cheaply
                procs.wait_for(
                    lambda check=check, seen=last: seen.update(check()) or seen["healthy"],
                    STARTUP_TIMEOUT[component.NAME],
                    component.NAME,
                    component.PROCESSES,
                    getattr(component, "why", None),  # a Flink job's last exception
                )
            except SanlensError as exc:
                hint = ""
                if component is flink and config.ANALYTICS_NICE > 0:
                    hint = (
                        f"; the analytics jobs run at nice {config.ANALYTICS_NICE} and start last on a busy machine: "
                        "SANLENS_FLINK_START_TIMEOUT_S=600 waits longer, SANLENS_ANALYTICS_NICE=0 puts them level"
                    )
                raise SanlensError(f"{exc}; last seen: {last.get('detail', 'no answer')}{hint}") from None
            _after_start(component)
            say(f"    {component.NAME} healthy in {time.monotonic() - t0:.1f} s")
    except BaseException:
        for component in reversed(started):  # leave nothing half-started behind
            procs.stop_all(component.PROCESSES, timeout=10)
        raise
    return settled_status({c.NAME for c in started})


def settled_status(found_healthy: set[str], within_s: float = 60) -> dict:
    """The status once every component answers healthy, or the last one after `within_s`. On a loaded machine a
    job's JVM at nice 19, busy with its first records, may miss a probe's timeout just after `up` found it healthy
    (`found_healthy`, its components): while each of its jobs answers RUNNING or does not answer, it stays healthy."""
    deadline = time.monotonic() + within_s
    while True:
        report = status()
        for component in COMPONENTS:
            c = report[component.NAME]
            if not c["healthy"] and component.NAME in found_healthy and _only_slow_to_answer(component, c):
                c["healthy"] = True
        if all(c["healthy"] for c in report.values()) or time.monotonic() > deadline:
            return report
        time.sleep(2)


def _only_slow_to_answer(component, entry: dict) -> bool:
    """Every process of `component` runs, unsupervised or running, and each of its jobs answers RUNNING or not at
    all."""
    jobs = entry.get("jobs", {}).values()
    return (
        bool(jobs)
        and all(procs.pid_of(name) for name in component.PROCESSES)
        and entry.get("supervision") in (None, "running")
        and all(j["state"] in ("RUNNING", "no answer") for j in jobs)
    )


def running() -> bool:
    return any(pid(component) for component in COMPONENTS)


def status() -> dict:
    report = {}
    for component in COMPONENTS:
        running = pid(component)
        entry = {"healthy": False, "pid": running, "port": component.PORT, "version": None, "detail": "not running"}
        entry["memory_mib"] = round(sum(map(procs.resident_bytes, component.PROCESSES)) / 2**20)
        if running:
            try:
                entry.update(component.probe())
            except Exception as exc:  # an unhealthy component is reported, not raised
                why = (str(exc) or type(exc).__name__).splitlines()[0][:200]  # a timeout says nothing else
                entry.update(healthy=False, detail=f"running, probe failed: {why}")
        report[component.NAME] = entry
    supervisor.annotate(report)  # restarts, last exit; a component that keeps dying is unhealthy
    return report


def resident_bytes() -> int:
    """Resident memory of every process of the stack."""
    return sum(procs.resident_bytes(name) for component in COMPONENTS for name in component.PROCESSES)


def down(purge: bool = False) -> list[str]:
    stopped = []
    for component in reversed(COMPONENTS):  # a component's processes (the Flink jobs) stop side by side
        stopped += procs.stop_all(component.PROCESSES, timeout=30)
    if purge:
        shutil.rmtree(config.RUN, ignore_errors=True)
    return stopped


def endpoints() -> dict[str, str]:
    return {
        "kafka": config.KAFKA_BOOTSTRAP,
        "clickhouse": config.CLICKHOUSE_URL,
        "flink": f"http://127.0.0.1:{config.FLINK_REST_PORT}",
        "telegraf": f"tcp://127.0.0.1:{config.TELEGRAF_LISTENER_PORT} (influx line protocol)",
        "alertmanager": f"{alertmanager.URL} (notifies {config.ALERT_WEBHOOK_URL})",
        "logs": str(config.LOGS),
    }
