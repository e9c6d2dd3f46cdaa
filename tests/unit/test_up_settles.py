"""`up`'s last status (sanlensctl/stack.py): a Flink job that `up` found RUNNING and that then misses a probe's
timeout, busy on a loaded machine, does not fail `up`; a job in another state, or a process gone, does."""

from __future__ import annotations

import pytest

from sanlensctl import procs, stack
from sanlensctl.components import flink


def flink_entry(*states: str, supervision=None) -> dict:
    jobs = {job: {"state": state} for job, state in zip(flink.JOBS, states)}
    healthy = all(s == "RUNNING" for s in states)
    return {"healthy": healthy, "pid": 1, "jobs": jobs, "supervision": supervision, "detail": ""}


@pytest.fixture
def reports(monkeypatch):
    """status() answers what the test puts in the list, the last one again once it is through."""
    answers = []
    others = {c.NAME: {"healthy": True, "pid": 1, "detail": ""} for c in stack.COMPONENTS if c is not flink}
    monkeypatch.setattr(
        stack, "status", lambda: {**others, "flink": answers.pop(0) if len(answers) > 1 else answers[0]}
    )
    monkeypatch.setattr(stack.time, "sleep", lambda _: None)
    monkeypatch.setattr(procs, "pid_of", lambda name: 1)
    return answers


def test_a_job_found_running_then_too_busy_to_answer_leaves_flink_healthy(reports):
    reports.append(flink_entry("RUNNING", "RUNNING", "RUNNING", "RUNNING", "no answer"))
    assert stack.settled_status({"flink"}, within_s=0)["flink"]["healthy"]


@pytest.mark.parametrize(
    ("entry", "found_healthy"),
    [
        (flink_entry("RUNNING", "RUNNING", "RUNNING", "RUNNING", "no answer"), set()),  # never seen healthy
        (flink_entry("RUNNING", "RUNNING", "RUNNING", "RUNNING", "no job"), {"flink"}),
        (flink_entry("RUNNING", "RUNNING", "RUNNING", "RUNNING", "no answer", supervision="restarting"), {"flink"}),
    ],
)
def test_a_job_in_another_state_or_never_seen_running_fails_up(reports, entry, found_healthy):
    reports.append(entry)
    assert not stack.settled_status(found_healthy, within_s=0)["flink"]["healthy"]


def test_a_job_whose_process_is_gone_fails_up(reports, monkeypatch):
    reports.append(flink_entry("RUNNING", "RUNNING", "RUNNING", "RUNNING", "no answer"))
    monkeypatch.setattr(procs, "pid_of", lambda name: None if name == "flink-burn_rates" else 1)
    assert not stack.settled_status({"flink"}, within_s=0)["flink"]["healthy"]


def test_the_status_is_asked_again_until_every_component_is_healthy(reports):
    reports.extend([flink_entry("RUNNING", "RUNNING", "RUNNING", "RUNNING", "no job"), flink_entry(*["RUNNING"] * 5)])
    assert stack.settled_status(set(), within_s=60)["flink"]["healthy"]
