-- The install-base histogram: across every array of a model and firmware, the share of I/Os per
-- service-time bucket, per hour and direction (the Express Writes figure). Each sample counts for the
-- firmware its array ran during the sample's interval (attributed in the rollups).
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
from {{ ref('stg_array_service_time_hist') }}
group by array_model, firmware, direction, period_start, bucket
