-- The install-base histogram: across every array of a model and firmware, the share of I/Os per
-- service-time bucket, per hour and direction (the Express Writes figure). Each sample counts for the
-- firmware its array ran during the sample's interval (attributed in the rollups). Read from the fleet
-- level of the rollups, one row per model, firmware, direction, hour and bucket already (the arrays
-- summed and counted there), so only the shares are left to compute.
select
    array_model,
    firmware,
    direction,
    period_start,
    bucket,
    bucket_upper_ms,
    ios,
    ios / sum(ios) over (partition by array_model, firmware, direction, period_start) as share,
    sum(ios) over (partition by array_model, firmware, direction, period_start order by bucket)
    / sum(ios) over (partition by array_model, firmware, direction, period_start) as share_within_bucket_upper_ms,
    arrays
from {{ ref('stg_fleet_service_time_hist') }}
