"""A backlog of any size drains (issue 38): 1,000 hosts x 500 intervals of Perfmon disks (3.5 M samples) produced
at once, as agents with disk buffers send them after a Kafka outage. Every Flink job keeps RUNNING and is back
under 1,000 messages behind within 10 minutes, and the histograms job wrote a host histogram row for every disk,
interval and direction. The figures (each job's peak memory and drain rate) are printed; the benchmark with the
same burst on a user's stack is tests/benchmarks/bench_backlog.py."""

from __future__ import annotations

import uuid

import pytest

from tests import backlog
from tests.support import wait_until

# a burst that busies every job for minutes: on a stack of its own, after the suite's other stack tests where it can
pytestmark = [pytest.mark.exclusive, pytest.mark.burst]

HOSTS, INTERVALS = 1_000, 500
DRAIN_S = 600


def test_a_burst_of_3_5_million_samples_drains_through_every_job(stack, ch):
    burst = backlog.produce(f"burst{uuid.uuid4().hex[:6]}", HOSTS, INTERVALS)
    drained = backlog.drain(DRAIN_S)
    print("\n" + "\n".join(drained.report()))
    assert drained.done(), "not caught up within 10 minutes:\n" + "\n".join(drained.report())
    expected = HOSTS * INTERVALS * 2  # one disk each, read and write
    rows = wait_until(
        lambda: (n := backlog.host_histogram_rows(ch, burst)) == expected and n,
        120,
        f"{expected:,} host histogram rows",
    )
    assert rows == expected
