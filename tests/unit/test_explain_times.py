"""./sanlens explain's --from and --to (sanlensctl/explain.py `when`), its answer for an unknown host, how it splits
the span at the incidents' bounds, and the incidents' severity in words (queries/incidents.py): pure
logic, no stack."""

from __future__ import annotations

import re
import subprocess
from datetime import datetime

import pytest

from queries import incidents
from sanlensctl import cli, config
from sanlensctl.explain import checked_time, nearest, segments, when
from tests.support import ROOT

LAST = datetime(2026, 11, 27, 16, 40, 10)  # a host's last window: the reference of a span


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-11-27T16:13:00", datetime(2026, 11, 27, 16, 13)),
        ("2026-11-27 16:13", datetime(2026, 11, 27, 16, 13)),
        ("2026-11-27T17:13:00+01:00", datetime(2026, 11, 27, 16, 13)),  # an offset converted to UTC
        ("16:13", datetime(2026, 11, 27, 16, 13)),
        ("16:13:30", datetime(2026, 11, 27, 16, 13, 30)),
        ("23:50", datetime(2026, 11, 26, 23, 50)),  # later than the reference that day: the day before
        ("-30m", datetime(2026, 11, 27, 16, 10, 10)),
        ("-2h", datetime(2026, 11, 27, 14, 40, 10)),
        ("-1d", datetime(2026, 11, 26, 16, 40, 10)),
        ("-90s", datetime(2026, 11, 27, 16, 38, 40)),
    ],
)
def test_a_time_is_read_in_each_of_its_forms(text, expected):
    assert when(text, LAST) == expected


@pytest.mark.parametrize("text", ["16h13", "yesterday", "-30", "30m", "25:00", "2026-13-01"])
def test_a_time_it_cannot_read_is_an_error_naming_the_forms_it_reads(text):
    with pytest.raises(ValueError, match=r"ISO 8601 .* time of day .* -30m"):
        checked_time(text)


def test_the_command_line_names_the_forms_and_no_internal_name():
    out = subprocess.run(
        [str(config.ROOT / "sanlens"), "explain", "acme-sql2", "--from", "16h13"],
        capture_output=True,
        text=True,
        cwd=config.ROOT,
    )
    assert out.returncode == 2
    assert "'16h13' is not a time: give an ISO 8601 time" in out.stderr, out.stderr
    assert "_time" not in out.stderr and "_utc" not in out.stderr, out.stderr


def test_an_unknown_host_is_answered_with_the_known_hosts_nearest_its_name():
    known = ["acme-sql1", "acme-sql2", "acme-sql3", "globex-db1", "initech-oltp"]
    assert sorted(nearest("acme-sql9", known)[:3]) == ["acme-sql1", "acme-sql2", "acme-sql3"]
    assert nearest("globex-db", known)[0] == "globex-db1"
    assert nearest("zzz", known) == sorted(known)  # none near: the first few in order


def incident(contributor: str, component: str, start: datetime, end: datetime | None) -> dict:
    return {"contributor": contributor, "component": component, "started_at": start, "ended_at": end}


SPAN = (datetime(2026, 11, 27, 16, 0), datetime(2026, 11, 27, 17, 0))


def test_the_span_is_broken_down_during_each_incident_and_outside_them():
    """An incident that began before the span counts from its start, one still open until its end; the rest of the
    span is broken down without the incidents' time."""
    start, end = SPAN
    drain = incident("fabric", "fa1:0/20", datetime(2026, 11, 27, 15, 55), datetime(2026, 11, 27, 16, 5))
    queueing = incident("host_queueing", "sql2", datetime(2026, 11, 27, 16, 50), None)
    during_drain, during_queueing, outside = segments([drain, queueing], start, end)
    assert (during_drain.start, during_drain.end, during_drain.left_out) == (start, drain["ended_at"], [])
    assert during_drain.title == "during incident 1, fabric on fa1:0/20"
    assert (during_queueing.start, during_queueing.end) == (queueing["started_at"], end)
    assert during_queueing.title == "during incident 2, host queueing on sql2"
    assert (outside.start, outside.end) == SPAN
    assert outside.left_out == [(start, drain["ended_at"]), (queueing["started_at"], end)]
    assert outside.title == "outside the incidents"


def test_without_an_incident_the_whole_span_is_broken_down_at_once():
    [whole] = segments([], *SPAN)
    assert (whole.title, whole.start, whole.end, whole.left_out) == ("over the span", *SPAN, [])


@pytest.mark.parametrize(
    "severity, worst_excess_us, words",
    [
        ("warning", 13_500.0, "warning: no frame lost, under 80 ms added"),  # a 13.5 ms host queueing
        ("severe", 1_500.0, "severe: frames lost (class-3 discards)"),  # a 1.5 ms slow drain that discards frames
        ("severe", 95_000.0, "severe: 80 ms or more added"),
    ],
)
def test_an_incident_s_severity_says_what_made_it_so(severity, worst_excess_us, words):
    assert incidents.severity_in_words(severity, worst_excess_us) == words


def test_the_severity_s_threshold_is_the_incident_detector_s():
    java = (ROOT / "flink-jobs/breakdown/java/io/sanlens/breakdown/DetectIncidents.java").read_text()
    assert float(re.search(r"SEVERE_US = ([\d_]+)", java)[1].replace("_", "")) == incidents.SEVERE_US


def test_an_incident_is_listed_with_the_hosts_volumes_and_arrays_it_touched():
    row = {
        **incident("fabric", "fa1:0/20", datetime(2026, 11, 27, 16, 8, 30), datetime(2026, 11, 27, 16, 13, 40)),
        "site": "acme-east",
        "excess_us": 1512.34,
        "worst_excess_us": 1604.0,
        "severity": "severe",
        "hosts": ["acme-sql1", "acme-sql2"],
        "volumes": ["acme-af1:acme-sql1_data", "acme-af1:acme-sql2_data"],
        "arrays": ["acme-af1"],
    }
    assert dict(zip(incidents.HEAD, incidents.cells(row))) == {
        "contributor": "fabric",
        "component": "fa1:0/20",
        "site": "acme-east",
        "started (UTC)": "2026-11-27 16:08:30",
        "ended": "16:13:40",
        "added per I/O (us)": "1,512.3",
        "severity": "severe: frames lost (class-3 discards)",
        "hosts": "acme-sql1, acme-sql2",
        "volumes": "acme-af1:acme-sql1_data, acme-af1:acme-sql2_data",
        "arrays": "acme-af1",
    }
    assert incidents.cells({**row, "ended_at": None})[4] == "open"


def test_a_span_back_is_taken_after_from_and_to_without_an_equals_sign():
    args = cli.parser().parse_args(cli._times_back_joined(["explain", "acme-sql2", "--from", "-30m", "--to", "-5m"]))
    assert (args.start, args.end) == ("-30m", "-5m")
