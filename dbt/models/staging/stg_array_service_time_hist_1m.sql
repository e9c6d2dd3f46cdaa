-- Per-minute service-time histograms per array (its volumes summed, array-reported only), deduplicated
-- (FINAL): the periods of an upgrade effect whose change has fewer than 6 hours of data on a side
-- (upgrade_effect_by_array). The 1-minute rollup keeps 30 days; a reader bounds array and time, which
-- ClickHouse pushes into this view.
select
    period_start,
    array,
    direction,
    bucket,
    sum(ios) as ios
from {{ source('sanlens', 'service_time_hist_1m') }} final
where source = 'array'
group by period_start, array, direction, bucket
