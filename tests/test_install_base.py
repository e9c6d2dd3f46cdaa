"""A firmware rollout backfilled through the whole pipeline (Kafka -> normalize -> histograms ->
loader -> ClickHouse -> dbt): every I/O the simulated arrays counted is in the histograms, and the
install-base mart shows the share of fast writes per firmware the simulator planted."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from ingest import buckets


def test_every_io_the_arrays_counted_is_in_the_histograms_and_rollups(rollout, ch):
    expected_total = sum(sum(t["counts"]) for t in rollout.truth)
    for table in (
        "service_time_hist_10s",
        "service_time_hist_1m",
        "service_time_hist_1h",
        "service_time_hist_array_1h",
    ):
        assert (
            ch.command(
                f"SELECT sum(ios) FROM sanlens.{table} FINAL WHERE array IN {{a:Array(String)}}",
                parameters={"a": rollout.arrays},
            )
            == expected_total
        ), table
    # the day level only takes days that have ended (ingest/loader/rollups.py)
    ended = ch.command(
        "SELECT sum(ios) FROM sanlens.service_time_hist_1h FINAL WHERE array IN {a:Array(String)} "
        "AND period_start < toStartOfDay(now('UTC'))",
        parameters={"a": rollout.arrays},
    )
    assert (
        ch.command(
            "SELECT sum(ios) FROM sanlens.service_time_hist_1d FINAL WHERE array IN {a:Array(String)}",
            parameters={"a": rollout.arrays},
        )
        == ended
    )
    for table in ("sanlens.service_time_hist_fleet_1h", "sanlens_marts.install_base_histogram"):  # no FINAL
        assert (
            ch.command(
                f"SELECT sum(ios) FROM {table} WHERE array_model = {{m:String}}", parameters={"m": rollout.model}
            )
            == expected_total
        ), table


def test_install_base_histogram_reproduces_the_planted_express_writes_shift(rollout, ch):
    mart = ch.query(
        "SELECT firmware, direction, bucket, sum(ios), max(arrays) FROM sanlens_marts.install_base_histogram "
        "WHERE array_model = {m:String} GROUP BY firmware, direction, bucket",
        parameters={"m": rollout.model},
    ).result_rows
    got = defaultdict(lambda: np.zeros(32))
    arrays_behind = {}
    for fw, direction, bucket, ios, n in mart:
        got[(fw, direction)][bucket] += ios
        arrays_behind[(fw, direction)] = max(arrays_behind.get((fw, direction), 0), n)
    planted = defaultdict(lambda: np.zeros(32))
    for t in rollout.truth:
        planted[(t["firmware"], t["direction"])] += t["counts"]
    assert set(got) == set(planted) == {(fw, d) for fw in ("3.1.3", "3.2.1") for d in ("read", "write")}
    share = {k: v[4] / v.sum() for k, v in got.items()}
    true_share = {k: v[4] / v.sum() for k, v in planted.items()}
    for key in got:
        assert abs(share[key] - true_share[key]) <= 0.02, (key, share[key], true_share[key])
    assert 0.07 <= share[("3.1.3", "write")] <= 0.14 and 0.35 <= share[("3.2.1", "write")] <= 0.45
    assert abs(share[("3.1.3", "read")] - share[("3.2.1", "read")]) <= 0.02  # reads unchanged
    assert arrays_behind[("3.2.1", "write")] == 6 and arrays_behind[("3.1.3", "write")] == 12


def test_upgrade_effect_shows_faster_writes_with_a_confidence_interval(rollout, ch):
    effect = {
        (d, m): (n, lo, hi)
        for d, m, n, lo, hi in ch.query(
            "SELECT direction, metric, arrays, ci_low, ci_high FROM sanlens_marts.upgrade_effect "
            "WHERE array_model = {m:String}",
            parameters={"m": rollout.model},
        ).result_rows
    }
    n, low, high = effect[("write", "share_fast")]
    assert n == 6 and 0.25 <= low <= high <= 0.36  # Express Writes: about +30 points per array
    n, low, high = effect[("write", "p99_ms")]
    assert high < 0  # and a lower p99


def interpolated(counts, q: float) -> float:
    """The documented method: linear inside the bucket that holds the percentile."""
    total, below = sum(counts), 0
    for n, c in enumerate(counts):
        if c and below + c >= q * total:
            lower, upper = buckets.lower_ms(n), buckets.upper_ms(n)
            return lower + (upper - lower) * (q * total - below) / c
        below += c
    raise AssertionError("empty histogram")


def test_percentiles_come_from_the_merged_histograms(rollout, ch):
    """Percentiles come from the merged histogram of each hour and firmware, as the simulator's own
    histograms give them; Express Writes lower the write tail, reads keep theirs."""
    model = rollout.model
    merged = defaultdict(lambda: np.zeros(32, dtype=np.int64))
    for t in rollout.truth:
        merged[(t["firmware"], t["direction"], t["hour"])] += t["counts"]
    rows = ch.query(
        "SELECT firmware, direction, toUnixTimestamp(period_start), quantile, latency_ms "
        "FROM sanlens_marts.latency_percentiles WHERE level = 'model' AND array_model = {m:String}",
        parameters={"m": model},
    ).result_rows
    assert len(rows) == 4 * len(merged)
    by_key = defaultdict(dict)
    for fw, direction, hour, q, value in rows:
        assert value == pytest.approx(interpolated(merged[(fw, direction, hour)], q), rel=1e-9)
        by_key[(fw, direction, hour)][q] = value
    for values in by_key.values():
        assert values[0.5] <= values[0.9] <= values[0.99] <= values[0.999]
    p99 = {k: v[0.99] for k, v in by_key.items()}
    hours = {h for (_, _, h) in p99 if ("3.1.3", "write", h) in p99 and ("3.2.1", "write", h) in p99}
    assert hours and all(p99[("3.2.1", "write", h)] < p99[("3.1.3", "write", h)] for h in hours)
