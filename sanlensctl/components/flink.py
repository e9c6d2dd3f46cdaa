"""Flink: each PyFlink job under flink-jobs/ on its own local mini-cluster, one Python process per job."""

from __future__ import annotations

import json
import sys
import urllib.request

from sanlensctl import config, procs

NAME = "flink"
PORT = config.FLINK_REST_PORT
JOBS = ["normalize", "histograms", "breakdown"]  # in start order; job i serves its REST API on FLINK_REST_PORT + i
PROCESSES = [f"flink-{job}" for job in JOBS]


def start() -> int:
    pids = []
    for i, job in enumerate(JOBS):
        port = config.FLINK_REST_PORT + i
        procs.require_free(port, f"the Flink REST API of job {job}", "SANLENS_FLINK_REST_PORT")
        # the mini-cluster's own log (Flink's log4j: exceptions, restarts) beside the job's output
        env = {**config.tool_env(), "FLINK_LOG_DIR": str(jvm_log_dir(job))}
        argv = [sys.executable, str(config.ROOT / "flink-jobs" / job / "job.py"), "--rest-port", str(port)]
        pids.append(procs.start(PROCESSES[i], argv, env))
    return pids[0]


def jvm_log_dir(job: str):
    return procs.log_file(f"flink-{job}").with_name(f"flink-{job}-jvm")


def _states(port: int) -> list[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/jobs/overview", timeout=3) as resp:
        return [j["state"] for j in json.load(resp)["jobs"]]


def probe() -> dict:
    details, healthy = [], True
    for i, job in enumerate(JOBS):
        try:
            states = _states(config.FLINK_REST_PORT + i)
        except OSError:
            states = []
        healthy &= "RUNNING" in states
        details.append(f"{job}: {states[-1] if states else 'no job'}")
    import pyflink.version

    return {"healthy": healthy, "port": PORT, "version": pyflink.version.__version__, "detail": ", ".join(details)}
