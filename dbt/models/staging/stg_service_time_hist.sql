-- Hourly service-time histograms, deduplicated (FINAL), with each bucket's bounds. source = 'array':
-- the arrays' per-I/O counts; source = 'host_interval_avg': I/O-weighted interval averages of the
-- hosts' disks, not a per-I/O distribution. Bucket n holds (2^(n-8), 2^(n-7)] ms; bucket 31 is
-- open-ended (NULL upper bound).
select
    period_start,
    source,
    customer,
    site,
    array,
    array_model,
    firmware,
    volume,
    host,
    disk,
    direction,
    bucket,
    serviceTimeBucketLowerMs(bucket) as bucket_lower_ms,
    if(bucket = 31, null, serviceTimeBucketUpperMs(bucket)) as bucket_upper_ms,
    ios
from {{ source('sanlens', 'service_time_hist_1h') }} final
