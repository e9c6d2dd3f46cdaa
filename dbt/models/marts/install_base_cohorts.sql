-- The install base's cohorts per hour: per array model, firmware and direction, the arrays behind the cohort,
-- its share of I/Os within 0.125 ms (buckets 0..4, cumulative) three ways: weighted by I/O (the cohort's I/Os
-- pooled, as install_base_histogram's shares are), weighted by array (each array's own share, averaged) and the
-- spread of the arrays' own shares; its share in the bucket of 0.0625 to 0.125 ms (bucket 4 alone, the Express
-- Writes study's bar) weighted by I/O and by array; and the busiest array and its part of the I/Os.
-- The figures of queries/cohorts.py, which the report and the install-base dashboard compute over
-- any span. Read from the per-array level (FINAL): the fleet level has no array's own share.
with per_array as (
    select
        period_start, array_model, firmware, direction, array,
        sumIf(ios, bucket = 4) as array_in_bucket_ios,
        sumIf(ios, bucket <= 4) as array_within_ios,
        sum(ios) as array_ios
    from {{ ref('stg_array_service_time_hist') }}
    group by period_start, array_model, firmware, direction, array
    having array_ios > 0
),

per_cohort as (
    select
        period_start, array_model, firmware, direction,
        count() as arrays,
        sum(array_ios) as ios,
        sum(array_in_bucket_ios) / ios as share_0_0625_to_0_125_ms,
        avg(array_in_bucket_ios / array_ios) as share_0_0625_to_0_125_ms_array_mean,
        sum(array_within_ios) / ios as share_within_0_125_ms,
        groupArray(array_within_ios / array_ios) as shares,
        argMax(array, array_ios) as busiest_array,
        max(array_ios) / ios as busiest_array_ios_share
    from per_array
    group by period_start, array_model, firmware, direction
)

select
    period_start,
    array_model,
    firmware,
    direction,
    arrays,
    ios,
    share_0_0625_to_0_125_ms,
    share_0_0625_to_0_125_ms_array_mean,
    share_within_0_125_ms,
    arrayAvg(shares) as share_within_0_125_ms_array_mean,
    arrayMin(shares) as share_within_0_125_ms_array_min,
    arrayReduce('quantileExactInclusive(0.25)', shares) as share_within_0_125_ms_array_p25,
    arrayReduce('quantileExactInclusive(0.5)', shares) as share_within_0_125_ms_array_median,
    arrayReduce('quantileExactInclusive(0.75)', shares) as share_within_0_125_ms_array_p75,
    arrayMax(shares) as share_within_0_125_ms_array_max,
    busiest_array,
    busiest_array_ios_share
from per_cohort
