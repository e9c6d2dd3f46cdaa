{{ config(materialized="view") }}

-- What each settled tier-migration episode did, per host with a path to the volume: the volume's array service
-- time, the host's latency on its paths to it, SQL Server's batch requests/s and the DMV file latency on those
-- disks, over matched periods before and after, each change with a 95 % moving-block bootstrap interval; and
-- the time to effect with the Tier 0 footprint then. Method: flink-jobs/tiering/README.md ("Effect").
-- A view: an episode's effect is there as soon as it settles, without a dbt run.
with episodes as (
    select
        *,
        -- the volume's next episode ends this one's after period
        leadInFrame(started_at, 1, toDateTime64('2299-12-31 00:00:00', 3, 'UTC')) over (
            partition by site, array, volume order by started_at
            rows between unbounded preceding and unbounded following
        ) as next_started_at
    from {{ ref('stg_tier_episodes') }}
),

-- per window, the host's I/O-weighted latency and the array's service time on its paths to each volume
volume_windows as (
    select
        site, array, volume, host, window_start,
        groupUniqArray(disk) as disks,
        sum(host_us * ios) / sum(ios) as host_us,
        sum(array_us * ios) / sum(ios) as array_us
    from {{ ref('stg_path_latency') }}
    group by site, array, volume, host, window_start
),

spans as (
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
    from episodes as e
    inner join volume_windows as w on e.site = w.site and e.array = w.array and e.volume = w.volume
    where e.settled_at is not null
    group by e.episode_id, w.host, e.started_at, e.settled_at, e.next_started_at
    having period_s >= 60
),

batch_windows as (
    select
        host,
        toStartOfInterval(ts, toIntervalSecond(10)) as window_start,
        avg(value) as batch_requests
    from {{ ref('stg_metrics') }}
    where metric = 'sql.batch_requests'
    group by host, window_start
),

-- sys.dm_io_virtual_file_stats per database file: latency I/O-weighted over the files and both directions
file_windows as (
    select
        host, disk, window_start,
        sum(reads * read_us + writes * write_us) / nullIf(sum(reads + writes), 0) as file_us
    from (
        select
            host, disk, file,
            toStartOfInterval(ts, toIntervalSecond(10)) as window_start,
            anyIf(value, metric = 'file.reads') as reads,
            anyIf(value, metric = 'file.writes') as writes,
            anyIf(value, metric = 'file.read_latency') as read_us,
            anyIf(value, metric = 'file.write_latency') as write_us
        from {{ ref('stg_metrics') }}
        where metric in ('file.reads', 'file.writes', 'file.read_latency', 'file.write_latency')
        group by host, disk, file, window_start
    )
    group by host, disk, window_start
),

tier_windows as (
    select
        array, volume,
        toStartOfInterval(ts, toIntervalSecond(10)) as window_start,
        anyIf(value, metric = 'volume.tier0_bytes') as tier0_bytes,
        tier0_bytes / (tier0_bytes + anyIf(value, metric = 'volume.tier1_bytes')) as tier0_share
    from {{ ref('stg_metrics') }}
    where metric in ('volume.tier0_bytes', 'volume.tier1_bytes')
    group by array, volume, window_start
),

-- every measure's windows of each episode and host, in long form
measures as (
    select
        s.episode_id as episode_id, s.host as host, w.window_start as window_start,
        'array_us' as measure, w.array_us as value
    from spans as s
    inner join episodes as e on s.episode_id = e.episode_id
    inner join volume_windows as w
        on e.site = w.site and e.array = w.array and e.volume = w.volume and s.host = w.host
    union all
    select
        s.episode_id as episode_id, s.host as host, w.window_start as window_start,
        'host_us' as measure, w.host_us as value
    from spans as s
    inner join episodes as e on s.episode_id = e.episode_id
    inner join volume_windows as w
        on e.site = w.site and e.array = w.array and e.volume = w.volume and s.host = w.host
    union all
    select s.episode_id, s.host, b.window_start, 'batch_requests' as measure, b.batch_requests as value
    from spans as s inner join batch_windows as b on s.host = b.host
    union all
    select s.episode_id, s.host, f.window_start, 'file_us' as measure, assumeNotNull(f.file_us) as value
    from spans as s inner join file_windows as f on s.host = f.host
    where has(s.disks, f.disk) and f.file_us is not null
    union all
    select s.episode_id, s.host, t.window_start, 'tier0_share' as measure, t.tier0_share as value
    from spans as s
    inner join episodes as e on s.episode_id = e.episode_id
    inner join tier_windows as t on e.array = t.array and e.volume = t.volume
),

periods as (
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
    inner join spans as s on m.episode_id = s.episode_id and m.host = s.host
    group by m.episode_id, m.host, m.measure
),

-- the change after - before, resampled 2,000 times in blocks of 6 windows (a minute: neighbouring windows are
-- correlated, single windows resampled alone would make the interval too narrow)
bootstrap as (
    select
        episode_id, host, measure, before, after,
        arrayMap(
            r -> arrayAvg(arrayFlatten(arrayMap(
                k -> arraySlice(
                    after, 1 + cityHash64(episode_id, host, measure, r, k, 1) % greatest(length(after) - 5, 1), 6
                ),
                range(toUInt32(ceil(length(after) / 6)))
            )))
            - arrayAvg(arrayFlatten(arrayMap(
                k -> arraySlice(
                    before, 1 + cityHash64(episode_id, host, measure, r, k, 0) % greatest(length(before) - 5, 1), 6
                ),
                range(toUInt32(ceil(length(before) / 6)))
            ))),
            range(2000)
        ) as changes
    from periods
    where length(before) >= 6 and length(after) >= 6
),

effects as (
    select
        episode_id, host, measure,
        (
            arrayAvg(before),
            arrayAvg(after),
            arrayReduce('quantileExact(0.025)', changes),
            arrayReduce('quantileExact(0.975)', changes),
            -- the independent blocks the interval rests on: whole minutes of the shorter period's windows
            intDiv(least(length(before), length(after)), 6)
        ) as figures
    from bootstrap
),

-- the first window after the start where the host's latency is within 10 % of the level it settled at
effect_at as (
    select
        s.episode_id as episode_id,
        s.host as host,
        min(w.window_start) as effect_window
    from spans as s
    inner join episodes as e on s.episode_id = e.episode_id
    inner join volume_windows as w
        on e.site = w.site and e.array = w.array and e.volume = w.volume and s.host = w.host
    where w.window_start > s.started_at and abs(w.host_us - s.host_us_level) <= 0.1 * s.host_us_level
    group by s.episode_id, s.host
),

-- the Tier 0 footprint in the effect window. The arrays' poll can miss a window (a live poll does, now and then):
-- then it is interpolated between the volume's samples either side of it, at most a minute away, as the share's
-- chart draws it; without a sample that near it is unknown (null), not zero.
effect_footprint as (
    select
        a.episode_id as episode_id,
        a.host as host,
        countIf(t.window_start <= a.effect_window) > 0 as has_before,
        countIf(t.window_start >= a.effect_window) > 0 as has_after,
        argMaxIf(
            (t.window_start, t.tier0_bytes, t.tier0_share), t.window_start, t.window_start <= a.effect_window
        ) as before,
        argMinIf(
            (t.window_start, t.tier0_bytes, t.tier0_share), t.window_start, t.window_start >= a.effect_window
        ) as after,
        -- how far the effect window lies from the sample before it towards the one after (0: the sample before)
        if(
            has_before and has_after and tupleElement(after, 1) > tupleElement(before, 1),
            dateDiff('millisecond', tupleElement(before, 1), a.effect_window)
            / dateDiff('millisecond', tupleElement(before, 1), tupleElement(after, 1)),
            if(has_before, 0, 1)
        ) as towards_after,
        toNullable(
            tupleElement(before, 2) + towards_after * (tupleElement(after, 2) - tupleElement(before, 2))
        ) as tier0_bytes,
        toNullable(
            tupleElement(before, 3) + towards_after * (tupleElement(after, 3) - tupleElement(before, 3))
        ) as tier0_share
    from effect_at as a
    inner join episodes as e on a.episode_id = e.episode_id
    inner join tier_windows as t on e.array = t.array and e.volume = t.volume
    where
        t.window_start >= a.effect_window - toIntervalSecond(60)
        and t.window_start <= a.effect_window + toIntervalSecond(60)
    group by a.episode_id, a.host, a.effect_window
),

-- per episode and host, each measure's (mean before, mean after, change's 2.5 % and 97.5 % quantiles, blocks)
pivoted as (
    select episode_id, host, mapFromArrays(groupArray(measure), groupArray(figures)) as m
    from effects
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
from spans as s
inner join episodes as e on s.episode_id = e.episode_id
inner join pivoted as p on s.episode_id = p.episode_id and s.host = p.host
left join effect_at as a on s.episode_id = a.episode_id and s.host = a.host
left join effect_footprint as f on s.episode_id = f.episode_id and s.host = f.host
