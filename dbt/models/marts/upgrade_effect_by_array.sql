-- Every firmware change of every array: its service-time figures over matched periods before and after the
-- change, per direction, each change of the share of fast I/Os with a 95% bootstrap interval. A period is a
-- whole hour where the array's data holds at least 6 hours on each side of the change (the nearest, up to
-- 24 each way), else a minute (up to 60 each way), so that a run shorter than that (the 20-minute demo)
-- has an effect too; the hour or minute of the change itself is left out, and each side takes the same
-- number of periods with data, the nearest to the change. share_fast is the share of I/Os at or under
-- 0.125 ms (buckets 0..4, the Express Writes figure); p99_ms comes from the merged histogram of the side
-- (serviceTimeQuantile).
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
    from changes as c
    inner join array_hours as h on c.array = h.array
    where abs(dateDiff('hour', toStartOfHour(c.changed_at), h.period_start)) between 1 and 24
    group by c.array, c.changed_at
),

-- each change's period: an hour where the data holds 6 of them on each side, else a minute
timed as (
    select
        c.*,
        if(s.hours >= 6, 'hour', 'minute') as period
    from changes as c
    left join hours_each_side as s on c.array = s.array and c.changed_at = s.changed_at
),

minute_changes as (
    select array, changed_at
    from timed
    where period = 'minute'
),

-- the minutes an upgrade effect reads, bounded to the arrays and times that need them (the 1-minute rollup holds
-- every volume's): constant bounds, which the read of the rollup's primary key uses
by_minute as (
    select m.period_start, m.array, m.direction, m.bucket, m.ios
    from {{ ref('stg_array_service_time_hist_1m') }} as m
    where
        m.array in (select mc.array from minute_changes as mc)
        and m.period_start >= (select min(mc.changed_at) - toIntervalMinute(61) from minute_changes as mc)
        and m.period_start <= (select max(mc.changed_at) + toIntervalMinute(61) from minute_changes as mc)
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
            t.period as period, h.direction as direction,
            dateDiff('{{ period }}', toStartOf{{ period | capitalize }}(t.changed_at), h.period_start) as period_offset,
            sumMap([h.bucket], [h.ios]) as histogram
        from timed as t
        inner join {{ source }} as h on t.array = h.array
        where t.period = '{{ period }}' and period_offset != 0 and abs(period_offset) <= {{ reach }}
        group by
            t.array, t.customer, t.site, t.array_model, t.from_firmware, t.to_firmware, t.changed_at, t.period,
            h.direction, period_offset
    {%- endfor %}
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
        from around
    ) as ranked
    where nearness <= periods_each_way
),

sides as (
    select
        array, customer, site, array_model, from_firmware, to_firmware, changed_at, period, direction,
        any(periods_each_way) as matched_periods,
        sumMapIf(histogram.1, histogram.2, period_offset < 0) as before,
        sumMapIf(histogram.1, histogram.2, period_offset > 0) as after,
        -- per period, its fast I/Os and all its I/Os: what the bootstrap resamples
        groupArrayIf(arraySum(arrayFilter((c, b) -> b <= 4, histogram.2, histogram.1)), period_offset < 0)
            as fast_before_periods,
        groupArrayIf(arraySum(histogram.2), period_offset < 0) as ios_before_periods,
        groupArrayIf(arraySum(arrayFilter((c, b) -> b <= 4, histogram.2, histogram.1)), period_offset > 0)
            as fast_after_periods,
        groupArrayIf(arraySum(histogram.2), period_offset > 0) as ios_after_periods
    from matched
    group by array, customer, site, array_model, from_firmware, to_firmware, changed_at, period, direction
),

-- the change of share_fast, resampled 2,000 times: each side's periods drawn with replacement (by hash, so
-- a rebuild gives the same interval), its share the drawn periods' fast I/Os over their I/Os
resampled as (
    select
        *,
        cityHash64(array, changed_at, direction) as seed,
        arrayMap(
            r -> arraySum(arrayMap(
                j -> fast_after_periods[1 + intHash64(seed + r * 4096 + j * 2 + 1) % matched_periods],
                range(matched_periods)
            ))
            / arraySum(arrayMap(
                j -> ios_after_periods[1 + intHash64(seed + r * 4096 + j * 2 + 1) % matched_periods],
                range(matched_periods)
            ))
            - arraySum(arrayMap(
                j -> fast_before_periods[1 + intHash64(seed + r * 4096 + j * 2) % matched_periods],
                range(matched_periods)
            ))
            / arraySum(arrayMap(
                j -> ios_before_periods[1 + intHash64(seed + r * 4096 + j * 2) % matched_periods],
                range(matched_periods)
            )),
            range(2000)
        ) as share_fast_deltas
    from sides
)

select
    array, customer, site, array_model, from_firmware, to_firmware, changed_at, direction, period, matched_periods,
    arraySum(before.2) as ios_before,
    arraySum(after.2) as ios_after,
    arraySum(arrayFilter((c, b) -> b <= 4, before.2, before.1)) / ios_before as share_fast_before,
    arraySum(arrayFilter((c, b) -> b <= 4, after.2, after.1)) / ios_after as share_fast_after,
    share_fast_after - share_fast_before as share_fast_delta,
    arrayReduce('quantileExact(0.025)', share_fast_deltas) as share_fast_delta_ci_low,
    arrayReduce('quantileExact(0.975)', share_fast_deltas) as share_fast_delta_ci_high,
    serviceTimeQuantile(before.1, before.2, 0.99) as p99_ms_before,
    serviceTimeQuantile(after.1, after.2, 0.99) as p99_ms_after,
    p99_ms_after - p99_ms_before as p99_ms_delta
from resampled
where matched_periods > 0 and ios_before > 0 and ios_after > 0
