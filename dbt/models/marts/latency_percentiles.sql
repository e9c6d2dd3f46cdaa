-- Service-time percentiles (p50, p90, p99, p99.9) per array model, firmware, direction and hour, read
-- from the merged install-base histogram, never averaged from per-array percentiles. Within the
-- bucket that holds the percentile, the value is interpolated linearly between the bucket's bounds
-- (2^(n-8), 2^(n-7)] ms: the true percentile lies in the same bucket, so the error is at most the
-- bucket's width, a factor of 2 (for bucket 0: at most 2^-7 ms). Bucket 31 is open-ended: a
-- percentile there is reported at its lower bound, 2^23 ms.
with histograms as (
    select
        array_model,
        firmware,
        direction,
        period_start,
        arrayMap(b -> tupleElement(b, 2), arraySort(b -> tupleElement(b, 1), groupArray((bucket, ios)))) as counts,
        arrayMap(b -> tupleElement(b, 1), arraySort(b -> tupleElement(b, 1), groupArray((bucket, ios)))) as buckets,
        sum(ios) as total
    from {{ ref('install_base_histogram') }}
    group by array_model, firmware, direction, period_start
    having total > 0
),
located as (
    select
        *,
        quantile,
        arrayCumSum(counts) as cumulative,
        arrayFirstIndex(c -> c >= quantile * total, arrayCumSum(counts)) as i,
        toUInt8(buckets[i]) as bucket,
        counts[i] as in_bucket,
        if(i = 1, 0, cumulative[i - 1]) as below
    from histograms
    array join [0.5, 0.9, 0.99, 0.999] as quantile
)
select
    array_model,
    firmware,
    direction,
    period_start,
    quantile,
    bucket,
    if(bucket = 0, 0, pow(2, bucket - 8)) as bucket_lower_ms,
    if(bucket = 31, pow(2, 23), pow(2, bucket - 7)) as bucket_upper_ms,
    if(bucket = 31, bucket_lower_ms,
       bucket_lower_ms + (bucket_upper_ms - bucket_lower_ms) * (quantile * total - below) / in_bucket) as latency_ms,
    total as ios
from located
