-- The fleet cohort comparison of a firmware upgrade: per array model, upgrade path and direction, the
-- mean over the upgraded arrays of their before/after figures (upgrade_effect_by_array), and a 95%
-- percentile-bootstrap confidence interval of the mean change, resampling arrays with replacement
-- (2,000 resamples, drawn by hash so a rebuild gives the same interval). An interval that excludes
-- zero is a change the fleet shows beyond array-to-array variation; with one array it has no width (that
-- array's own interval is in upgrade_effect_by_array). The arrays' lowest and highest change show the spread.
with per_metric as (
    select
        array_model, from_firmware, to_firmware, direction, metric,
        uniqExact(array) as arrays,
        count() as upgrades,
        avg(before) as mean_before,
        avg(after) as mean_after,
        groupArray(after - before) as deltas
    from {{ ref('upgrade_effect_by_array') }}
    array join
        ['share_fast', 'p99_ms'] as metric,
        [share_fast_before, p99_ms_before] as before,
        [share_fast_after, p99_ms_after] as after
    group by array_model, from_firmware, to_firmware, direction, metric
),
resampled as (
    select
        *,
        arrayMap(
            r -> arrayAvg(arrayMap(j -> deltas[1 + cityHash64(r, j) % upgrades], range(upgrades))),
            range(2000)
        ) as resample_means
    from per_metric
)
select
    array_model, from_firmware, to_firmware, direction, metric, arrays, upgrades,
    mean_before,
    mean_after,
    arrayAvg(deltas) as mean_delta,
    arrayMin(deltas) as delta_min,
    arrayMax(deltas) as delta_max,
    arrayReduce('quantileExact(0.025)', resample_means) as ci_low,
    arrayReduce('quantileExact(0.975)', resample_means) as ci_high,
    not(ci_low <= 0 and 0 <= ci_high) as excludes_zero
from resampled
