-- Each tier-migration episode with the start of its volume's next one, which ends this one's period after.
select
    episode_id, site, array, volume, direction, started_at, settled_at, page_moves_up, page_moves_down,
    leadInFrame(started_at, 1, toDateTime64('2299-12-31 00:00:00', 3, 'UTC')) over (
        partition by site, array, volume order by started_at
        rows between unbounded preceding and unbounded following
    ) as next_started_at
from {{ ref('stg_tier_episodes') }}
