"""Record types and SQL of the tiering job: normalized samples (telemetry.samples) in, per hybrid volume the
tier-migration episodes its Tier 0 share shows out (telemetry.tier_episodes). The method is in README.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flink_jobs.common.sql import samples_format, window_start
from ingest import topics

# what the job reads: the episode detector's inputs per hybrid volume (the catalog's array_vv_tier fields)
METRICS = ("volume.tier0_bytes", "volume.tier1_bytes", "volume.page_moves_up", "volume.page_moves_down")


@dataclass(frozen=True)
class Episodes:
    """How an episode is told from the data (README.md, "Episodes"); each is a job argument."""

    window_s: int = 10  # the arrays' collection interval: one share per volume and window
    history_windows: int = 30  # the baseline: the last 5 minutes of shares outside any change
    warmup_windows: int = 6  # shares a volume needs before any verdict
    slack: float = 0.005  # the CUSUM's slack k, at least: half the smallest move worth reporting
    threshold_noise: float = 8.0  # the CUSUM's threshold h, in noise (standard deviations of the baseline)
    noise_floor: float = 0.002  # the noise, at least: a share reported in MiB of a TiB is never exact
    min_shift: float = 0.01  # an episode moves the share by at least this much (and by 4 x noise)
    settle_windows: int = 6  # the share has settled when its last minute ...
    settle_noise: float = 4.0  # ... spans no more than this many noise
    rejoin_windows: int = 30  # a share moving on the same way within 5 minutes of settling: the same episode


def samples(kafka_options: str) -> str:
    """`telemetry.samples` (docs/contract.md): the columns this job reads."""
    return f"""
    CREATE TABLE samples (
        ts TIMESTAMP_LTZ(3), metric STRING, `value` DOUBLE, site STRING, `array` STRING, volume STRING
    ) WITH ({kafka_options}, {samples_format(METRICS)})"""


def tier_samples(window_s: int) -> str:
    names = ", ".join(f"'{m}'" for m in METRICS)
    return f"""
    SELECT `array`, volume, site, metric, `value`,
        CAST(TIMESTAMPDIFF(SECOND, TO_TIMESTAMP_LTZ(0, 3), {window_start("ts", window_s)}) AS BIGINT) * 1000
            AS window_ms
    FROM samples WHERE metric IN ({names})"""


def insert_episodes(e: Episodes) -> str:
    return f"""
    INSERT INTO tier_episodes
    SELECT `array`, volume, episode_id, site, direction, started_at, detected_at, settled_at, last_window, windows,
        tier0_share_before, tier0_share_reached, tier0_bytes_reached, noise, page_moves_up, page_moves_down
    FROM detect_tier_episodes(
        input => TABLE tier_samples PARTITION BY (`array`, volume),
        window_length_ms => {e.window_s * 1000},
        history_windows => {e.history_windows}, warmup_windows => {e.warmup_windows}, slack => {e.slack!r}E0,
        threshold_noise => {e.threshold_noise!r}E0, noise_floor => {e.noise_floor!r}E0,
        min_shift => {e.min_shift!r}E0, settle_windows => {e.settle_windows},
        settle_noise => {e.settle_noise!r}E0, rejoin_windows => {e.rejoin_windows}, uid => 'tier-episodes')"""


def sink(kafka_sink: Callable[[str, str], str]) -> str:
    return f"""
    CREATE TABLE tier_episodes (
        `array` STRING, volume STRING, episode_id STRING, site STRING, direction STRING,
        started_at TIMESTAMP_LTZ(3), detected_at TIMESTAMP_LTZ(3), settled_at TIMESTAMP_LTZ(3),
        last_window TIMESTAMP_LTZ(3), windows INT, tier0_share_before DOUBLE, tier0_share_reached DOUBLE,
        tier0_bytes_reached DOUBLE, noise DOUBLE, page_moves_up DOUBLE, page_moves_down DOUBLE
    ) WITH ({kafka_sink("tier_episodes", topics.TIER_EPISODES)},
            'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601')"""
