"""A sample against its series' previous one (the normalize job's Pairing, pure logic through py4j): the
verdict and the canonical value of each kind of series."""

from __future__ import annotations

import pytest

from tests.support import java_functions


@pytest.fixture(scope="module")
def java():
    return java_functions().normalize


def judge(java, kind, ts, num, den=None, prev=None):
    """(reason, value) for a sample; `prev` is (ts, num, den) of the series' previous sample, or None."""
    sample = java.Sample("m", kind, "u", -1, float(num), None if den is None else float(den))
    previous = None
    if prev is not None:
        previous = java.Pairing.Previous(prev[0], java.Sample("m", kind, "u", -1, float(prev[1]), prev[2]))
    reason = java.Pairing.reason(sample, ts, previous)
    return reason, java.Pairing.value(sample, ts, previous) if reason == "" else None


def test_a_gauge_is_its_own_value_even_first(java):
    assert judge(java, "gauge", 10_000, 7.5) == ("", 7.5)


def test_a_counter_becomes_a_rate_per_second(java):
    assert judge(java, "counter", 20_000, 1_500, prev=(10_000, 1_000, None)) == ("", 50.0)


def test_a_ratio_becomes_the_value_per_event_of_the_interval(java):
    assert judge(java, "ratio", 20_000, 3_000, 150, prev=(10_000, 1_000, 50.0)) == ("", 20.0)


def test_a_histogram_bucket_becomes_the_delta(java):
    assert judge(java, "histogram", 20_000, 42, prev=(10_000, 40, None)) == ("", 2.0)


@pytest.mark.parametrize(
    "kind, ts, num, den, prev, reason",
    [
        ("counter", 10_000, 5, None, None, "baseline: first sample of a cumulative series"),
        ("gauge", 10_000, 5, None, (10_000, 5, None), "duplicate"),
        ("counter", 5_000, 5, None, (10_000, 1, None), "out of order"),
        ("counter", 20_000, 3, None, (10_000, 9, None), "counter reset"),
        ("ratio", 20_000, 9, 4, (10_000, 8, 5.0), "counter reset"),
        ("ratio", 20_000, 9, 5, (10_000, 8, 5.0), "no I/O in interval"),
        ("histogram", 20_000, 40, None, (10_000, 40, None), "no I/O in bucket"),
        ("ratio", 20_000, 1_000, 5e-324, (10_000, 0, 0.0), "non-finite value"),  # fractional counts: infinite
    ],
)
def test_what_cannot_be_paired_is_dropped_with_its_reason(java, kind, ts, num, den, prev, reason):
    assert judge(java, kind, ts, num, den, prev) == (reason, None)
