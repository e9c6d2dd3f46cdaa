-- The burn_rates job's good and total I/Os per SLO, entity, path and window (FINAL: a window delivered twice is
-- one).
select
    slo,
    entity,
    path,
    site,
    window_start,
    good,
    total,
    objective
from {{ source('sanlens', 'slo_windows') }} final
