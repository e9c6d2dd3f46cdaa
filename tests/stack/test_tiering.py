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
from datetime import timedelta

import pytest

from tests import scenarios
from tests.breakdown_scenarios import backfill
from tests.tiering_truth import (
    assert_footprint_at_effect,
    assert_found_as_planted,
    effects_of,
    true_share_at_effect,
    volume_truth,
)


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
    s, run, _ = backfill(folder, scenarios.text("tiering", id=run_id))
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
