-- Every firmware change of every array: its service-time figures over the same number of whole hours
-- before and after the change (up to 24 each way; the hour of the change itself is left out), per
-- direction. share_fast is the share of I/Os at or under 0.125 ms (buckets 0..4, the Express Writes
-- figure); p99_ms comes from the merged histogram of the period (serviceTimeQuantile).
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
hourly as (
    select array, direction, period_start, sumMap([bucket], [ios]) as histogram
    from {{ ref('stg_array_service_time_hist') }}
    group by array, direction, period_start
),
around as (
    select
        c.*, h.direction, h.histogram,
        dateDiff('hour', toStartOfHour(c.changed_at), h.period_start) as offset_h
    from changes as c
    inner join hourly as h on c.array = h.array
    where offset_h != 0 and abs(offset_h) <= 24
),
matched as (
    select
        *,
        least(uniqExactIf(offset_h, offset_h < 0) over w, uniqExactIf(offset_h, offset_h > 0) over w) as hours_each_way
    from around
    window w as (partition by array, changed_at)
),
periods as (
    select
        array, customer, site, array_model, from_firmware, to_firmware, changed_at, direction,
        any(hours_each_way) as matched_hours,
        sumMapIf(histogram.1, histogram.2, offset_h < 0) as before,
        sumMapIf(histogram.1, histogram.2, offset_h > 0) as after
    from matched
    where abs(offset_h) <= hours_each_way
    group by array, customer, site, array_model, from_firmware, to_firmware, changed_at, direction
)
select
    array, customer, site, array_model, from_firmware, to_firmware, changed_at, direction, matched_hours,
    arraySum(before.2) as ios_before,
    arraySum(after.2) as ios_after,
    arraySum(arrayFilter((c, b) -> b <= 4, before.2, before.1)) / ios_before as share_fast_before,
    arraySum(arrayFilter((c, b) -> b <= 4, after.2, after.1)) / ios_after as share_fast_after,
    share_fast_after - share_fast_before as share_fast_delta,
    serviceTimeQuantile(before.1, before.2, 0.99) as p99_ms_before,
    serviceTimeQuantile(after.1, after.2, 0.99) as p99_ms_after,
    p99_ms_after - p99_ms_before as p99_ms_delta
from periods
where matched_hours > 0 and ios_before > 0 and ios_after > 0
