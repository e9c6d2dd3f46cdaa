"""The jobs' joins on a window or a timestamp are interval joins on processing time, from Flink's own planner
(no stack needed). A regular join with a time-to-live keeps the same rows, but Flink's heap state cleans them
by copying every row of a few keys at each access: that was most of the CPU of the breakdown and burn_rates
jobs in the 200-array backfill (docs/benchmarks.md). Samples of one record (a disk's latency and rate, a port's
stall and discards) meet where the message is read, never in a join (issue 38)."""

from __future__ import annotations

import re

import pytest

from tests.support import job_plan

# (job, interval joins, regular joins): the breakdown's host windows, path versions and parts of a window (array,
# HBA, two switch ports) meet in one keyed function, no join, and so do burn_rates' volume histograms, path windows
# and paths' SLOs (issue 38); burn_rates' one regular join: the paths with their arrays (inventory only)
JOINS = [("histograms", 0, 0), ("breakdown", 0, 0), ("burn_rates", 0, 1)]


@pytest.mark.parametrize(("name", "interval", "regular"), JOINS)
def test_a_join_on_a_window_is_an_interval_join(monkeypatch, name, interval, regular):
    plan = job_plan(monkeypatch, name, "Optimized Execution Plan")
    intervals = re.findall(r"IntervalJoin\(joinType=\[InnerJoin\], windowBounds=\[isRowTime=false", plan)
    joins = re.findall(r"(?<![A-Za-z])Join\(joinType=\[\w+\], where=\[(.*?)\], select=", plan)
    on_time = [w for w in joins if re.search(r"\b(window_start|ts)\d* = ", w)]
    assert not on_time, f"{name}: regular joins on a window or timestamp: {on_time}"
    counts = (len(intervals), len(joins))
    assert counts == (interval, regular), f"{name}: {counts[0]} interval joins, {counts[1]} regular"
