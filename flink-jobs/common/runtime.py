"""How every sanlens PyFlink job gets its TableEnvironment and runs until stopped.

Local mode runs each job on a mini-cluster inside its Python process; the same job file is submitted
to a JobManager with `flink run --python` in the docker-compose shape. Endpoints come from the
environment: SANLENS_KAFKA (bootstrap servers; the job logs in as its own principal: ingest/kafka_access.py),
SANLENS_LIB (connector jars, the jobs' Java functions), SANLENS_RUN (state).

Exactly once, end to end: every Kafka sink writes in transactions that commit with the job's checkpoints,
every source reads committed data only, and a job started again (by the supervisor after a crash, or by
`./sanlens up` after `down`) resumes from its group's last retained checkpoint: its Kafka offsets and its
per-series state (the previous value of each cumulative counter) together, so a restart neither replays
an output twice nor costs a baseline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from pyflink.common import Configuration
from pyflink.table import EnvironmentSettings, TableEnvironment

from ingest import kafka_access, settings, topics

# The broker's transaction.max.timeout.ms (15 min): a transaction stays open from one checkpoint to the
# next, and Kafka's producer default (60 s) would abort it on the broker under a slow checkpoint.
TRANSACTION_TIMEOUT_MS = 900_000
STATE_BACKEND = "rocksdb"
# Submitted to a cluster (`flink run --python`, the docker-compose shape), which sets this for the job's process,
# rather than run on a mini-cluster of its own (local mode).
ON_CLUSTER = "PYFLINK_GATEWAY_PORT" in os.environ
# RocksDB's block cache and write buffers, shared by the job's slots (SANLENS_FLINK_MANAGED_MEMORY overrides): the
# breakdown's joins hold minutes of every path's parts, and at 128 MB their reads were half as fast (docs/benchmarks.md)
MANAGED_MEMORY = {"breakdown": "256m"}
DEFAULT_MANAGED_MEMORY = "128m"
# How RocksDB holds the state, measured on the breakdown's interval joins (tests/benchmarks/bench_breakdown.py, 60
# simulated minutes of 100 arrays): 28,000 samples/s with Flink's defaults, 120,000 with bloom filters and the
# options for large memtables and files below, and 256 MB of managed memory. Large write buffers keep a join's wait
# in the memtables, so the rows it looks up are mostly found there rather than in files on disk, and bloom filters
# answer the lookups of keys a join has not seen without reading a file. The joins' timers stay in RocksDB: on the
# heap (125,000 samples/s) they would grow it with every row waiting.
ROCKSDB = {
    "state.backend.rocksdb.use-bloom-filter": "true",
    "state.backend.rocksdb.predefined-options": "SPINNING_DISK_OPTIMIZED_HIGH_MEM",
}


def arguments(description: str, extra: list[tuple[tuple, dict]] = (), parallelism: int = 2) -> argparse.Namespace:
    """The options every job has, plus the job's own `extra` (argparse add_argument args, kwargs)."""
    ap = argparse.ArgumentParser(description=description)
    for flags, kwargs in extra:
        ap.add_argument(*flags, **kwargs)
    ap.add_argument("--kafka", default=settings.KAFKA_BOOTSTRAP)
    ap.add_argument("--rest-port", type=int, default=settings.port("FLINK_REST"))
    ap.add_argument("--parallelism", type=int, default=parallelism, help=f"subtasks per operator ({parallelism})")
    ap.add_argument("--group", help="Kafka consumer group (default: the job's name)")
    ap.add_argument(
        "--kafka-user",
        help="the Kafka principal to read and write as (default: the job's own, job-<name>: ingest/kafka_access.py; "
        "a test's or benchmark's copy with its own --group or --output-prefix runs as admin)",
    )
    ap.add_argument(
        "--bounded", action="store_true", help="stop at the latest offsets seen at start (tests, backfills)"
    )
    ap.add_argument("--from-earliest", action="store_true", help="read from the earliest offsets, not the group's")
    return ap.parse_args()


def state_dir(job: str) -> Path:
    return settings.RUN / "flink" / job


def group(args: argparse.Namespace, job: str) -> str:
    return args.group or f"sanlens-{job}"


def kafka_properties(args: argparse.Namespace, job: str) -> dict[str, str]:
    """The connector's `properties.*` to reach Kafka as the job's principal (settings.flink_kafka_properties)."""
    principal = getattr(args, "kafka_user", None) or (
        settings.KAFKA_ADMIN
        if args.group or getattr(args, "output_prefix", None)  # its topics and group are no job's own
        else kafka_access.job_principal(job)
    )
    return settings.flink_kafka_properties(principal, args.kafka)


def latest_checkpoint(checkpoints: Path) -> Path | None:
    """The newest complete checkpoint (one with its _metadata) under `checkpoints`/<job id>/chk-<n>; the
    folders of earlier runs it does not need are deleted."""
    done = sorted(checkpoints.glob("*/chk-*/_metadata"), key=lambda m: m.stat().st_mtime)
    if not done:
        return None
    latest = done[-1].parent
    for run in checkpoints.iterdir():
        if run != latest.parent:
            shutil.rmtree(run, ignore_errors=True)
    return latest


def forget_other_layouts(checkpoints: Path, layout: str) -> None:
    """Deletes checkpoints another state backend or state layout wrote (a stack of before issue 38 kept its state
    on the heap; a job whose records changed shape cannot read its old state): a checkpoint restores only into
    the backend and the row types that wrote it. The job then starts from its group's offsets, which every
    checkpoint committed to Kafka: each cumulative series takes one baseline again."""
    marker = checkpoints / "state-backend"
    written_by = marker.read_text().strip() if marker.exists() else ("hashmap" if any(checkpoints.iterdir()) else "")
    if written_by and written_by != layout:
        print(
            f"checkpoints of state '{written_by}' set aside (now '{layout}'): starting from the group's offsets",
            flush=True,
        )
        for run in checkpoints.iterdir():
            if run.is_dir():
                shutil.rmtree(run, ignore_errors=True)
    marker.write_text(layout + "\n")


def table_env(
    job: str,
    args: argparse.Namespace,
    checkpoint_interval: str = settings.CHECKPOINT_INTERVAL,
    state_backend: str = STATE_BACKEND,
    state_layout: str = "",
) -> TableEnvironment:
    """The job's environment; its outputs become visible downstream with each checkpoint, every
    `checkpoint_interval`. Its state in RocksDB unless `state_backend` says otherwise ("hashmap": on the heap).
    `state_layout` names the shape of the state's rows: a new name sets older checkpoints aside."""
    state = state_dir(job)
    checkpoints = state / "checkpoints" / group(args, job)
    checkpoints.mkdir(parents=True, exist_ok=True)
    forget_other_layouts(checkpoints, " ".join(filter(None, [state_backend, state_layout])))
    restore = latest_checkpoint(checkpoints)
    if restore:
        print(f"resuming from {restore}", flush=True)
    tmp = state / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    # the connectors; the jobs' Java functions
    jars = sorted(settings.LIB.glob("flink/*.jar")) + sorted(settings.LIB.glob("jobs/*.jar"))
    # No job has a Python function: in local mode PyFlink would otherwise start Beam's loopback worker server in
    # this process, which loads Beam, pandas and pyarrow (150 MB of every job's process, for nothing).
    os.environ.setdefault("_python_worker_execution_mode", "process")
    conf = Configuration()
    options = {
        "pipeline.name": f"sanlens-{job}",
        "pipeline.jars": ";".join(p.resolve().as_uri() for p in jars),
        "parallelism.default": str(args.parallelism),
        "execution.checkpointing.interval": checkpoint_interval,
        "execution.checkpointing.dir": checkpoints.resolve().as_uri(),
        # kept when the job is cancelled (./sanlens down) or dies, for the next start to resume from
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        # a job whose plan changed keeps the state of the operators it still has
        "execution.state-recovery.ignore-unclaimed-state": "true",
        # State off the heap: RocksDB (in flink-dist), checkpoints carrying only what changed. Its caches and write
        # buffers live in managed memory, whose size bounds them, so a job's heap no longer grows with its state,
        # nor with a backlog held in a join's wait.
        "state.backend.type": state_backend,
        "execution.checkpointing.incremental": "true",
        **ROCKSDB,
        "table.exec.source.idle-timeout": "5 s",
        "table.local-time-zone": "UTC",
        # SQL operators never hold on to a row they passed on, so chained operators may hand rows over
        # without copying each one (the copies were the largest single cost in the normalize job's profile)
        "pipeline.object-reuse": "true",
    }
    if not ON_CLUSTER:  # the job's own mini-cluster: its endpoints, memory and files; a cluster has its own
        options |= {
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "rest.port": str(args.rest_port),
            "io.tmp.dirs": str(tmp),
            "web.tmpdir": str(tmp),
            "web.upload.dir": str(tmp),
            "python.executable": sys.executable,
            "state.backend.rocksdb.localdir": str((state / "rocksdb").resolve()),
            "taskmanager.memory.managed.size": os.environ.get(
                "SANLENS_FLINK_MANAGED_MEMORY", MANAGED_MEMORY.get(job, DEFAULT_MANAGED_MEMORY)
            ),
            # the records between the job's operators (64 MB by default): a few buffers a channel are plenty here
            "taskmanager.memory.network.min": "32m",
            "taskmanager.memory.network.max": "32m",
        }
    for key, value in options.items():
        conf.set_string(key, value)
    if restore:
        conf.set_string("execution.state-recovery.path", restore.resolve().as_uri())
    return TableEnvironment.create(
        EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(conf).build()
    )


def kafka_options(args: argparse.Namespace, job: str, topic: str) -> str:
    """WITH options of a Kafka source table, shared by every job."""
    startup = "earliest-offset" if args.from_earliest else "group-offsets"
    opts = {
        "connector": "kafka",
        "topic": topic,
        **kafka_properties(args, job),
        "properties.group.id": group(args, job),
        "scan.startup.mode": startup,
        "properties.auto.offset.reset": "earliest",
        "properties.isolation.level": "read_committed",  # what the upstream jobs' checkpoints committed
    }
    if args.bounded:
        opts["scan.bounded.mode"] = "latest-offset"
    return ", ".join(f"'{k}' = '{v}'" for k, v in opts.items())


def kafka_sink(args: argparse.Namespace, job: str) -> Callable[[str, str], str]:
    """WITH options of the job's Kafka sink tables, as `sink(table, topic id)`: the contract's topic (or
    PREFIX.topic with --output-prefix), written exactly once in transactions committed by checkpoints."""

    def options(table: str, topic: str) -> str:
        opts = {
            "connector": "kafka",
            "topic": topics.with_prefix(topic, getattr(args, "output_prefix", None)),
            **kafka_properties(args, job),
            "sink.delivery-guarantee": "exactly-once",
            # unique among the jobs that write at the same time, and the same after a restart, so that
            # the restarted job aborts what its predecessor left open
            "sink.transactional-id-prefix": f"{group(args, job)}-{table}",
            "properties.transaction.timeout.ms": str(TRANSACTION_TIMEOUT_MS),
            "properties.compression.type": "lz4",
            "properties.linger.ms": "20",
            "properties.batch.size": "524288",
        }
        return ", ".join(f"'{k}' = '{v}'" for k, v in opts.items())

    return options


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
