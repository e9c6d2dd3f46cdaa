"""The tier-migration episode detector of the tiering job, isolated (pure logic, the Java class the job's process
table function runs): one hybrid volume's Tier 0 share, window by window."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from py4j.java_gateway import get_field

from flink_jobs.tiering.tables import Episodes
from tests.support import java_functions

W = 10_000  # ms: one window
T0 = 1_795_000_000_000
TIB = 2**40
FIELDS = ("direction", "startedAt", "detectedAt", "settledAt", "lastWindow", "tier0ShareBefore", "tier0ShareReached")
ALL_FIELDS = (*FIELDS, "site", "windows", "tier0BytesReached", "noise", "pageMovesUp", "pageMovesDown")


@pytest.fixture(scope="module")
def java():
    return java_functions().tiering


def detector(java, **changes):
    e = Episodes(**changes)
    return java.EpisodeDetector(
        W,
        e.history_windows,
        e.warmup_windows,
        e.slack,
        e.threshold_noise,
        e.noise_floor,
        e.min_shift,
        e.settle_windows,
        e.settle_noise,
        e.rejoin_windows,
        java.DetectEpisodes.REPLAY_WINDOWS,
    )


def play(java, shares, **changes) -> list[SimpleNamespace]:
    """Each share is the volume's Tier 0 share in one window; the episodes' states, in the order reported."""
    return play_into(detector(java, **changes), java.Tiers(), shares)


def play_into(d, tiers, shares, start: int = T0) -> list[SimpleNamespace]:
    """The shares from the window at `start` on, into a detector and a state that may have seen others."""
    states = []
    for n, share in enumerate([*shares, 0.0]):  # a last window's sample judges the one before it
        for metric, value in (("volume.tier0_bytes", share * TIB), ("volume.tier1_bytes", (1 - share) * TIB)):
            state = d.add(tiers, start + n * W, metric, float(value), "s")
            if state is not None:
                states.append(SimpleNamespace(**{f: get_field(state, f) for f in ALL_FIELDS}))
    return states


def approach(before: float, target: float, start: int, tau_windows: float, n: int, noise=0.0, seed=1):
    """The share of an auto-tiering run: flat at `before`, then exponentially towards `target` from window
    `start` (the simulator's shape), with white noise."""
    rng = np.random.default_rng(seed)
    return [
        min(
            max(
                (before if k < start else target + (before - target) * math.exp(-(k - start) / tau_windows))
                + rng.normal(0, noise),
                0.0,
            ),
            1.0,
        )
        if noise
        else (before if k < start else target + (before - target) * math.exp(-(k - start) / tau_windows))
        for k in range(n)
    ]


def window(n: int) -> int:
    return T0 + n * W


def test_a_steady_share_raises_nothing(java):
    assert play(java, [0.0] * 200) == []
    assert play(java, [0.35] * 200) == []


@pytest.mark.parametrize("seed", range(3))
def test_noise_alone_raises_nothing_in_twelve_hours(java, seed):
    assert play(java, approach(0.10, 0.10, 0, 1, 4320, noise=0.005, seed=seed)) == []


def test_a_move_smaller_than_the_minimum_is_not_an_episode(java):
    assert play(java, [0.10] * 60 + [0.106] * 120) == []


def test_auto_tiering_is_one_episode_from_its_start_to_where_the_share_settles(java):
    """The demo's shape: from 0 towards 22 % with a time constant of 180 s (18 windows), enabled at window 20.
    The share first moves in window 21 (the sample at the end of the first interval with tiering on)."""
    states = play(java, approach(0.0, 0.22, 20, 18, 120))
    assert {s.startedAt for s in states} == {window(20)}, "started after the last window at the old level"
    assert states[0].settledAt is None and states[0].direction == "up"
    settled = [s for s in states if s.settledAt is not None]
    last = settled[-1]
    assert last is states[-1], "the last state is settled"
    assert last.tier0ShareBefore == pytest.approx(0.0, abs=1e-9)
    # it settles once the share moves less than its noise over a minute (0.0533 x exp(-k/18) <= 4 x 0.002 from
    # window k of the approach), within 2 points of the target: the rest creeps in slower than the CUSUM's slack
    assert last.tier0ShareReached == pytest.approx(0.22, abs=0.02)
    assert window(20 + 34) <= last.settledAt <= window(20 + 60)


def test_a_noisy_volume_s_episode_is_found_and_its_noise_is_not(java):
    shares = approach(0.10, 0.30, 200, 30, 600, noise=0.005, seed=4)
    states = play(java, shares)
    assert {s.startedAt for s in states} <= {window(k) for k in range(197, 203)}
    assert states[-1].settledAt is not None
    assert states[-1].tier0ShareReached == pytest.approx(0.30, abs=0.02)


def test_a_falling_share_is_an_episode_down(java):
    states = play(java, approach(0.30, 0.05, 40, 12, 160))
    assert states and {s.direction for s in states} == {"down"}
    assert states[-1].tier0ShareReached == pytest.approx(0.05, abs=0.01)


def test_a_window_that_comes_too_late_is_ignored(java):
    d = detector(java)
    tiers = java.Tiers()
    d.add(tiers, window(5), "volume.tier0_bytes", 1.0, "s")
    assert d.add(tiers, window(4), "volume.tier0_bytes", 2.0, "s") is None
    assert get_field(tiers, "window") == window(5) and get_field(tiers, "tier0Bytes") == 1.0


def test_a_window_re_delivered_a_minute_late_at_most_is_ignored(java):
    """A batch delivered again goes back seconds: a window up to a minute older than the one being gathered is
    ignored, and the volume keeps what it has seen."""
    d, tiers = detector(java), java.Tiers()
    replay = java.DetectEpisodes.REPLAY_WINDOWS
    play_into(d, tiers, [0.10] * 20)
    assert d.add(tiers, window(20 - replay), "volume.tier0_bytes", 1.0, "s") is None
    assert get_field(tiers, "window") == window(20) and len(list(get_field(tiers, "history"))) == 20


def test_a_replayed_span_finds_what_its_first_play_found(java):
    """The span played again from its start (./sanlens demo twice over the same span, a backfill replayed in its
    slot): its windows go back to before the ones the volume has seen, and the state starts afresh from them, so
    the replay reports the first play's episode state for state, however far the first play had got."""
    shares = approach(0.10, 0.30, 60, 12, 200, noise=0.004, seed=9)
    d, tiers = detector(java), java.Tiers()
    first = play_into(d, tiers, shares)
    assert first and first[-1].settledAt is not None
    assert play_into(d, tiers, shares) == first
    # a replay of the span's beginning that stops in the middle of the episode, then the whole span again
    assert play_into(d, tiers, shares[:75]) == [s for s in first if s.lastWindow < window(75)]
    assert play_into(d, tiers, shares) == first


def test_a_replay_leaves_nothing_of_what_the_volume_had_seen(java):
    """Once a replay's first sample came, every field of the state is as in a new state given the same sample: a
    field added to Tiers and not to its startAfresh would carry the earlier play into the replay."""
    from pyflink.java_gateway import get_gateway

    d, tiers, fresh = detector(java), java.Tiers(), java.Tiers()
    play_into(d, tiers, approach(0.0, 0.22, 20, 18, 60))  # in the middle of an episode
    assert get_field(tiers, "inEpisode")
    for state in (tiers, fresh):
        d.add(state, window(0), "volume.tier0_bytes", 1.0, "s")
    objects = get_gateway().jvm.java.util.Objects
    assert [
        f.getName() for f in tiers.getClass().getFields() if not objects.deepEquals(f.get(tiers), f.get(fresh))
    ] == []


def test_a_share_across_hours_without_data_is_not_an_episode(java):
    """Two runs of a volume hours apart (an agent down, the demo played again later): the second starts from
    another share, and the stretch without data between them is not taken for a migration; a migration in the
    second run is found from a baseline of its own."""
    d, tiers = detector(java), java.Tiers()
    assert play_into(d, tiers, [0.22] * 60) == []
    states = play_into(d, tiers, approach(0.0, 0.22, 40, 18, 160), start=T0 + 3 * 3600 * 1000)
    assert states and {s.direction for s in states} == {"up"}, states
