-- Per episode, host and measure: the measure's windows over the period before and the period after, in time order.
-- episode_volume_windows: each host's windows on its paths to the episode's volume, for two of the measures
with episode_volume_windows as (
    select
        s.episode_id as episode_id, s.host as host, w.window_start as window_start,
        w.array_us as array_us, w.host_us as host_us
    from {{ ref('int_tier_episode_spans') }} as s
    inner join {{ ref('int_tier_episodes_with_next_start') }} as e on s.episode_id = e.episode_id
    inner join {{ ref('int_volume_host_windows') }} as w
        on e.site = w.site and e.array = w.array and e.volume = w.volume and s.host = w.host
),

measures as (
    select episode_id, host, window_start, 'array_us' as measure, array_us as value
    from episode_volume_windows
    union all
    select episode_id, host, window_start, 'host_us' as measure, host_us as value
    from episode_volume_windows
    union all
    select s.episode_id, s.host, b.window_start, 'batch_requests' as measure, b.batch_requests as value
    from {{ ref('int_tier_episode_spans') }} as s
    inner join {{ ref('int_host_batch_windows') }} as b on s.host = b.host
    union all
    select s.episode_id, s.host, f.window_start, 'file_us' as measure, assumeNotNull(f.file_us) as value
    from {{ ref('int_tier_episode_spans') }} as s
    inner join {{ ref('int_host_file_windows') }} as f on s.host = f.host
    where has(s.disks, f.disk) and f.file_us is not null
    union all
    select s.episode_id, s.host, t.window_start, 'tier0_share' as measure, t.tier0_share as value
    from {{ ref('int_tier_episode_spans') }} as s
    inner join {{ ref('int_tier_episodes_with_next_start') }} as e on s.episode_id = e.episode_id
    inner join {{ ref('int_volume_tier_windows') }} as t on e.array = t.array and e.volume = t.volume
)

select
    m.episode_id as episode_id,
    m.host as host,
    m.measure as measure,
    tupleElement(arraySort(groupArrayIf(
        (m.window_start, m.value), m.window_start >= s.before_from and m.window_start < s.before_to
    )), 2) as before,
    tupleElement(arraySort(groupArrayIf(
        (m.window_start, m.value),
        m.window_start >= s.settled_at and m.window_start < s.settled_at + toIntervalSecond(s.period_s)
    )), 2) as after
from measures as m
inner join {{ ref('int_tier_episode_spans') }} as s on m.episode_id = s.episode_id and m.host = s.host
group by m.episode_id, m.host, m.measure
