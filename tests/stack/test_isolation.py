"""The user's stack is theirs: `./sanlens test` runs on a stack of its own and leaves the user's (up, with
data) as it was. Here the tests' session stack plays the user's, with what earlier tests wrote into it,
and a nested `./sanlens test` runs a test that writes into its stack."""

from __future__ import annotations

import json
import time

import pytest

from ingest.loader import rollups
from sanlensctl import offsets
from sanlensctl.demo import CAUGHT_UP_LAG, STAGES
from tests.support import sanlens, wait_until

pytestmark = pytest.mark.exclusive  # waits for every table of the stack to stand still


def row_counts(ch) -> dict[str, int]:
    """Rows per table of sanlens and sanlens_marts, as queries see them (FINAL where rows collapse). The
    collector's own heartbeat (site '') keeps flowing into metrics and accounting whatever runs, so it is
    left out."""
    counts = {}
    for db, name, engine in ch.query(
        "SELECT database, name, engine FROM system.tables "
        "WHERE database IN ('sanlens', 'sanlens_marts') AND engine NOT LIKE '%View' "
        "AND position(name, '__refresh_') = 0 "  # the loader's scratch tables of a refresh come and go
        "ORDER BY database, name"
    ).result_rows:
        final = " FINAL" if "Replacing" in engine else ""
        columns = {c[0] for c in ch.query(f"DESCRIBE TABLE {db}.{name}").result_rows}
        where = " WHERE site != ''" if "site" in columns and name in ("metrics", "pipeline_accounting") else ""
        counts[f"{db}.{name}"] = ch.command(f"SELECT count() FROM {db}.{name}{final}{where}")
    return counts


def pids() -> dict[str, int]:
    return {name: c["pid"] for name, c in json.loads(sanlens("status", "--json").stdout).items()}


def test_running_the_tests_leaves_the_users_stack_as_it_was(stack, ch, rollout):
    def settled():
        # What earlier tests left in flight lands first: every stage caught up, then no table moving for
        # 15 s. Stable counts alone are not enough: under a backlog a job's exactly-once output can stay
        # invisible for longer than that, while a checkpoint's barrier waits behind the data.
        if any(offsets.position(group, inputs).lag > CAUGHT_UP_LAG for group, inputs in STAGES.values()):
            return None
        # and the rollups of every histogram loaded: after a backlog the loader's next refresh may be minutes off
        # (it waits loader.ROLLUP_GAP times as long as its last took); a refresh again changes no count
        rollups.refresh(ch)
        first = row_counts(ch)
        time.sleep(15)
        return first if row_counts(ch) == first else None

    before, pids_before = wait_until(settled, 300, "the stack's tables to settle"), pids()
    assert before["sanlens.metrics"] > 0 and before["sanlens_marts.install_base_histogram"] > 0
    out = sanlens("test", "tests/stack/test_normalize.py", "-k", "microseconds", "-q", timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "1 passed" in out.stdout
    assert "is up and stays untouched: the tests start their own" in out.stderr
    assert row_counts(ch) == before
    assert pids() == pids_before
