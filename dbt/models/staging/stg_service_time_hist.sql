-- Array service-time histograms: I/Os per 3PAR bucket per sample, deduplicated (FINAL), with the
-- bucket's upper bound. Bucket n holds (2^(n-8), 2^(n-7)] ms; bucket 31 is open-ended (NULL bound).
select
    window_start,
    sample_ts,
    site,
    array,
    volume,
    direction,
    bucket,
    if(bucket = 31, null, pow(2, bucket - 7)) as bucket_upper_ms,
    ios
from {{ source('sanlens', 'service_time_hist_10s') }} final
where source = 'array'
