-- The burn_rates job's good and total I/Os per SLO, entity, path, window and bucket (FINAL: a window delivered
-- twice is one).
select
    slo,
    entity,
    path,
    site,
    window_start,
    bucket,
    good,
    total,
    objective
from {{ source('sanlens', 'slo_windows') }} final
