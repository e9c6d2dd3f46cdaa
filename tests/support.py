"""What the tests and the benchmarks share: running ./sanlens, free ports, waiting on a condition, the
jobs' Java functions in a JVM, extra embedded ClickHouse servers and a real Alertmanager with a webhook
receiver. The fixtures are in conftest.py."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from confluent_kafka import Producer

from sanlensctl import config, db, install
from sanlensctl.config import free_port

ROOT = config.ROOT


def sanlens(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ROOT / "sanlens"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


def stack_pids(run: Path) -> list[int]:
    """The stack's processes, from its pid files."""
    return [int(p.read_text().split()[0]) for p in run.glob("*.pid")]


def stack_ports(env) -> list[int]:
    """Every port of a stack with this environment (config.isolated_env): its SANLENS_*_PORT and the other
    Flink jobs' REST ports after the first."""
    from sanlensctl.components import flink

    ports = [int(env[f"SANLENS_{name}_PORT"]) for name in config.PORT_NAMES]
    return ports + [int(env["SANLENS_FLINK_REST_PORT"]) + i for i in range(1, len(flink.JOBS))]


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


def assert_nothing_left(run: Path, pids: list[int], ports: list[int]) -> None:
    """After `./sanlens down`: no process of the stack, nor a child of one, alive; no port open; no pid file."""
    from sanlensctl import procs

    assert pids and not [p for p in pids if procs.alive(p)], pids
    assert not in_process_groups(pids), "children of the stack outlived it"
    assert not [p for p in ports if procs.port_open(p)], ports
    assert not list(run.glob("*.pid"))


def java_functions():
    """The package io.sanlens of the jobs' Java functions (.sanlens/lib/jobs), in PyFlink's py4j JVM: pure
    logic called directly, without a job. Public fields are read with py4j's get_field."""
    from pyflink.java_gateway import get_gateway
    from pyflink.util.java_utils import add_jars_to_context_class_loader

    add_jars_to_context_class_loader([install.function_jar().as_uri()])
    return get_gateway().jvm.io.sanlens


def job_plan(monkeypatch, name: str, section: str = "") -> str:
    """EXPLAIN of the statements of flink-jobs/`name` with its default arguments, from Flink's own planner (no
    stack needed); only the part after the heading `section` (e.g. "Optimized Execution Plan") if given."""
    import importlib

    from flink_jobs.common import runtime

    job = importlib.import_module(f"flink_jobs.{name}.job")
    monkeypatch.setattr(sys, "argv", ["job.py", "--rest-port", str(free_port())])
    args = runtime.arguments(job.__doc__, job.OPTIONS)
    plan = job.statements(runtime.table_env(f"{name}-plan", args), args).explain()
    return plan.split(f"== {section} ==")[-1] if section else plan


def flink_job(job: str, source: str, prefix: str, *extra: str, bounded: bool = True, parallelism: int = 1):
    """A job of flink-jobs/ on topics of its own, as (argv, env): it reads `source` from the earliest offset
    (up to the offsets at start when `bounded`), writes PREFIX.* and commits as consumer group PREFIX."""
    argv = [
        sys.executable,
        str(ROOT / "flink-jobs" / job / "job.py"),
        "--input",
        source,
        "--output-prefix",
        prefix,
        *(["--bounded"] if bounded else []),
        "--from-earliest",
        "--group",
        prefix,
        "--rest-port",
        str(free_port()),
        "--parallelism",
        str(parallelism),
        *extra,
    ]
    return argv, dict(config.tool_env(), SANLENS_RUN=str(config.RUN / f"job-{prefix}"))


def wait_until(check, timeout: float, what: str):
    """`check()` until it returns a truthy value: every half second at first, every 2 s after half a minute. A
    check asks ClickHouse, Kafka or `./sanlens status` (a CPU-second each), and a whole run of the suite keeps both
    cores busy: what a long wait polls less, the stacks it waits on get."""
    began = time.monotonic()
    while True:
        result = check()
        if result:
            return result
        now = time.monotonic()
        if now >= began + timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(min(2.0, 0.5 + (now - began) / 20, began + timeout - now))


def settle(read, timeout: float, quiet: float = 30):
    """`read()` until it says done (its first item) or its figures stopped changing for `quiet` s: then its last
    answer, for the assertions to say what is missing."""
    deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
    while True:
        done, figures = read()
        if done or time.monotonic() > deadline or time.monotonic() - since > quiet:
            return figures
        if figures != last:
            last, since = figures, time.monotonic()
        time.sleep(1)


def wait_for_job(job: str, inputs: list[str], outputs: list[str], timeout: float = 600) -> None:
    """Until the Flink job `job` has read everything on `inputs` so far and the loader has loaded what it wrote
    for them on `outputs`. The job commits its input offsets and its output transactions at the same checkpoint,
    in no set order: what it wrote is waited for by the log's end, transactions still open included."""
    from sanlensctl import offsets
    from sanlensctl.components import flink, loader

    group = flink.group(job)
    read = offsets.position(group, inputs).end
    wait_until(lambda: offsets.position(group, inputs).committed >= read, timeout, f"the {job} job")
    sent = offsets.log_ends(outputs)
    wait_until(lambda: offsets.stable_past(sent), 120, f"the {job} job's transactions")
    written = offsets.position(loader.GROUP, outputs).end
    wait_until(lambda: offsets.position(loader.GROUP, outputs).committed >= written, 300, "the loader")


def authorized(url: str, data: bytes | None = None, user: str | None = None) -> urllib.request.Request:
    """A raw HTTP request to a ClickHouse of the tests with a user's credentials (the admin's by default), as every
    client of the stack sends them (clickhouse/client.py)."""
    import base64

    from clickhouse.client import credentials

    name, password = credentials(url, user)
    request = urllib.request.Request(url, data=data)
    request.add_header("Authorization", "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode())
    return request


class EmbeddedServer:
    """An extra embedded ClickHouse server process on its own port and data folder, its users' passwords those of
    the local stack (ingest/settings.py's CLICKHOUSE_PASSWORDS)."""

    def __init__(self, path: Path, port: int | None = None, extra: list[str] | None = None):
        self.path, self.port, self.extra = path, port or free_port(), extra or []
        self.proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> EmbeddedServer:
        argv = [
            sys.executable,
            str(ROOT / "clickhouse" / "embedded" / "server.py"),
            "--path",
            str(self.path),
            "--port",
            str(self.port),
            *self.extra,
        ]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.proc.stdout.readline()  # the server prints one line once it listens
        return self

    def client(self, **kwargs):
        return db.client(self.url, **kwargs)

    def stop(self, kill: bool = False) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
            self.proc.wait(30)


@contextlib.contextmanager
def polled_by_telegraf(run, name: str):
    """A simulator Run's arrays and switches served for the stack's real Telegraf to poll while the block runs
    (a pollers file `name`.conf of its own; the block gets the Endpoints); Telegraf reloaded after, which
    flushes what it holds."""
    from ingest.simulator import __main__ as simulator
    from ingest.simulator.endpoints import Endpoints
    from sanlensctl.components import telegraf

    endpoints = Endpoints(run.fleet, run.truth, run.lock, free_port()).start()
    pollers = telegraf.POLLERS / f"{name}.conf"
    pollers.write_text(simulator.telegraf_pollers(run.s, endpoints.base_url, run.s.interval_s / run.speed))
    try:
        telegraf.reload()
        yield endpoints
        time.sleep(3)  # the last poll and flush
    finally:
        pollers.unlink()
        telegraf.reload()
        endpoints.stop()


def play_through_telegraf(run, name: str) -> None:
    """A simulator Run played in (accelerated) real time through the stack's real Telegraf: the arrays and
    switches polled, the hosts' metrics into its socket listener."""
    with polled_by_telegraf(run, name):
        run.realtime(("127.0.0.1", config.TELEGRAF_LISTENER_PORT))
    run.close()


class TcpForward:
    """Connections to 127.0.0.1:`port` forwarded to 127.0.0.1:`target` (a thread per direction), so that a
    test decides when a client (a Telegraf bootstrapping from Kafka) can reach it."""

    def __init__(self, port: int, target: int):
        class Pipe(socketserver.BaseRequestHandler):
            def handle(self):
                with socket.create_connection(("127.0.0.1", target)) as upstream:
                    back = threading.Thread(target=self.copy, args=(upstream, self.request), daemon=True)
                    back.start()
                    self.copy(self.request, upstream)
                    back.join()

            @staticmethod
            def copy(src, dst):
                with contextlib.suppress(OSError):
                    while data := src.recv(65536):
                        dst.sendall(data)
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address, daemon_threads = True, True

        self.server = Server(("127.0.0.1", port), Pipe)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class WebhookReceiver:
    """An HTTP receiver of Alertmanager's webhook notifications on `port` (a free one by default): a thread that
    keeps every notification's JSON with the wall time it arrived in `received`."""

    def __init__(self, port: int = 0):
        received = self.received = []

        class Receiver(BaseHTTPRequestHandler):
            def do_POST(self):
                received.append((json.loads(self.rfile.read(int(self.headers["Content-Length"]))), time.time()))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def notifications(self) -> list[dict]:
        return [n for n, _ in self.received]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/alerts"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Alertmanager:
    """The real Alertmanager (.sanlens/bin, built on first use) on a free port, with slo/'s config rendered to
    notify a webhook receiver of its own (`notifications`: every notification's JSON)."""

    def __init__(self, path: Path):
        self.path, self.port = path, free_port()
        self.proc = self.receiver = self.log = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def notifications(self) -> list[dict]:
        return self.receiver.notifications

    def start(self) -> Alertmanager:
        from sanlensctl.components import alertmanager

        if self.receiver is None:
            self.receiver = WebhookReceiver()
        install.alertmanager()
        config_file = alertmanager.render(self.path / "alertmanager.yml", self.receiver.url)  # creates the folder
        self.log = open(self.path / "alertmanager.log", "ab")
        self.proc = subprocess.Popen(
            alertmanager.argv(config_file, self.path, self.port), stdout=self.log, stderr=subprocess.STDOUT
        )
        wait_until(lambda: self.proc.poll() is not None or _answers(f"{self.url}/api/v2/status"), 30, "Alertmanager")
        assert self.proc.poll() is None, (self.path / "alertmanager.log").read_text()
        return self

    def kill(self) -> None:
        """Alertmanager gone (its receiver stays): start() brings it back on the same port and data."""
        self._end(kill=True)

    def stop(self) -> None:
        self._end(kill=False)
        if self.receiver:
            self.receiver.stop()

    def _end(self, kill: bool) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
            self.proc.wait(30)
        if self.log:
            self.log.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def printed_tables(text: str) -> dict[str, list[dict]]:
    """The tables a command printed (sanlensctl.output.print_rows), each under the line above it, as rows of cells by
    column: cells are apart by two spaces or more, none is empty."""
    lines = text.splitlines()
    tables = {}
    for i in range(1, len(lines) - 1):
        if not lines[i + 1].startswith("-") or set(lines[i + 1]) - {"-", " "}:
            continue
        head = re.split(r"\s{2,}", lines[i].strip())
        body = []
        for row in lines[i + 2 :]:
            if re.fullmatch(r"\(\d+ rows?\)", row):
                break
            body.append(dict(zip(head, re.split(r"\s{2,}", row.strip()))))
        tables[lines[i - 1]] = body
    return tables


def copier() -> Producer:
    """A producer for copying a topic's messages as fast as the broker takes them."""
    return Producer(
        {
            **config.kafka_client(),
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 1_000_000,
            "log_level": 0,
        }
    )
