-- One row per series (metric and entity): how many samples, over what time, the latest value.
select
    metric,
    site,
    host,
    disk,
    array,
    volume,
    switch,
    port,
    count() as samples,
    min(ts) as first_ts,
    max(ts) as last_ts,
    argMax(value, ts) as last_value,
    avg(value) as avg_value
from {{ ref('stg_metrics') }}
group by metric, site, host, disk, array, volume, switch, port
