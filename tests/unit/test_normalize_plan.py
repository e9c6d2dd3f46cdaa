"""The normalize job's plan, from Flink's own planner (no stack needed): each record is decoded, paired
with its series' previous samples and counted once, in one Java operator that all three outputs share,
with one shuffle per record (by source) and no per-sample aggregation. The accounting's counts come out of
the function as one row per record, which the SQL turns into a row per count."""

from __future__ import annotations

import re

from tests.support import job_plan


def test_samples_dead_letters_and_accounting_share_one_operator_per_record(monkeypatch):
    optimized = job_plan(monkeypatch, "normalize", "Optimized Execution Plan")
    assert optimized.count("ProcessTableFunction(invocation=[normalize_records(") == 1, optimized
    assert "OverAggregate" not in optimized, optimized  # no LAG
    # no UNNEST of samples: the one there turns a record's count row into its counts
    correlates = [line for line in optimized.splitlines() if "Correlate(" in line]
    assert (
        len(correlates) == 1 and "'deadletter'" in correlates[0] and not re.search(r"\$cor0\.sample\b", correlates[0])
    ), optimized
    assert "Python" not in optimized, optimized  # the function is Java: no Python worker in the job
