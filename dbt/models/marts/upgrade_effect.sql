-- The fleet cohort comparison of a firmware upgrade: per array model, upgrade path, direction and figure (metric),
-- the mean over the upgraded arrays of their before and after figures (upgrade_effect_by_array), the ratio of the
-- two means, and 95% percentile-bootstrap confidence intervals of the means, of their change and of their ratio.
-- The bootstrap resamples the arrays (2,000 resamples, the Poisson form of drawing them with replacement, drawn by
-- hash so a rebuild gives the same interval; one draw for an array's before and after). An interval of the change
-- that excludes zero is a change the fleet shows beyond array-to-array variation; with one array the intervals have
-- no width (that array's own intervals are in upgrade_effect_by_array). The arrays' lowest and highest change show
-- the spread.
{{ config(query_settings={'max_block_size': 1024}) }}
with per_metric as (
    select
        array_model, from_firmware, to_firmware, direction, metric,
        uniqExact(array) as arrays,
        count() as upgrades,
        groupArray(before) as befores,
        groupArray(after) as afters,
        groupArray(after - before) as deltas
    from {{ ref('upgrade_effect_by_array') }}
    group by array_model, from_firmware, to_firmware, direction, metric
),

resampled as (
    select
        array_model, from_firmware, to_firmware, direction, metric,
        arrayMap(j -> {{ poisson_1_draw('cityHash64(resample, j)') }}, range(upgrades)) as weights,
        arraySum(arrayMap((w, x) -> w * x, weights, befores)) / arraySum(weights) as resampled_before,
        arraySum(arrayMap((w, x) -> w * x, weights, afters)) / arraySum(weights) as resampled_after
    from per_metric
    array join range(2000) as resample
    where arraySum(weights) > 0
),

intervals as (
    select
        array_model, from_firmware, to_firmware, direction, metric,
        arrayReduce('quantileExact(0.025)', groupArray(resampled_before)) as mean_before_ci_low,
        arrayReduce('quantileExact(0.975)', groupArray(resampled_before)) as mean_before_ci_high,
        arrayReduce('quantileExact(0.025)', groupArray(resampled_after)) as mean_after_ci_low,
        arrayReduce('quantileExact(0.975)', groupArray(resampled_after)) as mean_after_ci_high,
        arrayReduce('quantileExact(0.025)', groupArray(resampled_after - resampled_before)) as ci_low,
        arrayReduce('quantileExact(0.975)', groupArray(resampled_after - resampled_before)) as ci_high,
        arrayReduce('quantileExact(0.025)', groupArrayIf(resampled_after / resampled_before, resampled_before > 0))
            as ratio_ci_low,
        arrayReduce('quantileExact(0.975)', groupArrayIf(resampled_after / resampled_before, resampled_before > 0))
            as ratio_ci_high
    from resampled
    group by array_model, from_firmware, to_firmware, direction, metric
)

select
    m.array_model as array_model, m.from_firmware as from_firmware, m.to_firmware as to_firmware,
    m.direction as direction, m.metric as metric, m.arrays as arrays, m.upgrades as upgrades,
    arrayAvg(m.befores) as mean_before,
    i.mean_before_ci_low as mean_before_ci_low,
    i.mean_before_ci_high as mean_before_ci_high,
    arrayAvg(m.afters) as mean_after,
    i.mean_after_ci_low as mean_after_ci_low,
    i.mean_after_ci_high as mean_after_ci_high,
    mean_after - mean_before as mean_delta,
    arrayMin(m.deltas) as delta_min,
    arrayMax(m.deltas) as delta_max,
    i.ci_low as ci_low,
    i.ci_high as ci_high,
    not(i.ci_low <= 0 and 0 <= i.ci_high) as excludes_zero,
    if(mean_before > 0, mean_after / mean_before, toFloat64('nan')) as ratio,
    i.ratio_ci_low as ratio_ci_low,
    i.ratio_ci_high as ratio_ci_high
from per_metric as m
inner join intervals as i
    on
        m.array_model = i.array_model and m.from_firmware = i.from_firmware and m.to_firmware = i.to_firmware
        and m.direction = i.direction and m.metric = i.metric
