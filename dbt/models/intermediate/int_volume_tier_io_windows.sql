-- Per 10 s window, hybrid volume and tier: the tier's part of the volume's I/O as the array reports it (IOPS and
-- mean service time per direction) and the volume's bytes on the tier. The metrics are named volume.tier<N>_<measure>
-- (flink-jobs/normalize/catalog.yaml, array_vv_tier): the tier is the 12th character, the measure what follows the _.
with samples as (
    select
        site,
        array,
        volume,
        value,
        toStartOfInterval(ts, toIntervalSecond(10)) as window_start,
        toUInt8OrNull(substring(metric, 12, 1)) as tier,
        substring(metric, 14) as measure
    from {{ ref('stg_metrics') }}
    where metric like 'volume.tier%'
)

select
    site,
    array,
    volume,
    window_start,
    tier,
    anyIf(value, measure = 'reads') as read_iops,
    anyIf(value, measure = 'writes') as write_iops,
    anyIf(value, measure = 'read_service_time') as read_service_us,
    anyIf(value, measure = 'write_service_time') as write_service_us,
    anyIf(value, measure = 'bytes') as used_bytes
from samples
group by site, array, volume, window_start, tier
