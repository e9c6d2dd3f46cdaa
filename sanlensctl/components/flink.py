"""Flink: each PyFlink job under flink-jobs/ on its own local mini-cluster, one Python process per job."""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.request
from datetime import UTC, datetime

from ingest import topics
from sanlensctl import config, db, offsets, procs

NAME = "flink"
PORT = config.FLINK_REST_PORT
# in start order; job i serves its REST API on FLINK_REST_PORT + i
JOBS = ["normalize", "histograms", "breakdown", "tiering", "burn_rates"]
assert len(JOBS) <= config.FLINK_REST_PORTS
# Each job's mini-cluster heap. The analytics' state is in RocksDB (off the heap, in managed memory: flink-jobs/
# common/runtime.py), so their heap holds what a job holds in flight: records in its operators and Kafka clients'
# buffers, and the planner at start. normalize keeps its state on the heap (a value per series: 82 MB at 1,000
# arrays, copied by each checkpoint) and writes every sample to Kafka. The joins' clean-up timers stay in RocksDB
# (runtime.ROCKSDB), so no heap grows with a join's wait.
HEAP = {"normalize": "768m", "histograms": "320m", "breakdown": "384m", "tiering": "320m", "burn_rates": "384m"}
# The parallel collector: the jobs want throughput on two shared cores, not G1's short pauses, whose
# concurrent marking and write barriers take CPU from them. A job whose heap is full exits, for the supervisor to
# restart it from its last checkpoint (or to report it failing), instead of collecting garbage on both cores for
# good while its status says only "no job".
GC = "-XX:+UseParallelGC -XX:+ExitOnOutOfMemoryError"
PROCESSES = [f"flink-{job}" for job in JOBS]
# The jobs on every sample's way to ClickHouse; the others derive from their output and run at
# config.ANALYTICS_NICE, so that a burst (a backfill, a fleet catching up) is queryable first.
INGEST_PATH = {"normalize"}
# What each job reads (its consumer group is `group(job)`, committed at checkpoints), and where its output
# becomes queryable: the ClickHouse table, and the time its rows' age counts from: the sample's arrival in
# Kafka for normalize, the histogram sample's own time, the window's start for the breakdown (a window
# holds the samples whose intervals end in it: its age then spans the window and the pipeline). The
# loader stamps `loaded_at` on each row.
INPUTS = {
    "normalize": [topics.METRICS],
    "histograms": [topics.SAMPLES],
    "breakdown": [topics.SAMPLES],
    "tiering": [topics.SAMPLES],
    "burn_rates": [topics.HISTOGRAMS, topics.BREAKDOWN],
}
OUTPUTS = {
    "normalize": ("sanlens.metrics", "arrived_at", "arrival"),
    "histograms": ("sanlens.service_time_hist_10s", "sample_ts", "sample"),
    "breakdown": ("sanlens.path_latency", "window_start", "window start"),
    "tiering": ("sanlens.tier_episodes", "last_window", "window"),
    "burn_rates": ("sanlens.slo_windows", "window_start", "window start"),
}


def group(job: str) -> str:
    return f"sanlens-{job}"  # the jobs' default consumer group (flink-jobs/common/runtime.py)


def start() -> int:
    return [start_process(name) for name in PROCESSES][0]


def start_process(name: str) -> int:
    """One job's process (the supervisor restarts a job alone)."""
    i = PROCESSES.index(name)
    job, port = JOBS[i], config.FLINK_REST_PORT + i
    procs.require_free(port, f"the Flink REST API of job {job}", "SANLENS_FLINK_REST_PORT")
    # the mini-cluster's own log (Flink's log4j: exceptions, restarts) beside the job's output
    env = {**config.tool_env(), "FLINK_LOG_DIR": str(jvm_log_dir(job))}
    env["JVM_ARGS"] = config.pyflink_jvm_args(config.TMP, heap(job)) + f" {GC}"
    # glibc's malloc keeps an arena per thread that allocates (up to 8 per core, 64 MB reserved each): RocksDB's
    # and the JVM's native allocations from a mini-cluster's hundred threads spread over them
    env["MALLOC_ARENA_MAX"] = "2"
    argv = [sys.executable, str(config.ROOT / "flink-jobs" / job / "job.py"), "--rest-port", str(port)]
    _mark_start(name, job)
    return procs.start(name, argv, env, nice=0 if job in INGEST_PATH else config.ANALYTICS_NICE)


def heap(job: str) -> str:
    """The job's heap: HEAP's, or SANLENS_FLINK_HEAP_<JOB> (e.g. SANLENS_FLINK_HEAP_HISTOGRAMS=96m; the
    supervision test starves one job with it)."""
    return os.environ.get(f"SANLENS_FLINK_HEAP_{job.upper()}", HEAP[job])


def jvm_log_dir(job: str):
    return procs.log_file(f"flink-{job}").with_name(f"flink-{job}-jvm")


def _states(port: int) -> list[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/jobs/overview", timeout=3) as resp:
        return [j["state"] for j in json.load(resp)["jobs"]]


def freshness(job: str) -> dict:
    """Seconds from when the job's output rows of the last minute could first exist to when they were
    queryable in ClickHouse: p50, p95 and how many rows. A backfill's rows are as old as its windows."""
    table, since, _ = OUTPUTS[job]
    p50, p95, rows = (
        db.client()
        .query(
            f"SELECT quantile(0.5)(d), quantile(0.95)(d), count() FROM (SELECT dateDiff('millisecond', {since}, "
            f"loaded_at) / 1000 AS d FROM {table} WHERE loaded_at > now64(3) - INTERVAL 1 MINUTE)"
        )
        .result_rows[0]
    )
    return {"p50_s": round(p50, 1), "p95_s": round(p95, 1), "rows": rows} if rows else {"rows": 0}


def state(job: str) -> str:
    """The job's state on its mini-cluster: RUNNING, another of Flink's states, "no job", or "no answer" (its
    REST API down, or its JVM too busy to answer within the timeout)."""
    try:
        states = _states(config.FLINK_REST_PORT + JOBS.index(job))
    except (OSError, ValueError):
        return "no answer"
    return "RUNNING" if "RUNNING" in states else (states[-1] if states else "no job")


GC_TIME = "Status.JVM.GarbageCollector.All.Time"  # ms, all collectors together


def health(name: str) -> tuple[str, float | None]:
    """What the supervisor watches of a job's running process (supervisor.Liveness): the job's state, and its JVM's
    time in GC so far in seconds (None while unknown: Flink's REST API has no metrics in its first answer)."""
    job = JOBS[PROCESSES.index(name)]
    current = state(job)
    if current == "no answer":
        return current, None
    url = f"http://127.0.0.1:{config.FLINK_REST_PORT + JOBS.index(job)}/jobmanager/metrics?get={GC_TIME}"
    try:  # a mini-cluster's JobManager runs in the one JVM of the job
        with urllib.request.urlopen(url, timeout=3) as resp:
            values = json.load(resp)
        return current, float(values[0]["value"]) / 1000 if values else None
    except (OSError, ValueError, LookupError):
        return current, None


START = "==> sanlens: starting "  # the line that begins each run of a job in its log


def _mark_start(name: str, job: str) -> None:
    config.LOGS.mkdir(parents=True, exist_ok=True)
    with open(procs.log_file(name), "a") as log:
        log.write(f"{START}{name} at {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}, heap {heap(job)}\n")


# A Java exception or error, by its class's full name, where a line names it (a stack trace's frames do not end so):
# "Terminating due to java.lang.OutOfMemoryError: ...", "Caused by: org.apache....TimeoutException: ...". py4j's
# own say only that the JVM failed or went away; what the JVM said is on a line of its own.
JAVA_EXCEPTION = re.compile(r"(?:^|[\s:])((?!py4j\.)(?:[a-z_][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)(?::.*)?)$")


def why(name: str) -> str | None:
    """Why the job of process `name` is not RUNNING, if its logs say: the last Java exception of its last run in its
    log (the JVM's OutOfMemoryError, the exception that ended its start), else in its mini-cluster's log (what
    failed its tasks; written anew at each start)."""
    log = procs.tail(procs.log_file(name), 2000)
    run = log[max((i for i, line in enumerate(log) if line.startswith(START)), default=0) :]
    jvm = [line for path in jvm_log_dir(JOBS[PROCESSES.index(name)]).glob("*.log") for line in procs.tail(path, 2000)]
    for lines in (run, jvm):
        found = [m.group(1) for m in map(JAVA_EXCEPTION.search, lines) if m]
        if found:
            return found[-1][:300]
    return None


def _job(job: str) -> dict:
    entry = {"state": state(job)}
    try:  # the job's health does not hang on Kafka or ClickHouse answering these
        entry["lag"] = offsets.position(group(job), INPUTS[job]).lag
        entry["freshness"] = freshness(job)
    except Exception as exc:
        entry["progress"] = f", progress unknown ({str(exc).splitlines()[0][:80]})"
    return entry


def describe(job: str, entry: dict) -> str:
    text = f"{job}: {entry['state']}"
    if entry["state"] != "RUNNING" and (reason := why(f"flink-{job}")):
        text += f" ({reason})"
    if "lag" in entry:
        f = entry["freshness"]
        text += f", lag {entry['lag']:,}, " + (
            f"{OUTPUTS[job][2]} to queryable p50 {f['p50_s']} s, p95 {f['p95_s']} s" if f["rows"] else "no rows"
        )
    return text + entry.get("progress", "")


def ready() -> dict:
    """What `up` waits on: each job's state alone. A probe also asks Kafka for each job's lag and ClickHouse for its
    freshness, about a CPU-second, which `up` paid every half second while the jobs started."""
    states = {job: state(job) for job in JOBS}
    return {
        "healthy": all(s == "RUNNING" for s in states.values()),
        "detail": "; ".join(describe(job, {"state": s}) for job, s in states.items()),
    }


def probe() -> dict:
    jobs = {job: _job(job) for job in JOBS}
    import pyflink.version

    return {
        "healthy": all(j["state"] == "RUNNING" for j in jobs.values()),
        "port": PORT,
        "version": pyflink.version.__version__,
        "detail": "; ".join(describe(job, entry) for job, entry in jobs.items()),
        "jobs": jobs,
    }
