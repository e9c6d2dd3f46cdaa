"""A firmware rollout backfilled through the whole pipeline (Kafka -> normalize -> histograms ->
loader -> ClickHouse -> dbt): every I/O the simulated arrays counted is in the histograms, and the
install-base mart shows the share of fast writes per firmware the simulator planted."""
from __future__ import annotations

import json
import uuid
from collections import defaultdict

import numpy as np
import pytest

from conftest import sanlens, wait_until
from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config

SCENARIO = """
name: rollout-{id}
seed: 5
interval_s: 60
duration_s: 7200
customers:
  - name: c-{id}
    sites:
      - name: s-{id}
        switches: [{{name: {id}-sw, ports: 64}}]
        arrays: [{{count: 12, name: "{id}-af{{i:02d}}", model: M-{id}, media: ssd, firmware: 3.1.3}}]
        hosts: [{{per_array: 1, name: "{{array}}-sql{{j}}", workload: tpce, iops: 3000}}]
events:
  - {{type: firmware_upgrade, at: 1800, arrays: "{id}-*", to: 3.2.1, share: 0.5, waves: 2, every: 1800}}
"""


def test_install_base_histogram_reproduces_the_planted_express_writes_shift(stack, ch, tmp_path):
    run_id = uuid.uuid4().hex[:6]
    path = tmp_path / "rollout.yaml"
    path.write_text(SCENARIO.format(id=f"r{run_id}"))
    s = scenario_file.load(path)
    run = Run(s, tmp_path / "truth", config.KAFKA_BOOTSTRAP, backfill=True)
    run.backfill()
    run.close()
    truth = [json.loads(line) for line in (tmp_path / "truth" / "histograms.jsonl").read_text().splitlines()]
    expected_total = sum(sum(t["counts"]) for t in truth)
    arrays = tuple(s.arrays)
    loaded = wait_until(lambda: (n := ch.command(
        "SELECT sum(ios) FROM sanlens.service_time_hist_10s FINAL WHERE array IN {a:Array(String)}",
        parameters={"a": list(arrays)})) == expected_total and n, 300, f"{expected_total} I/Os in the histograms")
    assert loaded == expected_total                          # exact: every I/O the arrays counted
    wait_until(lambda: ch.command(                             # the loader's rollups, down to 1 day
        "SELECT sum(ios) FROM sanlens.service_time_hist_1d FINAL WHERE array IN {a:Array(String)}",
        parameters={"a": list(arrays)}) == expected_total, 60, "the rollups")

    out = sanlens("dbt", "build", "--select", "+install_base_histogram", "install_base_shares_sum_to_one",
                  "+latency_percentiles", "+upgrade_effect")
    assert out.returncode == 0, out.stdout[-3000:]
    mart = ch.query("SELECT firmware, direction, bucket, sum(ios), max(arrays) FROM sanlens_marts.install_base_histogram "
                    "WHERE array_model = {m:String} GROUP BY firmware, direction, bucket",
                    parameters={"m": f"M-r{run_id}"}).result_rows
    got = defaultdict(lambda: np.zeros(32))
    arrays_behind = {}
    for fw, direction, bucket, ios, n in mart:
        got[(fw, direction)][bucket] += ios
        arrays_behind[(fw, direction)] = max(arrays_behind.get((fw, direction), 0), n)
    planted = defaultdict(lambda: np.zeros(32))
    for t in truth:
        planted[(t["firmware"], t["direction"])] += t["counts"]
    assert set(got) == set(planted) == {(fw, d) for fw in ("3.1.3", "3.2.1") for d in ("read", "write")}
    share = {k: v[4] / v.sum() for k, v in got.items()}
    true_share = {k: v[4] / v.sum() for k, v in planted.items()}
    for key in got:
        assert abs(share[key] - true_share[key]) <= 0.02, (key, share[key], true_share[key])
    assert 0.07 <= share[("3.1.3", "write")] <= 0.14 and 0.35 <= share[("3.2.1", "write")] <= 0.45
    assert abs(share[("3.1.3", "read")] - share[("3.2.1", "read")]) <= 0.02       # reads unchanged
    assert arrays_behind[("3.2.1", "write")] == 6 and arrays_behind[("3.1.3", "write")] == 12

    check_percentiles(ch, f"M-r{run_id}", truth)
    effect = {(d, m): (n, lo, hi) for d, m, n, lo, hi in ch.query(
        "SELECT direction, metric, arrays, ci_low, ci_high FROM sanlens_marts.upgrade_effect "
        "WHERE array_model = {m:String}", parameters={"m": f"M-r{run_id}"}).result_rows}
    n, low, high = effect[("write", "share_fast")]
    assert n == 6 and 0.25 <= low <= high <= 0.36          # Express Writes: about +30 points per array


def interpolated(counts, q: float) -> float:
    """The documented method: linear inside the bucket that holds the percentile."""
    total, below = sum(counts), 0
    for n, c in enumerate(counts):
        if c and below + c >= q * total:
            lower, upper = (0.0 if n == 0 else 2.0 ** (n - 8)), 2.0 ** (n - 7)
            return lower + (upper - lower) * (q * total - below) / c
        below += c
    raise AssertionError("empty histogram")


def check_percentiles(ch, model: str, truth: list[dict]) -> None:
    """Percentiles come from the merged histogram of each hour and firmware, as the simulator's own
    histograms give them; Express Writes lower the write tail, reads keep theirs."""
    merged = defaultdict(lambda: np.zeros(32, dtype=np.int64))
    for t in truth:
        merged[(t["firmware"], t["direction"], t["hour"])] += t["counts"]
    rows = ch.query("SELECT firmware, direction, toUnixTimestamp(period_start), quantile, latency_ms "
                    "FROM sanlens_marts.latency_percentiles WHERE level = 'model' AND array_model = {m:String}",
                    parameters={"m": model}).result_rows
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
