-- Hourly service-time histograms per array (volumes summed), deduplicated (FINAL), with each bucket's
-- upper bound (NULL for the open-ended bucket 31): what the fleet views read.
select
    period_start,
    customer,
    site,
    array,
    array_model,
    firmware,
    direction,
    bucket,
    if(bucket = 31, null, serviceTimeBucketUpperMs(bucket)) as bucket_upper_ms,
    ios
from {{ source('sanlens', 'service_time_hist_array_1h') }} final
