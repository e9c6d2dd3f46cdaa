"""What a rollout of Express Writes (3.1.3 to 3.2.1) must show in the upgrade-effect marts, against the simulator's
truth of the same run: each share under its own name (bucket 4 alone, the study's "about 10 % pre, nearly 40 %
post"; within 0.125 ms, cumulative) with its ratio after/before (the study's "3X"), and the mean write service time
before and after (the study's ".5 ms down to .25") within 5 % of what the simulator planted, each with its interval."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from ingest.buckets import BUCKET_0_125_MS

MEAN_TOLERANCE = 0.05  # the mean from bucket midpoints reads about 2 % high (upgrade_effect_by_array.yml)


def planted_upgrades(truth: Path) -> dict[str, float]:
    """Each upgraded array and when it changed firmware (epoch s), from the truth's events."""
    return {
        array: at
        for line in (truth / "events.jsonl").read_text().splitlines()
        if (event := json.loads(line))["type"] == "firmware_upgrade"
        for array, at in event["affected"].items()
    }


def planted_mean_write_ms(truth: Path, host_array: dict[str, str]) -> dict[str, tuple[float, float]]:
    """Per upgraded array, the write service time the simulator planted before and after its change (the mean of
    its service-time distribution, array_write_us of hosts.jsonl, weighted by the writes of each interval); the
    intervals within one interval of the change are left out."""
    upgrades = planted_upgrades(truth)
    interval_s = json.loads((truth / "scenario.json").read_text())["interval_s"]
    sums = defaultdict(lambda: np.zeros(4))  # per array: before us*writes, before writes, after us*writes, after writes
    with (truth / "hosts.jsonl").open() as lines:
        for line in lines:
            row = json.loads(line)
            array = host_array[row["host"]]
            if array not in upgrades or abs(row["t"] - upgrades[array]) <= interval_s:
                continue
            side = 0 if row["t"] < upgrades[array] else 2
            sums[array][side : side + 2] += (row["array_write_us"] * row["write_iops"], row["write_iops"])
    return {a: (s[0] / s[1] / 1000, s[2] / s[3] / 1000) for a, s in sums.items()}


def planted_shares(histograms: list[dict], arrays: set[str]) -> dict[str, tuple[float, float]]:
    """The two shares of the arrays' writes on 3.1.3 and on 3.2.1, from the simulator's own histograms."""
    counts = {fw: np.zeros(32) for fw in ("3.1.3", "3.2.1")}
    for t in histograms:
        if t["array"] in arrays and t["direction"] == "write":
            counts[t["firmware"]] += t["counts"]
    share = {
        "share_0_0625_to_0_125_ms": lambda c: c[BUCKET_0_125_MS] / c.sum(),
        "share_within_0_125_ms": lambda c: c[: BUCKET_0_125_MS + 1].sum() / c.sum(),
    }
    return {name: (f(counts["3.1.3"]), f(counts["3.2.1"])) for name, f in share.items()}


def effect_by_array(ch, arrays: list[str]) -> dict[tuple[str, str], dict]:
    rows = ch.query(
        "SELECT * FROM sanlens_marts.upgrade_effect_by_array WHERE array IN {a:Array(String)} AND direction = 'write'",
        parameters={"a": arrays},
    ).named_results()
    return {(r["array"], r["metric"]): r for r in rows}


def assert_within_its_intervals(r: dict) -> None:
    for figure in ("before", "after", "delta", "ratio"):
        assert r[f"{figure}_ci_low"] <= r[figure] <= r[f"{figure}_ci_high"], (figure, r)


def assert_express_writes_effect(ch, truth: Path, host_array: dict[str, str], histograms: list[dict]) -> dict:
    """The upgrade effect of every upgraded array against the truth; returns the figures it saw (means over the
    arrays of before, after and ratio per figure), for the test to print."""
    upgraded = sorted(planted_upgrades(truth))
    got = effect_by_array(ch, upgraded)
    assert {a for a, _ in got} == set(upgraded)
    seen = {}
    for metric, (planted_before, planted_after) in planted_shares(histograms, set(upgraded)).items():
        rows = [got[(a, metric)] for a in upgraded]
        for r in rows:
            assert_within_its_intervals(r)
            assert r["ratio_ci_low"] > 2.5, r  # the study's "3X", on every array
        before, after = np.mean([r["before"] for r in rows]), np.mean([r["after"] for r in rows])
        ratio = np.mean([r["ratio"] for r in rows])
        assert before == pytest.approx(planted_before, abs=0.01) and after == pytest.approx(planted_after, abs=0.01)
        assert ratio == pytest.approx(planted_after / planted_before, rel=0.05)
        seen[metric] = (before, after, ratio)
    bucket_4, within = seen["share_0_0625_to_0_125_ms"], seen["share_within_0_125_ms"]
    assert 0.095 <= bucket_4[0] <= 0.115 and 0.38 <= bucket_4[1] <= 0.40  # 10.6 % -> 39.1 %
    assert within[0] > bucket_4[0] + 0.02 and within[1] > bucket_4[1] + 0.03  # two figures, two names

    planted = planted_mean_write_ms(truth, host_array)
    for array in upgraded:
        r = got[(array, "mean_ms")]
        assert_within_its_intervals(r)
        planted_before, planted_after = planted[array]
        assert r["before"] == pytest.approx(planted_before, rel=MEAN_TOLERANCE), (r, planted[array])
        assert r["after"] == pytest.approx(planted_after, rel=MEAN_TOLERANCE), (r, planted[array])
        assert r["ratio_ci_high"] < 0.6  # about half
        peak = got[(array, "peak_minute_mean_ms")]
        assert_within_its_intervals(peak)
        assert peak["after"] < 1 and peak["after"] < peak["before"]  # "spikes never breached 1 ms"
        p50, p99 = got[(array, "p50_ms")], got[(array, "p99_ms")]
        assert p50["after_ci_high"] < p50["before_ci_low"] and p99["after_ci_high"] < p99["before_ci_low"]
    rows = [got[(a, "mean_ms")] for a in upgraded]
    seen["mean_ms"] = tuple(np.mean([r[f] for r in rows]) for f in ("before", "after", "ratio"))
    seen["planted_mean_ms"] = tuple(np.mean([planted[a][side] for a in upgraded]) for side in (0, 1))
    return seen
