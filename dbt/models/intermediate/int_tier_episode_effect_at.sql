-- Per episode and host: the first window after the start where the host's latency is within 10 % of the level
-- it settled at.
select
    s.episode_id as episode_id,
    s.host as host,
    min(w.window_start) as effect_window
from {{ ref('int_tier_episode_spans') }} as s
inner join {{ ref('int_tier_episodes_with_next_start') }} as e on s.episode_id = e.episode_id
inner join {{ ref('int_volume_host_windows') }} as w
    on e.site = w.site and e.array = w.array and e.volume = w.volume and s.host = w.host
where w.window_start > s.started_at and abs(w.host_us - s.host_us_level) <= 0.1 * s.host_us_level
group by s.episode_id, s.host
