"""Where things live and which ports they use: the stack's settings (ingest/settings.py, each overridable from the
environment), and what the command line adds to them: its tools' folders, test stacks, the processes' environment."""

from __future__ import annotations

import contextlib
import os
import random
import socket
from pathlib import Path
from urllib.parse import urlsplit

from ingest import settings
from ingest.settings import (  # noqa: F401  (the command line's names for the settings)
    ALERT_WEBHOOK_URL,
    ALERTMANAGER_URL,
    CLICKHOUSE_PASSWORD,
    CLICKHOUSE_URL,
    CLICKHOUSE_USER,
    INBOX_FILE,
    INBOX_HOST,
    KAFKA_BOOTSTRAP,
    LIB,
    ROOT,
    RUN,
    STATE,
    kafka_client,
)
from sanlensctl.errors import SanlensError

VENV = STATE / "venv"
DBT_VENV = STATE / "dbt-venv"
BIN = STATE / "bin"
LOGS = RUN / "logs"
TMP = RUN / "tmp"

PORT_NAMES = tuple(settings.PORTS)
# The stack `./sanlens test` starts for the tests: never the user's (its own folder and ports).
TEST_RUN = Path(os.environ.get("SANLENS_TEST_RUN", RUN.parent / f"{RUN.name}-test"))

KAFKA_PORT = settings.port("KAFKA")
KAFKA_CONTROLLER_PORT = settings.port("KAFKA_CONTROLLER")
CLICKHOUSE_PORT = settings.port("CLICKHOUSE")
FLINK_REST_PORT = settings.port("FLINK_REST")
FLINK_REST_PORTS = 8  # kept free from FLINK_REST_PORT on in an isolated stack: one per Flink job
TELEGRAF_HEALTH_PORT = settings.port("TELEGRAF_HEALTH")
TELEGRAF_LISTENER_PORT = settings.port("TELEGRAF_LISTENER")
SIMULATOR_PORT = settings.port("SIMULATOR")
ALERTMANAGER_PORT = settings.port("ALERTMANAGER")
ALERT_WEBHOOK_PORT = settings.port("ALERT_WEBHOOK")
DATABASE = "sanlens"


# Where free_port_range looks: `./sanlens test` gives each of its pytest processes a slice of its own
# (sanlensctl/suite.py), so that one's free port is never a port of another's stack that is down a moment.
FREE_PORTS = tuple(map(int, os.environ.get("SANLENS_FREE_PORTS", "20000-32000").split("-")))
# this process's own stack's ports are never free: they may be unbound a moment, while it restarts
_handed_out: set[int] = {settings.port(name) for name in PORT_NAMES} | set(
    range(FLINK_REST_PORT, FLINK_REST_PORT + FLINK_REST_PORTS)
)


def port_slices(count: int) -> list[tuple[int, int]]:
    """FREE_PORTS in `count` equal slices: first port, end."""
    first, end = FREE_PORTS
    size = (end - first) // count
    return [(first + i * size, first + (i + 1) * size) for i in range(count)]


def free_port() -> int:
    """A port on loopback that nothing listens on now (below the ephemeral range: see free_port_range)."""
    return free_port_range(1)


def free_port_range(count: int) -> int:
    """The first of `count` consecutive free ports, below the ephemeral range (32768 on): a port there, free now,
    may be the one a client's outgoing connection or a listener on port 0 (a Flink job's RPC and blob server)
    takes before the component meant for it binds it, which failed a test stack's start-up in CI. A port is
    handed out once per process, so two asked for in a row differ even before either is bound."""
    rng = random.Random()
    for _ in range(10_000):
        first = rng.randrange(FREE_PORTS[0], FREE_PORTS[1] - count + 1)
        if _handed_out.intersection(range(first, first + count)):
            continue
        try:
            with contextlib.ExitStack() as held:
                for port in range(first, first + count):
                    held.enter_context(socket.socket()).bind(("127.0.0.1", port))
            _handed_out.update(range(first, first + count))
            return first
        except OSError:
            continue
    raise SanlensError(f"no free port: {count} in a row wanted in {FREE_PORTS[0]}-{FREE_PORTS[1]} (SANLENS_FREE_PORTS)")


# The analytics jobs (histograms, breakdown, tiering, burn_rates) get the CPU after the ingest path (Kafka,
# normalize, the loader, ClickHouse): at 19 on nice(1)'s scale, the four together about 3 % of it while the path
# has work to do (at 10, about a fifth), all of it otherwise. A 200-array backfill is queryable 2 to 2.5 times
# sooner that way; the analytics finish in about the same time as at equal priority, since they do the same work;
# at 1,000 arrays every 10 s the samples keep up (docs/benchmarks.md). 0 turns it off.
ANALYTICS_NICE = int(os.environ.get("SANLENS_ANALYTICS_NICE", "19"))
# How long `up` waits for the five Flink jobs: on a busy machine the analytics jobs, at ANALYTICS_NICE, start last.
FLINK_START_TIMEOUT_S = int(os.environ.get("SANLENS_FLINK_START_TIMEOUT_S", "300"))


def isolated_env(run: Path) -> dict[str, str]:
    """The environment of a stack of its own: run folder `run` and free ports (nothing else changes). The Flink
    jobs serve their REST APIs on consecutive ports from SANLENS_FLINK_REST_PORT."""
    env = {"SANLENS_RUN": str(run)}
    port = free_port_range(len(PORT_NAMES) - 1 + FLINK_REST_PORTS)
    for name in PORT_NAMES:
        env[f"SANLENS_{name}_PORT"] = str(port)
        port += FLINK_REST_PORTS if name == "FLINK_REST" else 1
    env["SANLENS_KAFKA"] = f"127.0.0.1:{env['SANLENS_KAFKA_PORT']}"
    env["SANLENS_CLICKHOUSE_URL"] = f"http://127.0.0.1:{env['SANLENS_CLICKHOUSE_PORT']}"
    env["SANLENS_ALERT_WEBHOOK_URL"] = f"http://127.0.0.1:{env['SANLENS_ALERT_WEBHOOK_PORT']}/alerts"
    env["SANLENS_ALERTMANAGER_URL"] = f"http://127.0.0.1:{env['SANLENS_ALERTMANAGER_PORT']}"
    return env


# Which of HotSpot's compilers the stack's JVMs (Kafka, the Flink jobs) use. "full": C1, then C2 for hot code, the
# fastest under load. "quick": C1 alone. A JVM then spends about a tenth of the CPU compiling: a stack's start and
# first minutes take a third less CPU, and a 3.5 M-sample burst drains in 87 s instead of 67 s (docs/benchmarks.md,
# "The JIT of the test stacks"). The test stacks run quick (`./sanlens test`), many of them on two cores.
JIT_MODES = {"full": "", "quick": "-XX:TieredStopAtLevel=1"}
JIT = os.environ.get("SANLENS_JIT", "full")
if JIT not in JIT_MODES:
    raise SanlensError(f"SANLENS_JIT={JIT!r}: one of {', '.join(JIT_MODES)}")


def jvm_opts(tmp: Path, jit: str = JIT) -> str:
    return f"-XX:-UsePerfData -Djava.io.tmpdir={tmp} {JIT_MODES[jit]}".strip()


JVM_OPTS = jvm_opts(TMP)
# A Flink job's JVM used to spend half of its start-up CPU in the C2 compiler, on code that only runs while the
# job starts: the planner (Calcite, Janino, the code splitter's ANTLR parser), bytecode spinning, class loading.
# This HotSpot compiler directive leaves those packages to C1: `./sanlens up` took 77 CPU-s and 41-46 s for the
# five jobs, now 57 CPU-s and 31-36 s. The code that runs per record is compiled by C2 as before (the 200-array
# backfill took 196 CPU-s, 215 before: docs/benchmarks.md).
FLINK_COMPILER_DIRECTIVES = ROOT / "sanlensctl" / "flink_compiler_directives.json"


def pyflink_jvm_args(tmp: Path, heap: str = "640m", jit: str = JIT) -> str:
    """JVM_ARGS of PyFlink's JVMs (a job's mini-cluster, the gateway of a plan's test): heap, temp files in `tmp`."""
    return (
        f"-Xmx{heap} {jvm_opts(tmp, jit)} -XX:+UnlockDiagnosticVMOptions"
        f" -XX:CompilerDirectivesFile={FLINK_COMPILER_DIRECTIVES}"
    )


def tool_env() -> dict[str, str]:
    """The environment every process of the stack inherits: endpoints, and temp files kept in the project."""
    TMP.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(
        {
            "SANLENS_KAFKA": KAFKA_BOOTSTRAP,
            "SANLENS_CLICKHOUSE_URL": CLICKHOUSE_URL,
            "SANLENS_CLICKHOUSE_HOST": urlsplit(CLICKHOUSE_URL).hostname or "127.0.0.1",
            "SANLENS_CLICKHOUSE_PORT": str(urlsplit(CLICKHOUSE_URL).port or settings.PORTS["CLICKHOUSE"]),
            "SANLENS_CLICKHOUSE_USER": CLICKHOUSE_USER,
            # the user's password now (the passwords file is made when the stack's ClickHouse first starts)
            "SANLENS_CLICKHOUSE_PASSWORD": settings.clickhouse_password(CLICKHOUSE_USER),
            "SANLENS_LIB": str(LIB),
            "SANLENS_RUN": str(RUN),
            "TMPDIR": str(TMP),
            "PYTHONUNBUFFERED": "1",
            # JVMs the stack starts (PyFlink's mini-clusters, Maven) keep their temp files in the project.
            "JVM_ARGS": pyflink_jvm_args(TMP),
            "MAVEN_OPTS": JVM_OPTS,
        }
    )
    java_home = os.environ.get("JAVA_HOME") or _java_home()
    if java_home:
        env["JAVA_HOME"] = java_home
    return env


def _java_home() -> str | None:
    for candidate in ("/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/java-17-openjdk-arm64"):
        if Path(candidate, "bin", "java").exists():
            return candidate
    return None
