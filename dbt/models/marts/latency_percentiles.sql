-- Service-time percentiles (p50, p90, p99, p99.9) per hour and direction at four levels of the fleet,
-- each read from the merged histogram of its level (serviceTimeQuantile, clickhouse/migrations/0006),
-- never averaged from the percentiles below it:
--   model:  array_model, firmware              array:  customer, site, array_model, firmware, array
--   site:   customer, site, array_model, firmware   volume: the array's columns and volume
-- Columns a level does not group by are ''. Linear interpolation inside the bucket holding the
-- percentile: the error is at most the bucket's width (a factor of 2). Each level reads the smallest
-- rollup that holds it: the model level the fleet level (no FINAL), the site and array levels the
-- per-array level, the volume level the per-series level; the sums are the same at every level.
with fleet as (
    select
        'model' as level,
        '' as customer, '' as site, array_model, firmware, '' as array, '' as volume, direction, period_start,
        sumMap([bucket], [ios]) as histogram,
        sum(ios) as total
    from {{ ref('stg_fleet_service_time_hist') }}
    group by array_model, firmware, direction, period_start
    having total > 0
),
per_array as (
    select
        if(grouping(array) = 0, 'array', 'site') as level,
        customer, site, array_model, firmware, array, '' as volume, direction, period_start,
        sumMap([bucket], [ios]) as histogram,
        sum(ios) as total
    from {{ ref('stg_array_service_time_hist') }}
    group by
        grouping sets (
            (customer, site, array_model, firmware, direction, period_start),
            (customer, site, array_model, firmware, array, direction, period_start)
        )
    having total > 0
    settings group_by_use_nulls = 0
),
per_volume as (
    select
        'volume' as level,
        customer, site, array_model, firmware, array, volume, direction, period_start,
        sumMap([bucket], [ios]) as histogram,
        sum(ios) as total
    from {{ ref('stg_service_time_hist') }}
    where source = 'array'
    group by customer, site, array_model, firmware, array, volume, direction, period_start
    having total > 0
),
histograms as (
    select * from fleet
    union all
    select * from per_array
    union all
    select * from per_volume
)
select
    level,
    customer,
    site,
    array_model,
    firmware,
    if(level = 'site', '', array) as array,
    volume,
    direction,
    period_start,
    quantile,
    serviceTimeQuantile(histogram.1, histogram.2, quantile) as latency_ms,
    total as ios
from histograms
array join [0.5, 0.9, 0.99, 0.999] as quantile
