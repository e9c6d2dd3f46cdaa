-- The install-base histogram: across every array of a model and firmware, the share of I/Os per
-- service-time bucket, per hour and direction (the Express Writes figure). A sample is attributed to
-- the firmware the array ran during its interval: the latest version that started before the
-- interval ended (ASOF on sample_ts > valid_from).
with attributed as (
    select
        f.model as array_model,
        f.firmware as firmware,
        h.direction as direction,
        toStartOfHour(h.window_start) as period_start,
        h.bucket as bucket,
        h.bucket_upper_ms as bucket_upper_ms,
        h.ios as ios,
        h.array as array
    from {{ ref('stg_service_time_hist') }} as h
    asof inner join {{ ref('stg_array_firmware') }} as f
        on h.array = f.array and h.sample_ts > f.valid_from
)
select
    array_model,
    firmware,
    direction,
    period_start,
    bucket,
    any(bucket_upper_ms) as bucket_upper_ms,
    sum(ios) as ios,
    ios / sum(ios) over (partition by array_model, firmware, direction, period_start) as share,
    uniqExact(array) as arrays
from attributed
group by array_model, firmware, direction, period_start, bucket
