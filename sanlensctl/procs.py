"""Background processes of the local stack: started detached with a pid file and a log, stopped by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from sanlensctl import config
from sanlensctl.errors import SanlensError

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def pid_file(name: str) -> Path:
    return config.RUN / f"{name}.pid"


def log_file(name: str) -> Path:
    return config.LOGS / f"{name}.log"


def start(name: str, argv: list[str], env: dict[str, str], cwd: Path | None = None, nice: int = 0) -> int:
    """`argv` detached (a session and process group of its own), logging to its log file, at `nice` (nice(1)'s
    scale: above 0, the CPU goes to the processes at the default priority first)."""
    config.LOGS.mkdir(parents=True, exist_ok=True)
    with open(log_file(name), "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd or config.ROOT,
            start_new_session=True,
        )
    if nice:
        lower_priority(proc.pid, nice)
    pid_file(name).write_text(f"{proc.pid}\n{' '.join(argv)}\n")
    return proc.pid


def lower_priority(pid: int, nice: int) -> None:
    """`pid`, and the processes it starts from now on (a Flink job's JVM), at `nice`. Where the kernel groups
    each session for its scheduler (sched_autogroup), it weighs the session's group against the others by the
    group's own nice value, so the session of `pid` (start gives each process one) gets `nice` too."""
    os.setpriority(os.PRIO_PROCESS, pid, nice)
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))


def pid_of(name: str) -> int | None:
    """The PID from the pid file, if that process is still ours (same command line) and alive."""
    try:
        pid_text, cmd = pid_file(name).read_text().split("\n", 1)
        pid = int(pid_text)
        running = cmdline(pid)
    except (OSError, ValueError):
        return None
    if _zombie(pid) or running != cmd.strip():
        return None
    return pid


def cmdline(pid: int) -> str:
    """The process's command line, its arguments joined by spaces; empty in the moment a process execs."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()


def recorded_pid(name: str) -> int | None:
    """The PID the pid file names, whether that process is alive or not; None without a pid file."""
    try:
        return int(pid_file(name).read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def uptime(pid: int) -> float:
    """Seconds since the process started."""
    start_ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    boot_seconds = float(Path("/proc/uptime").read_text().split()[0])
    return boot_seconds - start_ticks / TICKS


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and not _zombie(pid)


def stop(name: str, timeout: float = 20.0) -> bool:
    """SIGTERM the process group, wait, SIGKILL after `timeout`. True if something was stopped."""
    return bool(stop_all([name], timeout))


def stop_all(names: list[str], timeout: float = 20.0) -> list[str]:
    """SIGTERM the process groups of `names` at once, wait for them, SIGKILL what is left after `timeout` (the
    whole group: also children that outlived their parent). The names that were running."""
    pids = {}
    for name in names:
        pid = pid_of(name)
        pid_file(name).unlink(missing_ok=True)
        if pid is not None:
            pids[name] = pid
            _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(pid) for pid in pids.values()):
        time.sleep(0.2)
    for pid in pids.values():
        _signal_group(pid, signal.SIGKILL)
    # a killed JVM at nice 19 on a busy machine takes seconds to exit, and holds its port until it has
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_group_alive(pid) for pid in pids.values()):
        time.sleep(0.2)
    return list(pids)


def _group_alive(pgid: int) -> bool:
    return any(fields[0] != "Z" for fields in _group(pgid))


def resident_bytes(name: str) -> int:
    """Resident memory of the process `name` and the rest of its process group (a Flink job's JVM): 0 if it is
    not running."""
    pid = pid_of(name)
    return sum(int(fields[21]) * PAGE_BYTES for fields in _group(pid)) if pid else 0  # rss, in pages


def cpu_seconds(name: str) -> float | None:
    """CPU time the process `name` and the rest of its process group have used so far: None if it is not running."""
    pid = pid_of(name)
    return group_cpu_seconds(pid) if pid else None


def group_cpu_seconds(pgid: int) -> float:
    """CPU time the processes of the process group `pgid` have used so far (those still running)."""
    return sum(int(fields[11]) + int(fields[12]) for fields in _group(pgid)) / TICKS  # utime, stime


def _group(pid: int):
    """The fields of /proc/PID/stat after the command's name (state, ppid, pgrp, ...) of each process in the
    process group `pid`."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pid:
                yield fields
        except (OSError, ValueError, IndexError):
            continue  # a process that ended meanwhile


def kill(pid: int) -> None:
    """SIGKILL the process group of `pid`, a live process of the stack (the supervisor ending a Flink job that is
    alive but not working: its process and its JVM). Its pid file stays: to the supervisor, a death."""
    _signal_group(pid, signal.SIGKILL)


def kill_leftovers(pid: int) -> None:
    """SIGKILL what is left of the process group of `pid`, a process that is gone: its children (a Flink job's
    JVM) would hold its port. Nothing is signalled while `pid` is alive: then the PID was reused."""
    if not alive(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def require_free(port: int, what: str, variable: str) -> None:
    if port_open(port):
        raise SanlensError(
            f"port {port} for {what} is already in use by another process: stop it, "
            f"or choose another port with {variable}=PORT"
        )


def wait_for(check, timeout: float, what: str, processes: list[str] = (), why=None):
    """Poll `check()` until it returns a truthy value; fail early if one of `processes` (by name) died, with its
    last words (`why`: as last_words)."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        for name in processes:
            pid = recorded_pid(name)
            if pid is not None and not alive(pid):
                said = last_words(name, why)
                raise SanlensError(
                    f"{name} exited during start-up: see {log_file(name)}" + (f" ({said})" if said else "")
                )
        try:
            result = check()
            if result:
                return result
        except Exception as exc:  # the probe's own failure is what we are waiting out
            last_error = exc
        time.sleep(0.5)
    logs = log_file(processes[0]) if len(processes) == 1 else config.LOGS
    probe = f" (the probe: {last_error})" if last_error else ""
    raise SanlensError(f"{what} not healthy after {timeout:.0f} s{probe}: see {logs}")


def last_words(name: str, why=None) -> str:
    """What the log of the process `name` says of its end: `why(name)` when its component reads it (a Flink job:
    the last exception of its run), else the log's last line."""
    lines = tail(log_file(name), 1)
    return ((why(name) if why else None) or (lines[0] if lines else ""))[:300]


def tail(log: Path, n: int) -> list[str]:
    """The last `n` non-empty lines of a log (read from its last 64 KiB)."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 65536))
            text = f.read().decode(errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-n:]
