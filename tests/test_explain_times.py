"""./sanlens explain's --from and --to (sanlensctl/explain.py `when`), and its answer for an unknown host: pure logic,
no stack."""

from __future__ import annotations

import subprocess
from datetime import datetime

import pytest

from sanlensctl import config
from sanlensctl.explain import checked_time, nearest, when

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
