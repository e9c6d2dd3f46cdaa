-- Service-time percentiles (p50, p90, p99, p99.9) per hour and direction at four levels of the fleet,
-- each read from the merged histogram of its level (serviceTimeQuantile, clickhouse/migrations/0006),
-- never averaged from the percentiles below it:
--   model:  array_model, firmware              array:  customer, site, array_model, firmware, array
--   site:   customer, site, array_model, firmware   volume: the array's columns and volume
-- Columns a level does not group by are ''. Linear interpolation inside the bucket holding the
-- percentile: the error is at most the bucket's width (a factor of 2).
with histograms as (
    select
        multiIf(
            grouping(volume) = 0, 'volume', grouping(array) = 0, 'array',
            grouping(site) = 0, 'site', 'model'
        ) as level,
        customer, site, array_model, firmware, array, volume, direction, period_start,
        sumMap([bucket], [ios]) as histogram,
        sum(ios) as total
    from {{ ref('stg_service_time_hist') }}
    where source = 'array'
    group by
        grouping sets (
            (array_model, firmware, direction, period_start),
            (customer, site, array_model, firmware, direction, period_start),
            (customer, site, array_model, firmware, array, direction, period_start),
            (customer, site, array_model, firmware, array, volume, direction, period_start)
        )
    having total > 0
    settings group_by_use_nulls = 0
)
select
    level,
    if(level = 'model', '', customer) as customer,
    if(level = 'model', '', site) as site,
    array_model,
    firmware,
    if(level in ('array', 'volume'), array, '') as array,
    if(level = 'volume', volume, '') as volume,
    direction,
    period_start,
    quantile,
    serviceTimeQuantile(histogram.1, histogram.2, quantile) as latency_ms,
    total as ios
from histograms
array join [0.5, 0.9, 0.99, 0.999] as quantile
