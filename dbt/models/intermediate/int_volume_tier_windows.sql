-- Per 10 s window, each volume's Tier 0 footprint and its share of the volume's capacity.
select
    array, volume,
    toStartOfInterval(ts, toIntervalSecond(10)) as window_start,
    anyIf(value, metric = 'volume.tier0_bytes') as tier0_bytes,
    tier0_bytes / (tier0_bytes + anyIf(value, metric = 'volume.tier1_bytes')) as tier0_share
from {{ ref('stg_metrics') }}
where metric in ('volume.tier0_bytes', 'volume.tier1_bytes')
group by array, volume, window_start
