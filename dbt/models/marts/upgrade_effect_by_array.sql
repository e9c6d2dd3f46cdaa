-- Every firmware change of every array: its service-time figures over matched periods before and after the
-- change, per direction, one row per figure (metric), each with a 95% bootstrap interval before, after, of the
-- change and of the ratio after/before. A period is a whole hour where the array's data holds at least 6 hours on
-- each side of the change (the nearest, up to 24 each way), else a minute (up to 60 each way), so that a run
-- shorter than that (the 20-minute demo) has an effect too; the hour or minute of the change itself is left out,
-- and each side takes the same number of periods with data, the nearest to the change, none beyond the array's
-- previous or next firmware change. Every figure comes from
-- the merged histogram of a side's periods (the macros of macros/service_time.sql), but the peak: the largest
-- mean of a minute among the side's periods.
{{ config(query_settings={'max_block_size': 1024}) }}
with changes as (
    select * from (
        select
            array,
            customer,
            site,
            model as array_model,
            lagInFrame(firmware) over (
                partition by array order by valid_from
                rows between 1 preceding and current row
            ) as from_firmware,
            firmware as to_firmware,
            valid_from as changed_at
        from {{ ref('stg_array_firmware') }}
    )
    where from_firmware != '' and from_firmware != to_firmware
),

-- each change's bounds: the array ran from_firmware since its previous change and to_firmware until its next, so
-- neither side takes a period of another firmware (a demo played again republishes its arrays' first firmware,
-- and the earlier run's minutes on the new one would count as "before")
bounded as (
    select
        *,
        lagInFrame(toNullable(changed_at)) over same_array as previous_change_at,
        leadInFrame(toNullable(changed_at)) over same_array as next_change_at
    from changes
    window same_array as (
        partition by array order by changed_at rows between unbounded preceding and unbounded following
    )
),

array_hours as (
    select distinct array, period_start from {{ ref('stg_array_service_time_hist') }}
),

-- the hours with data on the sparser side of each change, within 24 hours of it
hours_each_side as (
    select
        c.array as array,
        c.changed_at as changed_at,
        least(
            uniqExactIf(h.period_start, h.period_start < toStartOfHour(c.changed_at)),
            uniqExactIf(h.period_start, h.period_start > toStartOfHour(c.changed_at))
        ) as hours
    from bounded as c
    inner join array_hours as h on c.array = h.array
    where
        abs(dateDiff('hour', toStartOfHour(c.changed_at), h.period_start)) between 1 and 24
        and (c.previous_change_at is null or h.period_start > toStartOfHour(c.previous_change_at))
        and (c.next_change_at is null or h.period_start < toStartOfHour(c.next_change_at))
    group by c.array, c.changed_at
),

-- each change's period: an hour where the data holds 6 of them on each side, else a minute
timed as (
    select
        c.*,
        if(s.hours >= 6, 'hour', 'minute') as period
    from bounded as c
    left join hours_each_side as s on c.array = s.array and c.changed_at = s.changed_at
),

-- the minutes around the changes (a minute change's periods, an hour change's peaks), bounded to the arrays and
-- times that need them (the 1-minute rollup holds every volume's): constant bounds, which the read of the rollup's
-- primary key uses
by_minute as (
    select m.period_start, m.array, m.direction, m.bucket, m.ios
    from {{ ref('stg_array_service_time_hist_1m') }} as m
    where
        m.array in (select t.array from timed as t)
        and m.period_start >= (select min(t.changed_at) - toIntervalHour(25) from timed as t)
        and m.period_start <= (select max(t.changed_at) + toIntervalHour(25) from timed as t)
),

-- the peak of each hour: its largest mean of a minute
hour_peaks as (
    select
        array, direction, toStartOfHour(period_start) as hour_start,
        max(minute_mean_ms) as peak_minute_mean_ms
    from (
        select
            array, direction, period_start,
            sum(ios * {{ service_time_midpoint_ms('bucket') }}) / sum(ios) as minute_mean_ms
        from by_minute
        group by array, direction, period_start
        having sum(ios) > 0
    )
    group by array, direction, hour_start
),

-- each period's histogram around its change, offset in periods from the period of the change
around as (
    {%- for period, source, reach in [
        ('hour', ref('stg_array_service_time_hist'), 24), ('minute', 'by_minute', 60)
    ] %}
        {%- if not loop.first %}
            union all
        {%- endif %}
        select
            t.array as array, t.customer as customer, t.site as site, t.array_model as array_model,
            t.from_firmware as from_firmware, t.to_firmware as to_firmware, t.changed_at as changed_at,
            t.period as period, h.direction as direction, h.period_start as period_start,
            dateDiff('{{ period }}', toStartOf{{ period | capitalize }}(t.changed_at), h.period_start) as period_offset,
            sumMap([h.bucket], [h.ios]) as histogram
        from timed as t
        inner join {{ source }} as h on t.array = h.array
        where
            t.period = '{{ period }}' and period_offset != 0 and abs(period_offset) <= {{ reach }}
            and (
                t.previous_change_at is null
                or h.period_start > toStartOf{{ period | capitalize }}(t.previous_change_at)
            )
            and (t.next_change_at is null or h.period_start < toStartOf{{ period | capitalize }}(t.next_change_at))
        group by
            t.array, t.customer, t.site, t.array_model, t.from_firmware, t.to_firmware, t.changed_at, t.period,
            h.direction, h.period_start, period_offset
    {%- endfor %}
),

-- each period's dense histogram and peak: a minute's own mean, an hour's largest minute (NaN where the 1-minute
-- rollup no longer holds the hour: it keeps 30 days)
periods as (
    select
        a.*,
        {{ dense_histogram('a.histogram') }} as counts,
        if(
            a.period = 'minute',
            {{ service_time_mean_ms(dense_histogram('a.histogram')) }},
            if(p.peak_minute_mean_ms > 0, p.peak_minute_mean_ms, toFloat64('nan'))
        ) as peak_ms
    from around as a
    left join hour_peaks as p on a.array = p.array and a.direction = p.direction and a.period_start = p.hour_start
),

-- the nearest periods on each side, as many as the sparser side has
matched as (
    select * from (
        select
            *,
            row_number() over (
                partition by array, changed_at, direction, period_offset > 0 order by abs(period_offset)
            ) as nearness,
            least(
                countIf(period_offset < 0) over (partition by array, changed_at, direction),
                countIf(period_offset > 0) over (partition by array, changed_at, direction)
            ) as periods_each_way
        from periods
    ) as ranked
    where nearness <= periods_each_way
),

sides as (
    select
        array, customer, site, array_model, from_firmware, to_firmware, changed_at, period, direction,
        any(periods_each_way) as matched_periods,
        groupArrayIf(counts, period_offset < 0) as before_periods,
        groupArrayIf(peak_ms, period_offset < 0) as before_peaks,
        groupArrayIf(counts, period_offset > 0) as after_periods,
        groupArrayIf(peak_ms, period_offset > 0) as after_peaks
    from matched
    group by array, customer, site, array_model, from_firmware, to_firmware, changed_at, period, direction
),

-- resample 0 is the data; resamples 1 to 2,000 weigh each period of a side by a Poisson(1) count (the Poisson
-- bootstrap: drawing the periods with replacement, in the form that lets a resample's histogram be one weighted
-- sum), drawn by hash so that a rebuild gives the same intervals; a resample that weighs a side's periods all 0
-- is drawn again in effect: left out
resampled as (
    select
        array, customer, site, array_model, from_firmware, to_firmware, changed_at, period, direction,
        matched_periods, resample,
        cityHash64(array, changed_at, direction) as seed,
        arrayMap(
            p -> if(resample = 0, 1, {{ poisson_1_draw('cityHash64(seed, resample, p, 0)') }}), range(matched_periods)
        ) as before_weights,
        arrayMap(
            p -> if(resample = 0, 1, {{ poisson_1_draw('cityHash64(seed, resample, p, 1)') }}), range(matched_periods)
        ) as after_weights,
        arrayReduce('sumForEach', arrayMap((w, h) -> arrayMap(c -> w * c, h), before_weights, before_periods))
            as before_histogram,
        arrayReduce('sumForEach', arrayMap((w, h) -> arrayMap(c -> w * c, h), after_weights, after_periods))
            as after_histogram,
        if(
            arrayExists(v -> isNaN(v), before_peaks), nan,
            arrayMax(arrayMap((w, v) -> if(w > 0, v, 0), before_weights, before_peaks))
        ) as before_peak,
        if(
            arrayExists(v -> isNaN(v), after_peaks), nan,
            arrayMax(arrayMap((w, v) -> if(w > 0, v, 0), after_weights, after_peaks))
        ) as after_peak
    from sides
    array join range(2001) as resample
    where matched_periods > 0 and arraySum(before_weights) > 0 and arraySum(after_weights) > 0
),

figures as (
    select
        array, customer, site, array_model, from_firmware, to_firmware, changed_at, period, direction,
        matched_periods, resample, metric, before_value, after_value,
        arraySum(before_histogram) as before_ios,
        arraySum(after_histogram) as after_ios
    from resampled
    array join
        [
            'share_0_0625_to_0_125_ms', 'share_within_0_125_ms', 'mean_ms', 'p50_ms', 'p99_ms', 'peak_minute_mean_ms'
        ] as metric,
    {%- for side in ['before', 'after'] %}
        [
            {{ share_0_0625_to_0_125_ms(side ~ '_histogram') }},
            {{ share_within_0_125_ms(side ~ '_histogram') }},
            {{ service_time_mean_ms(side ~ '_histogram') }},
            {{ service_time_quantile_ms(side ~ '_histogram', 0.5) }},
            {{ service_time_quantile_ms(side ~ '_histogram', 0.99) }},
            {{ side }}_peak
        ] as {{ side }}_value{{ ',' if loop.first }}
    {%- endfor %}
),

-- per figure, the data's value and its resamples'
per_metric as (
    select
        array, customer, site, array_model, from_firmware, to_firmware, changed_at, direction, period,
        matched_periods, metric,
        anyIf(before_ios, resample = 0) as ios_before,
        anyIf(after_ios, resample = 0) as ios_after,
        anyIf(before_value, resample = 0) as before,
        anyIf(after_value, resample = 0) as after,
        groupArrayIf(before_value, resample > 0) as befores,
        groupArrayIf(after_value, resample > 0) as afters
    from figures
    group by
        array, customer, site, array_model, from_firmware, to_firmware, changed_at, direction, period,
        matched_periods, metric
)

select
    array, customer, site, array_model, from_firmware, to_firmware, changed_at, direction, period, matched_periods,
    metric, ios_before, ios_after,
    before,
    arrayReduce('quantileExact(0.025)', befores) as before_ci_low,
    arrayReduce('quantileExact(0.975)', befores) as before_ci_high,
    after,
    arrayReduce('quantileExact(0.025)', afters) as after_ci_low,
    arrayReduce('quantileExact(0.975)', afters) as after_ci_high,
    after - before as delta,
    arrayReduce('quantileExact(0.025)', arrayMap((b, a) -> a - b, befores, afters)) as delta_ci_low,
    arrayReduce('quantileExact(0.975)', arrayMap((b, a) -> a - b, befores, afters)) as delta_ci_high,
    if(before > 0, after / before, nan) as ratio,
    arrayReduce('quantileExact(0.025)', arrayFilter(x -> isFinite(x), arrayMap((b, a) -> a / b, befores, afters)))
        as ratio_ci_low,
    arrayReduce('quantileExact(0.975)', arrayFilter(x -> isFinite(x), arrayMap((b, a) -> a / b, befores, afters)))
        as ratio_ci_high
from per_metric
where isFinite(before) and isFinite(after) and ios_before > 0 and ios_after > 0
