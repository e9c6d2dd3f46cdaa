"""The normalize job's plan, from Flink's own planner (no stack needed): the per-series LAG that both the
samples and the accounting read is planned once, not once per output, and each record is decoded once, in the JVM."""

from __future__ import annotations

import sys

from flink_jobs.common import runtime
from flink_jobs.normalize import job
from tests.support import free_port


def test_samples_and_accounting_share_one_lag_aggregation(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["job.py", "--rest-port", str(free_port())])
    args = runtime.arguments(job.__doc__, job.OPTIONS)
    plan = job.statements(runtime.table_env("normalize-plan", args), args).explain()
    optimized = plan.split("== Optimized Execution Plan ==")[-1]
    assert optimized.count("OverAggregate") == 1, optimized
    assert optimized.count("Correlate(invocation=[decode_record(") == 1, optimized
    assert "Python" not in optimized, optimized  # the decoder is the Java function: no Python in the job
