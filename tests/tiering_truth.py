"""Tier-migration episodes and their effects as the pipeline derived them (the tier_migration_effects mart,
once the breakdown holds every window) against the simulator's ground truth of each volume: for the tests of the
tiering job, the dashboards, the report and a replay."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ingest import topics
from ingest.simulator.fleet import VOLUME_MIB
from tests.breakdown_truth import wait_for_every_window
from tests.support import sanlens, wait_for_job

CAPACITY = VOLUME_MIB * 2**20  # a simulated volume's bytes
MIB_SHARE = 1 / VOLUME_MIB  # the arrays report their tiers in whole MiB: the share's resolution
MIN_BLOCKS = 10  # an interval on fewer 1-minute blocks is marked low-confidence


def volume_truth(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "truth" / "volumes.jsonl").read_text().splitlines()]


def effects_of(ch, s, run, sites: list[str]) -> tuple[list[dict], list[dict]]:
    """The episodes of `sites` and their effects, once the breakdown holds every window and the tiering job
    has read every sample normalize wrote by then."""
    wait_for_every_window(ch, s, run, sites)
    wait_for_job("tiering", [topics.SAMPLES], [topics.TIER_EPISODES], timeout=300)
    out = sanlens("dbt", "build", "--select", "+tier_migration_effects")
    assert out.returncode == 0, out.stdout[-3000:]
    where = "WHERE site IN {sites:Array(String)}"
    episodes = ch.query(f"SELECT * FROM sanlens.tier_episodes FINAL {where}", parameters={"sites": sites})
    effects = ch.query(f"SELECT * FROM sanlens_marts.tier_migration_effects {where}", parameters={"sites": sites})
    return list(episodes.named_results()), list(effects.named_results())


def epoch(t: datetime) -> float:
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def true_share_at_effect(effect, truth, interval) -> float:
    """The Tier 0 share the simulator planted on the volume in the effect's window."""
    at = epoch(effect["started_at"]) + effect["time_to_effect_s"]
    (window,) = [v for v in truth if v["volume"] == effect["volume"] and at <= v["t"] < at + interval]
    return window["tier0_share"]


def assert_footprint_at_effect(effect, true_share: float, tolerance: float) -> None:
    """The mart's Tier 0 share and bytes at the effect, within `tolerance` (of the share) of the truth's."""
    name = effect["volume"]
    assert effect["tier0_share_at_effect"] == pytest.approx(true_share, abs=tolerance), name
    assert effect["tier0_bytes_at_effect"] == pytest.approx(true_share * CAPACITY, abs=tolerance * CAPACITY), name


def assert_blocks(effect, before: list[dict], after: list[dict]) -> None:
    """Each interval rests on the whole minutes of the shorter period (the pipeline holds every window of a
    backfill's periods), and is low-confidence below MIN_BLOCKS of them."""
    blocks = min(len(before), len(after)) // 6
    for measure in ("array_us", "host_us", "batch_requests", "file_us"):
        assert effect[f"{measure}_blocks"] == blocks, (effect["volume"], measure)
        assert effect[f"{measure}_low_confidence"] is (blocks < MIN_BLOCKS), (effect["volume"], measure)


def assert_found_as_planted(episodes, effects, events, truth, interval) -> None:
    planted = {(e["component"].split()[-1], e["affected"][0]): e for e in events if e["type"] == "auto_tiering"}
    assert sorted((e["array"], e["volume"]) for e in episodes) == sorted(planted), "one episode per planted volume"
    assert len(effects) == len(planted)
    for effect in effects:
        e = planted[(effect["array"], effect["volume"])]
        m, name = e["magnitude"], effect["volume"]
        assert effect["host"] == e["host"]
        assert abs(epoch(effect["started_at"]) - e["start"]) <= 2 * interval, (name, effect["started_at"])
        assert effect["tier0_share_after"] == pytest.approx(m["target_tier0"], abs=0.03), name
        assert effect["tier0_share_before"] == pytest.approx(m["from_tier0"], abs=0.01), name
        # the means over the periods the mart chose, against the truth's over the same windows
        before_from, after_from = epoch(effect["before_from"]), epoch(effect["settled_at"])
        periods = {}
        for period, start in (("before", before_from), ("after", after_from)):
            windows = [v for v in truth if v["volume"] == name and start <= v["t"] < start + effect["period_s"]]
            periods[period] = windows
            assert len(windows) >= effect["period_s"] // interval - 1
            for measure in ("host_us", "array_us"):
                true = sum(v[measure] * v["ios"] for v in windows) / sum(v["ios"] for v in windows)
                assert effect[f"{measure}_{period}"] == pytest.approx(true, rel=0.02), (name, measure, period)
        assert_blocks(effect, periods["before"], periods["after"])
        for measure in ("host_us", "array_us", "file_us"):  # the latency falls, the interval excludes zero
            assert effect[f"{measure}_change_ci_low"] <= effect[f"{measure}_change_ci_high"] < 0, (name, measure)
        gain = effect["batch_requests_after"] / effect["batch_requests_before"] - 1
        assert gain == pytest.approx(m["batch_requests_gain"], rel=0.15), name
        assert effect["batch_requests_change_ci_low"] > 0, name
        assert effect["time_to_effect_s"] == pytest.approx(m["time_to_effect_s"], rel=0.2), name
        assert_footprint_at_effect(effect, true_share_at_effect(effect, truth, interval), MIB_SHARE)
