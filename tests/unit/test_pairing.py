"""A sample against its series' previous one (the normalize job's Pairing, pure logic through py4j): the
verdict and the canonical value of each kind of series."""

from __future__ import annotations

import pytest
from py4j.java_gateway import get_field

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


def test_a_record_series_keeps_the_last_sample_of_each_of_its_series(java):
    """LastSamples, the job's state per record series: a series is found by metric and bucket wherever the
    record carries it, and one the record lacks keeps its last sample."""
    last = java.LastSamples()
    a, b = java.Sample("m", "counter", "u", 1, 10.0, None), java.Sample("m", "ratio", "u", 2, 20.0, 4.0)
    last.set(last.indexOf(a, 0), a, 1_000)
    last.set(last.indexOf(b, 1), b, 1_000)
    assert last.indexOf(b, 0) == 1 and last.indexOf(a, 5) == 0  # found wherever the record carries it
    assert last.indexOf(java.Sample("m", "counter", "u", 3, 0.0, None), 0) == -1  # another bucket: a new series
    assert last.indexOf(java.Sample("n", "counter", "u", 1, 0.0, None), 0) == -1  # another metric: a new series
    last = java.LastSamples.of(last.bytes(7), 7, 0)  # as the state keeps it
    b2 = java.Sample("m", "ratio", "u", 2, 30.0, 5.0)
    last.set(last.indexOf(b2, 0), b2, 2_000)
    kept, moved = ([get_field(last.previous(i), f) for f in ("tsMs", "num", "den")] for i in (0, 1))
    assert kept == [1_000, 10.0, None] and moved == [2_000, 30.0, 5.0]
    assert last.previous(-1) is None
    plain = java.Sample("m", "gauge", "u", -1, 7.0, None)  # bucket -1: not a histogram's
    last.set(last.indexOf(plain, 2), plain, 3_000)
    assert java.LastSamples.of(last.bytes(7), 7, 0).indexOf(plain, 0) == 2
    assert java.LastSamples.of(None, 7, 4).indexOf(a, 0) == -1
    # kept as bytes: each series' own time and denominator come back, whichever series has them
    again = java.LastSamples.of(last.bytes(7), 7, 0)
    assert [[get_field(again.previous(i), f) for f in ("tsMs", "num", "den")] for i in range(3)] == [
        [1_000, 10.0, None],
        [2_000, 30.0, 5.0],
        [3_000, 7.0, None],
    ]


def test_a_histogram_record_series_is_kept_in_15_bytes_a_bucket(java):
    """The state's size is what every checkpoint copies: the buckets of a record share their time and have no
    denominator, so a bucket is its metric, bucket, a flag and its count."""
    last = java.LastSamples()
    for bucket in range(64):
        s = java.Sample("volume.write_hist", "histogram", "1", bucket, float(bucket), None)
        last.set(-1, s, 1_000)
    assert len(last.bytes(7)) == 4 + 8 + 64 * 15


def test_a_record_series_under_another_s_key_starts_afresh(java):
    """The state keeps a record series under a 64-bit hash of its name; the second hash in its bytes tells a
    series that shares its key with another (never seen, but possible) from its own, so it is a new series."""
    last = java.LastSamples()
    a = java.Sample("m", "counter", "u", 1, 10.0, None)
    last.set(last.indexOf(a, 0), a, 1_000)
    series = "array_vv|array=af1|volume=v1"
    kept = last.bytes(java.LastSamples.check(series))
    assert java.LastSamples.of(kept, java.LastSamples.check(series), 0).indexOf(a, 0) == 0
    assert java.LastSamples.of(kept, java.LastSamples.check(series + "x"), 0).indexOf(a, 0) == -1
    keys = {java.LastSamples.key(f"array_vv|array=af{i}|volume=v{j}") for i in range(100) for j in range(50)}
    assert len(keys) == 5000
