"""Where things live and which ports they use. Every value can be overridden from the environment."""

from __future__ import annotations

import contextlib
import os
import random
import socket
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
STATE = Path(os.environ.get("SANLENS_STATE", ROOT / ".sanlens"))
VENV = STATE / "venv"
DBT_VENV = STATE / "dbt-venv"
LIB = STATE / "lib"
BIN = STATE / "bin"
RUN = Path(os.environ.get("SANLENS_RUN", STATE / "run"))  # pid files, data folders, logs of the running stack
LOGS = RUN / "logs"
TMP = RUN / "tmp"


def _port(name: str, default: int) -> int:
    return int(os.environ.get(f"SANLENS_{name}_PORT", default))


PORT_NAMES = (
    "KAFKA",
    "KAFKA_CONTROLLER",
    "CLICKHOUSE",
    "FLINK_REST",
    "TELEGRAF_HEALTH",
    "TELEGRAF_LISTENER",
    "SIMULATOR",
    "ALERTMANAGER",
    "ALERT_WEBHOOK",
)
# The stack `./sanlens test` starts for the tests: never the user's (its own folder and ports).
TEST_RUN = Path(os.environ.get("SANLENS_TEST_RUN", RUN.parent / f"{RUN.name}-test"))


KAFKA_PORT = _port("KAFKA", 9092)
KAFKA_CONTROLLER_PORT = _port("KAFKA_CONTROLLER", 9193)
CLICKHOUSE_PORT = _port("CLICKHOUSE", 8123)
FLINK_REST_PORT = _port("FLINK_REST", 8081)
FLINK_REST_PORTS = 8  # kept free from FLINK_REST_PORT on in an isolated stack: one per Flink job
TELEGRAF_HEALTH_PORT = _port("TELEGRAF_HEALTH", 8086)
TELEGRAF_LISTENER_PORT = _port("TELEGRAF_LISTENER", 8094)
SIMULATOR_PORT = _port("SIMULATOR", 8095)
ALERTMANAGER_PORT = _port("ALERTMANAGER", 9093)
ALERT_WEBHOOK_PORT = _port("ALERT_WEBHOOK", 9097)  # the inbox: the receiver of Alertmanager's notifications

KAFKA_BOOTSTRAP = os.environ.get("SANLENS_KAFKA", f"127.0.0.1:{KAFKA_PORT}")
CLICKHOUSE_URL = os.environ.get("SANLENS_CLICKHOUSE_URL", f"http://127.0.0.1:{CLICKHOUSE_PORT}")
CLICKHOUSE_USER = os.environ.get("SANLENS_CLICKHOUSE_USER", "default")
CLICKHOUSE_PASSWORD = os.environ.get("SANLENS_CLICKHOUSE_PASSWORD", "")
DATABASE = "sanlens"
ALERTMANAGER_URL = os.environ.get("SANLENS_ALERTMANAGER_URL", f"http://127.0.0.1:{ALERTMANAGER_PORT}")
# where the inbox listens: the loopback in local mode, every interface in a container (docker-compose.yml)
INBOX_HOST = os.environ.get("SANLENS_INBOX_HOST", "127.0.0.1")
ALERT_WEBHOOK_URL = os.environ.get("SANLENS_ALERT_WEBHOOK_URL", f"http://127.0.0.1:{ALERT_WEBHOOK_PORT}/alerts")
INBOX_FILE = RUN / "inbox" / "notifications.jsonl"  # every notification the inbox (slo/inbox.py) received


_handed_out: set[int] = set()


def free_port() -> int:
    """A port on loopback that nothing listens on now (below the ephemeral range: see free_port_range)."""
    return free_port_range(1)


def free_port_range(count: int) -> int:
    """The first of `count` consecutive free ports, below the ephemeral range (32768 on): a port there, free now,
    may be the one a client's outgoing connection or a listener on port 0 (a Flink job's RPC and blob server)
    takes before the component meant for it binds it, which failed a test stack's start-up in CI. A port is
    handed out once per process, so two asked for in a row differ even before either is bound."""
    rng = random.Random()
    while True:
        first = rng.randrange(20000, 32000 - count)
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


# The analytics jobs (histograms, breakdown, tiering, burn_rates) get the CPU after the ingest path (Kafka,
# normalize, the loader, ClickHouse): at 19 on nice(1)'s scale, the four together about 3 % of it while the path
# has work to do (at 10, about a fifth), all of it otherwise. A 200-array backfill is queryable 2 to 2.5 times
# sooner that way; the analytics finish in about the same time as at equal priority, since they do the same work;
# at 1,000 arrays every 10 s the samples keep up (docs/benchmarks.md). 0 turns it off.
ANALYTICS_NICE = int(os.environ.get("SANLENS_ANALYTICS_NICE", "19"))


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
    return env


def jvm_opts(tmp: Path) -> str:
    return f"-XX:-UsePerfData -Djava.io.tmpdir={tmp}"


JVM_OPTS = jvm_opts(TMP)
# A Flink job's JVM used to spend half of its start-up CPU in the C2 compiler, on code that only runs while the
# job starts: the planner (Calcite, Janino, the code splitter's ANTLR parser), bytecode spinning, class loading.
# This HotSpot compiler directive leaves those packages to C1: `./sanlens up` took 77 CPU-s and 41-46 s for the
# five jobs, now 57 CPU-s and 31-36 s. The code that runs per record is compiled by C2 as before (the 200-array
# backfill took 196 CPU-s, 215 before: docs/benchmarks.md).
FLINK_COMPILER_DIRECTIVES = ROOT / "sanlensctl" / "flink_compiler_directives.json"


def pyflink_jvm_args(tmp: Path, heap: str = "640m") -> str:
    """JVM_ARGS of PyFlink's JVMs (a job's mini-cluster, the gateway of a plan's test): heap, temp files in `tmp`."""
    return (
        f"-Xmx{heap} {jvm_opts(tmp)} -XX:+UnlockDiagnosticVMOptions"
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
            "SANLENS_CLICKHOUSE_PORT": str(urlsplit(CLICKHOUSE_URL).port or 8123),
            "SANLENS_CLICKHOUSE_USER": CLICKHOUSE_USER,
            "SANLENS_CLICKHOUSE_PASSWORD": CLICKHOUSE_PASSWORD,
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
