{{ config(materialized="view") }}

-- What each settled tier-migration episode did, per host with a path to the volume: the volume's array service
-- time, the host's latency on its paths to it, SQL Server's batch requests/s and the DMV file latency on those
-- disks, over matched periods before and after, each change with a 95 % moving-block bootstrap interval; and
-- the time to effect with the Tier 0 footprint then. Method: flink-jobs/tiering/README.md ("Effect").
-- A view, as are the intermediate models it reads (models/intermediate/): an episode's effect is there as soon
-- as it settles, without a dbt run.
with pivoted as (
    -- per episode and host, each measure's (mean before, mean after, change's 2.5 % and 97.5 % quantiles, blocks)
    select
        episode_id, host,
        mapFromArrays(
            groupArray(measure), groupArray((mean_before, mean_after, change_ci_low, change_ci_high, blocks))
        ) as m
    from {{ ref('int_tier_episode_changes') }}
    group by episode_id, host
)

select
    e.array as array,
    e.volume as volume,
    s.host as host,
    e.site as site,
    e.episode_id as episode_id,
    e.direction as direction,
    e.started_at as started_at,
    e.settled_at as settled_at,
    s.period_s as period_s,
    s.before_from as before_from,
    if(s.day_before, 'same hours the day before', 'just before') as before_period,
    tupleElement(p.m['tier0_share'], 1) as tier0_share_before,
    tupleElement(p.m['tier0_share'], 2) as tier0_share_after,
    {%- for measure in ['array_us', 'host_us', 'batch_requests', 'file_us'] %}
        tupleElement(p.m['{{ measure }}'], 1) as {{ measure }}_before,
        tupleElement(p.m['{{ measure }}'], 2) as {{ measure }}_after,
        tupleElement(p.m['{{ measure }}'], 3) as {{ measure }}_change_ci_low,
        tupleElement(p.m['{{ measure }}'], 4) as {{ measure }}_change_ci_high,
        tupleElement(p.m['{{ measure }}'], 5) as {{ measure }}_blocks,
        -- too few blocks for the interval's 2.5 % and 97.5 % quantiles to mean much
        toBool({{ measure }}_blocks < 10) as {{ measure }}_low_confidence,
    {%- endfor %}
    dateDiff('second', e.started_at, a.effect_window) as time_to_effect_s,
    s.host_us_level as host_us_settled,
    f.tier0_bytes as tier0_bytes_at_effect,
    f.tier0_share as tier0_share_at_effect,
    e.page_moves_up as page_moves_up,
    e.page_moves_down as page_moves_down
from {{ ref('int_tier_episode_spans') }} as s
inner join {{ ref('int_tier_episodes_with_next_start') }} as e on s.episode_id = e.episode_id
inner join pivoted as p on s.episode_id = p.episode_id and s.host = p.host
left join {{ ref('int_tier_episode_effect_at') }} as a on s.episode_id = a.episode_id and s.host = a.host
left join {{ ref('int_tier_episode_footprint_at_effect') }} as f on s.episode_id = f.episode_id and s.host = f.host
