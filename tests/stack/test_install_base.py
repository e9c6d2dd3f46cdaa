"""A firmware rollout backfilled through the whole pipeline (Kafka -> normalize -> histograms ->
loader -> ClickHouse -> dbt): every I/O the simulated arrays counted is in the histograms, and the
install-base mart shows the share of fast writes per firmware the simulator planted; the cohorts (per array
model and firmware) weigh each array as the simulator counted it, on the rollout and on the demo's fleet, where
one AF8000 near its capacity carries most of its cohort's writes."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime

import numpy as np
import pytest

from ingest import buckets
from ingest.buckets import BUCKET_0_125_MS
from ingest.simulator import scenario as scenario_file
from queries import cohorts
from tests.express_writes import assert_express_writes_effect
from tests.support import wait_until


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
        (r["direction"], r["metric"]): r
        for r in ch.query(
            "SELECT * FROM sanlens_marts.upgrade_effect WHERE array_model = {m:String}", parameters={"m": rollout.model}
        ).named_results()
    }
    writes = effect[("write", "share_0_0625_to_0_125_ms")]
    assert writes["arrays"] == 6 and 0.25 <= writes["ci_low"] <= writes["ci_high"] <= 0.33  # +28 points per array
    assert 3.3 <= writes["ratio_ci_low"] <= writes["ratio"] <= writes["ratio_ci_high"] <= 4.1  # the study's "3X"
    assert effect[("write", "p99_ms")]["ci_high"] < 0  # and a lower p99
    for figure in ("mean_before", "mean_after", "ratio"):
        r = effect[("write", "mean_ms")]
        assert r[f"{figure}_ci_low"] <= r[figure] <= r[f"{figure}_ci_high"], (figure, r)
    # each array on its own: an hour of data each way at most, so its periods are minutes, 60 each way
    arrays = ch.query(
        "SELECT direction, metric, period, matched_periods, delta, delta_ci_low, delta_ci_high "
        "FROM sanlens_marts.upgrade_effect_by_array WHERE array_model = {m:String}",
        parameters={"m": rollout.model},
    ).result_rows
    assert len(arrays) == 2 * 6 * 6 and {(period, n) for _, _, period, n, *_ in arrays} == {("minute", 60)}
    for direction, metric, _, _, delta, low, high in arrays:
        assert low <= delta <= high, (direction, metric)
        if metric == "share_within_0_125_ms" and direction == "write":
            assert low >= 0.25  # Express Writes on every array
        elif metric.startswith("share_") and direction == "read":
            assert abs(delta) < 0.02  # reads unchanged


def test_upgrade_effect_gives_the_express_writes_figures_the_simulator_planted(rollout, ch):
    """Bucket 4 alone and within 0.125 ms, each under its own name with its ratio, and the mean write service time
    before and after within 5 % of the simulator's, with intervals (tests/express_writes.py)."""
    s = scenario_file.load(rollout.folder / "rollout.yaml")
    host_array = {name: host.array for name, host in s.hosts.items()}
    assert_express_writes_effect(ch, rollout.folder / "truth", host_array, rollout.truth)


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


def truth_cohorts(truth, key) -> dict[tuple, dict[str, np.ndarray]]:
    """Per cohort `key(t)` of the simulator's own histograms: each array's I/Os in bucket 4 (0.0625 to 0.125 ms),
    within 0.125 ms (buckets 0..4) and in all."""
    found = defaultdict(lambda: defaultdict(lambda: np.zeros(3, dtype=np.int64)))
    for t in truth:
        counts = t["counts"]
        found[key(t)][t["array"]] += (counts[BUCKET_0_125_MS], sum(counts[: BUCKET_0_125_MS + 1]), sum(counts))
    return found


def assert_cohort(got: dict, arrays: dict[str, np.ndarray], ios_rel: float = 1e-9, share_abs: float = 1e-9) -> None:
    """The cohort's figures as the simulator's per-array counts give them (I/Os within ios_rel, shares within
    share_abs)."""
    in_bucket, within, ios = np.array(list(arrays.values())).T
    shares = within / ios
    busiest = max(arrays, key=lambda a: arrays[a][2])
    assert got["arrays"] == len(arrays) and got["busiest_array"] == busiest, (got, arrays)
    assert got["ios"] == pytest.approx(ios.sum(), rel=ios_rel)
    want = {
        "share_0_0625_to_0_125_ms": in_bucket.sum() / ios.sum(),
        "share_0_0625_to_0_125_ms_array_mean": (in_bucket / ios).mean(),
        "share_within_0_125_ms": within.sum() / ios.sum(),
        "share_within_0_125_ms_array_mean": shares.mean(),
        "share_within_0_125_ms_array_min": shares.min(),
        "share_within_0_125_ms_array_p25": np.quantile(shares, 0.25),
        "share_within_0_125_ms_array_median": np.quantile(shares, 0.5),
        "share_within_0_125_ms_array_p75": np.quantile(shares, 0.75),
        "share_within_0_125_ms_array_max": shares.max(),
        "busiest_array_ios_share": arrays[busiest][2] / ios.sum(),
    }
    for column, value in want.items():
        assert got[column] == pytest.approx(value, abs=share_abs), (column, got, arrays)


def test_install_base_cohorts_weigh_each_array_as_the_simulator_counted_it(rollout, ch):
    """The cohort mart, per hour: the arrays behind each cohort, its share of fast I/Os pooled over its I/Os and
    averaged over its arrays, the arrays' spread and the busiest array, exactly as the simulator's own histograms
    give them (an array upgraded within the hour is in both cohorts of that hour)."""
    rows = ch.query(
        "SELECT toUnixTimestamp(period_start) AS hour, * FROM sanlens_marts.install_base_cohorts "
        "WHERE array_model = {m:String}",
        parameters={"m": rollout.model},
    ).named_results()
    got = {(r["hour"], r["firmware"], r["direction"]): r for r in rows}
    expected = truth_cohorts(rollout.truth, lambda t: (t["hour"], t["firmware"], t["direction"]))
    assert set(got) == set(expected)
    for key, arrays in expected.items():
        assert_cohort(got[key], arrays)
    upgrade_hour = {key[0] for key in got if key[1] == "3.2.1"}
    assert {got[(h, "3.2.1", "write")]["arrays"] for h in upgrade_hour} == {6}


def test_cohorts_keep_models_apart_and_show_the_array_that_carries_one(demo_played, ch):
    """The report's and the dashboard's cohort query (queries/cohorts.py) on the demo's fleet: one
    cohort per array model and firmware (the hybrid HY7200 apart from the all-flash arrays), each with its arrays;
    on 3.2.1 acme-af2, loaded towards its knee after its upgrade, carries most of the AF8000 writes at well under
    acme-af1's share within 0.125 ms, so the cohort's I/O-weighted share is below its array-weighted one. All as
    the simulator counted them; the interval across globex-af1's restart is dropped (a counter reset), so its figures
    are close, not exact."""
    arrays = list(demo_played.scenario.arrays)
    restarted = {e["array"] for e in demo_played.scenario.events if e["type"] == "array_restart"}
    truth = [json.loads(line) for line in (demo_played.run.truth.folder / "histograms.jsonl").read_text().splitlines()]
    exact = [a for a in arrays if a not in restarted]
    held = "SELECT sum(ios) FROM sanlens.service_time_hist_array_1h FINAL WHERE array IN {a:Array(String)}"
    total = sum(sum(t["counts"]) for t in truth if t["array"] in exact)
    wait_until(lambda: ch.command(held, parameters={"a": exact}) == total, 300, f"{total} I/Os of {exact} rolled up")
    span = {"start": datetime.fromtimestamp(min(t["hour"] for t in truth), UTC), "arrays": arrays}
    rows = ch.query(
        cohorts.figures(cohorts.every_array("array IN {arrays:Array(String)} AND period_start >= {start:DateTime}")),
        parameters=span,
    ).named_results()
    got = {(r["array_model"], r["firmware"], r["direction"]): r for r in rows}
    expected = truth_cohorts(truth, lambda t: (t["model"], t["firmware"], t["direction"]))
    assert set(got) == set(expected)
    assert {k[:2]: r["arrays"] for k, r in got.items()} == {
        ("AF8000", "3.1.3"): 2,
        ("AF8000", "3.2.1"): 2,
        ("AF9000", "3.2.1"): 1,
        ("HY7200", "3.2.1"): 1,
    }
    for key, cohort in expected.items():
        if restarted.isdisjoint(cohort):
            assert_cohort(got[key], cohort)
        else:
            assert_cohort(got[key], cohort, ios_rel=0.02, share_abs=0.002)
    writes = got[("AF8000", "3.2.1", "write")]
    assert writes["busiest_array"].endswith("-af2") and writes["busiest_array_ios_share"] > 0.55
    assert writes["share_within_0_125_ms_array_min"] < 0.25 and writes["share_within_0_125_ms_array_max"] > 0.4
    assert writes["share_within_0_125_ms"] < writes["share_within_0_125_ms_array_mean"] - 0.02
