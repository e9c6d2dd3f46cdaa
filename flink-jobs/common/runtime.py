"""How every sanlens PyFlink job gets its TableEnvironment and runs until stopped.

Local mode runs each job on a mini-cluster inside its Python process; the same job file is submitted
to a JobManager with `flink run --python` in the docker-compose shape. Endpoints come from the
environment: SANLENS_KAFKA (bootstrap servers), SANLENS_LIB (connector jars, the jobs' Java functions),
SANLENS_RUN (state).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from pyflink.common import Configuration
from pyflink.table import EnvironmentSettings, TableEnvironment


def arguments(description: str, extra: list[tuple[tuple, dict]] = (), parallelism: int = 2) -> argparse.Namespace:
    """The options every job has, plus the job's own `extra` (argparse add_argument args, kwargs)."""
    ap = argparse.ArgumentParser(description=description)
    for flags, kwargs in extra:
        ap.add_argument(*flags, **kwargs)
    ap.add_argument("--kafka", default=os.environ.get("SANLENS_KAFKA", "127.0.0.1:9092"))
    ap.add_argument("--rest-port", type=int, default=int(os.environ.get("SANLENS_FLINK_REST_PORT", 8081)))
    ap.add_argument("--parallelism", type=int, default=parallelism, help=f"subtasks per operator ({parallelism})")
    ap.add_argument("--group", help="Kafka consumer group (default: the job's name)")
    ap.add_argument(
        "--bounded", action="store_true", help="stop at the latest offsets seen at start (tests, backfills)"
    )
    ap.add_argument("--from-earliest", action="store_true", help="read from the earliest offsets, not the group's")
    return ap.parse_args()


def state_dir(job: str) -> Path:
    return Path(os.environ.get("SANLENS_RUN", Path.cwd() / ".sanlens" / "run")) / "flink" / job


def table_env(job: str, args: argparse.Namespace) -> TableEnvironment:
    state = state_dir(job)
    tmp = state / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    lib = Path(os.environ.get("SANLENS_LIB", ".sanlens/lib"))
    jars = sorted(lib.glob("flink/*.jar")) + sorted(lib.glob("jobs/*.jar"))  # connectors; the jobs' Java functions
    conf = Configuration()
    for key, value in {
        "pipeline.name": f"sanlens-{job}",
        "pipeline.jars": ";".join(p.resolve().as_uri() for p in jars),
        "parallelism.default": str(args.parallelism),
        "rest.address": "127.0.0.1",
        "rest.bind-address": "127.0.0.1",
        "rest.port": str(args.rest_port),
        "io.tmp.dirs": str(tmp),
        "web.tmpdir": str(tmp),
        "web.upload.dir": str(tmp),
        "python.executable": sys.executable,
        "execution.checkpointing.interval": "10 s",
        "execution.checkpointing.dir": (state / "checkpoints").resolve().as_uri(),
        "table.exec.source.idle-timeout": "5 s",
        "table.local-time-zone": "UTC",
        # SQL operators never hold on to a row they passed on, so chained operators may hand rows over
        # without copying each one (the copies were the largest single cost in the normalize job's profile)
        "pipeline.object-reuse": "true",
    }.items():
        conf.set_string(key, value)
    return TableEnvironment.create(
        EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(conf).build()
    )


def kafka_options(args: argparse.Namespace, job: str, topic: str) -> str:
    """WITH options of a Kafka source table, shared by every job."""
    startup = "earliest-offset" if args.from_earliest else "group-offsets"
    opts = {
        "connector": "kafka",
        "topic": topic,
        "properties.bootstrap.servers": args.kafka,
        "properties.group.id": args.group or f"sanlens-{job}",
        "scan.startup.mode": startup,
        "properties.auto.offset.reset": "earliest",
    }
    if args.bounded:
        opts["scan.bounded.mode"] = "latest-offset"
    return ", ".join(f"'{k}' = '{v}'" for k, v in opts.items())


def run_until_stopped(result) -> None:
    """Block on the job; SIGTERM/SIGINT cancels it (in local mode the job dies with this process)."""
    client = result.get_job_client()

    def cancel(*_):
        if client is not None:
            threading.Thread(target=lambda: client.cancel().result(), daemon=True).start()
        os._exit(0) if client is None else None

    signal.signal(signal.SIGTERM, cancel)
    signal.signal(signal.SIGINT, cancel)
    print(f"job {client.get_job_id() if client else '?'} running", flush=True)
    try:
        result.wait()
    except Exception as exc:  # cancellation surfaces as an exception from wait()
        if "cancel" not in str(exc).lower():
            raise
