"""A span played again holds what its first play derived (issue 38): a short scenario (auto-tiering on one hybrid
volume, a slow-drain port on an all-flash host's path) backfilled through the whole stack, its span's rows then
deleted as ./sanlens demo deletes them before it plays a span the store holds (ingest/loader/spans.py), and the
same span played again. After the replay, the tier-migration episode and its effect
(sanlens_marts.tier_migration_effects), the incidents, the SLO windows and alerts, the breakdown and the histograms
equal those after the first play, and match what the simulator planted. The episode is derived again (the tiering
job's detector starts the volume afresh when its windows go back in time); the incidents are the first play's (the
breakdown's detector ignores a replay's windows, flink-jobs/breakdown/README.md); the windows of the breakdown, the
histograms and the SLOs are keyed by their window, the replay's replace the first play's."""

from __future__ import annotations

import types
import uuid
from datetime import UTC, datetime

import pytest

from ingest import topics
from ingest.loader import spans
from sanlensctl import config
from sanlensctl.components import flink
from slo import definitions
from tests import breakdown_truth, scenarios, tiering_truth
from tests.breakdown_scenarios import truth_of
from tests.slo_scenario import truth_minutes
from tests.support import sanlens, wait_for_job

# what each job writes, in the pipeline's order: a job is waited for once the jobs it reads from are done
OUTPUTS = {
    "normalize": [topics.SAMPLES],
    "histograms": [topics.HISTOGRAMS],
    "breakdown": [topics.BREAKDOWN, topics.INCIDENTS],
    "tiering": [topics.TIER_EPISODES],
    "burn_rates": [topics.SLO_WINDOWS, topics.SLO_ALERTS],
}
LOADED = "kafka_partition, kafka_offset, loaded_at"  # where and when a row was loaded: the replay's are its own


def play(folder, text: str, start_s: float | None = None):
    """The scenario as a backfill into the stack's Kafka, from `start_s` (by default the slot's start)."""
    from ingest.simulator import scenario as scenario_file
    from ingest.simulator.run import Run

    folder.mkdir()
    (folder / "scenario.yaml").write_text(text)
    s = scenario_file.load(folder / "scenario.yaml")
    run = Run(s, folder / "truth", config.KAFKA_BOOTSTRAP, backfill=True, start_s=start_s)
    run.backfill()
    run.close()
    return s, run


def derived(ch, sites: list[str]) -> types.SimpleNamespace:
    """What the jobs derived for `sites`, once each has read everything its inputs hold and the loader has loaded
    what it wrote; with the dbt marts built on it."""
    for job, outputs in OUTPUTS.items():
        wait_for_job(job, flink.INPUTS[job], outputs, timeout=300)
    out = sanlens("dbt", "build", "--select", "+tier_migration_effects")
    assert out.returncode == 0, out.stdout[-3000:]
    where = "WHERE site IN {sites:Array(String)}"

    def rows(sql: str) -> list[dict]:
        return list(ch.query(f"{sql} {where} ORDER BY ALL", parameters={"sites": sites}).named_results())

    return types.SimpleNamespace(
        episodes=rows(f"SELECT * EXCEPT ({LOADED}) FROM sanlens.tier_episodes FINAL"),
        effects=rows("SELECT * FROM sanlens_marts.tier_migration_effects"),
        path_incidents=rows(f"SELECT * EXCEPT ({LOADED}) FROM sanlens.path_incidents FINAL"),
        incidents=breakdown_truth.incidents_of(ch, sites),
        slo_windows=rows(f"SELECT * EXCEPT ({LOADED}) FROM sanlens.slo_windows FINAL"),
        slo_alerts=rows(f"SELECT * EXCEPT ({LOADED}) FROM sanlens.slo_alerts FINAL"),
        path_latency=rows(f"SELECT * EXCEPT ({LOADED}) FROM sanlens.path_latency FINAL"),
        histograms=rows(f"SELECT * EXCEPT ({LOADED}) FROM sanlens.service_time_hist_10s FINAL"),
    )


@pytest.fixture(scope="module")
def played_twice(stack, ch, tmp_path_factory):
    run_id = f"p{uuid.uuid4().hex[:6]}"
    folder, text, sites = tmp_path_factory.mktemp("replay"), scenarios.text("replay", id=run_id), [f"s-{run_id}"]
    s, run = play(folder / "first", text)
    breakdown_truth.wait_for_every_window(ch, s, run, sites)
    first = derived(ch, sites)
    span = datetime.fromtimestamp(run.start_s, UTC), datetime.fromtimestamp(run.start_s + run.duration, UTC)
    assert spans.held(ch, sites, *span) > 0
    spans.delete(ch, sites, *span)
    _, replay = play(folder / "second", text, start_s=run.start_s)
    assert replay.start_s == run.start_s
    second = derived(ch, sites)
    truth, events = truth_of(folder / "second")
    return types.SimpleNamespace(
        scenario=s, run=replay, folder=folder / "second", first=first, second=second, truth=truth, events=events
    )


def assert_same(replayed: list[dict], first: list[dict]) -> None:
    """Row for row, up to the rounding of sums the store adds in another order."""
    assert len(replayed) == len(first), (replayed, first)
    for got, expected in zip(replayed, first, strict=True):
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9), (got, expected)


def test_the_replay_finds_the_first_play_s_tier_migration_episode_with_its_effect(played_twice):
    """One episode on the planted volume, its effect as planted (start, Tier 0 share before and after, host and
    array latency before and after against the truth's, batch requests/s, time to effect), and every figure of
    both the same as the first play's."""
    p = played_twice
    first, second = p.first, p.second
    assert len(second.episodes) == len(second.effects) == 1
    assert second.episodes[0]["settled_at"] is not None
    tiering_truth.assert_found_as_planted(
        second.episodes, second.effects, p.events, tiering_truth.volume_truth(p.folder), p.scenario.interval_s
    )
    assert_same(second.episodes, first.episodes)
    assert_same(second.effects, first.effects)


def test_the_replay_leaves_the_first_play_s_incidents(played_twice):
    """The slow-drain port is one incident, where and when it was planted, on every path through it: the first
    play's, which the replay neither deleted nor changed."""
    p = played_twice
    planted = breakdown_truth.planted_incidents(p.scenario, p.truth, p.events)
    breakdown_truth.assert_found_as_planted(p.second.incidents, planted, p.scenario.interval_s)
    assert p.second.incidents.keys() == p.first.incidents.keys()
    for key, incidents in p.second.incidents.items():
        assert_same(incidents, p.first.incidents[key])
    assert p.second.path_incidents and {i["contributor"] for i in p.second.path_incidents} == {"fabric"}
    assert_same(p.second.path_incidents, p.first.path_incidents)


def test_the_replay_has_the_first_play_s_slo_windows_and_alerts(played_twice):
    """Every SLO window (good and total I/Os per SLO, path and window) the same as the first play's, their
    I/Os per SLO and entity those of the truth; the slowed reads page, and only those."""
    p = played_twice
    assert_same(p.second.slo_windows, p.first.slo_windows)
    assert_same(p.second.slo_alerts, p.first.slo_alerts)
    slos = definitions.load(definitions.DEFAULT_FILE).slos
    tiers = {
        h.name: "hybrid" if p.scenario.arrays[h.array].media == "hybrid" else "flash" for h in p.scenario.hosts.values()
    }
    own = {(slo.name, tier) for slo in slos for tier in slo.select["tier"]}  # each SLO's tier
    truth = truth_minutes(p.folder, slos, p.run.start_s + 2 * p.scenario.interval_s)
    totals = {}
    for w in p.second.slo_windows:
        totals[(w["slo"], w["entity"])] = totals.get((w["slo"], w["entity"]), 0) + w["total"]
    assert totals == {
        (slo, entity): sum(total for _, total in minutes.values())
        for (slo, entity), minutes in truth.items()
        if (slo, tiers[entity.split(":")[0]]) in own
    }
    slowed = next(e for e in p.events if e["type"] == "slow_drain")["affected"]
    pages = {(a["slo"], a["entity"]) for a in p.second.slo_alerts if a["severity"] == "page"}
    assert pages == {("flash-reads", f"{host}:D") for host in slowed}


def test_the_replay_has_the_first_play_s_breakdown_and_histograms(played_twice):
    """Every path window, and every histogram but the hosts' of the span's first interval: normalize drops the
    first sample of each series that goes back in time (`out of order`), which is a replay's first interval, where
    a first play's gauges (a host's Perfmon latency and I/O rate) are out."""
    p = played_twice
    assert_same(p.second.path_latency, p.first.path_latency)
    first_interval = p.run.start_s + p.scenario.interval_s
    after = lambda rows: [
        r for r in rows if r["source"] == "array" or tiering_truth.epoch(r["window_start"]) > first_interval
    ]
    assert_same(after(p.second.histograms), after(p.first.histograms))
