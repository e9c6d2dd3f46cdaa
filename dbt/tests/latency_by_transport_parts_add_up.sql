-- Every row's parts add up to what the host measured, within 1%.
select
    period_start, host, disk, direction, transport, host_us,
    host_queueing_us + fabric_us + array_us + unexplained_us as parts
from {{ ref('latency_by_transport') }}
where abs(parts - host_us) > 0.01 * host_us
