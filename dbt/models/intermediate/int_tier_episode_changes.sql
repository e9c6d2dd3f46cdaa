-- Per episode, host and measure with 6 windows or more on each side: the means before and after, and the change
-- after - before with a 95 % interval, resampled 2,000 times in blocks of 6 windows (a minute: neighbouring
-- windows are correlated, single windows resampled alone would make the interval too narrow).
with bootstrap as (
    select
        episode_id, host, measure, before, after,
        arrayMap(
            r -> arrayAvg(arrayFlatten(arrayMap(
                k -> arraySlice(
                    after, 1 + cityHash64(episode_id, host, measure, r, k, 1) % greatest(length(after) - 5, 1), 6
                ),
                range(toUInt32(ceil(length(after) / 6)))
            )))
            - arrayAvg(arrayFlatten(arrayMap(
                k -> arraySlice(
                    before, 1 + cityHash64(episode_id, host, measure, r, k, 0) % greatest(length(before) - 5, 1), 6
                ),
                range(toUInt32(ceil(length(before) / 6)))
            ))),
            range(2000)
        ) as changes
    from {{ ref('int_tier_episode_periods') }}
    where length(before) >= 6 and length(after) >= 6
)

select
    episode_id, host, measure,
    arrayAvg(before) as mean_before,
    arrayAvg(after) as mean_after,
    arrayReduce('quantileExact(0.025)', changes) as change_ci_low,
    arrayReduce('quantileExact(0.975)', changes) as change_ci_high,
    -- the independent blocks the interval rests on: whole minutes of the shorter period's windows
    intDiv(least(length(before), length(after)), 6) as blocks
from bootstrap
