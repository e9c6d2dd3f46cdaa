"""./sanlens on a second, isolated stack: bad input ends with a one-line error saying what to do, leaving no
half-started processes. (`up` and `down` are checked on the tests' stack itself: conftest.py.)"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from sanlensctl import config, procs
from tests.support import sanlens, stack_pids


@pytest.fixture
def isolated(tmp_path):
    """A second, empty stack: its own run folder and ports, so the tests' main stack is untouched."""
    env = config.isolated_env(tmp_path / "run")
    yield env
    sanlens("down", env=env)


def no_stack_process_alive(run: Path) -> bool:
    return not any(procs.alive(pid) for pid in stack_pids(run))


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
    assert "did you mean" not in out.stderr


def test_a_mistyped_subcommand_is_named_with_the_one_meant():
    out = sanlens("stauts")
    assert_one_line_error(out, "unknown command 'stauts': did you mean 'status'?")


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
