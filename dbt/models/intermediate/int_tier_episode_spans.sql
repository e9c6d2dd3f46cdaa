-- Per settled tier-migration episode and host with a path to its volume: the matched periods before and after,
-- and the level the host's latency settled at. Method: flink-jobs/tiering/README.md ("Effect").
select
    e.episode_id as episode_id,
    w.host as host,
    e.started_at as started_at,
    e.settled_at as settled_at,
    any(w.disks) as disks,
    min(w.window_start) as data_from,
    least(e.next_started_at, max(w.window_start) + toIntervalSecond(10)) as data_to,
    -- the periods' length: an hour, or as much as the data allows on both sides
    least(
        3600,
        dateDiff('second', data_from, e.started_at) + 10,
        dateDiff('second', e.settled_at, data_to)
    ) as period_s,
    -- the level the host's latency settled at: the median of the last minute before the data ends
    arrayReduce(
        'median',
        arraySlice(
            tupleElement(
                arraySort(groupArrayIf(
                    (w.window_start, w.host_us),
                    w.window_start >= e.settled_at and w.window_start < e.next_started_at
                )),
                2
            ),
            -6
        )
    ) as host_us_level,
    -- same hours of the day before where the data reaches back that far, else just before the episode
    data_from <= e.settled_at - toIntervalDay(1)
    and e.settled_at - toIntervalDay(1) + toIntervalSecond(period_s) <= e.started_at as day_before,
    if(day_before, e.settled_at - toIntervalDay(1), e.started_at - toIntervalSecond(period_s - 10)) as before_from,
    before_from + toIntervalSecond(period_s) as before_to
from {{ ref('int_tier_episodes_with_next_start') }} as e
inner join {{ ref('int_volume_host_windows') }} as w
    on e.site = w.site and e.array = w.array and e.volume = w.volume
where e.settled_at is not null
group by e.episode_id, w.host, e.started_at, e.settled_at, e.next_started_at
having period_s >= 60
