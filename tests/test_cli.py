"""./sanlens on a second, isolated stack: up/status/down leave nothing behind, and bad input ends with a
one-line error saying what to do, leaving no half-started processes."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from sanlensctl import config, procs, stack
from sanlensctl.components import flink
from tests.support import sanlens


@pytest.fixture
def isolated(tmp_path):
    """A second, empty stack: its own run folder and ports, so the tests' main stack is untouched."""
    env = config.isolated_env(tmp_path / "run")
    yield env
    sanlens("down", env=env)


def no_stack_process_alive(run: Path) -> bool:
    for pid_file in run.glob("*.pid"):
        pid = int(pid_file.read_text().split()[0])
        if Path(f"/proc/{pid}").exists():
            return False
    return True


def in_process_groups(pgids: list[int]) -> list[int]:
    """Live processes whose process group is one the stack started (the Flink JVM is a child, say)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in pgids and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def assert_one_line_error(out, *phrases: str) -> None:
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("sanlens: error: "), out.stderr
    errors = [line for line in lines if "error" in line.lower()]
    assert len(errors) == 1, out.stderr
    for phrase in phrases:
        assert phrase in lines[-1], lines[-1]


def test_unknown_subcommand():
    out = sanlens("launch")
    assert_one_line_error(out, "unknown command 'launch'", "./sanlens --help")


def test_port_already_taken(isolated):
    taken = int(isolated["SANLENS_KAFKA_PORT"])
    with socket.socket() as blocker:
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(("127.0.0.1", taken))
        blocker.listen()
        out = sanlens("up", env=isolated, timeout=300)
    assert_one_line_error(out, f"port {taken}", "SANLENS_KAFKA_PORT")
    assert no_stack_process_alive(Path(isolated["SANLENS_RUN"]))  # ClickHouse had started: it was stopped again


def test_missing_java(isolated, tmp_path):
    out = sanlens("up", env={**isolated, "JAVA_HOME": str(tmp_path / "no-jdk")})
    assert_one_line_error(out, "Java 17 is required", "JAVA_HOME")
    assert no_stack_process_alive(Path(isolated["SANLENS_RUN"]))


@pytest.mark.parametrize("component,junk", [("clickhouse", "store"), ("kafka", "logs/__cluster_metadata-0")])
def test_corrupted_state_folder(isolated, component, junk):
    run = Path(isolated["SANLENS_RUN"])
    (run / component / junk).mkdir(parents=True)
    (run / component / junk / "garbage").write_bytes(b"\x00not what was written\xff")
    out = sanlens("up", env=isolated, timeout=300)
    assert_one_line_error(out, "corrupted", "./sanlens down --purge")
    assert no_stack_process_alive(run)
    assert sanlens("down", "--purge", env=isolated).returncode == 0 and not run.exists()


def test_up_status_down_leave_no_process_and_no_port(isolated):
    run = Path(isolated["SANLENS_RUN"])
    out = sanlens("up", env=isolated, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(sanlens("status", "--json", env=isolated).stdout)
    assert all(
        report[c]["healthy"]
        for c in ("kafka", "clickhouse", "flink", "telegraf", "alertmanager", "notifier", "supervisor")
    ), report
    assert all(report[c]["restarts"] == 0 and report[c]["last_exit"] is None for c in report), report
    pids = [int(p.read_text().split()[0]) for p in run.glob("*.pid")]
    ports = [int(v) for k, v in isolated.items() if k.endswith("_PORT")]
    ports += [int(isolated["SANLENS_FLINK_REST_PORT"]) + i for i in range(1, len(flink.JOBS))]  # the other jobs' REST
    assert report["kafka"]["port"] == int(isolated["SANLENS_KAFKA_PORT"])
    assert report["alertmanager"]["port"] == int(isolated["SANLENS_ALERTMANAGER_PORT"])
    expected = sum(len(component.PROCESSES) for component in stack.COMPONENTS)  # one per Flink job
    assert len(pids) == expected == 7 + len(flink.JOBS) and all(procs.alive(p) for p in pids)  # and the supervisor
    again = sanlens("up", env=isolated, timeout=120)  # idempotent: nothing new started
    assert again.returncode == 0 and "already running" in again.stderr
    assert sanlens("down", env=isolated).returncode == 0
    assert not any(procs.alive(p) for p in pids)
    assert not in_process_groups(pids), "children of the stack outlived it"
    assert not any(procs.port_open(p) for p in ports)
    assert not list(run.glob("*.pid"))
