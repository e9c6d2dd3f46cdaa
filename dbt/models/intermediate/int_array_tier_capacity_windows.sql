-- Per 10 s window, hybrid array and tier: its capacity and what is free of it. The metrics are named
-- array.tier<N>_<measure> (flink-jobs/normalize/catalog.yaml, array_capacity): the tier is the 11th character.
with samples as (
    select
        site,
        array,
        value,
        toStartOfInterval(ts, toIntervalSecond(10)) as window_start,
        toUInt8OrNull(substring(metric, 11, 1)) as tier,
        substring(metric, 13) as measure
    from {{ ref('stg_metrics') }}
    where metric like 'array.tier%'
)

select
    site,
    array,
    window_start,
    tier,
    anyIf(value, measure = 'capacity_bytes') as capacity_bytes,
    anyIf(value, measure = 'free_bytes') as free_bytes,
    capacity_bytes - free_bytes as used_bytes
from samples
group by site, array, window_start, tier
having capacity_bytes > 0
