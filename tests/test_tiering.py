"""Tier-migration episodes and their effects against the simulator's ground truth, through the whole stack
(Kafka -> normalize -> tiering and breakdown -> loader -> sanlens.tier_episodes -> the dbt view
sanlens_marts.tier_migration_effects), on the default demo scenario (auto-tiering on acme-sql3's data volume)
and on one of its own: three hybrid arrays whose Tier 0 shares wander with noise, auto-tiering enabled on two
volumes at other times. Each planted episode is found once, where and when it was planted, and its effect
matches the truth: the means, the intervals and the blocks they rest on, the time to effect and the Tier 0
footprint then, also where the arrays' poll missed that window; no other volume has one."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from ingest import topics
from ingest.simulator.fleet import VOLUME_MIB
from tests.breakdown_scenarios import backfill
from tests.support import sanlens, wait_for_job
from tests.test_breakdown import wait_for_every_window

SCENARIO = """
name: tiering-{id}
seed: 23
interval_s: 10
duration_s: 3000
customers:
  - name: c-{id}
    sites:
      - name: s-{id}
        switches: [{{name: {id}-sw, ports: 24}}]
        arrays:
          - {{name: {id}-hy1, model: HY7200, media: hybrid, firmware: 3.2.1, capacity_iops: 40000,
              tier0_share: 0.05, tier0_noise: 0.004}}
          - {{name: {id}-hy2, model: HY7200, media: hybrid, firmware: 3.2.1, capacity_iops: 40000,
              tier0_share: 0.10, tier0_noise: 0.005}}
          - {{name: {id}-hy3, model: HY7200, media: hybrid, firmware: 3.1.3, capacity_iops: 40000,
              tier0_share: 0.15, tier0_noise: 0.005}}
        hosts:
          - {{name: {id}-sql1, array: {id}-hy1, workload: oltp, iops: 1500, databases: [erp]}}
          - {{name: {id}-sql2, array: {id}-hy1, workload: oltp, iops: 1200, databases: [crm]}}
          - {{name: {id}-sql3, array: {id}-hy2, workload: tpce, iops: 2000, databases: [trading]}}
          - {{name: {id}-sql4, array: {id}-hy3, workload: oltp, iops: 1000, databases: [hr]}}
events:
  - {{type: auto_tiering, at: 600, array: {id}-hy1, volume: {id}-sql1_data, target_tier0: 0.30, time_constant_s: 120}}
  - {{type: auto_tiering, at: 1500, array: {id}-hy2, volume: {id}-sql3_data, target_tier0: 0.35, time_constant_s: 240}}
"""


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


def test_the_demo_s_auto_tiering_is_one_episode_with_its_planted_effect(demo_played, ch):
    """acme-sql3's data volume, from Tier 1 at about 35 ms towards 22 % in Tier 0 from 200 s: one episode
    within 2 windows of the start; the share after within 3 points; host, array and file latency fall;
    batch requests/s rise by the planted 60 % within 15 %; the time to effect within 20 % of the truth, the
    Tier 0 share and bytes then the planted ones to the MiB; the periods last 200 s, so every interval rests
    on 3 blocks and is low-confidence."""
    d = demo_played
    episodes, effects = effects_of(ch, d.scenario, d.run, d.sites)
    folder = d.run.truth.folder.parent
    assert_found_as_planted(episodes, effects, d.events, volume_truth(folder), d.scenario.interval_s)


@pytest.fixture(scope="session")
def tiering_played(stack, ch, tmp_path_factory):
    run_id = f"t{uuid.uuid4().hex[:6]}"
    folder = tmp_path_factory.mktemp("tiering")
    s, run, _ = backfill(folder, SCENARIO.format(id=run_id))
    events = [json.loads(line) for line in (folder / "truth" / "events.jsonl").read_text().splitlines()]
    return s, run, folder, events, [f"s-{run_id}"]


def test_noisy_hybrid_arrays_show_their_two_episodes_and_nothing_else(tiering_played, ch):
    """As the demo's, on volumes whose shares wander: their intervals rest on 10 and 9 blocks, one either side
    of the low-confidence mark. Then the tier samples of the first episode's effect window are deleted, as a
    live poll that missed the window leaves it (where the mart read 0.0): its footprint, interpolated between
    the windows either side, is within 4 x the array's noise of the truth's (the three windows' noise, about
    1.2 x that noise; the share's curve adds about 0.0002)."""
    s, run, folder, events, sites = tiering_played
    episodes, effects = effects_of(ch, s, run, sites)
    truth = volume_truth(folder)
    assert_found_as_planted(episodes, effects, events, truth, s.interval_s)

    effect = min(effects, key=lambda e: e["started_at"])
    missed = footprint_after_a_missed_poll(ch, effect, s.interval_s)
    noise = s.arrays[effect["array"]].tier0_noise
    assert_footprint_at_effect(missed, true_share_at_effect(effect, truth, s.interval_s), 4 * noise)


def footprint_after_a_missed_poll(ch, effect, interval) -> dict:
    """The effect read again once the volume's tier samples of the effect window are gone."""
    at = effect["started_at"] + timedelta(seconds=effect["time_to_effect_s"])
    ch.command(
        "DELETE FROM sanlens.metrics WHERE array = {array:String} AND volume = {volume:String}"
        " AND metric IN ('volume.tier0_bytes', 'volume.tier1_bytes')"
        f" AND ts >= {{at:DateTime64(3, 'UTC')}} AND ts < {{at:DateTime64(3, 'UTC')}} + INTERVAL {interval} SECOND",
        parameters={"array": effect["array"], "volume": effect["volume"], "at": at},
    )
    rows = ch.query(
        "SELECT * FROM sanlens_marts.tier_migration_effects"
        " WHERE episode_id = {episode:String} AND host = {host:String}",
        parameters={"episode": effect["episode_id"], "host": effect["host"]},
    )
    (missed,) = rows.named_results()
    assert missed["time_to_effect_s"] == effect["time_to_effect_s"]
    return missed
