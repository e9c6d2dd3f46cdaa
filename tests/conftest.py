"""Shared fixtures: the real local stack, and helpers to start extra real processes for a test."""
from __future__ import annotations

import json
import os
import types
import uuid
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sanlensctl import config, db  # noqa: E402


def sanlens(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "sanlens"), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=ROOT)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture(scope="session")
def stack():
    """The tests' own stack, really running: `./sanlens test` points SANLENS_RUN and the ports at a run
    folder of the tests (config.TEST_RUN), never at the user's stack. It starts empty, is stopped at the
    end, and its data is deleted unless `./sanlens test --keep`."""
    assert config.RUN.name.endswith("-test"), "run the tests with ./sanlens test: they need a stack of their own"
    sanlens("down", "--purge")                      # whatever an earlier session left behind
    out = sanlens("up", timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    yield json.loads(sanlens("status", "--json").stdout)
    sanlens("down", *([] if os.environ.get("SANLENS_TEST_KEEP") == "1" else ["--purge"]))


@pytest.fixture(scope="session")
def ch(stack):
    return db.client()


class EmbeddedServer:
    """An extra embedded ClickHouse server process on its own port and data folder."""

    def __init__(self, path: Path, port: int | None = None, extra: list[str] | None = None):
        self.path, self.port, self.extra = path, port or free_port(), extra or []
        self.proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "EmbeddedServer":
        argv = [sys.executable, str(ROOT / "clickhouse" / "embedded" / "server.py"), "--path", str(self.path),
                "--port", str(self.port), *self.extra]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.proc.stdout.readline()  # the server prints one line once it listens
        return self

    def client(self, **kwargs):
        return db.client(self.url, **kwargs)

    def stop(self, kill: bool = False) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
            self.proc.wait(30)


@pytest.fixture
def embedded(tmp_path):
    server = EmbeddedServer(tmp_path / "ch").start()
    yield server
    server.stop()


ROLLOUT = """
name: rollout-{id}
seed: 5
interval_s: 60
duration_s: 10800
customers:
  - name: c-{id}
    sites:
      - name: s-{id}
        switches: [{{name: {id}-sw, ports: 64}}]
        arrays: [{{count: 12, name: "{id}-af{{i:02d}}", model: M-{id}, media: ssd, firmware: 3.1.3}}]
        hosts: [{{per_array: 1, name: "{{array}}-sql{{j}}", workload: tpce, iops: 3000}}]
events:
  - {{type: firmware_upgrade, at: 3900, arrays: "{id}-*", to: 3.2.1, share: 0.5, waves: 2, every: 1800}}
"""


@pytest.fixture(scope="session")
def rollout(stack, ch, tmp_path_factory):
    """A 12-array firmware rollout backfilled through the whole pipeline once per session (Kafka ->
    normalize -> histograms -> loader -> rollups), with the dbt marts built: over 3 h, 6 arrays move
    from 3.1.3 to 3.2.1 in two waves inside the second hour (a whole hour of data before and after). Its model name, array names and time range are unique to the session."""
    from ingest.simulator import scenario as scenario_file
    from ingest.simulator.run import Run

    run_id = f"r{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("rollout")
    (folder / "rollout.yaml").write_text(ROLLOUT.format(id=run_id))
    s = scenario_file.load(folder / "rollout.yaml")
    run = Run(s, folder / "truth", config.KAFKA_BOOTSTRAP, backfill=True)
    run.backfill()
    run.close()
    truth = [json.loads(line) for line in (folder / "truth" / "histograms.jsonl").read_text().splitlines()]
    total, arrays = sum(sum(t["counts"]) for t in truth), list(s.arrays)
    for table in ("service_time_hist_10s", "service_time_hist_array_1h"):     # loaded, then rolled up (last level)
        wait_until(lambda: ch.command(f"SELECT sum(ios) FROM sanlens.{table} FINAL WHERE array IN {{a:Array(String)}}",
                                      parameters={"a": arrays}) == total, 300, f"{total} I/Os in {table}")
    out = sanlens("dbt", "build")
    assert out.returncode == 0, out.stdout[-3000:]
    start, end = ch.query("SELECT min(window_start), max(window_start) FROM sanlens.service_time_hist_10s "
                          "WHERE array IN {a:Array(String)}", parameters={"a": arrays}).result_rows[0]
    return types.SimpleNamespace(id=run_id, model=f"M-{run_id}", customer=f"c-{run_id}", arrays=arrays,
                                 truth=truth, start=start, end=end, folder=folder)
