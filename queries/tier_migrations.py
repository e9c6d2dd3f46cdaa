"""Tier migrations: each hybrid volume's Tier 0 share (from the arrays' per-volume tier bytes in sanlens.metrics),
the episodes the tiering job found (sanlens.tier_episodes, FINAL) and what each settled one did per host (the dbt
view sanlens_marts.tier_migration_effects). The "Where the latency is" dashboard, the report and the demo read them."""

from __future__ import annotations

# What tier_migration_effects measures before and after each episode.
MEASURES = ("array_us", "host_us", "batch_requests", "file_us")
# Each measure's figures: the means, its change's interval, the blocks that rests on and whether they are too few.
EFFECT_FIGURES = ("before", "after", "change_ci_low", "change_ci_high", "blocks", "low_confidence")


def tier0_shares(bucket: str, where: str) -> str:
    """Each hybrid volume's Tier 0 share of its capacity per `bucket` (an expression of ts) where `where` holds,
    from the arrays' per-volume tier bytes in sanlens.metrics."""
    return f"""
SELECT {bucket} AS time, concat(array, ' / ', volume) AS array_volume,
    sumIf(value, metric = 'volume.tier0_bytes') / sum(value) AS tier0_share
FROM sanlens.metrics
WHERE metric IN ('volume.tier0_bytes', 'volume.tier1_bytes') AND {where}
GROUP BY time, array, volume
HAVING sum(value) > 0
ORDER BY time, array_volume"""


# Every episode, per array and volume in order; one still moving ends at its last window.
EPISODES = """
SELECT array, volume, direction, started_at, coalesce(settled_at, last_window) AS ended_at,
    settled_at IS NULL AS moving, tier0_share_before, tier0_share_reached
FROM sanlens.tier_episodes FINAL
ORDER BY array, volume, started_at"""

HAS_EFFECTS = "SELECT count() FROM sanlens_marts.tier_migration_effects"
# Every settled episode's effect per host, the newest first: each measure's EFFECT_FIGURES.
EFFECTS = f"""
SELECT volume, host, started_at, time_to_effect_s,
    {", ".join(f"{m}_{figure}" for m in MEASURES for figure in EFFECT_FIGURES)}
FROM sanlens_marts.tier_migration_effects
ORDER BY started_at DESC, volume, host"""

# The episodes of sites {sites} that started between {a} and {b}, with what they did: the Tier 0 share, the host's
# latency and batch requests/s before and after, the time to effect.
OF_SITES_IN_SPAN = """
SELECT concat(e.volume, ' on ', e.array) AS volume, formatDateTime(e.started_at, '%H:%i:%S') AS started,
       if(e.settled_at IS NULL, 'moving', formatDateTime(e.settled_at, '%H:%i:%S')) AS settled,
       round(x.tier0_share_before, 3) AS tier0_before, round(x.tier0_share_after, 3) AS tier0_after,
       round(x.host_us_before) AS host_us_before, round(x.host_us_after) AS host_us_after,
       concat('+', toString(round(100 * (x.batch_requests_after / x.batch_requests_before - 1))), '%')
           AS batch_req_s,
       x.time_to_effect_s AS time_to_effect_s
FROM sanlens.tier_episodes AS e FINAL
LEFT JOIN sanlens_marts.tier_migration_effects AS x ON e.episode_id = x.episode_id
WHERE e.site IN {sites:Array(String)} AND e.started_at BETWEEN {a:DateTime64(3)} AND {b:DateTime64(3)}
ORDER BY e.started_at"""
