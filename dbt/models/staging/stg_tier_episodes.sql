-- The tiering job's tier-migration episodes, one row per episode in its latest state (FINAL).
select
    episode_id,
    array,
    volume,
    site,
    direction,
    started_at,
    detected_at,
    settled_at,
    last_window,
    windows,
    tier0_share_before,
    tier0_share_reached,
    tier0_bytes_reached,
    noise,
    page_moves_up,
    page_moves_down
from {{ source('sanlens', 'tier_episodes') }} final
